// The views' layouts (core/figure/lines_layout.hpp, heatmap_layout.hpp) and the SVG written
// from them (core/svg): for the presets self, masked, cross, multi-head and an imported model,
// every token box, token label, cell and line of the SVG sits where the layout puts it, within
// 0.5 px; the largest deviation seen is printed. Text is measured by a deterministic fake, the
// same one for the layout and the SVG (as the screen and `attnviz render --svg` share fonts).
//
// [SECTION] A fake text measure
// [SECTION] A small SVG reader
// [SECTION] Figures
// [SECTION] Lines
// [SECTION] Heatmap
// [SECTION] Layout invariants
// [SECTION] Steps
#include "app_state.hpp"
#include "figure_layout.hpp"
#include "heatmap_layout.hpp"
#include "image_layout.hpp"
#include "colormaps.hpp"
#include "import_state.hpp"
#include "lines_layout.hpp"
#include "model_layout.hpp"
#include "palette.hpp"
#include "steps_layout.hpp"
#include "svg.hpp"
#include "why_layout.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace attn;

namespace {

// [SECTION] A fake text measure ----------------------------------------------------------------

// Widths from the code points (so every token gets its own width), the UI's font sizes, an
// ascent and em unlike the defaults (so a writer that ignored them would be caught).
struct FakeMeasure final : TextMeasure {
    float s = 1.0f;
    explicit FakeMeasure(float scale) : s(scale) {}
    float size(FontRole role) const override {
        return std::round((role == FontRole::Title ? 19.0f : role == FontRole::Small ? 12.5f : 15.0f) * s);
    }
    float width(std::string_view text, FontRole role) const override {
        float w = 0.0f;
        for (unsigned char c : text)
            if ((c & 0xc0) != 0x80) w += c >= 0x80 ? 1.0f : 0.45f + 0.01f * static_cast<float>(c % 23);
        return w * size(role);
    }
    float ascent(FontRole role) const override { return std::floor(size(role) * 0.77f + 1.0f); }
    float em(FontRole role) const override { return size(role) * 0.85f; }
    // CJK from a "merged" font, as web/ui/fonts.cpp bakes Droid Sans Fallback: larger, lower.
    bool fallback(char32_t c, FontRole role, Fallback& out) const override {
        if (c < 0x3000) return false;
        out = {size(role) * 1.1f, 2.0f};
        return true;
    }
};

// [SECTION] A small SVG reader -----------------------------------------------------------------

// One element: its name, attributes, and for <text> its character data (entities left as written).
struct Element {
    std::string name;
    std::map<std::string, std::string> attr;
    std::string text;
    int tspans = 0;  // runs of another font (CJK)
    bool has_class(const std::string& c) const {
        auto it = attr.find("class");
        if (it == attr.end()) return false;
        std::istringstream words(it->second);
        for (std::string w; words >> w;)
            if (w == c) return true;
        return false;
    }
    float num(const std::string& a) const {
        auto it = attr.find(a);
        REQUIRE_MESSAGE(it != attr.end(), "no attribute " << a << " on <" << name << ">");
        return std::stof(it->second);
    }
    int integer(const std::string& a) const { return std::stoi(attr.at(a)); }
};

std::vector<Element> read_elements(const std::string& svg) {
    std::vector<Element> out;
    for (size_t i = svg.find('<'); i != std::string::npos; i = svg.find('<', i + 1)) {
        if (svg[i + 1] == '/' || svg[i + 1] == '?') continue;
        const size_t end = svg.find('>', i);
        REQUIRE(end != std::string::npos);
        Element e;
        size_t p = i + 1;
        while (p < end && svg[p] != ' ' && svg[p] != '/' && svg[p] != '>') e.name += svg[p++];
        while (p < end) {
            while (p < end && (svg[p] == ' ' || svg[p] == '\n' || svg[p] == '/')) ++p;
            const size_t eq = svg.find('=', p);
            if (eq == std::string::npos || eq > end) break;
            const std::string key = svg.substr(p, eq - p);
            const size_t q0 = eq + 2, q1 = svg.find('"', q0);
            e.attr[key] = svg.substr(q0, q1 - q0);
            p = q1 + 1;
        }
        if (e.name == "text") {  // the character data, <tspan> tags taken out
            const std::string inner = svg.substr(end + 1, svg.find("</text>", end) - end - 1);
            for (size_t k = 0; k < inner.size(); ++k) {
                if (inner[k] == '<') {
                    e.tspans += inner.compare(k, 7, "<tspan ") == 0;
                    k = inner.find('>', k);
                    continue;
                }
                e.text += inner[k];
            }
        }
        out.push_back(std::move(e));
    }
    return out;
}

std::vector<const Element*> with_class(const std::vector<Element>& all, const std::string& name, const std::string& cls) {
    std::vector<const Element*> out;
    for (const Element& e : all)
        if (e.name == name && e.has_class(cls)) out.push_back(&e);
    return out;
}

// The largest deviation seen over a test case's checks (each prints its own).
struct Deviation {
    double worst = 0.0;
    long checks = 0;
    void near(double got, double want, const char* what) {
        const double d = std::fabs(got - want);
        worst = std::max(worst, d);
        ++checks;
        CHECK_MESSAGE(d <= 0.5, what << ": SVG " << got << ", layout " << want);
    }
};
// [SECTION] Figures ----------------------------------------------------------------------------

struct Case {
    std::string name;
    AppState st;
};

// The five figures (a moved AppState keeps its trace where it was: the figure shares it).
std::vector<Case> cases() {
    std::vector<Case> all;
    {
        for (const char* preset : {"i-am-good", "masked-apple", "cross-rain", "multi-head-rain"}) {
            Case c{preset, {}};
            c.st.load_preset(preset);
            REQUIRE(!c.st.figure.empty());
            all.push_back(std::move(c));
        }
        std::ifstream file(std::string(ATTN_TEST_DATA) + "/ui_import_gpt.json", std::ios::binary);
        const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
        Case c{"import ui_import_gpt.json", {}};
        REQUIRE(import_attention(c.st, text, "ui_import_gpt.json"));
        select_import_map(c.st, 0, 0);
        REQUIRE(!c.st.figure.empty());
        all.push_back(std::move(c));
    }
    return all;
}

// The frame and box both the SVG writer and the test lay out in.
FigureFrame frame_of(const SvgOptions& o, const TextMeasure& m) { return figure_frame(o.width, o.height, o.scale, m); }

// [SECTION] Lines ------------------------------------------------------------------------------

// Lays out the lines as svg.cpp does for `o`, and checks the SVG against it.
void check_lines(const Trace& tr, const SvgOptions& o, const FakeMeasure& m, const std::string& what, Deviation& deviation) {
    const std::string svg = write_svg(tr, o);
    const std::vector<Element> all = read_elements(svg);
    LinesInput in;
    in.trace = &tr;
    for (int h = 0; h < tr.heads; ++h)
        if (o.head_visible.empty() || o.head_visible[h]) in.visible.push_back(h);
    in.top_k = o.top_k;
    in.box = frame_of(o, m).box;
    in.scale = o.scale;
    in.legend = true;
    in.dark = o.dark;
    const LinesLayout L = lay_out_lines(in, m, label_widths(tr, lines_token_font(in, m), m));
    LinesWeights weights(tr);
    weights.build_all();
    LinesSelection sel;
    sel.query = o.selected_query, sel.key = o.selected_query >= 0 ? -1 : o.selected_key, sel.pinned = true;
    std::vector<LineSeg> lines;
    std::vector<LineRef> refs;
    choose_lines(L, sel, weights, o.threshold, lines, &refs);
    INFO(what);

    // Token boxes: the layout's box for the token's label, in the token's font.
    const auto queries = with_class(all, "rect", "query"), keys = with_class(all, "rect", "key");
    int boxes = 0;
    for (const auto* side : {&queries, &keys})
        for (const Element* e : *side) {
            if (e->attr.at("class").find("outline") != std::string::npos) continue;
            const bool query = side == &queries;
            const int i = e->integer("data-index");
            const std::string& t = query ? tr.queries[i] : tr.keys[i];
            const Box b = query ? L.query_box(i, m.width(token_text(t), L.font)) : L.key_box(i, m.width(token_text(t), L.font));
            deviation.near(e->num("x"), b.x0, "token x");
            deviation.near(e->num("y"), b.y0, "token y");
            deviation.near(e->num("x") + e->num("width"), b.x1, "token right");
            deviation.near(e->num("y") + e->num("height"), b.y1, "token bottom");
            ++boxes;
        }
    if (!L.compact) CHECK(boxes == L.T_q + L.T_k);

    // Token labels: end-anchored at the query box's right edge less the padding, start-anchored
    // at the key box's left edge plus it; the baseline the font's ascent below the (floored)
    // line top, which is centred on the row.
    for (const Element* e : with_class(all, "text", "token-label")) {
        const int i = e->integer("data-index");
        const bool query = e->attr.count("text-anchor") > 0;
        const std::string& t = query ? tr.queries[i] : tr.keys[i];
        const float w = m.width(token_text(t), L.font);
        const Box b = query ? L.query_box(i, w) : L.key_box(i, w);
        const float left = std::floor(b.x0 + L.pad);
        deviation.near(e->num("x"), query ? left + w : left, "label x");
        deviation.near(e->num("y"), std::floor((b.y0 + b.y1) * 0.5f - L.fs * 0.5f) + m.ascent(L.font), "label baseline");
        deviation.near(e->num("font-size"), m.em(L.font), "label font-size");
        CHECK(e->text == xml_escape(token_text(t)));
        // A CJK run is a <tspan> in the fallback font's size: one per run of such characters.
        const bool cjk = std::any_of(t.begin(), t.end(), [](char c) { return static_cast<unsigned char>(c) >= 0xe3; });
        CHECK((e->tspans > 0) == cjk);
    }

    // Lines: one per chosen line, in order, end points and width as the layout says.
    const auto drawn = with_class(all, "line", "line");
    REQUIRE(drawn.size() == lines.size());
    for (size_t n = 0; n < lines.size(); ++n) {
        const Element& e = *drawn[n];
        CHECK(e.integer("data-head") == refs[n].head);
        CHECK(e.integer("data-q") == refs[n].q);
        CHECK(e.integer("data-k") == refs[n].k);
        deviation.near(e.num("x1"), lines[n].x0, "line x1");
        deviation.near(e.num("y1"), lines[n].y0, "line y1");
        deviation.near(e.num("x2"), lines[n].x1, "line x2");
        deviation.near(e.num("y2"), lines[n].y1, "line y2");
        deviation.near(e.num("stroke-width"), lines[n].width, "line width");
        CHECK(std::fabs(e.num("stroke-opacity") - lines[n].a) <= 0.005f);
        CHECK(e.attr.at("stroke") == [&] {
            char hex[8];
            std::snprintf(hex, sizeof hex, "#%06x", static_cast<unsigned>(hex_rgb(head_color(o.dark, refs[n].head))));
            return std::string(hex);
        }());
    }
    MESSAGE(what << ": " << boxes << " token boxes, " << lines.size() << " lines");
}

TEST_CASE("lines SVG: tokens, labels and lines sit where the layout puts them (5 figures, selections, compact)") {
    const FakeMeasure m(1.0f);
    Deviation deviation;
    std::vector<Case> figures = cases();
    for (Case& c : figures) {
        const Trace& tr = c.st.figure.trace();
        for (bool dark : {false, true}) {
            SvgOptions o;
            o.view = SvgView::Lines;
            o.dark = dark;
            o.measure = &m;
            check_lines(tr, o, m, c.name + (dark ? " dark" : " light"), deviation);
        }
        SvgOptions o;
        o.view = SvgView::Lines;
        o.measure = &m;
        o.selected_query = tr.T_q() - 1;
        check_lines(tr, o, m, c.name + ", last query selected", deviation);
        o.selected_query = -1, o.selected_key = 0;
        check_lines(tr, o, m, c.name + ", first key selected", deviation);
    }
    // Compact rails (150 tokens in 800 px), and a larger UI scale and picture.
    std::string tokens;
    for (int i = 0; i < 150; ++i) tokens += (i ? " w" : "w") + std::to_string(i);
    const Trace long_tr = compute(read_scene(R"({"kind": "masked", "d_model": 8, "heads": 2, "tokens": ")" + tokens + "\"}"));
    SvgOptions o;
    o.view = SvgView::Lines;
    o.measure = &m;
    check_lines(long_tr, o, m, "150 tokens (rails)", deviation);
    o.selected_query = 40;
    check_lines(long_tr, o, m, "150 tokens (rails), query 40 selected", deviation);
    const FakeMeasure m2(2.0f);
    SvgOptions big;
    big.view = SvgView::Lines;
    big.scale = 2.0f, big.width = 2400.0f, big.height = 1600.0f, big.measure = &m2;
    check_lines(figures[3].st.figure.trace(), big, m2, "multi-head-rain at scale 2", deviation);
    MESSAGE("lines SVG against layout: " << deviation.checks << " positions, largest deviation " << deviation.worst << " px");
    CHECK(deviation.worst <= 0.5);
}

