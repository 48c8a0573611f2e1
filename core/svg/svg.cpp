// svg.cpp: the lines and heatmap figures as SVG (see svg.hpp). Sizes are in CSS pixels at the
// UI's scale 1, the same numbers web/ui/lines_view.cpp and web/ui/heatmap_view.cpp use on screen.
//
// [SECTION] Text: escaping, width estimates, number formatting
// [SECTION] Colours
// [SECTION] Lines
// [SECTION] Heatmap
// [SECTION] Document
#include "svg.hpp"

#include "colormaps.hpp"
#include "display_map.hpp"
#include "steps.hpp"
#include "text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <numeric>

namespace attn {

// [SECTION] Text: escaping, width estimates, number formatting ----------------------------------

namespace {

constexpr const char* kReplacement = "\xef\xbf\xbd";  // U+FFFD

// Decodes one UTF-8 code point at s[i] (text.hpp); advances i. Returns -1 for an invalid sequence.
long next_code_point(const std::string& s, size_t& i) {
    const size_t start = i;
    const char32_t cp = decode_utf8(s, i);
    return cp == kReplacementCharacter && i - start == 1 ? -1 : static_cast<long>(cp);
}

// East Asian wide characters take a full em; the rest about 0.62 em in DejaVu Sans. Only for
// box widths and spacing: text is anchored at the side that must line up.
bool wide(long cp) {
    return (cp >= 0x1100 && cp <= 0x115f) || (cp >= 0x2e80 && cp <= 0xa4cf) || (cp >= 0xac00 && cp <= 0xd7a3) ||
           (cp >= 0xf900 && cp <= 0xfaff) || (cp >= 0xfe30 && cp <= 0xfe4f) || (cp >= 0xff00 && cp <= 0xff60) ||
           (cp >= 0xffe0 && cp <= 0xffe6) || (cp >= 0x1f300 && cp <= 0x1faff) || (cp >= 0x20000 && cp <= 0x3fffd);
}

float text_width(const std::string& s, float font_size) {
    float em = 0.0f;
    for (size_t i = 0; i < s.size();) {
        long cp = next_code_point(s, i);
        em += cp >= 0 && wide(cp) ? 1.0f : 0.62f;
    }
    return em * font_size;
}

// The label of a token as the UI shows it: ∅ for an empty one.
std::string token_text(const std::string& token) { return token.empty() ? "\xe2\x88\x85" : token; }

// Coordinates: two decimals, trailing zeros dropped ("12", "12.5", "12.25").
std::string num(double x) {
    if (!std::isfinite(x)) x = 0.0;
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.2f", x);
    std::string s = buffer;
    while (!s.empty() && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s == "-0" ? "0" : s;
}

// Fewer decimals for bigger numbers so that every value fits its cell (as on screen).
std::string format_value(float x) {
    const float a = std::fabs(x);
    return format_number(x, a >= 100.0f ? 0 : a >= 10.0f ? 1 : 2);
}

std::string printf_int(const std::string& format, int value) {
    char buffer[128];
    std::snprintf(buffer, sizeof buffer, format.find("%d") != std::string::npos ? format.c_str() : "%d", value);
    return buffer;
}

}  // namespace

std::string xml_escape(const std::string& text) {
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
        const size_t start = i;
        const long cp = next_code_point(text, i);
        if (cp < 0 || (cp < 0x20 && cp != 0x09 && cp != 0x0a && cp != 0x0d) || cp == 0xfffe || cp == 0xffff) {
            out += kReplacement;
            continue;
        }
        switch (cp) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += "&apos;"; break;
            default: out.append(text, start, i - start);
        }
    }
    return out;
}

