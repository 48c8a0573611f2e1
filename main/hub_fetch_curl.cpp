// hub_fetch_curl.cpp: fetching a model from the Hub into huggingface_hub's cache, with libcurl
// (hub_fetch.hpp; the exchange is SPEC.md §6, after huggingface_hub's file_download.py).
//
//   1. GET  ENDPOINT/api/models/REPO/revision/REV     the commit and the repo's files
//   2. HEAD ENDPOINT/REPO/resolve/COMMIT/FILE         each file's etag and size (relative
//                                                     redirects followed: a renamed repo)
//   3. the weights' total size against memory         before anything large is fetched
//   4. GET  the same URL, redirects followed (CDN)    into blobs/ETAG.incomplete, resumed with
//                                                     Range after a break; sha256 checked
//   5. blobs/ETAG, snapshots/COMMIT/FILE → ../../blobs/ETAG, then refs/REV, last
//
// [SECTION] HTTP
// [SECTION] The cache's files
// [SECTION] One file
// [SECTION] A snapshot
#include "hub_fetch.hpp"
#include "pool.hpp"  // kernels::machine_memory
#include "text.hpp"

#include <curl/curl.h>
#include <openssl/evp.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>
#include <vector>

namespace attn {

namespace fs = std::filesystem;

namespace {

// [SECTION] HTTP -----------------------------------------------------------------------------

struct Answer {
    CURLcode code = CURLE_OK;  // not OK: no answer (the network), `error` says why
    std::string error;
    long status = 0;
    std::string headers;  // every answer's header lines, redirects included
    std::string body;     // a text answer's body (downloads write to their file instead)
};

// One libcurl handle, reused for every request of a fetch (its connections kept alive).
class Http {
public:
    explicit Http(const hub::Environment& env) : curl_(curl_easy_init()) {
        if (!curl_) throw std::runtime_error("libcurl cannot start");
        if (!env.token.empty()) headers_ = curl_slist_append(headers_, ("Authorization: Bearer " + env.token).c_str());
        headers_ = curl_slist_append(headers_, "Accept-Encoding: identity");  // sizes are the bytes' sizes
    }
    ~Http() {
        curl_slist_free_all(headers_);
        curl_easy_cleanup(curl_);
    }
    Http(const Http&) = delete;
    Http& operator=(const Http&) = delete;

    // A GET whose body is text (the listing), redirects followed.
    Answer get_text(const std::string& url) {
        Answer a;
        prepare(url, a);
        curl_easy_setopt(curl_, CURLOPT_FOLLOWLOCATION, 1L);
        curl_easy_setopt(curl_, CURLOPT_WRITEFUNCTION, &Http::to_string);
        curl_easy_setopt(curl_, CURLOPT_WRITEDATA, &a.body);
        return perform(a);
    }

    // A HEAD, relative redirects followed (huggingface_hub's follow_relative_redirects: a repo
    // renamed on the Hub); an absolute one (the CDN) is the answer, its Location kept.
    Answer head(std::string url) {
        for (int hops = 0;; ++hops) {
            Answer a;
            prepare(url, a);
            curl_easy_setopt(curl_, CURLOPT_NOBODY, 1L);
            perform(a);
            if (a.code != CURLE_OK || a.status < 300 || a.status >= 400 || hops == 10) return a;
            const std::string location = hub::parse_head(a.headers).location;
            if (location.empty() || location.front() != '/') return a;
            url = origin(url) + location;
        }
    }

