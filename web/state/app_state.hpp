// app_state.hpp: what the user has set up (the draft scene and the texts), the last figure
// that computed (scene + trace), and the view options. Panels edit it; views read it.
//
// Bad input never blanks the figure: apply() computes into temporaries and only replaces
// `scene` / `trace` when validation and computation succeed; otherwise `error` holds one line.
#pragma once

#include "figure.hpp"
#include "flash.hpp"
#include "qk_layout.hpp"
#include "import_state.hpp"
#include "model_state.hpp"
#include "served_state.hpp"
#include "scene.hpp"
#include "sink.hpp"
#include "strings.hpp"
#include "lines_layout.hpp"
#include "top_keys.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace attn {

// Model: layers × heads (figures with Detail::Layers); Compare: a live model on two texts; Qk: a
// head's queries and keys as points of one plane (core/figure/qk_layout.hpp).
enum class View { Lines, Heatmap, Steps, Model, Explain, Compare, Qk, Why, Image };
// "lines", "heatmap", "steps", "model", "explain", "compare", "qk", "why", "image": in links, exported file names and the tests' state.
inline const char* view_name(View v) {
    constexpr const char* kNames[] = {"lines", "heatmap", "steps", "model", "explain", "compare", "qk", "why", "image"};
    return kNames[static_cast<int>(v)];
}
enum class ScaleMode { InvSqrtDk, None, Temperature };
enum class WeightsMode { Identity, Random, Explicit };
enum class Theme { Dark, Light };
enum class HeatValues { Weights, Scores };  // after the softmax, or the scaled scores before it

inline constexpr float kMinTextScale = 0.75f, kMaxTextScale = 2.0f;  // AppState::text_scale
inline constexpr float kNarrowWidth = 700.0f, kTouchTarget = 40.0f;   // CSS px (AppState::narrow, touch)

// A token the user points at or has pinned: one side of the figure and an index on it.
struct TokenRef {
    enum Side { None, Query, Key } side = None;
    int index = -1;
    bool valid() const { return side != None && index >= 0; }
    friend bool operator==(const TokenRef&, const TokenRef&) = default;
};

struct LinesOptions {
    std::vector<bool> head_visible;  // one per head
    float threshold = 0.0f;          // hide lines whose weight is below
    int top_k = 0;                   // keys per query, 1 … lines_top_k_max; 0 = auto (lines_auto_top_k)
};

// Lines view at scale: past kTopAllUpTo keys each query shows its kLinesAutoTopK strongest
// unless the user picks a k, up to the kTopKeysMax its cache keeps (core/figure/lines_layout.hpp:
// kLinesAutoTopK, lines_auto_top_k, lines_top_k_max).

struct HeatmapOptions {
    int head = 0;                    // -1 = mean over heads
    int colormap = 0;                // index into colormaps()
    HeatValues values = HeatValues::Weights;
    bool show_numbers = true;        // the value in each cell when cells are big enough
    bool log_scale = false;          // weights on a log scale, 10⁻⁴ … 1 (core/figure/display_map.hpp)
    // Zoom and pan (web/ui/heatmap_view.cpp): 1 = the whole map fits its box; cells grow by this
    // factor up to a readable maximum. view_x / view_y: the key / query (fractional, in cells)
    // at the box's top-left corner.
    float zoom = 1.0f;
    float view_x = 0.0f, view_y = 0.0f;
    bool dragging = false;           // a drag that started on the map pans it
};

// What the heatmap drew last frame, for the tests and the memory line.
struct HeatmapProbe {
    int level = 0;                   // pyramid level drawn (0: a texel per cell)
    int row0 = 0, row1 = 0, col0 = 0, col1 = 0;  // visible queries [row0, row1), keys [col0, col1)
    int labels_q = 0, labels_k = 0;  // token labels drawn
    int numbers = 0;                 // values drawn in cells
    float cell = 0.0f;               // display units per cell
    float max_zoom = 1.0f;
    double progress = 1.0;           // of the display map being built
    std::size_t display_bytes = 0, trace_bytes = 0, gpu_bytes = 0;
    int tiles = 0;                   // tiles on the GPU
    bool window_legend = false;      // the legend's entry for cells outside a sliding window
    bool sink_legend = false;        // the legend's entry for the first key left out (the sink option)
};