// [SECTION] Heatmap ----------------------------------------------------------------------------

void check_heatmap(const Trace& tr, const SvgOptions& o, const FakeMeasure& m, const std::string& what, Deviation& deviation) {
    const std::string svg = write_svg(tr, o);
    const std::vector<Element> all = read_elements(svg);
    HeatmapInput in;
    in.trace = &tr;
    in.box = frame_of(o, m).box;
    in.scale = o.scale;
    in.dark = o.dark;
    in.scores = o.scores;
    in.any_masked = tr.allowed.any_masked();
    in.zoom = o.zoom, in.view_x = o.view_x, in.view_y = o.view_y;
    const HeatmapLayout L = lay_out_heatmap(in, m, label_widths(tr, FontRole::Body, m));
    INFO(what);

    // Cells: the visible ones, each at the layout's place and size.
    const auto cells = with_class(all, "rect", "cell");
    CHECK(static_cast<int>(cells.size()) == (L.row1 - L.row0) * (L.col1 - L.col0));
    for (const Element* e : cells) {
        const int q = e->integer("data-q"), k = e->integer("data-k");
        CHECK((q >= L.row0 && q < L.row1 && k >= L.col0 && k < L.col1));
        CHECK(e->has_class("masked") == (tr.allowed(q, k) == 0));
        deviation.near(e->num("x"), L.cell_x(static_cast<float>(k)), "cell x");
        deviation.near(e->num("y"), L.cell_y(static_cast<float>(q)), "cell y");
        deviation.near(e->num("width"), L.cell, "cell width");
        deviation.near(e->num("height"), L.cell, "cell height");
    }
    // Row labels end 8 px left of the grid, centred on their row; column labels centred on their
    // column (upright) or turned about a point half a line left of the column's centre.
    const float fs = m.size(FontRole::Body);
    for (const Element* e : with_class(all, "text", "row-label")) {
        const int q = e->integer("data-index");
        const float w = m.width(token_text(tr.queries[q]), FontRole::Body);
        deviation.near(e->num("x"), std::floor(L.grid.x0 - w - 8.0f * L.s) + w, "row label x");
        deviation.near(e->num("y"), std::floor(L.cell_y(q + 0.5f) - fs * 0.5f) + m.ascent(FontRole::Body), "row label baseline");
    }
    int col_labels = 0;
    for (const Element* e : with_class(all, "text", "col-label")) {
        const int k = e->integer("data-index");
        const float w = m.width(token_text(tr.keys[k]), FontRole::Body);
        const float cx = L.cell_x(k + 0.5f);
        if (L.upright) {
            deviation.near(e->num("x"), std::floor(cx - w * 0.5f) + w * 0.5f, "column label x");
            deviation.near(e->num("y"), std::floor(L.grid.y0 - fs - 6.0f * L.s) + m.ascent(FontRole::Body), "column label baseline");
        } else {
            deviation.near(e->num("x"), std::floor(cx - fs * 0.5f), "turned column label x");
            CHECK(e->attr.at("transform").find("rotate(-90") == 0);
        }
        ++col_labels;
    }
    CHECK(col_labels == (L.upright && L.zoom == 1.0f ? L.col1 - L.col0 : col_labels));
    // The legend's bar where the layout puts it.
    const auto bar = with_class(all, "rect", "legend-bar");
    REQUIRE(bar.size() == 1);
    deviation.near(bar[0]->num("x"), L.bar.x0, "legend x");
    deviation.near(bar[0]->num("y"), L.bar.y0, "legend y");
    deviation.near(bar[0]->num("height"), L.bar.h(), "legend height");
    MESSAGE(what << ": " << cells.size() << " cells of " << L.cell << " px, labels " << std::string(L.upright ? "upright" : "turned"));
}

