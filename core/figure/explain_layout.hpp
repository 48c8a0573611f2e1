// explain_layout.hpp: the Explain view. Attention is not the whole explanation: one head's
// map read three ways, side by side in one colour scale (0 … 1), each with a caption that says
// what it measures. Laid out without GL or ImGui; web/ui/explain_view.cpp draws the items.
//
//   weights         α_ij, the softmax rows the other views show
//   value-weighted  α_ij·‖f(x_j)‖ with f(x_j) = v_j·W_o^h (the head's value for key j through
//                   its rows of W_o: what key j adds to query i's output; Kobayashi et al.
//                   2020), each row divided by its sum: the key's share of what the row adds
//   rollout         Abnar & Zuidema 2020, self-attention only: per layer Â = ½·mean_h A + ½·I,
//                   rows renormalised, multiplied from the first layer up to this one (a
//                   scene is one layer); the heads' mean, not one head
//
// [SECTION] The three maps
// [SECTION] Layout
#pragma once

#include "figure.hpp"
#include "figure_layout.hpp"

#include <array>
#include <optional>
#include <string>
#include <vector>

namespace attn {

// [SECTION] The three maps ---------------------------------------------------------------------

// Value-weighted attention of one head: its weights T_q×T_k read by the keys' value norms, rows
// summing to 1 (a row whose weights are all 0 stays 0).
//   pass 1: n_j = ‖v_j^h · W_o[h·d_k … (h+1)·d_k − 1, :]‖   (T_k norms: explain_rows.hpp shown_value_norms)
//   pass 2: each row's value_shares
Matrix value_weighted(const Matrix& weights, const RowVector& norms);
// One row of weights read by value: m_j = α_j·n_j / Σ_j α_j·n_j (a row whose products are all 0
// stays 0).
RowVector value_shares(Eigen::Ref<const RowVector> weights, const RowVector& norms);

enum class ExplainKind { Weights, ValueWeighted, Rollout };
inline constexpr int kExplainKinds = 3;
inline constexpr long long kExplainCells = 128 * 128;  // T_q·T_k past this: the view says so instead (cells of a few px)

struct Explanation {
    std::array<std::optional<Matrix>, kExplainKinds> maps;  // nullopt: not for this figure (`why`)
    std::array<std::string, kExplainKinds> why;              // "needs V and W_o: …" (the view's words)
};

// The figure's shown head (`head` of its trace) read three ways; `layer`: the layer the figure
// shows (layered figures: its map's; a scene: 0). The reasons are keys the view translates:
// "projections" (an import has no V or W_o), "cross" (rollout needs self-attention), "long"
// (a long trace keeps only its first rows).
Explanation explain(const Figure& figure, int head, int stack, int layer);

// [SECTION] Layout -----------------------------------------------------------------------------

// One map of the row: the Explain view's three readings, or the Compare view's two texts and
// their difference.
struct ExplainPanel {
    std::string title, caption;
    const Matrix* map = nullptr;   // nullptr: `missing` instead
    std::string missing;
    std::vector<std::string> queries, keys;  // as shown (display tokens)
    KeyMask allowed;               // T_q×T_k, or empty: every cell
    bool diverging = false;        // −range … range on diverging_colormap(), else 0 … 1 on the colormap
    float range = 1.0f;
};

struct ExplainInput {
    Box box;
    float scale = 1.0f;
    bool dark = true;
    int colormap = 0;
    std::array<ExplainPanel, kExplainKinds> panels;
    std::string legend = "weight", diverging_legend = "difference";
};

struct ExplainLayout {
    std::array<Box, kExplainKinds> grids;  // the cells of each map (empty when missing)
    float cell = 0.0f;
    float content_h = 0.0f;                // the height drawn (stacked maps may pass the box: the view scrolls)
    // The cell under (x, y): {panel, query, key}, or map −1.
    struct Hit {
        int map = -1, query = -1, key = -1;
    };
    Hit hit(float x, float y) const;
    std::vector<Item> items;
};

// Three columns of equal width: title, caption (wrapped), the map as square cells (masked
// cells in the hatch's grey), query labels left of a grid whose queries differ from the one
// before it, key labels under each grid when cells are big enough to read them; on the right
// the legends of the scales used (the colormap's 0 … 1, the diverging −range … range). Where
// columns would be narrower than 160 px (a phone), the maps stand one above another at the
// box's width, the legends under them, and content_h says how far down they go.
ExplainLayout lay_out_explain(const ExplainInput& input, const TextMeasure& measure);

}  // namespace attn
