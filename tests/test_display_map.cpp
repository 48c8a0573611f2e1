// test_display_map.cpp: the heatmap's 8-bit display copy against plain loops over the trace.
#include "display_map.hpp"

#include "scene_cases.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

using namespace attn;

namespace {

// The map by plain loops: one row of one head at a time, the mean as sum / heads, the range
// over allowed cells, each pyramid texel as the max over its whole square of level-0 cells.
struct Oracle {
    float lo = 0, hi = 1;
    std::vector<std::vector<std::uint8_t>> levels;
};

Oracle oracle(const Trace& t, int head, bool scores) {
    const int T_q = t.T_q(), T_k = t.T_k();
    const bool mean = head < 0;
    std::vector<float> values(static_cast<size_t>(T_q) * T_k, 0.0f), w(T_k), sc(T_k);
    for (int q = 0; q < T_q; ++q) {
        for (int h = mean ? 0 : head; h < (mean ? t.heads : head + 1); ++h) {
            attention_rows(t, h, q, q + 1, w.data(), sc.data());
            for (int k = 0; k < T_k; ++k) values[static_cast<size_t>(q) * T_k + k] += scores ? sc[k] : w[k];
        }
        if (mean)
            for (int k = 0; k < T_k; ++k) values[static_cast<size_t>(q) * T_k + k] /= static_cast<float>(t.heads);
    }
    Oracle o;
    if (scores) {
        o.lo = std::numeric_limits<float>::infinity(), o.hi = -o.lo;
        for (int q = 0; q < T_q; ++q)
            for (int k = 0; k < T_k; ++k)
                if (t.allowed(q, k)) {
                    o.lo = std::min(o.lo, values[static_cast<size_t>(q) * T_k + k]);
                    o.hi = std::max(o.hi, values[static_cast<size_t>(q) * T_k + k]);
                }
    }
    for (int l = 0;; ++l) {
        const int s = 1 << l, rows = (T_q + s - 1) / s, cols = (T_k + s - 1) / s;
        std::vector<std::uint8_t> level(static_cast<size_t>(rows) * cols);
        for (int r = 0; r < rows; ++r)
            for (int c = 0; c < cols; ++c) {
                int best = -1;
                for (int q = r * s; q < std::min((r + 1) * s, T_q); ++q)
                    for (int k = c * s; k < std::min((c + 1) * s, T_k); ++k)
                        if (t.allowed(q, k)) {
                            const float x = values[static_cast<size_t>(q) * T_k + k];
                            int v = 127;
                            if (o.hi > o.lo) v = static_cast<int>(std::floor((x - o.lo) * (254.0f / (o.hi - o.lo)) + 0.5f));
                            best = std::max(best, std::clamp(v, 0, 254));
                        }
                level[static_cast<size_t>(r) * cols + c] = best < 0 ? 255 : static_cast<std::uint8_t>(best);
            }
        o.levels.push_back(std::move(level));
        if (std::max(rows, cols) <= kTopLevelSide) break;
    }
    return o;
}

void check_against(const DisplayMap& m, const Oracle& o) {
    REQUIRE(m.levels.size() == o.levels.size());
    CHECK(m.complete());
    CHECK(m.lo == o.lo);
    CHECK(m.hi == o.hi);
    for (size_t l = 0; l < o.levels.size(); ++l) {
        CAPTURE(l);
        CHECK(m.levels[l].texels == o.levels[l]);
    }
}

std::vector<std::string> scenes() {
    std::vector<std::string> all = cases::mask_scenes();
    all.insert(all.end(), {
        R"({"kind": "masked", "tokens": )" + cases::tokens_json(200, 23) + R"(, "d_model": 16, "heads": 2, "weights": {"seed": 11}})",
        R"({"tokens": ["one"], "d_model": 4})",
    });
    return all;
}

}  // namespace

