// link_state.hpp: the whole figure in a link (SPEC.md §4), and the messages a parent page may
// post to an embedded figure. No ImGui or GL here, so the doctest suite checks it natively.
//
// The hash is readable key=value pairs, version first (docs/LINKS.md):
//   #v=1&preset=i-am-good&view=heatmap&head=2&token=q1&theme=light&text=1.25&panels=0
// A preset shown unchanged is named (preset=); any other scene travels as base64url of its
// compact JSON (scene=), read back with read_scene so a bad link fails like a bad file. A
// model's figure (LinkState::names_model) names neither.
// Numbers a user reads are 1-based: head=2 is "head 2 of 4", token=q1 the first query.
//
// [SECTION] Link state
// [SECTION] Parameters
// [SECTION] Hash
// [SECTION] App
// [SECTION] Messages
#pragma once

#include "app_state.hpp"

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace attn {

// [SECTION] Link state -----------------------------------------------------------------------

inline constexpr int kLinkVersion = 1;
inline constexpr size_t kMaxLinkChars = 4u << 20;  // a scene of 4 MB is far past any figure

struct LinkState {
    std::string preset;            // a preset shown unchanged; "" when `scene` holds the scene
    std::string live;              // preset= naming a live scene (live_scenes.hpp): it sets the model's rows
                                   // (model, text, view, map, …) and, once the model is in, picks its head
    std::optional<Scene> scene;    // any other scene; neither: the default preset
    View view = View::Lines;
    int head = 0;                  // 0-based, of the heatmap and the Steps view; -1 = mean (heatmap)
    bool tiles = false;            // the Steps view's tiles mode (StepsOptions)
    TileSize tile{0, 0};           // its B_r × B_c; 0 × 0 = auto
    int tile_step = 0;             // its step, 0-based
    QkProjection qk = QkProjection::Pca;  // the Q–K space view's plane
    TokenRef token;                // the pinned token
    Theme theme = Theme::Dark;
    bool theme_auto = false;       // theme=auto: follows the reader's system setting
    float text_scale = 1.0f;       // size=1.25: the UI text size (AppState::text_scale)
    Lang lang = Lang::En;
    bool panels = true;            // false: the figure and a small control strip (embeds)
    bool fps = false;              // fps=1: the frame-time overlay (AppState::show_frame_time)
    std::vector<bool> head_visible;  // Lines view; empty = every head
    float threshold = 0.0f;        // Lines view
    int top_k = 0;                 // Lines view
    int colormap = 0;
    HeatValues values = HeatValues::Weights;
    bool numbers = true;
    bool log = false;              // heatmap weights on the log scale
    bool sink_hidden = false;      // heatmap and lines: the first key left out, rows renormalized (sink.hpp)
    bool rows_scaled = false;      // model grid: each thumbnail row scaled to its largest weight
    // An imported file's map, "STACK:LAYER:HEAD" with 1-based numbers ("decoder_attention:2:5").
    // The file itself comes from the page's ?import= (docs/LINKS.md); the map is chosen once it is in.
    std::string import_map;
    // A live model's input (the model is `model` below, or the page's ?model=): its text, marian's source, and
    // whether marian translates or reads `model_text` as its target.
    std::string model_text, model_source;
    bool model_translate = true;
    std::string compare;           // a second text, run beside model_text (the Compare view)
    std::vector<ChatTurn> chat;    // a conversation read through the model's chat template (none: off)
    std::string model;             // a built-in model (builtin.hpp) run live; "" = none or the page's ?model=
    std::string picture;           // a vision model's example picture ("example-7.png"; ModelSession::examples), or ""
    std::string hub;               // or a model on the Hub by its id (hf=ORG/NAME[@REVISION][:QUANT])
    std::string server, server_key;  // or a model PyTorch runs, served by attnviz.serve() (served_state.hpp)
    // Its experiment (model_state.hpp ModelExperiment): heads knocked out as links write them
    // ("2:3,cross_attention:1:2"), the ablation, hidden tokens (from 0), head importance, the
    // heads' direct logit attribution.
    std::string knockout;
    bool mean_ablation = false;
    std::vector<int> hidden;
    bool importance = false, attribution = false, lens = false, patching = false;
    TokenShade probs = TokenShade::Off;  // its tokens coloured by probability or surprisal
    std::string target, contrast;        // attribution's and patching's tokens ("": the prediction; none)
    std::string corrupted;               // patching's corrupted text ("": the compare text)
    // Its generation (gpt2, model_state.hpp ModelGeneration): tokens generated (0: none), the
    // sampling, and the scrubber's step (-1: the last).
    int generate = 0;
    Sampling sampling;
    int step = -1;

    // The figure is a model's: a live model's (model, text, chat or source given) or a map of one or
    // of an imported file (map given). Such a link names no scene (no preset=, no scene=): the
    // scene behind the model is not on screen, and a reader of the link gets the default one.
    bool names_model() const {
        return !model.empty() || !server.empty() || !model_text.empty() || !chat.empty() || !model_source.empty() || !import_map.empty();
    }
};

// [SECTION] Parameters -----------------------------------------------------------------------
// Every parameter of the link is one row of link_parameters() (link_state.cpp), and everything
// about it is in that row: encode_link writes the rows in order, decode_link reads them by name,
// set-view and get-state take and report the rows with a `message` type, and docs/LINKS.md's table
// is link_parameters_markdown() (tests/test_link.cpp keeps it in step). A new parameter is a
// field of LinkState above and a row there.

// How a parameter reads and writes as a JSON value in set-view / get-state.
enum class LinkMessage {
    None,        // not a message field
    Text,        // "heatmap"
    Integer,     // a number or text: 2 or "mean" (as the link's text otherwise)
    Number,      // 1.25
    Boolean,     // true = "1", false = "0"
    TextOrNull,  // "q2", or null for the default ("none")
};

struct LinkParam {
    const char* name;           // in the hash and the messages: "head"
    const char* what;           // docs/LINKS.md: what it sets, one line
    const char* values;         // docs/LINKS.md: the values it takes (markdown)
    const char* default_value;  // the value a link leaves out; "" when there is none to write
    const char* absent = "";    // docs/LINKS.md's default when default_value is "": "all", "required"
    bool always_written = false;  // written even at its default (v, preset, view)
    LinkMessage message = LinkMessage::None;
    // Reads `text` (percent-escapes undone) into the link. Returns "" or what was wrong, without
    // the name: callers name the parameter ("head: expected ..."). scene throws SceneError.
    std::string (*parse)(LinkState& link, std::string_view text);
    // The value as parse reads it back, before percent-escaping; "" = nothing to write.
    std::string (*format)(const LinkState& link);
    // What depends on the link's scene; "" or the problem. nullptr: nothing does.
    std::string (*check)(const LinkState& link, const Scene& scene) = nullptr;
    // The app's fields to the link's and back. nullptr for v, preset and scene: link_from_app
    // and apply_link handle the scene as a whole. An imported map is applied after every row.
    void (*from_app)(LinkState& link, const AppState& state) = nullptr;
    void (*to_app)(AppState& state, const LinkState& link) = nullptr;
};

// The rows in the order links write them: v first, then the scene, then the view options.
std::span<const LinkParam> link_parameters();
const LinkParam* find_link_parameter(std::string_view name);
// docs/LINKS.md: the parameter table as markdown, one row per parameter.
std::string link_parameters_markdown();

// [SECTION] Hash -----------------------------------------------------------------------------

// The scene's value in a link (base64url of its compact JSON, without the description), kept
// while the scene stays the same. Writing a big scene out is slow (256 tokens of pasted 64-wide
// embeddings: 86 M instructions, 10-40 ms natively; 1000 typed tokens: a few ms) and the address
// bar asks four times a second, so whoever asks often owns one: App, for the address bar and the
// embed dialog. With it, a link of that scene costs 2 M instructions.
class LinkSceneCache {
public:
    const std::string& text(const Scene& scene);

private:
    std::optional<Scene> scene_;
    std::string text_;
};

// Without the leading '#'. Parameters at their default are left out, except v, the scene
// (preset= or scene=) and view. With a cache, an unchanged scene is not written out again.
std::string encode_link(const LinkState& link, LinkSceneCache* cache = nullptr);

// A decoded link, or the first problem: `param` names the parameter ("head", "scene.tokens"),
// `error` is one readable line that starts with it. Never throws.
struct LinkResult {
    LinkState link;
    std::string param;
    std::string error;
    bool ok() const { return error.empty(); }
};
// Accepts a leading '#', percent-escapes and a trailing '&'. Checks the scene with read_scene
// and head / token against it, so an ok() link always applies.
LinkResult decode_link(std::string_view hash);

// nullopt on a character outside A–Z a–z 0–9 - _ (padding '=' is accepted) or a bad length.
std::optional<std::string> base64url_decode(std::string_view text);

// [SECTION] App ------------------------------------------------------------------------------

// What the app shows now (the last scene that computed, not a draft with an error).
LinkState link_from_app(const AppState& state);
// Shows the link's figure: loads its scene, then the view options. Expects a decoded link.
void apply_link(AppState& state, const LinkState& link);
// Decodes and applies; on a bad link shows the default figure and sets state.error to
// "link: <problem>". Returns false on a bad link.
bool open_link(AppState& state, std::string_view hash);

// The snippet of "Copy embed code": a plain <iframe> to page_url#hash (figure only unless
// `panels`), width × height CSS pixels.
struct EmbedOptions {
    int width = 640;
    int height = 400;
    bool panels = false;
};
std::string embed_snippet(const std::string& page_url, const LinkState& link, const EmbedOptions& options,
                          LinkSceneCache* cache = nullptr);

// [SECTION] Messages -------------------------------------------------------------------------
// The postMessage API of an embedded figure (docs/EMBED.md). The page passes the
// message as JSON and posts the reply back to the sender:
//   {"type":"attnviz:set-scene", "scene": {...} | "<JSON text>"}  or  {"preset": "name"}
//   {"type":"attnviz:set-view", "view"?, "head"?, "token"?, "theme"?, "text"?, "lang"?, "panels"?}
//   {"type":"attnviz:get-state"}
// each with an optional "id" echoed in the reply. Replies: {"type":"attnviz:ok"},
// {"type":"attnviz:state", "state": {...}, "hash": "v=1&..."} or
// {"type":"attnviz:error", "field": "scene.tokens", "message": "..."}.
// A message that is not a JSON object with one of these types gets "" (no reply): pages see
// many messages that are not for us. A bad set-scene keeps the figure as it was.
// set-view's fields, and get-state's but preset, scene and error, are the parameters with a
// LinkMessage type (the Parameters section above), in the link's values.
std::string handle_message(AppState& state, std::string_view message_json);

}  // namespace attn
