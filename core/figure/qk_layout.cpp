// qk_layout.cpp: the Q–K space view's planes and layouts (see qk_layout.hpp). s is the UI scale.
//
// [SECTION] Planes
// [SECTION] Placing a plane in a box
// [SECTION] One head
// [SECTION] Every head
#include "qk_layout.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace attn {

// [SECTION] Planes ---------------------------------------------------------------------------------

QkPlane qk_plane(const Trace& tr, int head, QkProjection projection) {
    const Matrix q = head_queries(tr, head), k = head_keys(tr, head);
    const QKNormalized n = normalize_qk(q, k);
    QkPlane p;
    p.T_q = static_cast<int>(q.rows()), p.T_k = static_cast<int>(k.rows());
    p.translation_norm = n.translation_norm, p.query_scale = n.query_scale;
    const Matrix joint = n.joint();
    if (projection == QkProjection::Tsne && joint.rows() <= kQkTsneMaxPoints) {
        TsneOptions options;
        options.seed = kQkTsneSeed, options.barnes_hut_from = kQkBarnesHutFrom;
        p.points = tsne_plane(joint, options).points;
        p.tsne = true;
    } else {
        PcaPlane pca = pca_plane(joint);
        p.points = std::move(pca.points);
        p.explained = pca.explained;
    }
    p.correlation = qk_distance_correlation(q, k, tr.allowed, p.points);
    return p;
}

// [SECTION] Placing a plane in a box ---------------------------------------------------------------

namespace {

// The points of `plane` in `box`, one scale on both axes (distances are what the plane shows),
// centred, `pad` inside the box's edges.
std::vector<std::array<float, 2>> qk_place(const Matrix& points, Box box, float pad) {
    std::vector<std::array<float, 2>> at(static_cast<size_t>(points.rows()));
    if (points.rows() == 0) return at;
    const float x0 = points.col(0).minCoeff(), x1 = points.col(0).maxCoeff();
    const float y0 = points.col(1).minCoeff(), y1 = points.col(1).maxCoeff();
    const float w = std::max(box.w() - 2.0f * pad, 1.0f), h = std::max(box.h() - 2.0f * pad, 1.0f);
    const float span_x = std::max(x1 - x0, 1e-12f), span_y = std::max(y1 - y0, 1e-12f);
    const float k = std::min(w / span_x, h / span_y);
    const float cx = (box.x0 + box.x1) * 0.5f, cy = (box.y0 + box.y1) * 0.5f;
    for (Eigen::Index i = 0; i < points.rows(); ++i)  // y up, as a plot's
        at[static_cast<size_t>(i)] = {cx + (points(i, 0) - (x0 + x1) * 0.5f) * k, cy - (points(i, 1) - (y0 + y1) * 0.5f) * k};
    return at;
}

Color qk_query_color(bool dark) { return head_color(dark, 0); }  // blue
Color qk_key_color(bool dark) { return head_color(dark, 1); }    // orange

// A point's mark: a query's circle, a key's square, `r` its half size.
Item qk_mark(bool query, std::array<float, 2> c, float r, Color fill, int index) {
    return rect_item(query ? ItemRole::TokenQuery : ItemRole::TokenKey, {c[0] - r, c[1] - r, c[0] + r, c[1] + r}, fill,
                     query ? r : 0.0f, index);
}

bool boxes_overlap(const Box& a, const Box& b) { return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1; }

}  // namespace

// [SECTION] One head -------------------------------------------------------------------------------

std::string qk_number(float v, int digits) {
    char b[32];
    std::snprintf(b, sizeof b, "%.*g", digits, static_cast<double>(v));
    return b;
}

void qk_fill_words(QkInput& in, const QkWords& w, QkProjection asked) {
    const QkPlane& p = *in.plane;
    const int n = p.T_q + p.T_k;
    if (p.tsne)  // the perplexity as t-SNE used it: 30, or (N − 1)/3 for a few points
        in.what = printf_string(w.what_tsne, in.head + 1, p.T_q, p.T_k, static_cast<int>(std::min(30.0f, std::max((n - 1) / 3.0f, 1.0f))),
                                static_cast<int>(kQkTsneSeed));
    else
        in.what = printf_string(w.what_pca, in.head + 1, p.T_q, p.T_k, static_cast<int>(p.explained[0] * 100.0f + 0.5f),
                                static_cast<int>(p.explained[1] * 100.0f + 0.5f));
    if (asked == QkProjection::Tsne && !p.tsne) in.what += printf_string(w.too_many, kQkTsneMaxPoints, n);
    in.normalized = printf_string(w.normalized, qk_number(p.translation_norm).c_str(), qk_number(p.query_scale).c_str(),
                                  qk_number(1.0f / p.query_scale).c_str());
    in.correlation = printf_string(w.correlation, qk_number(p.correlation, 2).c_str());
    in.queries = w.queries, in.keys = w.keys;
}

