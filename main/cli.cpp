// cli.cpp: `attnviz compute`, `attnviz import` and `attnviz run`, and reading their files with
// one-line errors.
#include "cli.hpp"
#include "attention_file.hpp"
#include "builtin.hpp"
#include "chat.hpp"
#include "gguf.hpp"
#include "hub_fetch.hpp"
#include "model.hpp"
#include "options.hpp"
#include "text.hpp"
#include "why.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <numeric>
#include <optional>
#include <tuple>
#include <sstream>
#include <string_view>

#include <sys/resource.h>
#include <unistd.h>

namespace attn {

namespace {

// The whole of a file or of stdin; false when the file cannot be opened.
bool read_text(const std::string& path, std::istream& in, std::string& text) {
    if (path == "-") {
        text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
        return true;
    }
    return read_file(path, text);
}

// "PATH:LINE:COLUMN: malformed JSON ..." or "PATH: FIELD: expected ..."
std::string located(const std::string& shown, const SceneError& e) {
    const bool position = !e.where().empty() && std::isdigit(static_cast<unsigned char>(e.where()[0]));
    return shown + (position ? ":" : ": ") + e.what();
}

}  // namespace

namespace {

// Reads path (or stdin for "-") and parses it with read(text); on failure one line in `error`.
template <class T, class Read>
bool load_json_file(const std::string& path, std::istream& in, T& out, std::string& error, Read read) {
    const std::string shown = path == "-" ? "<stdin>" : path;
    std::string text;
    if (!read_text(path, in, text)) {
        error = shown + ": cannot open the file";
        return false;
    }
    try {
        out = read(text);
    } catch (const SceneError& e) {
        error = located(shown, e);
        return false;
    } catch (const ModelError& e) {  // a .safetensors import's broken header
        error = e.what();
        return false;
    }
    return true;
}

}  // namespace

bool load_scene_file(const std::string& path, std::istream& in, Scene& scene, std::string& error) {
    return load_json_file(path, in, scene, error, [&](std::string_view text) {
        try {
            return read_scene(text);
        } catch (const SceneError&) {
            if (file_kind(text) != FileKind::Import) throw;
            throw SceneError("(top level)", "this looks like a model's attention (SPEC.md §3), not a scene: attnviz import " +
                                                path + " reads it" + (path == "-" ? "" : ", attnviz " + path + " shows it"));
        }
    });
}

bool load_import_file(const std::string& path, std::istream& in, ImportedAttention& imported, std::string& error) {
    return load_json_file(path, in, imported, error,
                          [&](std::string_view bytes) { return read_import_file(bytes, path == "-" ? "<stdin>" : path); });
}

int run_compute(const std::string& path, std::istream& in, std::ostream& out, std::ostream& err) {
    Scene scene;
    std::string error;
    if (!load_scene_file(path, in, scene, error)) {
        err << error << "\n";
        return kExitBadInput;
    }
    try {
        // SPEC §2 asks for every matrix: no long trace here.
        out << write_trace(compute(scene, std::numeric_limits<std::int64_t>::max())) << "\n";
    } catch (const std::exception& e) {  // not bad input: a bug or out of memory
        err << (path == "-" ? "<stdin>" : path) << ": cannot compute: " << e.what() << "\n";
        return 1;
    }
    return 0;
}

namespace {

// The shortest decimal that reads back as the same float (as scene files are written).
nlohmann::json number(float v) {
    char buffer[32];
    for (int digits = 6; digits <= 9; ++digits) {
        std::snprintf(buffer, sizeof buffer, "%.*g", digits, static_cast<double>(v));
        if (std::strtof(buffer, nullptr) == v) break;
    }
    return nlohmann::json::parse(buffer);
}

// A matrix as rows of such numbers.
nlohmann::json matrix_json(const Matrix& m) {
    nlohmann::json rows = nlohmann::json::array();
    for (Eigen::Index i = 0; i < m.rows(); ++i) {
        nlohmann::json row = nlohmann::json::array();
        for (Eigen::Index j = 0; j < m.cols(); ++j) row.push_back(number(m(i, j)));
        rows.push_back(std::move(row));
    }
    return rows;
}

// "1 head", "12 heads"; "1 query", "3 queries".
std::string count(size_t n, const std::string& one, const std::string& many = "") {
    return std::to_string(n) + " " + (n == 1 ? one : many.empty() ? one + "s" : many);
}

std::string token_list(const std::vector<std::string>& tokens) {
    constexpr size_t kShown = 12;
    std::string s;
    for (size_t i = 0; i < tokens.size() && i < kShown; ++i) s += (i ? " " : "") + tokens[i];
    if (tokens.size() > kShown) s += " …";
    return s;
}

// One paragraph: the model, then each stack's layers × heads and tokens.
std::string summary(const std::string& shown, const ImportedAttention& a) {
    std::ostringstream s;
    s << shown << ": " << (a.model.empty() ? "" : a.model + ": ") << count(a.stacks.size(), "stack") << " of attention.";
    for (const AttentionStack& stack : a.stacks) {
        s << " " << stack.name << ": " << count(static_cast<size_t>(stack.layers), "layer") << " × "
          << count(static_cast<size_t>(stack.heads), "head") << ", ";
        if (stack.is_self())
            s << count(stack.queries.size(), "token") << " (" << token_list(stack.queries) << ").";
        else
            s << count(stack.queries.size(), "query", "queries") << " (" << token_list(stack.queries) << ") × "
              << count(stack.keys.size(), "key") << " (" << token_list(stack.keys) << ").";
    }
    return s.str();
}

}  // namespace

int run_import(const std::vector<std::string>& args, std::istream& in, std::ostream& out, std::ostream& err) {
    const CliCommand<ImportOptions>& command = import_command();
    ImportOptions o;
    std::vector<std::string> operands;
    if (const std::optional<int> code = start_command(command, args, o, operands, out, err)) return *code;
    if (operands.size() != 1 || o.json != (o.layer >= 0 && o.head >= 0) || (!o.json && (o.layer >= 0 || o.head >= 0 || !o.stack.empty()))) {
        err << "attnviz import: expected a file (or - for stdin), and --json with --layer and --head or none of them: "
            << usage_line(command) << "\n";
        return kExitBadInput;
    }
    const std::string& path = operands.front();
    const int layer = o.layer, head = o.head;
    const std::string& stack_name = o.stack;
    const bool json = o.json;
    const std::string shown = path == "-" ? "<stdin>" : path;
    ImportedAttention imported;
    std::string error;
    if (!load_import_file(path, in, imported, error)) {
        err << error << "\n";
        return kExitBadInput;
    }
    if (!json) {
        out << summary(shown, imported) << "\n";
        return 0;
    }
    const AttentionStack* stack = &imported.stacks.front();
    if (!stack_name.empty()) {
        stack = nullptr;
        std::string names;
        for (const AttentionStack& s : imported.stacks) {
            if (s.name == stack_name) stack = &s;
            names += (names.empty() ? "" : ", ") + s.name;
        }
        if (!stack) {
            err << shown << ": --stack: expected one of " << names << ", got \"" << stack_name << "\"\n";
            return kExitBadInput;
        }
    }
    if (layer >= stack->layers || head >= stack->heads) {
        err << shown << ": " << (layer >= stack->layers ? "--layer" : "--head") << ": expected 0 to "
            << (layer >= stack->layers ? stack->layers : stack->heads) - 1 << " (" << stack->name << " has "
            << count(static_cast<size_t>(stack->layers), "layer") << " × " << count(static_cast<size_t>(stack->heads), "head")
            << "), got " << (layer >= stack->layers ? layer : head)
            << "\n";
        return kExitBadInput;
    }
    const nlohmann::json j = {{"stack", stack->name},       {"layer", layer},          {"head", head},
                              {"queries", stack->queries}, {"keys", stack->keys}, {"weights", matrix_json(stack->map(layer, head))}};
    out << j.dump() << "\n";
    return 0;
}

// `attnviz run` (SPEC.md §5) ------------------------------------------------------------------

namespace {

// "464,3797,3332" → ids; false for anything else.
bool parse_ids(const std::string& s, std::vector<int>& ids) {
    ids.clear();
    size_t i = 0;
    while (i <= s.size()) {
        const size_t comma = std::min(s.find(',', i), s.size());
        const std::string part = s.substr(i, comma - i);
        char* end = nullptr;
        const long v = std::strtol(part.c_str(), &end, 10);
        if (part.empty() || *end != '\0' || v < -1000000000L || v > 1000000000L) return false;
        ids.push_back(static_cast<int>(v));
        i = comma + 1;
    }
    return !ids.empty();
}

nlohmann::json top_json(const std::vector<NextToken>& top) {
    nlohmann::json next = nlohmann::json::array();
    for (const NextToken& t : top) next.push_back({{"id", t.id}, {"token", t.token}, {"p", number(t.p)}});
    return next;
}

// The maps --json prints (SPEC.md §5 --maps, --pool): every map of every stack, or the heads
// named; each exact, or pooled to at most pool × pool blocks (each the maximum of the exact
// weights it covers). From the run's kept maps where it kept them and they are printed exact,
// else recomputed from what it kept (attention_maps.hpp: the same numbers).
struct PrintedMaps {
    bool all = true;
    std::vector<HeadRef> heads;  // !all: these
    int pool = 0;                // 0: exact
};

nlohmann::json map_json(kernels::Context& ctx, const RunResult& run, const HeadRef& h, int pool) {
    const BlockRun& b = run.stacks[static_cast<std::size_t>(h.stack)].layers[static_cast<std::size_t>(h.layer)];
    if (!b.weights.empty()) {
        const Matrix& map = b.weights[static_cast<std::size_t>(h.head)];
        if (pool <= 0) return matrix_json(map);
        return matrix_json(pooled(map, {0, static_cast<int>(map.rows()), 0, static_cast<int>(map.cols())}, pool, pool).values);
    }
    if (pool > 0) return matrix_json(map_pooled(ctx, b.kept, h.head, whole_map(b.kept), pool, pool).values);
    return matrix_json(map_region(ctx, b.kept, h.head, whole_map(b.kept)));
}

void put_maps(nlohmann::json& j, kernels::Context& ctx, const RunResult& run, const ImportedAttention& a, const PrintedMaps& printed) {
    if (printed.pool > 0) {  // the first stack's blocks (any other's: its own tokens, the same rule)
        const auto queries = static_cast<int>(a.stacks.front().queries.size()), keys = static_cast<int>(a.stacks.front().keys.size());
        j["pool"] = {{"rows", std::min(printed.pool, queries)}, {"cols", std::min(printed.pool, keys)}, {"reduce", pool_reduce_name(PoolReduce::Max)}};
    }
    if (!printed.all) {
        nlohmann::json maps = nlohmann::json::array();
        for (const HeadRef& h : printed.heads)
            maps.push_back({{"stack", a.stacks[static_cast<std::size_t>(h.stack)].name}, {"layer", h.layer + 1}, {"head", h.head + 1},
                            {"weights", map_json(ctx, run, h, printed.pool)}});
        j["maps"] = std::move(maps);
        return;
    }
    for (std::size_t k = 0; k < run.stacks.size(); ++k) {
        const StackRun& s = run.stacks[k];
        nlohmann::json layers = nlohmann::json::array();
        for (int l = 0; l < static_cast<int>(s.layers.size()); ++l) {
            nlohmann::json heads = nlohmann::json::array();
            for (int h = 0; h < s.heads; ++h) heads.push_back(map_json(ctx, run, {static_cast<int>(k), l, h}, printed.pool));
            layers.push_back(std::move(heads));
        }
        j[s.name] = std::move(layers);
    }
}

// The import format of SPEC.md §3 plus ids, hidden states, logits and the likeliest next tokens.
nlohmann::json run_json(kernels::Context& ctx, const LoadedModel& m, const RunInput& input, const RunResult& run,
                        const ImportedAttention& a, const std::vector<NextToken>& top, const PrintedMaps& printed) {
    nlohmann::json j;
    j["model"] = m.name;
    j["model_type"] = m.config().model_type;
    const bool encdec = m.config().encoder_decoder();
    if (encdec) {
        j["encoder_ids"] = input.source_ids;
        j["decoder_ids"] = input.ids;
        j["encoder_tokens"] = a.stacks.front().queries;
        j["decoder_tokens"] = a.stacks.back().queries;
    } else {
        j["ids"] = input.ids;
        j["tokens"] = a.stacks.front().queries;
    }
    put_maps(j, ctx, run, a, printed);
    if (m.config().sinks && input.keep_maps) {  // gpt_oss: each row's weight on no token, 1 − Σ of the row, [layer][head][T]
        nlohmann::json layers = nlohmann::json::array();
        for (const BlockRun& b : run.stacks.front().layers) {
            nlohmann::json heads = nlohmann::json::array();
            for (const Matrix& w : b.weights) {
                nlohmann::json rows = nlohmann::json::array();
                for (Eigen::Index i = 0; i < w.rows(); ++i) rows.push_back(number(1.0f - w.row(i).sum()));
                heads.push_back(std::move(rows));
            }
            layers.push_back(std::move(heads));
        }
        j["sinks"] = std::move(layers);
    }
    if (!run.experts.empty()) {  // mixtures of experts: [layer][token] → [[expert, weight], …]; a dense layer's: []
        nlohmann::json layers = nlohmann::json::array();
        for (const Routing& r : run.experts) {
            nlohmann::json tokens = nlohmann::json::array();
            for (std::size_t t = 0; t < input.ids.size(); ++t) {
                nlohmann::json chosen = nlohmann::json::array();
                if (t < r.size())
                    for (const Routed& e : r[t]) chosen.push_back({e.expert, number(e.weight)});
                tokens.push_back(std::move(chosen));
            }
            layers.push_back(std::move(tokens));
        }
        j["experts"] = std::move(layers);
    }
    j["hidden"] = matrix_json(run.hidden);
    if (!run.logits.empty()) {
        nlohmann::json logits = nlohmann::json::array();
        for (float v : run.logits) logits.push_back(number(v));
        j["logits"] = std::move(logits);
        j["top"] = top_json(top);
    }
    if (!input.edits.knockout.empty()) {
        j["knockout"] = format_heads(m, input.edits.knockout);
        j["knockout_mode"] = input.edits.ablation == Ablation::Mean ? "mean" : "zero";
    }
    if (!input.edits.hidden.empty()) {
        nlohmann::json hidden = nlohmann::json::array();
        for (int p : input.edits.hidden) hidden.push_back(p + 1);
        j["hidden_tokens"] = std::move(hidden);
    }
    if (m.heads) {  // measured on the head probe (heads.hpp), layers and heads from 1
        const HeadScores& hs = *m.heads;
        nlohmann::json heads = nlohmann::json::array();
        for (int l = 0; l < hs.layers; ++l)
            for (int h = 0; h < hs.heads; ++h) {
                nlohmann::json scores = nlohmann::json::object(), tags = nlohmann::json::array();
                for (int k = 0; k < kHeadKinds; ++k)
                    scores[kHeadScoreNames[static_cast<size_t>(k)]] = number(hs.at(static_cast<HeadKind>(k), l, h));
                for (HeadKind k : head_tags(hs, l, h)) tags.push_back(kHeadTagNames[static_cast<size_t>(k)]);
                heads.push_back({{"stack", a.stacks.front().name}, {"layer", l + 1}, {"head", h + 1}, {"scores", scores}, {"tags", tags}});
            }
        j["heads"] = std::move(heads);
    }
    return j;
}

// The why views (SPEC.md §5 --lens, --attribute, --corrupted) and --probs, each when asked for.
struct Why {
    int target = -1, contrast = -1;
    std::optional<TokenProbs> probs;
    std::optional<Lens> lens;
    std::optional<Attribution> attribution;
    std::optional<Patching> patching;
};

// [layer][head] of a layers×heads array of doubles.
nlohmann::json grid_json(const std::vector<double>& v, int rows, int cols) {
    nlohmann::json out = nlohmann::json::array();
    for (int r = 0; r < rows; ++r)
        out.push_back(std::vector<double>(v.begin() + static_cast<std::ptrdiff_t>(r) * cols, v.begin() + static_cast<std::ptrdiff_t>(r + 1) * cols));
    return out;
}

void put_why(nlohmann::json& j, const LoadedModel& m, const Why& why) {
    const Tokenizer& t = m.decoder_tokenizer();
    if (why.probs) {  // [T]: null, then each token's {p, rank, top}
        nlohmann::json at = nlohmann::json::array({nullptr});
        for (int p = 1; p < why.probs->positions(); ++p) {
            const LensCell& c = why.probs->at[static_cast<std::size_t>(p)];
            nlohmann::json top = nlohmann::json::array();
            for (const TokenP& k : c.top) top.push_back({k.id, number(k.p)});
            at.push_back({{"id", c.target}, {"p", number(c.target_p)}, {"rank", c.target_rank}, {"top", std::move(top)}});
        }
        j["probs"] = std::move(at);
    }
    if (why.lens) {
        const Lens& lens = *why.lens;
        nlohmann::json layers = nlohmann::json::array();
        for (int l = 0; l < lens.layers; ++l) {
            nlohmann::json row = nlohmann::json::array();
            for (int p = 0; p < lens.positions; ++p) {
                const LensCell& c = lens.at(l, p);
                nlohmann::json top = nlohmann::json::array();
                for (const TokenP& k : c.top) top.push_back({k.id, number(k.p)});
                row.push_back({{"top", std::move(top)}, {"target", c.target}, {"target_rank", c.target_rank}, {"target_p", number(c.target_p)}});
            }
            layers.push_back(std::move(row));
        }
        j["lens"] = std::move(layers);
    }
    if (why.attribution) {
        const Attribution& a = *why.attribution;
        nlohmann::json sources = nlohmann::json::array();
        for (int l = 0; l < a.layers; ++l)
            sources.push_back(grid_json(std::vector<double>(a.sources.begin() + static_cast<std::ptrdiff_t>(l) * a.heads * a.positions,
                                                            a.sources.begin() + static_cast<std::ptrdiff_t>(l + 1) * a.heads * a.positions),
                                        a.heads, a.positions));
        j["attribution"] = {{"target", a.target}, {"target_token", t.token(a.target)},
                            {"contrast", a.contrast >= 0 ? nlohmann::json(a.contrast) : nlohmann::json()},
                            {"total", a.total}, {"embed", a.embed}, {"heads", grid_json(a.head, a.layers, a.heads)}, {"mlps", a.mlp},
                            {"bias", a.bias}, {"sources", std::move(sources)}};
        if (a.contrast >= 0) j["attribution"]["contrast_token"] = t.token(a.contrast);
    }
    if (why.patching) {
        const Patching& p = *why.patching;
        j["patching"] = {{"heads", grid_json(p.head, p.layers, p.heads)}, {"resid", grid_json(p.resid, p.layers + 1, p.positions)},
                         {"clean", p.clean}, {"corrupted", p.corrupted}};
    }
}

// The heads of a layers×heads array with the largest |value|, at most n: "2:1 +3.10, 1:3 −0.80".
std::string largest_heads(const std::vector<double>& v, int heads, int n) {
    std::vector<int> order(v.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return std::abs(v[static_cast<std::size_t>(a)]) > std::abs(v[static_cast<std::size_t>(b)]); });
    std::string s;
    for (int i = 0; i < std::min<int>(n, static_cast<int>(order.size())); ++i) {
        char item[48];
        std::snprintf(item, sizeof item, "%s%d:%d %+.2f", i ? ", " : "", order[static_cast<std::size_t>(i)] / heads + 1,
                      order[static_cast<std::size_t>(i)] % heads + 1, v[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])]);
        s += item;
    }
    return s;
}

