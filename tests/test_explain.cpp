// The Explain view's numbers and layout (core/figure/explain_layout.hpp): value-weighted
// attention and rollout against plain loops in double over the shared mask scenes (self,
// causal, cross with padding, a fully masked row), and the layout's cells, grids and hits.
#include "explain_layout.hpp"
#include "scene_cases.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

using namespace attn;

namespace {

// ‖α_ij·f(x_j)‖ with f(x_j) = v_j·W_o[h rows], rows normalised: written out in double.
std::vector<std::vector<double>> naive_value_weighted(const Trace& t, int head) {
    const HeadTrace& h = t.attention.heads[static_cast<size_t>(head)];
    const int T_q = static_cast<int>(h.weights.rows()), T_k = static_cast<int>(h.weights.cols()), d = t.d_model;
    std::vector<double> norm(static_cast<size_t>(T_k));
    for (int j = 0; j < T_k; ++j) {
        double sq = 0;
        for (int c = 0; c < d; ++c) {
            double f = 0;
            for (int x = 0; x < t.d_k; ++x) f += static_cast<double>(h.v(j, x)) * t.w_o(head * t.d_k + x, c);
            sq += f * f;
        }
        norm[static_cast<size_t>(j)] = std::sqrt(sq);
    }
    std::vector<std::vector<double>> m(static_cast<size_t>(T_q), std::vector<double>(static_cast<size_t>(T_k)));
    for (int i = 0; i < T_q; ++i) {
        double sum = 0;
        for (int j = 0; j < T_k; ++j) sum += m[i][j] = h.weights(i, j) * norm[static_cast<size_t>(j)];
        for (int j = 0; j < T_k && sum > 0; ++j) m[i][j] /= sum;
    }
    return m;
}

// One layer's rollout: ½·mean_h A + ½·I, rows renormalised, in double.
std::vector<std::vector<double>> naive_rollout(const Trace& t) {
    const int T = t.T_q();
    std::vector<std::vector<double>> r(static_cast<size_t>(T), std::vector<double>(static_cast<size_t>(T)));
    for (int i = 0; i < T; ++i) {
        double sum = 0;
        for (int j = 0; j < T; ++j) {
            double mean = 0;
            for (const HeadTrace& h : t.attention.heads) mean += h.weights(i, j);
            sum += r[i][j] = 0.5 * mean / t.heads + (i == j ? 0.5 : 0.0);
        }
        for (int j = 0; j < T; ++j) r[i][j] /= sum;
    }
    return r;
}

double max_diff(const Matrix& got, const std::vector<std::vector<double>>& want) {
    double worst = 0;
    for (Eigen::Index i = 0; i < got.rows(); ++i)
        for (Eigen::Index j = 0; j < got.cols(); ++j) worst = std::max(worst, std::fabs(got(i, j) - want[i][j]));
    return worst;
}

struct Measure final : TextMeasure {
    float size(FontRole role) const override { return role == FontRole::Small ? 12.0f : 15.0f; }
    float width(std::string_view text, FontRole role) const override { return 0.55f * size(role) * static_cast<float>(text.size()); }
};

}  // namespace

TEST_CASE("explain: value-weighted attention and rollout against plain loops, every mask scene and head") {
    double worst_vw = 0, worst_rollout = 0, moved = 0;
    int maps = 0;
    for (const std::string& text : cases::mask_scenes()) {
        CAPTURE(text.substr(0, 60));
        Scene s = read_scene(text);
        validate(s);
        Trace t = compute(s);
        const bool cross = t.kind == AttentionKind::Cross;
        const Figure f = scene_figure(s, t);
        for (int h = 0; h < t.heads; ++h) {
            const Explanation e = explain(f, h, 0, 0);
            REQUIRE(e.maps[0]);
            REQUIRE(e.maps[1]);
            const Matrix& vw = *e.maps[1];
            worst_vw = std::max(worst_vw, max_diff(vw, naive_value_weighted(t, h)));
            for (Eigen::Index i = 0; i < vw.rows(); ++i) {  // a distribution, or zeros for a row with no key
                const float sum = vw.row(i).sum();
                CHECK((std::fabs(sum - 1.0f) < 1e-5f || (sum == 0.0f && t.attention.heads[h].weights.row(i).sum() == 0.0f)));
            }
            moved = std::max(moved, static_cast<double>((vw - *e.maps[0]).cwiseAbs().maxCoeff()));
            CHECK(e.maps[2].has_value() == !cross);
            if (cross) CHECK(e.why[2] == "cross");
            else worst_rollout = std::max(worst_rollout, max_diff(*e.maps[2], naive_rollout(t)));
            ++maps;
        }
    }
    MESSAGE(maps, " heads: value-weighted within ", worst_vw, ", rollout within ", worst_rollout, "; the values move the weights by up to ", moved);
    CHECK(worst_vw < 1e-5);
    CHECK(worst_rollout < 1e-5);
    CHECK(moved > 1e-2);  // the value vectors' norms differ: the comparison above could fail
}