QkLayout lay_out_qk(const QkInput& in, const TextMeasure& m) {
    QkLayout L;
    const float s = in.scale, ss = m.size(FontRole::Small);
    const float margin = 12.0f * s, w = std::max(in.box.w() - 2.0f * margin, 40.0f * s);
    float y = in.box.y0 + margin;
    L.text_y = y;
    for (const std::string* line : {&in.what, &in.normalized, &in.correlation})
        if (!line->empty()) y += m.wrapped_height(*line, FontRole::Small, w) + 2.0f * s;
    const float legend_h = ss + 10.0f * s;
    L.plot = {in.box.x0 + margin, y + 6.0f * s, in.box.x1 - margin, std::max(in.box.y1 - margin - legend_h, y + 60.0f * s)};
    const int n = static_cast<int>(in.plane->points.rows());
    L.radius = (n <= 40 ? 6.0f : n <= 200 ? 4.0f : 2.5f) * s;
    L.at = qk_place(in.plane->points, L.plot, L.radius + 40.0f * s);  // room for a label beside the outermost points
    return L;
}

int QkLayout::hit(float x, float y) const {
    int best = -1;
    float best_d = (radius + 4.0f) * (radius + 4.0f) + 1e-3f;
    for (size_t i = 0; i < at.size(); ++i) {
        const float dx = at[i][0] - x, dy = at[i][1] - y, d = dx * dx + dy * dy;
        if (d < best_d) best = static_cast<int>(i), best_d = d;  // a query over a key at one place: the query (drawn on top)
    }
    return best;
}

