// svg.hpp: the lines, heatmap and Q–K space figures as SVG (vector, for print): the picture a PNG export of
// the same figure shows, at the same size. Pure string building: the browser's Export menu and
// `attnviz render --svg` share it.
//
// No geometry, colour or line style of its own: the figure is framed by figure_frame() (the
// title over the view's box, as web/ui/panels.cpp draws a figure alone), laid out by
// lines_layout.hpp / heatmap_layout.hpp with the caller's TextMeasure (the screen's fonts, so
// that labels and boxes have the screen's widths), and every item of the layout becomes an
// element. Tokens are real <text> (any script; the viewer's fonts draw them, DejaVu Sans
// first, as on screen); the heatmap has one <rect> per visible cell. Elements carry classes
// so that tests and scripts can find them:
//   lines:   g.lines > line.line (data-head/q/k/w), rect.token.query|key (data-index),
//            text.token-label, text.number, text.number.masked, rect.rail, text.rail-label,
//            rect.head-swatch, text.head-label; a vision model's patch boxes hold svg.patch (data-index)
//   heatmap: g.cells > rect.cell (data-q/k/v) or rect.cell.masked (fill: the hatch pattern;
//            rect.cell.masked.window outside a sliding window: the window's pattern) or
//            rect.cell.sink (the first key left out by the sink option), text.row-label,
//            text.col-label (data-index), text.number, g.legend (text.tick, text.window-label,
//            text.sink-label …); a vision model's patch labels beside svg.patch (data-index),
//            their piece of the picture (defs: image#picture)
//   qk:      rect.token.query|key (data-index; a query's rect is round), text.token-label,
//            line.item (the selected query's lines, data-index the key), text.caption (what the
//            plane is, the normalization, r), rect.item (every head's panel), text.head-label
//   why:     text.caption (each grid's), text.row-label, text.col-label, text.number (a cell's
//            value or the lens' token), rect.item (a cell; a number's cell outlined: rect.item-outline)
//   both:    text.title, text.heading / text.caption; an outline-only rect's class ends in -outline.
#pragma once

#include "figure_layout.hpp"
#include "heatmap_layout.hpp"
#include "lines_layout.hpp"
#include "qk_layout.hpp"
#include "scene.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace attn {

enum class SvgView { Lines, Heatmap, Qk };

// The figure's words, in the UI's language (English defaults, as the UI's table).
struct SvgLabels {
    std::string title;                // "" = no title line
    LinesWords lines;
    HeatmapWords heatmap;
    QkWords qk;
};

struct SvgOptions {
    SvgView view = SvgView::Heatmap;
    bool dark = false;                // the dark theme's colours
    // The picture: width × height in px at UI scale `scale` (the size `attnviz render` and the
    // PNG export draw), text measured by `measure` (nullptr: an estimate from the fonts' average
    // advance, for callers without fonts; boxes then fit the text only roughly).
    float width = 1200.0f, height = 800.0f, scale = 1.0f;
    const TextMeasure* measure = nullptr;
    // lines (LinesOptions)
    std::vector<bool> head_visible;   // one per head; empty = all visible
    float threshold = 0.0f;           // hide lines below this weight
    int top_k = 0;                    // keys per query; 0 = auto, as on screen (lines_auto_top_k)
    int selected_query = -1;          // a selected token keeps only its lines (as on screen)
    int selected_key = -1;
    std::vector<int> query_set;       // queries gathered by shift-click: their summed attention
    LinesWeights* lines_weights = nullptr;  // the screen's lists for this trace, if at hand (else built)
    // heatmap (HeatmapOptions)
    int head = 0;                     // -1 = mean over heads
    int colormap = 0;                 // index into colormaps()
    bool scores = false;              // the scaled scores instead of the weights
    bool log = false;                 // weights on the log scale (core/figure/display_map.hpp), as on screen
    bool show_numbers = true;         // values in cells that are big enough
    float zoom = 1.0f, view_x = 0.0f, view_y = 0.0f;  // as on screen: the visible part only
    bool sink_hidden = false;         // the trace is without_sink()'s (sink.hpp): key 0 drawn flat, in the legend
    PatchCrops crops;                 // a vision model's patches: their labels with their pieces of the picture (heatmap, lines),
    const std::uint8_t* crops_rgb = nullptr;  // which is crops.width × crops.height × 3 bytes (svg.patch > use #picture)
    // Q–K space (qk_layout.hpp): the head is `head` above, the query selected_query's
    QkProjection qk = QkProjection::Pca;
    SvgLabels labels;
};

// An SVG is one element per cell or line: past kSvgMaxElements (a 512×512 heatmap, or as many
// lines) it stops being a useful file (hundreds of MB for a 4096² heatmap). Returns "" when the
// figure fits, else one line saying why (the PNG export has no such limit).
constexpr long long kSvgMaxElements = 512LL * 512;
std::string svg_size_problem(const Trace& trace, const SvgOptions& options);

// The whole SVG document (UTF-8). Expects a trace from compute() (or any trace whose matrices
// match its token lists); an empty trace gives an empty figure of the same size.
std::string write_svg(const Trace& trace, const SvgOptions& options);
// A picture under the items (the Picture view's, image_layout.hpp): 8-bit RGB, the top row
// first, stretched over `box`; written as <image class="picture"> holding a PNG (a data: URI).
struct SvgRaster {
    Box box;
    const std::uint8_t* rgb = nullptr;  // width × height × 3
    int width = 0, height = 0;
};
// The same document around items a view laid out in the frame's box itself (the Why view's grids,
// why_layout.hpp; the Picture view's overlay, image_layout.hpp, over the pictures `under`: the
// picture, and a vision-language model's global view): options' size, scale, measure, theme and
// title; data-view="`view`".
std::string write_items_svg(const std::vector<Item>& items, const SvgOptions& options, const std::string& view,
                            const std::vector<SvgRaster>& under = {});

// Text made safe for XML character data and attribute values: & < > " ' escaped, characters
// XML 1.0 forbids (controls other than tab / newline / CR, U+FFFE/F) and invalid UTF-8 → U+FFFD.
std::string xml_escape(const std::string& text);

// The estimate used when SvgOptions::measure is null: DejaVu Sans' average advance (0.62 em,
// a full em for East Asian wide characters) at the UI's font sizes (web/ui/fonts.cpp).
struct EstimateMeasure : TextMeasure {
    float scale = 1.0f;
    explicit EstimateMeasure(float s) : scale(s) {}
    float width(std::string_view text, FontRole role) const override;
    float size(FontRole role) const override;
};

}  // namespace attn
