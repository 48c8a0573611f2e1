// experts_layout.cpp: see experts_layout.hpp.
#include "experts_layout.hpp"

#include <algorithm>

namespace attn {

std::pair<int, int> ExpertsLayout::hit(float x, float y) const {
    if (layers.empty() || tokens == 0 || x < x0 || y < y0) return {-1, -1};
    const int token = static_cast<int>((x - x0) / cell_w);
    const int row = static_cast<int>((y - y0) / (cell_h + row_gap));
    if (token >= tokens || row >= static_cast<int>(layers.size()) || !cell(row, token).contains(x, y)) return {-1, -1};
    return {row, token};
}

ExpertsLayout lay_out_experts(const std::vector<Routing>& routing, float x0, float top, float label_w, float width,
                              float scale) {
    ExpertsLayout e;
    for (int l = 0; l < static_cast<int>(routing.size()); ++l)
        if (!routing[static_cast<std::size_t>(l)].empty()) {
            e.layers.push_back(l);
            e.tokens = std::max(e.tokens, static_cast<int>(routing[static_cast<std::size_t>(l)].size()));
        }
    if (e.layers.empty() || e.tokens == 0) return e;
    e.cell_w = std::clamp(width / static_cast<float>(e.tokens), 3.0f * scale, 28.0f * scale);
    e.cell_h = 16.0f * scale, e.row_gap = 3.0f * scale;
    e.numbers = e.cell_w >= 16.0f * scale;
    e.title_y = top;
    e.x0 = x0 + label_w, e.y0 = top + 22.0f * scale;
    const Box last = e.cell(static_cast<int>(e.layers.size()) - 1, e.tokens - 1);
    e.box = {x0, top, last.x1, last.y1};
    return e;
}

}  // namespace attn