void print_why(std::ostream& out, const LoadedModel& m, const Why& why) {
    const Tokenizer& t = m.decoder_tokenizer();
    const auto shown = [&](int id) { return "\"" + display_token(t.token(id)) + "\""; };
    char line[160];
    if (why.probs) {  // each token after the first: its probability
        out << "probabilities:";
        for (int p = 1; p < why.probs->positions(); ++p) {
            const LensCell& c = why.probs->at[static_cast<std::size_t>(p)];
            std::snprintf(line, sizeof line, " %s%s %.1f%%", p > 1 ? "· " : "", shown(c.target).c_str(), 100.0 * static_cast<double>(c.target_p));
            out << line;
        }
        out << "\n";
    }
    if (why.lens) {  // the last position, layer by layer
        const Lens& lens = *why.lens;
        out << "lens (last token, layer by layer):";
        for (int l = 0; l < lens.layers; ++l) {
            const TokenP& top = lens.at(l, lens.positions - 1).top.front();
            std::snprintf(line, sizeof line, " %s%d %s %.2f", l ? "· " : "", l, shown(top.id).c_str(), static_cast<double>(top.p));
            out << line;
        }
        out << "\n";
    }
    if (why.attribution) {
        const Attribution& a = *why.attribution;
        double heads = 0, mlps = 0;
        for (double v : a.head) heads += v;
        for (double v : a.mlp) mlps += v;
        out << "attribution: " << shown(a.target) << (a.contrast >= 0 ? " − " + shown(a.contrast) : "");
        std::snprintf(line, sizeof line, " %.3f = embeddings %.3f + heads %.3f + MLPs %.3f + biases %.3f\n", a.total, a.embed, heads, mlps, a.bias);
        out << line << "  heads: " << largest_heads(a.head, a.heads, 5) << "\n";
    }
    if (why.patching) {
        const Patching& p = *why.patching;
        std::snprintf(line, sizeof line, "patching: logit difference clean %.3f, corrupted %.3f; share restored by heads: ", p.clean, p.corrupted);
        out << line << largest_heads(p.head, p.heads, 5) << "\n";
    }
}