TEST_CASE("display map: quantisation to 0..254 with 255 for masked") {
    CHECK(quantize(0.0f, 0.0f, 1.0f) == 0);
    CHECK(quantize(1.0f, 0.0f, 1.0f) == 254);
    CHECK(quantize(0.5f, 0.0f, 1.0f) == 127);
    CHECK(quantize(0.499f / 254.0f, 0.0f, 1.0f) == 0);
    CHECK(quantize(0.501f / 254.0f, 0.0f, 1.0f) == 1);
    CHECK(quantize(-3.0f, -2.0f, 2.0f) == 0);   // clamped
    CHECK(quantize(9.0f, -2.0f, 2.0f) == 254);
    CHECK(quantize(1.0f, 1.0f, 1.0f) == 127);   // min == max: the middle of the map
    CHECK(quantize(std::nanf(""), 0.0f, 1.0f) == 0);
    for (int v = 0; v <= kTopTexel; ++v)
        CHECK(quantize(dequantize(static_cast<std::uint8_t>(v), -3.0f, 5.0f), -3.0f, 5.0f) == v);
    CHECK(kMaskedTexel == 255);
}

TEST_CASE("display map: one head and the mean, weights and scores, full and long traces, against plain loops") {
    for (const std::string& text : scenes()) {
        CAPTURE(text.substr(0, 70));
        const Scene s = read_scene(text);
        for (std::int64_t cells : {kFullTraceCells, std::int64_t{0}}) {
            const Trace t = compute(s, cells);
            CHECK(t.is_long() == (cells == 0));
            for (int head = -1; head < s.heads; ++head)
                for (bool scores : {false, true}) {
                    CAPTURE(head);
                    CAPTURE(scores);
                    CAPTURE(t.is_long());
                    const DisplayMap m = build_display_map(t, head, scores);
                    CHECK(m.head == (s.heads == 1 && head < 0 ? -1 : head));
                    CHECK(m.scores == scores);
                    CHECK(m.range_known);
                    check_against(m, oracle(t, head, scores));
                    if (!scores) CHECK((m.lo == 0.0f && m.hi == 1.0f));
                    bool masked = false;
                    for (int q = 0; q < t.T_q(); ++q)
                        for (int k = 0; k < t.T_k(); ++k) {
                            masked |= t.allowed(q, k) == 0;
                            CHECK((m.levels[0].at(q, k) == kMaskedTexel) == (t.allowed(q, k) == 0));
                        }
                    CHECK(m.any_masked == masked);
                }
        }
    }
}

TEST_CASE("display map: the pyramid keeps a single strong weight and masks only all-masked squares") {
    // 130 tokens: query 5 may attend only to key 77 (weight 1); queries 100.. to nothing.
    std::string mask = "[";
    for (int q = 0; q < 130; ++q) {
        mask += '[';
        for (int k = 0; k < 130; ++k) mask += (q == 5 ? k == 77 : q < 100) ? "1," : "0,";
        mask.back() = ']';
        mask += ',';
    }
    mask.back() = ']';
    const Scene s = read_scene(R"({"tokens": )" + cases::tokens_json(130, 23) + R"(, "d_model": 8, "weights": {"seed": 2}, "mask": )" + mask + "}");
    const DisplayMap m = build_display_map(compute(s), 0, false);
    REQUIRE(m.levels.size() == 3);  // 130, 65, 33: the pyramid stops once both sides fit 64
    CHECK(m.levels[2].rows == 33);
    CHECK(m.levels[0].at(5, 77) == kTopTexel);
    CHECK(m.levels[1].at(2, 38) == kTopTexel);
    CHECK(m.levels[2].at(1, 19) == kTopTexel);  // rows 4..7, keys 76..79
    CHECK(m.levels[2].at(1, 18) != kTopTexel);
    CHECK(m.levels[2].at(1, 18) < 10);           // spread attention: about 1/130
    CHECK(m.levels[2].at(24, 0) != kMaskedTexel);  // rows 96..99: some allowed
    for (int r = 25; r < 33; ++r)
        for (int c = 0; c < 33; ++c) CHECK(m.levels[2].at(r, c) == kMaskedTexel);
    CHECK(m.any_masked);
}