TEST_CASE("heatmap SVG: cells, labels and legend sit where the layout puts them (5 figures, zoomed, scores)") {
    const FakeMeasure m(1.0f);
    Deviation deviation;
    std::vector<Case> figures = cases();
    for (Case& c : figures) {
        const Trace& tr = c.st.figure.trace();
        SvgOptions o;
        o.view = SvgView::Heatmap;
        o.measure = &m;
        check_heatmap(tr, o, m, c.name, deviation);
        o.dark = true, o.scores = c.st.figure.has(Detail::Scores), o.head = -1;
        check_heatmap(tr, o, m, c.name + ", dark, mean of heads", deviation);
        o.zoom = 2.5f, o.view_x = 0.7f, o.view_y = 0.4f;
        check_heatmap(tr, o, m, c.name + ", zoomed 2.5×", deviation);
    }
    std::string tokens;
    for (int i = 0; i < 40; ++i) tokens += (i ? " token" : "token") + std::to_string(i);
    const Trace tr = compute(read_scene(R"({"kind": "masked", "d_model": 8, "tokens": ")" + tokens + "\"}"));
    SvgOptions o;
    o.view = SvgView::Heatmap;
    o.measure = &m;
    check_heatmap(tr, o, m, "40 long tokens (turned column labels)", deviation);
    MESSAGE("heatmap SVG against layout: " << deviation.checks << " positions, largest deviation " << deviation.worst << " px");
    CHECK(deviation.worst <= 0.5);
}

// [SECTION] Layout invariants ------------------------------------------------------------------

TEST_CASE("lines layout: rows of at least 12 px at scale 1 or rails; boxes inside the view; one palette") {
    const FakeMeasure m(1.0f);
    std::vector<Case> figures = cases();
    for (Case& c : figures) {
        const Trace& tr = c.st.figure.trace();
        for (float h : {800.0f, 400.0f, 200.0f}) {
            LinesInput in;
            in.trace = &tr;
            for (int i = 0; i < tr.heads; ++i) in.visible.push_back(i);
            in.box = {0.0f, 0.0f, 900.0f, h};
            const LinesLayout L = lay_out_lines(in, m, label_widths(tr, lines_token_font(in, m), m));
            INFO(c.name << " in a box " << h << " px high");
            if (!L.compact) {
                CHECK(L.row_q >= 12.0f);
                CHECK(L.box_h <= L.row_q);
            } else {
                CHECK(L.font == FontRole::Small);
            }
            CHECK(L.xq_right < L.xk_left);
            CHECK(L.top_q >= in.box.y0);
            CHECK(L.top_q + L.T_q * L.row_q <= in.box.y1 + 0.01f);
        }
    }
    // The palette the screen converts and the SVG writes: bytes survive the round trip.
    CHECK(hex_rgb(figure_palette(true).background) == 0x16181d);
    CHECK(hex_rgb(figure_palette(false).token_fill) == 0xeef1f4);
    CHECK(hex_rgb(ink_on_color({1.0f, 1.0f, 0.0f})) == 0x141418);
    CHECK(hex_rgb(ink_on_color({0.1f, 0.0f, 0.3f})) == 0xf5f5f5);
}

TEST_CASE("heatmap layout: the view is clamped to the map; the cell under a point is the one drawn there") {
    const FakeMeasure m(1.0f);
    const std::vector<Case> figures = cases();
    const Trace& tr = figures[1].st.figure.trace();  // masked-apple
    HeatmapInput in;
    in.trace = &tr;
    in.box = {0.0f, 0.0f, 1000.0f, 700.0f};
    in.zoom = 50.0f, in.view_x = -3.0f, in.view_y = 99.0f;
    HeatmapLayout L = lay_out_heatmap(in, m, label_widths(tr, FontRole::Body, m));
    CHECK(L.zoom == L.max_zoom);
    CHECK(L.view_x == 0.0f);
    CHECK(L.view_y == doctest::Approx(L.T_q - L.T_q / L.zoom));
    L.set_view(1.0f, 0.0f, 0.0f);
    CHECK(L.cell == L.cell0);
    for (int q = 0; q < L.T_q; ++q)
        for (int k = 0; k < L.T_k; ++k) {
            CHECK(L.query_at(L.cell_y(q + 0.5f)) == q);
            CHECK(L.key_at(L.cell_x(k + 0.5f)) == k);
        }
    CHECK(L.grid.x0 >= in.box.x0 + L.label_w);
    CHECK(L.bar.x0 > L.grid.x1);
}

// A vision-language model's image tokens: each its cell's part of the picture, as given (a tile's
// cell, or a global view's cell: the same part of the whole); the text's tokens none.
TEST_CASE("patch crops: a vision-language model's image tokens by their pieces") {
    PatchCrops c;
    c.width = 64, c.height = 32;
    CHECK(!c.any());
    c.pieces[3] = {0.0f, 0.0f, 0.5f, 0.5f};
    c.pieces[7] = {0.5f, 0.5f, 1.0f, 1.0f};
    CHECK(c.any());
    CHECK(c.has(3));
    CHECK(c.has(7));
    CHECK(!c.has(4));
    CHECK(!c.has(0));
    Item it;
    CHECK(!c.item(4, {0, 0, 10, 10}, it));
    REQUIRE(c.item(7, {1, 2, 11, 12}, it));
    CHECK(it.kind == Item::Picture);
    CHECK(it.index == 7);
    CHECK(it.x == 0.5f);
    CHECK(it.y2 == 1.0f);
    CHECK(it.box.x0 == 1.0f);
}

