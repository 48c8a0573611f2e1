// heatmap_layout.hpp: the heatmap view laid out without GL or ImGui. Rows are queries, columns
// keys; the map fits its box at zoom 1 and zooming enlarges the cells inside the same box.
// web/ui/heatmap_view.cpp draws the layout (the cells as GPU tiles, the rest with ImGui) and
// feeds zoom, pan and the pointer back into it; core/svg writes the same layout as SVG (the
// cells as one rect each).
//
//   1. lay_out_heatmap(input, measure, widths)  grid, cell size, labels' room, legend (HeatmapLayout)
//   2. the caller zooms and pans (HeatmapLayout::set_view) and finds the cell under the pointer
//   3. heatmap_items(...)  captions, labels, numbers, outlines, legend, in draw order
//
// [SECTION] Inputs
// [SECTION] Geometry
// [SECTION] Items
#pragma once

#include "figure_layout.hpp"
#include "lines_layout.hpp"  // LabelWidths

#include <string>
#include <vector>

namespace attn {

// [SECTION] Inputs -------------------------------------------------------------------------------

// The figure's fixed words, in the UI's language (English defaults, as web/state/strings.cpp).
struct HeatmapWords {
    std::string caption_keys = "keys \xe2\x86\x92", caption_queries = "queries \xe2\x86\x93";
    std::string caption_source_keys = "keys: source (encoder) \xe2\x86\x92";
    std::string caption_target_queries = "queries: target (decoder) \xe2\x86\x93";
    std::string masked = "masked";
    std::string weight = "weight", score = "score";  // legend titles
    // Legend entries of a sliding window's mask (two lines: what, then "W = 4096") and of the
    // first key left out (the attention-sink option: what, then what became of the rows).
    std::string outside_window = "outside the window", window_size = "W = %d";
    std::string sink_hidden = "first token hidden", sink_renormalized = "rows renormalized";
};

struct HeatmapInput {
    const Trace* trace = nullptr;
    Box box;                     // the view's box
    float scale = 1.0f;          // UI scale
    bool dark = true;
    bool scores = false;         // the legend's title: the scaled scores rather than the weights
    bool any_masked = false;     // the legend shows the hatch
    bool sink_hidden = false;    // the trace is without_sink()'s: key 0 is drawn flat and the legend says so
    float zoom = 1.0f, view_x = 0.0f, view_y = 0.0f;  // HeatmapOptions: clamped by the layout
    PatchCrops crops;            // a vision model's: each patch's label has its piece of the picture beside it
    HeatmapWords words;
};

// [SECTION] Geometry -----------------------------------------------------------------------------

struct HeatmapLayout {
    const Trace* trace = nullptr;
    int T_q = 0, T_k = 0;
    float s = 1.0f;
    Box box;
    bool dark = true, scores = false, any_masked = false;
    bool window_legend = false;          // the map's sliding window masks some cell (window_bites)
    bool sink_hidden = false;
    HeatmapWords words;
    float fs = 0.0f, ss = 0.0f;          // label (body) and small font sizes
    float maxw_q = 0.0f, maxw_k = 0.0f;  // widest labels in the body font
    float label_w = 0.0f;                // the row labels' column, left of the grid
    PatchCrops crops;                    // HeatmapInput's
    float crop_w = 0.0f;                 // a patch's piece of the picture (a label's height square) and its gap
    float title_h = 0.0f;                // the axis captions' line above the column labels
    bool captions_stacked = false;       // the queries' caption is wider than the row labels' column
                                         // (a narrow box): it gets a line of its own under the keys'
    float header_h = 0.0f;               // the column labels' room above the grid
    bool upright = true;                 // column labels upright (they fit a cell), else turned to read upwards
    bool big = false;                    // a line below the map states its memory
    float top = 0.0f;                    // the captions' line
    float cell0 = 0.0f;                  // a cell at zoom 1
    Box grid;                            // the map's box (the same at every zoom)
    float max_zoom = 1.0f;               // cells grow to at most 96 px at scale 1
    // The view: zoom and the key / query (fractional, in cells) at the grid's top-left corner.
    float zoom = 1.0f, view_x = 0.0f, view_y = 0.0f;
    float cell = 0.0f;                   // cell0 · zoom
    int row0 = 0, row1 = 0, col0 = 0, col1 = 0;  // visible queries [row0, row1), keys [col0, col1)
    // Legend: the colormap bar, five ticks on it, the masked swatch below when something is
    // masked, then the window's and the hidden sink's when they are there.
    Box bar, swatch, window_swatch, sink_swatch;
    float fit_x = 0.0f, fit_y = 0.0f;    // the "Fit" button's place below the legend (zoomed in, on screen)
    float footer_y = 0.0f;               // the progress / memory line below the grid