namespace {

// [SECTION] Colours ------------------------------------------------------------------------------

// The figure's colours: web/ui/theme.cpp's palette() written as hex.
struct FigureColors {
    std::uint32_t background, text, text_muted, token_fill, token_selected, hatch_a, hatch_b, outline;
};
const FigureColors& figure_colors(bool dark) {
    static const FigureColors kDark{0x16181d, 0xe9ecef, 0x9aa3ad, 0x2a2e36, 0x4a5a7a, 0x4d4f57, 0x36383e, 0xffffff};
    static const FigureColors kLight{0xffffff, 0x1f2328, 0x5c6670, 0xeef1f4, 0xc5d5f0, 0xdbdee3, 0xbdbfc7, 0x141418};
    return dark ? kDark : kLight;
}

std::string hex(std::uint32_t rgb) {
    char buffer[8];
    std::snprintf(buffer, sizeof buffer, "#%06x", static_cast<unsigned>(rgb & 0xffffff));
    return buffer;
}

std::string hex(const std::array<float, 3>& rgb) {
    std::uint32_t v = 0;
    for (float c : rgb) v = (v << 8) | static_cast<std::uint32_t>(std::lround(std::clamp(c, 0.0f, 1.0f) * 255.0f));
    return hex(v);
}

std::uint32_t mix(std::uint32_t a, std::uint32_t b, float t) {
    t = std::clamp(t, 0.0f, 1.0f);
    std::uint32_t out = 0;
    for (int shift = 16; shift >= 0; shift -= 8) {
        float x = static_cast<float>((a >> shift) & 0xff), y = static_cast<float>((b >> shift) & 0xff);
        out |= static_cast<std::uint32_t>(std::lround(x + (y - x) * t)) << shift;
    }
    return out;
}

// Dark or light text, whichever reads on a cell of colour rgb (as web/ui/heatmap_view.cpp ink_on).
std::uint32_t ink_on(const std::array<float, 3>& rgb) {
    const float luminance = 0.2126f * rgb[0] + 0.7152f * rgb[1] + 0.0722f * rgb[2];
    return luminance > 0.5f ? 0x141418 : 0xf5f5f5;
}

// The document being written: the body, then wrapped with the root element at its final size.
struct Doc {
    std::string body, defs;
    float width = 0.0f, height = 0.0f;