std::vector<Item> qk_items(const QkLayout& L, const QkInput& in, const TextMeasure& m) {
    std::vector<Item> items;
    const Trace& tr = *in.trace;
    const QkPlane& p = *in.plane;
    const float s = in.scale, ss = m.size(FontRole::Small), r = L.radius;
    const FigurePalette& pal = figure_palette(in.dark);
    const Color qc = qk_query_color(in.dark), kc = qk_key_color(in.dark);
    const float margin = 12.0f * s, w = std::max(in.box.w() - 2.0f * margin, 40.0f * s);

    // What the plane is, what was done to Q and K, and how well distance reads as attention.
    float y = L.text_y;
    for (const std::string* line : {&in.what, &in.normalized, &in.correlation}) {
        if (line->empty()) continue;
        items.push_back(text_item(ItemRole::Caption, in.box.x0 + margin, y, FontRole::Small, line == &in.what ? pal.text : pal.text_muted, *line,
                                  m.width(*line, FontRole::Small)));
        items.back().wrap = w;
        y += m.wrapped_height(*line, FontRole::Small, w) + 2.0f * s;
    }
    items.push_back(outline_item(ItemRole::Other, L.plot, pal.grid, 1.0f * s));

    // The selected query's lines to its keys: the wider and the more opaque, the more attention.
    std::vector<int> top;  // its keys, most attended first
    if (in.query >= 0 && in.query < p.T_q && static_cast<int>(in.weights.size()) == p.T_k) {
        const auto& from = L.at[static_cast<size_t>(in.query)];
        for (int j = 0; j < p.T_k; ++j) {
            const float wt = in.weights[static_cast<size_t>(j)];
            if (wt < 0.005f) continue;
            Color c = qc;
            c.a = 0.25f + 0.75f * wt;
            const auto& to = L.at[static_cast<size_t>(p.T_q + j)];
            items.push_back(segment_item(ItemRole::Other, from[0], from[1], to[0], to[1], c, (1.0f + 5.0f * wt) * s, j));
        }
        top.resize(static_cast<size_t>(p.T_k));
        std::iota(top.begin(), top.end(), 0);
        std::stable_sort(top.begin(), top.end(), [&](int a, int b) { return in.weights[static_cast<size_t>(a)] > in.weights[static_cast<size_t>(b)]; });
        top.resize(std::min<size_t>(top.size(), 5));
    }

    // The points: keys under queries; the selected ones larger and outlined.
    for (int j = 0; j < p.T_k; ++j) {
        const bool on = j == in.key || std::find(top.begin(), top.end(), j) != top.end();
        items.push_back(qk_mark(false, L.at[static_cast<size_t>(p.T_q + j)], on ? r * 1.3f : r, kc, j));
        if (j == in.key) items.push_back(outline_item(ItemRole::Selection, items.back().box, pal.outline, 2.0f * s, 0.0f, j));
    }
    for (int i = 0; i < p.T_q; ++i) {
        const bool on = i == in.query;
        items.push_back(qk_mark(true, L.at[static_cast<size_t>(i)], on ? r * 1.4f : r, qc, i));
        if (on) items.push_back(outline_item(ItemRole::Selection, items.back().box, pal.outline, 2.0f * s, r * 1.4f, i));
    }

    // Labels where they find room: the selected query's and its keys' first, then every point
    // while there are few enough to read.
    std::vector<int> order;  // point indices, queries first
    if (in.query >= 0) order.push_back(in.query);
    for (int j : top) order.push_back(p.T_q + j);
    if (in.key >= 0) order.push_back(p.T_q + in.key);
    const int n = p.T_q + p.T_k;
    if (n <= 160)
        for (int i = 0; i < n; ++i) order.push_back(i);
    std::vector<Box> placed;
    std::vector<bool> done(static_cast<size_t>(n), false);
    for (const auto& c : L.at) placed.push_back({c[0] - r, c[1] - r, c[0] + r, c[1] + r});
    for (int i : order) {
        if (done[static_cast<size_t>(i)]) continue;
        done[static_cast<size_t>(i)] = true;
        const bool query = i < p.T_q;
        const std::string label(token_text(query ? tr.queries[static_cast<size_t>(i)] : tr.keys[static_cast<size_t>(i - p.T_q)]));
        const float tw = m.width(label, FontRole::Small);
        const auto& c = L.at[static_cast<size_t>(i)];
        for (const float side : {1.0f, -1.0f}) {
            const float x = side > 0 ? c[0] + r + 3.0f * s : c[0] - r - 3.0f * s - tw;
            const Box b{x, c[1] - ss * 0.5f, x + tw, c[1] + ss * 0.5f};
            bool free = b.x0 >= in.box.x0 && b.x1 <= in.box.x1;
            for (size_t k = 0; free && k < placed.size(); ++k) free = k == static_cast<size_t>(i) || !boxes_overlap(b, placed[k]);
            if (!free) continue;
            placed.push_back(b);
            items.push_back(text_item(ItemRole::TokenLabel, b.x0, b.y0, FontRole::Small, query ? qc : kc, label, tw, Item::Left, i));
            break;
        }
    }

    // The legend under the plot: ● queries  ■ keys.
    const float ly = L.plot.y1 + 6.0f * s, lr = 5.0f * s;
    float x = in.box.x0 + margin;
    items.push_back(qk_mark(true, {x + lr, ly + ss * 0.5f}, lr, qc, -1));
    x += 2.0f * lr + 5.0f * s;
    items.push_back(text_item(ItemRole::LegendLabel, x, ly, FontRole::Small, pal.text, in.queries, m.width(in.queries, FontRole::Small)));
    x += m.width(in.queries, FontRole::Small) + 16.0f * s;
    items.push_back(qk_mark(false, {x + lr, ly + ss * 0.5f}, lr, kc, -1));
    x += 2.0f * lr + 5.0f * s;
    items.push_back(text_item(ItemRole::LegendLabel, x, ly, FontRole::Small, pal.text, in.keys, m.width(in.keys, FontRole::Small)));
    return items;
}

// [SECTION] Every head -----------------------------------------------------------------------------

std::vector<std::string> qk_grid_titles(const std::vector<QkPlane>& planes, const QkWords& w) {
    std::vector<std::string> titles;
    for (size_t h = 0; h < planes.size(); ++h)
        titles.push_back(printf_string(w.head_title, static_cast<int>(h) + 1, qk_number(planes[h].correlation, 2).c_str()));
    return titles;
}