// The decoder's tokens as text: SentencePiece's "▁" and byte-level BPE's "Ġ" become spaces.
std::string joined_text(const std::vector<std::string>& tokens) {
    std::string s;
    for (const std::string& t : tokens) s += display_token(t);
    const size_t first = s.find_first_not_of(' ');
    return first == std::string::npos ? "" : s.substr(first);
}

// This process's peak resident memory so far, in bytes.
std::size_t peak_memory() {
    struct rusage u {};
    ::getrusage(RUSAGE_SELF, &u);
    return static_cast<std::size_t>(u.ru_maxrss) * 1024;  // Linux: kilobytes
}

}  // namespace

namespace {
ModelFiles model_files_of(const std::string& model, const FetchOptions& options) {
    std::error_code ec;
    if (model.rfind("ollama:", 0) == 0) {
        ModelFiles files = ModelFiles::from_gguf(hub::ollama_blob(options.env, model.substr(7)));
        files.label = model.find(':', 7) == std::string::npos ? model + ":latest" : model;
        return files;
    }
    const std::optional<hub::RepoId> id = hub::parse_repo_id(model);
    if (!id || std::filesystem::exists(model, ec) || find_builtin(model)) return folder_or_builtin(model);
    std::string snapshot;
    try {
        snapshot = hub_snapshot(*id, options);
    } catch (const ModelError& e) {
        if (id->repo.find('/') != std::string::npos) throw;
        // A bare name ("gpt2") may have meant a folder or a built-in model: say so too.
        const std::string why = std::string(e.what()).substr(e.file().size() + 2);
        throw ModelError(model, "", "no such folder, nor a built-in model (attnviz run --list names them); as a Hub id: " + why);
    }
    ModelFiles files = ModelFiles::from_folder(snapshot);
    files.folder = id->shown();  // messages name the repo: "ORG/NAME/model.safetensors: …"
    return files;
}
}  // namespace

