// hub.cpp: Hub ids, huggingface_hub's cache, the Hub's answers (hub.hpp).
#include "hub.hpp"
#include "family.hpp"
#include "files.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

namespace attn::hub {

namespace fs = std::filesystem;

namespace {

bool is_hex40(std::string_view s) {
    return s.size() == 40 && std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) && !std::isupper(static_cast<unsigned char>(c)); });
}

std::string trimmed(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return std::string(s);
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

// Percent-encodes everything but RFC 3986's unreserved characters (and "/" when kept).
std::string percent_encoded(std::string_view s, bool keep_slash) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string out;
    for (char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
            out += ch;
        } else {
            out += '%';
            out += kHex[c >> 4];
            out += kHex[c & 15];
        }
    }
    return out;
}

std::optional<std::string> read_small_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace

// [SECTION] Ids ------------------------------------------------------------------------------

bool RepoId::pinned() const { return is_hex40(revision); }

std::string RepoId::folder_name() const {
    std::string name = "models--" + repo;
    for (std::size_t at = name.find('/'); at != std::string::npos; at = name.find('/', at)) name.replace(at, 1, "--");
    return name;
}

std::string RepoId::shown() const { return (revision == "main" ? repo : repo + "@" + revision) + (quant.empty() ? "" : ":" + quant); }

std::optional<RepoId> parse_repo_id(std::string_view s) {
    RepoId id;
    if (const std::size_t colon = s.rfind(':'); colon != std::string_view::npos) {
        id.quant = std::string(s.substr(colon + 1));
        s = s.substr(0, colon);
        const bool bad_quant = id.quant.empty() || id.quant.size() > 64 || !std::all_of(id.quant.begin(), id.quant.end(), [](char c) {
            return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
        });
        if (bad_quant) return std::nullopt;
    }
    const std::size_t at = s.find('@');
    if (at != std::string_view::npos) {
        id.revision = std::string(s.substr(at + 1));
        s = s.substr(0, at);
        const bool bad_revision = id.revision.empty() || id.revision.find("..") != std::string::npos ||
                                  std::any_of(id.revision.begin(), id.revision.end(), [](char c) { return std::isspace(static_cast<unsigned char>(c)) || std::iscntrl(static_cast<unsigned char>(c)); });
        if (bad_revision) return std::nullopt;
    }
    const std::size_t slash = s.find('/');
    if (s.empty() || s.size() > 96 || s.find('/', slash == std::string_view::npos ? s.size() : slash + 1) != std::string_view::npos) return std::nullopt;
    auto good_part = [](std::string_view p) {
        const auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
        return !p.empty() && word(p.front()) && word(p.back()) &&
               std::all_of(p.begin(), p.end(), [&](char c) { return word(c) || c == '-' || c == '.'; });
    };
    if (slash != std::string_view::npos && !good_part(s.substr(0, slash))) return std::nullopt;
    if (!good_part(slash == std::string_view::npos ? s : s.substr(slash + 1))) return std::nullopt;
    if (s.find("--") != std::string_view::npos || s.find("..") != std::string_view::npos) return std::nullopt;
    if (s.size() >= 4 && s.substr(s.size() - 4) == ".git") return std::nullopt;
    id.repo = std::string(s);
    return id;
}

// [SECTION] The environment ------------------------------------------------------------------

Environment environment(const std::function<std::optional<std::string>(const char*)>& get) {
    auto set = [&](const char* name) -> std::optional<std::string> {
        std::optional<std::string> v = get(name);
        if (v && v->empty()) return std::nullopt;
        return v;
    };
    Environment env;
    const std::string home = set("HOME").value_or(".");
    const std::string hf_home = set("HF_HOME").value_or(set("XDG_CACHE_HOME").value_or(home + "/.cache") + "/huggingface");
    env.cache = set("HF_HUB_CACHE").value_or(hf_home + "/hub");
    if (std::optional<std::string> endpoint = set("HF_ENDPOINT")) {
        env.endpoint = *endpoint;
        while (!env.endpoint.empty() && env.endpoint.back() == '/') env.endpoint.pop_back();
    }
    if (std::optional<std::string> token = set("HF_TOKEN")) {
        env.token = trimmed(*token);
    } else if (std::optional<std::string> text = read_small_file(set("HF_TOKEN_PATH").value_or(hf_home + "/token"))) {
        env.token = trimmed(*text);
    }
    const std::string offline = lower(trimmed(set("HF_HUB_OFFLINE").value_or("")));
    env.offline = offline == "1" || offline == "on" || offline == "yes" || offline == "true";
    env.ollama = set("OLLAMA_MODELS").value_or(home + "/.ollama/models");
    env.lmstudio = home + "/.lmstudio/models";
    return env;
}