struct StepsOptions {
    int head = 0;                    // the head whose pipeline is shown
    // The tiles mode (core/figure/flash_layout.hpp): the head computed the FlashAttention way,
    // a step at a time. tile 0 × 0: auto (2 × 2 for a scene, flash_tile_size for a live model).
    bool tiles = false;
    TileSize tile{0, 0};
    int tile_step = 0;               // into flash_steps; the view clamps it
    // Past kStepsMaxShown tokens, the window of 16 the matrices show: the first query row and the
    // first key (0-based; the layout clamps them). The words under an induction head move it to
    // the query they speak of; the toolbar's Queries and Keys, and the arrow keys, move it too.
    int first_query = 0, first_key = 0;
};

// Screen rectangles (x, y, w, h in ImGui display units) that the JS test hook reports so
// browser tests can point at real widgets and tokens.
using ProbeRect = std::array<float, 4>;

struct AppState {
    // [inputs] ---------------------------------------------------------------------------
    Scene draft;                 // every scene field the panels edit; tokens come from the texts
    std::string target_text;     // query side (the decoder / target for cross attention)
    std::string source_text;     // key side for cross attention (the encoder / source)
    std::string preset_name;     // last preset loaded, "" after pasting a scene
    ScaleMode scale_mode = ScaleMode::InvSqrtDk;
    float temperature = 1.0f;
    WeightsMode weights_mode = WeightsMode::Identity;
    int seed = 7;
    std::string scene_json;      // the paste box

    // [result] ---------------------------------------------------------------------------
    Scene scene;                 // the inputs' last scene that validated and computed (the link's)
    Figure figure;               // what the views show: that scene's, or an import's (figure.hpp)
    std::string error;           // one line, empty when the inputs computed
    int revision = 0;            // bumps whenever `trace` changes
    std::string link_map;        // a link's "STACK:LAYER:HEAD" (1-based), applied when its file is in
    View link_map_view = View::Model;  // and the view that link showed the map in
    bool link_view_waits = false;      // a link named a live model: its view (link_map_view) opens with the model's first figure
    ImportView imported;         // the choice of map of a figure with layers, and a file loading
    ServedSession served;        // a model PyTorch runs elsewhere (attnviz.serve()), connected by the link
    ModelSession model;          // a model run live: loading, the reader's text, the run in progress

