// explain_layout.cpp: see explain_layout.hpp.
#include "explain_layout.hpp"

#include "explain_rows.hpp"

#include "attention_maps.hpp"
#include "colormaps.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace attn {

// [SECTION] The three maps ---------------------------------------------------------------------

RowVector value_shares(Eigen::Ref<const RowVector> weights, const RowVector& norms) {
    RowVector m = weights.cwiseProduct(norms);
    const float sum = m.sum();
    if (sum > 0.0f) m /= sum;
    return m;
}

Matrix value_weighted(const Matrix& weights, const RowVector& norms) {
    Matrix m(weights.rows(), weights.cols());
    for (Eigen::Index i = 0; i < m.rows(); ++i) m.row(i) = value_shares(weights.row(i), norms);
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
    const RowVector norms = shown_value_norms(figure, stack, layer, head);  // pass 1
    if (norms.size() == t.T_k()) e.maps[1] = value_weighted(*e.maps[0], norms);  // pass 2
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
    const Colormap& cmap = colormaps()[static_cast<size_t>(std::clamp(in.colormap, 0, static_cast<int>(colormaps().size()) - 1))];
    auto text = [&](ItemRole role, float x, float y, FontRole f, Color c, const std::string& t, int index = -1) {
        L.items.push_back(text_item(role, x, y, f, c, t, m.width(t, f), Item::Left, index));
    };
    auto widest = [&](const std::vector<std::string>& tokens, float cap) {
        float w = 0.0f;
        for (const std::string& t : tokens) w = std::max(w, m.width(token_text(t), FontRole::Small));
        return std::min(w, cap) + 6.0f * s;
    };
    // Columns: each grid's query labels (where its queries differ from the grid before), the
    // three maps of equal width, the legends.
    std::array<float, kExplainKinds> label_w{};
    bool any_seq = false, any_div = false;
    int T_q = 1, T_k = 1;  // the largest, for one cell size
    for (int k = 0; k < kExplainKinds; ++k) {
        const ExplainPanel& p = in.panels[static_cast<size_t>(k)];
        if (k == 0 || p.queries != in.panels[static_cast<size_t>(k - 1)].queries) label_w[static_cast<size_t>(k)] = widest(p.queries, 110.0f * s);
        if (!p.map) continue;
        (p.diverging ? any_div : any_seq) = true;
        T_q = std::max(T_q, static_cast<int>(p.queries.size()));
        T_k = std::max(T_k, static_cast<int>(p.keys.size()));
    }
    const std::string range_text = [&] {
        float r = 1.0f;
        for (const ExplainPanel& p : in.panels) if (p.map && p.diverging) r = p.range;
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.2g", static_cast<double>(r));
        return std::string(buf);
    }();
    const float legend_w = std::max(m.width(in.legend, FontRole::Small), m.width(in.diverging_legend, FontRole::Small)) + 40.0f * s;
    const float gap = 18.0f * s, pad = 12.0f * s;
    // Side by side; on a narrow screen (columns under 160 px), one above another.
    const float side_w = (in.box.w() - 2.0f * pad - label_w[0] - label_w[1] - label_w[2] - legend_w - 2.0f * gap) / kExplainKinds;
    const bool stacked = side_w < 160.0f * s;
    const float label_max = std::max({label_w[0], label_w[1], label_w[2]});
    const float col_w = stacked ? in.box.w() - 2.0f * pad - label_max : side_w;
    const float row_h = in.box.h() - 2.0f * pad;  // side by side: the maps share the height
    float head_h = 0.0f;  // the tallest title + caption
    for (const ExplainPanel& p : in.panels) head_h = std::max(head_h, bs + 4.0f * s + m.wrapped_height(p.caption, FontRole::Small, col_w));
    head_h += 8.0f * s;
    float key_w = 0.0f;
    for (const ExplainPanel& p : in.panels) key_w = std::max(key_w, widest(p.keys, 90.0f * s));
    // Square cells as big as the widest and tallest fit allow (key labels below when readable);
    // stacked, as the width allows: the view scrolls (content_h).
    const float avail_h = stacked ? col_w * T_q / T_k : row_h - head_h;
    float cell = std::min(col_w / T_k, avail_h / T_q);
    const bool labels = cell >= ss * 1.05f;
    if (labels && !stacked) cell = std::min(col_w / T_k, (avail_h - key_w) / T_q);
    cell = std::max(cell, 1.0f);
    L.cell = cell;
    float x = in.box.x0 + pad, y = in.box.y0 + pad;  // stacked: each panel below the one before
    for (int k = 0; k < kExplainKinds; ++k) {
        const size_t i = static_cast<size_t>(k);
        const ExplainPanel& p = in.panels[i];
        const float top = stacked ? y : in.box.y0 + pad;
        const float own_head = bs + 12.0f * s + m.wrapped_height(p.caption, FontRole::Small, col_w);
        x = stacked ? in.box.x0 + pad + label_max : x + label_w[i];
        const float x0 = x;
        x += col_w + gap;
        y += own_head + (p.map ? cell * static_cast<float>(p.queries.size()) + (labels ? key_w : 0.0f) : 2.0f * ss) + gap;
        text(ItemRole::Heading, x0, top, FontRole::Body, pal.text, p.title, k);
        text(ItemRole::Caption, x0, top + bs + 4.0f * s, FontRole::Small, pal.text_muted, p.caption, k);
        L.items.back().wrap = col_w;
        const float gy = top + (stacked ? own_head : head_h);
        if (!p.map) {
            text(ItemRole::Note, x0, gy, FontRole::Small, pal.text_muted, p.missing, k);
            L.items.back().wrap = col_w;
            continue;
        }
        const Matrix& map = *p.map;
        const int rows = static_cast<int>(std::min<Eigen::Index>(map.rows(), static_cast<Eigen::Index>(p.queries.size())));
        const int cols = static_cast<int>(std::min<Eigen::Index>(map.cols(), static_cast<Eigen::Index>(p.keys.size())));
        const Box g{x0, gy, x0 + cell * cols, gy + cell * rows};
        L.grids[i] = g;
        for (int q = 0; q < rows; ++q)
            for (int j = 0; j < cols; ++j) {
                const Box c{g.x0 + j * cell, g.y0 + q * cell, g.x0 + (j + 1) * cell, g.y0 + (q + 1) * cell};
                const bool masked = p.allowed.size() > 0 && !p.allowed(q, j);
                Color fill = pal.hatch_a;
                if (!masked) {
                    const float v = map(q, j);
                    const std::array<float, 3> rgb = p.diverging ? colormap_sample(diverging_colormap(), 0.5f + 0.5f * v / std::max(p.range, 1e-12f))
                                                                 : colormap_sample(cmap, v);
                    fill = {rgb[0], rgb[1], rgb[2], 1.0f};
                }
                L.items.push_back(rect_item(ItemRole::Other, c, fill, 0.0f, q * cols + j));
            }
        L.items.push_back(outline_item(ItemRole::Other, g, pal.text_muted, 1.0f));
        if (!labels) continue;
        for (int j = 0; j < cols; ++j) {  // keys under the grid, reading upwards
            const std::string t(token_text(p.keys[static_cast<size_t>(j)]));
            const float w = m.width(t, FontRole::Small);
            Item it = text_item(ItemRole::ColLabel, g.x0 + j * cell + (cell - ss) * 0.5f, g.y1 + 4.0f * s + w, FontRole::Small, pal.text, t, w,
                                Item::Left, j);
            it.upwards = true;
            L.items.push_back(it);
        }
        if (label_w[i] > 0.0f || stacked)
            for (int q = 0; q < rows; ++q) {  // queries left of the grid
                const std::string t(token_text(p.queries[static_cast<size_t>(q)]));
                const float w = m.width(t, FontRole::Small);
                L.items.push_back(text_item(ItemRole::RowLabel, g.x0 - w - 6.0f * s, g.y0 + q * cell + (cell - ss) * 0.5f,
                                            FontRole::Small, pal.text, t, w, Item::Right, q));
            }
    }
    // The legends: the colormap's (the GPU's bar, Item::Colormap) and the diverging one (cells);
    // stacked, under the maps.
    const float lx = stacked ? in.box.x0 + pad + label_max : in.box.x1 - pad - legend_w + 8.0f * s, bar_w = 12.0f * s;
    const float bar_h = std::min(160.0f * s, std::max(stacked ? 100.0f * s : cell * T_q, 60.0f * s));
    float ly = stacked ? y + 1.5f * ss + 6.0f * s : in.box.y0 + pad + head_h;
    auto ticks = [&](const Box& bar, const std::array<std::string, 3>& labels_text) {
        L.items.push_back(outline_item(ItemRole::LegendBar, bar, pal.text_muted, 1.0f));
        for (int t = 0; t < 3; ++t) {
            const float y = bar.y1 - bar.h() * 0.5f * t;
            L.items.push_back(segment_item(ItemRole::LegendTick, bar.x1, y, bar.x1 + 4.0f * s, y, pal.text_muted, 1.0f, t));
            text(ItemRole::LegendLabel, bar.x1 + 7.0f * s, y - ss * 0.5f, FontRole::Small, pal.text, labels_text[static_cast<size_t>(t)], t);
        }
    };
    if (any_seq) {
        text(ItemRole::LegendTitle, lx, ly - 1.5f * ss - 6.0f * s, FontRole::Small, pal.text_muted, in.legend);
        Item bar;
        bar.kind = Item::Colormap, bar.role = ItemRole::LegendBar, bar.box = {lx, ly, lx + bar_w, ly + bar_h};
        L.items.push_back(bar);
        ticks(bar.box, {"0", "0.5", "1"});
        ly += bar_h + 2.5f * ss + 22.0f * s;
    }
    if (any_div) {
        text(ItemRole::LegendTitle, lx, ly - 1.5f * ss - 6.0f * s, FontRole::Small, pal.text_muted, in.diverging_legend);
        constexpr int kSteps = 48;
        for (int t = 0; t < kSteps; ++t) {  // top: +range
            const std::array<float, 3> rgb = colormap_sample(diverging_colormap(), 1.0f - (t + 0.5f) / kSteps);
            L.items.push_back(rect_item(ItemRole::LegendBar, {lx, ly + bar_h * t / kSteps, lx + bar_w, ly + bar_h * (t + 1) / kSteps},
                                        {rgb[0], rgb[1], rgb[2], 1.0f}));
        }
        ticks({lx, ly, lx + bar_w, ly + bar_h}, {"\xe2\x88\x92" + range_text, "0", "+" + range_text});
        ly += bar_h + 2.5f * ss + 22.0f * s;
    }
    L.content_h = stacked ? ly + pad - in.box.y0 : in.box.h();
    return L;
}

}  // namespace attn
