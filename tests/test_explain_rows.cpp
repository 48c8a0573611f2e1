// Explain and Compare one query's row at a time (core/figure/explain_rows.hpp, issue 47): value
// norms by their Gram form against ‖v·W‖ in double, a rollout row against attention_rollout's
// matrices over many stacks (causal or not, a row of zeros, any block of rows), and the strips'
// layout (columns cover every key once, hits give the keys back, the strongest keys named).
#include "attention_maps.hpp"
#include "explain_rows.hpp"
#include "oracle.hpp"
#include "pool.hpp"
#include "test_util.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

using namespace attn;

namespace {

struct RowsMeasure final : TextMeasure {
    float size(FontRole role) const override { return role == FontRole::Small ? 12.0f : 15.0f; }
    float width(std::string_view text, FontRole role) const override { return 0.55f * size(role) * static_cast<float>(text.size()); }
};

// A stack of `layers` × `heads` random row-stochastic maps over T tokens: causal or not, row
// `zero_row` (≥ 0) all zeros (a fully masked query), as an import holds them.
AttentionStack random_stack(oracle::Random& rng, int layers, int heads, int T, bool causal, int zero_row) {
    AttentionStack s;
    s.name = "attention", s.layers = layers, s.heads = heads;
    for (int i = 0; i < T; ++i) s.queries.push_back("t" + std::to_string(i));
    s.keys = s.queries;
    for (int m = 0; m < layers * heads; ++m) {
        Matrix a(T, T);
        for (int i = 0; i < T; ++i) {
            float sum = 0;
            for (int j = 0; j < T; ++j) sum += a(i, j) = causal && j > i ? 0.0f : std::exp(3.0f * rng.uniform());
            a.row(i) /= sum;
            if (i == zero_row) a.row(i).setZero();
        }
        s.maps.push_back(a);
    }
    return s;
}

}  // namespace

TEST_CASE("value norms: the Gram form is ||v W|| in double, every shape") {
    oracle::Random rng(50);
    struct Shape {
        int T, d_k, d;
        float scale;
    };
    const Shape shapes[] = {{1, 1, 1, 1.0f}, {7, 3, 5, 1.0f}, {33, 16, 40, 0.01f}, {100, 64, 576, 1.0f}, {20, 8, 8, 300.0f}, {5, 64, 32, 1.0f}};
    double worst = 0;
    for (const Shape& sh : shapes) {
        CAPTURE(sh.T);
        CAPTURE(sh.d_k);
        Matrix v = rng.matrix(sh.T, sh.d_k) * sh.scale, w = rng.matrix(sh.d_k, sh.d);
        if (sh.T > 2) v.row(1).setZero();  // a value of zeros: norm 0
        const RowVector n = value_norms(v, w);
        REQUIRE(n.size() == sh.T);
        for (int j = 0; j < sh.T; ++j) {
            double sq = 0;
            for (int c = 0; c < sh.d; ++c) {
                double f = 0;
                for (int a = 0; a < sh.d_k; ++a) f += static_cast<double>(v(j, a)) * w(a, c);
                sq += f * f;
            }
            const double want = std::sqrt(sq);
            worst = std::max(worst, std::abs(n(j) - want) / std::max(want, 1e-30));
            if (want == 0) CHECK(n(j) == 0.0f);
        }
    }
    MESSAGE("value norms: worst relative difference ", worst);
    CHECK(worst < 1e-5);
}