QkGridLayout lay_out_qk_grid(const QkGridInput& in, const TextMeasure& m) {
    QkGridLayout L;
    const int n = static_cast<int>(in.planes->size());
    if (n == 0) return L;
    const float s = in.scale, gap = 10.0f * s, margin = 12.0f * s, ss = m.size(FontRole::Small);
    L.title_h = ss + 4.0f * s;
    const float heading_h = in.heading.empty() ? 0.0f : m.wrapped_height(in.heading, FontRole::Small, in.box.w() - 2.0f * margin) + 6.0f * s;
    const float legend_h = ss + 10.0f * s;
    L.heading_y = in.box.y0 + margin;
    const float top = L.heading_y + heading_h;
    const float w = std::max(in.box.w() - 2.0f * margin, 40.0f * s), h = std::max(in.box.y1 - margin - legend_h - top, 40.0f * s);
    L.legend_y = top + h + 6.0f * s;
    // Columns that give the squarest panels.
    int best_cols = 1;
    float best = 0.0f;
    for (int cols = 1; cols <= n; ++cols) {
        const int rows = (n + cols - 1) / cols;
        const float pw = (w - gap * (cols - 1)) / cols, ph = (h - gap * (rows - 1)) / rows - L.title_h;
        const float side = std::min(pw, ph);
        if (side > best) best = side, best_cols = cols;
    }
    const int rows = (n + best_cols - 1) / best_cols;
    const float pw = (w - gap * (best_cols - 1)) / best_cols, ph = (h - gap * (rows - 1)) / rows;
    for (int i = 0; i < n; ++i) {
        const float x = in.box.x0 + margin + (i % best_cols) * (pw + gap), y = top + (i / best_cols) * (ph + gap);
        L.panels.push_back({x, y, x + pw, y + ph});
    }
    return L;
}

int QkGridLayout::hit(float x, float y) const {
    for (size_t i = 0; i < panels.size(); ++i)
        if (panels[i].contains(x, y)) return static_cast<int>(i);
    return -1;
}

std::vector<Item> qk_grid_items(const QkGridLayout& L, const QkGridInput& in, const TextMeasure& m) {
    std::vector<Item> items;
    const float s = in.scale;
    const FigurePalette& pal = figure_palette(in.dark);
    const Color qc = qk_query_color(in.dark), kc = qk_key_color(in.dark);
    for (size_t h = 0; h < L.panels.size(); ++h) {
        const Box& panel = L.panels[h];
        const QkPlane& p = (*in.planes)[h];
        const int index = static_cast<int>(h);
        items.push_back(rect_item(ItemRole::Other, panel, index == in.hover ? pal.token_hover : pal.token_fill, 4.0f * s, index));
        if (index == in.current) items.push_back(outline_item(ItemRole::Selection, panel, pal.accent, 2.0f * s, 4.0f * s, index));
        const std::string& title = h < in.titles.size() ? in.titles[h] : std::string();
        items.push_back(text_item(ItemRole::HeadLabel, panel.x0 + 6.0f * s, panel.y0 + 3.0f * s, FontRole::Small, pal.text, title,
                                  m.width(title, FontRole::Small), Item::Left, index));
        const Box plot{panel.x0, panel.y0 + L.title_h, panel.x1, panel.y1};
        const float r = (p.T_q + p.T_k <= 80 ? 2.5f : 1.5f) * s;
        const std::vector<std::array<float, 2>> at = qk_place(p.points, plot, r + 6.0f * s);
        for (int j = 0; j < p.T_k; ++j) items.push_back(qk_mark(false, at[static_cast<size_t>(p.T_q + j)], r, kc, j));
        for (int i = 0; i < p.T_q; ++i) items.push_back(qk_mark(true, at[static_cast<size_t>(i)], r, qc, i));
    }
    const float margin = 12.0f * s, ss = m.size(FontRole::Small);
    if (!in.heading.empty()) {
        items.push_back(text_item(ItemRole::Heading, in.box.x0 + margin, L.heading_y, FontRole::Small, pal.text_muted, in.heading,
                                  m.width(in.heading, FontRole::Small)));
        items.back().wrap = in.box.w() - 2.0f * margin;
    }
    // The legend under the panels, as the single plane's: ● queries  ■ keys.
    const float lr = 5.0f * s;
    float x = in.box.x0 + margin;
    items.push_back(qk_mark(true, {x + lr, L.legend_y + ss * 0.5f}, lr, qc, -1));
    x += 2.0f * lr + 5.0f * s;
    items.push_back(text_item(ItemRole::LegendLabel, x, L.legend_y, FontRole::Small, pal.text, in.queries, m.width(in.queries, FontRole::Small)));
    x += m.width(in.queries, FontRole::Small) + 16.0f * s;
    items.push_back(qk_mark(false, {x + lr, L.legend_y + ss * 0.5f}, lr, kc, -1));
    x += 2.0f * lr + 5.0f * s;
    items.push_back(text_item(ItemRole::LegendLabel, x, L.legend_y, FontRole::Small, pal.text, in.keys, m.width(in.keys, FontRole::Small)));
    return items;
}

}  // namespace attn
