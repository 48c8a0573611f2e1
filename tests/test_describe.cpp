// The figure in words and as a table (core/figure/describe.hpp), the page's accessible twin:
// the seed's printed weights, a selected query, key and cell said in order, masked cells,
// the heads' mean against cell_values over the mask scenes (a fully masked row included), a
// long trace's recomputed rows, and the table cut at its size.
#include "describe.hpp"
#include "palette.hpp"
#include "presets.hpp"
#include "scene_cases.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <string>

using namespace attn;

TEST_CASE("describe: seed 002's cross attention, said and tabled") {
    const Scene* p = find_preset("i-am-good-cross");
    REQUIRE(p);
    const Trace t = compute(*p);
    DescribeInput in;
    in.trace = &t;
    in.words.kind = "cross";
    FigureDescription d = describe_figure(in);
    // The article's table, to two decimals (seeds/README.md, seed 002).
    const float want[3][3] = {{0.10f, 0.66f, 0.24f}, {0.49f, 0.49f, 0.02f}, {0.16f, 0.42f, 0.42f}};
    REQUIRE(d.cells.size() == 9);
    for (int q = 0; q < 3; ++q)
        for (int k = 0; k < 3; ++k) CHECK(std::abs(d.cells[q * 3 + k] - want[q][k]) < 0.005f);
    CHECK(d.rows == std::vector<std::string>{"I", "am", "good"});
    CHECK(d.cols == std::vector<std::string>{"我", "很", "好"});
    CHECK(d.caption == "cross attention weights, head 1 of 1: queries as rows, keys as columns");
    CHECK(d.summary == "Head 1 of 1. The strongest weight: \xe2\x80\x9cI\xe2\x80\x9d to \xe2\x80\x9c很\xe2\x80\x9d (0.66).");

    in.query = 0;
    d = describe_figure(in);
    CHECK(d.summary == "Head 1 of 1. \xe2\x80\x9cI\xe2\x80\x9d attends most to \xe2\x80\x9c很\xe2\x80\x9d (0.66), then "
                       "\xe2\x80\x9c好\xe2\x80\x9d (0.24), then \xe2\x80\x9c我\xe2\x80\x9d (0.10).");
    in.query = -1, in.key = 2;
    d = describe_figure(in);
    CHECK(d.summary == "Head 1 of 1. \xe2\x80\x9c好\xe2\x80\x9d is attended to most by \xe2\x80\x9cgood\xe2\x80\x9d (0.42), then "
                       "\xe2\x80\x9cI\xe2\x80\x9d (0.24), then \xe2\x80\x9c" "am\xe2\x80\x9d (0.02).");
    in.query = 1, in.key = 2;
    d = describe_figure(in);
    CHECK(d.summary.rfind("Head 1 of 1. \xe2\x80\x9c" "am\xe2\x80\x9d to \xe2\x80\x9c好\xe2\x80\x9d: 0.02. \xe2\x80\x9c" "am", 0) == 0);

    // Without the table (the page keeps the last one), a selection is said the same.
    in.table = false;
    const FigureDescription no_table = describe_figure(in);
    CHECK(no_table.summary == d.summary);
    CHECK(no_table.cells.empty());
    in.table = true;

    in.query = in.key = -1;
    in.max_rows = 2, in.max_cols = 1;
    d = describe_figure(in);
    CHECK(d.cells.size() == 2);
    CHECK(d.caption.find("(the first 2 of 3 queries and 1 of 3 keys)") != std::string::npos);
}

TEST_CASE("describe: the mask scenes' cells are each head's or the heads' mean, NaN where masked") {
    for (const std::string& text : cases::mask_scenes()) {
        CAPTURE(text.substr(0, 60));
        Scene s = read_scene(text);
        validate(s);
        const Trace t = compute(s);
        for (int head = -1; head < t.heads; ++head) {
            DescribeInput in;
            in.trace = &t;
            in.head = head;
            in.max_rows = 40, in.max_cols = 40;
            const FigureDescription d = describe_figure(in);
            const int rows = std::min(t.T_q(), 40), cols = std::min(t.T_k(), 40);
            REQUIRE(d.cells.size() == static_cast<size_t>(rows * cols));
            const bool mean = head < 0 && t.heads > 1;
            double worst = 0;
            int masked = 0;
            for (int q = 0; q < rows; ++q)
                for (int k = 0; k < cols; ++k) {
                    double want = 0;
                    for (int h = mean ? 0 : std::max(head, 0); h < (mean ? t.heads : std::max(head, 0) + 1); ++h) want += cell_values(t, h, q, k).weight;
                    want /= mean ? t.heads : 1;
                    const float got = d.cells[static_cast<size_t>(q * cols + k)];
                    if (!t.allowed(q, k)) {
                        CHECK(std::isnan(got));
                        ++masked;
                    } else {
                        worst = std::max(worst, std::abs(got - want));
                    }
                }
            CHECK(worst < 1e-6);
            // A fully masked row (the explicit mask's last) says nothing about it, and no NaN.
            for (int q = 0; q < t.T_q(); ++q) {
                in.query = q;
                const FigureDescription dq = describe_figure(in);
                CHECK(dq.summary.find("nan") == std::string::npos);
            }
        }
    }
}

TEST_CASE("describe: a long trace's rows are computed again, the same numbers") {
    Scene s = read_scene(R"({"kind": "masked", "tokens": )" + cases::tokens_json(300) + R"(, "d_model": 8, "heads": 2, "weights": {"seed": 4}})");
    validate(s);
    const Trace full = compute(s), long_trace = compute(s, 1000);
    REQUIRE(long_trace.is_long());
    DescribeInput a, b;
    a.trace = &full, b.trace = &long_trace;
    a.head = b.head = 1;
    a.query = b.query = 250;
    const FigureDescription da = describe_figure(a), db = describe_figure(b);
    CHECK(da.summary == db.summary);
    REQUIRE(da.cells.size() == db.cells.size());
    for (size_t i = 0; i < da.cells.size(); ++i) CHECK((std::isnan(da.cells[i]) ? std::isnan(db.cells[i]) : da.cells[i] == doctest::Approx(db.cells[i]).epsilon(1e-6)));
}

// WCAG 2's contrast ratio of two colours (relative luminance of sRGB).
static double contrast(const Color& a, const Color& b) {
    auto lum = [](const Color& c) {
        auto lin = [](double v) { return v <= 0.03928 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4); };
        return 0.2126 * lin(c.r) + 0.7152 * lin(c.g) + 0.0722 * lin(c.b);
    };
    const double x = lum(a), y = lum(b);
    return (std::max(x, y) + 0.05) / (std::min(x, y) + 0.05);
}

TEST_CASE("the figures' text and lines meet WCAG AA contrast in both themes") {
    for (const bool dark : {true, false}) {
        CAPTURE(dark);
        const FigurePalette& p = figure_palette(dark);
        CHECK(contrast(p.text, p.background) >= 4.5);        // text
        CHECK(contrast(p.text_muted, p.background) >= 4.5);  // captions, notes
        CHECK(contrast(p.text, p.token_fill) >= 4.5);        // a token's label on its box
        CHECK(contrast(p.accent, p.background) >= 3.0);      // the focus ring, the chosen map
        for (int h = 0; h < 10; ++h) {                       // the heads' lines (graphics: 3:1)
            CAPTURE(h);
            CHECK(contrast(head_color(dark, h), p.background) >= 3.0);
        }
    }
}