TEST_CASE("rollout of one row: attention_rollout's row, every stack, layer, query and block of rows") {
    oracle::Random rng(47);
    struct Case {
        int layers, heads, T;
        bool causal;
        int zero_row;
    };
    const Case cases[] = {{1, 1, 1, false, -1}, {1, 2, 5, true, -1},   {3, 2, 9, true, 4},   {4, 3, 17, false, -1},
                          {2, 4, 40, true, -1}, {5, 1, 12, false, 0}, {3, 3, 33, true, 32}};
    double worst = 0;
    int rows = 0;
    for (const Case& c : cases) {
        CAPTURE(c.T);
        CAPTURE(c.causal);
        auto attention = std::make_shared<ImportedAttention>();
        attention->stacks.push_back(random_stack(rng, c.layers, c.heads, c.T, c.causal, c.zero_row));
        const Figure figure = layered_figure(attention, "", {c.causal});
        const std::vector<Matrix> full = attention_rollout(attention->stacks[0], HeadReduce::Mean);
        for (int layer = 0; layer < c.layers; ++layer)
            for (int q = 0; q < c.T; ++q)
                for (int block : {1, 3, 0}) {
                    RolloutRow r;
                    r.start(figure_rows(figure, 0), layer, q, block);
                    double last = -1;
                    while (!r.step(0.0)) {  // a unit at a time: the progress only grows
                        CHECK(r.progress() >= last);
                        last = r.progress();
                    }
                    CHECK(r.progress() == 1.0);
                    worst = std::max(worst, static_cast<double>((r.row() - full[static_cast<size_t>(layer)].row(q)).cwiseAbs().maxCoeff()));
                    if (c.causal) CHECK(r.row().tail(c.T - q - 1).isZero(0));  // a causal stack stays causal
                    CHECK(std::abs(r.row().sum() - 1.0f) < 1e-5f);              // and a row a distribution
                    ++rows;
                }
    }
    MESSAGE(rows, " rollout rows: worst difference from attention_rollout ", worst);
    CHECK(worst < 1e-5);
    // on threads (a head a part; 400 tokens: enough work a unit to split): the same row, bit for bit
    {
        auto attention = std::make_shared<ImportedAttention>();
        attention->stacks.push_back(random_stack(rng, 3, 5, 400, true, -1));
        const Figure figure = layered_figure(attention, "", {true});
        kernels::Pool pool(3);
        RolloutRow one, three;
        one.start(figure_rows(figure, 0), 2, 399);
        three.start(figure_rows(figure, 0), 2, 399, 0, &pool);
        while (!one.step(1.0)) {}
        while (!three.step(1.0)) {}
        CHECK(test::same_bits(one.row(), three.row()));
        CHECK(one.row().sum() > 0.99f);
    }
    // the source holds its maps weakly: let go of them and the row stops, all 0 (a view's cache
    // never keeps a long run alive)
    {
        auto attention = std::make_shared<ImportedAttention>();
        attention->stacks.push_back(random_stack(rng, 3, 2, 30, true, -1));
        auto figure = std::make_unique<Figure>(layered_figure(attention, "", {true}));
        RolloutRow r;
        r.start(figure_rows(*figure, 0), 2, 29, 1);
        r.step(0.0);
        REQUIRE(!r.done());
        const std::weak_ptr<const ImportedAttention> held = attention;
        figure.reset(), attention.reset();
        CHECK(held.expired());
        while (!r.step(0.0)) {}
        CHECK(r.row().isZero(0));
    }
    // cross attention has no rollout; nor a source without rows
    auto cross = std::make_shared<ImportedAttention>();
    cross->stacks.push_back(random_stack(rng, 1, 1, 4, false, -1));
    cross->stacks[0].name = "cross_attention";
    const RowSource src = figure_rows(layered_figure(cross, "", {false}), 0);
    CHECK(src.no_rollout == "cross");
    RolloutRow none;
    none.start(src, 0, 0);
    CHECK(none.done());
    CHECK(none.row().isZero(0));
}

