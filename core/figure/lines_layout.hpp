// lines_layout.hpp: the lines view (the head view) laid out without GL or ImGui. Queries in the
// left column, keys in the right one (for cross attention the target / decoder tokens on the
// left and the source / encoder tokens on the right), one line per query-key pair and visible
// head, its opacity and width from the weight. web/ui/lines_view.cpp draws the layout (ImGui
// and the GPU's instanced lines) and feeds the pointer back into it; core/svg writes the same
// layout as SVG.
//
// Three steps, because the pointer needs the geometry and the rest needs the pointer:
//   1. lay_out_lines(input, measure, widths)   the columns, rows and fonts (LinesLayout)
//   2. the caller finds the token under the pointer (LinesLayout::hit) and settles the selection
//   3. choose_lines(...)  the lines to draw;  lines_items(...)  everything else, in draw order
//
// At scale nothing reads a T_q×T_k matrix (a long trace has none): each head's strongest keys
// per query and queries per key come from TopKeys lists (top_keys.hpp) held by LinesWeights,
// built a few blocks of rows at a time on screen, and a selected query's row or a query set's
// sum is computed on demand. Up to kTopAllUpTo tokens a side every line is drawn; past it each
// query keeps its kLinesAutoTopK strongest keys unless the user picks another k. When a token
// no longer gets a readable row (12 px at scale 1), the columns become compact rails: every
// n-th token labelled, plus the selection and its strongest partners.
//
// [SECTION] Constants and options
// [SECTION] Weights (top-k lists, rows on demand)
// [SECTION] Geometry
// [SECTION] Lines
// [SECTION] Items
#pragma once

#include "figure_layout.hpp"
#include "top_keys.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace attn {

// [SECTION] Constants and options --------------------------------------------------------------

// The lines per query past kTopAllUpTo keys when the user chose no k: enough to follow where a
// query looks (the strongest keys carry most of a peaked softmax), and 3·T·heads lines stay a
// figure of strands rather than a solid fill at thousands of tokens.
inline constexpr int kLinesAutoTopK = 3;
inline int lines_top_k_max(const Trace& trace) { return std::max(1, top_keys_capacity(trace.T_k())); }
inline int lines_auto_top_k(const Trace& trace) {
    return trace.T_k() <= kTopAllUpTo ? trace.T_k() : std::min(kLinesAutoTopK, trace.T_k());
}
// Labels in the compact columns of the selected token's strongest partners.
inline constexpr int kPartnerLabels = 8;
// The overview draws at most this many lines, the strongest of the top-k lists: each line is a
// quad the width of the figure, and in a software-rendered WebGL (SwiftShader) 100 K of them
// take hundreds of ms a frame and fill the figure solid.
inline constexpr int kMaxOverviewLines = 32768;

// The figure's fixed words, in the UI's language (English defaults, as web/state/strings.cpp).
struct LinesWords {
    std::string queries = "Queries", keys = "Keys";
    std::string target_queries = "Target (decoder) \xc2\xb7 queries";
    std::string source_keys = "Source (encoder) \xc2\xb7 keys";
    std::string masked = "masked";
    std::string head = "head %d";                                                // one %d
    std::string building = "finding each query's strongest keys\xe2\x80\xa6 %d%%";  // one %d
    std::string strongest = "showing the strongest %d lines of each query's top %d keys";
    std::string top_k = "showing each query's top %d keys (%lld lines in all)";     // %d, %lld
    std::string sum_of = "sum of %zu queries";                                    // one %zu
};

// What the figure and the view's options give the layout.
struct LinesInput {
    const Trace* trace = nullptr;
    std::vector<int> visible;    // the heads shown, ascending
    float threshold = 0.0f;      // lines below this weight hide
    int top_k = 0;               // keys per query, 0 = auto (lines_auto_top_k)
    Box box;                     // the view's box
    float scale = 1.0f;          // UI scale
    bool legend = false;         // the heads legend along the bottom (a figure drawn alone: PNG, SVG)
    bool dark = true;
    float ready = 1.0f;          // share of the visible heads' lists built (the note says so)
    PatchCrops crops;            // a vision model's: a patch's box shows its piece of the picture before its name (not compact)
    LinesWords words;
};

// The token the pointer is on or the pinned one, and the queries gathered by shift-click.
struct LinesSelection {
    int query = -1, key = -1;    // at most one of them
    bool pinned = false;         // pinned (outlined) rather than hovered
    std::vector<int> set;        // queries whose attention is summed; non-empty wins over query/key
};

// The widest query and key label in a font (a pass over every token: callers cache it).
struct LabelWidths {
    float q = 0.0f, k = 0.0f;
};
LabelWidths label_widths(const Trace& trace, FontRole font, const TextMeasure& measure);

// [SECTION] Weights (top-k lists, rows on demand) ----------------------------------------------

// One figure's lists and rows: what the lines view keeps between frames and the SVG builds at
// once. Tied to the trace it was made for (the trace must outlive it).
class LinesWeights {
public:
    explicit LinesWeights(const Trace& trace);
    const Trace& trace() const { return *trace_; }

    bool all_done() const;
    // Builds visible heads first, then the others, for about `budget_seconds`; everything when
    // budget_seconds <= 0 (a figure drawn in one frame).
    void advance(const std::vector<int>& visible, double budget_seconds);
    void build_all() { advance({}, 0.0); }
    float progress(const std::vector<int>& visible) const;  // of the visible heads' lists
    const TopKeys& top(int head) const { return top_[static_cast<size_t>(head)]; }

