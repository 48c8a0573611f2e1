// steps_layout.hpp: the Steps view laid out without GL or ImGui: the pipeline of steps.hpp, one
// labelled matrix per step (X → Q, K, V → QKᵀ → ÷√d_k → + mask → softmax → ·V → concat → ·W_o,
// and where a live model has them RMSNorm(Q), p·θ_i, Q′ = RoPE(Q), the same for K, and
// cap·tanh(s/cap)), left to right in lines that wrap at the view's width. Every matrix shows at most
// kStepsMaxShown rows and columns, its numbers in cells coloured by the colormap, its title,
// shape, formula and a caption (the seeds' words). web/ui/steps_view.cpp draws the items and
// the tooltip; hovering a number outlines the rows and columns it comes from (steps_marks).
//
//   1. lay_out_steps(input, measure)  the blocks (StepsLayout); the caller scrolls and hit-tests
//   2. steps_items(layout, input, hover, measure)  everything drawn, in order
//
// [SECTION] Inputs
// [SECTION] Geometry
// [SECTION] Items
#pragma once

#include "figure_layout.hpp"
#include "steps.hpp"

#include <algorithm>
#include <array>
#include <string>
#include <utility>
#include <vector>

namespace attn {

// [SECTION] Inputs -------------------------------------------------------------------------------

inline constexpr int kStepsMaxShown = 16;  // rows / columns drawn per matrix; the shape gives the full size

// Rows of this step are keys (K and its stages, V, X_kv) rather than queries (the angles' rows
// are positions: a self-attention's tokens); columns are keys (the T_q×T_k maps).
inline bool step_rows_are_keys(StepKind k) {
    return k == StepKind::K || k == StepKind::KNormed || k == StepKind::KRotated || k == StepKind::V || k == StepKind::InputKv;
}
inline bool step_cols_are_keys(StepKind k) {
    return k == StepKind::Scores || k == StepKind::Scaled || k == StepKind::Capped || k == StepKind::Masked ||
           k == StepKind::Weights;
}

struct StepsInput {
    const Trace* trace = nullptr;
    const std::vector<Step>* steps = nullptr;                   // pipeline_steps(trace, head, …)
    const std::vector<std::pair<float, float>>* ranges = nullptr;  // per step: the colour range lo, hi
    float x0 = 0.0f, y0 = 0.0f;    // the content's top-left (it scrolls)
    float avail_w = 0.0f;          // wrap the pipeline at this width
    float scale = 1.0f;
    bool dark = true;
    int colormap = 0;
    float label_w = 0.0f;          // the widest token label in the small font (callers cache it)
    // Words in the UI's language: a caption per step, the note under a cut matrix, the entropy
    // heading, and over a partial rotation's columns what is turned and what passes through.
    std::vector<std::string> captions;
    std::string entropy = "H (nats)";
    // Where a matrix has more than kStepsMaxShown rows or key columns, the window shown: the
    // first query row and the first key (0-based; rows of K and V are keys), each clamped so that
    // the window is full; the note under such a grid says which it shows (printf: first row, last
    // row, of rows, first column, last column, of columns, from 1).
    int first_query = 0, first_key = 0;
    std::string shown = "rows %1$d\u2013%2$d of %3$d, columns %4$d\u2013%5$d of %6$d";
    std::string turned = "turned", unchanged = "unchanged";
};

// [SECTION] Geometry -----------------------------------------------------------------------------

// Where one matrix is drawn.
struct StepBlock {
    float x = 0.0f, y = 0.0f;            // top-left of the block (its title)
    float grid_x = 0.0f, grid_y = 0.0f;  // top-left of the first cell
    int rows = 0, cols = 0;              // shown
    int row0 = 0, col0 = 0;              // the matrix's first row and column shown (the window: StepsInput)
    bool shows(int row, int col) const { return row >= row0 && row < row0 + rows && col >= col0 && col < col0 + cols; }
    float w = 0.0f, h = 0.0f;
    float caption_y = 0.0f;              // top of the caption below the grid (and its note of the rows shown)
    float caption_w = 0.0f;              // the caption's wrap width: the block's, or the view's when narrower
    bool key_header = false;             // columns are keys: their tokens above the grid
    bool pair_header = false;            // columns are RoPE's pairs (the angles): "(3, 11)" above each
    bool entropy = false;                // a column of row entropies to the right
    int passes_from = -1;                // a partial rotation (Q′, K′): columns from here pass through, headed as such
};

// Blocks placed left to right in lines that wrap at the view's width, as the pipeline flows
// (the Steps view's matrices, the tiles mode's): place() gives a block of w × h its offset from
// the content's top-left.
struct BlockFlow {
    float margin = 0.0f, avail_w = 0.0f, gap = 0.0f;
    float x = 0.0f, y = 0.0f, row_h = 0.0f, content_w = 0.0f;  // the next block's place; the widest line's end
    BlockFlow(float margin_, float avail_w_, float gap_, float y_) : margin(margin_), avail_w(avail_w_), gap(gap_), x(margin_), y(y_) {}
    std::array<float, 2> place(float w, float h) {
        if (x > margin && x + w > avail_w) {  // the next line
            x = margin;
            y += row_h + gap;
            row_h = 0.0f;
        }
        const std::array<float, 2> at{x, y};
        x += w + gap;
        row_h = std::max(row_h, h);
        content_w = std::max(content_w, x);
        return at;
    }
    float bottom() const { return y + row_h; }  // of the last line
};

struct StepsLayout {
    float s = 1.0f;
    float cell_w = 0.0f, cell_h = 0.0f;  // one number's cell
    float label_w = 0.0f;                // token labels left of the rows
    float gap = 0.0f;                    // between blocks (an arrow in it on the same line)
    float title_h = 0.0f;                // title, shape and formula lines above a grid
    float content_w = 0.0f, content_h = 0.0f;  // the scrolled extent from (x0, y0)
    std::vector<StepBlock> blocks;       // one per step

