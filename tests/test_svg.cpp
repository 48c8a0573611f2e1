// The SVG export (core/svg/svg.cpp): well-formed XML, one element per line / cell / label as the
// figure has them, the colormap's colours, the hatch on masked cells, escaped token text.
#include "test_util.hpp"
#include "colormaps.hpp"
#include "presets.hpp"
#include "scene.hpp"
#include "svg.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

using namespace attn;

namespace {

// A small XML checker: every tag closes in order, attributes are quoted, entities are known,
// no raw '<' or '&' in text. Returns "" or what is wrong.
std::string xml_problem(const std::string& x) {
    std::vector<std::string> open;
    size_t i = 0;
    bool root_seen = false;
    auto entity_ok = [&](size_t at) {
        for (const char* e : {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"})
            if (x.compare(at, std::char_traits<char>::length(e), e) == 0) return true;
        return false;
    };
    while (i < x.size()) {
        if (x[i] == '&' && !entity_ok(i)) return "bad entity at " + std::to_string(i);
        if (x[i] != '<') { ++i; continue; }
        if (x.compare(i, 5, "<?xml") == 0) { i = x.find("?>", i); if (i == std::string::npos) return "open <?xml"; i += 2; continue; }
        size_t end = i + 1;
        char quote = 0;
        for (; end < x.size(); ++end) {  // the tag's end, outside quoted attribute values
            if (quote) { if (x[end] == quote) quote = 0; else if (x[end] == '<') return "'<' in an attribute"; else if (x[end] == '&' && !entity_ok(end)) return "bad entity in an attribute"; }
            else if (x[end] == '"' || x[end] == '\'') quote = x[end];
            else if (x[end] == '>') break;
        }
        if (end >= x.size()) return "unterminated tag at " + std::to_string(i);
        std::string tag = x.substr(i + 1, end - i - 1);
        if (tag.empty()) return "empty tag";
        if (tag[0] == '/') {
            std::string name = tag.substr(1);
            if (open.empty() || open.back() != name) return "</" + name + "> closes " + (open.empty() ? "nothing" : open.back());
            open.pop_back();
        } else if (tag.back() != '/') {
            std::string name = tag.substr(0, tag.find_first_of(" \n\t"));
            if (open.empty() && root_seen) return "second root element " + name;
            root_seen = true;
            open.push_back(name);
        } else if (open.empty()) {
            return "element outside the root";
        }
        i = end + 1;
    }
    if (!open.empty()) return "<" + open.back() + "> never closed";
    return root_seen ? "" : "no root element";
}

Trace preset_trace(const char* name) {
    const Scene* scene = find_preset(name);
    REQUIRE(scene != nullptr);
    return compute(*scene);
}

std::string hex_of(const std::array<float, 3>& rgb) {
    char b[8];
    std::snprintf(b, sizeof b, "#%02x%02x%02x", static_cast<int>(std::lround(rgb[0] * 255)),
                  static_cast<int>(std::lround(rgb[1] * 255)), static_cast<int>(std::lround(rgb[2] * 255)));
    return b;
}

}  // namespace

TEST_CASE("xml_escape: markup characters, forbidden controls and broken UTF-8") {
    CHECK(xml_escape("a<b & \"c\" 'd'>") == "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;");
    CHECK(xml_escape("我爱你 🍎") == "我爱你 🍎");
    CHECK(xml_escape(std::string("x\x01y", 3)) == "x\xef\xbf\xbdy");
    CHECK(xml_escape("\xff\xfe") == "\xef\xbf\xbd\xef\xbf\xbd");
    CHECK(xml_escape("\xe6\x88") == "\xef\xbf\xbd\xef\xbf\xbd");  // truncated 我
    CHECK(xml_escape("\xef\xbf\xbe") == "\xef\xbf\xbd");  // U+FFFE
    CHECK(xml_escape("tab\tnl\n") == "tab\tnl\n");
}

TEST_CASE("heatmap SVG: one rect per cell with the colormap's colour, labels, numbers, legend") {
    const Trace tr = preset_trace("i-am-good");
    SvgOptions o;
    o.view = SvgView::Heatmap;
    const std::string svg = write_svg(tr, o);
    CHECK(xml_problem(svg) == "");
    CHECK(test::occurrences(svg, "class=\"cell\"") == 9);
    CHECK(test::occurrences(svg, "class=\"cell masked\"") == 0);
    CHECK(test::occurrences(svg, "class=\"row-label\"") == 3);
    CHECK(test::occurrences(svg, "class=\"col-label\"") == 3);
    CHECK(test::occurrences(svg, "class=\"number\"") == 9);
    CHECK(test::occurrences(svg, "class=\"tick\"") == 5);
    CHECK(test::occurrences(svg, "<stop ") == 9);  // viridis' nine key colours
    CHECK(svg.find("masked-swatch") == std::string::npos);
    // Every cell's fill is the colormap at its weight (weights on the fixed 0..1 scale).
    const Colormap& viridis = colormaps()[0];
    for (int q = 0; q < 3; ++q)
        for (int k = 0; k < 3; ++k) {
            const float w = tr.attention.heads[0].weights(q, k);
            const std::string where = "data-q=\"" + std::to_string(q) + "\" data-k=\"" + std::to_string(k) + "\"";
            const size_t at = svg.find(where);
            REQUIRE(at != std::string::npos);
            const size_t rect = svg.rfind("<rect", at);
            const std::string element = svg.substr(rect, svg.find("/>", at) - rect);
            CHECK_MESSAGE(element.find("fill=\"" + hex_of(colormap_sample(viridis, w)) + "\"") != std::string::npos, element);
        }
    MESSAGE("i-am-good heatmap: " << svg.size() << " bytes");
}

TEST_CASE("heatmap SVG of the masked preset: the causal triangle is hatched, and the legend says so") {
    const Trace tr = preset_trace("masked-apple");
    const int T = static_cast<int>(tr.queries.size());
    REQUIRE(T >= 3);
    SvgOptions o;
    o.view = SvgView::Heatmap;
    const std::string svg = write_svg(tr, o);
    CHECK(xml_problem(svg) == "");
    CHECK(test::occurrences(svg, "class=\"cell masked\"") == T * (T - 1) / 2);
    CHECK(test::occurrences(svg, "class=\"cell\"") == T * (T + 1) / 2);
    CHECK(test::occurrences(svg, "fill=\"url(#hatch)\"") == T * (T - 1) / 2 + 1);  // + the legend's swatch
    CHECK(svg.find("<pattern id=\"hatch\"") != std::string::npos);
    CHECK(svg.find("class=\"masked-swatch\"") != std::string::npos);
    // Cell (0, 1) lies above the diagonal: masked.
    const size_t at = svg.find("data-q=\"0\" data-k=\"1\"");
    REQUIRE(at != std::string::npos);
    CHECK(svg.substr(svg.rfind("<rect", at), at - svg.rfind("<rect", at)).find("url(#hatch)") != std::string::npos);
    // Scores instead of weights: masked cells print −∞ and the legend is the scores' range.
    o.scores = true;
    const std::string scores = write_svg(tr, o);
    CHECK(xml_problem(scores) == "");
    CHECK(test::occurrences(scores, "\xe2\x88\x92\xe2\x88\x9e") == T * (T - 1) / 2);
    CHECK(scores.find(">score<") != std::string::npos);
}

TEST_CASE("lines SVG: one line per head, query and key with a weight; top-k, threshold, selection") {
    const Trace tr = preset_trace("multi-head-rain");
    const int T_q = static_cast<int>(tr.queries.size()), T_k = static_cast<int>(tr.keys.size()), H = tr.heads;
    REQUIRE(H > 1);
    int positive = 0;
    for (int h = 0; h < H; ++h)
        for (int q = 0; q < T_q; ++q)
            for (int k = 0; k < T_k; ++k) positive += tr.attention.heads[h].weights(q, k) > 0.0f;
    SvgOptions o;
    o.view = SvgView::Lines;
    std::string svg = write_svg(tr, o);
    CHECK(xml_problem(svg) == "");
    CHECK(test::occurrences(svg, "class=\"line\"") == positive);
    CHECK(test::occurrences(svg, "class=\"token query\"") == T_q);
    CHECK(test::occurrences(svg, "class=\"token key\"") == T_k);
    CHECK(test::occurrences(svg, "class=\"token-label\"") == T_q + T_k);
    CHECK(test::occurrences(svg, "class=\"head-label\"") == H);
    CHECK(svg.find(">head 2<") != std::string::npos);
    CHECK(svg.find("stroke=\"#1f77b4\"") != std::string::npos);  // head 1, light theme
    CHECK(svg.find("stroke=\"#e8590c\"") != std::string::npos);  // head 2

    o.top_k = 1;
    CHECK(test::occurrences(write_svg(tr, o), "class=\"line\"") == H * T_q);
    o.top_k = 0;
    o.head_visible.assign(H, false);
    o.head_visible[1] = true;
    svg = write_svg(tr, o);
    int positive_head_2 = 0;
    for (int q = 0; q < T_q; ++q)
        for (int k = 0; k < T_k; ++k) positive_head_2 += tr.attention.heads[1].weights(q, k) > 0.0f;
    CHECK(test::occurrences(svg, "class=\"line\"") == positive_head_2);
    CHECK(test::occurrences(svg, "data-head=\"0\"") == 0);
    CHECK(test::occurrences(svg, "class=\"head-label\"") == 1);
    o.head_visible.clear();
    o.threshold = 2.0f;  // above every weight
    CHECK(test::occurrences(write_svg(tr, o), "class=\"line\"") == 0);
    o.threshold = 0.0f;
    o.selected_query = 1;  // its lines only, with its weights beside the keys
    svg = write_svg(tr, o);
    CHECK(test::occurrences(svg, "class=\"line\"") == H * T_k);
    CHECK(test::occurrences(svg, "class=\"number\"") == H * T_k);
    CHECK(test::occurrences(svg, "data-q=\"0\"") == 0);
}

TEST_CASE("lines SVG of the masked preset: no line to a later token") {
    const Trace tr = preset_trace("masked-apple");
    const int T = static_cast<int>(tr.queries.size());
    SvgOptions o;
    o.view = SvgView::Lines;
    const std::string svg = write_svg(tr, o);
    CHECK(xml_problem(svg) == "");
    CHECK(test::occurrences(svg, "class=\"line\"") == T * (T + 1) / 2);
    for (int q = 0; q < T; ++q)
        for (int k = q + 1; k < T; ++k)
            CHECK(svg.find("data-q=\"" + std::to_string(q) + "\" data-k=\"" + std::to_string(k) + "\"") == std::string::npos);
    // A selected key shows "masked" beside the queries that may not see it.
    SvgOptions sel = o;
    sel.selected_key = T - 1;
    CHECK(test::occurrences(write_svg(tr, sel), "class=\"number masked\"") == T - 1);
}

TEST_CASE("Q–K space SVG: a mark per query and key, the statements, a selected query's lines; every head's panels") {
    const Trace tr = preset_trace("multi-head-rain");
    SvgOptions o;
    o.view = SvgView::Qk;
    o.head = 1;
    std::string svg = write_svg(tr, o);
    CHECK(xml_problem(svg) == "");
    CHECK(svg.find("data-view=\"qk\"") != std::string::npos);
    CHECK(test::occurrences(svg, "class=\"token query\"") == tr.T_q() + 1);  // and the legend's
    CHECK(test::occurrences(svg, "class=\"token key\"") == tr.T_k() + 1);
    CHECK(svg.find("Head 2: its 27 queries and 27 keys as the scores read them, by PCA.") != std::string::npos);
    CHECK(svg.find("r = ") != std::string::npos);
    CHECK(test::occurrences(svg, "<line") == 0);
    o.selected_query = 4;
    svg = write_svg(tr, o);
    int lines = 0;
    for (Eigen::Index k = 0; k < tr.attention.heads[1].weights.cols(); ++k) lines += tr.attention.heads[1].weights(4, k) >= 0.005f;
    CHECK(test::occurrences(svg, "<line") == lines);
    o.qk = QkProjection::Heads;
    svg = write_svg(tr, o);
    CHECK(xml_problem(svg) == "");
    CHECK(test::occurrences(svg, "class=\"head-label\"") == tr.heads);
    CHECK(test::occurrences(svg, "class=\"token query\"") == tr.heads * tr.T_q() + 1);  // and the legend's
    CHECK(test::occurrences(svg, "class=\"token key\"") == tr.heads * tr.T_k() + 1);
    CHECK(svg_size_problem(tr, o) == "");
}

TEST_CASE("token text is escaped and kept (CJK, markup characters); dark theme; labels in Chinese") {
    Scene scene = read_scene(R"({"tokens": ["<b>", "a&b", "我", "\"q\""], "d_model": 4, "heads": 2, "weights": {"seed": 3}})");
    const Trace tr = compute(scene);
    SvgOptions o;
    o.dark = true;
    o.labels.title = "x < y · 自注意力";
    o.labels.lines.keys = "键";
    for (SvgView view : {SvgView::Lines, SvgView::Heatmap}) {
        o.view = view;
        const std::string svg = write_svg(tr, o);
        CHECK(xml_problem(svg) == "");
        CHECK(svg.find(">&lt;b&gt;<") != std::string::npos);
        CHECK(svg.find(">a&amp;b<") != std::string::npos);
        CHECK(svg.find(">我<") != std::string::npos);
        CHECK(svg.find(">&quot;q&quot;<") != std::string::npos);
        CHECK(svg.find("<title>x &lt; y · 自注意力</title>") != std::string::npos);
        CHECK(svg.find("class=\"background\" width=\"100%\" height=\"100%\" fill=\"#16181d\"") != std::string::npos);
    }
    o.view = SvgView::Lines;
    CHECK(write_svg(tr, o).find(">键<") != std::string::npos);
}