    // [view] -----------------------------------------------------------------------------
    View view = View::Lines;
    Theme theme = Theme::Dark;
    bool theme_auto = false;     // theme follows the system (platform::prefers_dark), each frame
    float text_scale = 1.0f;     // UI text size (kMinTextScale … kMaxTextScale): multiplies the UI scale
    Lang lang = Lang::En;        // of the UI's fixed words (strings.hpp); preset texts are data
    bool show_panels = true;     // false: the figure and a small control strip (embeds, link panels=0)
    bool show_frame_time = false;  // the frame-time overlay (Display menu, link fps=1)
    // Set each frame from the display (App::before_frame). narrow: under kNarrowWidth CSS px
    // (a phone): the figure takes the width and the controls open in a drawer. touch: narrow or
    // a coarse pointer: controls at least kTouchTarget CSS px tall, drags scroll the panel.
    bool narrow = false;
    bool touch = false;
    LinesOptions lines;
    HeatmapOptions heatmap;
    // The heatmap's and the lines' attention-sink option: the first key's weight left out and
    // every row renormalized (core/figure/sink.hpp); the tooltips keep the true weights.
    bool sink_hidden = false;
    StepsOptions steps;
    QkProjection qk = QkProjection::Pca;  // the Q–K space view: PCA or t-SNE of the head, or every head (its head: steps.head)
    std::map<std::string, ProbeRect> step_rects;  // Steps view: matrix grids by step label
    TokenRef hover;              // this frame
    TokenRef pinned;             // clicked; cleared by clicking it again
    TokenRef selected() const { return pinned.valid() ? pinned : hover; }
    std::vector<int> query_set;  // queries shift-clicked together: their summed attention
    // The keyboard in the figure (web/ui/access.cpp): arrow keys move it, Enter pins (the
    // model view: opens the map), Escape lets go. Lines: a token; Heatmap: a cell; Steps: a
    // number of a step (Page Up/Down change the step); Model: a thumbnail. A view clamps what
    // it shows (Steps' rows and columns, the model's layers and heads).
    struct KeyCursor {
        bool on = false;         // an arrow key moved it since Escape
        TokenRef token;          // Lines
        int q = 0, k = 0;        // Heatmap: the cell; Steps: the row and column; Model: layer and head
        int step = 0;            // Steps
        int action = 0;          // Model: 1 open the map (Enter), 2 knock the head out (Space, a live model)
    } cursor;
    int pinned_q = -1, pinned_k = -1;  // Heatmap: the cell pinned by a tap or Enter (its values stay shown)
    std::array<int, 3> pinned_step{-1, -1, -1};  // Steps: the number pinned (step, row, column)
    std::string steps_said;      // Steps: the number shown (pointer, keyboard or pin) in words, for the twin; Q–K space: the plane and the query shown;
                                 // Explain and Compare past 128 × 128 tokens: each reading's strongest keys
    std::string steps_why;       // Steps: the words under a live induction head (why its query looks there), for the twin

    // [probe for tests] ------------------------------------------------------------------
    std::map<std::string, ProbeRect> probe;
    std::vector<ProbeRect> query_rects, key_rects;
    std::vector<ProbeRect> text_boxes;  // this frame's text boxes: a tap there focuses the page's text field at once (phones)
    ProbeRect figure_rect{}, grid_rect{};
    int lines_drawn = 0;
    HeatmapProbe heatmap_probe;
    float lines_ready = 1.0f;    // share of the visible heads' top-k lists built (lines view)

    // Loads a preset or a pasted scene into the inputs and computes it.
    void load_scene(const Scene& scene);
    void load_preset(const std::string& name);
    // Parses the paste box; on failure sets `error` and keeps everything else.
    void apply_scene_json();
    // Rebuilds the scene from the inputs and computes it.
    void apply();
    // The draft still is the preset last loaded (false once any input changed it).
    bool showing_preset() const;
    // Whether `v` draws the figure without its first key now: the option is on, the figure's
    // maps allow it (sink_hideable) and the view shows weights (the lines; the heatmap's weights).
    bool hides_sink(View v) const {
        const bool weights = v == View::Lines || (v == View::Heatmap && heatmap.values == HeatValues::Weights);
        return sink_hidden && weights && !figure.empty() && sink_hideable(figure.trace());
    }

    // The Steps view's tiles mode: the tile sizes it computes with (StepsOptions::tile, or
    // auto: 2 × 2 for a scene, flash_tile_size of kFlashSramFloats for a live model's head size).
    TileSize steps_tile() const;
    // The step the tiles mode shows: StepsOptions::tile_step within the figure's steps (a link's
    // step is kept as given while its model's figure is on its way).
    int tiles_step() const;

    // Texts from tokens, joined so that tokenize() gives the same tokens back.
    static std::string join_tokens(const std::vector<std::string>& tokens);
    // Embeddings of the draft as the user sees them (given, or generated from the tokens).
    Matrix current_embeddings(bool source) const;
    // Makes the draft's embeddings explicit so they can be edited in place.
    Matrix& editable_embeddings(bool source);
};

// Keeps a matrix with one row per token in step with new tokens: a token that was there keeps
// its row (first match by text), a new one gets its generated row; columns follow d_model.
Matrix follow_tokens(const Matrix& rows, const std::vector<std::string>& old_tokens,
                     const std::vector<std::string>& new_tokens, int d_model);

}  // namespace attn
