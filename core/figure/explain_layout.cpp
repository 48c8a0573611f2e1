// explain_layout.cpp: see explain_layout.hpp.
#include "explain_layout.hpp"

#include "colormaps.hpp"

#include <algorithm>
#include <cmath>

namespace attn {

// [SECTION] The three maps ---------------------------------------------------------------------

Matrix value_weighted(const Trace& trace, int head) {
    const HeadTrace& h = trace.attention.heads[static_cast<size_t>(head)];
    const int d_k = trace.d_k;
    // pass 1: the norm of each key's value through the head's rows of W_o
    const Matrix f = h.v * trace.w_o.middleRows(static_cast<Eigen::Index>(head) * d_k, d_k);  // T_k×d_model
    const RowVector norms = f.rowwise().norm().transpose();
    // pass 2: weights times norms, each row normalised
    Matrix m = h.weights.array().rowwise() * norms.array();
    for (Eigen::Index i = 0; i < m.rows(); ++i) {
        const float sum = m.row(i).sum();
        if (sum > 0.0f) m.row(i) /= sum;
    }
    return m;
}

Explanation explain(const Figure& figure, int head, int stack, int layer) {
    Explanation e;
    const Trace& t = figure.trace();
    if (figure.empty() || head < 0 || head >= t.heads) return e;
    if (t.is_long()) {
        for (std::string& why : e.why) why = "long";
        return e;
    }
    e.maps[0] = t.attention.heads[static_cast<size_t>(head)].weights;
    if (figure.has(Detail::Projections) && t.w_o.rows() == t.d_model) e.maps[1] = value_weighted(t, head);
    else e.why[1] = "projections";
    if (figure.has(Detail::Layers)) {
        const AttentionStack& s = figure.stack(stack);
        if (s.is_self()) e.maps[2] = attention_rollout(s, HeadReduce::Mean)[static_cast<size_t>(layer)];
        else e.why[2] = "cross";
    } else if (t.kind != AttentionKind::Cross) {  // a scene: its one layer
        AttentionStack s;
        s.name = "attention", s.queries = t.queries, s.keys = t.keys, s.layers = 1, s.heads = t.heads;
        for (const HeadTrace& h : t.attention.heads) s.maps.push_back(h.weights);
        e.maps[2] = attention_rollout(s, HeadReduce::Mean)[0];
    } else {
        e.why[2] = "cross";
    }
    return e;
}

// [SECTION] Layout -----------------------------------------------------------------------------

ExplainLayout::Hit ExplainLayout::hit(float x, float y) const {
    for (int k = 0; k < kExplainKinds; ++k) {
        const Box& g = grids[static_cast<size_t>(k)];
        if (g.w() <= 0.0f || !g.contains(x, y) || cell <= 0.0f) continue;
        return {k, static_cast<int>((y - g.y0) / cell), static_cast<int>((x - g.x0) / cell)};
    }
    return {};
}

ExplainLayout lay_out_explain(const ExplainInput& in, const TextMeasure& m) {
    ExplainLayout L;
    const float s = in.scale, ss = m.size(FontRole::Small), bs = m.size(FontRole::Body);
    const FigurePalette& pal = figure_palette(in.dark);
    const int T_q = static_cast<int>(in.queries.size()), T_k = static_cast<int>(in.keys.size());
    const Colormap& cmap = colormaps()[static_cast<size_t>(std::clamp(in.colormap, 0, static_cast<int>(colormaps().size()) - 1))];
    auto text = [&](ItemRole role, float x, float y, FontRole f, Color c, const std::string& t, int index = -1) {
        L.items.push_back(text_item(role, x, y, f, c, t, m.width(t, f), Item::Left, index));
    };
    // Columns: the query labels' width once, three maps, the legend.
    float label_w = 0.0f;
    for (const std::string& q : in.queries) label_w = std::max(label_w, m.width(token_text(q), FontRole::Small));
    label_w = std::min(label_w, 110.0f * s) + 6.0f * s;
    const float legend_w = m.width(in.legend, FontRole::Small) + 34.0f * s, gap = 18.0f * s, pad = 12.0f * s;
    const float col_w = (in.box.w() - 2.0f * pad - label_w - legend_w - 2.0f * gap) / kExplainKinds;
    float head_h = 0.0f;  // the tallest title + caption
    for (int k = 0; k < kExplainKinds; ++k)
        head_h = std::max(head_h, bs + 4.0f * s + m.wrapped_height(in.captions[static_cast<size_t>(k)], FontRole::Small, col_w));
    head_h += 8.0f * s;
    float key_w = 0.0f;
    for (const std::string& k : in.keys) key_w = std::max(key_w, m.width(token_text(k), FontRole::Small));
    key_w = std::min(key_w, 90.0f * s) + 6.0f * s;
    // Square cells as big as the widest and tallest fit allow (key labels below when readable).
    const float avail_h = in.box.h() - 2.0f * pad - head_h;
    float cell = std::min(col_w / std::max(T_k, 1), avail_h / std::max(T_q, 1));
    const bool labels = cell >= ss * 1.05f;
    if (labels) cell = std::min(col_w / std::max(T_k, 1), (avail_h - key_w) / std::max(T_q, 1));
    cell = std::max(cell, 1.0f);
    L.cell = cell;
    const float top = in.box.y0 + pad;
    for (int k = 0; k < kExplainKinds; ++k) {
        const size_t i = static_cast<size_t>(k);
        const float x0 = in.box.x0 + pad + label_w + k * (col_w + gap);
        text(ItemRole::Heading, x0, top, FontRole::Body, pal.text, in.titles[i], k);
        text(ItemRole::Caption, x0, top + bs + 4.0f * s, FontRole::Small, pal.text_muted, in.captions[i], k);
        L.items.back().wrap = col_w;
        const float gy = top + head_h;
        if (!in.maps[i]) {
            text(ItemRole::Note, x0, gy, FontRole::Small, pal.text_muted, in.missing[i], k);
            L.items.back().wrap = col_w;
            continue;
        }
        const Matrix& map = *in.maps[i];
        const Box g{x0, gy, x0 + cell * T_k, gy + cell * T_q};
        L.grids[i] = g;
        for (int q = 0; q < T_q && q < map.rows(); ++q)
            for (int j = 0; j < T_k && j < map.cols(); ++j) {
                const Box c{g.x0 + j * cell, g.y0 + q * cell, g.x0 + (j + 1) * cell, g.y0 + (q + 1) * cell};
                const bool masked = in.allowed.size() > 0 && k != 2 && !in.allowed(q, j);
                Color fill = pal.hatch_a;
                if (!masked) {
                    const std::array<float, 3> rgb = colormap_sample(cmap, map(q, j));
                    fill = {rgb[0], rgb[1], rgb[2], 1.0f};
                }
                L.items.push_back(rect_item(ItemRole::Other, c, fill, 0.0f, q * T_k + j));
            }
        L.items.push_back(outline_item(ItemRole::Other, g, pal.text_muted, 1.0f));
        if (!labels) continue;
        for (int j = 0; j < T_k; ++j) {  // keys under the grid, reading upwards
            const std::string t(token_text(in.keys[static_cast<size_t>(j)]));
            Item it = text_item(ItemRole::ColLabel, g.x0 + j * cell + (cell - ss) * 0.5f, g.y1 + 4.0f * s + m.width(t, FontRole::Small),
                                FontRole::Small, pal.text, t, m.width(t, FontRole::Small), Item::Left, j);
            it.upwards = true;
            L.items.push_back(it);
        }
        if (k == 0)
            for (int q = 0; q < T_q; ++q) {  // queries left of the first grid
                const std::string t(token_text(in.queries[static_cast<size_t>(q)]));
                const float w = m.width(t, FontRole::Small);
                L.items.push_back(text_item(ItemRole::RowLabel, g.x0 - w - 6.0f * s, g.y0 + q * cell + (cell - ss) * 0.5f,
                                            FontRole::Small, pal.text, t, w, Item::Right, q));
            }
    }
    // The legend: one scale for the three maps.
    const float lx = in.box.x1 - pad - legend_w + 8.0f * s, ly = top + head_h;
    const float bar_h = std::min(160.0f * s, std::max(cell * T_q, 60.0f * s));
    text(ItemRole::LegendTitle, lx, ly - ss - 4.0f * s, FontRole::Small, pal.text_muted, in.legend);
    Item bar;
    bar.kind = Item::Colormap, bar.role = ItemRole::LegendBar, bar.box = {lx, ly, lx + 12.0f * s, ly + bar_h};
    L.items.push_back(bar);
    L.items.push_back(outline_item(ItemRole::LegendBar, bar.box, pal.text_muted, 1.0f));
    for (int i = 0; i < 3; ++i) {
        const float y = bar.box.y1 - bar_h * 0.5f * i;
        L.items.push_back(segment_item(ItemRole::LegendTick, bar.box.x1, y, bar.box.x1 + 4.0f * s, y, pal.text_muted, 1.0f, i));
        text(ItemRole::LegendLabel, bar.box.x1 + 7.0f * s, y - ss * 0.5f, FontRole::Small, pal.text, i == 0 ? "0" : i == 1 ? "0.5" : "1", i);
    }
    return L;
}

}  // namespace attn
