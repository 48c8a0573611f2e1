// options.cpp: the rows of every command's options (options.hpp).
//
// [SECTION] Checks
// [SECTION] compute, import
// [SECTION] run, and the window after a model
// [SECTION] render
#include "options.hpp"

#include "model.hpp"  // parse_head_items, parse_positions

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace attn {
namespace {

// [SECTION] Checks -------------------------------------------------------------------------------

std::string quoted(std::string_view v) { return "\"" + std::string(v) + "\""; }

// A whole number in [lo, hi] into `out`: "" or what was wrong.
template <class T>
std::string whole(std::string_view v, long long lo, long long hi, T& out) {
    const std::string s(v);
    char* end = nullptr;
    const long long n = std::strtoll(s.c_str(), &end, 10);
    if (s.empty() || *end != '\0' || s[0] == '+' || n < lo || n > hi)
        return "expected a whole number from " + std::to_string(lo) + " to " + std::to_string(hi) +
               ", got " + quoted(v);
    out = static_cast<T>(n);
    return "";
}

// A number in [lo, hi] into `out`.
template <class T>
std::string decimal(std::string_view v, float lo, float hi, T& out) {
    const std::string s(v);
    char* end = nullptr;
    const float x = std::strtof(s.c_str(), &end);
    if (s.empty() || *end != '\0' || !(x >= lo && x <= hi)) {
        char range[64];
        std::snprintf(range, sizeof range, "from %g to %g", static_cast<double>(lo), static_cast<double>(hi));
        return "expected a number " + std::string(range) + ", got " + quoted(v);
    }
    out = x;
    return "";
}

// One of `choices` ("heatmap|lines") into `out`.
std::string one_of(std::string_view v, std::string_view choices, std::string& out) {
    std::string list;
    for (std::size_t at = 0; at <= choices.size();) {
        const std::size_t bar = std::min(choices.find('|', at), choices.size());
        const std::string_view choice = choices.substr(at, bar - at);
        if (v == choice) {
            out = std::string(v);
            return "";
        }
        list += (list.empty() ? "" : bar == choices.size() ? " or " : ", ") + std::string(choice);
        at = bar + 1;
    }
    return "expected " + list + ", got " + quoted(v);
}

std::string any_text(std::string_view v, std::optional<std::string>& out) {
    out = std::string(v);
    return "";
}

// [SECTION] compute, import ------------------------------------------------------------------------

constexpr CliCommand<NoOptions> kCompute{
    "attnviz compute", "SCENE.json|-", "Prints a scene's whole trace as JSON (SPEC.md §2): per head q k v scores scaled weights output.", {}};

constexpr CliOption<ImportOptions> kImportOptions[] = {
    {"--json", nullptr, "print one map as JSON (`{stack, layer, head, queries, keys, weights}`), with `--layer` and `--head`", "",
     [](ImportOptions& o, std::string_view) -> std::string { o.json = true; return ""; }},
    {"--layer", "L", "the map's layer, from 0", "", [](ImportOptions& o, std::string_view v) { return whole(v, 0, 1000000, o.layer); }},
    {"--head", "H", "the map's head, from 0", "", [](ImportOptions& o, std::string_view v) { return whole(v, 0, 1000000, o.head); }},
    {"--stack", "NAME", "the map's stack (`encoder_attention`, …)", "the first",
     [](ImportOptions& o, std::string_view v) -> std::string { o.stack = std::string(v); return ""; }},
};
constexpr CliCommand<ImportOptions> kImport{
    "attnviz import", "FILE|-", "Checks an attention file (SPEC.md §3) and prints one paragraph about it, or one map as JSON.", kImportOptions};

// [SECTION] run, and the window after a model ----------------------------------------------------

using Row = CliOption<ModelOptions>;

constexpr Row kText{"--text", "\"…\"", "the text (an encoder-decoder's target: translated when not given)", "",
                    [](ModelOptions& o, std::string_view v) { return any_text(v, o.text); }};
constexpr Row kKnockout{"--knockout", "L:H,…",
                        "those heads' outputs zeroed, or replaced by their mean (from 1; `STACK:L:H` for Marian's stacks)", "",
                        [](ModelOptions& o, std::string_view v) -> std::string {
                            if (!parse_head_items(v))
                                return "expected LAYER:HEAD counted from 1, comma-separated (2:3,1:1), or STACK:LAYER:HEAD, got " + quoted(v);
                            o.knockout = std::string(v);
                            return "";
                        }};
constexpr Row kKnockoutMode{"--knockout-mode", "zero|mean", "what a knocked-out head's output becomes", "`zero`",
                            [](ModelOptions& o, std::string_view v) -> std::string {
                                std::string mode;
                                std::string why = one_of(v, "zero|mean", mode);
                                if (why.empty()) o.ablation = mode == "mean" ? Ablation::Mean : Ablation::Zero;
                                return why;
                            }};
constexpr Row kHideToken{"--hide-token", "N,…", "no query attends to those tokens (from 1; Marian: the source's), in every layer", "",
                         [](ModelOptions& o, std::string_view v) -> std::string {
                             try {
                                 o.hidden = parse_positions(v, "--hide-token");
                             } catch (const ModelError& e) {
                                 const std::string what = e.what();
                                 return what.substr(what.find(": ") + 2);
                             }
                             return "";
                         }};
constexpr Row kTemperature{"--temperature", "T", "sampling temperature, 0 (greedy) to 100", "`0`",
                           [](ModelOptions& o, std::string_view v) { return decimal(v, 0.0f, 100.0f, o.temperature.emplace()); }};
constexpr Row kTopK{"--top-k", "K", "sample from the K likeliest tokens only (0: all)", "`0`",
                    [](ModelOptions& o, std::string_view v) { return whole(v, 0, 100000, o.top_k.emplace()); }};
constexpr Row kSeed{"--seed", "S", "the sampling's seed: the same seed gives the same tokens natively, in the page and in Python", "`0`",
                    [](ModelOptions& o, std::string_view v) { return whole(v, 0, 2147483647, o.seed.emplace()); }};
constexpr Row kThreads{"--threads", "N", "the threads a run uses, 1 to 1024; the output is the same for any N", "every core",
                       [](ModelOptions& o, std::string_view v) { return whole(v, 1, 1024, o.threads.emplace()); }};

constexpr Row kImage{"--image", "FILE", "a picture for a vision model (PNG, JPEG, BMP, GIF), processed as its preprocessor_config.json says", "",
                    [](ModelOptions& o, std::string_view v) { return any_text(v, o.image); }};

constexpr Row kRunOptions[] = {
    kText,
    {"--source", "\"…\"", "an encoder-decoder's source text", "",
     [](ModelOptions& o, std::string_view v) { return any_text(v, o.source); }},
    {"--ids", "1,2,3", "token ids instead of a text", "",
     [](ModelOptions& o, std::string_view v) { return any_text(v, o.ids); }},
    {"--source-ids", "4,5", "source ids instead of a source text", "",
     [](ModelOptions& o, std::string_view v) { return any_text(v, o.source_ids); }},
    {"--json", nullptr, "the import format (SPEC.md §3) plus ids, hidden states, logits and the likeliest next tokens", "",
     [](ModelOptions& o, std::string_view) -> std::string { o.json = true; return ""; }},
    {"--top", "N", "the likeliest next tokens to show", "`5`", [](ModelOptions& o, std::string_view v) { return whole(v, 0, 100000, o.top); }},
    {"--max-new", "N", "the most tokens a translation writes", "`32`",
     [](ModelOptions& o, std::string_view v) { return whole(v, 1, 100000, o.max_new); }},
    kKnockout,
    kKnockoutMode,
    kHideToken,
    {"--generate", "N", "continue the text by N tokens (decoder-only models), from the KV cache", "",
     [](ModelOptions& o, std::string_view v) { return whole(v, 1, 100000, o.generate.emplace()); }},
    kTemperature,
    kTopK,
    kSeed,
    kThreads,
    {"--maps", "L:H,…|all",
     "the maps --json prints (from 1; `STACK:L:H` for Marian's): up to 512 tokens every map by default, past 512 only those named", "",
     [](ModelOptions& o, std::string_view v) -> std::string {
         if (v != "all" && !parse_head_items(v))
             return "expected all, or LAYER:HEAD counted from 1, comma-separated (3:2,12:5), got " + quoted(v);
         o.maps = std::string(v);
         return "";
     }},
    {"--pool", "N", "each printed map pooled to at most N × N blocks, each the maximum of the exact weights it covers (1 to 65536)",
     "exact", [](ModelOptions& o, std::string_view v) { return whole(v, 1, 65536, o.pool); }},
    {"--quant", "NAME", "which .gguf file of a Hub repo or a folder that holds several (Q4_K_M, Q8_0, …: part of the file's name)",
     "the only one", [](ModelOptions& o, std::string_view v) -> std::string {
         if (v.empty() || v.find_first_of("/\\") != std::string_view::npos) return "expected a quantization's name (Q4_K_M), got " + quoted(v);
         o.quant = std::string(v);
         return "";
     }},
    {"--chat", "FILE", "a conversation (a JSON file: a list of {\"role\", \"content\"} turns) as the model's chat template writes it", "",
     [](ModelOptions& o, std::string_view v) { return any_text(v, o.chat); }},
    kImage,
    {"--lens", nullptr, "the logit lens: each layer's stream at each position through the final norm and the LM head, its top 5 tokens", "",
     [](ModelOptions& o, std::string_view) -> std::string { o.lens = true; return ""; }},
    {"--probs", nullptr, "each token's probability under the model (from the position before it), its rank and the 10 likeliest there", "",
     [](ModelOptions& o, std::string_view) -> std::string { o.probs = true; return ""; }},
    {"--attribute", "TOKEN", "each head's and MLP's direct contribution to that token's logit at the last position (one token: \" cat\", or #ID)", "",
     [](ModelOptions& o, std::string_view v) { return any_text(v, o.attribute); }},
    {"--contrast", "TOKEN", "--attribute's contributions to the logit difference with this token", "",
     [](ModelOptions& o, std::string_view v) { return any_text(v, o.contrast); }},
    {"--corrupted", "\"…\"", "activation patching: a text of as many tokens, each head's output and each stream row patched from --text into it", "",
     [](ModelOptions& o, std::string_view v) { return any_text(v, o.corrupted); }},
    {"--corrupted-ids", "1,2,3", "the corrupted text's ids instead of its text", "",
     [](ModelOptions& o, std::string_view v) { return any_text(v, o.corrupted_ids); }},
};
constexpr CliCommand<ModelOptions> kRun{
    "attnviz run", "MODEL",
    "Runs a model (a folder, a .gguf file, ollama:NAME[:TAG], a built-in model: attnviz run --list, or a Hub id ORG/NAME[@REVISION][:QUANT]) "
    "on a text and prints what it holds, the tokens and the likeliest next tokens (SPEC.md §5).",
    kRunOptions};

constexpr Row kWindowOptions[] = {
    kText,
    kImage,
    {"--compare", "\"…\"", "the Compare view's second text", "",
     [](ModelOptions& o, std::string_view v) { return any_text(v, o.compare); }},
    kKnockout,
    kKnockoutMode,
    kHideToken,
    {"--importance", nullptr, "measure every head's importance after each run (the model view's panel)", "",
     [](ModelOptions& o, std::string_view) -> std::string { o.importance = true; return ""; }},
    {"--generate", "N", "continue the text by 1 to 64 tokens, then step through them", "",
     [](ModelOptions& o, std::string_view v) { return whole(v, 1, 64, o.generate.emplace()); }},
    kTemperature,
    kTopK,
    kSeed,
    kThreads,
};
constexpr CliCommand<ModelOptions> kWindow{
    "attnviz", "MODEL",
    "Opens a model (a folder, a built-in model or scene, a Hub id) in the window, running live.", kWindowOptions};

// [SECTION] render ---------------------------------------------------------------------------------

using RenderRow = CliOption<RenderOptions>;

constexpr RenderRow kRenderOptions[] = {
    {"--view", "heatmap|lines|steps|model|explain|qk", "the figure (`model`: an import's grid)", "`heatmap`",
     [](RenderOptions& o, std::string_view v) { return one_of(v, "heatmap|lines|steps|model|explain|qk", o.view); }},
    {"--preset", "NAME", "a built-in scene instead of a file (`i-am-good`, `masked-apple`, …)", "",
     [](RenderOptions& o, std::string_view v) -> std::string { o.preset = std::string(v); return ""; }},
    {"--png", "OUT.png", "the figure as a picture, `--width`×`--height` pixels at UI scale `--scale`", "",
     [](RenderOptions& o, std::string_view v) -> std::string { o.png = std::string(v); return ""; }},
    {"--svg", "OUT.svg",
     "lines, heatmap or the Q–K space as SVG (no steps): the same picture as the PNG at that size and scale; needs no GL and no "
     "display; at most 262,144 cells (a 512 × 512 heatmap, or its zoomed part), else exit 2",
     "",
     [](RenderOptions& o, std::string_view v) -> std::string { o.svg = std::string(v); return ""; }},
    {"--width", "W", "picture width, 16 … 8192", "`1200`", [](RenderOptions& o, std::string_view v) { return whole(v, 16, 8192, o.width); }},
    {"--height", "H", "picture height, 16 … 8192", "`800`", [](RenderOptions& o, std::string_view v) { return whole(v, 16, 8192, o.height); }},
    {"--scale", "S", "UI scale, 0.5 … 4", "`1`",
     [](RenderOptions& o, std::string_view v) { return decimal(v, 0.5f, 4.0f, o.scale); }},
    {"--theme", "dark|light", "colours", "`light`", [](RenderOptions& o, std::string_view v) { return one_of(v, "dark|light", o.theme); }},
    {"--lang", "en|zh", "the figure's words (axis captions, legend, title)", "`en`",
     [](RenderOptions& o, std::string_view v) { return one_of(v, "en|zh", o.lang); }},
    {"--layout", "OUT.json", "where tokens and cells were drawn (for tests)", "",
     [](RenderOptions& o, std::string_view v) -> std::string { o.layout = std::string(v); return ""; }},
};
constexpr CliCommand<RenderOptions> kRender{
    "attnviz render", "SCENE.json|MODEL.json|-",
    "Draws a view without a window (EGL, or a hidden GLFW window) and writes it as PNG and/or SVG; --png or --svg is needed.",
    kRenderOptions};

}  // namespace

const CliCommand<NoOptions>& compute_command() { return kCompute; }
const CliCommand<ImportOptions>& import_command() { return kImport; }
const CliCommand<ModelOptions>& run_command() { return kRun; }
const CliCommand<ModelOptions>& window_command() { return kWindow; }
const CliCommand<RenderOptions>& render_command() { return kRender; }

bool asks_for_help(const std::vector<std::string>& args) { return args.size() == 1 && (args[0] == "--help" || args[0] == "-h"); }

}  // namespace attn
