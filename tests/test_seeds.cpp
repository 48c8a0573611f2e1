// The seeds' printed numbers, reproduced from the presets (shared/seeds/README.md).
#include "presets.hpp"

#include "test_util.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <string>

using namespace attn;
using attn::test::preset_trace;

namespace {

std::string fmt(const char* format, double v) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, format, v);
    return buffer;
}

// Compares every entry of m, formatted with `format`, with the printed table.
void check_printed(const Matrix& m, const std::vector<std::vector<double>>& printed, const char* format) {
    REQUIRE(m.rows() == static_cast<Eigen::Index>(printed.size()));
    for (Eigen::Index i = 0; i < m.rows(); ++i) {
        REQUIRE(m.cols() == static_cast<Eigen::Index>(printed[i].size()));
        for (Eigen::Index j = 0; j < m.cols(); ++j) {
            CAPTURE(i);
            CAPTURE(j);
            CHECK(fmt(format, m(i, j)) == fmt(format, printed[i][j]));
        }
    }
}

// Agreement to `digits` significant digits with a table printed to more digits (R prints 7):
// within half a unit of the last kept digit, plus the printout's own rounding.
void check_significant(const Matrix& m, const std::vector<std::vector<double>>& printed, int digits,
                       int printed_digits) {
    for (Eigen::Index i = 0; i < m.rows(); ++i)
        for (Eigen::Index j = 0; j < m.cols(); ++j) {
            const double want = printed.at(i).at(j);
            const double unit = std::pow(10.0, std::floor(std::log10(std::fabs(want))) + 1);
            const double tolerance = 0.5 * unit * (std::pow(10.0, -digits) + std::pow(10.0, -printed_digits));
            CAPTURE(i);
            CAPTURE(j);
            CAPTURE(fmt("%.9g", m(i, j)));
            CHECK(std::fabs(m(i, j) - want) <= tolerance);
        }
}

// The article rounds its weight tables so each row sums to 1: within 0.01 of each entry.
void check_rounded_table(const Matrix& m, const std::vector<std::vector<double>>& printed) {
    for (Eigen::Index i = 0; i < m.rows(); ++i)
        for (Eigen::Index j = 0; j < m.cols(); ++j) {
            CAPTURE(i);
            CAPTURE(j);
            CHECK(std::fabs(m(i, j) - printed.at(i).at(j)) < 0.01);
        }
}

}  // namespace

TEST_CASE("seed 001 (five-tokens): scaled scores and the softmax table to 4 decimals") {
    const Trace t = preset_trace("five-tokens");
    const HeadTrace& h = t.attention.heads.at(0);
    check_printed(h.scaled, {{1.0000, 0.0000, 0.5000, 0.5000, 0.7500},
                             {0.0000, 1.0000, 0.5000, 0.5000, 0.2500},
                             {0.5000, 0.5000, 1.0000, 0.0000, 0.7500},
                             {0.5000, 0.5000, 0.0000, 1.0000, 0.2500},
                             {0.7500, 0.2500, 0.7500, 0.2500, 0.7500}},
                  "%.4f");
    check_printed(h.weights, {{0.2976, 0.1095, 0.1805, 0.1805, 0.2318},
                              {0.1205, 0.3275, 0.1986, 0.1986, 0.1547},
                              {0.1805, 0.1805, 0.2976, 0.1095, 0.2318},
                              {0.1986, 0.1986, 0.1205, 0.3275, 0.1547},
                              {0.2374, 0.1440, 0.2374, 0.1440, 0.2374}},
                  "%.4f");
}

TEST_CASE("seed 002 (i-am-good): Z = softmax(XXᵀ)X to 6 significant digits, weights as the article rounds them") {
    const Trace t = preset_trace("i-am-good");
    check_significant(t.attention.output,
                      {{1, 2.957691, 2.011295}, {1, 1.540148, 2.722573}, {1, 2.864164, 2.000000}}, 6, 7);
    check_rounded_table(t.attention.heads.at(0).weights, {{0.97, 0.02, 0.01}, {0.27, 0.73, 0.00}, {0.90, 0.05, 0.05}});
}

TEST_CASE("seed 002 (i-am-good-cross): softmax(XYᵀ) equals the article's table to 2 decimals") {
    const Trace t = preset_trace("i-am-good-cross");
    CHECK(t.queries == std::vector<std::string>{"I", "am", "good"});
    CHECK(t.keys == std::vector<std::string>{"我", "很", "好"});
    check_printed(t.attention.heads.at(0).weights, {{0.10, 0.66, 0.24}, {0.49, 0.49, 0.02}, {0.16, 0.42, 0.42}},
                  "%.2f");
}

TEST_CASE("seed 003 (wo-ai-ni): d_model 1, the computed softmax of [1 2 3]·[1 2 3]ᵀ") {
    const Trace t = preset_trace("wo-ai-ni");
    check_printed(t.attention.heads.at(0).scores, {{1, 2, 3}, {2, 4, 6}, {3, 6, 9}}, "%g");
    check_printed(t.attention.heads.at(0).weights.topRows(1), {{0.0900, 0.2447, 0.6652}}, "%.4f");
}

TEST_CASE("seed 004 presets: the causal triangle, the translation alignment, three heads") {
    const Trace masked = preset_trace("masked-apple");
    const Matrix& w = masked.attention.heads.at(0).weights;
    for (int i = 0; i < 4; ++i)
        for (int j = i + 1; j < 4; ++j) CHECK(w(i, j) == 0.0f);
    CHECK(w(0, 0) == 1.0f);

    const Trace cross = preset_trace("cross-rain");
    const Matrix& c = cross.attention.heads.at(0).weights;
    auto strongest_key = [&](int row) {
        Eigen::Index best;
        c.row(row).maxCoeff(&best);
        return cross.keys[best];
    };
    CHECK(strongest_key(1) == "雨");  // rained
    CHECK(strongest_key(2) == "很");  // heavily
    CHECK(strongest_key(3) == "那");  // that
    CHECK(strongest_key(4) == "天");  // day

    const Trace multi = preset_trace("multi-head-rain");
    REQUIRE(multi.heads == 3);
    const int he = 6;  // 他
    REQUIRE(multi.queries[he] == "他");
    const char* focus[] = {"她", "雨", "等"};
    for (int h = 0; h < 3; ++h) {
        Eigen::Index best;
        multi.attention.heads[h].weights.row(he).maxCoeff(&best);
        CHECK(multi.keys[best] == focus[h]);
    }
}

TEST_CASE("every preset is valid, named, described, and round-trips through its file") {
    CHECK(presets().size() >= 7);
    for (const Scene& s : presets()) {
        CAPTURE(s.name);
        CHECK(!s.name.empty());
        CHECK(s.description.size() > 40);
        CHECK(read_scene(write_scene(s)) == s);
        const Trace t = compute(s);
        CHECK(t.attention.output.allFinite());
    }
}