// A vision model's patch labels: beside each, its piece of the picture (Item::Picture, the
// fractions of patch (r, c)); none for the [CLS]; the labels' column and header make room for it,
// with the column labels upright (a big box) and turned (a small one); and in the SVG; and in the
// lines' token boxes.
TEST_CASE("heatmap and lines layout: a vision model's patches labelled with their pieces of the picture") {
    const FakeMeasure m(1.0f);
    const Trace tr = compute(read_scene(R"({"kind": "self", "d_model": 8, "heads": 1, "tokens": ["[CLS]", "p0,0", "p0,1", "p0,2", "p1,0", "p1,1", "p1,2", "p2,0", "p2,1", "p2,2"]})"));
    const PatchCrops crops{1, 3, 3, 16, 48, 64, {}};  // 3 × 3 patches of 16 px in a 48 × 64 picture: the last 16 rows past them
    for (const Box box : {Box{0.0f, 0.0f, 1400.0f, 1000.0f}, Box{0.0f, 0.0f, 420.0f, 330.0f}}) {
        HeatmapInput in;
        in.trace = &tr;
        in.box = box;
        const HeatmapLayout plain = lay_out_heatmap(in, m, label_widths(tr, FontRole::Body, m));
        in.crops = crops;
        const HeatmapLayout L = lay_out_heatmap(in, m, label_widths(tr, FontRole::Body, m));
        const float fs = L.fs;
        INFO("box " << box.w() << " x " << box.h() << (L.upright ? ", upright" : ", turned"));
        CHECK(L.label_w == doctest::Approx(plain.label_w + fs + 4.0f));
        CHECK(L.header_h == doctest::Approx(plain.header_h + fs + 4.0f));
        const HeatmapItems items = heatmap_items(L, {}, {}, m);
        int row_crops = 0, col_crops = 0;
        for (const Item& it : items.items) {
            if (it.kind != Item::Picture) continue;
            REQUIRE(it.index >= 1);
            const int p = it.index - 1, r = p / 3, c = p % 3;
            CHECK(it.x == doctest::Approx(c * 16.0f / 48.0f));
            CHECK(it.x2 == doctest::Approx((c + 1) * 16.0f / 48.0f));
            CHECK(it.y == doctest::Approx(r * 16.0f / 64.0f));
            CHECK(it.y2 == doctest::Approx((r + 1) * 16.0f / 64.0f));
            CHECK(it.box.w() == doctest::Approx(fs));
            CHECK(it.box.h() == doctest::Approx(fs));
            const bool row = it.box.x1 <= L.grid.x0;
            ++(row ? row_crops : col_crops);
            if (row) {  // left of the grid, in the query's row, right of its label's text
                CHECK((it.box.y0 + it.box.y1) * 0.5f == doctest::Approx(L.cell_y(it.index + 0.5f)));
                for (const Item& t : items.items)
                    if (t.role == ItemRole::RowLabel && t.index == it.index) CHECK(t.x + t.text_w <= it.box.x0);
                CHECK(it.box.x0 >= L.grid.x0 - L.label_w);
            } else {  // above the grid, in the key's column, under its label's text
                CHECK(it.box.y1 <= L.grid.y0);
                CHECK(it.box.y0 >= L.grid.y0 - L.header_h);
                CHECK((it.box.x0 + it.box.x1) * 0.5f == doctest::Approx(L.cell_x(it.index + 0.5f)));
                for (const Item& t : items.items)
                    if (t.role == ItemRole::ColLabel && t.index == it.index) CHECK((t.upwards ? t.y : t.y + fs) <= it.box.y0);
            }
        }
        CHECK(row_crops == items.labels_q - 1);  // every labelled patch, not the [CLS]
        CHECK(col_crops == items.labels_k - 1);
        CHECK(row_crops >= 1);
    }
    // The SVG: the picture once in the defs, each piece a viewBox of its pixels.
    std::vector<std::uint8_t> rgb(48 * 64 * 3, 128);
    SvgOptions o;
    o.view = SvgView::Heatmap;
    o.crops = crops, o.crops_rgb = rgb.data();
    const std::string svg = write_svg(tr, o);
    CHECK(test::occurrences(svg, "<image id=\"picture\" width=\"48\" height=\"64\"") == 1);
    CHECK(test::occurrences(svg, "<svg class=\"patch\"") == 18);
    CHECK(test::contains(svg, "data-index=\"6\" "));
    CHECK(test::contains(svg, "viewBox=\"32 16 16 16\""));  // patch (1, 2): token 6
    o.crops_rgb = nullptr;  // no picture: labels alone
    CHECK(test::occurrences(write_svg(tr, o), "class=\"patch\"") == 0);

    // The lines: a patch's box holds its piece of the picture before its name, and is that much
    // wider; the [CLS]'s is as it was; compact columns (rails) have none.
    int compact = 0;
    for (const float h : {600.0f, 60.0f}) {
        LinesInput lin;
        lin.trace = &tr;
        lin.visible = {0};
        lin.box = {0.0f, 0.0f, 900.0f, h};
        const LabelWidths widths = label_widths(tr, lines_token_font(lin, m), m);
        LinesWeights weights(tr);
        const LinesItems plain = lines_items(lay_out_lines(lin, m, widths), {}, weights, m, 0, 0);
        lin.crops = crops;
        const LinesLayout L = lay_out_lines(lin, m, widths);
        const LinesItems items = lines_items(L, {}, weights, m, 0, 0);
        INFO("lines in a box " << h << " px high" << (L.compact ? ", compact" : ""));
        int pieces = 0;
        for (const Item& it : items.items) {
            if (it.kind != Item::Picture) continue;
            ++pieces;
            REQUIRE(it.index >= 1);
            const bool query = it.box.x1 <= L.xq_right;
            const Box& box = (query ? items.query_rects : items.key_rects)[static_cast<size_t>(it.index)];
            CHECK(it.box.x0 >= box.x0);
            CHECK(it.box.y0 >= box.y0);
            CHECK(it.box.y1 <= box.y1);
            CHECK(it.box.w() == doctest::Approx(L.box_h - 4.0f));
            for (const Item& t : items.items)
                if (t.role == ItemRole::TokenLabel && t.index == it.index && (t.x < L.xq_right) == query) {
                    CHECK(t.x >= it.box.x1);
                    CHECK(t.x + t.text_w <= box.x1 + 0.01f);
                }
        }
        if (L.compact) {
            CHECK(pieces == 0);
            ++compact;
            continue;
        }
        CHECK(pieces == 18);  // the 9 patches, each a query and a key
        CHECK(items.query_rects[0].w() == doctest::Approx(plain.query_rects[0].w()));
        CHECK(items.key_rects[4].w() == doctest::Approx(plain.key_rects[4].w() + L.crop_w));
    }
    CHECK(compact == 1);
}

// [SECTION] Steps ------------------------------------------------------------------------------