    // The cell under (x, y): step, row, column of the step's matrix; step −1 when none.
    struct Hit {
        int step = -1, row = -1, col = -1;
    };
    Hit hit(float x, float y) const;
};

StepsLayout lay_out_steps(const StepsInput& input, const TextMeasure& measure);

// [SECTION] Items --------------------------------------------------------------------------------

// What the hovered number is made of: a row (col −1), a column (row −1) or one cell (both ≥ 0)
// of another step.
struct StepMark {
    StepKind kind;
    int row, col;
};
std::vector<StepMark> steps_marks(const Trace& trace, StepKind hovered, int row, int col);

// Everything drawn, in order: per block its title, shape, formula, the arrow from the block
// before it on the same line, row labels, key headers (each clipped to its column), cells with
// their numbers (masked ones hatched), the grid's outline, the note of the rows shown, the caption and
// the entropy column; then the outlines of what the hovered number (`hover`) is made of, and
// the hovered cell. `clips`: the key headers' columns.
struct StepsItems {
    std::vector<Item> items;
    std::vector<Box> clips;
};
// One number's cell of the Steps view and of its tiles: the cell coloured by `map` over [lo, hi] and
// the number centred on it in ink that reads there, with one decimal when the usual form is
// wider than the cell; a number that is not finite (−∞: a masked score) on the background.
// `scientific`: %.1e (0 as "0"), for ℓ and such that span decades.
struct Colormap;
struct FigurePalette;
void number_cell_items(std::vector<Item>& items, Box cell, float v, const Colormap& map, float lo, float hi, bool scientific,
                       const TextMeasure& m, const FigurePalette& pal, float s);
// A masked cell: hatched, with its number (a masked score's −∞) in the masked ink when `v` is given.
void masked_cell_items(std::vector<Item>& items, Box cell, const float* v, const TextMeasure& m, const FigurePalette& pal, float s);
StepsItems steps_items(const StepsLayout& layout, const StepsInput& input, const StepsLayout::Hit& hover,
                       const TextMeasure& measure);

}  // namespace attn