TEST_CASE("display map: incremental building equals one shot, and rows done never change") {
    for (const std::string& text : scenes()) {
        CAPTURE(text.substr(0, 70));
        const Scene s = read_scene(text);
        const Trace t = compute(s, 0);
        for (int head : {-1, 0})
            for (bool scores : {false, true}) {
                const DisplayMap whole = build_display_map(t, head, scores);
                DisplayMapBuilder b;
                b.start(t, head, scores, 7);
                double last = -1.0;
                int calls = 0;
                while (!b.step(1e30, 1)) {
                    ++calls;
                    CHECK(b.progress() > last);
                    CHECK(b.progress() < 1.0);
                    last = b.progress();
                    const DisplayMap& part = b.map();
                    for (size_t l = 0; l < part.levels.size(); ++l) {
                        const DisplayLevel& a = part.levels[l];
                        const size_t n = static_cast<size_t>(a.done_rows) * a.cols;
                        CHECK(std::equal(a.texels.begin(), a.texels.begin() + static_cast<std::ptrdiff_t>(n),
                                         whole.levels[l].texels.begin()));
                    }
                }
                const int blocks = (t.T_q() + 6) / 7, heads = head < 0 ? s.heads : 1;
                CHECK(calls + 1 == blocks * heads * (scores ? 2 : 1));
                CHECK(b.progress() == 1.0);
                CHECK(b.scratch_bytes() == 0);
                check_against(b.map(), oracle(t, head, scores));
            }
    }
}

TEST_CASE("display map: a time budget of zero still makes progress; bytes are the texels") {
    const Scene s = read_scene(R"({"tokens": )" + cases::tokens_json(300, 23) + R"(, "d_model": 8, "heads": 2, "weights": {"seed": 4}})");
    const Trace t = compute(s);
    DisplayMapBuilder b;
    b.start(t, -1, false, 16);
    int steps = 0;
    while (!b.step(0.0)) ++steps;
    CHECK(steps + 1 == 19 * 2);  // one unit per call: 19 blocks of 16 rows × 2 heads
    // 300² + 150² + 75² + 38²
    CHECK(b.map().bytes() == 300u * 300 + 150 * 150 + 75 * 75 + 38 * 38);
}

TEST_CASE("display map: weights on the log scale, four decades, against a plain loop") {
    CHECK(colormap_position(1.0f, 0, 0, true) == 1.0f);
    CHECK(colormap_position(0.01f, 0, 0, true) == doctest::Approx(0.5f));
    CHECK(colormap_position(1e-4f, 0, 0, true) == 0.0f);
    CHECK(colormap_position(0.0f, 0, 0, true) == 0.0f);  // below the floor: the bottom colour
    CHECK(colormap_position(0.25f, 0, 1, false) == 0.25f);
    CHECK(colormap_position(3.0f, 3, 3, false) == 0.5f);
    for (const std::string& text : scenes()) {
        CAPTURE(text.substr(0, 70));
        const Scene s = read_scene(text);
        const Trace t = compute(s, 0);  // long: rows on demand
        for (int head = -1; head < s.heads; ++head) {
            CAPTURE(head);
            const DisplayMap m = build_display_map(t, head, false, true);
            CHECK(m.log);
            CHECK_FALSE(build_display_map(t, head, true, true).log);  // scores stay linear
            const Trace full = compute(s);
            const int T_q = full.T_q(), T_k = full.T_k();
            for (int q = 0; q < T_q; ++q)
                for (int k = 0; k < T_k; ++k) {
                    double w = 0.0;
                    const bool mean = head < 0 || s.heads == 1;
                    for (int h = mean ? 0 : head; h < (mean ? s.heads : head + 1); ++h)
                        w += full.attention.heads[static_cast<size_t>(h)].weights(q, k);
                    w /= mean ? s.heads : 1;
                    const double pos = std::clamp(1.0 + std::log10(std::max(w, 1e-4)) / 4.0, 0.0, 1.0);
                    const int want = full.allowed(q, k) ? static_cast<int>(std::floor(pos * 254.0 + 0.5)) : 255;
                    if (std::abs(m.levels[0].at(q, k) - want) > 1) {  // one bin of float rounding
                        CAPTURE(q);
                        CAPTURE(k);
                        CHECK(int{m.levels[0].at(q, k)} == want);
                    }
                }
        }
    }
}