    // A GET of bytes from `offset` on (Range: bytes=offset-), redirects followed, appended to
    // `out` (a 200 instead of 206: the server ignored the range, the file starts again).
    // `on_bytes(file bytes so far)` returning false stops the transfer.
    Answer download(const std::string& url, std::FILE* out, std::uint64_t offset, const std::function<bool(std::uint64_t)>& on_bytes) {
        Answer a;
        prepare(url, a);
        Sink sink{curl_, out, offset, on_bytes, a.body};
        curl_easy_setopt(curl_, CURLOPT_FOLLOWLOCATION, 1L);
        curl_easy_setopt(curl_, CURLOPT_MAXREDIRS, 10L);
        if (offset > 0) curl_easy_setopt(curl_, CURLOPT_RESUME_FROM_LARGE, static_cast<curl_off_t>(offset));
        curl_easy_setopt(curl_, CURLOPT_WRITEFUNCTION, &Http::to_file);
        curl_easy_setopt(curl_, CURLOPT_WRITEDATA, &sink);
        perform(a);
        if (a.code == CURLE_WRITE_ERROR && sink.cancelled) a.error = "cancelled";
        return a;
    }

private:
    struct Sink {
        CURL* curl;
        std::FILE* out;
        std::uint64_t bytes;  // in the file
        const std::function<bool(std::uint64_t)>& on_bytes;
        std::string& error_body;
        bool started = false, cancelled = false;
    };

    static std::string origin(const std::string& url) {  // "http://host:port" of a URL
        const std::size_t scheme = url.find("://");
        const std::size_t path = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
        return url.substr(0, path);
    }