    // Query q's weights for a head (1×T_k), kept while q stays the same.
    const std::vector<float>& row(int head, int q);
    // Σ of the set's rows per head (heads × T_k), kept while the set stays the same.
    const std::vector<RowVector>& summed(const std::vector<int>& set);

private:
    const Trace* trace_;
    int T_q_ = 0, T_k_ = 0, heads_ = 0;
    std::vector<TopKeys> top_;                 // per head
    int row_query_ = -1;
    std::vector<std::vector<float>> rows_;     // heads × T_k
    std::vector<int> sum_set_;
    std::vector<RowVector> sums_;              // heads × T_k
};

// [SECTION] Geometry ---------------------------------------------------------------------------

// The font of the token labels: small in compact rails, the title font when rows are tall.
FontRole lines_token_font(const LinesInput& input, const TextMeasure& measure);

struct LinesLayout {
    const Trace* trace = nullptr;
    int T_q = 0, T_k = 0;
    std::vector<int> visible;
    float s = 1.0f;
    Box box;
    bool compact = false;        // rails instead of a box per token
    bool legend = false;
    FontRole font = FontRole::Body, number_font = FontRole::Body;
    float fs = 0.0f;             // the token font's size
    float pad = 0.0f;            // inside a token box, left and right of its label
    float maxw_q = 0.0f, maxw_k = 0.0f;  // widest labels (capped at 160 s when compact; with a patch's piece of the picture)
    PatchCrops crops;            // LinesInput's, not compact
    float crop_w = 0.0f;         // a patch's piece of the picture (box_h − 4 s square) and its gap
    float num_w = 0.0f;          // one weight beside a token ("0.00" and a gap)
    float weights_w = 0.0f;      // the column of weights beside a token
    float rail_w = 0.0f;         // compact: the rail's width
    float header_h = 0.0f, avail_h = 0.0f;
    bool titles_stacked = false; // the columns' titles do not fit side by side (a phone): the keys' goes below
    int note_line = 0;           // the header's line of the note above the lines (0: between the titles)
    float row_q = 0.0f, row_k = 0.0f, box_h = 0.0f;
    float xq_right = 0.0f;       // right edge of the query boxes (of the rail, compact)
    float xk_left = 0.0f;        // left edge of the key boxes (of the rail)
    float top_q = 0.0f, top_k = 0.0f;
    float q_numbers_x = 0.0f, k_numbers_x = 0.0f;  // where the weights beside each column start
    float head_step = 0.0f;      // heads' lines side by side, this far apart
    int overview_k = 0, focus_k = 0;  // keys per query without a selection, and for a selected query
    LinesWords words;
    bool dark = true;
    float ready = 1.0f;

    float yq(int i) const { return top_q + (static_cast<float>(i) + 0.5f) * row_q; }
    float yk(int j) const { return top_k + (static_cast<float>(j) + 0.5f) * row_k; }
    // A token's box for a label `text_w` wide: left of the query rail, right of the key rail.
    Box query_box(int i, float text_w) const;
    Box key_box(int j, float text_w) const;
    // The token under (x, y): the whole row of a column, so short tokens are easy to hit; in a
    // compact column the nearest token. side: 0 none, 1 query, 2 key.
    struct Hit {
        int side = 0, index = -1;
    };
    Hit hit(float x, float y) const;
};

// `widths` in lines_token_font's font (label_widths). Geometry only: no lines, no items.
LinesLayout lay_out_lines(const LinesInput& input, const TextMeasure& measure, const LabelWidths& widths);

// [SECTION] Lines ------------------------------------------------------------------------------

// One line as the GPU draws it (web/gpu/renderer.hpp LineInstance is this): end points in
// display units, colour with its alpha, width in display units.
struct LineSeg {
    float x0, y0, x1, y1;
    float r, g, b, a;
    float width;
};
// Which weight a line shows (the SVG's data attributes).
struct LineRef {
    int head = 0, q = 0, k = 0;
    float w = 0.0f;
};
// The lines of the figure, in draw order. Keys per query: the user's k, else all up to
// kTopAllUpTo keys and kLinesAutoTopK past it. A selected query or a query set shows its lists
// whole (or the user's k), a selected key its strongest queries. Past kMaxOverviewLines the
// strongest stay. `refs` (optional) gets one entry per line. Returns how many lines the
// overview would draw without that budget.
long long choose_lines(const LinesLayout& layout, const LinesSelection& sel, const LinesWeights& weights,
                       float threshold, std::vector<LineSeg>& lines, std::vector<LineRef>* refs = nullptr);

// [SECTION] Items ------------------------------------------------------------------------------

// Everything but the lines, in draw order, with an Item::Lines where the lines go: the column
// headings, the note above the lines, the tokens (tinted by the selection's weights, with the
// weights beside the other column), the rails, ticks and partner labels of a compact figure,
// and the heads legend. Also the rectangles the tests and the pointer use per token
// (query_rects / key_rects: the boxes, or the rows of a rail).
struct LinesItems {
    std::vector<Item> items;
    std::vector<Box> query_rects, key_rects;
};
LinesItems lines_items(const LinesLayout& layout, const LinesSelection& sel, LinesWeights& weights,
                       const TextMeasure& measure, int lines_drawn, long long overview_lines);

}  // namespace attn
