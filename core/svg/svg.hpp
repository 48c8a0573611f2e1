// svg.hpp: the lines and heatmap figures as SVG (vector, for print), from a trace and the view
// options. Pure string building: the browser's Export menu and `attnviz render --svg` share it.
//
// The picture follows the on-screen figure: the same colormaps (colormaps.hpp), head colours,
// token layout, line width and opacity from the weight, legend and hatched masked cells.
// Tokens are real <text> (any script; the viewer's fonts draw them); the heatmap has one
// <rect> per cell. Elements carry classes so that tests and scripts can find them:
//   lines:   g.lines > line.line (data-head/q/k/w), rect.token.query|key, text.token-label
//   heatmap: rect.cell (data-q/k/v) or rect.cell.masked (fill: the hatch pattern),
//            text.row-label, text.col-label, text.number, g.legend
#pragma once

#include "scene.hpp"

#include <string>
#include <vector>

namespace attn {

enum class SvgView { Lines, Heatmap };

// The figure's fixed words, in the UI's language (English defaults, as the UI's table).
struct SvgLabels {
    std::string title;                                   // "" = no title line
    std::string queries = "Queries", keys = "Keys";      // lines: column headings
    std::string target_queries = "Target (decoder) \xc2\xb7 queries";
    std::string source_keys = "Source (encoder) \xc2\xb7 keys";
    std::string caption_keys = "keys \xe2\x86\x92", caption_queries = "queries \xe2\x86\x93";  // heatmap axes
    std::string caption_source_keys = "keys: source (encoder) \xe2\x86\x92";
    std::string caption_target_queries = "queries: target (decoder) \xe2\x86\x93";
    std::string masked = "masked";
    std::string weight = "weight", score = "score";      // legend titles
    std::string head = "head %d";                        // heads legend (one %d)
};

struct SvgOptions {
    SvgView view = SvgView::Heatmap;
    bool dark = false;                // the dark theme's colours
    // lines
    std::vector<bool> head_visible;   // one per head; empty = all visible
    float threshold = 0.0f;           // hide lines below this weight
    int top_k = 0;                    // strongest keys per query; 0 = all
    int selected_query = -1;          // a selected token keeps only its lines (as on screen)
    int selected_key = -1;
    // heatmap
    int head = 0;                     // -1 = mean over heads
    int colormap = 0;                 // index into colormaps()
    bool scores = false;              // the scaled scores instead of the weights
    bool log = false;                 // weights on the log scale (core/figure/display_map.hpp), as on screen
    bool show_numbers = true;         // values in cells that are big enough
    SvgLabels labels;
};

// An SVG is one element per cell or line: past kSvgMaxElements (a 512×512 heatmap, or as many
// lines) it stops being a useful file (hundreds of MB for a 4096² heatmap). Returns "" when the
// figure fits, else one line saying why (the PNG export has no such limit).
constexpr long long kSvgMaxElements = 512LL * 512;
std::string svg_size_problem(const Trace& trace, const SvgOptions& options);

// The whole SVG document (UTF-8). Expects a trace from compute() (or any trace whose matrices
// match its token lists); an empty trace gives a small empty figure.
std::string write_svg(const Trace& trace, const SvgOptions& options);

// Text made safe for XML character data and attribute values: & < > " ' escaped, characters
// XML 1.0 forbids (controls other than tab / newline / CR, U+FFFE/F) and invalid UTF-8 → U+FFFD.
std::string xml_escape(const std::string& text);

}  // namespace attn