    // Left edge of key k, top edge of query q (fractional indices work: k + 0.5 is a centre).
    float cell_x(float k) const { return grid.x0 + (k - view_x) * cell; }
    float cell_y(float q) const { return grid.y0 + (q - view_y) * cell; }
    // Clamps the view to the map (zoom 1 … max_zoom, no empty margin) and finds what it shows.
    void set_view(float zoom, float view_x, float view_y);
    // The cell under (x, y), clamped to the map (call only for points in the grid).
    int query_at(float y) const;
    int key_at(float x) const;
    // The rectangles the tests point at: a query's row of labels, a key's column of labels.
    Box query_rect(int q) const { return {grid.x0 - label_w, cell_y(static_cast<float>(q)), grid.x0, cell_y(static_cast<float>(q)) + cell}; }
    Box key_rect(int k) const { return {cell_x(static_cast<float>(k)), grid.y0 - header_h, cell_x(static_cast<float>(k)) + cell, grid.y0}; }
};

// A masked cell of a sliding-window map (Trace::window = W) that the window masks: its key is
// W or more before the query (k ≤ q − W), rather than after it (the causal mask).
inline bool outside_window(const Trace& tr, int q, int k) {
    return tr.window > 0 && k <= q - tr.window && tr.allowed.size() > 0 && tr.allowed(q, k) == 0;
}
// Whether the window masks any cell of the map (some query is W or more past the first key):
// only then does the legend have its entry.
inline bool window_bites(const Trace& tr) {
    return tr.window > 0 && tr.T_q() > tr.window && tr.T_k() > 0 && outside_window(tr, tr.window, 0);
}

// Whether some cell is masked, for the legend's hatch: with `sink_hidden` the first key's column
// (left out by the sink option, sink.hpp) does not count, it has an entry of its own.
bool any_masked(const Trace& tr, bool sink_hidden);

// `widths` in the body font (label_widths(trace, FontRole::Body, measure)).
HeatmapLayout lay_out_heatmap(const HeatmapInput& input, const TextMeasure& measure, const LabelWidths& widths);

// [SECTION] Items --------------------------------------------------------------------------------

// The selection as the heatmap shows it: the pointer's cell (its row and column labels marked,
// the cell outlined), else the pinned token's row or column outlined.
struct HeatmapSelection {
    int query = -1, key = -1;            // the pinned (or hovered) token's row / column
    int hover_q = -1, hover_k = -1;      // the cell under the pointer
};

// The values the numbers and the legend show.
struct HeatmapValues {
    int colormap = 0;                    // index into colormaps()
    float lo = 0.0f, hi = 1.0f;          // the colormap's range
    bool log = false;                    // weights on the log scale (display_map.hpp)
    bool range_known = true;             // false while the first pass of a scores map runs
    bool show_numbers = true;
    // The visible rows' values, (row1 − row0) × T_k from row row0; nullptr: no numbers.
    const float* rows = nullptr;
};

// Items in draw order, with an Item::Grid where the cells go; `clips` are the boxes items are
// clipped to: 0 the grid, 1 the row labels, 2 the column labels.
struct HeatmapItems {
    std::vector<Item> items;
    std::vector<Box> clips;
    int labels_q = 0, labels_k = 0, numbers = 0;  // drawn (the browser tests read them)
};
HeatmapItems heatmap_items(const HeatmapLayout& layout, const HeatmapSelection& sel, const HeatmapValues& values,
                           const TextMeasure& measure);

// Whether the cells are big enough for their values (the label font in big cells, else the small one).
bool heatmap_numbers_fit(const HeatmapLayout& layout, const TextMeasure& measure);

// Fewer decimals for bigger numbers, so that every value fits its cell ("0.25", "12.5", "130").
std::string heatmap_value_text(float x);

}  // namespace attn
