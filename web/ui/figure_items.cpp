// figure_items.cpp: a layout's items (core/figure/figure_layout.hpp) drawn with ImGui, and the
// drawing helpers the views share (hatch, turned text, ink on a cell, token labels, the words).
#include "view.hpp"

#include <algorithm>
#include <cfloat>

namespace attn {


float LabelWidth::of(ImFont* small, const Trace& trace, bool keys) {
    if (font == small && size == small->FontSize) return width;
    font = small, size = small->FontSize, width = 0.0f;
    auto w = [&](const std::string& t) { return small->CalcTextSizeA(size, FLT_MAX, 0.0f, token_text(t).c_str()).x; };
    for (const std::string& t : trace.queries) width = std::max(width, w(t));
    if (keys)
        for (const std::string& t : trace.keys) width = std::max(width, w(t));
    return width;
}

std::string quoted_token(const std::string& token) {
    const std::string t = token_text(token);
    const size_t a = t.find_first_not_of(' '), b = t.find_last_not_of(' ');
    return "\u201c" + (a == std::string::npos ? t : t.substr(a, b - a + 1)) + "\u201d";
}

void add_text_upwards(ImDrawList* dl, ImFont* font, float size, ImVec2 bottom_left, ImU32 color, const char* text) {
    // Lay the text out horizontally at the pivot, then turn its vertices by -90° about it:
    // (dx, dy) → (dy, −dx). The text then reads upwards and occupies x ∈ [p.x, p.x + size].
    const int first = dl->VtxBuffer.Size;
    dl->AddText(font, size, bottom_left, color, text);
    for (int i = first; i < dl->VtxBuffer.Size; ++i) {
        ImVec2& p = dl->VtxBuffer[i].pos;
        float dx = p.x - bottom_left.x, dy = p.y - bottom_left.y;
        p = ImVec2(bottom_left.x + dy, bottom_left.y - dx);
    }
}

void hatch_rect(ImDrawList* dl, ImVec2 a, ImVec2 b, const Palette& pal, float s, bool window) {
    auto col = [](const std::array<float, 4>& c) { return ImGui::GetColorU32(ImVec4(c[0], c[1], c[2], c[3])); };
    dl->AddRectFilled(a, b, col(window ? pal.window_b : pal.hatch_b));
    dl->PushClipRect(a, b, true);
    const float step = 7.0f * s, h = b.y - a.y;
    // As the shader draws the cells (and the SVG its patterns): stripes down to the right, or
    // (a window's) up to the right.
    for (float x = a.x - h; x < b.x; x += step) {
        if (window) dl->AddLine(ImVec2(x, b.y), ImVec2(x + h, a.y), col(pal.window_a), step * 0.5f);
        else dl->AddLine(ImVec2(x, a.y), ImVec2(x + h, b.y), col(pal.hatch_a), step * 0.5f);
    }
    dl->PopClipRect();
}

const Trace& drawn_trace(const AppState& st, View view, SinklessTrace& cache) {
    const Trace& shown = st.figure.trace();
    if (!st.hides_sink(view)) return shown;
    if (cache.source != &shown || cache.revision != st.revision) {
        cache.trace = without_sink(shown);
        cache.source = &shown, cache.revision = st.revision;
    }
    return cache.trace;
}

ImU32 ink_on(const std::array<float, 3>& rgb) { return im_color(ink_on_color(rgb)); }

LinesWords lines_words(Lang lang) {
    LinesWords w;
    w.queries = tr(lang, Str::AxisQueries), w.keys = tr(lang, Str::AxisKeys);
    w.target_queries = tr(lang, Str::AxisTargetQueries), w.source_keys = tr(lang, Str::AxisSourceKeys);
    w.masked = tr(lang, Str::Masked);
    w.head = tr(lang, Str::HeadN);
    w.building = tr(lang, Str::LinesBuilding), w.strongest = tr(lang, Str::LinesStrongest), w.top_k = tr(lang, Str::LinesTopK);
    w.sum_of = tr(lang, Str::SumOfQueries);
    return w;
}

QkWords qk_words(Lang lang) {
    QkWords w;
    w.what_pca = tr(lang, Str::QkWhatPca), w.what_tsne = tr(lang, Str::QkWhatTsne), w.too_many = tr(lang, Str::QkTsneTooMany);
    w.normalized = tr(lang, Str::QkNormalized), w.correlation = tr(lang, Str::QkCorrelation);
    w.queries = tr(lang, Str::QkQueries), w.keys = tr(lang, Str::QkKeys), w.head_title = tr(lang, Str::QkHeadTitle);
    return w;
}

HeatmapWords heatmap_words(Lang lang) {
    HeatmapWords w;
    w.caption_keys = tr(lang, Str::CaptionKeys), w.caption_queries = tr(lang, Str::CaptionQueries);
    w.caption_source_keys = tr(lang, Str::CaptionSourceKeys), w.caption_target_queries = tr(lang, Str::CaptionTargetQueries);
    w.masked = tr(lang, Str::Masked);
    w.weight = tr(lang, Str::LegendWeight), w.score = tr(lang, Str::LegendScore);
    w.outside_window = tr(lang, Str::OutsideWindow), w.window_size = tr(lang, Str::WindowSize);
    w.sink_hidden = tr(lang, Str::SinkHiddenLegend), w.sink_renormalized = tr(lang, Str::SinkRenormalized);
    return w;
}

void probe_captions(AppState& st, const std::vector<Item>& items, const FontsMeasure& measure) {
    int n = 0;
    for (const Item& it : items) {
        if (it.kind != Item::Text || (it.role != ItemRole::Heading && it.role != ItemRole::Note && it.role != ItemRole::Caption)) continue;
        const float h = measure.size(it.font);
        // Upright text from (x, y) rightwards; a caption drawn upwards ends at (x, y); wrapped text as its lines fill.
        ProbeRect r = it.upwards ? ProbeRect{it.x, it.y - it.text_w, h, it.text_w} : ProbeRect{it.x, it.y, it.text_w, h};
        if (it.wrap > 0.0f && !it.upwards) r = {it.x, it.y, std::min(it.text_w, it.wrap), measure.wrapped_height(it.text, it.font, it.wrap)};
        st.probe["caption." + std::to_string(n++)] = r;
    }
}

void draw_items(ImDrawList* dl, const std::vector<Item>& items, const std::vector<Box>& clips, const FontsMeasure& m,
                const Palette& pal, float s, const std::function<void(const Item&)>& gpu) {
    int clip = -1;  // the clip box pushed now; consecutive items with the same box share one push
    for (const Item& it : items) {
        if (it.clip != clip) {
            if (clip >= 0) dl->PopClipRect();
            clip = it.clip >= 0 && it.clip < static_cast<int>(clips.size()) ? it.clip : -1;
            if (clip >= 0) {
                const Box& c = clips[static_cast<size_t>(clip)];
                dl->PushClipRect(ImVec2(c.x0, c.y0), ImVec2(c.x1, c.y1), true);
            }
        }
        const ImVec2 a(it.box.x0, it.box.y0), b(it.box.x1, it.box.y1);
        switch (it.kind) {
            case Item::Rect:
                if (it.fill.a > 0.0f) dl->AddRectFilled(a, b, im_color(it.fill), it.rounding);
                if (it.stroke_width > 0.0f) dl->AddRect(a, b, im_color(it.stroke), it.rounding, 0, it.stroke_width);
                break;
            case Item::Text: {
                ImFont* font = m.font(it.font);
                if (it.upwards) add_text_upwards(dl, font, font->FontSize, ImVec2(it.x, it.y), im_color(it.fill), it.text.c_str());
                else dl->AddText(font, font->FontSize, ImVec2(it.x, it.y), im_color(it.fill), it.text.data(), it.text.data() + it.text.size(), it.wrap);
                break;
            }
            case Item::Segment: dl->AddLine(ImVec2(it.x, it.y), ImVec2(it.x2, it.y2), im_color(it.stroke), it.stroke_width); break;
            case Item::Hatch: hatch_rect(dl, a, b, pal, s); break;
            case Item::WindowHatch: hatch_rect(dl, a, b, pal, s, true); break;
            case Item::Colormap:
            case Item::Picture:
            case Item::Lines:
            case Item::Grid: gpu(it); break;
        }
    }
    if (clip >= 0) dl->PopClipRect();
}

}  // namespace attn