ModelFiles open_model(const std::string& model, const FetchOptions& options) {
    FetchOptions o = options;  // a Hub id's :QUANT, or --quant (the two naming different files: refused)
    if (const std::optional<hub::RepoId> id = hub::parse_repo_id(model); id && !id->quant.empty() && model.rfind("ollama:", 0) != 0) {
        const auto same = [](const std::string& a, const std::string& b) {  // names match in any case (gguf_file_for)
            return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) { return std::toupper(static_cast<unsigned char>(x)) == std::toupper(static_cast<unsigned char>(y)); });
        };
        if (!o.quant.empty() && !same(o.quant, id->quant))
            throw ModelError(model, "--quant", "the id names " + id->quant + " and --quant " + o.quant + ": give one");
        o.quant = id->quant;
    }
    ModelFiles files = model_files_of(model, o);
    files.keep_gguf(o.quant);
    return files;
}

namespace {

// The fetch's progress, one line on stderr rewritten in place, when stderr is a terminal.
FetchOptions cli_fetch_options(const std::string& model, std::ostream& err, bool& progress_shown) {
    FetchOptions o;
    o.note = &err;
    if (::isatty(STDERR_FILENO))
        o.progress = [&err, &progress_shown, model, last = -1](const FetchProgress& p) mutable {
            const int percent = p.total ? static_cast<int>(100.0 * static_cast<double>(p.done) / static_cast<double>(p.total)) : 0;
            if (percent == last) return true;
            last = percent;
            char line[240];  // "ORG/NAME: model.safetensors 12.3 MB of 269.1 MB · all 4 % of 272.0 MB"
            std::snprintf(line, sizeof line, "\r%s: %s %s of %s \xc2\xb7 all %d %% of %s\x1b[K", model.c_str(), p.file.c_str(),
                          byte_size(static_cast<double>(p.file_done)).c_str(), byte_size(static_cast<double>(p.file_size)).c_str(), percent, byte_size(static_cast<double>(p.total)).c_str());
            err << line << std::flush;
            progress_shown = true;
            return true;
        };
    return o;
}

}  // namespace