TEST_CASE("rows layout: columns cover every key once, hits give them back, the strongest keys named") {
    const RowsMeasure m;
    for (int T : {1, 20, 700, 8192}) {
        for (float width : {390.0f, 1200.0f}) {
            CAPTURE(T);
            CAPTURE(width);
            std::vector<std::string> keys;
            for (int j = 0; j < T; ++j) keys.push_back("k" + std::to_string(j));
            RowVector w = RowVector::Zero(T), d = RowVector::Zero(T);
            for (int j = 0; j < T; ++j) w(j) = 1.0f / static_cast<float>(1 + (j * 7919) % 101), d(j) = (j % 2 ? -1.0f : 1.0f) * w(j);
            w(T / 2) = 2.0f;  // the strongest
            RowsInput in;
            in.box = {0, 0, width, 600};
            in.heading = "Query";
            in.panels[0] = {"weights", "caption", &w, "", 1.0, &keys, T / 2, T / 2 + 1, false};
            in.panels[1] = {"missing", "caption", nullptr, "rolling out", 0.4, &keys, -1, -1, false};
            in.panels[2] = {"difference", "caption", &d, "", 1.0, &keys, -1, -1, true};
            const RowsLayout L = lay_out_rows(in, m);
            CHECK(L.strips[1].w() == 0.0f);
            for (int k : {0, 2}) {
                const Box& b = L.strips[static_cast<size_t>(k)];
                const std::vector<int>& e = L.columns[static_cast<size_t>(k)];
                REQUIRE(e.size() >= 2);
                CHECK(e.front() == 0);
                CHECK(e.back() == T);
                CHECK(std::is_sorted(e.begin(), e.end()));
                CHECK(std::adjacent_find(e.begin(), e.end()) == e.end());  // no empty column
                CHECK(b.x0 >= 0.0f);
                CHECK(b.x1 <= width);
                CHECK(static_cast<int>(e.size()) - 1 <= std::max(1, static_cast<int>(b.w() / 2.0f)));
                for (int j : {0, T / 3, T - 1}) {  // the column drawn over key j hits j's column
                    int c = 0;
                    while (e[static_cast<size_t>(c) + 1] <= j) ++c;
                    const float x = b.x0 + (c + 0.5f) * b.w() / static_cast<float>(e.size() - 1);
                    const RowsLayout::Hit h = L.hit(x, b.y0 + 1.0f);
                    CHECK(h.panel == k);
                    CHECK(h.k0 <= j);
                    CHECK(j < h.k1);
                }
                // bars inside the strip: on its floor, or (signed) up and down from its middle
                int bars = 0, up = 0, down = 0, floating = 0;
                const float mid = (b.y0 + b.y1) * 0.5f;
                for (const Item& it : L.items)
                    if (it.role == ItemRole::Strip && it.box.y0 >= b.y0 - 0.01f && it.box.y1 <= b.y1 + 0.01f && it.box.x0 >= b.x0 - 0.01f &&
                        it.box.x1 <= b.x1 + 0.01f) {
                        ++bars;
                        up += std::abs(it.box.y1 - mid) < 0.01f, down += std::abs(it.box.y0 - mid) < 0.01f;
                        floating += std::abs(it.box.y1 - b.y1) > 0.01f;
                    }
                CHECK(bars > 0);
                if (k == 2) CHECK(up > 0);
                if (k == 2 && T > 1) CHECK(down > 0);
                if (k == 0) CHECK(floating == 0);
            }
            // the strongest key is named first; a missing reading draws its note and progress
            bool named = false, note = false;
            for (const Item& it : L.items) {
                if (it.role == ItemRole::Number && it.index == T / 2) named = true;
                if (it.role == ItemRole::Note && it.text == "rolling out") note = true;
            }
            CHECK(named);
            CHECK(note);
            CHECK(L.content_h > 0.0f);
            CHECK(L.hit(-5.0f, -5.0f).panel == -1);
        }
    }
    {  // the log scale: a bar 1/100 of the largest stands half as tall (two of four decades), not 1/100
        std::vector<std::string> keys = {"a", "b", "c"};
        const RowVector w = (RowVector(3) << 1.0f, 0.01f, 1e-6f).finished();
        RowsInput in;
        in.box = {0, 0, 600, 400};
        in.panels[0] = {"weights", "", &w, "", 1.0, &keys, -1, -1, false};
        const auto heights = [&](bool log) {
            in.log = log;
            const RowsLayout L = lay_out_rows(in, m);
            std::vector<float> h(3, 0.0f);
            for (const Item& it : L.items)
                if (it.role == ItemRole::Strip) h[static_cast<size_t>(it.index)] = it.box.h();
            return h;
        };
        const std::vector<float> lin = heights(false), log = heights(true);
        CHECK(lin[1] < 0.05f * lin[0]);
        CHECK(std::abs(log[1] - 0.5f * log[0]) < 1.0f);
        CHECK(log[2] == 0.0f);  // below the four decades: no bar
    }
    const RowVector r = (RowVector(5) << 0.1f, -0.7f, 0.3f, 0.0f, 0.3f).finished();
    CHECK(strongest_keys(r, 3) == std::vector<int>{2, 4, 0});
    CHECK(strongest_keys(r, 2, true) == std::vector<int>{1, 2});
    CHECK(strongest_keys(r, 10).size() == 4);  // a zero is no key to name
}