TEST_CASE("long sequences: labels thin out, the document stays well formed; an empty trace is an empty figure") {
    std::string tokens = "[";
    for (int i = 0; i < 120; ++i) tokens += (i ? ",\"t" : "\"t") + std::to_string(i) + "\"";
    const Trace tr = compute(read_scene(R"({"kind": "masked", "d_model": 8, "tokens": )" + tokens + "]}"));
    SvgOptions o;
    const std::string svg = write_svg(tr, o);
    CHECK(xml_problem(svg) == "");
    CHECK(test::occurrences(svg, "class=\"cell\"") + test::occurrences(svg, "class=\"cell masked\"") == 120 * 120);
    CHECK(test::occurrences(svg, "class=\"row-label\"") < 120);
    CHECK(test::occurrences(svg, "class=\"row-label\"") >= 120 / 4);
    CHECK(test::occurrences(svg, "class=\"number\"") == 0);  // cells too small for numbers
    MESSAGE("120×120 heatmap: " << svg.size() << " bytes");

    CHECK(svg_size_problem(tr, o) == "");
    // 600 tokens: 360,000 cells is past the SVG limit, unless zoomed in to a part of the map.
    // Lines are drawn as on screen (lines_layout.hpp): past 64 keys each query's top 3, at most
    // kMaxOverviewLines of them, so a lines SVG never passes the limit (600 × 3 here).
    std::string many = "[";
    for (int i = 0; i < 600; ++i) many += (i ? ",\"w" : "\"w") + std::to_string(i) + "\"";
    const Trace big = compute(read_scene(R"({"d_model": 4, "tokens": )" + many + "]}"));
    SvgOptions heat;
    CHECK(svg_size_problem(big, heat).find("360000 cells") != std::string::npos);
    heat.zoom = 4.0f;
    CHECK(svg_size_problem(big, heat) == "");
    SvgOptions lines;
    lines.view = SvgView::Lines;
    CHECK(svg_size_problem(big, lines) == "");
    CHECK(test::occurrences(write_svg(big, lines), "class=\"line\"") <= 600 * kLinesAutoTopK);
    lines.top_k = 1;
    CHECK(svg_size_problem(big, lines) == "");
    lines.top_k = 0;
    lines.selected_query = 3;
    CHECK(svg_size_problem(big, lines) == "");

    // A long trace (rows computed again on demand) writes the same document as the full one.
    const Trace long_tr = compute(read_scene(R"({"kind": "masked", "d_model": 8, "heads": 2, "tokens": )" + tokens + "]}"), 0);
    const Trace full_tr = compute(read_scene(R"({"kind": "masked", "d_model": 8, "heads": 2, "tokens": )" + tokens + "]}"));
    REQUIRE(long_tr.is_long());
    for (SvgView view : {SvgView::Lines, SvgView::Heatmap}) {
        SvgOptions v;
        v.view = view;
        v.top_k = 2;
        v.scores = view == SvgView::Heatmap;
        CHECK(write_svg(long_tr, v) == write_svg(full_tr, v));
        v.head = -1;
        v.selected_key = 70;
        CHECK(write_svg(long_tr, v) == write_svg(full_tr, v));
    }

    const std::string empty = write_svg(Trace{}, o);
    CHECK(xml_problem(empty) == "");
    CHECK(test::occurrences(empty, "class=\"cell") == 0);
}

TEST_CASE("heatmap SVG on the log scale: cell colours from log10 of the weight, decade ticks") {
    const Trace tr = preset_trace("masked-apple");
    SvgOptions o;
    o.view = SvgView::Heatmap;
    o.log = true;
    const std::string svg = write_svg(tr, o);
    CHECK(xml_problem(svg) == "");
    CHECK(svg.find(">0.0001<") != std::string::npos);
    CHECK(svg.find(">0.01<") != std::string::npos);
    // 爱 → 我 is 0.35: log10 gives 1 − 0.456/4 ≈ 0.886 of the map, not 0.35.
    const float w = tr.attention.heads[0].weights(1, 0);
    const std::string want = hex_of(colormap_sample(colormaps()[0], 1.0f + std::log10(w) / 4.0f));
    CHECK(svg.find("fill=\"" + want + "\"") != std::string::npos);
    o.log = false;
    CHECK(write_svg(tr, o).find(">0.0001<") == std::string::npos);
}