TEST_CASE("steps layout: blocks in reading order without overlap, hit test, what a number is made of") {
    const FakeMeasure m(1.0f);
    const std::vector<Case> figures = cases();
    for (int c : {0, 1, 2}) {  // self, masked, cross
        const Case& fig = figures[static_cast<size_t>(c)];
        const Trace& tr = fig.st.figure.trace();
        const std::vector<Step> steps = pipeline_steps(tr, 0, false);
        std::vector<std::pair<float, float>> ranges(steps.size(), {0.0f, 1.0f});
        StepsInput in;
        in.trace = &tr, in.steps = &steps, in.ranges = &ranges;
        in.x0 = 10.0f, in.y0 = 20.0f, in.avail_w = 1100.0f;
        for (const Step& step : steps) in.captions.push_back("A caption long enough to wrap onto a second line at least " + step.label);
        const StepsLayout L = lay_out_steps(in, m);
        INFO(fig.name);
        REQUIRE(L.blocks.size() == steps.size());
        for (size_t i = 0; i < L.blocks.size(); ++i) {
            const StepBlock& b = L.blocks[i];
            CHECK(b.x + b.w <= in.x0 + std::max(in.avail_w, 14.0f + b.w));  // a line holds what fits (or one block)
            CHECK(b.caption_y + 2.0f * m.size(FontRole::Small) <= b.h + 0.01f);  // the caption wrapped
            for (size_t j = 0; j < i; ++j) {  // no two blocks overlap
                const StepBlock& a = L.blocks[j];
                const bool apart = a.x + a.w <= b.x || b.x + b.w <= a.x || a.y + a.h <= b.y || b.y + b.h <= a.y;
                CHECK_MESSAGE(apart, steps[j].label << " and " << steps[i].label);
            }
            // The centre of each shown cell hits that cell.
            for (int r = 0; r < b.rows; ++r)
                for (int col = 0; col < b.cols; ++col) {
                    const StepsLayout::Hit h = L.hit(b.grid_x + (col + 0.5f) * L.cell_w, b.grid_y + (r + 0.5f) * L.cell_h);
                    CHECK((h.step == static_cast<int>(i) && h.row == r && h.col == col));
                }
        }
        CHECK(L.hit(in.x0 - 5.0f, in.y0 - 5.0f).step == -1);
        // A score is q·k: its row of Q and its key's row of K are outlined.
        const std::vector<StepMark> marks = steps_marks(tr, StepKind::Scores, 1, 2);
        REQUIRE(marks.size() == 2);
        CHECK((marks[0].kind == StepKind::Q && marks[0].row == 1 && marks[1].kind == StepKind::K && marks[1].row == 2));
        const StepsItems items = steps_items(L, in, L.hit(L.blocks[0].grid_x + 1.0f, L.blocks[0].grid_y + 1.0f), m);
        CHECK(std::count_if(items.items.begin(), items.items.end(), [](const Item& it) { return it.role == ItemRole::Hover; }) == 1);
        // A masked map hatches exactly its masked cells (the shown part).
        for (size_t i = 0; i < steps.size(); ++i)
            if (steps[i].kind == StepKind::Masked) {
                long masked = 0;
                for (int r = 0; r < L.blocks[i].rows; ++r)
                    for (int col = 0; col < L.blocks[i].cols; ++col) masked += tr.allowed(r, col) == 0;
                const long hatched = std::count_if(items.items.begin(), items.items.end(), [&](const Item& it) {
                    return it.kind == Item::Hatch && it.box.x0 >= L.blocks[i].grid_x && it.box.y0 >= L.blocks[i].grid_y &&
                           it.box.x1 <= L.blocks[i].grid_x + L.blocks[i].cols * L.cell_w + 0.01f &&
                           it.box.y1 <= L.blocks[i].grid_y + L.blocks[i].rows * L.cell_h + 0.01f;
                });
                CHECK(hatched == masked);
            }
    }
}

// Whitespace is drawn visibly wherever a token is: a space token is ·, a newline ↵, a tab ⇥; no
// label of the heatmap, the lines or the Steps view is blank for a token that is not.
TEST_CASE("token labels show whitespace: no blank label for a space, newline or tab token") {
    CHECK(token_text("") == "\u2205");
    CHECK(token_text(" ") == "\u00b7");
    CHECK(token_text("   ") == "\u00b7\u00b7\u00b7");
    CHECK(token_text("\n") == "\u21b5");
    CHECK(token_text("\r\n") == "\u21b5");
    CHECK(token_text("\t") == "\u21e5");
    CHECK(token_text(" cat") == " cat");
    CHECK(token_text("a\nb") == "a\u21b5b");
    CHECK(token_text("\u21b5") == "\u21b5");  // display_token's newline mark stays one
    AppState st;
    st.load_scene(read_scene(R"({"kind":"masked","tokens":["The"," ","\n","\t"," cat","  ","\r\n"],"d_model":4,"heads":1})"));
    REQUIRE(st.error.empty());
    const Trace& tr = st.figure.trace();
    const FakeMeasure m(1.0f);
    const auto visible = [](const std::string& t) { return t.find_first_not_of(" \t\r\n") != std::string::npos; };
    int labels = 0;
    const auto check_items = [&](const std::vector<Item>& items, std::initializer_list<ItemRole> roles) {
        for (const Item& it : items)
            if (std::find(roles.begin(), roles.end(), it.role) != roles.end() && it.kind == Item::Text) {
                CAPTURE(it.text);
                CHECK(visible(it.text));
                ++labels;
            }
    };
    HeatmapInput hin;
    hin.trace = &tr;
    hin.box = {0.0f, 0.0f, 900.0f, 700.0f};
    check_items(heatmap_items(lay_out_heatmap(hin, m, label_widths(tr, FontRole::Body, m)), {}, {}, m).items,
                {ItemRole::RowLabel, ItemRole::ColLabel});
    const std::vector<Step> steps = pipeline_steps(tr, 0, false);
    std::vector<std::pair<float, float>> ranges(steps.size(), {0.0f, 1.0f});
    StepsInput sin;
    sin.trace = &tr, sin.steps = &steps, sin.ranges = &ranges, sin.avail_w = 1100.0f;
    check_items(steps_items(lay_out_steps(sin, m), sin, {}, m).items, {ItemRole::RowLabel, ItemRole::ColLabel});
    CHECK(labels >= 4 * 7);
}

// Past 16 tokens the matrices show a window of 16 queries and 16 keys (StepsInput::first_query,
// first_key): every row label, key header, number and hit is the matrix's own at the window's
// place, the window is clamped to be full, and the note says which rows it shows.
TEST_CASE("steps layout: past 16 tokens, the window shows the rows and keys asked for") {
    const FakeMeasure m(1.0f);
    AppState st;
    st.load_preset("masked-apple");
    std::string text;
    for (int i = 0; i < 40; ++i) text += (i ? " w" : "w") + std::to_string(i);
    st.target_text = text;
    st.apply();
    const Trace& tr = st.figure.trace();
    REQUIRE(tr.T_q() == 40);
    const std::vector<Step> steps = pipeline_steps(tr, 0, false);
    std::vector<std::pair<float, float>> ranges(steps.size(), {0.0f, 1.0f});
    for (const std::array<int, 4>& window : {std::array<int, 4>{20, 30, 20, 24}, {0, 0, 0, 0}, {-3, 99, 0, 24}}) {
        const int first_query = window[0], first_key = window[1], row0 = window[2], key0 = window[3];  // asked; shown (clamped)
        CAPTURE(first_query);
        CAPTURE(first_key);
        StepsInput in;
        in.trace = &tr, in.steps = &steps, in.ranges = &ranges;
        in.avail_w = 1100.0f;
        in.first_query = first_query, in.first_key = first_key;
        const StepsLayout L = lay_out_steps(in, m);
        const StepsItems items = steps_items(L, in, {}, m);
        for (size_t i = 0; i < steps.size(); ++i) {
            const Step& step = steps[i];
            const StepBlock& b = L.blocks[i];
            CAPTURE(step.label);
            CHECK(b.rows == kStepsMaxShown);
            CHECK(b.row0 == (step_rows_are_keys(step.kind) ? key0 : row0));
            CHECK(b.col0 == (step_cols_are_keys(step.kind) ? key0 : 0));
            const std::vector<std::string>& tokens = step_rows_are_keys(step.kind) ? tr.keys : tr.queries;
            for (int r = 0; r < b.rows; ++r)
                for (int c = 0; c < b.cols; ++c) {
                    const StepsLayout::Hit h = L.hit(b.grid_x + (c + 0.5f) * L.cell_w, b.grid_y + (r + 0.5f) * L.cell_h);
                    CHECK((h.step == static_cast<int>(i) && h.row == b.row0 + r && h.col == b.col0 + c));
                }
            const auto inside = [&](const Item& it) {
                const float x = it.kind == Item::Hatch ? it.box.x0 : it.x, y = it.kind == Item::Hatch ? it.box.y0 : it.y;
                return y >= b.y - 0.01f && y <= b.y + b.h && x >= b.x - 0.01f && x <= b.x + b.w;
            };
            int labels = 0, notes = 0;
            for (const Item& it : items.items) {
                if (!inside(it)) continue;
                if (it.role == ItemRole::RowLabel) {
                    CHECK(it.text == token_text(tokens[static_cast<size_t>(it.index)]));
                    CHECK((it.index >= b.row0 && it.index < b.row0 + b.rows));
                    ++labels;
                }
                if (it.role == ItemRole::ColLabel && b.key_header) CHECK(it.text == token_text(tr.keys[static_cast<size_t>(it.index)]));
                if (it.role == ItemRole::Note) {
                    CHECK(it.text.rfind("rows " + std::to_string(b.row0 + 1) + "\u2013" + std::to_string(b.row0 + 16) + " of 40", 0) == 0);
                    ++notes;
                }
            }
            CHECK(labels == b.rows);
            CHECK(notes == 1);
            if (step.kind == StepKind::Masked) {  // hatched exactly where the window's cells are masked
                long masked = 0;
                for (int r = 0; r < b.rows; ++r)
                    for (int c = 0; c < b.cols; ++c) masked += tr.allowed(b.row0 + r, b.col0 + c) == 0;
                CHECK(std::count_if(items.items.begin(), items.items.end(), [&](const Item& it) { return it.kind == Item::Hatch && inside(it); }) ==
                      masked);
            }
        }
    }
}

}  // namespace