Environment environment() {
    return environment([](const char* name) -> std::optional<std::string> {
        const char* v = std::getenv(name);
        return v ? std::optional<std::string>(v) : std::nullopt;
    });
}

// [SECTION] The cache ------------------------------------------------------------------------

std::string repo_folder(const Environment& env, const RepoId& id) { return (fs::path(env.cache) / id.folder_name()).string(); }

std::optional<std::string> cached_commit(const Environment& env, const RepoId& id) {
    if (id.pinned()) return id.revision;
    std::optional<std::string> text = read_small_file(fs::path(repo_folder(env, id)) / "refs" / id.revision);
    if (!text) return std::nullopt;
    std::string commit = trimmed(*text);
    if (!is_hex40(commit)) return std::nullopt;
    return commit;
}

std::optional<std::string> cached_snapshot(const Environment& env, const RepoId& id) {
    const std::optional<std::string> commit = cached_commit(env, id);
    if (!commit) return std::nullopt;
    const fs::path snapshot = fs::path(repo_folder(env, id)) / "snapshots" / *commit;
    std::error_code ec;
    if (fs::is_regular_file(snapshot / "config.json", ec)) return snapshot.string();  // follows the link
    for (const fs::directory_entry& f : fs::directory_iterator(snapshot, ec))
        if (f.path().extension() == ".gguf" && f.is_regular_file(ec)) return snapshot.string();
    return std::nullopt;
}

// [SECTION] Models of local runtimes ----------------------------------------------------------

std::string ollama_blob(const Environment& env, std::string_view spec) {
    const std::string shown = "ollama:" + std::string(spec);
    std::string name(spec), tag = "latest";
    if (const auto colon = name.rfind(':'); colon != std::string::npos) tag = name.substr(colon + 1), name.resize(colon);
    const auto bad = [](const std::string& part) {
        return part.empty() || part == "." || part == ".." || part.find_first_of("\\:") != std::string::npos || part.find("..") != std::string::npos;
    };
    std::vector<std::string> parts;
    for (std::size_t at = 0;;) {
        const auto slash = name.find('/', at);
        parts.push_back(name.substr(at, slash == std::string::npos ? std::string::npos : slash - at));
        if (slash == std::string::npos) break;
        at = slash + 1;
    }
    if (parts.size() > 3 || bad(tag) || std::any_of(parts.begin(), parts.end(), bad))
        throw ModelError(shown, "", "expected ollama:NAME[:TAG] (NAME as ollama names it: llama3.2, NAMESPACE/NAME or HOST/NAMESPACE/NAME)");
    if (parts.size() == 1) parts.insert(parts.begin(), "library");
    if (parts.size() == 2) parts.insert(parts.begin(), "registry.ollama.ai");
    const fs::path manifest = fs::path(env.ollama) / "manifests" / parts[0] / parts[1] / parts[2] / tag;
    const std::optional<std::string> text = read_small_file(manifest);
    if (!text) throw ModelError(shown, "", "no such model in " + env.ollama + " (" + manifest.string() + "; ollama pull fetches it, $OLLAMA_MODELS moves the folder)");
    const nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
    if (!j.is_object() || !j.contains("layers") || !j["layers"].is_array()) throw ModelError(manifest.string(), "layers", "expected ollama's manifest (a JSON object with layers)");
    for (const nlohmann::json& layer : j["layers"]) {
        if (!layer.is_object() || layer.value("mediaType", "") != "application/vnd.ollama.image.model") continue;
        const std::string digest = layer.value("digest", "");
        if (digest.size() != 71 || digest.rfind("sha256:", 0) != 0 || !std::all_of(digest.begin() + 7, digest.end(), ::isxdigit))
            throw ModelError(manifest.string(), "layers", "the model's digest " + digest + " is not sha256:HEX");
        const fs::path blob = fs::path(env.ollama) / "blobs" / ("sha256-" + digest.substr(7));
        std::error_code ec;
        if (!fs::is_regular_file(blob, ec)) throw ModelError(shown, "", "its blob " + blob.string() + " is missing");
        return blob.string();
    }
    throw ModelError(manifest.string(), "layers", "no layer of mediaType application/vnd.ollama.image.model");
}

