// link_state.cpp: the link's hash and the parent page's messages (link_state.hpp).
//
// [SECTION] Names and numbers
// [SECTION] Parameters (the table every other section reads)
// [SECTION] Hash
// [SECTION] App
// [SECTION] Messages
#include "link_state.hpp"

#include "builtin.hpp"
#include "hub.hpp"
#include "colormaps.hpp"
#include "live_scenes.hpp"
#include "presets.hpp"
#include "text.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <exception>
#include <limits>
#include <set>

namespace attn {
namespace {

// [SECTION] Names and numbers ----------------------------------------------------------------

constexpr const char* kDefaultPreset = "i-am-good";
constexpr size_t kMaxLinkText = 4096;  // text=, source=, compare=, corrupted=: a live model's input

const char* theme_name(Theme t) { return t == Theme::Light ? "light" : "dark"; }
const char* lang_name(Lang l) { return l == Lang::Zh ? "zh" : "en"; }

// A whole decimal number in [lo, hi], nothing else.
std::optional<int> parse_int(std::string_view s, int lo, int hi) {
    int v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || v < lo || v > hi) return std::nullopt;
    return v;
}

std::optional<float> parse_float(std::string_view s) {
    if (s.empty() || s.size() > 32) return std::nullopt;
    std::string text(s);
    char* end = nullptr;
    float v = std::strtof(text.c_str(), &end);
    if (end != text.c_str() + text.size() || !std::isfinite(v)) return std::nullopt;
    return v;
}

std::string format_float(float v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g", v);
    return buf;
}

constexpr bool unreserved(unsigned char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
           c == '.' || c == '~' || c == ',';
}
// unreserved() of every byte: a scene's base64url is scanned in a link four times a second.
constexpr auto kUnreserved = [] {
    std::array<bool, 256> table{};
    for (int c = 0; c < 256; ++c) table[static_cast<size_t>(c)] = unreserved(static_cast<unsigned char>(c));
    return table;
}();

// Appends s to out with every byte but the unreserved ones as %XX; runs of unreserved bytes (a
// whole scene's base64url) in one append.
void append_percent_encoded(std::string& out, std::string_view s) {
    constexpr char kHex[] = "0123456789ABCDEF";
    size_t i = 0;
    while (i < s.size()) {
        size_t end = i;
        while (end < s.size() && kUnreserved[static_cast<unsigned char>(s[end])]) ++end;
        out.append(s.substr(i, end - i));
        if (end == s.size()) break;
        const auto c = static_cast<unsigned char>(s[end]);
        out += {'%', kHex[c >> 4], kHex[c & 15]};
        i = end + 1;
    }
}

std::optional<std::string> percent_decode(std::string_view s) {
    auto nibble = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '%') {
            out += s[i];
            continue;
        }
        if (i + 2 >= s.size()) return std::nullopt;
        int hi = nibble(s[i + 1]), lo = nibble(s[i + 2]);
        if (hi < 0 || lo < 0) return std::nullopt;
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
    }
    return out;
}

// Shows a parameter's value in an error line: quoted, cut short, control bytes escaped.
std::string shown_value(std::string_view v) {
    std::string out = "\"";
    for (size_t i = 0; i < v.size() && i < 40; ++i)
        out += static_cast<unsigned char>(v[i]) < 0x20 ? '?' : v[i];
    if (v.size() > 40) out += "…";
    return out + "\"";
}

// "i-am-good, masked-apple, …, induction, …": every name preset= takes.
std::string scene_names() {
    std::string names;
    for (const Scene& p : presets()) names += (names.empty() ? "" : ", ") + p.name;
    for (const LiveScene& s : live_scenes()) names += std::string(", ") + s.name;
    return names;
}

// "scene.heads" for a field of the scene; "scene" for JSON that does not parse (where = line:column).
std::string scene_param(const SceneError& e) {
    const std::string& w = e.where();
    return w.empty() || (w[0] >= '0' && w[0] <= '9') ? "scene" : "scene." + w;
}

const Scene& link_scene(const LinkState& link) {
    if (link.scene) return *link.scene;
    return *find_preset(link.preset.empty() ? kDefaultPreset : link.preset);
}

// "head 3 of a scene with 1 head"
std::string head_of_scene(size_t head, int heads) {
    return "head " + std::to_string(head) + " of a scene with " + std::to_string(heads) + (heads == 1 ? " head" : " heads");
}

// The scene in a link: its compact JSON as base64url. Without its description: the panel shows
// descriptions of presets only.
std::string scene_text(const Scene& scene) {
    if (scene.description.empty()) return base64_encode(write_scene(scene, false), true);
    Scene s = scene;
    s.description.clear();
    return base64_encode(write_scene(s, false), true);
}

// A live model's text (text=, source=, compare=, corrupted=).
std::string parse_model_text(std::string& out, std::string_view v) {
    if (v.size() > kMaxLinkText) return "expected at most " + std::to_string(kMaxLinkText) + " bytes of text, got " + std::to_string(v.size());
    out = v;
    return "";
}

// A token as text (" cat") or #ID: which token it is, the model says when it runs (one_token).
std::string parse_token_text(std::string& out, std::string_view v) {
    if (v.size() > 256) return "expected one token (at most 256 bytes), got " + std::to_string(v.size()) + " bytes";
    out = v;
    return "";
}