// Tags are lines under their thumbnail (never over its cells), the brief form where the full one
// is too wide; on a phone the legend goes under the grid so the thumbnails are larger; a sliding
// window has its legend entry, and the row-scaled contrast says so on the scale.
TEST_CASE("model layout: tags under the thumbnails, a phone's legend under the grid, the window's swatch") {
    const FakeMeasure m(1.0f);
    for (float width : {390.0f, 1280.0f})
        for (bool window : {false, true}) {
            CAPTURE(width);
            CAPTURE(window);
            ModelInput in;
            in.layers = 2, in.heads = 4, in.causal = true, in.window = window, in.rows_scaled = window;
            in.view = {0.0f, 0.0f, width, width < 500.0f ? 720.0f : 700.0f};
            in.tags.assign(8, {});
            in.tags[4] = {{"induction 0.88", "ind .88"}, {"first 0.52", "1st .52"}};
            in.tags[0] = {{"prev 0.75", "prev .75"}};
            const ModelLayout L = lay_out_model(in, m);
            CHECK(L.legend_below == (width < 500.0f));
            CHECK(L.cell >= (width < 500.0f ? 60.0f : 100.0f));
            if (L.legend_below) CHECK(L.bar.y0 > L.grid.y1);
            else CHECK(L.bar.x0 > L.grid.x1);
            const std::vector<Item> items = model_items(L, in, {}, m);
            int tags = 0;
            for (const Item& it : items) {
                if (it.role != ItemRole::HeadTag) continue;
                ++tags;
                const Box own = L.thumb(it.index / 4, it.index % 4);
                CHECK(it.y >= own.y1);                                   // under its thumbnail
                CHECK(it.y + m.size(FontRole::Small) <= own.y1 + L.tag_h + 0.01f);
                CHECK(it.x + it.text_w <= own.x1 + 0.01f);               // as wide as it at most
                if (it.index / 4 + 1 < 2) CHECK(it.y + m.size(FontRole::Small) <= L.thumb(it.index / 4 + 1, 0).y0);
                CHECK(L.hit(it.x + 1.0f, it.y + 1.0f).layer == -1);      // a tag is no thumbnail
            }
            CHECK(tags == 3);
            CHECK(std::count_if(items.begin(), items.end(), [](const Item& it) {
                      return it.role == ItemRole::WindowLabel && it.text == "outside the window";
                  }) == (window ? 1 : 0));
            CHECK(std::count_if(items.begin(), items.end(), [](const Item& it) {
                      return it.role == ItemRole::LegendLabel && it.text == "row's max";
                  }) == (window ? 1 : 0));
            for (const Item& it : items)  // the legend inside the view
                if (it.role == ItemRole::LegendLabel || it.role == ItemRole::MaskedLabel || it.role == ItemRole::WindowLabel)
                    CHECK(it.x + it.text_w <= in.view.x1);
        }
}

TEST_CASE("model layout: the legend's masked label fits the content, on a phone's width too") {
    for (float scale : {1.0f, 2.0f})
        for (float width : {360.0f, 390.0f, 1280.0f}) {
            const FakeMeasure m(scale);
            ModelInput in;
            in.layers = 4, in.heads = 4, in.scale = scale, in.causal = true;
            in.view = {0.0f, 0.0f, width * scale, 700.0f * scale};
            const ModelLayout L = lay_out_model(in, m);
            CAPTURE(scale);
            CAPTURE(width);
            const float label_end = L.swatch.x1 + 7.0f * scale + m.width(in.words.masked, FontRole::Small);
            CHECK(label_end <= L.grid.x1 + L.legend_w);  // inside the legend's room (72 px was too little)
            CHECK(label_end <= in.view.x1);              // and inside the view
        }
}