std::vector<LocalModel> local_models(const Environment& env) {
    std::vector<LocalModel> out;
    std::error_code ec;
    for (const fs::directory_entry& org : fs::directory_iterator(env.lmstudio, ec))
        for (const fs::directory_entry& repo : fs::directory_iterator(org.path(), ec))
            for (const fs::directory_entry& f : fs::directory_iterator(repo.path(), ec))
                if (f.path().extension() == ".gguf" && f.is_regular_file(ec))
                    out.push_back({f.path().string(), f.path().string(), "LM Studio", f.file_size(ec)});
    const fs::path manifests = fs::path(env.ollama) / "manifests";
    for (const fs::directory_entry& m : fs::recursive_directory_iterator(manifests, ec)) {
        if (!m.is_regular_file(ec)) continue;
        const std::vector<std::string> parts = [&] {
            std::vector<std::string> p;
            for (const fs::path& x : m.path().lexically_relative(manifests)) p.push_back(x.string());
            return p;
        }();
        if (parts.size() != 4) continue;  // HOST/NAMESPACE/NAME/TAG
        const std::string name = (parts[0] == "registry.ollama.ai" ? (parts[1] == "library" ? "" : parts[1] + "/") : parts[0] + "/" + parts[1] + "/") +
                                 parts[2] + ":" + parts[3];
        try {
            const std::string blob = ollama_blob(env, name);
            out.push_back({"ollama:" + name, blob, "ollama", fs::file_size(blob, ec)});
        } catch (const ModelError&) {  // not a model (a manifest of something else, or its blob gone)
        }
    }
    std::sort(out.begin(), out.end(), [](const LocalModel& a, const LocalModel& b) { return a.name < b.name; });
    return out;
}

std::vector<CachedModel> cached_models(const Environment& env) {
    std::vector<CachedModel> out;
    std::error_code ec;
    for (const fs::directory_entry& repo : fs::directory_iterator(env.cache, ec)) {
        const std::string folder = repo.path().filename().string();
        if (folder.rfind("models--", 0) != 0 || !repo.is_directory(ec)) continue;
        std::string name = folder.substr(8);
        const std::size_t sep = name.find("--");
        if (sep != std::string::npos) name.replace(sep, 2, "/");
        // Each snapshot once: by the refs that point to it (sorted), else by its commit.
        std::map<std::string, std::vector<std::string>> names;  // commit → revisions
        for (const fs::directory_entry& ref : fs::recursive_directory_iterator(repo.path() / "refs", ec))
            if (ref.is_regular_file(ec))
                if (std::optional<std::string> text = read_small_file(ref.path()); text && is_hex40(trimmed(*text)))
                    names[trimmed(*text)].push_back(ref.path().lexically_relative(repo.path() / "refs").generic_string());
        for (const fs::directory_entry& snap : fs::directory_iterator(repo.path() / "snapshots", ec)) {
            const std::string commit = snap.path().filename().string();
            if (!is_hex40(commit)) continue;
            std::optional<std::string> config = read_small_file(snap.path() / "config.json");
            if (!config) continue;
            const nlohmann::json j = nlohmann::json::parse(*config, nullptr, false);
            if (!j.is_object() || !j.contains("model_type") || !j["model_type"].is_string()) continue;
            const std::string model_type = j["model_type"].get<std::string>();
            if (!find_family(model_type)) continue;
            std::vector<std::string> files;
            std::uint64_t bytes = 0;
            for (const fs::directory_entry& f : fs::recursive_directory_iterator(snap.path(), ec))
                if (f.is_regular_file(ec)) {  // follows the links to the blobs
                    files.push_back(f.path().lexically_relative(snap.path()).generic_string());
                    bytes += f.file_size(ec);
                }
            if (!has_weights(files)) continue;
            std::vector<std::string> revisions = names[commit];
            std::sort(revisions.begin(), revisions.end());
            if (revisions.empty()) revisions.push_back(commit);
            for (const std::string& revision : revisions) out.push_back({{name, revision, ""}, model_type, bytes});
        }
    }
    std::sort(out.begin(), out.end(), [](const CachedModel& a, const CachedModel& b) {
        return std::tie(a.id.repo, a.id.revision) < std::tie(b.id.repo, b.id.revision);
    });
    return out;
}

// [SECTION] The Hub's answers ----------------------------------------------------------------

std::string listing_url(const Environment& env, const RepoId& id) {
    return env.endpoint + "/api/models/" + percent_encoded(id.repo, true) + "/revision/" + percent_encoded(id.revision, false);
}

std::string resolve_url(const Environment& env, const RepoId& id, const std::string& revision, const std::string& file) {
    return env.endpoint + "/" + percent_encoded(id.repo, true) + "/resolve/" + percent_encoded(revision, false) + "/" + percent_encoded(file, true);
}

Listing parse_listing(std::string_view json, const std::string& repo) {
    const nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
    if (!j.is_object()) throw ModelError(repo, "listing", "the Hub's answer is not a JSON object");
    Listing out;
    if (!j.contains("sha") || !j["sha"].is_string() || !is_hex40(j["sha"].get<std::string>()))
        throw ModelError(repo, "listing", "sha: expected the commit (40 hex digits)");
    out.commit = j["sha"].get<std::string>();
    if (!j.contains("siblings") || !j["siblings"].is_array()) throw ModelError(repo, "listing", "siblings: expected a list of files");
    for (const nlohmann::json& s : j["siblings"]) {
        if (!s.is_object() || !s.contains("rfilename") || !s["rfilename"].is_string())
            throw ModelError(repo, "listing", "siblings: expected {\"rfilename\": …} for every file");
        out.files.push_back(s["rfilename"].get<std::string>());
    }
    return out;
}

