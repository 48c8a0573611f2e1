// view.hpp: what every figure view gets to draw with.
#pragma once

#include "app_state.hpp"
#include "fonts.hpp"
#include "heatmap_layout.hpp"
#include "lines_layout.hpp"
#include "renderer.hpp"
#include "theme.hpp"
#include "image_layout.hpp"
#include "why_layout.hpp"

#include <imgui.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

namespace attn {

struct Views;
struct PanelState;
class LinkSceneCache;  // link_state.hpp

struct ViewContext {
    AppState& state;
    Renderer& renderer;
    Fonts& fonts;
    Views& views;             // the view objects and their caches (one set per app)
    PanelState& panels;       // what the panels keep between frames (panels.hpp)
    float scale = 1.0f;       // UI scale (device pixel ratio)
    bool interactive = true;  // false when rendering to a PNG: no hover, no tooltips
    LinkSceneCache* link_cache = nullptr;  // the app's (link_state.hpp), for the embed dialog
};

// [SECTION] Views
// Each view draws the figure (AppState::figure) into the rectangle [min, max) of the current
// window, and its options on the toolbar's line (or in the Options popup on a phone: toolbar),
// and keeps what it computed for it between frames (top-k lists, display maps, the
// Steps pipeline, the model view's atlas). The app owns one of each; the PNG export draws the
// same objects off screen, so an export reuses the caches instead of starting its own.
#define ATTN_VIEW_CLASS(Name)                                   \
    class Name {                                                \
    public:                                                     \
        Name();                                                 \
        ~Name();                                                \
        Name(const Name&) = delete;                             \
        Name& operator=(const Name&) = delete;                  \
        void draw(ViewContext& ctx, ImVec2 min, ImVec2 max);    \
        void toolbar(ViewContext& ctx);                         \
                                                                \
    private:                                                    \
        struct Cache;                                           \
        std::unique_ptr<Cache> cache_;                          \
    }
ATTN_VIEW_CLASS(HeatmapView);  // heatmap_view.cpp: queries × keys, zoomable
ATTN_VIEW_CLASS(StepsView);    // steps_view.cpp: the pipeline (the weights alone when that is all the figure has)
ATTN_VIEW_CLASS(QkView);       // qk_view.cpp: a head's queries and keys in one plane (or every head's)
ATTN_VIEW_CLASS(TilesView);    // tiles_view.cpp: the Steps view's tiles mode (FlashAttention, a step at a time); its
                               // toolbar: the switch, the tiles' sizes and the step (inside the Steps view's)
ATTN_VIEW_CLASS(ModelView);    // model_view.cpp: layers × heads thumbnails (figures with Detail::Layers)
ATTN_VIEW_CLASS(ExplainView);  // explain_view.cpp: one head read three ways (explain_layout.hpp)
ATTN_VIEW_CLASS(CompareView);  // compare_view.cpp: a live head on two texts and their difference
ATTN_VIEW_CLASS(ImageView);    // image_view.cpp: a vision model's picture, a token's attention over its patches
#undef ATTN_VIEW_CLASS

// lines_view.cpp: token to token, one colour per head.
class LinesView {
public:
    LinesView();
    ~LinesView();
    LinesView(const LinesView&) = delete;
    LinesView& operator=(const LinesView&) = delete;
    void draw(ViewContext& ctx, ImVec2 min, ImVec2 max);
    void toolbar(ViewContext& ctx);
    // The top-k lists it holds for the figure of `st` (the SVG export reuses them), or nullptr.
    LinesWeights* weights_for(const AppState& st);

private:
    struct Cache;
    std::unique_ptr<Cache> cache_;
};

// why_view.cpp: the why grids of a live run (lens, attribution, patching, importance), large.
class WhyView {
public:
    WhyView();
    ~WhyView();
    WhyView(const WhyView&) = delete;
    WhyView& operator=(const WhyView&) = delete;
    void draw(ViewContext& ctx, ImVec2 min, ImVec2 max);
    void toolbar(ViewContext& ctx);
    // The height its grids took when last drawn on screen (UI px, padding included; 0 before):
    // the exports grow to it, so they hold every grid.
    float content_height() const;

private:
    struct Cache;
    std::unique_ptr<Cache> cache_;
};

struct Views {
    LinesView lines;
    HeatmapView heatmap;
    StepsView steps;
    TilesView tiles;
    QkView qk;
    ModelView model;
    ExplainView explain;
    CompareView compare;
    WhyView why;
    ImageView image;