    void prepare(const std::string& url, Answer& a) {
        curl_easy_reset(curl_);
        curl_easy_setopt(curl_, CURLOPT_URL, url.c_str());
        curl_easy_setopt(curl_, CURLOPT_HTTPHEADER, headers_);
        curl_easy_setopt(curl_, CURLOPT_USERAGENT, "attnviz");
        curl_easy_setopt(curl_, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(curl_, CURLOPT_CONNECTTIMEOUT, 10L);
        curl_easy_setopt(curl_, CURLOPT_LOW_SPEED_LIMIT, 1L);  // a transfer stalled for 30 s breaks
        curl_easy_setopt(curl_, CURLOPT_LOW_SPEED_TIME, 30L);
        curl_easy_setopt(curl_, CURLOPT_ERRORBUFFER, error_);
        curl_easy_setopt(curl_, CURLOPT_HEADERFUNCTION, &Http::to_string);
        curl_easy_setopt(curl_, CURLOPT_HEADERDATA, &a.headers);
        error_[0] = '\0';
    }

    Answer& perform(Answer& a) {
        a.code = curl_easy_perform(curl_);
        curl_easy_getinfo(curl_, CURLINFO_RESPONSE_CODE, &a.status);
        if (a.code != CURLE_OK) a.error = error_[0] ? error_ : curl_easy_strerror(a.code);
        return a;
    }

    static std::size_t to_string(char* data, std::size_t size, std::size_t n, void* user) {
        static_cast<std::string*>(user)->append(data, size * n);
        return size * n;
    }

    static std::size_t to_file(char* data, std::size_t size, std::size_t n, void* user) {
        Sink& s = *static_cast<Sink*>(user);
        long status = 0;
        curl_easy_getinfo(s.curl, CURLINFO_RESPONSE_CODE, &status);
        if (status != 200 && status != 206) {  // an error's body: kept for the message
            if (s.error_body.size() < 4096) s.error_body.append(data, std::min<std::size_t>(size * n, 4096));
            return size * n;
        }
        if (!s.started && status == 200 && s.bytes > 0) {  // the whole file again
            if (std::fflush(s.out) != 0 || ftruncate(fileno(s.out), 0) != 0 || std::fseek(s.out, 0, SEEK_SET) != 0) return 0;
            s.bytes = 0;
        }
        s.started = true;
        if (std::fwrite(data, 1, size * n, s.out) != size * n) return 0;
        s.bytes += size * n;
        if (s.on_bytes && !s.on_bytes(s.bytes)) {
            s.cancelled = true;
            return 0;
        }
        return size * n;
    }

    CURL* curl_;
    curl_slist* headers_ = nullptr;
    char error_[CURL_ERROR_SIZE] = {};
};

// The error an HTTP status stands for (SPEC.md §6), naming the repo and, for a file, the file.
[[noreturn]] void throw_status(const hub::RepoId& id, const std::string& file, const Answer& a, const hub::Environment& env) {
    const std::string code = hub::parse_head(a.headers).error_code;
    const std::string where = file;
    if (a.status == 401 || a.status == 403) {
        throw ModelError(id.repo, where, std::string(code == "GatedRepo" ? "a gated model" : "a gated or private model") +
                                             " (HTTP " + std::to_string(a.status) + "): accept its licence on the Hub and set HF_TOKEN" +
                                             (env.token.empty() ? "" : " (the token given was refused)"));
    }
    if (a.status == 404) {
        if (code == "RevisionNotFound") throw ModelError(id.repo, where, "no revision \"" + id.revision + "\" on the Hub (" + env.endpoint + ")");
        if (code == "EntryNotFound") throw ModelError(id.repo, where, "the Hub has no such file at this revision");
        throw ModelError(id.repo, where, "no such model on the Hub (" + env.endpoint + "): check the id, or set HF_TOKEN for a private one");
    }
    throw ModelError(id.repo, where, "the Hub answered HTTP " + std::to_string(a.status));
}

// [SECTION] The cache's files ----------------------------------------------------------------

// An exclusive lock on a file, held while the object lives (flock: released when the process
// ends, whatever the way). huggingface_hub takes the same file: CACHE/.locks/REPO/ETAG.lock.
class FileLock {
public:
    explicit FileLock(const fs::path& path) {
        fs::create_directories(path.parent_path());
        fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd_ < 0 || ::flock(fd_, LOCK_EX) != 0) throw std::runtime_error("cannot lock " + path.string());
    }
    ~FileLock() {
        if (fd_ >= 0) ::close(fd_);
    }
    FileLock(const FileLock&) = delete;
    FileLock& operator=(const FileLock&) = delete;

private:
    int fd_ = -1;
};

// Writes `text` to `path` whole or not at all (a temporary file renamed over it).
void write_atomically(const fs::path& path, const std::string& text) {
    fs::create_directories(path.parent_path());
    const fs::path tmp = path.string() + ".tmp-" + std::to_string(::getpid());
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out << text;
        if (!out.flush()) throw std::runtime_error("cannot write " + tmp.string());
    }
    fs::rename(tmp, path);
}

// snapshots/COMMIT/FILE → the blob, as a relative link (huggingface_hub's _create_symlink); a
// copy where the file system has no links. Replaces what is there, atomically.
void link_blob(const fs::path& blob, const fs::path& pointer) {
    fs::create_directories(pointer.parent_path());
    const fs::path tmp = pointer.string() + ".tmp-" + std::to_string(::getpid());
    std::error_code ec;
    fs::remove(tmp, ec);
    fs::create_symlink(fs::relative(blob, pointer.parent_path()), tmp, ec);
    if (ec) fs::copy_file(blob, tmp, fs::copy_options::overwrite_existing);
    fs::rename(tmp, pointer);
}

std::string sha256_of(const fs::path& path) {
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
    EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
    std::ifstream in(path, std::ios::binary);
    std::vector<char> buf(1 << 20);
    while (in) {
        in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<std::size_t>(in.gcount()));
    }
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_DigestFinal_ex(ctx.get(), digest, &n);
    std::string hex;
    for (unsigned int i = 0; i < n; ++i) {
        char two[3];
        std::snprintf(two, sizeof two, "%02x", digest[i]);
        hex += two;
    }
    return hex;
}

// [SECTION] One file -------------------------------------------------------------------------

struct Fetch {
    const hub::RepoId& id;
    const FetchOptions& options;
    Http& http;
    fs::path repo, snapshot;  // CACHE/models--ORG--NAME, its snapshots/COMMIT
    std::string commit;
    std::uint64_t done = 0, total = 0;  // bytes of the files to download
};