    void text(float x, float y, float size, std::uint32_t color, const std::string& s, const char* cls,
              const char* anchor = "start", const std::string& extra = "") {
        body += "<text class=\"" + std::string(cls) + "\" x=\"" + num(x) + "\" y=\"" + num(y) + "\" font-size=\"" +
                num(size) + "\" fill=\"" + hex(color) + "\"";
        if (std::string(anchor) != "start") body += " text-anchor=\"" + std::string(anchor) + "\"";
        body += extra + ">" + xml_escape(s) + "</text>\n";
    }
    // Text vertically centred on y: the baseline a third of the size below the centre (rsvg and
    // ImageMagick ignore dominant-baseline, so it is placed explicitly).
    void text_mid(float x, float y, float size, std::uint32_t color, const std::string& s, const char* cls,
                  const char* anchor = "start", const std::string& extra = "") {
        text(x, y + 0.36f * size, size, color, s, cls, anchor, extra);
    }
    void rect(float x, float y, float w, float h, const std::string& fill, const std::string& extra = "") {
        body += "<rect x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(w) + "\" height=\"" + num(h) +
                "\" fill=\"" + fill + "\"" + extra + "/>\n";
    }
};

constexpr float kBody = 15.0f, kSmall = 12.5f, kTitle = 19.0f, kMargin = 16.0f;

float title_block(Doc& doc, const SvgOptions& o, const FigureColors& c) {
    if (o.labels.title.empty()) return 0.0f;
    doc.text(kMargin, kMargin + kTitle, kTitle, c.text, o.labels.title, "title");
    return kTitle + 14.0f;
}

// [SECTION] Lines --------------------------------------------------------------------------------

void lines_figure(Doc& doc, const Trace& tr, const SvgOptions& o) {
    const FigureColors& c = figure_colors(o.dark);
    const int T_q = static_cast<int>(tr.queries.size()), T_k = static_cast<int>(tr.keys.size());
    const bool cross = tr.kind == AttentionKind::Cross;
    std::vector<int> visible;
    for (int h = 0; h < tr.heads; ++h)
        if (o.head_visible.empty() || (h < static_cast<int>(o.head_visible.size()) && o.head_visible[h])) visible.push_back(h);
    const int n_visible = static_cast<int>(visible.size());
    std::vector<HeadRows> rows;  // rows on demand: a long trace keeps only its first rows
    rows.reserve(static_cast<size_t>(tr.heads));
    for (int h = 0; h < tr.heads; ++h) rows.emplace_back(tr, h);
    auto weight = [&](int h, int q, int k) { return rows[static_cast<size_t>(h)].weights(q)[k]; };
    const int sel_q = o.selected_query >= 0 && o.selected_query < T_q ? o.selected_query : -1;
    const int sel_k = sel_q < 0 && o.selected_key >= 0 && o.selected_key < T_k ? o.selected_key : -1;
    const bool any_sel = sel_q >= 0 || sel_k >= 0;

    // Layout: rows of up to 52 px; short sequences get the title size, as on screen.
    const float row_h = std::clamp(520.0f / static_cast<float>(std::max({T_q, T_k, 1})), 14.0f, 52.0f);
    const float fs = row_h >= 46.0f ? kTitle : row_h >= 22.0f ? kBody : std::max(row_h - 5.0f, 8.0f);
    const float pad = 7.0f, box_h = std::min(row_h - 3.0f, fs + 9.0f);
    float maxw_q = 0.0f, maxw_k = 0.0f;
    for (auto& t : tr.queries) maxw_q = std::max(maxw_q, text_width(token_text(t), fs));
    for (auto& t : tr.keys) maxw_k = std::max(maxw_k, text_width(token_text(t), fs));
    const int n_numbers = n_visible > 4 ? 1 : std::max(n_visible, 1);
    const float num_w = text_width("0.00", kBody) + 10.0f;
    const float weights_w = any_sel ? n_numbers * num_w + 8.0f : 0.0f;
    const float header_h = kSmall + 18.0f;
    const float span = 320.0f;
    const float top0 = kMargin + title_block(doc, o, c);
    const float rows_h = static_cast<float>(std::max(T_q, T_k)) * row_h;
    const float legend_h = tr.heads > 1 ? fs + 16.0f : 0.0f;
    const std::string& left_title = cross ? o.labels.target_queries : o.labels.queries;
    const std::string& right_title = cross ? o.labels.source_keys : o.labels.keys;
    const float x0 = kMargin;
    // The column headings line up with the token boxes' outer edges and must fit too.
    const float xq_right = std::max(x0 + weights_w + maxw_q + 2.0f * pad, x0 + text_width(left_title, kSmall));
    const float xk_left = xq_right + span;
    doc.width = std::max(xk_left + maxw_k + 2.0f * pad + weights_w, xk_left + text_width(right_title, kSmall)) + kMargin;
    doc.height = top0 + header_h + rows_h + 12.0f + legend_h + kMargin;
    const float top = top0 + header_h;
    const float top_q = top + (rows_h - static_cast<float>(T_q) * row_h) * 0.5f;
    const float top_k = top + (rows_h - static_cast<float>(T_k) * row_h) * 0.5f;
    auto yq = [&](int i) { return top_q + (static_cast<float>(i) + 0.5f) * row_h; };
    auto yk = [&](int j) { return top_k + (static_cast<float>(j) + 0.5f) * row_h; };

    doc.text(xq_right, top0 + 8.0f + kSmall, kSmall, c.text_muted, left_title, "heading", "end");
    doc.text(xk_left, top0 + 8.0f + kSmall, kSmall, c.text_muted, right_title, "heading");

    // Lines: the same choice of lines, widths and opacities as web/ui/lines_view.cpp (without its
    // cap for huge figures past 200,000 lines: a vector file keeps every line asked for).
    const float head_step = n_visible > 1 ? std::min(2.5f, box_h * 0.5f / static_cast<float>(n_visible)) : 0.0f;
    doc.body += "<g class=\"lines\">\n";
    std::vector<int> order(T_k);
    for (int vi = 0; vi < n_visible; ++vi) {
        const int h = visible[vi];
        const std::string color = hex(head_color_hex(o.dark, h));
        const float dy = (static_cast<float>(vi) - 0.5f * static_cast<float>(n_visible - 1)) * head_step;
        for (int q = 0; q < T_q; ++q) {
            if (sel_q >= 0 && sel_q != q) continue;
            std::iota(order.begin(), order.end(), 0);
            int keep = T_k;
            if (o.top_k > 0 && o.top_k < T_k && sel_k < 0) {
                keep = o.top_k;
                std::partial_sort(order.begin(), order.begin() + keep, order.end(),
                                  [&](int a, int b) { return weight(h, q, a) > weight(h, q, b); });
            }
            for (int n = 0; n < keep; ++n) {
                const int k = order[n];
                if (sel_k >= 0 && sel_k != k) continue;
                const float w = weight(h, q, k);
                if (!(w > 0.0f) || w < o.threshold) continue;
                const float alpha = std::min(any_sel ? 0.3f + 0.7f * std::pow(w, 0.7f) : 0.95f * std::pow(w, 0.7f), 1.0f);
                doc.body += "<line class=\"line\" x1=\"" + num(xq_right + 3.0f) + "\" y1=\"" + num(yq(q) + dy) +
                            "\" x2=\"" + num(xk_left - 3.0f) + "\" y2=\"" + num(yk(k) + dy) + "\" stroke=\"" + color +
                            "\" stroke-opacity=\"" + num(alpha) + "\" stroke-width=\"" + num(0.8f + 4.0f * w) +
                            "\" data-head=\"" + std::to_string(h) + "\" data-q=\"" + std::to_string(q) + "\" data-k=\"" +
                            std::to_string(k) + "\" data-w=\"" + format_number(w, 4) + "\"/>\n";
            }
        }
    }
    doc.body += "</g>\n";

    // Tokens, tinted by the selection's mean weight, with the weights beside the other column.
    auto mean_weight = [&](int q, int k) {
        if (n_visible == 0) return 0.0f;
        float sum = 0.0f;
        for (int h : visible) sum += weight(h, q, k);
        return sum / static_cast<float>(n_visible);
    };
    const std::uint32_t tint = head_color_hex(o.dark, n_visible == 1 ? visible[0] : 0);
    auto numbers = [&](float x, float y, int q, int k) {
        if (tr.allowed(q, k) == 0) {
            doc.text_mid(x, y, kSmall, c.text_muted, o.labels.masked, "number masked");
            return;
        }
        if (n_visible > 4 || n_visible == 0) {
            doc.text_mid(x, y, kBody, c.text, format_number(mean_weight(q, k), 2), "number");
            return;
        }
        for (int vi = 0; vi < n_visible; ++vi)
            doc.text_mid(x + static_cast<float>(vi) * num_w, y, kBody, head_color_hex(o.dark, visible[vi]),
                         format_number(weight(visible[vi], q, k), 2), "number");
    };
    auto token = [&](bool query, int i, float y, bool selected, float tint_t) {
        const std::string& t = query ? tr.queries[i] : tr.keys[i];
        const float w = text_width(token_text(t), fs) + 2.0f * pad;
        const float x = query ? xq_right - w : xk_left;
        const std::uint32_t fill = selected ? c.token_selected : mix(c.token_fill, tint, tint_t * 0.75f);
        std::string extra = " rx=\"4\" class=\"token " + std::string(query ? "query" : "key") + "\" data-index=\"" +
                            std::to_string(i) + "\"";
        if (selected) extra += " stroke=\"" + hex(tint) + "\" stroke-width=\"1.5\"";
        doc.rect(x, y - box_h * 0.5f, w, box_h, hex(fill), extra);
        const std::uint32_t ink = tint_t > 0.55f && !o.dark ? 0xffffff : c.text;
        if (query) doc.text_mid(xq_right - pad, y, fs, ink, token_text(t), "token-label", "end");
        else doc.text_mid(xk_left + pad, y, fs, ink, token_text(t), "token-label");
    };
    for (int q = 0; q < T_q; ++q) {
        token(true, q, yq(q), q == sel_q, sel_k >= 0 ? mean_weight(q, sel_k) : 0.0f);
        if (sel_k >= 0) numbers(xq_right - maxw_q - 2.0f * pad - weights_w + 4.0f, yq(q), q, sel_k);
    }
    for (int k = 0; k < T_k; ++k) {
        token(false, k, yk(k), k == sel_k, sel_q >= 0 ? mean_weight(sel_q, k) : 0.0f);
        if (sel_q >= 0) numbers(xk_left + maxw_k + 2.0f * pad + 8.0f, yk(k), sel_q, k);
    }

    // Heads legend along the bottom, as in the PNG export.
    if (tr.heads > 1) {
        doc.body += "<g class=\"legend\">\n";
        float x = kMargin;
        const float y = doc.height - kMargin - fs - 4.0f;
        for (int h : visible) {
            doc.rect(x, y + 3.0f, fs - 6.0f, fs - 6.0f, hex(head_color_hex(o.dark, h)), " rx=\"2\"");
            const std::string label = printf_int(o.labels.head, h + 1);
            doc.text(x + fs, y + fs * 0.82f, fs, c.text, label, "head-label");
            x += fs + text_width(label, fs) + 14.0f;
        }
        doc.width = std::max(doc.width, x + kMargin);
        doc.body += "</g>\n";
    }
}

// [SECTION] Heatmap ------------------------------------------------------------------------------

void heatmap_figure(Doc& doc, const Trace& tr, const SvgOptions& o) {
    const FigureColors& c = figure_colors(o.dark);
    const int T_q = static_cast<int>(tr.queries.size()), T_k = static_cast<int>(tr.keys.size());
    const bool cross = tr.kind == AttentionKind::Cross;
    const Colormap& map = colormaps()[std::clamp(o.colormap, 0, static_cast<int>(colormaps().size()) - 1)];
    const bool one_head = o.head >= 0 && o.head < tr.heads;

    // Values as on screen: one head or the mean; weights on the fixed 0..1 scale, scores on
    // their own range (min == max: the middle of the map).
    std::vector<HeadRows> rows;  // rows on demand: a long trace keeps only its first rows
    rows.reserve(static_cast<size_t>(tr.heads));
    for (int h = 0; h < tr.heads; ++h) rows.emplace_back(tr, h);
    auto value = [&](int q, int k) {
        auto one = [&](int h) {
            HeadRows& head = rows[static_cast<size_t>(h)];
            return o.scores ? head.scaled(q)[k] : head.weights(q)[k];
        };
        if (one_head) return one(o.head);
        float sum = 0.0f;
        for (int h = 0; h < tr.heads; ++h) sum += one(h);
        return sum / static_cast<float>(std::max(tr.heads, 1));
    };
    float lo = 0.0f, hi = 1.0f;
    bool any_masked = false;
    if (o.scores) {
        float a = std::numeric_limits<float>::infinity(), b = -a;
        for (int q = 0; q < T_q; ++q)
            for (int k = 0; k < T_k; ++k)
                if (tr.allowed(q, k) != 0 && std::isfinite(value(q, k))) a = std::min(a, value(q, k)), b = std::max(b, value(q, k));
        if (std::isfinite(a)) lo = a, hi = b;
    }
    for (int q = 0; q < T_q; ++q)
        for (int k = 0; k < T_k; ++k) any_masked |= tr.allowed(q, k) == 0;
    const bool log = o.log && !o.scores;
    auto color_of = [&](float x) { return colormap_sample(map, colormap_position(x, lo, hi, log)); };

    // Layout (web/ui/heatmap_view.cpp at scale 1): row labels, column labels upright when they fit
    // a cell else turned to read upwards, every n-th label when they would overlap.
    float maxw_q = 0.0f, maxw_k = 0.0f;
    for (auto& t : tr.queries) maxw_q = std::max(maxw_q, text_width(token_text(t), kBody));
    for (auto& t : tr.keys) maxw_k = std::max(maxw_k, text_width(token_text(t), kBody));
    const float cell = std::clamp(640.0f / static_cast<float>(std::max({T_q, T_k, 1})), 3.0f, 72.0f);
    const bool upright = maxw_k + 8.0f <= cell;
    const float header_h = upright ? kBody + 10.0f : maxw_k + 12.0f;
    const int step_k = upright ? 1 : std::max(1, static_cast<int>(std::ceil(kBody / cell)));
    const int step_q = std::max(1, static_cast<int>(std::ceil(kBody / cell)));
    // The row labels' column; the queries caption above it is right-aligned at the grid and must fit.
    const float label_w = std::max(maxw_q + 14.0f, text_width(cross ? o.labels.caption_target_queries : o.labels.caption_queries, kSmall) + 8.0f);
    const float top = kMargin + title_block(doc, o, c);
    const float caption_h = kSmall + 10.0f;
    const float gx = kMargin + label_w, gy = top + caption_h + header_h;
    const float grid_w = cell * static_cast<float>(T_k), grid_h = cell * static_cast<float>(T_q);

    doc.text(gx, top + kSmall, kSmall, c.text_muted, cross ? o.labels.caption_source_keys : o.labels.caption_keys, "caption");
    doc.text(gx - 8.0f, gy - 6.0f, kSmall, c.text_muted, cross ? o.labels.caption_target_queries : o.labels.caption_queries,
             "caption", "end");

    // Hatch of masked cells as web/gpu/shaders/heatmap.frag draws it: two neutral greys in stripes
    // running down to the right, 7 px apart along a row (7/√2 across the stripes), half each.
    doc.defs += "<pattern id=\"hatch\" patternUnits=\"userSpaceOnUse\" width=\"4.95\" height=\"4.95\" "
                "patternTransform=\"rotate(-45)\"><rect width=\"4.95\" height=\"4.95\" fill=\"" + hex(c.hatch_b) +
                "\"/><rect width=\"2.475\" height=\"4.95\" fill=\"" + hex(c.hatch_a) + "\"/></pattern>\n";

    // Cells: one rect each; a thin border in the background colour when cells are big enough.
    const std::string border = cell >= 8.0f ? " stroke=\"" + hex(c.background) + "\" stroke-width=\"" +
                                                  num(std::min(1.0f, cell * 0.04f)) + "\""
                                            : "";
    doc.body += "<g class=\"cells\"" + border + ">\n";
    for (int q = 0; q < T_q; ++q)
        for (int k = 0; k < T_k; ++k) {
            const float x = gx + static_cast<float>(k) * cell, y = gy + static_cast<float>(q) * cell;
            const std::string where = " data-q=\"" + std::to_string(q) + "\" data-k=\"" + std::to_string(k) + "\"";
            if (tr.allowed(q, k) == 0) {
                doc.rect(x, y, cell, cell, "url(#hatch)", " class=\"cell masked\"" + where);
            } else {
                const float v = value(q, k);
                doc.rect(x, y, cell, cell, hex(color_of(v)),
                         " class=\"cell\"" + where + " data-v=\"" + format_number(v, 4) + "\"");
            }
        }
    doc.body += "</g>\n";

    // Labels.
    const int sel_q = o.selected_query >= 0 && o.selected_query < T_q ? o.selected_query : -1;
    const int sel_k = o.selected_key >= 0 && o.selected_key < T_k ? o.selected_key : -1;
    for (int q = 0; q < T_q; ++q) {
        if (q % step_q != 0 && q != sel_q) continue;
        doc.text_mid(gx - 8.0f, gy + (static_cast<float>(q) + 0.5f) * cell, kBody, c.text, token_text(tr.queries[q]),
                     "row-label", "end");
    }
    for (int k = 0; k < T_k; ++k) {
        if (k % step_k != 0 && k != sel_k) continue;
        const float x = gx + (static_cast<float>(k) + 0.5f) * cell;
        if (upright) {
            doc.text(x, gy - 6.0f - 0.2f * kBody, kBody, c.text, token_text(tr.keys[k]), "col-label", "middle");
        } else {
            // Turned by -90° about its start: reads upwards from just above the grid.
            const float bx = x + 0.36f * kBody, by = gy - 6.0f;
            doc.text(bx, by, kBody, c.text, token_text(tr.keys[k]), "col-label", "start",
                     " transform=\"rotate(-90 " + num(bx) + " " + num(by) + ")\"");
        }
    }

    // Numbers in cells big enough for them (the label size in big cells, the small one otherwise).
    const float ns = cell >= 64.0f ? kBody : kSmall;
    if (o.show_numbers && cell >= text_width("0.00", ns) + 8.0f && cell >= ns + 6.0f) {
        for (int q = 0; q < T_q; ++q)
            for (int k = 0; k < T_k; ++k) {
                const float cx = gx + (static_cast<float>(k) + 0.5f) * cell, cy = gy + (static_cast<float>(q) + 0.5f) * cell;
                if (tr.allowed(q, k) == 0) {
                    if (o.scores) doc.text_mid(cx, cy, ns, o.dark ? 0xb8bec6 : 0x4a4f55, "\xe2\x88\x92\xe2\x88\x9e", "number", "middle");
                    continue;
                }
                const float v = value(q, k);
                doc.text_mid(cx, cy, ns, ink_on(color_of(v)), format_value(v), "number", "middle");
            }
    }
    // The selected token's row or column, outlined.
    const std::string outline = " fill=\"none\" stroke=\"" + hex(c.outline) + "\" stroke-opacity=\"0.9\" stroke-width=\"1.5\"";
    if (sel_q >= 0) doc.body += "<rect class=\"selection\" x=\"" + num(gx) + "\" y=\"" + num(gy + sel_q * cell) + "\" width=\"" +
                                num(grid_w) + "\" height=\"" + num(cell) + "\"" + outline + "/>\n";
    if (sel_k >= 0) doc.body += "<rect class=\"selection\" x=\"" + num(gx + sel_k * cell) + "\" y=\"" + num(gy) + "\" width=\"" +
                                num(cell) + "\" height=\"" + num(grid_h) + "\"" + outline + "/>\n";

    // Legend: the colormap as a gradient through its key colours (the LUT interpolates them
    // linearly too), five ticks, and the hatch when something is masked.
    const float bar_x = gx + grid_w + 26.0f, bar_w = 14.0f;
    const float bar_h = std::clamp(grid_h, 90.0f, 280.0f);
    const float bar_y = gy + kSmall + 8.0f;
    doc.defs += "<linearGradient id=\"colormap\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">";
    const size_t n_keys = map.keys.size();
    for (size_t i = 0; i < n_keys; ++i)
        doc.defs += "<stop offset=\"" + num(static_cast<double>(i) / static_cast<double>(n_keys - 1)) +
                    "\" stop-color=\"" + hex(map.keys[i]) + "\"/>";
    doc.defs += "</linearGradient>\n";
    doc.body += "<g class=\"legend\" data-colormap=\"" + xml_escape(std::string(map.name)) + "\">\n";
    doc.text(bar_x, gy + kSmall * 0.85f, kSmall, c.text_muted, o.scores ? o.labels.score : o.labels.weight, "legend-title");
    doc.rect(bar_x, bar_y, bar_w, bar_h, "url(#colormap)", " stroke=\"" + hex(c.text_muted) + "\" stroke-width=\"1\"");
    float legend_right = bar_x + bar_w;
    for (int i = 0; i <= 4; ++i) {
        const float t = static_cast<float>(i) / 4.0f, y = bar_y + bar_h * (1.0f - t);
        const std::string label = log ? kLogTicks[i] : format_value(lo + (hi - lo) * t);
        doc.body += "<line x1=\"" + num(bar_x + bar_w) + "\" y1=\"" + num(y) + "\" x2=\"" + num(bar_x + bar_w + 4.0f) +
                    "\" y2=\"" + num(y) + "\" stroke=\"" + hex(c.text_muted) + "\"/>\n";
        doc.text_mid(bar_x + bar_w + 7.0f, y, kSmall, c.text, label, "tick");
        legend_right = std::max(legend_right, bar_x + bar_w + 7.0f + text_width(label, kSmall));
    }
    float bottom = bar_y + bar_h;
    if (any_masked) {
        const float y = bar_y + bar_h + 14.0f;
        doc.rect(bar_x, y, bar_w, bar_w, "url(#hatch)", " class=\"masked-swatch\" stroke=\"" + hex(c.text_muted) + "\" stroke-width=\"1\"");
        doc.text_mid(bar_x + bar_w + 7.0f, y + bar_w * 0.5f, kSmall, c.text, o.labels.masked, "masked-label");
        legend_right = std::max(legend_right, bar_x + bar_w + 7.0f + text_width(o.labels.masked, kSmall));
        bottom = y + bar_w;
    }
    doc.body += "</g>\n";
    doc.width = legend_right + kMargin;
    doc.height = std::max(gy + grid_h, bottom) + kMargin;
}

}  // namespace

