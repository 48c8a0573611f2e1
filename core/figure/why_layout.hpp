// why_layout.hpp: the "why" grids (core/model/why.hpp) as items, for the controls panel, the Why
// view and its SVG: the logit lens (layers × positions, each cell the top token shaded by its
// probability on the colormap), direct logit attribution and head importance (layers × heads),
// activation patching (layers × heads, and the stream's layers × positions), the numbers on a
// diverging scale centred on 0 (blue above, red below, each grid scaled to its largest |value|).
// Laid out without GL or ImGui; web/ui draws the items, core/svg writes them.
//
// Each grid, one under the other: its caption (wrapped), column labels when it has them, then a
// row per layer with its label on the left.
#pragma once

#include "figure_layout.hpp"

#include <string>
#include <vector>

namespace attn {

struct WhyGrid {
    std::string caption;                  // above the grid
    int rows = 0, cols = 0;
    std::vector<std::string> row_labels;  // rows of them ("L1", "emb")
    std::vector<std::string> col_labels;  // cols of them, or none
    std::vector<float> values;            // rows·cols, row-major
    // The lens: each cell's token, shaded by `values` (0 … 1) on the colormap. Empty: the
    // values as signed numbers ("%+.2f" where the cell is wide enough; NaN crossed out).
    std::vector<std::string> texts;
};

struct WhyInput {
    Box box;            // its width wraps the captions and fits the numbers' cells
    float scale = 1.0f;
    bool dark = true;
    int colormap = 0;   // index into colormaps(), for the token cells
    float max_cell = 44.0f;    // the numbers' square cells: fitted to the width, 10 … this (px at scale 1)
    float token_cell = 46.0f;  // the token cells' width (px at scale 1); they do not shrink: the caller scrolls
    std::vector<WhyGrid> grids;
};

struct WhyLayout {
    struct Cell {
        int grid = -1, row = -1, col = -1;
        Box box;
    };
    std::vector<Item> items;
    std::vector<Cell> cells;  // every cell, grid by grid, row-major
    std::vector<Box> grids;   // each grid's cells, together
    float content_w = 0.0f, content_h = 0.0f;
    Cell hit(float x, float y) const;  // grid −1: none
};

WhyLayout lay_out_why(const WhyInput& input, const TextMeasure& measure);

}  // namespace attn