// What a HEAD says of `file`, or the error it stands for.
hub::FileHead head_of(Fetch& f, const std::string& file) {
    const Answer a = f.http.head(hub::resolve_url(f.options.env, f.id, f.commit, file));
    if (a.code != CURLE_OK) throw ModelError(f.id.repo, file, "the Hub cannot be reached: " + a.error);
    if (a.status >= 400) throw_status(f.id, file, a, f.options.env);
    hub::FileHead h = hub::parse_head(a.headers);
    if (!h.refused_etag.empty())
        throw ModelError(f.id.repo, file, "the Hub's ETag " + h.refused_etag + " is not one it sends (expected a quoted token of letters, digits, - and _)");
    if (h.etag.empty()) throw ModelError(f.id.repo, file, "the Hub's answer has no ETag");
    return h;
}

// Downloads `file` into blobs/ETAG (resuming a .incomplete one), checks it, links it.
void fetch_file(Fetch& f, const std::string& file, const hub::FileHead& head) {
    const fs::path blob = f.repo / "blobs" / head.etag, pointer = f.snapshot / file;
    std::error_code ec;
    FileLock lock(fs::path(f.options.env.cache) / ".locks" / f.id.folder_name() / (head.etag + ".lock"));
    if (!fs::exists(blob, ec)) {  // another process may have written it while this one waited
        fs::create_directories(blob.parent_path());
        const fs::path part = blob.string() + ".incomplete";
        const std::string url = hub::resolve_url(f.options.env, f.id, f.commit, file);
        const std::uint64_t size = head.size.value_or(0), before = f.done;
        std::unique_ptr<std::FILE, int (*)(std::FILE*)> out(std::fopen(part.c_str(), "ab"), &std::fclose);
        if (!out) throw ModelError(f.id.repo, file, "cannot write " + part.string());
        Answer a;
        for (int attempt = 0;; ++attempt) {  // the first try and up to 5 resumptions
            std::fflush(out.get());
            const std::uint64_t have = fs::file_size(part, ec);
            if (head.size && have == size) break;  // every byte is there (a break after the last)
            a = f.http.download(url, out.get(), have, [&](std::uint64_t bytes) {
                f.done = before + bytes;
                return !f.options.progress || f.options.progress({file, bytes, size, f.done, f.total});
            });
            if (a.error == "cancelled") throw ModelError(f.id.repo, file, "cancelled");
            if (a.code == CURLE_OK && a.status >= 400 && a.status != 416) throw_status(f.id, file, a, f.options.env);
            if (a.code == CURLE_OK && a.status != 416) break;
            if (attempt == 5) {
                std::fflush(out.get());
                throw ModelError(f.id.repo, file, "the transfer broke after " + byte_size(static_cast<double>(fs::file_size(part, ec))) + " of " +
                                                     byte_size(static_cast<double>(size)) + " (" + (a.code != CURLE_OK ? a.error : "HTTP " + std::to_string(a.status)) +
                                                     "); run again to resume it");
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(100 << attempt));
        }
        out.reset();
        const std::uint64_t got = fs::file_size(part, ec);
        if (head.size && got != size) {
            fs::remove(part, ec);
            throw ModelError(f.id.repo, file, "got " + std::to_string(got) + " bytes, the Hub said " + std::to_string(size) + " (the partial file was deleted)");
        }
        if (hub::is_sha256(head.etag)) {
            const std::string sum = sha256_of(part);
            if (sum != head.etag) {
                fs::remove(part, ec);
                throw ModelError(f.id.repo, file, "checksum mismatch: the bytes' sha256 is " + sum + ", the Hub's is " + head.etag + " (the download was deleted)");
            }
        }
        fs::rename(part, blob);
        f.done = before + got;
    }
    link_blob(blob, pointer);
}

// [SECTION] A snapshot -----------------------------------------------------------------------