std::string normalized_etag(std::string_view raw) {
    const std::string whole = trimmed(raw);
    std::string_view s = whole;
    if (s.substr(0, 2) == "W/") s.remove_prefix(2);
    if (s.size() < 3 || s.size() > 130 || s.front() != '"' || s.back() != '"') return "";
    s = s.substr(1, s.size() - 2);
    const bool token = std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; });
    return token ? std::string(s) : "";
}

bool is_sha256(std::string_view etag) {
    return etag.size() == 64 && std::all_of(etag.begin(), etag.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

FileHead parse_head(std::string_view headers) {
    FileHead out;
    std::string linked_etag, etag;
    std::optional<std::uint64_t> linked_size, length;
    auto size_of = [](const std::string& v) -> std::optional<std::uint64_t> {
        if (v.empty() || v.size() > 19 || !std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
        return std::stoull(v);
    };
    while (!headers.empty()) {
        const std::size_t end = std::min(headers.find('\n'), headers.size());
        const std::string_view line = headers.substr(0, end);
        headers.remove_prefix(std::min(end + 1, headers.size()));
        // (std::find, not find(':'): GCC 12 warns of an overread in the memchr that inlines)
        const std::size_t colon = static_cast<std::size_t>(std::find(line.begin(), line.end(), ':') - line.begin());
        if (colon == line.size()) {
            if (line.substr(0, 5) == "HTTP/") {  // the status line of a new answer: forget the last's
                out = {};
                linked_etag.clear();
                etag.clear();
                linked_size.reset();
                length.reset();
            }
            continue;
        }
        const std::string name = lower(trimmed(line.substr(0, colon)));
        const std::string value = trimmed(line.substr(colon + 1));
        if (name == "x-repo-commit") out.commit = value;
        else if (name == "x-linked-etag") linked_etag = value;
        else if (name == "etag") etag = value;
        else if (name == "x-linked-size") linked_size = size_of(value);
        else if (name == "content-length") length = size_of(value);
        else if (name == "location") out.location = value;
        else if (name == "x-error-code") out.error_code = value;
    }
    const std::string& sent = linked_etag.empty() ? etag : linked_etag;
    out.etag = normalized_etag(sent);
    if (out.etag.empty()) out.refused_etag = sent;
    out.size = linked_size ? linked_size : length;
    return out;
}

// [SECTION] Which files ----------------------------------------------------------------------

std::vector<std::string> model_files(const std::vector<std::string>& listed, const std::string& quant, const std::string& repo) {
    const bool safetensors = std::find(listed.begin(), listed.end(), "model.safetensors") != listed.end() ||
                             std::find(listed.begin(), listed.end(), "model.safetensors.index.json") != listed.end();
    if (!quant.empty() || !safetensors)
        if (const std::string gguf = gguf_file_for(listed, quant, repo); !gguf.empty()) return {gguf};
    static constexpr const char* kWanted[] = {
        "config.json",      "generation_config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
        "vocab.json",       "merges.txt",             "vocab.txt",      "source.spm",            "target.spm",
        "chat_template.jinja", "preprocessor_config.json",  // an instruct model's template (transformers 5), a vision model's processor
    };
    const std::set<std::string> have(listed.begin(), listed.end());
    std::vector<std::string> out;
    for (const char* name : kWanted)
        if (have.count(name)) out.push_back(name);
    if (have.count("model.safetensors")) out.push_back("model.safetensors");
    else if (have.count("model.safetensors.index.json")) out.push_back("model.safetensors.index.json");
    return out;
}

bool has_weights(const std::vector<std::string>& files) {
    return std::any_of(files.begin(), files.end(), [](const std::string& f) {
        return f == "model.safetensors" || f == "model.safetensors.index.json" || f.ends_with(".gguf");
    });
}

std::vector<std::string> shard_files(std::string_view index_json, const std::string& shown) {
    const nlohmann::json j = nlohmann::json::parse(index_json, nullptr, false);
    if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
        throw ModelError(shown, "weight_map", "expected an object naming each tensor's shard");
    std::set<std::string> shards;
    for (const auto& [tensor, file] : j["weight_map"].items()) {
        if (!file.is_string()) throw ModelError(shown, "weight_map." + tensor, "expected the shard's file name");
        const std::string name = file.get<std::string>();
        if (name.empty() || name.find("..") != std::string::npos || name.front() == '/' || name.find('\\') != std::string::npos)
            throw ModelError(shown, "weight_map." + tensor, "\"" + name + "\" is not a file of the repo");
        shards.insert(name);
    }
    return {shards.begin(), shards.end()};
}

}  // namespace attn::hub