TEST_CASE("explain: three grids side by side, cells inside them, hits back to the cell") {
    Scene s = read_scene(R"({"kind": "masked", "tokens": "the cat sat on the mat", "d_model": 8, "heads": 2})");
    validate(s);
    const Trace t = compute(s);
    const Figure f = scene_figure(s, t);
    const Explanation e = explain(f, 1, 0, 0);
    ExplainInput in;
    in.box = {10, 20, 1210, 620};
    for (int k = 0; k < kExplainKinds; ++k) {
        ExplainPanel& p = in.panels[static_cast<size_t>(k)];
        p.queries = t.queries, p.keys = t.keys, p.allowed = t.allowed;
        p.map = k == 1 ? nullptr : &*e.maps[static_cast<size_t>(k)];
        p.title = "title " + std::to_string(k);
        p.caption = "what it measures, in a few words that wrap";
        p.missing = "not here";
    }
    const Measure m;
    const ExplainLayout L = lay_out_explain(in, m);
    const int T = t.T_q();
    CHECK(L.grids[1].w() == 0.0f);  // the missing map: its note instead
    int notes = 0, cells = 0;
    for (const Item& it : L.items) {
        if (it.role == ItemRole::Note) {
            ++notes;
            CHECK(it.text == "not here");
        }
        if (it.kind != Item::Rect || it.role != ItemRole::Other || it.index < 0 || it.stroke_width > 0) continue;
        ++cells;
        const bool inside = (it.box.x0 >= L.grids[0].x0 - 1e-3f && it.box.x1 <= L.grids[0].x1 + 1e-3f) ||
                            (it.box.x0 >= L.grids[2].x0 - 1e-3f && it.box.x1 <= L.grids[2].x1 + 1e-3f);
        CHECK(inside);
    }
    CHECK(notes == 1);
    CHECK(cells == 2 * T * T);
    for (int k : {0, 2}) {
        const Box& g = L.grids[static_cast<size_t>(k)];
        CHECK(g.x0 >= in.box.x0);
        CHECK(g.x1 <= in.box.x1);
        CHECK(g.y1 <= in.box.y1);
        CHECK(std::fabs(g.w() - g.h()) < 1e-3f);  // square cells, T×T
        for (int q = 0; q < T; ++q)
            for (int j = 0; j < T; ++j) {
                const ExplainLayout::Hit h = L.hit(g.x0 + (j + 0.5f) * L.cell, g.y0 + (q + 0.5f) * L.cell);
                CHECK((h.map == k && h.query == q && h.key == j));
            }
    }
    CHECK(L.grids[0].x1 < L.grids[2].x0);
    CHECK(L.hit(in.box.x0 + 1, in.box.y0 + 1).map == -1);

    // A phone's width: the maps one above another, inside the box.
    in.box = {0, 0, 330, 1300};
    const ExplainLayout N = lay_out_explain(in, m);
    CHECK(N.grids[0].y1 < N.grids[2].y0);
    CHECK(std::fabs(N.grids[0].x0 - N.grids[2].x0) < 1e-3f);
    for (const Item& it : N.items)
        if (it.kind == Item::Rect && it.role == ItemRole::Other) {
            CHECK(it.box.x0 >= in.box.x0);
            CHECK(it.box.x1 <= in.box.x1);
            CHECK(it.box.y1 <= in.box.y1);
        }
}