TEST_CASE("why layout: every cell once, inside the grid's box, found by hit(); numbers where they fit; the lens' tokens fitted; its SVG") {
    for (float scale : {1.0f, 2.0f})
        for (float width : {220.0f, 900.0f}) {
            CAPTURE(scale);
            CAPTURE(width);
            const FakeMeasure m(scale);
            WhyInput in;
            in.box = {10.0f, 20.0f, 10.0f + width * scale, 20.0f};
            in.scale = scale;
            WhyGrid heads;  // 3 layers × 4 heads, one knocked out, one negative, one the largest
            heads.caption = "share of the logit difference restored, by each head's output";
            heads.rows = 3, heads.cols = 4;
            heads.row_labels = {"L1", "L2", "L3"};
            heads.col_labels = {"H1", "H2", "H3", "H4"};
            heads.values = {0.1f, -0.5f, 0.0f, 0.2f, std::nanf(""), 0.3f, 1.0f, 0.0f, 0.05f, 0.0f, 0.0f, -1.0f};
            WhyGrid lens;  // 2 layers × 3 positions of tokens
            lens.rows = 2, lens.cols = 3;
            lens.row_labels = {"emb", "L1"};
            lens.col_labels = {"The", " cat", " sat on a very long token"};
            lens.values = {0.1f, 0.5f, 1.0f, 0.0f, 0.25f, 0.75f};
            lens.texts = {" the", " dog", " a very long token indeed", "\xe2\x86\xb5", " mat", " sat"};
            in.grids = {heads, lens};
            const WhyLayout L = lay_out_why(in, m);
            REQUIRE(L.cells.size() == 12 + 6);
            REQUIRE(L.grids.size() == 2);
            CHECK(L.grids[0].y1 < L.grids[1].y0);  // one under the other
            for (const WhyLayout::Cell& c : L.cells) {
                const Box& g = L.grids[static_cast<std::size_t>(c.grid)];
                CHECK(c.box.x0 >= g.x0);
                CHECK(c.box.x1 <= g.x1);
                CHECK(c.box.y0 >= g.y0);
                CHECK(c.box.y1 <= g.y1);
                const WhyLayout::Cell h = L.hit((c.box.x0 + c.box.x1) * 0.5f, (c.box.y0 + c.box.y1) * 0.5f);
                CHECK(h.grid == c.grid);
                CHECK(h.row == c.row);
                CHECK(h.col == c.col);
            }
            CHECK(L.hit(in.box.x0 - 5.0f, in.box.y0 - 5.0f).grid == -1);
            // numbers: in every finite cell when the cells are wide enough, none otherwise; the NaN crossed out
            const float cell = L.cells.front().box.w() + 2.0f * scale;
            int numbers = 0, crosses = 0, tokens = 0;
            for (const Item& it : L.items) {
                if (it.kind == Item::Segment) ++crosses;
                if (it.kind != Item::Text || it.role != ItemRole::Number) continue;
                if (it.index >= 0 && it.text.find_first_of("+-") == 0) ++numbers;
                else ++tokens;
            }
            CHECK(numbers == (cell >= m.size(FontRole::Body) * 2.2f ? 11 : 0));
            CHECK(crosses == 2);
            CHECK(tokens == 6);
            for (const Item& it : L.items)  // a token's text inside its cell
                if (it.kind == Item::Text && it.role == ItemRole::Number && it.index >= 0 && it.text.find_first_of("+-") != 0) {
                    const Box& b = L.cells[static_cast<std::size_t>(12 + it.index)].box;
                    CHECK(it.x >= b.x0);
                    CHECK(it.x + it.text_w <= b.x1);
                }
            // the largest |value| takes the full colour of its sign; 0 the background
            const FigurePalette& pal = figure_palette(in.dark);
            auto fill_of = [&](int index) {
                for (const Item& it : L.items)
                    if (it.kind == Item::Rect && it.index == index && it.fill.a > 0) return it.fill;
                return Color{};
            };
            CHECK(fill_of(6) == mix(pal.background, kSignedPositive, 1.0f));
            CHECK(fill_of(11) == mix(pal.background, kSignedNegative, 1.0f));
            CHECK(fill_of(2) == mix(pal.background, kSignedPositive, 0.0f));
            // the SVG: every item, in a document that says it is the Why view
            SvgOptions o;
            o.width = width * scale + 40.0f, o.height = 600.0f * scale, o.scale = scale, o.measure = &m;
            o.labels.title = "tiny-lm · why";
            const std::string svg = write_items_svg(L.items, o, "why");
            CHECK(svg.find("data-view=\"why\"") != std::string::npos);
            std::size_t rects = 0;
            for (std::size_t at = svg.find("<rect"); at != std::string::npos; at = svg.find("<rect", at + 1)) ++rects;
            CHECK(rects == 1 + 12 * 2 + 6);  // the background; each number cell filled and outlined; each token cell
            const bool newline_shown = svg.find("\xe2\x86\xb5") != std::string::npos || svg.find("&#8629;") != std::string::npos;
            CHECK(newline_shown);
        }
}

// The Image view's layout (image_layout.hpp): the picture fitted with its aspect, a cell per
// patch over the grid's part of it (a remainder of pixels outside), each cell's colour and
// opacity by its weight over the largest on a patch, the chips for the tokens before the
// patches, and hit() mapping points back to the tokens.
TEST_CASE("the Image view: the picture fitted, a cell per patch coloured by its weight, chips, and hits back to tokens") {
    const FakeMeasure m(1.0f);
    ImageInput in;
    in.box = {0, 0, 800, 500};
    in.picture_width = 230, in.picture_height = 160;  // 2 rows × 3 columns of 70 px, and a remainder
    in.rows = 2, in.cols = 3, in.patch = 70;
    in.tokens = {"[CLS]", "reg0", "p0,0", "p0,1", "p0,2", "p1,0", "p1,1", "p1,2"};
    in.weights = {0.3f, 0.1f, 0.05f, 0.2f, 0.0f, 0.1f, 0.15f, 0.1f};
    in.query = 6;
    in.caption = "Where p1,1 looks";
    in.legend = "weight";
    const ImageLayout L = lay_out_image(in, m);
    CHECK(L.first == 2);
    CHECK(L.top == doctest::Approx(0.2f));  // the largest on a patch, not the [CLS]'s 0.3
    CHECK(L.picture.w() / L.picture.h() == doctest::Approx(230.0 / 160.0).epsilon(1e-4));
    CHECK(L.picture.x0 >= in.box.x0);
    CHECK(L.picture.x1 <= in.box.x1);
    CHECK(L.picture.y1 <= in.box.y1);
    CHECK(L.grid.w() == doctest::Approx(L.picture.w() * 210.0 / 230.0).epsilon(1e-4));
    CHECK(L.grid.h() == doctest::Approx(L.picture.h() * 140.0 / 160.0).epsilon(1e-4));
    REQUIRE(L.chips.size() == 2);
    CHECK(L.chips[0].x1 <= L.picture.x0);
    std::vector<const Item*> cells;
    for (const Item& it : L.items)
        if (it.kind == Item::Rect && it.role == ItemRole::Other && it.fill.a > 0 && it.index >= L.first) cells.push_back(&it);
    REQUIRE(cells.size() == 6);
    const Colormap& cmap = colormaps()[0];
    for (const Item* c : cells) {
        const float t = in.weights[static_cast<std::size_t>(c->index)] / 0.2f;
        const std::array<float, 3> rgb = colormap_sample(cmap, t);
        CHECK(c->fill.r == doctest::Approx(rgb[0]));
        CHECK(c->fill.a == doctest::Approx(0.15f + 0.65f * t));
        const float cx = (c->box.x0 + c->box.x1) * 0.5f, cy = (c->box.y0 + c->box.y1) * 0.5f;
        CHECK(L.hit(cx, cy) == c->index);  // each cell's centre hits its token
        const int p = c->index - L.first;
        CHECK(c->box.x0 == doctest::Approx(L.grid.x0 + (p % 3) * L.cell_w));
        CHECK(c->box.y0 == doctest::Approx(L.grid.y0 + (p / 3) * L.cell_h));
    }
    CHECK(L.hit((L.chips[1].x0 + L.chips[1].x1) * 0.5f, (L.chips[1].y0 + L.chips[1].y1) * 0.5f) == 1);
    CHECK(L.hit(L.grid.x1 + 1.0f, L.grid.y0 + 1.0f) == -1);  // the remainder: no patch
    int outlines = 0;
    for (const Item& it : L.items) outlines += it.role == ItemRole::Selection && it.index == 6;
    CHECK(outlines == 2);  // the query's patch, outlined dark and light
    // No weights: no overlay, no legend; the picture and the chips still laid out.
    in.weights.clear();
    const ImageLayout bare = lay_out_image(in, m);
    CHECK(bare.top == 0.0f);
    CHECK(std::none_of(bare.items.begin(), bare.items.end(), [](const Item& it) { return it.kind == Item::Colormap; }));
    CHECK(bare.picture.w() > L.picture.w());  // the legend's room goes to the picture
    // A portrait box (a phone's): the chips in a row above the picture, which takes their column's width
    in.weights = {0.3f, 0.1f, 0.05f, 0.2f, 0.0f, 0.1f, 0.15f, 0.1f};
    in.box = {0, 0, 360, 700};
    const ImageLayout phone = lay_out_image(in, m);
    in.box = {0, 0, 700, 360};
    const ImageLayout wide = lay_out_image(in, m);
    REQUIRE(phone.chips.size() == 2);
    CHECK(phone.chips[0].y1 <= phone.picture.y0);
    CHECK(phone.chips[1].x0 >= phone.chips[0].x1);        // side by side
    CHECK(phone.chips[1].y0 == phone.chips[0].y0);
    CHECK(phone.picture.x0 < phone.chips[0].x1);           // the picture under them, from the left margin
    CHECK(wide.chips[0].x1 <= wide.picture.x0);            // a landscape box keeps the column
    CHECK(phone.picture.x1 <= 360.0f);
    CHECK(phone.hit((phone.chips[1].x0 + phone.chips[1].x1) * 0.5f, (phone.chips[1].y0 + phone.chips[1].y1) * 0.5f) == 1);
    CHECK(phone.hit(phone.grid.x0 + phone.cell_w * 1.5f, phone.grid.y0 + phone.cell_h * 0.5f) == 3);  // p0,1
    // Hidden tokens (the experiment): a hidden patch is striped over its cell, with no overlay
    // cell of its own; a hidden chip striped over the chip; the others as before.
    in.box = {0, 0, 800, 500};
    in.hidden = {false, true, false, false, true, false, false, false};  // reg0 and p0,2
    const ImageLayout hid = lay_out_image(in, m);
    std::vector<int> striped, overlaid;
    for (const Item& it : hid.items) {
        if (it.kind == Item::Hatch) {
            striped.push_back(it.index);
            const Box want = it.index < hid.first ? hid.chips[static_cast<std::size_t>(it.index)]
                                                  : Box{hid.grid.x0 + ((it.index - hid.first) % 3) * hid.cell_w, hid.grid.y0 + ((it.index - hid.first) / 3) * hid.cell_h,
                                                        hid.grid.x0 + ((it.index - hid.first) % 3 + 1) * hid.cell_w, hid.grid.y0 + ((it.index - hid.first) / 3 + 1) * hid.cell_h};
            CHECK(it.box.x0 == doctest::Approx(want.x0));
            CHECK(it.box.y1 == doctest::Approx(want.y1));
        }
        if (it.kind == Item::Rect && it.role == ItemRole::Other && it.fill.a > 0 && it.index >= hid.first) overlaid.push_back(it.index);
    }
    CHECK(striped == std::vector<int>{4, 1});  // the patches' pass, then the chips'
    CHECK(overlaid.size() == 5);
    CHECK(std::find(overlaid.begin(), overlaid.end(), 4) == overlaid.end());
    SvgOptions o;
    o.width = 800, o.height = 500;
    const std::string svg = write_items_svg(hid.items, o, "image");
    CHECK(test::occurrences(svg, "fill=\"url(#hatch)\"") == 2);
    CHECK(test::contains(svg, "<pattern id=\"hatch\""));
}

