// model_layout.hpp: the model view (an imported model's layers × heads of small heatmaps, like
// BertViz's model view) laid out without GL or ImGui: row labels on the left, head numbers on
// top, square thumbnails with gaps and each head's tags under its thumbnail, the weight scale on
// the right (under the grid where the view is too narrow for both). When thumbnails would be
// smaller than 30 px (at scale 1) the grid scrolls instead of shrinking further. Query heads
// that share their keys and values (grouped-query attention: heads h with the same
// h / (heads / kv_heads)) are framed together in every layer's row, a wider gap between groups.
// web/ui/model_view.cpp draws the items (the thumbnails from one atlas texture on the GPU),
// the hover's tooltip and the click that opens a map.
//
// [SECTION] Inputs
// [SECTION] Geometry
// [SECTION] Items
#pragma once

#include "figure_layout.hpp"

#include <string>
#include <vector>

namespace attn {

// [SECTION] Inputs -------------------------------------------------------------------------------

struct ModelWords {
    std::string heads = "heads \xe2\x86\x92", layers = "layers \xe2\x86\x93";  // captions
    std::string layer = "layer %d";                                             // row labels (one %d)
    std::string weight = "weight", masked = "masked";                           // legend
    std::string kv_shared = "K, V shared";                                      // legend: a group's frame
    std::string outside_window = "outside the window";                          // legend: a sliding window's cells
    std::string rows_scaled = "row's max";                                  // legend: the bar's top with rows_scaled
};

// Which maps the other views show: one head, an aggregate of the chosen layers × heads, or the
// rollout up to a layer (web/state/import_state.hpp ImportShow).
enum class ModelShow { Head, Aggregate, Rollout };

// What a head does, written under its thumbnail: "prev 0.93", or `brief` ("prev .93") where the
// thumbnail is too narrow for `text`; neither fits: not written (the tooltip has every score).
struct HeadTag {
    std::string text, brief;
};

struct ModelInput {
    int layers = 0, heads = 0;
    float x0 = 0.0f, y0 = 0.0f;    // the content's top-left (it scrolls)
    Box view;                      // the visible box: thumbnails far outside it are left out
    float scale = 1.0f;
    bool dark = true;
    bool causal = false;           // the stack is a decoder's: the legend shows the hatch
    bool window = false;           // some layer's sliding window masks cells: the legend shows its stripes
    bool rows_scaled = false;      // each thumbnail row scaled to its largest weight: the legend says so
    ModelShow show = ModelShow::Head;
    int layer = 0, head = 0;       // the map shown (Head), the layer rolled out to (Rollout)
    std::vector<bool> layers_on, heads_on;  // the aggregate's choice (Aggregate)
    std::vector<std::vector<HeadTag>> tags;  // per thumbnail (layer · heads + head), one line each, or empty: none
    std::vector<bool> off;         // per thumbnail, or empty: knocked out (a live model's experiment)
    int kv_heads = 0;              // the stack's K/V heads; 0, or heads: none shared (no frames)
    ModelWords words;
};

// [SECTION] Geometry -----------------------------------------------------------------------------

struct ModelLayout {
    int layers = 0, heads = 0;
    float s = 1.0f;
    float label_w = 0.0f, header_h = 0.0f, legend_w = 0.0f, margin = 0.0f;
    float cell = 0.0f, gap = 0.0f;     // a thumbnail's side, the gap between two
    // Grouped-query attention: query heads per K/V head (1: none shared), the frame's distance
    // from its thumbnails, and the gaps between two groups and between two rows (wide enough
    // for two frames; `gap` when there are no groups).
    int group = 1;
    float frame_pad = 0.0f, group_gap = 0.0f, row_gap = 0.0f;
    Box grid;                          // all thumbnails
    Box view;
    float content_w = 0.0f, content_h = 0.0f;  // the scrolled extent
    float tag_h = 0.0f;                // the tags' lines under each thumbnail (0: no tags)
    bool legend_below = false;         // a narrow view (a phone's): the legend under the grid, not beside it
    Box bar, swatch, window_swatch, group_swatch;  // legend: the weight scale, the masked and window swatches, a group's frame

    Box thumb(int layer, int head) const {
        const float x = grid.x0 + head * (cell + gap) + static_cast<float>(head / group) * (group_gap - gap);
        const float y = grid.y0 + layer * (cell + tag_h + row_gap);
        return {x, y, x + cell, y + cell};
    }
    // The frame around the K/V group `g` (heads g·group … g·group + group − 1) in a layer's row,
    // its tags included.
    Box group_frame(int layer, int g) const {
        const Box a = thumb(layer, g * group), b = thumb(layer, g * group + group - 1);
        return {a.x0 - frame_pad, a.y0 - frame_pad, b.x1 + frame_pad, b.y1 + tag_h + frame_pad};
    }
    // Whether a thumbnail is near enough the visible box to be drawn.
    bool near_view(int layer) const {
        const Box b = thumb(layer, 0);
        return !(b.y1 < view.y0 - cell || b.y0 > view.y1 + cell);
    }
    // The thumbnail under (x, y): {layer, head}, or {−1, −1} (the gaps are no thumbnail).
    struct Hit {
        int layer = -1, head = -1;
    };
    Hit hit(float x, float y) const;
};

ModelLayout lay_out_model(const ModelInput& input, const TextMeasure& measure);

// [SECTION] Items --------------------------------------------------------------------------------

// Captions, head numbers and layer labels (the chosen ones in the text colour), then per
// thumbnail an Item::Grid (index layer · heads + head) with a veil over those outside the
// aggregate, a veil and a cross over those knocked out (ItemRole::Knockout), a thin outline
// and its tag (a chip at the bottom left), the K/V groups' frames (ItemRole::GroupFrame, index
// layer · groups + group), the accent around the map the other views show, the hovered
// thumbnail's outline, and the legend (title, Item::Colormap, ticks 0 / 0.5 / 1, the hatch, a
// group's frame).
std::vector<Item> model_items(const ModelLayout& layout, const ModelInput& input, const ModelLayout::Hit& hover,
                              const TextMeasure& measure);

}  // namespace attn
