// svg.cpp: the lines and heatmap figures as SVG (see svg.hpp): the layouts' items as elements.
//
// How an item becomes an element, so that it lands on the pixels ImGui gives it:
//   - ImGui floors a text's top-left and puts the baseline Ascent below it: <text> gets
//     x = floor(x) (+ its width for end-anchored, + half for centred text) and
//     y = floor(y) + ascent, font-size the font's em (TextMeasure::em);
//   - AddRect strokes the rectangle inset by half a pixel, AddLine runs half a pixel right of
//     and below its end points: outlines and segments get the same half pixel.
//
// [SECTION] Text: escaping, estimates, numbers
// [SECTION] Document
// [SECTION] Items
// [SECTION] Lines
// [SECTION] Heatmap
// [SECTION] Entry points
#include "svg.hpp"

#include "png.hpp"

#include "colormaps.hpp"
#include "display_map.hpp"
#include "steps.hpp"
#include "text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>

namespace attn {

// [SECTION] Text: escaping, estimates, numbers ----------------------------------------------------

namespace {

constexpr const char* kReplacement = "\xef\xbf\xbd";  // U+FFFD

// Decodes one UTF-8 code point at s[i] (text.hpp); advances i. Returns -1 for an invalid sequence.
long next_code_point(std::string_view s, size_t& i) {
    const size_t start = i;
    const char32_t cp = decode_utf8(s, i);
    return cp == kReplacementCharacter && i - start == 1 ? -1 : static_cast<long>(cp);
}

// East Asian wide characters take a full em.
bool wide(long cp) {
    return (cp >= 0x1100 && cp <= 0x115f) || (cp >= 0x2e80 && cp <= 0xa4cf) || (cp >= 0xac00 && cp <= 0xd7a3) ||
           (cp >= 0xf900 && cp <= 0xfaff) || (cp >= 0xfe30 && cp <= 0xfe4f) || (cp >= 0xff00 && cp <= 0xff60) ||
           (cp >= 0xffe0 && cp <= 0xffe6) || (cp >= 0x1f300 && cp <= 0x1faff) || (cp >= 0x20000 && cp <= 0x3fffd);
}

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

std::string hex(const Color& c) {
    char buffer[8];
    std::snprintf(buffer, sizeof buffer, "#%06x", static_cast<unsigned>(hex_rgb(c)));
    return buffer;
}

std::string hex(std::uint32_t rgb) {
    char buffer[8];
    std::snprintf(buffer, sizeof buffer, "#%06x", static_cast<unsigned>(rgb & 0xffffff));
    return buffer;
}

std::string hex(const std::array<float, 3>& rgb) { return hex(Color{rgb[0], rgb[1], rgb[2], 1.0f}); }

// fill="…" (and fill-opacity when not opaque); stroke likewise.
std::string paint(const char* what, const Color& c) {
    std::string s = std::string(" ") + what + "=\"" + hex(c) + "\"";
    if (c.a < 1.0f) s += std::string(" ") + what + "-opacity=\"" + num(c.a) + "\"";
    return s;
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

float EstimateMeasure::size(FontRole role) const {
    const float base = role == FontRole::Title ? 19.0f : role == FontRole::Small ? 12.5f : 15.0f;
    return std::round(base * scale);
}

float EstimateMeasure::width(std::string_view text, FontRole role) const {
    float em = 0.0f;
    for (size_t i = 0; i < text.size();) {
        const long cp = next_code_point(text, i);
        em += cp >= 0 && wide(cp) ? 1.0f : 0.62f;
    }
    return em * this->em(role);
}

// [SECTION] Document -------------------------------------------------------------------------------

namespace {

// The document being written: defs and body, wrapped by write_svg in the root element.
struct Doc {
    std::string body, defs;
    const TextMeasure* measure = nullptr;
    std::vector<Box> clips;  // the current layout's clip boxes, as defs clip0 … (offset by clip_base)
    int clip_base = 0;
    float picture_w = 0.0f, picture_h = 0.0f;  // the defs' picture (picture_def), in its pixels

    void add_clips(const std::vector<Box>& boxes) {
        clip_base = static_cast<int>(clip_ids);
        for (const Box& b : boxes) {
            defs += "<clipPath id=\"clip" + std::to_string(clip_ids++) + "\"><rect x=\"" + num(b.x0) + "\" y=\"" + num(b.y0) +
                    "\" width=\"" + num(std::max(b.w(), 0.0f)) + "\" height=\"" + num(std::max(b.h(), 0.0f)) + "\"/></clipPath>\n";
        }
    }
    std::string clip_attr(int clip) const {
        return clip < 0 ? "" : " clip-path=\"url(#clip" + std::to_string(clip_base + clip) + ")\"";
    }
    size_t clip_ids = 0;
};

// What an item is called in the SVG (svg.hpp lists them).
const char* class_of(ItemRole role) {
    switch (role) {
        case ItemRole::Title: return "title";
        case ItemRole::Heading: return "heading";
        case ItemRole::Note: return "note";
        case ItemRole::TokenQuery: return "token query";
        case ItemRole::TokenKey: return "token key";
        case ItemRole::TokenLabel: return "token-label";
        case ItemRole::Rail: return "rail";
        case ItemRole::Strip: return "strip";
        case ItemRole::Tick: return "rail-tick";
        case ItemRole::RailLabel: return "rail-label";
        case ItemRole::Number: return "number";
        case ItemRole::NumberMasked: return "number masked";
        case ItemRole::HeadSwatch: return "head-swatch";
        case ItemRole::HeadLabel: return "head-label";
        case ItemRole::Caption: return "caption";
        case ItemRole::RowLabel: return "row-label";
        case ItemRole::ColLabel: return "col-label";
        case ItemRole::LabelMark: return "label-mark";
        case ItemRole::Selection: return "selection";
        case ItemRole::Hover: return "hover";
        case ItemRole::LegendTitle: return "legend-title";
        case ItemRole::LegendBar: return "legend-bar";
        case ItemRole::LegendTick: return "tick-mark";
        case ItemRole::LegendLabel: return "tick";
        case ItemRole::MaskedSwatch: return "masked-swatch";
        case ItemRole::MaskedLabel: return "masked-label";
        case ItemRole::WindowSwatch: return "window-swatch";
        case ItemRole::WindowLabel: return "window-label";
        case ItemRole::SinkSwatch: return "sink-swatch";
        case ItemRole::SinkLabel: return "sink-label";
        case ItemRole::GroupFrame: return "kv-group";
        case ItemRole::HeadTag: return "head-tag";
        case ItemRole::Knockout: return "knockout";
        case ItemRole::PatchCrop: return "patch";
        case ItemRole::Other: return "item";
    }
    return "item";
}

// [SECTION] Items ----------------------------------------------------------------------------------

// The text's characters, escaped; runs the screen draws from a merged fallback font (CJK) in a
// <tspan> at that font's size and baseline shift, and the run after it shifted back.
std::string glyph_runs(const TextMeasure& m, const std::string& text, FontRole font) {
    std::string out, run;
    float shift = 0.0f;  // of the run being gathered
    TextMeasure::Fallback fb;
    bool run_fallback = false;
    auto flush = [&](bool next_fallback, const TextMeasure::Fallback& next) {
        if (!run.empty()) {
            if (run_fallback) out += "<tspan font-size=\"" + num(fb.em) + "\" dy=\"" + num(fb.dy) + "\">" + xml_escape(run) + "</tspan>";
            else if (shift != 0.0f) out += "<tspan dy=\"" + num(-shift) + "\">" + xml_escape(run) + "</tspan>";
            else out += xml_escape(run);
            shift = run_fallback ? fb.dy : 0.0f;
        }
        run.clear();
        run_fallback = next_fallback, fb = next;
    };
    for (size_t i = 0; i < text.size();) {
        const size_t start = i;
        const long cp = next_code_point(text, i);
        TextMeasure::Fallback f;
        const bool is_fallback = cp >= 0 && m.fallback(static_cast<char32_t>(cp), font, f);
        if (is_fallback != run_fallback || (is_fallback && (f.em != fb.em || f.dy != fb.dy))) flush(is_fallback, f);
        run.append(text, start, i - start);
    }
    flush(false, {});
    return out;
}

// Text whose line ImGui puts at (x, y): see the top of this file.
void write_text(Doc& doc, const Item& it) {
    const TextMeasure& m = *doc.measure;
    if (it.wrap > 0.0f && !it.upwards && it.align == Item::Left) {  // a line per <text>, as the screen wraps it
        const std::vector<std::string_view> lines = m.wrapped_lines(it.text, it.font, it.wrap);
        if (lines.size() > 1) {
            for (size_t i = 0; i < lines.size(); ++i) {
                Item line = it;
                line.wrap = 0.0f, line.text = std::string(lines[i]), line.y = it.y + static_cast<float>(i) * m.size(it.font);
                line.text_w = m.width(line.text, it.font);
                write_text(doc, line);
            }
            return;
        }
    }
    const float left = std::floor(it.x), top = std::floor(it.y);
    const float ax = it.align == Item::Right ? left + it.text_w : it.align == Item::Center ? left + it.text_w * 0.5f : left;
    const float baseline = top + m.ascent(it.font);
    std::string& b = doc.body;
    b += "<text class=\"" + std::string(class_of(it.role)) + "\"";
    if (it.index >= 0 && it.role != ItemRole::Number && it.role != ItemRole::NumberMasked)
        b += " data-index=\"" + std::to_string(it.index) + "\"";
    b += " x=\"" + num(ax) + "\" y=\"" + num(baseline) + "\" font-size=\"" + num(m.em(it.font)) + "\"" + paint("fill", it.fill);
    if (it.align == Item::Right) b += " text-anchor=\"end\"";
    if (it.align == Item::Center) b += " text-anchor=\"middle\"";
    // Turned −90° about the unfloored point, as web/ui's add_text_upwards turns ImGui's vertices.
    if (it.upwards) b += " transform=\"rotate(-90 " + num(it.x) + " " + num(it.y) + ")\"";
    b += doc.clip_attr(it.clip) + ">" + glyph_runs(m, it.text, it.font) + "</text>\n";
}

void write_rect(Doc& doc, const Item& it, const std::string& fill_override = "") {
    const Box& r = it.box;
    const bool outline = it.stroke_width > 0.0f;
    // An outline's path runs half a pixel inside the box (ImGui's AddRect).
    const float inset = outline ? 0.5f : 0.0f;
    std::string& b = doc.body;
    b += "<rect class=\"" + std::string(class_of(it.role)) + (outline && it.fill.a <= 0.0f ? "-outline" : "") + "\"";
    if (it.index >= 0 && (it.role == ItemRole::TokenQuery || it.role == ItemRole::TokenKey)) b += " data-index=\"" + std::to_string(it.index) + "\"";
    b += " x=\"" + num(r.x0 + inset) + "\" y=\"" + num(r.y0 + inset) + "\" width=\"" + num(std::max(r.w() - 2.0f * inset, 0.0f)) +
         "\" height=\"" + num(std::max(r.h() - 2.0f * inset, 0.0f)) + "\"";
    if (it.rounding > 0.0f) b += " rx=\"" + num(it.rounding) + "\"";
    if (!fill_override.empty()) b += " fill=\"" + fill_override + "\"";
    else if (it.fill.a > 0.0f) b += paint("fill", it.fill);
    else b += " fill=\"none\"";
    if (outline) b += paint("stroke", it.stroke) + " stroke-width=\"" + num(it.stroke_width) + "\"";
    b += doc.clip_attr(it.clip) + "/>\n";
}

void write_segment(Doc& doc, const Item& it) {
    // ImGui's AddLine runs half a pixel right of and below its end points.
    doc.body += "<line class=\"" + std::string(class_of(it.role)) + "\" x1=\"" + num(it.x + 0.5f) + "\" y1=\"" + num(it.y + 0.5f) +
                "\" x2=\"" + num(it.x2 + 0.5f) + "\" y2=\"" + num(it.y2 + 0.5f) + "\"" + paint("stroke", it.stroke) +
                " stroke-width=\"" + num(it.stroke_width) + "\"" + doc.clip_attr(it.clip) + "/>\n";
}

// 8-bit RGB pixels (the top row first) as a PNG in a data: URI.
std::string png_data_uri(const std::uint8_t* rgb, int width, int height) {
    const std::size_t pixels = static_cast<std::size_t>(width) * static_cast<std::size_t>(height);
    std::vector<std::uint8_t> rgba(pixels * 4, 255);
    for (std::size_t i = 0; i < pixels; ++i) std::memcpy(&rgba[4 * i], rgb + 3 * i, 3);
    const std::vector<std::uint8_t> png = encode_png(rgba, width, height);
    return "data:image/png;base64," + base64_encode(std::string_view(reinterpret_cast<const char*>(png.data()), png.size()));
}

// A picture of at most 64 px a side is drawn with square pixels, as the renderer draws it (its texture's
// GL_NEAREST): magnified many times, smoothing would blur what the model saw.
std::string picture_rendering(int width, int height) {
    return std::max(width, height) <= 64 ? " style=\"image-rendering:pixelated\"" : "";
}

// The picture patches are pieces of (PatchCrops), once in the defs, a user unit a pixel.
void picture_def(Doc& doc, const std::uint8_t* rgb, int width, int height) {
    doc.defs += "<image id=\"picture\" width=\"" + std::to_string(width) + "\" height=\"" + std::to_string(height) + "\"" +
                picture_rendering(width, height) + " xlink:href=\"" + png_data_uri(rgb, width, height) + "\"/>\n";
    doc.picture_w = static_cast<float>(width), doc.picture_h = static_cast<float>(height);
}

// A patch's piece of the picture (Item::Picture): the defs' picture through a viewBox of that
// piece's pixels.
void write_picture_part(Doc& doc, const Item& it) {
    const Box& r = it.box;
    const float w = doc.picture_w, h = doc.picture_h;
    doc.body += "<g" + doc.clip_attr(it.clip) + "><svg class=\"" + std::string(class_of(it.role)) + "\" data-index=\"" +
                std::to_string(it.index) + "\" x=\"" + num(r.x0) + "\" y=\"" + num(r.y0) + "\" width=\"" + num(r.w()) + "\" height=\"" +
                num(r.h()) + "\" viewBox=\"" + num(it.x * w) + " " + num(it.y * h) + " " + num((it.x2 - it.x) * w) + " " +
                num((it.y2 - it.y) * h) + "\" preserveAspectRatio=\"none\"><use xlink:href=\"#picture\"/></svg></g>\n";
}

// The hatch of masked cells as shaders/heatmap.frag draws it: two neutral greys in stripes
// running down to the right, 7 px apart along a row (7/√2 across the stripes), half each.
void hatch_pattern(Doc& doc, const FigurePalette& pal, bool window) {
    doc.defs += "<pattern id=\"hatch\" patternUnits=\"userSpaceOnUse\" width=\"4.95\" height=\"4.95\" "
                "patternTransform=\"rotate(-45)\"><rect width=\"4.95\" height=\"4.95\" fill=\"" + hex(pal.hatch_b) +
                "\"/><rect width=\"2.475\" height=\"4.95\" fill=\"" + hex(pal.hatch_a) + "\"/></pattern>\n";
    // Cells outside a sliding window (when the map has any): two warm tones, the stripes running
    // up to the right.
    if (window)
        doc.defs += "<pattern id=\"window-hatch\" patternUnits=\"userSpaceOnUse\" width=\"4.95\" height=\"4.95\" "
                    "patternTransform=\"rotate(45)\"><rect width=\"4.95\" height=\"4.95\" fill=\"" + hex(pal.window_b) +
                    "\"/><rect width=\"2.475\" height=\"4.95\" fill=\"" + hex(pal.window_a) + "\"/></pattern>\n";
}

// The colormap as a gradient through its key colours (the LUT interpolates them linearly too).
void colormap_gradient(Doc& doc, const Colormap& map) {
    doc.defs += "<linearGradient id=\"colormap\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">";
    const size_t n_keys = map.keys.size();
    for (size_t i = 0; i < n_keys; ++i)
        doc.defs += "<stop offset=\"" + num(static_cast<double>(i) / static_cast<double>(n_keys - 1)) + "\" stop-color=\"" +
                    hex(map.keys[i]) + "\"/>";
    doc.defs += "</linearGradient>\n";
}

// Every item in order; `at_marker` writes what the layout leaves to the GPU (lines, cells).
template <class Marker>
void write_items(Doc& doc, const std::vector<Item>& items, Marker at_marker) {
    bool in_legend = false;
    for (const Item& it : items) {
        const bool legend = it.role == ItemRole::LegendTitle || it.role == ItemRole::LegendBar || it.role == ItemRole::LegendTick ||
                            it.role == ItemRole::LegendLabel || it.role == ItemRole::MaskedSwatch || it.role == ItemRole::MaskedLabel ||
                            it.role == ItemRole::HeadSwatch || it.role == ItemRole::HeadLabel || it.role == ItemRole::WindowSwatch ||
                            it.role == ItemRole::WindowLabel || it.role == ItemRole::SinkSwatch || it.role == ItemRole::SinkLabel;
        if (legend != in_legend) {
            doc.body += legend ? "<g class=\"legend\">\n" : "</g>\n";
            in_legend = legend;
        }
        switch (it.kind) {
            case Item::Rect: write_rect(doc, it); break;
            case Item::Text: write_text(doc, it); break;
            case Item::Segment: write_segment(doc, it); break;
            case Item::Hatch: write_rect(doc, it, "url(#hatch)"); break;
            case Item::WindowHatch: write_rect(doc, it, "url(#window-hatch)"); break;
            case Item::Colormap: write_rect(doc, it, "url(#colormap)"); break;
            case Item::Picture: write_picture_part(doc, it); break;
            case Item::Lines:
            case Item::Grid: at_marker(it); break;
        }
    }
    if (in_legend) doc.body += "</g>\n";
}

std::vector<int> visible_heads(const Trace& tr, const SvgOptions& o) {
    std::vector<int> visible;
    for (int h = 0; h < tr.heads; ++h)
        if (o.head_visible.empty() || (h < static_cast<int>(o.head_visible.size()) && o.head_visible[h])) visible.push_back(h);
    return visible;
}

// [SECTION] Lines ----------------------------------------------------------------------------------

void lines_figure(Doc& doc, const Trace& tr, const SvgOptions& o, const Box& box) {
    const TextMeasure& m = *doc.measure;
    LinesInput in;
    in.trace = &tr;
    in.visible = visible_heads(tr, o);
    in.threshold = o.threshold;
    in.top_k = o.top_k;
    in.box = box;
    in.scale = o.scale;
    in.legend = true;  // a figure drawn alone, as the PNG
    in.dark = o.dark;
    in.words = o.labels.lines;
    if (o.crops.any() && o.crops_rgb) in.crops = o.crops, picture_def(doc, o.crops_rgb, o.crops.width, o.crops.height);
    // The screen's lists when the caller has them, else built here in one go.
    std::optional<LinesWeights> own;
    LinesWeights* weights = o.lines_weights && &o.lines_weights->trace() == &tr ? o.lines_weights : &own.emplace(tr);
    weights->build_all();
    const LinesLayout layout = lay_out_lines(in, m, label_widths(tr, lines_token_font(in, m), m));
    LinesSelection sel;
    sel.set = o.query_set;
    std::erase_if(sel.set, [&](int q) { return q < 0 || q >= tr.T_q(); });
    sel.query = o.selected_query;
    sel.key = o.selected_query >= 0 ? -1 : o.selected_key;
    sel.pinned = true;
    std::vector<LineSeg> lines;
    std::vector<LineRef> refs;
    const long long overview = choose_lines(layout, sel, *weights, o.threshold, lines, &refs);
    const LinesItems items = lines_items(layout, sel, *weights, m, static_cast<int>(lines.size()), overview);
    write_items(doc, items.items, [&](const Item&) {
        doc.body += "<g class=\"lines\" stroke-linecap=\"butt\">\n";
        for (size_t i = 0; i < lines.size(); ++i) {
            const LineSeg& l = lines[i];
            const LineRef& r = refs[i];
            doc.body += "<line class=\"line\" data-head=\"" + std::to_string(r.head) + "\" data-q=\"" + std::to_string(r.q) +
                        "\" data-k=\"" + std::to_string(r.k) + "\" data-w=\"" + format_number(r.w, 4) + "\" x1=\"" + num(l.x0) +
                        "\" y1=\"" + num(l.y0) + "\" x2=\"" + num(l.x1) + "\" y2=\"" + num(l.y1) + "\" stroke=\"" +
                        hex(Color{l.r, l.g, l.b, 1.0f}) + "\" stroke-opacity=\"" + num(l.a) + "\" stroke-width=\"" + num(l.width) + "\"/>\n";
        }
        doc.body += "</g>\n";
    });
}

// [SECTION] Q–K space ------------------------------------------------------------------------------

void qk_figure(Doc& doc, const Trace& tr, const SvgOptions& o, const Box& box) {
    const TextMeasure& m = *doc.measure;
    const int head = std::clamp(o.head, 0, tr.heads - 1);
    if (o.qk == QkProjection::Heads) {
        std::vector<QkPlane> planes;
        for (int h = 0; h < tr.heads; ++h) planes.push_back(qk_plane(tr, h, QkProjection::Pca));
        QkGridInput in;
        in.planes = &planes, in.box = box, in.scale = o.scale, in.dark = o.dark, in.current = head;
        in.titles = qk_grid_titles(planes, o.labels.qk);
        write_items(doc, qk_grid_items(lay_out_qk_grid(in, m), in, m), [](const Item&) {});
        return;
    }
    const QkPlane plane = qk_plane(tr, head, o.qk);
    QkInput in;
    in.trace = &tr, in.head = head, in.plane = &plane, in.box = box, in.scale = o.scale, in.dark = o.dark;
    qk_fill_words(in, o.labels.qk, o.qk);
    if (o.selected_query >= 0 && o.selected_query < plane.T_q) {
        in.query = o.selected_query;
        in.weights.resize(static_cast<size_t>(plane.T_k));
        attention_rows(tr, head, in.query, in.query + 1, in.weights.data());
    } else if (o.selected_key >= 0 && o.selected_key < plane.T_k) {
        in.key = o.selected_key;
    }
    write_items(doc, qk_items(lay_out_qk(in, m), in, m), [](const Item&) {});
}

// [SECTION] Heatmap --------------------------------------------------------------------------------

void heatmap_figure(Doc& doc, const Trace& tr, const SvgOptions& o, const Box& box) {
    const TextMeasure& m = *doc.measure;
    const int T_q = tr.T_q(), T_k = tr.T_k();
    const FigurePalette& pal = figure_palette(o.dark);
    const int cmap_index = std::clamp(o.colormap, 0, static_cast<int>(colormaps().size()) - 1);
    const Colormap& map = colormaps()[cmap_index];
    const bool one_head = o.head >= 0 && o.head < tr.heads;

    // Values as on screen (display_map.hpp): one head or the mean; weights on the fixed 0..1
    // scale, scores on their own range over the allowed cells (min == max: the middle of the map).
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
    if (o.scores) {
        float a = std::numeric_limits<float>::infinity(), b = -a;
        for (int q = 0; q < T_q; ++q)
            for (int k = 0; k < T_k; ++k)
                if (tr.allowed(q, k) != 0 && std::isfinite(value(q, k))) a = std::min(a, value(q, k)), b = std::max(b, value(q, k));
        if (std::isfinite(a)) lo = a, hi = b;
    }
    const bool log = o.log && !o.scores;
    auto color_of = [&](float x) { return colormap_sample(map, colormap_position(x, lo, hi, log)); };

    HeatmapInput in;
    in.trace = &tr;
    in.box = box;
    in.scale = o.scale;
    in.dark = o.dark;
    in.scores = o.scores;
    in.any_masked = any_masked(tr, o.sink_hidden);
    in.sink_hidden = o.sink_hidden;
    in.zoom = o.zoom, in.view_x = o.view_x, in.view_y = o.view_y;
    in.words = o.labels.heatmap;
    if (o.crops.any() && o.crops_rgb) in.crops = o.crops, picture_def(doc, o.crops_rgb, o.crops.width, o.crops.height);
    const HeatmapLayout layout = lay_out_heatmap(in, m, label_widths(tr, FontRole::Body, m));
    std::vector<float> visible;  // the visible rows' values, as the screen fetches them
    for (int q = layout.row0; q < layout.row1; ++q)
        for (int k = 0; k < T_k; ++k) visible.push_back(value(q, k));
    HeatmapSelection sel;
    sel.query = o.selected_query >= 0 && o.selected_query < T_q ? o.selected_query : -1;
    sel.key = o.selected_key >= 0 && o.selected_key < T_k ? o.selected_key : -1;
    HeatmapValues values;
    values.colormap = cmap_index;
    values.lo = lo, values.hi = hi, values.log = log;
    values.show_numbers = o.show_numbers;
    values.rows = visible.data();
    const HeatmapItems items = heatmap_items(layout, sel, values, m);

    hatch_pattern(doc, pal, window_bites(tr));
    colormap_gradient(doc, map);
    doc.add_clips(items.clips);
    write_items(doc, items.items, [&](const Item& grid) {
        // One rect per visible cell (cut by the grid's box when zoomed), then the lines between
        // big cells: one framebuffer pixel at each cell's left and top edge, as the shader draws.
        doc.body += "<g class=\"cells\"" + doc.clip_attr(grid.clip) + ">\n";
        const std::string size = "\" width=\"" + num(layout.cell) + "\" height=\"" + num(layout.cell) + "\"";
        for (int q = layout.row0; q < layout.row1; ++q)
            for (int k = layout.col0; k < layout.col1; ++k) {
                const std::string at = "<rect x=\"" + num(layout.cell_x(static_cast<float>(k))) + "\" y=\"" +
                                       num(layout.cell_y(static_cast<float>(q))) + size;
                const std::string where = " data-q=\"" + std::to_string(q) + "\" data-k=\"" + std::to_string(k) + "\"";
                if (tr.allowed(q, k) == 0 && o.sink_hidden && k == 0) {
                    doc.body += at + " fill=\"" + hex(sink_fill(pal)) + "\" class=\"cell sink\"" + where + "/>\n";
                } else if (outside_window(tr, q, k)) {
                    doc.body += at + " fill=\"url(#window-hatch)\" class=\"cell masked window\"" + where + "/>\n";
                } else if (tr.allowed(q, k) == 0) {
                    doc.body += at + " fill=\"url(#hatch)\" class=\"cell masked\"" + where + "/>\n";
                } else {
                    const float v = visible[static_cast<size_t>(q - layout.row0) * T_k + k];
                    doc.body += at + " fill=\"" + hex(color_of(v)) + "\" class=\"cell\"" + where + " data-v=\"" + format_number(v, 4) + "\"/>\n";
                }
            }
        doc.body += "</g>\n";
        if (layout.cell >= 8.0f) {
            // The shader colours the pixels whose centre lies in the first pixel of a cell: the
            // column ceil(x − 0.5) for an edge at x (one px = one unit, as `attnviz render` and
            // the 1× export draw).
            const Box& g = layout.grid;
            auto pixel = [](float edge) { return std::ceil(edge - 0.5f); };
            doc.body += "<g class=\"grid-lines\"" + paint("fill", pal.grid) + doc.clip_attr(grid.clip) + ">\n";
            for (int k = layout.col0; k < layout.col1; ++k)
                doc.body += "<rect x=\"" + num(pixel(layout.cell_x(static_cast<float>(k)))) + "\" y=\"" + num(g.y0) +
                            "\" width=\"1\" height=\"" + num(g.h()) + "\"/>\n";
            for (int q = layout.row0; q < layout.row1; ++q)
                doc.body += "<rect x=\"" + num(g.x0) + "\" y=\"" + num(pixel(layout.cell_y(static_cast<float>(q)))) + "\" width=\"" +
                            num(g.w()) + "\" height=\"1\"/>\n";
            doc.body += "</g>\n";
        }
    });
}

}  // namespace

// [SECTION] Entry points ---------------------------------------------------------------------------

std::string svg_size_problem(const Trace& trace, const SvgOptions& o) {
    const long long T_q = trace.T_q(), T_k = trace.T_k();
    // Cells: the visible part of the map (zoomed in, about 1/zoom of each side and a cut cell).
    const double zoom = std::isfinite(o.zoom) ? std::max(o.zoom, 1.0f) : 1.0;
    long long elements = o.zoom > 1.0f ? std::min<long long>(T_q, static_cast<long long>(std::ceil(T_q / zoom)) + 1) *
                                             std::min<long long>(T_k, static_cast<long long>(std::ceil(T_k / zoom)) + 1)
                                       : T_q * T_k;
    const char* what = "cells";
    if (o.view == SvgView::Qk) elements = (T_q + T_k) * (o.qk == QkProjection::Heads ? trace.heads : 3);  // marks, labels, lines
    else if (o.view == SvgView::Lines) {
        // As the screen chooses them (lines_layout.hpp): the overview keeps at most
        // kMaxOverviewLines, a selection its token's lists.
        const long long heads = static_cast<long long>(visible_heads(trace, o).size());
        const long long cap = top_keys_capacity(static_cast<int>(T_k));
        const long long per_query = o.top_k > 0 ? std::min<long long>(o.top_k, cap) : lines_auto_top_k(trace);
        const long long focus = o.top_k > 0 ? std::min<long long>(o.top_k, cap) : cap;
        const long long set = static_cast<long long>(o.query_set.size());
        elements = set > 0 ? heads * set * focus
                   : o.selected_query >= 0 ? heads * focus
                   : o.selected_key >= 0 ? heads * top_keys_capacity(static_cast<int>(T_q))
                                        : std::min<long long>(heads * T_q * per_query, kMaxOverviewLines);
        what = "lines";
    }
    if (elements <= kSvgMaxElements) return "";
    return "SVG: " + std::to_string(elements) + " " + what + " is more than " + std::to_string(kSvgMaxElements) +
           " (use PNG, or top-k / fewer heads for lines)";
}

namespace {

// The document around what `fill` writes into the frame's box: the title line, then the root
// element with the view's name, the background and the body.
std::string framed_svg(const SvgOptions& options, const std::string& view, const std::string& kind,
                       const std::function<void(Doc&, const Box&)>& fill) {
    const EstimateMeasure estimate(options.scale);
    const TextMeasure& measure = options.measure ? *options.measure : estimate;
    const FigurePalette& pal = figure_palette(options.dark);
    const FigureFrame frame = figure_frame(options.width, options.height, options.scale, measure);
    Doc doc;
    doc.measure = &measure;
    if (!options.labels.title.empty()) {
        write_text(doc, text_item(ItemRole::Title, frame.title_x, frame.title_y, FontRole::Title, pal.text, options.labels.title,
                                  measure.width(options.labels.title, FontRole::Title)));
    }
    fill(doc, frame.box);
    const std::string w = num(std::round(options.width)), h = num(std::round(options.height));
    std::string out;
    out.reserve(doc.body.size() + doc.defs.size() + 1024);
    out += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    out += "<svg xmlns=\"http://www.w3.org/2000/svg\" xmlns:xlink=\"http://www.w3.org/1999/xlink\" version=\"1.1\" width=\"" + w + "\" height=\"" + h + "\" viewBox=\"0 0 " + w +
           " " + h + "\" data-view=\"" + view + "\" data-kind=\"" + kind + "\" data-scale=\"" + num(options.scale) + "\" data-box=\"" +
           num(frame.box.x0) + " " + num(frame.box.y0) + " " + num(frame.box.w()) + " " + num(frame.box.h()) +
           "\" font-family=\"'DejaVu Sans', 'Droid Sans Fallback', 'Noto Sans CJK SC', 'Microsoft YaHei', sans-serif\""
           " style=\"font-kerning: none\">\n";
    out += "<title>" + xml_escape(options.labels.title.empty() ? std::string("attnviz figure") : options.labels.title) + "</title>\n";
    if (!doc.defs.empty()) out += "<defs>\n" + doc.defs + "</defs>\n";
    out += "<rect class=\"background\" width=\"100%\" height=\"100%\" fill=\"" + hex(pal.background) + "\"/>\n";
    out += doc.body;
    out += "</svg>\n";
    return out;
}

}  // namespace

std::string write_svg(const Trace& trace, const SvgOptions& options) {
    const char* view = options.view == SvgView::Lines ? "lines" : options.view == SvgView::Qk ? "qk" : "heatmap";
    return framed_svg(options, view, kind_name(trace.kind), [&](Doc& doc, const Box& box) {
        const bool shapes_ok = trace.heads >= 1 && static_cast<int>(trace.attention.heads.size()) >= trace.heads &&
                               trace.allowed.rows() == static_cast<Eigen::Index>(trace.queries.size()) &&
                               trace.allowed.cols() == static_cast<Eigen::Index>(trace.keys.size());
        if (!shapes_ok || trace.queries.empty() || trace.keys.empty()) return;
        if (options.view == SvgView::Lines) lines_figure(doc, trace, options, box);
        else if (options.view == SvgView::Qk) qk_figure(doc, trace, options, box);
        else heatmap_figure(doc, trace, options, box);
    });
}

std::string write_items_svg(const std::vector<Item>& items, const SvgOptions& options, const std::string& view,
                            const std::vector<SvgRaster>& under) {
    return framed_svg(options, view, "", [&](Doc& doc, const Box&) {
        for (const SvgRaster& r : under) {
            if (!r.rgb || r.width <= 0 || r.height <= 0) continue;
            const Box& b = r.box;
            doc.body += "<image class=\"picture\" x=\"" + num(b.x0) + "\" y=\"" + num(b.y0) + "\" width=\"" + num(b.w()) +
                        "\" height=\"" + num(b.h()) + "\" preserveAspectRatio=\"none\" data-pixels=\"" + std::to_string(r.width) + " " +
                        std::to_string(r.height) + "\"" + picture_rendering(r.width, r.height) + " xlink:href=\"" +
                        png_data_uri(r.rgb, r.width, r.height) + "\"/>\n";
        }
        // hidden tokens' stripes (the Picture view's), a legend's colour bar: the options' colormap
        if (std::any_of(items.begin(), items.end(), [](const Item& it) { return it.kind == Item::Hatch; }))
            hatch_pattern(doc, figure_palette(options.dark), false);
        if (std::any_of(items.begin(), items.end(), [](const Item& it) { return it.kind == Item::Colormap; }))
            colormap_gradient(doc, colormaps()[std::clamp(options.colormap, 0, static_cast<int>(colormaps().size()) - 1)]);
        write_items(doc, items, [](const Item&) {});
    });
}

}  // namespace attn
