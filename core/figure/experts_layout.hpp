// experts_layout.hpp: a mixture of experts' routing (transformer.hpp's Routing) as the model
// view draws it under its grid, laid out without GL or ImGui: a row per layer with experts, a
// cell per token, each coloured by the expert the token went to first (the heads' colours, by
// the expert's number) and as strong as its router weight, the expert's number written in
// the cell where it fits. web/ui/model_view.cpp draws it and the hover's tooltip (every
// expert of the token with its weight).
#pragma once

#include "figure_layout.hpp"
#include "transformer.hpp"

#include <vector>

namespace attn {

struct ExpertsLayout {
    std::vector<int> layers;      // the rows: layers with experts, in order
    int tokens = 0;
    float x0 = 0.0f, y0 = 0.0f;   // the first cell's top-left
    float title_y = 0.0f;         // the title's line, above the rows
    float cell_w = 0.0f, cell_h = 0.0f, row_gap = 0.0f;
    bool numbers = false;         // the cells are wide enough for the expert's number
    Box box;                      // everything, title included

    Box cell(int row, int token) const {
        const float x = x0 + token * cell_w, y = y0 + row * (cell_h + row_gap);
        return {x, y, x + cell_w, y + cell_h};
    }
    // The cell under (x, y): {row, token}, or {−1, −1}.
    std::pair<int, int> hit(float x, float y) const;
};

// `routing`: RunResult::experts (a dense layer's entry empty). The rows start at (x0, top) with
// `label_w` left of them for their labels; the cells share `width`, each 3 to 28 px at scale 1
// (wider than `width` in all: the view scrolls).
ExpertsLayout lay_out_experts(const std::vector<Routing>& routing, float x0, float top, float label_w, float width,
                              float scale);

}  // namespace attn