// [SECTION] Document -----------------------------------------------------------------------------

std::string svg_size_problem(const Trace& trace, const SvgOptions& o) {
    const long long T_q = static_cast<long long>(trace.queries.size()), T_k = static_cast<long long>(trace.keys.size());
    long long elements = T_q * T_k;
    const char* what = "cells";
    if (o.view == SvgView::Lines) {
        long long heads = 0;
        for (int h = 0; h < trace.heads; ++h)
            heads += o.head_visible.empty() || (h < static_cast<int>(o.head_visible.size()) && o.head_visible[h]);
        const long long per_query = o.top_k > 0 ? std::min<long long>(o.top_k, T_k) : T_k;
        elements = o.selected_query >= 0 ? heads * T_k : o.selected_key >= 0 ? heads * T_q : heads * T_q * per_query;
        what = "lines";
    }
    if (elements <= kSvgMaxElements) return "";
    return "SVG: " + std::to_string(elements) + " " + what + " is more than " + std::to_string(kSvgMaxElements) +
           " (use PNG, or top-k / fewer heads for lines)";
}

std::string write_svg(const Trace& trace, const SvgOptions& options) {
    const FigureColors& c = figure_colors(options.dark);
    Doc doc;
    doc.width = 2.0f * kMargin;
    doc.height = 2.0f * kMargin;
    const bool shapes_ok = trace.heads >= 1 && static_cast<int>(trace.attention.heads.size()) >= trace.heads &&
                           trace.allowed.rows() == static_cast<Eigen::Index>(trace.queries.size()) &&
                           trace.allowed.cols() == static_cast<Eigen::Index>(trace.keys.size());
    if (shapes_ok && !trace.queries.empty() && !trace.keys.empty()) {
        if (options.view == SvgView::Lines) lines_figure(doc, trace, options);
        else heatmap_figure(doc, trace, options);
    }
    const std::string w = num(std::ceil(doc.width)), h = num(std::ceil(doc.height));
    std::string out;
    out.reserve(doc.body.size() + doc.defs.size() + 1024);
    out += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    out += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + w + "\" height=\"" + h +
           "\" viewBox=\"0 0 " + w + " " + h + "\" data-view=\"" +
           (options.view == SvgView::Lines ? "lines" : "heatmap") + "\" data-kind=\"" + kind_name(trace.kind) +
           "\" font-family=\"'DejaVu Sans', 'Droid Sans Fallback', 'Noto Sans CJK SC', 'Microsoft YaHei', sans-serif\">\n";
    out += "<title>" + xml_escape(options.labels.title.empty() ? std::string("attnviz figure") : options.labels.title) +
           "</title>\n";
    if (!doc.defs.empty()) out += "<defs>\n" + doc.defs + "</defs>\n";
    out += "<rect class=\"background\" width=\"100%\" height=\"100%\" fill=\"" + hex(c.background) + "\"/>\n";
    out += doc.body;
    out += "</svg>\n";
    return out;
}

}  // namespace attn