// A vision-language model's Picture view (idefics3): the tiles' image tokens over the picture
// they cover (cells given token by token), the global view's beside it, the text as a strip of
// chips under it; the overlay's scale is the largest weight on any image token; hits map back.
TEST_CASE("the Image view of a vision-language model: tiles' tokens over the picture, the global view beside, the text under") {
    const FakeMeasure m(1.0f);
    ImageInput in;
    in.box = {0, 0, 900, 600};
    in.picture_width = 128, in.picture_height = 64;  // 1 × 2 tiles of 64 px, 2 × 2 image tokens each
    in.rows = 2, in.cols = 4, in.patch = 32;
    in.tiles_rows = 1, in.tiles_cols = 2;
    // The sequence: "<s>", tile 1's 4 image tokens, "\n", tile 2's, the global view's, "a", "cat"
    in.tokens = {"<s>", "<image>", "<image>", "<image>", "<image>", "\n", "<image>", "<image>", "<image>", "<image>",
                 "<image>", "<image>", "<image>", "<image>", "a", "cat"};
    const int T = static_cast<int>(in.tokens.size());
    for (int t = 0; t < T; ++t) in.weights.push_back(0.01f * static_cast<float>(t));
    in.weights[12] = 0.5f;  // a global view's token: the overlay's top
    in.query = T - 1;
    in.cells = {1, 2, 6, 7, 3, 4, 8, 9};  // row by row over the two tiles side by side
    in.chip_tokens = {0, 5, 14, 15};
    in.global_size = 64, in.global_rows = 2, in.global_cells = {10, 11, 12, 13};
    in.global_label = "the whole picture";
    in.legend = "weight";
    const ImageLayout L = lay_out_image(in, m);
    CHECK(L.top == doctest::Approx(0.5f));
    CHECK(L.picture.w() / L.picture.h() == doctest::Approx(2.0).epsilon(1e-4));
    REQUIRE(L.global.w() > 0.0f);
    CHECK(L.global.x0 >= L.picture.x1);                              // beside the picture
    CHECK(L.global.w() == doctest::Approx(L.global.h()));
    REQUIRE(L.chips.size() == 4);
    for (const Box& chip : L.chips) CHECK(chip.y0 >= L.picture.y1);  // the strip under it
    CHECK(L.chips[1].x0 > L.chips[0].x0);                            // flowing left to right
    // Each cell's centre hits its token, the tiles' and the global view's
    for (int i = 0; i < 8; ++i) {
        const float x = L.grid.x0 + (static_cast<float>(i % 4) + 0.5f) * L.cell_w, y = L.grid.y0 + (static_cast<float>(i / 4) + 0.5f) * L.cell_h;
        CHECK(L.hit(x, y) == in.cells[static_cast<std::size_t>(i)]);
    }
    for (int i = 0; i < 4; ++i) {
        const float x = L.global.x0 + (static_cast<float>(i % 2) + 0.5f) * L.global_cell, y = L.global.y0 + (static_cast<float>(i / 2) + 0.5f) * L.global_cell;
        CHECK(L.hit(x, y) == in.global_cells[static_cast<std::size_t>(i)]);
    }
    CHECK(L.hit((L.chips[3].x0 + L.chips[3].x1) * 0.5f, (L.chips[3].y0 + L.chips[3].y1) * 0.5f) == 15);
    // The tile border between the two tiles, and the query's chip outlined
    int borders = 0, query_outline = 0;
    for (const Item& it : L.items) {
        borders += it.kind == Item::Segment && std::abs(it.x - (L.picture.x0 + L.picture.w() * 0.5f)) < 0.01f && std::abs(it.x2 - it.x) < 0.01f;
        query_outline += it.role == ItemRole::Selection && it.index == 15;
    }
    CHECK(borders >= 1);
    CHECK(query_outline == 1);
    // Without weights: no overlay, the layout still there
    in.weights.clear();
    CHECK(lay_out_image(in, m).top == 0.0f);
    // A short, narrow box: the strip takes at most 40 % of the height; its first chips give way
    // to a note of how many, the text's last stay
    in.chip_tokens = {0, 5, 14, 15, 14, 15, 14, 15, 14, 15};
    in.box = {0, 0, 220, 160};
    const ImageLayout small = lay_out_image(in, m);
    REQUIRE(!small.chips.empty());
    CHECK(small.chips.size() < in.chip_tokens.size());
    CHECK(small.chip_tokens.back() == 15);
    CHECK(small.chips.back().y1 <= in.box.y1);
    CHECK(small.picture.h() > 0.0f);
    const std::string note = "…" + std::to_string(in.chip_tokens.size() - small.chips.size());
    CHECK(std::any_of(small.items.begin(), small.items.end(), [&](const Item& it) { return it.kind == Item::Text && it.text == note; }));
}