// Fetches what the snapshot lacks of `files` (a file already linked is not asked for again), every
// HEAD first: the total is known before the first byte, and `weights` (those of `files` that are
// weights) are checked against memory before anything is downloaded.
void fetch_files(Fetch& f, const std::vector<std::string>& files, const std::vector<std::string>& weights) {
    std::vector<std::pair<std::string, hub::FileHead>> todo;
    std::uint64_t weight_bytes = 0;
    std::error_code ec;
    for (const std::string& file : files) {
        if (fs::exists(f.snapshot / file, ec)) continue;  // follows the link: its blob is there
        todo.emplace_back(file, head_of(f, file));
        if (todo.back().second.size) f.total += *todo.back().second.size;
    }
    if (!weights.empty()) {  // 3. before anything is fetched
        for (const std::string& file : weights) {
            const auto it = std::find_if(todo.begin(), todo.end(), [&](const auto& t) { return t.first == file; });
            weight_bytes += it != todo.end() ? it->second.size.value_or(0) : fs::file_size(f.snapshot / file, ec);
        }
        const std::uint64_t memory = f.options.memory ? f.options.memory : kernels::machine_memory();
        if (weight_bytes > memory)
            throw ModelError(f.id.repo, "", "its weights take " + byte_size(static_cast<double>(weight_bytes)) + ", more than this machine's memory (" +
                                                byte_size(static_cast<double>(memory)) + "): not downloaded");
    }
    for (const auto& [file, head] : todo) fetch_file(f, file, head);
}

}  // namespace

std::string hub_snapshot(const hub::RepoId& id, const FetchOptions& options) {
    const hub::Environment& env = options.env;
    const std::optional<std::string> cached = hub::cached_snapshot(env, id);
    if (env.offline) {
        if (cached) return *cached;
        throw ModelError(id.repo, "", "offline (HF_HUB_OFFLINE) and not in the cache (" + hub::repo_folder(env, id) + ")");
    }
    Http http(env);  // libcurl ≥ 7.84 starts itself, thread-safely, with its first handle
    // 1. The listing: the commit and the files.
    const Answer a = http.get_text(hub::listing_url(env, id));
    if (a.code != CURLE_OK) {
        if (cached) {
            if (options.note) *options.note << "attnviz: " << id.shown() << ": the Hub cannot be reached (" << a.error << "); the cached snapshot serves\n";
            return *cached;
        }
        throw ModelError(id.repo, "", "the Hub (" + env.endpoint + ") cannot be reached (" + a.error + ") and the model is not in the cache (" + hub::repo_folder(env, id) + ")");
    }
    if (a.status >= 400) throw_status(id, "", a, env);
    const hub::Listing listing = hub::parse_listing(a.body, id.repo);
    const std::vector<std::string> files = hub::model_files(listing.files, options.quant.empty() ? id.quant : options.quant, id.shown());
    if (!hub::has_weights(files))
        throw ModelError(id.repo, "", "the repo has no safetensors weights (model.safetensors or model.safetensors.index.json) nor a .gguf; attnviz does not read " +
                                          std::string(std::find(listing.files.begin(), listing.files.end(), "pytorch_model.bin") != listing.files.end() ? "pytorch_model.bin" : "other formats"));
    Fetch f{id, options, http, hub::repo_folder(env, id), {}, listing.commit};
    f.snapshot = f.repo / "snapshots" / f.commit;
    // 2–5. Every file (model_files puts the weights, model.safetensors or the index, last), then
    // the shards the index names.
    const std::string weights = files.back();
    const bool sharded = weights == "model.safetensors.index.json";
    fetch_files(f, files, sharded ? std::vector<std::string>{} : std::vector<std::string>{weights});
    if (sharded) {
        std::ifstream in(f.snapshot / weights, std::ios::binary);
        std::ostringstream text;
        text << in.rdbuf();
        const std::vector<std::string> shards = hub::shard_files(text.str(), id.repo + "/" + weights);
        fetch_files(f, shards, shards);
    }
    if (!id.pinned()) write_atomically(f.repo / "refs" / id.revision, f.commit);
    return f.snapshot.string();
}

}  // namespace attn