    void draw(ViewContext& ctx, View view, ImVec2 min, ImVec2 max) {
        if (view == View::Lines) lines.draw(ctx, min, max);
        else if (view == View::Heatmap) heatmap.draw(ctx, min, max);
        else if (view == View::Model) model.draw(ctx, min, max);
        else if (view == View::Explain) explain.draw(ctx, min, max);
        else if (view == View::Compare) compare.draw(ctx, min, max);
        else if (view == View::Why) why.draw(ctx, min, max);
        else if (view == View::Image) image.draw(ctx, min, max);
        else if (view == View::Qk) qk.draw(ctx, min, max);
        else if (ctx.state.steps.tiles && ctx.state.figure.has(Detail::Projections)) tiles.draw(ctx, min, max);
        else steps.draw(ctx, min, max);
    }
    // What the view offers (heads, threshold, colours…); the tiles mode's are in the Steps view's.
    void toolbar(ViewContext& ctx, View view) {
        if (view == View::Lines) lines.toolbar(ctx);
        else if (view == View::Heatmap) heatmap.toolbar(ctx);
        else if (view == View::Model) model.toolbar(ctx);
        else if (view == View::Explain) explain.toolbar(ctx);
        else if (view == View::Compare) compare.toolbar(ctx);
        else if (view == View::Why) why.toolbar(ctx);
        else if (view == View::Image) image.toolbar(ctx);
        else if (view == View::Qk) qk.toolbar(ctx);
        else steps.toolbar(ctx);
    }
};

// Seconds of on-demand work (a heatmap's display map, the lines' top-k lists) a frame may
// take while it builds: 12 ms, or three quarters of the frame time when frames are slow anyway
// (a software-rendered WebGL), at most 120 ms: the build then takes a fixed share of the time
// instead of crawling. The frame time is ImGui's average over the last 60 frames, so that one
// long frame (the scene that made the new figure) does not widen the next frame's budget.
inline double build_budget_seconds() {
    const float fps = ImGui::GetIO().Framerate;
    return std::clamp(fps > 0.0f ? 0.75 / fps : 0.012, 0.012, 0.120);
}

// A number's arithmetic in a tooltip (steps_view.cpp), its lines broken at spaces where they would
// pass `width` (a phone's screen; on a wider one nothing breaks), the rest indented. ImGui's own
// wrap could break after a number's point.
void arithmetic_text(const std::string& text, float width);

// A button as small as its text, or a full-height one on a touch screen (AppState::touch).
inline bool small_button(const AppState& st, const char* label) { return st.touch ? ImGui::Button(label) : ImGui::SmallButton(label); }

// A touch screen (panels.cpp): a finger dragged across the current window scrolls it, as a
// page would. ImGui scrolls only by wheel and scrollbar. A drag that starts on a control lets go
// of it (no click follows): in the panels only a mostly vertical one (sliders drag sideways);
// in the views' scrolling maps (Steps, Model, Explain), any (both_axes). `scrolling`: the
// finger down is scrolling (PanelState::drag_scrolling).
void drag_scroll(bool& scrolling, float scale, bool both_axes);

// After an InputText: its rectangle joins AppState::text_boxes, so that a tap on it focuses the
// page's text field inside the tap (platform::set_text_boxes; a phone opens its keyboard).
void mark_text_box(AppState& st);

// Registers the last ImGui item's rectangle under `name` for the browser tests (AppState::probe).
void probe(AppState& st, const char* name);

// The trace the heatmap and the lines draw: the figure's, or without its first key when the
// sink option applies to the view (AppState::hides_sink, core/figure/sink.hpp), made once per
// figure and kept in `cache` (one per view).
struct SinklessTrace {
    const Trace* source = nullptr;
    int revision = -1;
    Trace trace;
};
const Trace& drawn_trace(const AppState& st, View view, SinklessTrace& cache);

// [SECTION] Drawing a layout (figure_items.cpp)
// Draws a layout's items (core/figure/figure_layout.hpp) with ImGui, in order, each inside its
// clip box (`clips`); `gpu` is called where the layout puts the GPU's part (Item::Lines,
// Item::Grid, Item::Colormap), inside that item's clip box.
void draw_items(ImDrawList* draw_list, const std::vector<Item>& items, const std::vector<Box>& clips,
                const FontsMeasure& measure, const Palette& pal, float scale,
                const std::function<void(const Item&)>& gpu);
// Registers the layout's captions (headings, notes, axis captions) as "caption.N" for the
// browser tests, which check that no two overlap (a phone's narrow figure).
void probe_captions(AppState& st, const std::vector<Item>& items, const FontsMeasure& measure);
// The figures' words in the UI's language (strings.hpp), for the layouts and the SVG.
LinesWords lines_words(Lang lang);
HeatmapWords heatmap_words(Lang lang);
QkWords qk_words(Lang lang);

// Cell helpers shared by the heatmap and the Steps view.
// Masked cell: two neutral greys in diagonal stripes, so a masked key never reads as a zero.
void hatch_rect(ImDrawList* draw_list, ImVec2 a, ImVec2 b, const Palette& pal, float scale, bool window = false);
// Dark or light text, whichever reads on a cell of colour rgb (0..1).
ImU32 ink_on(const std::array<float, 3>& rgb);

// The Explain and Compare views' row of maps (explain_layout.hpp) in [min, max): a child
// window that scrolls when the maps stand one above another (a phone), `in.box` set to it; the
// grids are probed as "<probe>.map.K"; `hover` runs inside the child with the layout.
struct ExplainInput;
struct ExplainLayout;
void draw_panels(ViewContext& ctx, ExplainInput& in, ImVec2 min, ImVec2 max, const char* probe,
                 const std::function<void(const ExplainLayout&)>& hover);
// The why grids (why_view.cpp, core/figure/why_layout.hpp) of the experiments that are on and
// in (`only`: that one alone): `labels` adds the heads' and positions' column labels (the Why
// view's). Each is probed as PREFIX.<probe>.ROW.COLUMN (rows as labelled, from first_row; columns
// from 1).
enum class WhyKind { Importance, Attribution, Lens, PatchingHeads, PatchingStream };
struct WhyShown {
    WhyKind kind;
    WhyGrid grid;
    const char* probe;  // "lens", "patching.head", …
    int first_row = 1;
};
std::vector<WhyShown> why_grids(const AppState& st, bool labels, std::optional<WhyKind> only = std::nullopt);
// A hovered cell's tooltip; a lens cell clicked opens that layer's map with the position pinned.
void why_cell_hovered(AppState& st, WhyKind kind, int row, int col, bool clicked);
// Lays out `grids` in `in.box` (its top; the scale, theme and colormap are the app's), draws
// them in the current window, probes their cells under `prefix` and answers a hovered cell.
WhyLayout draw_why(ViewContext& ctx, WhyInput& in, const std::vector<WhyShown>& grids, const std::string& prefix);
// The Why view's grids in `box` (a figure's; its top and width; scale: the UI's): padded,
// at most 900 px wide, larger cells than the panel's. Its PNG and SVG lay out the same.
WhyInput why_view_input(Box box, float scale);
// The panel's grid of one kind, at the cursor and the panel's width (the lens scrolls sideways).
void panel_why_grid(ViewContext& ctx, WhyKind kind);
// Explain and Compare past kExplainCells tokens (core/figure/explain_rows.hpp): one query's row
// of each reading. Whether a trace reads that way; its query (a token pinned in Lines, a heatmap
// cell's row, else the last); the toolbar's stepper of it and the log scale (the heatmap's
// setting); the strips in [min, max) as
// draw_panels draws the maps (a child window that scrolls, strips probed "<probe>.strip.K"), a
// hovered column's keys in a tooltip and, when `clickable` (self-attention), a click reading the
// strongest key's own row.
struct RowsInput;
bool reads_rows(const Trace& trace);
int row_query(const AppState& st, int T_q);
void rows_toolbar(ViewContext& ctx, int T_q);
void draw_rows(ViewContext& ctx, RowsInput& in, ImVec2 min, ImVec2 max, const char* probe, bool clickable);
// Their words when there is nothing to draw: centred near the top, probed as "<probe>.note".
void draw_panels_note(ViewContext& ctx, Str note, ImVec2 min, ImVec2 max, const char* probe);
// The token whose attention the Image view lays over the picture: the one pointed at or pinned,
// else the [CLS] (SigLIP, which has none: the middle patch); −1 for a figure without a picture.
int picture_query(const AppState& st);
// A vision model's patches in `drawn` (the figure's trace, or the view's copy of it), for labels
// with their pieces of the picture; none (rows 0) for a figure without a picture.
PatchCrops patch_crops(const AppState& st, const Trace& drawn);
// Their Item::Picture on `dl`: the piece of `picture` (the live run's, kept alive by the caller
// while its texture is drawn: its address is the texture's key).
void draw_picture_part(ViewContext& ctx, ImDrawList* dl, const Image& picture, const Item& it);
// The Image view's input in `box` at UI scale `scale` (no picture: nullopt): the picture's
// grid, the query's row of the heatmap's map (its head or the heads' mean), the caption and the
// legend in the UI's language. Its SVG lays out the same.
std::optional<ImageInput> image_view_input(const AppState& st, Box box, float scale);
// The toolbar's layer and head (or the heads' mean) that the heatmap and the Image view share
// (heatmap_view.cpp).
void heatmap_head_toolbar(ViewContext& ctx);
// The status bar's hint: what the pointer does in the view shown (its cells, numbers, points).
const char* view_hint(const AppState& st);

// Text helpers shared by the views.
// Draws text rotated by -90° (reading upwards) with its start at `bottom_left`.
void add_text_upwards(ImDrawList* draw_list, ImFont* font, float size, ImVec2 bottom_left, ImU32 color,
                      const char* text);
// The widest label of a trace's tokens (its queries, and its keys when asked) in a font at its
// size, measured again only when the font or its size changes; clear() for a new trace.
struct LabelWidth {
    const ImFont* font = nullptr;
    float size = 0.0f, width = 0.0f;
    void clear() { font = nullptr; }
    float of(ImFont* small, const Trace& trace, bool keys);
};
// A token in prose: “the”, quoted, without the spaces it carries (as the figure's labels show it).
std::string quoted_token(const std::string& token);
// The kind of attention in the UI language ("self" / "自注意力").
inline const char* ui_kind_name(Lang lang, AttentionKind kind) {
    return tr(lang, kind == AttentionKind::Self ? Str::NameSelf : kind == AttentionKind::Masked ? Str::NameMasked : Str::NameCross);
}

}  // namespace attn