int run_model(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
    if (args.size() == 1 && args[0] == "--list") {  // NAME<TAB>MODEL_TYPE<TAB>what it is
        for (const BuiltinModel& m : builtin_models()) out << m.name << "\t" << m.model_type << "\t" << m.about << "\n";
        const hub::Environment env = hub::environment();
        for (const hub::CachedModel& m : hub::cached_models(env))
            out << m.id.shown() << "\t" << m.model_type << "\tfrom the Hub, in " << env.cache << " (" << byte_size(static_cast<double>(m.bytes)) << ")\n";
        for (const hub::LocalModel& m : hub::local_models(env)) {  // the architecture its file names
            std::string arch = "?";
            try {
                const GgufFile g = read_gguf(*FileBytes::map(m.path, m.path), m.path);
                if (const GgufValue* a = g.find("general.architecture"); a && a->type == GgufValue::Type::String) arch = a->text;
            } catch (const ModelError&) {
            }
            out << m.name << "\t" << arch << "\tGGUF, " << m.runtime << "'s (" << byte_size(static_cast<double>(m.bytes)) << ")\n";
        }
        return 0;
    }
    const CliCommand<ModelOptions>& command = run_command();
    ModelOptions o;
    std::vector<std::string> operands;
    if (const std::optional<int> code = start_command(command, args, o, operands, out, err)) return *code;
    if (operands.size() != 1 || (o.text && o.ids) || (o.source && o.source_ids) || (o.chat && (o.text || o.ids)) ||
        (o.image && (o.ids || o.chat))) {
        err << "attnviz run: expected a model (a folder, a built-in name: attnviz run --list, or a Hub id ORG/NAME[@REVISION][:QUANT]), "
               "and --text, --ids, --chat or --image, one of them (a vision-language model: --image and --text): "
            << usage_line(command) << "\n";
        return kExitBadInput;
    }
    const std::string& path = operands.front();
    const std::optional<std::string>&text = o.text, &source = o.source, &ids_arg = o.ids, &source_ids_arg = o.source_ids;
    const bool json = o.json;
    const int top_n = o.top, max_new = o.max_new, new_tokens = o.generate.value_or(0);
    const int threads = o.threads.value_or(kernels::Pool::hardware_threads());
    const Sampling sampling{o.temperature.value_or(0.0f), o.top_k.value_or(0), o.seed.value_or(0)};
    for (auto [arg, name] : {std::pair{&text, "--text"}, std::pair{&source, "--source"}})
        if (*arg)
            if (std::optional<std::size_t> at = first_bad_utf8(**arg)) {
                err << "attnviz run: " << name << ": byte " << *at + 1 << " is not UTF-8 (the text must be UTF-8)\n";
                return kExitBadInput;
            }
    nlohmann::ordered_json chat;  // --chat's conversation
    if (o.chat) {
        std::string chat_text;
        if (!read_file(*o.chat, chat_text)) {
            err << "attnviz run: --chat: " << *o.chat << ": cannot open the file\n";
            return kExitBadInput;
        }
        try {
            chat = nlohmann::ordered_json::parse(chat_text);
        } catch (const nlohmann::json::parse_error& e) {
            err << "attnviz run: " << *o.chat << ":" << line_column(chat_text, e.byte > 0 ? e.byte - 1 : 0) << ": malformed JSON\n";
            return kExitBadInput;
        }
    }
    RunInput input;
    for (auto [arg, name, dest] : {std::tuple{&ids_arg, "--ids", &input.ids}, std::tuple{&source_ids_arg, "--source-ids", &input.source_ids}})
        if (*arg && !parse_ids(**arg, *dest)) {
            err << "attnviz run: " << name << ": expected ids separated by commas (464,3797,3332), got \"" << **arg << "\"\n";
            return kExitBadInput;
        }
    try {
        bool progress_shown = false;
        ModelFiles files;
        try {
            FetchOptions fetch = cli_fetch_options(path, err, progress_shown);
            fetch.quant = o.quant;
            files = open_model(path, fetch);
        } catch (const ModelError&) {
            if (progress_shown) err << "\n";  // the error starts a line of its own
            throw;
        }
        if (progress_shown) err << "\n";
        const LoadedModel m = load_model(files, json);
        const bool encdec = m.config().encoder_decoder();
        if (encdec) {
            if (!source && !source_ids_arg) throw ModelError(path, "--source", "marian is an encoder-decoder model: give the source text (--source) or its ids (--source-ids)");
            if (source) input.source_ids = encode_text(m, *source);
            else check_ids(m, input.source_ids, "--source-ids");
        } else if (m.config().vision()) {
            if (!o.image) throw ModelError(path, text ? "--text" : o.chat ? "--chat" : "--ids", m.config().model_type + " is a vision model: give a picture (--image)");
            if (text) throw ModelError(path, "--text", m.config().model_type + " is a vision encoder: it reads a picture (--image) and no text");
        } else if (m.config().vision_language()) {
            if (o.image && !text) throw ModelError(path, "--text", m.config().model_type + " reads a picture with a text: give --text too (\"<image>\" places the picture)");
        } else {
            if (source || source_ids_arg)
                throw ModelError(path, source ? "--source" : "--source-ids", m.config().model_type + " has no encoder-decoder: give --text or --ids");
            if (o.image) throw ModelError(path, "--image", m.config().model_type + " reads text, not pictures: give --text");
            if (!text && !ids_arg && !o.chat) throw ModelError(path, "--text", "give the text (--text), its ids (--ids) or a conversation (--chat)");
        }
        std::optional<PictureInput> picture;  // a vision-language model's views, run through its tower below
        if (o.image) {  // a picture: decoded, processed as the model's processor says, cut into patches
            if (!m.processor) throw ModelError(files.shown("preprocessor_config.json"), "", "missing: how the picture is resized and normalized");
            std::string bytes;
            if (!read_file(*o.image, bytes)) throw ModelError(*o.image, "", "cannot open the file");
            const Image decoded = decode_image(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size(), *o.image);
            if (m.config().vision_language()) picture = picture_input(m, decoded);
            else input = image_input(m, process_image(*m.processor, decoded));
        }
        std::string chat_prompt;  // --chat's text, as the model's template wrote it
        if (o.chat) {
            if (encdec) throw ModelError(path, "--chat", "marian translates: give --source");
            const std::optional<ChatFormat> format = chat_format(files);
            if (!format) throw ModelError(path, "--chat", "the model has no chat template (a base model: give --text)");
            TemplateOptions when;
            when.now = chat_template_now();
            chat_prompt = render_chat(*format, chat, *o.chat, when);
            input.ids = encode_prompt(m, chat_prompt);
        }
        if (text) input.ids = encdec ? encode_target(m, *text) : encode_text(m, picture ? picture_prompt(m, *text, *picture, "--text") : *text);
        else if (ids_arg) check_ids(m, input.ids, "--ids");
        if (o.knockout) input.edits.knockout = parse_heads(m, *o.knockout, "--knockout");
        if (o.hidden) input.edits.hidden = *o.hidden;
        input.edits.ablation = o.ablation.value_or(Ablation::Zero);
        check_interventions(m, input, "--hide-token");
        Why why;
        std::optional<RunInput> corrupted;
        if (o.lens || o.attribute || o.contrast || o.corrupted || o.corrupted_ids) {
            check_why(m, o.lens ? "--lens" : o.attribute ? "--attribute" : o.contrast ? "--contrast" : "--corrupted");
            if (o.contrast && !o.attribute) throw ModelError(path, "--contrast", "needs --attribute: the token it is compared with");
            if (o.corrupted && o.corrupted_ids) throw ModelError(path, "--corrupted", "give the corrupted text or its ids (--corrupted-ids), not both");
            const char* patch_field = o.corrupted ? "--corrupted" : "--corrupted-ids";
            if ((o.corrupted || o.corrupted_ids) && !o.contrast)
                throw ModelError(path, patch_field, "needs --attribute and --contrast: patching measures how much of their logit difference comes back");
            if (o.attribute) why.target = one_token(m, *o.attribute, "--attribute");
            if (o.contrast) why.contrast = one_token(m, *o.contrast, "--contrast");
            if (o.corrupted || o.corrupted_ids) {
                corrupted = input;
                if (o.corrupted) corrupted->ids = encode_text(m, *o.corrupted);
                else if (!parse_ids(*o.corrupted_ids, corrupted->ids))
                    throw ModelError(path, "--corrupted-ids", "expected ids separated by commas (464,3797,3332), got \"" + *o.corrupted_ids + "\"");
                else check_ids(m, corrupted->ids, "--corrupted-ids");
                if (corrupted->ids.size() != input.ids.size())
                    throw ModelError(path, patch_field, "the corrupted text is " + count(corrupted->ids.size(), "token") + ", the text " +
                                                            count(input.ids.size(), "token") + ": patching needs as many");
            }
            input.record = true;
        }
        if (o.probs && !m.config().decoder_only())
            throw ModelError(path, "--probs", m.config().model_type + (m.config().encoder_only() ? " has no LM head: it predicts no token"
                                                                                               : " is an encoder-decoder: --probs reads decoder-only models"));
        if (new_tokens > 0 && !m.config().decoder_only())
            throw ModelError(path, "--generate", m.config().model_type + (encdec ? " translates without --text; --max-new bounds it" : " does not generate text"));
        kernels::Pool pool(threads);  // the numbers are the same for any count (kernels::Pool)
        kernels::Context ctx(kernels::best_isa(), &pool);
        // The picture's views through the vision tower, one at a time (their maps kept only where
        // they are printed: up to kMapsKeptUpTo patches a view), then into the text's image tokens
        std::vector<RunResult> views;
        if (picture) {
            std::vector<Matrix> hidden;
            for (const RunInput& view : picture->views) {
                RunResult run = forward(ctx, *m.vision, view);
                hidden.push_back(std::move(run.hidden));
                if (view.keep_maps) views.push_back(std::move(run));
            }
            input.image_rows = picture_rows(ctx, m, hidden, picture->grid_rows);
            input.positions = picture_positions(m, input.ids, *picture);
        }
        // Past kMapsKeptUpTo tokens the maps are on demand: only those named are printed.
        const int T = static_cast<int>(std::max(input.ids.size(), input.source_ids.size())) + new_tokens;
        input.keep_maps = T <= kMapsKeptUpTo;
        PrintedMaps printed;
        printed.pool = o.pool;
        printed.all = o.maps ? *o.maps == "all" : input.keep_maps;
        if (o.maps && !printed.all) printed.heads = parse_heads(m, *o.maps, "--maps");
        check_run_memory(m, input, kernels::machine_memory(), text ? "--text" : o.chat ? "--chat" : o.image ? "--image" : "--ids");
        Generated generated;
        const std::size_t prompt = input.ids.size();
        if (encdec && input.ids.empty()) {  // translate: decoding, then every step's maps at once
            RunInput encoder_only = input;
            encoder_only.ids = {m.config().decoder_start_id};
            const RunResult encoded = forward(ctx, m.model, encoder_only);
            generated = generate(ctx, m.model, encoded.encoder_output, {m.config().decoder_start_id}, max_new, m.config().eos_id, sampling, input.edits);
            input.ids = generated.ids;
        } else if (new_tokens > 0) {
            generated = generate(ctx, m.model, {}, input.ids, new_tokens, m.config().eos_id, sampling, input.edits, input.image_rows,
                                 input.positions);
            input.ids = generated.ids;
            if (!input.positions.empty()) input.positions = picture_positions(m, input.ids, *picture);
        }
        const RunResult run = forward(ctx, m.model, input);
        if (o.probs) why.probs = token_probs(ctx, m.model, run, input.ids);
        if (o.lens) why.lens = logit_lens(ctx, m.model, run);
        if (why.target >= 0) why.attribution = attribute(ctx, m.model, run, why.target, why.contrast);
        if (corrupted) why.patching = patching(ctx, m.model, input, *corrupted, why.target, why.contrast, o.corrupted ? "--corrupted" : "--corrupted-ids");
        const ImportedAttention a = run_attention(m, input, run);
        const std::vector<NextToken> top = top_tokens(m, run.logits, top_n);
        if (json) {
            nlohmann::json j = run_json(ctx, m, input, run, a, top, printed);
            if (const std::string g = files.gguf(); !g.empty()) {  // SPEC.md §5: what the file held
                const FileBytes& f = files.need(g);
                const GgufModel held = gguf_model(read_gguf(f, files.shown(g)), f);
                j["gguf"] = {{"architecture", held.architecture}, {"types", held.types}};
            }
            if (o.maps || !input.keep_maps) j["memory"] = {{"kept_bytes", kept_bytes(run)}, {"peak_bytes", peak_memory()}};
            if (o.chat) j["prompt"] = chat_prompt;
            if (picture) {  // SPEC.md §5: where the picture's tokens are, and the tower's maps of each view
                std::vector<int> at;
                for (std::size_t t = 0; t < input.ids.size(); ++t)
                    if (input.ids[t] == m.config().image_token_id) at.push_back(static_cast<int>(t));
                j["image_tokens"] = at;
                j["patches"] = {{"rows", picture->grid_rows}, {"cols", picture->grid_cols}, {"size", m.config().vision_tower->patch_size}, {"first", 0}};
                if (!input.positions.empty()) j["positions"] = input.positions;  // qwen2_5_vl: (time, height, width) of each token
                j["tiles"] = {{"rows", picture->rows}, {"cols", picture->cols}};
                if (!views.empty()) {
                    nlohmann::json maps = nlohmann::json::array();
                    for (const RunResult& v : views) {
                        nlohmann::json layers = nlohmann::json::array();
                        for (const BlockRun& b : v.stacks.front().layers) {
                            nlohmann::json heads = nlohmann::json::array();
                            for (const Matrix& w : b.weights) heads.push_back(matrix_json(w));
                            layers.push_back(std::move(heads));
                        }
                        maps.push_back(std::move(layers));
                    }
                    j["vision_attention"] = std::move(maps);
                }
            }
            if (m.config().vision()) {  // the picture's grid; the first patch after the [CLS] and the registers
                const int rows = input.patch_rows, cols = rows > 0 ? static_cast<int>(input.patches.rows()) / rows : 0;
                j["patches"] = {{"rows", rows}, {"cols", cols}, {"size", m.config().patch_size},
                                {"first", (m.config().class_token ? 1 : 0) + m.config().registers}};
            }
            put_why(j, m, why);
            if (new_tokens > 0) {
                const std::vector<int> ids(input.ids.begin() + static_cast<std::ptrdiff_t>(prompt), input.ids.end());
                j["generated_ids"] = ids;
                j["generated_tokens"] = std::vector<std::string>(a.stacks.front().queries.begin() + static_cast<std::ptrdiff_t>(prompt), a.stacks.front().queries.end());
                nlohmann::json steps = nlohmann::json::array();
                for (const std::vector<float>& logits : generated.logits) steps.push_back(top_json(top_tokens(m, logits, top_n)));
                j["generated_top"] = std::move(steps);
            }
            out << j.dump() << "\n";
            return 0;
        }
        out << m.summary(static_cast<int>(std::max(input.ids.size(), input.source_ids.size()))) << "\n";
        for (const AttentionStack& s : a.stacks)
            if (s.name != "cross_attention")
                out << s.name << ": " << count(s.queries.size(), "token") << ": " << token_list(s.queries) << "\n";
        if (new_tokens > 0)
            out << "generated: " << joined_text(std::vector<std::string>(a.stacks.front().queries.begin() + static_cast<std::ptrdiff_t>(prompt), a.stacks.front().queries.end())) << "\n";
        if (!input.keep_maps)
            out << "maps: on demand past " << kMapsKeptUpTo << " tokens (kept " << byte_size(static_cast<double>(kept_bytes(run)))
                << "): --json --maps L:H,… prints those\n";
        if (encdec) out << "translation: " << joined_text(std::vector<std::string>(a.stacks.back().queries.begin() + 1, a.stacks.back().queries.end())) << "\n";
        if (!top.empty()) {
            out << (m.config().vision() ? "labels:" : "next:");  // a classifier's labels, or the next token
            for (const NextToken& t : top) {
                char p[16];
                std::snprintf(p, sizeof p, "%.3f", static_cast<double>(t.p));
                out << "  \"" << display_token(t.token) << "\" " << p;
            }
            out << "\n";
        }
        print_why(out, m, why);
        return 0;
    } catch (const ModelError& e) {
        err << (e.file().empty() ? "attnviz run: " : "") << e.what() << "\n";
    } catch (const std::exception& e) {
        err << path << ": " << e.what() << "\n";
    }
    return kExitBadInput;
}