// A conversation (chat=): the turns as JSON, [{"role": "user", "content": "…"}, …], as `attnviz
// run --chat` reads them (the page's turns hold text), at most kMaxLinkText bytes.
std::string parse_chat(std::vector<ChatTurn>& out, std::string_view v) {
    if (v.size() > kMaxLinkText) return "expected at most " + std::to_string(kMaxLinkText) + " bytes of turns, got " + std::to_string(v.size());
    const nlohmann::json j = nlohmann::json::parse(v, nullptr, false);
    if (!j.is_array() || j.empty()) return "expected a list of turns [{\"role\": \"user\", \"content\": \"…\"}, …], got " + shown_value(v);
    std::vector<ChatTurn> turns;
    for (size_t k = 0; k < j.size(); ++k) {
        const nlohmann::json& t = j[k];
        const std::string at = "[" + std::to_string(k) + "]";
        if (!t.is_object() || !t.contains("role") || !t["role"].is_string() || t["role"].get_ref<const std::string&>().empty())
            return at + ".role: expected a string (system, user, assistant, tool)";
        if (!t.contains("content") || !t["content"].is_string()) return at + ".content: expected a string";
        turns.push_back({t["role"].get<std::string>(), t["content"].get<std::string>()});
    }
    out = std::move(turns);
    return "";
}
std::string chat_text(const std::vector<ChatTurn>& turns) {
    if (turns.empty()) return "";
    nlohmann::ordered_json j = nlohmann::ordered_json::array();  // role, then content, as they are written
    for (const ChatTurn& t : turns) j.push_back({{"role", t.role}, {"content", t.content}});
    return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

// One of a live model's inputs (its second text, the why views' tokens and corrupted text):
// changed, the model runs again.
void set_model_input(AppState& st, std::string& input, const std::string& value) {
    if (input == value) return;
    input = value;
    model_input_changed(st);
}

// A 1 / 0 switch; `expected` says what each means.
std::string parse_flag(bool& flag, std::string_view v, const char* expected) {
    if (v == "1") flag = true;
    else if (v == "0") flag = false;
    else return std::string("expected ") + expected + ", got " + shown_value(v);
    return "";
}
std::string flag_text(bool on) { return on ? "1" : "0"; }

// [SECTION] Parameters -----------------------------------------------------------------------
// The rows of link_parameters() (link_state.hpp), in the order links write them. parse returns
// "" or what was wrong without the name; checks that need the scene wait for `check`, which
// decode_link and set-view run in this order once every parameter is read.

constexpr LinkParam kParams[] = {
    {.name = "v",
     .what = "the link format's version; comes first",
     .values = "`1`",
     .default_value = "",
     .absent = "required",
     .always_written = true,
     .parse = [](LinkState&, std::string_view v) -> std::string {
         if (v == std::to_string(kLinkVersion)) return "";
         return "this attnviz reads version " + std::to_string(kLinkVersion) + " links, got " + shown_value(v);
     },
     .format = [](const LinkState&) -> std::string { return std::to_string(kLinkVersion); }},

    {.name = "preset",
     .what = "a built-in scene shown unchanged, or a live one (its model run on its text, view and head; the rows after it may "
             "change them)",
     .values = "its name in the scene list (`multi-head-rain`, `induction-circuit`)",
     .default_value = kDefaultPreset,
     .always_written = true,  // unless a scene is written instead
     .parse = [](LinkState& l, std::string_view v) -> std::string {
         if (const LiveScene* live = find_live_scene(v)) {
             // A live scene is a model's link written out: the rows after it may change any of it.
             l.live = live->name;
             l.model = live->model;
             l.model_text = live->text;
             l.model_source = live->source;
             l.model_translate = *live->source != '\0';
             l.compare = live->compare;
             l.attribution = l.lens = l.patching = live->why;
             l.view = live->view;
             l.import_map = live->map;
             l.picture = live->picture;
             return "";
         }
         if (!find_preset(v)) return "no preset named " + shown_value(v) + " (the scene list's names: " + scene_names() + ")";
         l.preset = v;
         return "";
     },
     .format = [](const LinkState& l) -> std::string {
         return l.scene || l.names_model() ? "" : l.preset.empty() ? kDefaultPreset : l.preset;
     }},

    {.name = "scene",
     .what = "any other scene: a typed sentence, edited embeddings, a pasted scene",
     .values = "base64url of its compact JSON (SPEC.md §1)",
     .default_value = "",
     .parse = [](LinkState& l, std::string_view v) -> std::string {
         auto json = base64url_decode(v);
         if (!json) return "expected base64url (A–Z a–z 0–9 - _) of the scene's JSON";
         // read_scene's own errors are named by the caller ("scene.<field>").
         Scene s = read_scene(*json);
         s.description.clear();
         l.scene = std::move(s);
         return "";
     },
     .format = [](const LinkState& l) -> std::string { return l.scene && !l.names_model() ? scene_text(*l.scene) : ""; },
     .check = [](const LinkState& l, const Scene&) -> std::string {
         return l.scene && !l.preset.empty() ? "give preset or scene, not both" : "";
     }},

    {.name = "view",
     .what = "the view",
     .values = "`lines`, `heatmap`, `steps`, `model` (an import or a live model), `explain`, `compare` (a live model), `qk` (queries and keys in one plane), `why` (a live model's why grids, large), `image` (a vision model's picture, a token's attention over it)",
     .default_value = "lines",
     .always_written = true,
     .message = LinkMessage::Text,
     .parse = [](LinkState& l, std::string_view v) -> std::string {
         if (v == "lines") l.view = View::Lines;
         else if (v == "heatmap") l.view = View::Heatmap;
         else if (v == "steps") l.view = View::Steps;
         else if (v == "model") l.view = View::Model;
         else if (v == "explain") l.view = View::Explain;
         else if (v == "compare") l.view = View::Compare;
         else if (v == "qk") l.view = View::Qk;
         else if (v == "why") l.view = View::Why;
         else if (v == "image") l.view = View::Image;
         else return "expected lines, heatmap, steps, model, explain, compare, qk, why or image, got " + shown_value(v);
         return "";
     },
     .format = [](const LinkState& l) -> std::string { return view_name(l.view); },
     .from_app = [](LinkState& l, const AppState& st) { l.view = st.view; },
     .to_app = [](AppState& st, const LinkState& l) { st.view = l.view; }},

    {.name = "head",
     .what = "the head of the heatmap, the Steps view and the Q–K space",
     .values = "its number from 1, or `mean` (heatmap)",
     .default_value = "1",
     .message = LinkMessage::Integer,
     .parse = [](LinkState& l, std::string_view v) -> std::string {
         if (v == "mean") l.head = -1;
         else if (auto h = parse_int(v, 1, kMaxHeads)) l.head = *h - 1;
         else return "expected a head number from 1 or \"mean\", got " + shown_value(v);
         return "";
     },
     .format = [](const LinkState& l) -> std::string { return l.head < 0 ? "mean" : std::to_string(l.head + 1); },
     .check = [](const LinkState& l, const Scene& s) -> std::string {
         if (l.head >= s.heads) return head_of_scene(static_cast<size_t>(l.head) + 1, s.heads);
         if (l.head < 0 && (l.view == View::Steps || l.view == View::Qk)) return "the Steps view and the Q–K space show one head, not the mean";
         return "";
     },
     .from_app = [](LinkState& l, const AppState& st) { l.head = st.view == View::Steps || st.view == View::Qk ? st.steps.head : st.heatmap.head; },
     .to_app = [](AppState& st, const LinkState& l) {
         st.heatmap.head = l.head;
         st.steps.head = std::max(l.head, 0);
     }},

    {.name = "tiles",
     .what = "Steps view: FlashAttention's tiles, B_r queries × B_c keys (the online softmax a tile at a time)",
     .values = "`off`, `auto` (2×2 for a scene, from the on-chip memory for a live model) or `BRxBC` (`2x2`, `4x8`)",
     .default_value = "off",
     .message = LinkMessage::Text,
     .parse = [](LinkState& l, std::string_view v) -> std::string {
         l.tiles = v != "off", l.tile = {0, 0};
         if (v == "off" || v == "auto") return "";
         const size_t x = v.find('x');
         auto rows = x == std::string_view::npos ? std::nullopt : parse_int(v.substr(0, x), 1, 4096);
         auto cols = x == std::string_view::npos ? std::nullopt : parse_int(v.substr(x + 1), 1, 4096);
         if (!rows || !cols) return "expected off, auto or two tile sizes from 1 to 4096 as BRxBC (2x2), got " + shown_value(v);
         l.tile = {*rows, *cols};
         return "";
     },
     .format = [](const LinkState& l) -> std::string {
         if (!l.tiles) return "off";
         if (l.tile.rows <= 0) return "auto";
         return std::to_string(l.tile.rows) + "x" + std::to_string(l.tile.cols);
     },
     .from_app = [](LinkState& l, const AppState& st) { l.tiles = st.steps.tiles, l.tile = st.steps.tile; },
     .to_app = [](AppState& st, const LinkState& l) { st.steps.tiles = l.tiles, st.steps.tile = l.tile; }},

    {.name = "tile_step",
     .what = "Steps view, tiles: the step shown (a tile, a query tile's division by ℓ, the final check); links "
             "before 2026-11-29 named it `tile`, still read",
     .values = "its number from 1",
     .default_value = "1",
     .message = LinkMessage::Integer,
     .parse = [](LinkState& l, std::string_view v) -> std::string {
         auto n = parse_int(v, 1, 1 << 24);
         if (!n) return "expected a step number from 1, got " + shown_value(v);
         l.tile_step = *n - 1;
         return "";
     },
     .format = [](const LinkState& l) { return std::to_string(l.tile_step + 1); },
     .from_app = [](LinkState& l, const AppState& st) { l.tile_step = st.figure.empty() ? st.steps.tile_step : st.tiles_step(); },
     .to_app = [](AppState& st, const LinkState& l) { st.steps.tile_step = l.tile_step; }},

    {.name = "qk",
     .what = "Q–K space: the head's queries and keys by PCA or t-SNE (up to 1024 points), or every head of the layer by PCA",
     .values = "`pca`, `tsne`, `heads`",
     .default_value = "pca",
     .message = LinkMessage::Text,
     .parse = [](LinkState& l, std::string_view v) -> std::string {
         if (v == "pca") l.qk = QkProjection::Pca;
         else if (v == "tsne") l.qk = QkProjection::Tsne;
         else if (v == "heads") l.qk = QkProjection::Heads;
         else return "expected pca, tsne or heads, got " + shown_value(v);
         return "";
     },
     .format = [](const LinkState& l) -> std::string {
         return l.qk == QkProjection::Tsne ? "tsne" : l.qk == QkProjection::Heads ? "heads" : "pca";
     },
     .from_app = [](LinkState& l, const AppState& st) { l.qk = st.qk; },
     .to_app = [](AppState& st, const LinkState& l) { st.qk = l.qk; }},

    {.name = "token",
     .what = "the pinned token",
     .values = "`q` or `k` and its number from 1 (`q2`, `k3`), or `none`",
     .default_value = "none",
     .message = LinkMessage::TextOrNull,
     .parse = [](LinkState& l, std::string_view v) -> std::string {
         auto i = v.size() > 1 ? parse_int(v.substr(1), 1, kMaxTokens) : std::nullopt;
         if (v == "none") l.token = {};
         else if (i && (v[0] == 'q' || v[0] == 'k')) l.token = {v[0] == 'q' ? TokenRef::Query : TokenRef::Key, *i - 1};
         else return "expected q or k and a token number from 1 (q1, k3), got " + shown_value(v);
         return "";
     },
     .format = [](const LinkState& l) -> std::string {
         if (!l.token.valid()) return "none";
         return (l.token.side == TokenRef::Query ? "q" : "k") + std::to_string(l.token.index + 1);
     },
     .check = [](const LinkState& l, const Scene& s) -> std::string {
         if (!l.token.valid()) return "";
         const bool q = l.token.side == TokenRef::Query;
         const size_t n = q ? s.tokens.size() : s.key_tokens().size();
         if (static_cast<size_t>(l.token.index) < n) return "";
         return std::string(q ? "query " : "key ") + std::to_string(l.token.index + 1) + " of " + std::to_string(n) +
                (q ? " queries" : " keys");
     },
     .from_app = [](LinkState& l, const AppState& st) { l.token = st.pinned; },
     .to_app = [](AppState& st, const LinkState& l) { st.pinned = l.token; }},

    {.name = "theme",
     .what = "the colours",
     .values = "`dark`, `light`, `auto` (the reader's system setting)",
     .default_value = "dark",
     .message = LinkMessage::Text,
     .parse = [](LinkState& l, std::string_view v) -> std::string {
         l.theme_auto = v == "auto";
         if (v == "dark") l.theme = Theme::Dark;
         else if (v == "light") l.theme = Theme::Light;
         else if (!l.theme_auto) return "expected dark, light or auto, got " + shown_value(v);
         return "";
     },
     .format = [](const LinkState& l) -> std::string { return l.theme_auto ? "auto" : theme_name(l.theme); },
     .from_app = [](LinkState& l, const AppState& st) {
         l.theme = st.theme;
         l.theme_auto = st.theme_auto;
     },
     .to_app = [](AppState& st, const LinkState& l) {
         st.theme = l.theme;
         st.theme_auto = l.theme_auto;
     }},

    {.name = "size",
     .what = "the UI text size",
     .values = "0.75 … 2",
     .default_value = "1",
     .message = LinkMessage::Number,
     .parse = [](LinkState& l, std::string_view v) -> std::string {
         auto t = parse_float(v);
         if (!t || *t < kMinTextScale || *t > kMaxTextScale) return "expected a text size from 0.75 to 2, got " + shown_value(v);
         l.text_scale = *t;
         return "";
     },
     .format = [](const LinkState& l) -> std::string { return format_float(l.text_scale); },
     .from_app = [](LinkState& l, const AppState& st) { l.text_scale = st.text_scale; },
     .to_app = [](AppState& st, const LinkState& l) { st.text_scale = l.text_scale; }},

    {.name = "lang",
     .what = "the language of the UI's words",
     .values = "`en`, `zh`",
     .default_value = "en",
     .message = LinkMessage::Text,
     .parse = [](LinkState& l, std::string_view v) -> std::string {
         if (v == "en") l.lang = Lang::En;
         else if (v == "zh") l.lang = Lang::Zh;
         else return "expected en or zh, got " + shown_value(v);
         return "";
     },
     .format = [](const LinkState& l) -> std::string { return lang_name(l.lang); },
     .from_app = [](LinkState& l, const AppState& st) { l.lang = st.lang; },
     .to_app = [](AppState& st, const LinkState& l) { st.lang = l.lang; }},

    {.name = "panels",
     .what = "the controls",
     .values = "`1` the whole app, `0` the figure under a small strip (view, head, \"Open in attnviz ↗\")",
     .default_value = "1",
     .message = LinkMessage::Boolean,
     .parse = [](LinkState& l, std::string_view v) { return parse_flag(l.panels, v, "1 (controls shown) or 0 (figure only)"); },
     .format = [](const LinkState& l) { return flag_text(l.panels); },
     .from_app = [](LinkState& l, const AppState& st) { l.panels = st.show_panels; },
     .to_app = [](AppState& st, const LinkState& l) { st.show_panels = l.panels; }},

    {.name = "fps",
     .what = "the frame-time overlay",
     .values = "`1` shown, `0` hidden",
     .default_value = "0",
     .parse = [](LinkState& l, std::string_view v) { return parse_flag(l.fps, v, "1 (frame time shown) or 0"); },
     .format = [](const LinkState& l) { return flag_text(l.fps); },
     .from_app = [](LinkState& l, const AppState& st) { l.fps = st.show_frame_time; },
     .to_app = [](AppState& st, const LinkState& l) { st.show_frame_time = l.fps; }},

    {.name = "lineheads",
     .what = "Lines view: the heads shown",
     .values = "head numbers from 1 (`1,3`)",
     .default_value = "",
     .absent = "all",
     .parse = [](LinkState& l, std::string_view v) -> std::string {
         l.head_visible.clear();
         size_t start = 0;
         while (start <= v.size()) {
             size_t comma = std::min(v.find(',', start), v.size());
             auto h = parse_int(v.substr(start, comma - start), 1, kMaxHeads);
             if (!h) return "expected head numbers from 1 separated by commas (1,3), got " + shown_value(v);
             if (l.head_visible.size() < static_cast<size_t>(*h)) l.head_visible.resize(static_cast<size_t>(*h), false);
             l.head_visible[static_cast<size_t>(*h - 1)] = true;
             start = comma + 1;
         }
         return "";
     },
     .format = [](const LinkState& l) -> std::string {
         // Every head shown is the default; none shown has no 1-based list: both write nothing.
         std::string heads;
         if (std::find(l.head_visible.begin(), l.head_visible.end(), false) == l.head_visible.end()) return heads;
         for (size_t h = 0; h < l.head_visible.size(); ++h)
             if (l.head_visible[h]) heads += (heads.empty() ? "" : ",") + std::to_string(h + 1);
         return heads;
     },
     .check = [](const LinkState& l, const Scene& s) -> std::string {
         return l.head_visible.size() > static_cast<size_t>(s.heads) ? head_of_scene(l.head_visible.size(), s.heads) : "";
     },
     .from_app = [](LinkState& l, const AppState& st) { l.head_visible = st.lines.head_visible; },
     .to_app = [](AppState& st, const LinkState& l) {
         const size_t heads = static_cast<size_t>(std::max(st.figure.trace().heads, 1));
         st.lines.head_visible.assign(heads, l.head_visible.empty());
         for (size_t h = 0; h < l.head_visible.size() && h < heads; ++h) st.lines.head_visible[h] = l.head_visible[h];
     }},

    {.name = "threshold",
     .what = "Lines view: the weight below which lines hide",
     .values = "0 … 1",
     .default_value = "0",
     .parse = [](LinkState& l, std::string_view v) -> std::string {
         auto t = parse_float(v);
         if (!t || *t < 0.0f || *t > 1.0f) return "expected a weight from 0 to 1, got " + shown_value(v);
         l.threshold = *t;
         return "";
     },
     .format = [](const LinkState& l) -> std::string { return l.threshold > 0.0f ? format_float(l.threshold) : "0"; },
     .from_app = [](LinkState& l, const AppState& st) { l.threshold = st.lines.threshold; },
     .to_app = [](AppState& st, const LinkState& l) { st.lines.threshold = l.threshold; }},

    {.name = "map",
     .what = "a model's map: of the file in the page's `?import=` or the model in its `?model=` (below), "
             "shown once it has loaded",
     .values = "`STACK:LAYER:HEAD` from 1 (`decoder_attention:2:5`)",
     .default_value = "",
     .parse = [](LinkState& l, std::string_view v) -> std::string {
         if (!parse_import_map(v)) return "expected STACK:LAYER:HEAD (decoder_attention:2:5), got " + shown_value(v);
         l.import_map = v;
         return "";
     },
     .format = [](const LinkState& l) { return l.import_map; },
     .from_app = [](LinkState& l, const AppState& st) {
         if (!st.figure.has(Detail::Layers)) return;
         const ImportView& im = st.imported;
         l.import_map = st.figure.stack(im.import_stack).name + ":" + std::to_string(im.import_layer + 1) + ":" +
                        std::to_string(im.import_head + 1);
     },
     // Applied by apply_view once every row is in: the map waits for its file. So does a live
     // model's view when no map is given (the model's first figure opens it on layer 1, head 1).
     .to_app = [](AppState& st, const LinkState& l) {
         st.link_map = l.import_map;
         st.link_map_view = l.view;
         st.link_view_waits = !l.model.empty() || !l.hub.empty() || !l.server.empty() || !l.model_text.empty() || !l.chat.empty() ||
                             !l.model_source.empty();
     }},

    {.name = "model",
     .what = "a built-in model run live on `text` (`attnviz run --list`; docs/MODELS.md), loaded on demand; "
             "any other model is the page's `?model=` (below)",
     .values = "`tiny-lm`, `tiny-circuits`, `tiny-translator`, `tiny-vit`",
     .default_value = "",
     .parse = [](LinkState& l, std::string_view v) -> std::string {
         if (!find_builtin(v)) {
             std::string names;
             for (const BuiltinModel& m : builtin_models()) names += (names.empty() ? "" : ", ") + std::string(m.name);
             return "expected a built-in model (" + names + "), got " + shown_value(v);
         }
         l.model = v;
         return "";
     },
     .format = [](const LinkState& l) { return l.model; },
     .from_app = [](LinkState& l, const AppState& st) { l.model = st.model.builtin; },
     .to_app = [](AppState& st, const LinkState& l) {
         if (!l.model.empty()) open_builtin_model(st, l.model);
     }},

    {.name = "picture",
     .what = "the picture a vision model runs on: one of its example pictures (tiny-vit's, `attnviz run --list`), shown in "
             "the Picture view",
     .values = "`example-0.png` … `example-9.png`",
     .default_value = "",
     .parse = [](LinkState& l, std::string_view v) -> std::string {
         const bool named = v.starts_with("example-") && v.ends_with(".png") && v.size() <= 64 &&
                            std::all_of(v.begin(), v.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.'; });
         if (!named) return "expected an example picture's name (example-7.png), got " + shown_value(v);
         l.picture = v;
         return "";
     },
     .format = [](const LinkState& l) { return l.picture; },
     .from_app = [](LinkState& l, const AppState& st) {
         const ModelPicture* p = st.model.picture.get();
         l.picture = p && st.model.examples.contains(p->name) ? p->name : "";
     },
     .to_app = [](AppState& st, const LinkState& l) {
         if (!l.picture.empty()) want_example_picture(st, l.picture);
     }},

    {.name = "hf",
     .what = "a model on the Hugging Face Hub by its id (SPEC.md §6), fetched with progress, kept in the browser's "
             "storage and run live on `text`; a GGUF repo's file by its quantization (`:Q4_K_M`, as llama.cpp's `-hf` "
             "names it); the page's `?hf=` (below) does the same",
     .values = "`ORG/NAME`, `ORG/NAME@REVISION`, each optionally with `:QUANT` (`bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M`)",
     .default_value = "",
     .parse = [](LinkState& l, std::string_view v) -> std::string {
         if (!hub::parse_repo_id(v)) return "expected a Hub id ORG/NAME[@REVISION][:QUANT], got " + shown_value(v);
         l.hub = v;
         return "";
     },
     .format = [](const LinkState& l) { return l.hub; },
     .from_app = [](LinkState& l, const AppState& st) { l.hub = st.model.hub; },
     .to_app = [](AppState& st, const LinkState& l) {
         if (!l.hub.empty()) open_hub_model(st, l.hub);
     }},

    {.name = "server",
     .what = "a model PyTorch runs where it is, served by `attnviz.serve()` (docs/NOTEBOOK.md): its maps asked from "
             "the server as `text` is edited; `key` is its token",
     .values = "`.` (the page's own address) or `http://127.0.0.1:PORT`",
     .default_value = "",
     .parse = [](LinkState& l, std::string_view v) -> std::string {
         if (v != "." && !v.starts_with("http://") && !v.starts_with("https://"))
             return "expected . or an http:// address, got " + shown_value(v);
         l.server = v;
         return "";
     },
     .format = [](const LinkState& l) { return l.server; },
     .from_app = [](LinkState& l, const AppState& st) { l.server = st.served.server; },
     .to_app = [](AppState& st, const LinkState& l) {
         if (!l.server.empty()) connect_served(st, l.server, l.server_key);
     }},

    {.name = "key",
     .what = "the token of `server` (what `attnviz.serve()` printed): whoever has the link can ask that server",
     .values = "the token: letters, digits, `-` and `_`",
     .default_value = "",
     .parse = [](LinkState& l, std::string_view v) -> std::string {
         const bool plain = v.size() <= 256 && std::all_of(v.begin(), v.end(), [](char c) {
             return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
         });
         if (!plain) return "expected letters, digits, - and _ (at most 256), got " + shown_value(v);
         l.server_key = v;
         return "";
     },
     .format = [](const LinkState& l) { return l.server_key; },
     .from_app = [](LinkState& l, const AppState& st) { l.server_key = st.served.key; }},

    {.name = "text",
     .what = "a live model's text (marian: the target, read when translate=0); the model is `model` "
             "(above) or the page's `?model=` (below), and it runs on this text once it has loaded",
     .values = "the text, percent-encoded",
     .default_value = "",
     .parse = [](LinkState& l, std::string_view v) { return parse_model_text(l.model_text, v); },
     .format = [](const LinkState& l) { return l.model_text; },
     .from_app = [](LinkState& l, const AppState& st) {
         if (st.model.active()) l.model_text = st.model.model->config().vision() ? "" : st.model.text;  // a picture: no text
         else if (st.served.active()) l.model_text = st.served.text;
     },
     .to_app = [](AppState& st, const LinkState& l) {
         if (!l.server.empty()) {  // a served model's: it runs there
             if (!l.model_text.empty()) st.served.text = l.model_text;
             served_input_changed(st);
             return;
         }
         if (l.model_text.empty() || st.model.text == l.model_text) return;
         st.model.text = l.model_text;
         clear_generation(st);
         model_input_changed(st);
     }},

    {.name = "chat",
     .what = "a live decoder model's conversation, run as its chat template writes it (the live panel's *Chat* "
             "switch on; `text` stays the text box's, for when it is off); a model without a template says so",
     .values = "the turns as JSON, percent-encoded: `[{\"role\":\"user\",\"content\":\"Hi\"}]` (roles system, user, "
               "assistant, tool; as `attnviz run --chat` reads them)",
     .default_value = "",
     .absent = "none: the text box",
     .parse = [](LinkState& l, std::string_view v) { return parse_chat(l.chat, v); },
     .format = [](const LinkState& l) { return chat_text(l.chat); },
     .from_app = [](LinkState& l, const AppState& st) {
         if (st.model.active() && st.model.chat.on && st.model.model->chat) l.chat = st.model.chat.turns;
     },
     .to_app = [](AppState& st, const LinkState& l) {
         ModelChat& chat = st.model.chat;
         const bool on = !l.chat.empty();
         // (a link made while no model has loaded, as the text's, says nothing of the switch)
         if (!on && !st.model.active()) return;
         if (chat.on == on && (!on || chat_text(chat.turns) == chat_text(l.chat))) return;
         chat.on = on;
         if (on) chat.turns = l.chat;
         model_input_changed(st);
     }},

    {.name = "source",
     .what = "a live encoder-decoder model's source text (marian)",
     .values = "the text, percent-encoded",
     .default_value = "",
     .parse = [](LinkState& l, std::string_view v) { return parse_model_text(l.model_source, v); },
     .format = [](const LinkState& l) { return l.model_source; },
     .from_app = [](LinkState& l, const AppState& st) {
         if (st.model.active() && st.model.model->config().encoder_decoder()) l.model_source = st.model.source;
     },
     .to_app = [](AppState& st, const LinkState& l) {
         if (l.model_source.empty() || st.model.source == l.model_source) return;
         st.model.source = l.model_source;
         model_input_changed(st);
     }},

    {.name = "compare",
     .what = "a live model's second text (gpt2, bert), run beside `text` for the Compare view",
     .values = "the text, percent-encoded",
     .default_value = "",
     .absent = "none",
     .message = LinkMessage::Text,
     .parse = [](LinkState& l, std::string_view v) { return parse_model_text(l.compare, v); },
     .format = [](const LinkState& l) { return l.compare; },
     .from_app = [](LinkState& l, const AppState& st) { l.compare = st.model.compare; },
     .to_app = [](AppState& st, const LinkState& l) { set_model_input(st, st.model.compare, l.compare); }},

    {.name = "translate",
     .what = "a live encoder-decoder model writes its target (1) or reads `text` (0)",
     .values = "`1`, `0`",
     .default_value = "1",
     .parse = [](LinkState& l, std::string_view v) { return parse_flag(l.model_translate, v, "1 (translate) or 0 (read text)"); },
     .format = [](const LinkState& l) { return flag_text(l.model_translate); },
     .from_app = [](LinkState& l, const AppState& st) {  // only an encoder-decoder's is written
         l.model_translate = st.model.translate || (st.model.active() && !st.model.model->config().encoder_decoder());
     },
     .to_app = [](AppState& st, const LinkState& l) {
         if (st.model.translate == l.model_translate) return;
         st.model.translate = l.model_translate;
         model_input_changed(st);
     }},

    {.name = "knockout",
     .what = "a live or served model's heads knocked out (their output replaced, `knockout_mode`; a served model's: zeroed); the model view marks them",
     .values = "`LAYER:HEAD` from 1, comma-separated (`2:3,1:1`), each optionally after its stack (`cross_attention:2:1`)",
     .default_value = "",
     .absent = "none",
     .message = LinkMessage::Text,
     .parse = [](LinkState& l, std::string_view v) -> std::string {
         if (!parse_head_items(v)) return "expected LAYER:HEAD counted from 1, comma-separated (2:3,1:1), or STACK:LAYER:HEAD, got " + shown_value(v);
         l.knockout = v;
         return "";
     },
     .format = [](const LinkState& l) { return l.knockout; },
     .from_app = [](LinkState& l, const AppState& st) { l.knockout = st.served.active() ? st.served.knockout : st.model.experiment.knockout; },
     .to_app = [](AppState& st, const LinkState& l) {
         if (!l.server.empty()) {  // a served model's: the server knocks them out
             st.served.knockout = l.knockout;
             served_input_changed(st);
             return;
         }
         if (st.model.experiment.knockout == l.knockout) return;
         st.model.experiment.knockout = l.knockout;
         model_input_changed(st);
     }},

    {.name = "knockout_mode",
     .what = "what replaces a knocked-out head's output: zeros, or its mean over the sequence",
     .values = "`zero`, `mean`",
     .default_value = "zero",
     .message = LinkMessage::Text,
     .parse = [](LinkState& l, std::string_view v) -> std::string {
         if (v != "zero" && v != "mean") return "expected zero or mean, got " + shown_value(v);
         l.mean_ablation = v == "mean";
         return "";
     },
     .format = [](const LinkState& l) { return std::string(l.mean_ablation ? "mean" : "zero"); },
     .from_app = [](LinkState& l, const AppState& st) { l.mean_ablation = st.model.experiment.ablation == Ablation::Mean; },
     .to_app = [](AppState& st, const LinkState& l) {
         const Ablation a = l.mean_ablation ? Ablation::Mean : Ablation::Zero;
         if (st.model.experiment.ablation == a) return;
         st.model.experiment.ablation = a;
         model_input_changed(st);
     }},

    {.name = "hide",
     .what = "a live model's hidden tokens: no query attends to them (marian: the source's)",
     .values = "token numbers from 1, comma-separated (`3,5`)",
     .default_value = "",
     .absent = "none",
     .message = LinkMessage::Text,
     .parse = [](LinkState& l, std::string_view v) -> std::string {
         std::vector<int> hidden;
         for (std::size_t i = 0; !v.empty() && i <= v.size();) {
             const std::size_t comma = std::min(v.find(',', i), v.size());
             const auto n = parse_int(v.substr(i, comma - i), 1, kMaxTokens);
             if (!n) return "expected token numbers from 1, comma-separated (3,5), got " + shown_value(v);
             if (std::find(hidden.begin(), hidden.end(), *n - 1) == hidden.end()) hidden.push_back(*n - 1);
             i = comma + 1;
         }
         std::sort(hidden.begin(), hidden.end());
         l.hidden = std::move(hidden);
         return "";
     },
     .format = [](const LinkState& l) {
         std::string s;
         for (int j : l.hidden) s.append(s.empty() ? "" : ",").append(std::to_string(j + 1));
         return s;
     },
     .from_app = [](LinkState& l, const AppState& st) { l.hidden = st.model.experiment.hidden; },
     .to_app = [](AppState& st, const LinkState& l) {
         if (st.model.experiment.hidden == l.hidden) return;
         st.model.experiment.hidden = l.hidden;
         model_input_changed(st);
     }},

    {.name = "importance",
     .what = "a live model: measure every head's importance for the next token (a layers × heads map in the panel)",
     .values = "`1`, `0`",
     .default_value = "0",
     .message = LinkMessage::Boolean,
     .parse = [](LinkState& l, std::string_view v) { return parse_flag(l.importance, v, "1 (measure) or 0"); },
     .format = [](const LinkState& l) { return flag_text(l.importance); },
     .from_app = [](LinkState& l, const AppState& st) { l.importance = st.model.experiment.importance; },
     .to_app = [](AppState& st, const LinkState& l) {
         if (st.model.experiment.importance == l.importance) return;
         st.model.experiment.importance = l.importance;
         model_input_changed(st);
     }},

    {.name = "attribution",
     .what = "a live decoder-only model: each head's direct logit attribution to the next token (a layers × heads map in the panel)",
     .values = "`1`, `0`",
     .default_value = "0",
     .message = LinkMessage::Boolean,
     .parse = [](LinkState& l, std::string_view v) { return parse_flag(l.attribution, v, "1 (attribute) or 0"); },
     .format = [](const LinkState& l) { return flag_text(l.attribution); },
     .from_app = [](LinkState& l, const AppState& st) { l.attribution = st.model.experiment.attribution; },
     .to_app = [](AppState& st, const LinkState& l) {
         if (st.model.experiment.attribution == l.attribution) return;
         st.model.experiment.attribution = l.attribution;
         model_input_changed(st);
     }},

    {.name = "lens",
     .what = "a live decoder-only model: the logit lens, each layer's top token at each position (a layers × tokens grid in the panel)",
     .values = "`1`, `0`",
     .default_value = "0",
     .message = LinkMessage::Boolean,
     .parse = [](LinkState& l, std::string_view v) { return parse_flag(l.lens, v, "1 (read the lens) or 0"); },
     .format = [](const LinkState& l) { return flag_text(l.lens); },
     .from_app = [](LinkState& l, const AppState& st) { l.lens = st.model.experiment.lens; },
     .to_app = [](AppState& st, const LinkState& l) {
         if (st.model.experiment.lens == l.lens) return;
         st.model.experiment.lens = l.lens;
         model_input_changed(st);
     }},

    {.name = "probs",
     .what = "a live decoder-only model: its text's tokens coloured by the probability it gave each (or its surprisal), the top 10 on hover",
     .values = "`p`, `surprisal`, `0`",
     .default_value = "0",
     .message = LinkMessage::Text,
     .parse = [](LinkState& l, std::string_view v) -> std::string {
         if (v != "p" && v != "surprisal" && v != "0") return "expected p, surprisal or 0, got " + shown_value(v);
         l.probs = v == "p" ? TokenShade::Probability : v == "surprisal" ? TokenShade::Surprisal : TokenShade::Off;
         return "";
     },
     .format = [](const LinkState& l) {
         return std::string(l.probs == TokenShade::Probability ? "p" : l.probs == TokenShade::Surprisal ? "surprisal" : "0");
     },
     .from_app = [](LinkState& l, const AppState& st) { l.probs = st.model.experiment.probs; },
     .to_app = [](AppState& st, const LinkState& l) {
         if (st.model.experiment.probs == l.probs) return;
         st.model.experiment.probs = l.probs;
         model_input_changed(st);
     }},

    {.name = "target",
     .what = "the token `attribution` and `patching` explain: one token as the text writes it, or #ID",
     .values = "a token, percent-encoded (`%20cat`), or `%23ID`",
     .default_value = "",
     .absent = "the model's prediction",
     .message = LinkMessage::Text,
     .parse = [](LinkState& l, std::string_view v) { return parse_token_text(l.target, v); },
     .format = [](const LinkState& l) { return l.target; },
     .from_app = [](LinkState& l, const AppState& st) { l.target = st.model.experiment.target; },
     .to_app = [](AppState& st, const LinkState& l) { set_model_input(st, st.model.experiment.target, l.target); }},

    {.name = "contrast",
     .what = "a second token: `attribution` and `patching` explain the logit difference target − contrast",
     .values = "a token, percent-encoded, or `%23ID`",
     .default_value = "",
     .absent = "none (attribution); the corrupted text's prediction (patching)",
     .message = LinkMessage::Text,
     .parse = [](LinkState& l, std::string_view v) { return parse_token_text(l.contrast, v); },
     .format = [](const LinkState& l) { return l.contrast; },
     .from_app = [](LinkState& l, const AppState& st) { l.contrast = st.model.experiment.contrast; },
     .to_app = [](AppState& st, const LinkState& l) { set_model_input(st, st.model.experiment.contrast, l.contrast); }},

    {.name = "corrupted",
     .what = "patching's corrupted text (as many tokens as `text`), run with each piece of `text`'s run put in",
     .values = "the text, percent-encoded",
     .default_value = "",
     .absent = "the `compare` text",
     .message = LinkMessage::Text,
     .parse = [](LinkState& l, std::string_view v) { return parse_model_text(l.corrupted, v); },
     .format = [](const LinkState& l) { return l.corrupted; },
     .from_app = [](LinkState& l, const AppState& st) { l.corrupted = st.model.experiment.corrupted; },
     .to_app = [](AppState& st, const LinkState& l) { set_model_input(st, st.model.experiment.corrupted, l.corrupted); }},

    {.name = "patching",
     .what = "a live decoder-only model: activation patching from `text` into the `corrupted` text (else the `compare` text), grids in the panel",
     .values = "`1`, `0`",
     .default_value = "0",
     .message = LinkMessage::Boolean,
     .parse = [](LinkState& l, std::string_view v) { return parse_flag(l.patching, v, "1 (patch) or 0"); },
     .format = [](const LinkState& l) { return flag_text(l.patching); },
     .from_app = [](LinkState& l, const AppState& st) { l.patching = st.model.experiment.patching; },
     .to_app = [](AppState& st, const LinkState& l) {
         if (st.model.experiment.patching == l.patching) return;
         st.model.experiment.patching = l.patching;
         model_input_changed(st);
     }},

    {.name = "generate",
     .what = "a live GPT-2 model continues `text` by this many tokens (`temperature`, `top_k`, `seed`), on load",
     .values = "1 … 64, or `0`",
     .default_value = "0",
     .message = LinkMessage::Integer,
     .parse = [](LinkState& l, std::string_view v) -> std::string {
         auto n = parse_int(v, 0, 64);
         if (!n) return "expected a number of tokens from 0 to 64, got " + shown_value(v);
         l.generate = *n;
         return "";
     },
     .format = [](const LinkState& l) { return std::to_string(l.generate); },
     .from_app = [](LinkState& l, const AppState& st) {
         const ModelGeneration& g = st.model.generation;
         l.generate = g.generated() > 0 || g.requested ? g.tokens : 0;
     },
     .to_app = [](AppState& st, const LinkState& l) {
         ModelGeneration& g = st.model.generation;
         if (l.generate == 0 || (g.tokens == l.generate && (g.generated() > 0 || g.requested))) return;
         g.tokens = l.generate;
         request_generation(st);
     }},

    {.name = "temperature",
     .what = "generation: 0 takes the likeliest token; above 0 samples from softmax(logits / temperature)",
     .values = "0 … 100",
     .default_value = "0",
     .message = LinkMessage::Number,
     .parse = [](LinkState& l, std::string_view v) -> std::string {
         auto t = parse_float(v);
         if (!t || *t < 0.0f || *t > 100.0f) return "expected a temperature from 0 (greedy) to 100, got " + shown_value(v);
         l.sampling.temperature = *t;
         return "";
     },
     .format = [](const LinkState& l) -> std::string { return l.sampling.temperature > 0.0f ? format_float(l.sampling.temperature) : "0"; },
     .from_app = [](LinkState& l, const AppState& st) { l.sampling.temperature = st.model.generation.sampling.temperature; },
     .to_app = [](AppState& st, const LinkState& l) { st.model.generation.sampling.temperature = l.sampling.temperature; }},

    {.name = "top_k",
     .what = "generation: sample among the k likeliest tokens only",
     .values = "a number, `0` all",
     .default_value = "0",
     .message = LinkMessage::Integer,
     .parse = [](LinkState& l, std::string_view v) -> std::string {
         auto k = parse_int(v, 0, 100000);
         if (!k) return "expected a whole number from 0 (all tokens), got " + shown_value(v);
         l.sampling.top_k = *k;
         return "";
     },
     .format = [](const LinkState& l) { return std::to_string(l.sampling.top_k); },
     .from_app = [](LinkState& l, const AppState& st) { l.sampling.top_k = st.model.generation.sampling.top_k; },
     .to_app = [](AppState& st, const LinkState& l) { st.model.generation.sampling.top_k = l.sampling.top_k; }},

    {.name = "seed",
     .what = "generation: the sampling's seed (the same seed gives the same tokens, here and in `attnviz run --seed`)",
     .values = "a whole number from 0",
     .default_value = "0",
     .message = LinkMessage::Integer,
     .parse = [](LinkState& l, std::string_view v) -> std::string {
         auto n = parse_int(v, 0, std::numeric_limits<int>::max());
         if (!n) return "expected a whole number from 0, got " + shown_value(v);
         l.sampling.seed = static_cast<std::uint64_t>(*n);
         return "";
     },
     .format = [](const LinkState& l) { return std::to_string(l.sampling.seed); },
     .from_app = [](LinkState& l, const AppState& st) { l.sampling.seed = st.model.generation.sampling.seed; },
     .to_app = [](AppState& st, const LinkState& l) { st.model.generation.sampling.seed = l.sampling.seed; }},

    {.name = "step",
     .what = "generation: the step shown (the prompt and that many generated tokens)",
     .values = "a number from 0",
     .default_value = "",
     .absent = "the last",
     .message = LinkMessage::Integer,
     .parse = [](LinkState& l, std::string_view v) -> std::string {
         auto n = parse_int(v, 0, 64);
         if (!n) return "expected a step from 0 to 64, got " + shown_value(v);
         l.step = *n;
         return "";
     },
     .format = [](const LinkState& l) { return l.step < 0 ? std::string() : std::to_string(l.step); },
     .from_app = [](LinkState& l, const AppState& st) {
         const ModelGeneration& g = st.model.generation;
         l.step = g.link_step ? *g.link_step : g.generated() > 0 && g.step < g.generated() ? g.step : -1;
     },
     .to_app = [](AppState& st, const LinkState& l) {
         ModelGeneration& g = st.model.generation;
         if (l.step < 0) return;
         if (g.generated() > 0 && !g.requested) show_generation_step(st, l.step);
         else g.link_step = l.step;
     }},

    {.name = "topk",
     .what = "Lines view: lines per query",
     .values = "`0` auto (all up to 64 keys, else 3), or a number",
     .default_value = "0",
     .parse = [](LinkState& l, std::string_view v) -> std::string {
         auto k = parse_int(v, 0, kMaxTokens);
         if (!k) return "expected a whole number from 0 (auto: all lines up to 64 keys, 3 per query past it), got " + shown_value(v);
         l.top_k = *k;
         return "";
     },
     .format = [](const LinkState& l) { return std::to_string(std::max(l.top_k, 0)); },
     .from_app = [](LinkState& l, const AppState& st) { l.top_k = st.lines.top_k; },
     .to_app = [](AppState& st, const LinkState& l) { st.lines.top_k = l.top_k; }},

    {.name = "cmap",
     .what = "heatmap: the colormap",
     .values = "`viridis`, `magma`, `inferno`, `plasma`, `blues`, `greys`",
     .default_value = "viridis",
     .parse = [](LinkState& l, std::string_view v) -> std::string {
         auto maps = colormaps();
         auto it = std::find_if(maps.begin(), maps.end(), [&](const Colormap& m) { return m.name == v; });
         if (it == maps.end()) {
             std::string names;
             for (const Colormap& m : maps) names += (names.empty() ? "" : ", ") + std::string(m.name);
             return "expected one of " + names + ", got " + shown_value(v);
         }
         l.colormap = static_cast<int>(it - maps.begin());
         return "";
     },
     .format = [](const LinkState& l) -> std::string {
         if (l.colormap < 0 || l.colormap >= static_cast<int>(colormaps().size())) return "";
         return std::string(colormaps()[static_cast<size_t>(l.colormap)].name);
     },
     .from_app = [](LinkState& l, const AppState& st) { l.colormap = st.heatmap.colormap; },
     .to_app = [](AppState& st, const LinkState& l) { st.heatmap.colormap = l.colormap; }},

    {.name = "values",
     .what = "heatmap: what the cells show",
     .values = "`weights` (after the softmax), `scores` (before it)",
     .default_value = "weights",
     .parse = [](LinkState& l, std::string_view v) -> std::string {
         if (v == "weights") l.values = HeatValues::Weights;
         else if (v == "scores") l.values = HeatValues::Scores;
         else return "expected weights or scores, got " + shown_value(v);
         return "";
     },
     .format = [](const LinkState& l) -> std::string { return l.values == HeatValues::Scores ? "scores" : "weights"; },
     .from_app = [](LinkState& l, const AppState& st) { l.values = st.heatmap.values; },
     .to_app = [](AppState& st, const LinkState& l) { st.heatmap.values = l.values; }},

    {.name = "numbers",
     .what = "heatmap: the value in each cell",
     .values = "`1` shown, `0` hidden",
     .default_value = "1",
     .parse = [](LinkState& l, std::string_view v) { return parse_flag(l.numbers, v, "1 or 0"); },
     .format = [](const LinkState& l) { return flag_text(l.numbers); },
     .from_app = [](LinkState& l, const AppState& st) { l.numbers = st.heatmap.show_numbers; },
     .to_app = [](AppState& st, const LinkState& l) { st.heatmap.show_numbers = l.numbers; }},

    {.name = "log",
     .what = "heatmap: weights on a log scale (10⁻⁴ … 1)",
     .values = "`1` on, `0` off",
     .default_value = "0",
     .parse = [](LinkState& l, std::string_view v) { return parse_flag(l.log, v, "1 or 0"); },
     .format = [](const LinkState& l) { return flag_text(l.log); },
     .from_app = [](LinkState& l, const AppState& st) { l.log = st.heatmap.log_scale; },
     .to_app = [](AppState& st, const LinkState& l) { st.heatmap.log_scale = l.log; }},

    {.name = "sink",
     .what = "heatmap and lines: the first token's weight (the attention sink) hidden and each row renormalized over the "
             "other keys; tooltips keep the true weights",
     .values = "`hidden`, `shown`",
     .default_value = "shown",
     .parse = [](LinkState& l, std::string_view v) -> std::string {
         if (v == "hidden") l.sink_hidden = true;
         else if (v == "shown") l.sink_hidden = false;
         else return "expected hidden or shown, got " + shown_value(v);
         return "";
     },
     .format = [](const LinkState& l) -> std::string { return l.sink_hidden ? "hidden" : "shown"; },
     .from_app = [](LinkState& l, const AppState& st) { l.sink_hidden = st.sink_hidden; },
     .to_app = [](AppState& st, const LinkState& l) { st.sink_hidden = l.sink_hidden; }},

    {.name = "rows",
     .what = "the model grid's thumbnails: the weights, or each row scaled to its largest weight (a thin stripe shows)",
     .values = "`weight`, `max`",
     .default_value = "weight",
     .parse = [](LinkState& l, std::string_view v) -> std::string {
         if (v == "max") l.rows_scaled = true;
         else if (v == "weight") l.rows_scaled = false;
         else return "expected weight or max, got " + shown_value(v);
         return "";
     },
     .format = [](const LinkState& l) -> std::string { return l.rows_scaled ? "max" : "weight"; },
     .from_app = [](LinkState& l, const AppState& st) { l.rows_scaled = st.imported.rows_scaled; },
     .to_app = [](AppState& st, const LinkState& l) { st.imported.rows_scaled = l.rows_scaled; }},
};

constexpr const LinkParam& kVersionParam = kParams[0];
constexpr const LinkParam& kSceneParam = kParams[2];
static_assert(std::string_view(kVersionParam.name) == "v" && std::string_view(kSceneParam.name) == "scene");

// Each row's check against the link's scene, in order. Returns {param, problem} or {"", ""}.
std::pair<std::string, std::string> check_link(const LinkState& l) {
    const Scene& s = link_scene(l);
    for (const LinkParam& p : kParams) {
        if (!p.check) continue;
        if (std::string problem = p.check(l, s); !problem.empty()) return {p.name, problem};
    }
    return {"", ""};
}

}  // namespace

std::span<const LinkParam> link_parameters() { return kParams; }

const LinkParam* find_link_parameter(std::string_view name) {
    for (const LinkParam& p : kParams)
        if (name == p.name) return &p;
    return nullptr;
}

std::string link_parameters_markdown() {
    std::string out = "| parameter | sets | values | default |\n|---|---|---|---|\n";
    for (const LinkParam& p : kParams) {
        const std::string shown_default = *p.default_value ? "`" + std::string(p.default_value) + "`" : p.absent;
        out += "| `" + std::string(p.name) + "` | " + p.what + " | " + p.values + " | " + shown_default + " |\n";
    }
    return out;
}

// [SECTION] Hash -----------------------------------------------------------------------------

std::optional<std::string> base64url_decode(std::string_view text) {
    while (!text.empty() && text.back() == '=') text.remove_suffix(1);
    if (text.size() % 4 == 1) return std::nullopt;
    auto value = [](char c) -> int {
        if (c >= 'A' && c <= 'Z') return c - 'A';
        if (c >= 'a' && c <= 'z') return c - 'a' + 26;
        if (c >= '0' && c <= '9') return c - '0' + 52;
        if (c == '-' || c == '+') return 62;  // '+' and '/': standard base64 pasted by hand
        if (c == '_' || c == '/') return 63;
        return -1;
    };
    std::string out;
    out.reserve(text.size() * 3 / 4);
    unsigned acc = 0;
    int bits = 0;
    for (char c : text) {
        int v = value(c);
        if (v < 0) return std::nullopt;
        acc = (acc << 6) | static_cast<unsigned>(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out += static_cast<char>((acc >> bits) & 0xff);
        }
    }
    return out;
}

const std::string& LinkSceneCache::text(const Scene& scene) {
    Scene s = scene;
    s.description.clear();
    if (!scene_ || !(s == *scene_)) {
        text_ = scene_text(s);
        scene_ = std::move(s);
    }
    return text_;
}

std::string encode_link(const LinkState& l, LinkSceneCache* cache) {
    std::string out;
    for (const LinkParam& p : kParams) {
        std::string formatted;
        std::string_view value;
        if (&p == &kSceneParam && l.scene && cache && !l.names_model()) value = cache->text(*l.scene);
        else value = formatted = p.format(l);
        if (value.empty() || (!p.always_written && value == p.default_value)) continue;
        out += out.empty() ? "" : "&";
        out += p.name;
        out += '=';
        append_percent_encoded(out, value);
    }
    return out;
}

namespace {

// A parameter's new name for the name older links wrote ("" for none): tile counted steps.
std::string_view renamed(std::string_view old) { return old == "tile" ? "tile_step" : ""; }

}  // namespace

LinkResult decode_link(std::string_view hash) {
    LinkResult r;
    auto fail = [&](std::string param, const std::string& problem) {
        r.link = LinkState{};
        r.param = std::move(param);
        r.error = r.param + ": " + problem;
        return r;
    };
    const std::string missing_version = "missing: a link starts with v=" + std::to_string(kLinkVersion);
    if (!hash.empty() && hash.front() == '#') hash.remove_prefix(1);
    if (hash.size() > kMaxLinkChars)
        return fail("link", "longer than " + std::to_string(kMaxLinkChars >> 20) + " MB");
    std::set<std::string> seen;
    bool versioned = false;
    size_t start = 0;
    while (start < hash.size()) {
        size_t amp = std::min(hash.find('&', start), hash.size());
        std::string_view pair = hash.substr(start, amp - start);
        start = amp + 1;
        if (pair.empty()) continue;
        size_t eq = pair.find('=');
        auto key = percent_decode(pair.substr(0, eq));
        if (!key || eq == std::string_view::npos)
            return fail(key && !key->empty() ? *key : "link", "expected key=value pairs (v=1&preset=…), got " + shown_value(pair));
        auto value = percent_decode(pair.substr(eq + 1));
        if (key->empty()) return fail("link", "a parameter without a name: " + shown_value(pair));
        if (!value) return fail(*key, "bad %-escape in " + shown_value(pair.substr(eq + 1)));
        if (!seen.insert(renamed(*key).empty() ? *key : std::string(renamed(*key))).second) return fail(*key, "given twice");
        if (*key == kVersionParam.name) {
            if (std::string problem = kVersionParam.parse(r.link, *value); !problem.empty()) return fail(*key, problem);
            versioned = true;
            continue;
        }
        if (!versioned) return fail(kVersionParam.name, missing_version);
        if (value->empty()) return fail(*key, "empty value");
        const LinkParam* p = find_link_parameter(*key);
        if (!p) p = find_link_parameter(renamed(*key));  // an old link's name
        if (!p) return fail(*key, "unknown parameter");
        try {
            std::string problem = p->parse(r.link, *value);
            if (!problem.empty()) return fail(*key, problem);
        } catch (const SceneError& e) {
            fail(scene_param(e), "");
            r.error = std::string("scene: ") + e.what();  // what() already names the field
            return r;
        } catch (const std::exception& e) {
            return fail(*key, e.what());
        }
    }
    if (!versioned) return fail(kVersionParam.name, missing_version);
    auto [param, problem] = check_link(r.link);
    if (!param.empty()) return fail(param, problem);
    return r;
}

// [SECTION] App ------------------------------------------------------------------------------

LinkState link_from_app(const AppState& st) {
    LinkState l;
    if (st.showing_preset()) l.preset = st.preset_name;
    else l.scene = st.scene;
    for (const LinkParam& p : kParams)
        if (p.from_app) p.from_app(l, st);
    if (st.figure.has(Detail::Layers)) {
        // Heads and tokens of the map, not of the scene the link carries: the map says them.
        l.head = 0;
        l.token = {};
        l.head_visible.clear();
    }
    return l;
}

namespace {

// Everything but the scene.
void apply_view(AppState& st, const LinkState& l) {
    for (const LinkParam& p : kParams)
        if (p.to_app) p.to_app(st, l);
    // An imported map waits for its file (import_state.cpp, apply_link_map); the model view
    // needs one.
    if (st.figure.has(Detail::Layers)) apply_link_map(st);
    else if (st.view == View::Model) st.view = View::Lines;
}

}  // namespace

void apply_link(AppState& st, const LinkState& l) {
    const bool same_server = !l.server.empty() && st.served.server == l.server && st.served.key == l.server_key;
    if ((l.names_model() && st.model.active()) || (same_server && st.figure.has(Detail::Layers))) {
        // A live or served model's link again (its view or head changed): the model's figure
        // stays; the scene behind it would replace it until a rerun that the same text never asks for.
    } else if (l.scene) {
        st.load_scene(*l.scene);
        // A changed preset keeps its name, as it did in the app that made the link.
        st.preset_name = find_preset(l.scene->name) ? l.scene->name : "";
    } else {
        st.load_preset(l.preset.empty() ? kDefaultPreset : l.preset);
    }
    st.scene_json.clear();
    apply_view(st, l);
    // A served link's scene stands in until the server's first figure: the canvas says where that is.
    st.served.placeholder_revision = !l.server.empty() && !st.figure.has(Detail::Layers) ? st.revision : -1;
    if (const LiveScene* live = find_live_scene(l.live); live && live->pick) {
        st.model.pick_head = live->pick;
        if (st.model.model && !st.model.loading) apply_pick_head(st);
    }
}

bool open_link(AppState& st, std::string_view hash) {
    LinkResult r = decode_link(hash);
    if (!r.ok()) {
        st.error = "link: " + r.error;
        return false;
    }
    apply_link(st, r.link);
    return true;
}

std::string embed_snippet(const std::string& page_url, const LinkState& link, const EmbedOptions& o, LinkSceneCache* cache) {
    LinkState l = link;
    l.panels = o.panels;
    const Scene& s = link_scene(l);
    std::string title = "attnviz: " + (s.name.empty() ? std::string(kind_name(s.kind)) + " attention" : s.name);
    std::string escaped;
    for (char c : title) {
        if (c == '"') escaped += "&quot;";
        else if (c == '<') escaped += "&lt;";
        else if (c == '&') escaped += "&amp;";
        else escaped += c;
    }
    std::string url = page_url + "#" + encode_link(l, cache);
    std::string amp_url;
    for (char c : url) amp_url += c == '&' ? std::string("&amp;") : std::string(1, c);
    return "<iframe src=\"" + amp_url + "\" width=\"" + std::to_string(o.width) + "\" height=\"" +
           std::to_string(o.height) + "\" title=\"" + escaped + "\" loading=\"lazy\" style=\"border:0\"></iframe>";
}

// [SECTION] Messages -------------------------------------------------------------------------

namespace {

// A set-view field's JSON value as the link's text; nullopt for a type the row does not take.
// Text is taken for every row ("mean", "q2", "1.25").
std::optional<std::string> message_text(const LinkParam& p, const nlohmann::json& value) {
    if (value.is_string()) return value.get<std::string>();
    switch (p.message) {
        case LinkMessage::Integer:
            if (value.is_number_integer()) return std::to_string(value.get<long long>());
            break;
        case LinkMessage::Number:
            if (value.is_number()) return format_float(value.get<float>());
            break;
        case LinkMessage::Boolean:
            if (value.is_boolean()) return flag_text(value.get<bool>());
            break;
        case LinkMessage::TextOrNull:
            if (value.is_null()) return std::string(p.default_value);
            break;
        case LinkMessage::None:
        case LinkMessage::Text:
            break;
    }
    return std::nullopt;
}

// A get-state field: the link's text as the JSON value set-view takes.
nlohmann::json message_value(const LinkParam& p, const std::string& text) {
    switch (p.message) {
        case LinkMessage::Integer:
            if (auto n = parse_int(text, std::numeric_limits<int>::min(), std::numeric_limits<int>::max())) return *n;
            break;
        case LinkMessage::Number:
            if (auto x = parse_float(text)) return *x;
            break;
        case LinkMessage::Boolean:
            return text == "1";
        case LinkMessage::TextOrNull:
            if (text == p.default_value) return nullptr;
            break;
        case LinkMessage::None:
        case LinkMessage::Text:
            break;
    }
    return text;
}

}  // namespace

std::string handle_message(AppState& st, std::string_view message_json) {
    using nlohmann::json;
    json msg;
    try {
        msg = json::parse(message_json);
    } catch (const std::exception&) {
        return "";
    }
    if (!msg.is_object() || !msg.contains("type") || !msg["type"].is_string()) return "";
    const std::string type = msg["type"];
    if (type != "attnviz:set-scene" && type != "attnviz:set-view" && type != "attnviz:get-state") return "";
    const std::string request = type.substr(8);
    auto reply = [&](json body) {
        body["request"] = request;
        if (msg.contains("id")) body["id"] = msg["id"];
        return body.dump(-1, ' ', false, json::error_handler_t::replace);
    };
    auto error = [&](const std::string& field, const std::string& message) {
        return reply({{"type", "attnviz:error"}, {"field", field}, {"message", field + ": " + message}});
    };
    auto ok = [&]() { return reply({{"type", "attnviz:ok"}}); };

    if (type == "attnviz:get-state") {
        LinkState l = link_from_app(st);
        json state = {
            {"preset", l.preset.empty() ? json(nullptr) : json(l.preset)},
            {"scene", json::parse(write_scene(st.scene, false))},
            {"error", st.error},
        };
        // The rows with a message type, as set-view takes them.
        for (const LinkParam& p : kParams)
            if (p.message != LinkMessage::None) state[p.name] = message_value(p, p.format(l));
        return reply({{"type", "attnviz:state"}, {"state", state}, {"hash", encode_link(l)}});
    }

    if (type == "attnviz:set-scene") {
        for (const auto& [key, value] : msg.items())
            if (key != "type" && key != "id" && key != "scene" && key != "preset") return error(key, "unknown field");
        LinkState l = link_from_app(st);
        if (msg.contains("preset") && msg.contains("scene")) return error("scene", "give preset or scene, not both");
        if (msg.contains("preset")) {
            if (!msg["preset"].is_string()) return error("preset", "expected a preset name");
            const std::string name = msg["preset"];
            if (!find_preset(name)) return error("preset", "no preset named " + shown_value(name));
            l.scene.reset();
            l.preset = name;
        } else if (msg.contains("scene")) {
            const json& s = msg["scene"];
            if (!s.is_object() && !s.is_string()) return error("scene", "expected a scene object or its JSON text");
            try {
                Scene scene = read_scene(s.is_string() ? s.get<std::string>() : s.dump());
                l.preset.clear();
                l.scene = std::move(scene);
            } catch (const SceneError& e) {
                return reply({{"type", "attnviz:error"},
                              {"field", scene_param(e)},
                              {"message", std::string("scene: ") + e.what()}});
            } catch (const std::exception& e) {
                return error("scene", e.what());
            }
        } else {
            return error("scene", "missing: give \"scene\" (an object or JSON text) or \"preset\"");
        }
        // The view stays; what depends on the old scene's shape starts over.
        l.head = l.view == View::Heatmap && l.head < 0 ? -1 : 0;
        l.token = {};
        l.head_visible.clear();
        if (l.head >= link_scene(l).heads || (l.head < 0 && link_scene(l).heads == 1)) l.head = 0;
        apply_link(st, l);
        return ok();
    }

    // set-view: the rows with a message type, as JSON values.
    LinkState l = link_from_app(st);
    int given = 0;
    for (const auto& [key, value] : msg.items()) {
        if (key == "type" || key == "id") continue;
        const LinkParam* p = find_link_parameter(key);
        if (!p) p = find_link_parameter(renamed(key));  // an older embedder's name
        if (!p || p->message == LinkMessage::None) {
            std::string fields;
            for (const LinkParam& f : kParams)
                if (f.message != LinkMessage::None) fields += (fields.empty() ? "" : ", ") + std::string(f.name);
            return error(key, "unknown field (set-view takes " + fields + ")");
        }
        std::optional<std::string> text = message_text(*p, value);
        if (!text) return error(key, "wrong type: " + std::string(value.type_name()));
        std::string problem = p->parse(l, *text);
        if (!problem.empty()) return error(key, problem);
        ++given;
    }
    if (given == 0) return error("view", "set-view with nothing to set");
    auto [param, problem] = check_link(l);
    if (!param.empty()) return error(param, problem);
    apply_view(st, l);
    return ok();
}

}  // namespace attn