namespace {

// `attnviz --help`: every command.
std::string all_help() {
    return "attnviz: attention, computed and drawn. Without a command: the window (a scene, an import file, a model).\n\n" +
           help_text(window_command()) + "\n" + help_text(compute_command()) + "\n" + help_text(import_command()) + "\n" +
           help_text(run_command()) + "\n" + help_text(render_command());
}

}  // namespace

int run_cli(int argc, char** argv) {
    if (argc == 2 && (std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h")) {
        std::cout << all_help();
        return 0;
    }
    if (argc >= 2 && std::string_view(argv[1]) == "import")
        return run_import(std::vector<std::string>(argv + 2, argv + argc), std::cin, std::cout, std::cerr);
    if (argc >= 2 && std::string_view(argv[1]) == "run")
        return run_model(std::vector<std::string>(argv + 2, argv + argc), std::cout, std::cerr);
    if (argc < 2 || std::string_view(argv[1]) != "compute") return kNotACommand;
    if (argc == 3 && (std::string_view(argv[2]) == "--help" || std::string_view(argv[2]) == "-h")) {
        std::cout << help_text(compute_command());
        return 0;
    }
    if (argc != 3) {
        std::cerr << "attnviz compute: expected one scene file (or - for stdin): " << usage_line(compute_command()) << "\n";
        return kExitBadInput;
    }
    return run_compute(argv[2], std::cin, std::cout, std::cerr);
}

}  // namespace attn
