// heatmap_view.cpp: the attention matrix. Rows are queries, columns are keys; the cells are one
// GPU quad (RG32F values + colormap LUT, shaders/heatmap.*), labels, numbers, legend and
// tooltip are ImGui. Masked cells are hatched, so the causal triangle never reads as zeros.
//
// [SECTION] Values (cached texture)
// [SECTION] Layout
// [SECTION] Cells, labels and numbers
// [SECTION] Legend
// [SECTION] Hover
#include "view.hpp"

#include "colormaps.hpp"
#include "steps.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace attn {

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

namespace {

// [SECTION] Values (cached texture) ----------------------------------------------------------

struct Values {
    std::vector<float> value_allowed;  // T_q×T_k pairs (value, allowed)
    float lo = 0.0f, hi = 1.0f;        // colormap range
    bool any_masked = false;
};

// value(q, k) for the chosen head (or the mean over heads), weights or scaled scores.
float cell_value(const Trace& tr, const HeatmapOptions& o, int q, int k) {
    auto one = [&](int h) {
        const HeadTrace& head = tr.attention.heads[h];
        return o.values == HeatValues::Weights ? head.weights(q, k) : head.scaled(q, k);
    };
    if (o.head >= 0 && o.head < tr.heads) return one(o.head);
    float sum = 0.0f;
    for (int h = 0; h < tr.heads; ++h) sum += one(h);
    return sum / static_cast<float>(tr.heads);
}

Values compute_values(const Trace& tr, const HeatmapOptions& o) {
    const int T_q = static_cast<int>(tr.queries.size()), T_k = static_cast<int>(tr.keys.size());
    Values v;
    v.value_allowed.resize(static_cast<size_t>(T_q) * T_k * 2);
    float lo = std::numeric_limits<float>::infinity(), hi = -lo;
    for (int q = 0; q < T_q; ++q)
        for (int k = 0; k < T_k; ++k) {
            const bool allowed = tr.allowed(q, k) != 0;
            float x = allowed ? cell_value(tr, o, q, k) : 0.0f;
            if (!std::isfinite(x)) x = 0.0f;
            size_t i = (static_cast<size_t>(q) * T_k + k) * 2;
            v.value_allowed[i] = x;
            v.value_allowed[i + 1] = allowed ? 1.0f : 0.0f;
            v.any_masked |= !allowed;
            if (allowed) lo = std::min(lo, x), hi = std::max(hi, x);
        }
    if (o.values == HeatValues::Weights) {
        v.lo = 0.0f, v.hi = 1.0f;  // weights are probabilities: one fixed scale for every figure
    } else if (std::isfinite(lo)) {
        v.lo = lo, v.hi = hi;      // the shader maps min == max to the middle of the map
    }
    return v;
}

struct Cache {
    const Renderer* renderer = nullptr;
    int revision = -1, head = -2;
    HeatValues values = HeatValues::Weights;
    Values data;
};

const Values& cached_values(ViewContext& ctx) {
    static Cache cache;
    const AppState& st = ctx.state;
    if (cache.renderer != &ctx.renderer || cache.revision != st.revision || cache.head != st.heatmap.head ||
        cache.values != st.heatmap.values) {
        cache.data = compute_values(st.trace, st.heatmap);
        ctx.renderer.set_heatmap_values(cache.data.value_allowed, static_cast<int>(st.trace.queries.size()),
                                        static_cast<int>(st.trace.keys.size()));
        cache.renderer = &ctx.renderer;
        cache.revision = st.revision;
        cache.head = st.heatmap.head;
        cache.values = st.heatmap.values;
    }
    return cache.data;
}

// Fewer decimals for bigger numbers so that every value fits its cell.
void format_value(char* out, size_t n, float x) {
    const float a = std::fabs(x);
    std::snprintf(out, n, "%s", format_number(x, a >= 100.0f ? 0 : a >= 10.0f ? 1 : 2).c_str());
}

}  // namespace

void hatch_rect(ImDrawList* dl, ImVec2 a, ImVec2 b, const Palette& pal, float s) {
    auto col = [](const std::array<float, 4>& c) { return ImGui::GetColorU32(ImVec4(c[0], c[1], c[2], c[3])); };
    dl->AddRectFilled(a, b, col(pal.hatch_b));
    dl->PushClipRect(a, b, true);
    const float step = 7.0f * s;
    for (float x = a.x - (b.y - a.y); x < b.x; x += step)
        dl->AddLine(ImVec2(x, b.y), ImVec2(x + (b.y - a.y), a.y), col(pal.hatch_a), step * 0.5f);
    dl->PopClipRect();
}

ImU32 ink_on(const std::array<float, 3>& rgb) {
    const float luminance = 0.2126f * rgb[0] + 0.7152f * rgb[1] + 0.0722f * rgb[2];
    return luminance > 0.5f ? IM_COL32(20, 20, 24, 255) : IM_COL32(245, 245, 245, 255);
}

void draw_heatmap_view(ViewContext& ctx, ImVec2 min, ImVec2 max) {
    AppState& st = ctx.state;
    const Trace& tr = st.trace;
    const HeatmapOptions& o = st.heatmap;
    const float s = ctx.scale;
    const Palette& pal = palette(st.theme);
    ImDrawList* dl = ImGui::GetWindowDrawList();
    ImFont* font = ctx.fonts.body;
    ImFont* small = ctx.fonts.small;
    const float fs = font->FontSize, ss = small->FontSize;
    const int T_q = static_cast<int>(tr.queries.size()), T_k = static_cast<int>(tr.keys.size());
    if (T_q == 0 || T_k == 0) return;
    const Values& values = cached_values(ctx);
    const Colormap& map = colormaps()[std::clamp(o.colormap, 0, static_cast<int>(colormaps().size()) - 1)];

    // [SECTION] Layout ---------------------------------------------------------------------
    auto text_w = [&](const std::string& t) { return font->CalcTextSizeA(fs, FLT_MAX, 0.0f, token_label(t)).x; };
    float maxw_q = 0.0f, maxw_k = 0.0f;
    for (auto& t : tr.queries) maxw_q = std::max(maxw_q, text_w(t));
    for (auto& t : tr.keys) maxw_k = std::max(maxw_k, text_w(t));
    const float margin = 14.0f * s;
    const float label_w = maxw_q + 14.0f * s;
    const float legend_w = 96.0f * s;
    const float title_h = ss + 10.0f * s;  // axis captions above the column labels
    const float avail_w = std::max(max.x - min.x - 2.0f * margin - label_w - legend_w, 20.0f);
    const float max_cell = 96.0f * s;
    auto fit = [&](float header_h) {
        float avail_h = std::max(max.y - min.y - 2.0f * margin - title_h - header_h, 20.0f);
        return std::min({avail_w / T_k, avail_h / T_q, max_cell});
    };
    float header_h = fs + 10.0f * s;
    float cell = fit(header_h);
    const bool upright = maxw_k + 8.0f * s <= cell;
    if (!upright) {
        header_h = std::min(maxw_k + 12.0f * s, (max.y - min.y) * 0.35f);
        cell = fit(header_h);
    }
    // Labels closer together than a line of text would overlap: show every n-th one.
    const int label_step_k = upright ? 1 : std::max(1, static_cast<int>(std::ceil(fs / std::max(cell, 1.0f))));
    const int label_step_q = std::max(1, static_cast<int>(std::ceil(fs / std::max(cell, 1.0f))));
    const float grid_w = cell * T_k, grid_h = cell * T_q;
    const float block_w = label_w + grid_w + legend_w;
    const float gx0 = min.x + margin + std::max((max.x - min.x - 2.0f * margin - block_w) * 0.5f, 0.0f) + label_w;
    // A little above the middle when there is room to spare, like a figure on a page.
    const float spare_h = std::max(max.y - min.y - 2.0f * margin - title_h - header_h - grid_h - ss - 10.0f * s, 0.0f);
    const float top = min.y + margin + spare_h * 0.35f;
    const float gy0 = top + title_h + header_h;
    const ImVec2 g0(gx0, gy0), g1(gx0 + grid_w, gy0 + grid_h);
    st.grid_rect = {g0.x, g0.y, grid_w, grid_h};

    // [SECTION] Cells, labels and numbers --------------------------------------------------
    HeatmapDraw draw;
    draw.min = g0, draw.max = g1;
    draw.T_q = T_q, draw.T_k = T_k;
    draw.value_min = values.lo, draw.value_max = values.hi;
    draw.colormap = o.colormap;
    draw.hatch_a = pal.hatch_a, draw.hatch_b = pal.hatch_b, draw.grid = pal.grid;
    ctx.renderer.add_heatmap(dl, draw);

    // Hovered cell (needed to highlight labels).
    int hq = -1, hk = -1;
    if (ctx.interactive && ImGui::IsWindowHovered()) {
        ImVec2 m = ImGui::GetIO().MousePos;
        if (m.x >= g0.x && m.x < g1.x && m.y >= g0.y && m.y < g1.y) {
            hq = std::min(static_cast<int>((m.y - g0.y) / cell), T_q - 1);
            hk = std::min(static_cast<int>((m.x - g0.x) / cell), T_k - 1);
        }
    }
    const TokenRef sel = st.selected();
    const int sel_q = hq >= 0 ? hq : (sel.side == TokenRef::Query ? sel.index : -1);
    const int sel_k = hk >= 0 ? hk : (sel.side == TokenRef::Key ? sel.index : -1);

    // Axis captions.
    const bool cross = tr.kind == AttentionKind::Cross;
    const char* key_caption = attn::tr(cross ? Str::CaptionSourceKeys : Str::CaptionKeys);
    const char* query_caption = attn::tr(cross ? Str::CaptionTargetQueries : Str::CaptionQueries);
    dl->AddText(small, ss, ImVec2(g0.x, top), pal.text_muted, key_caption);
    // Right-aligned above the row labels, in the corner the column labels leave free.
    float qc_w = small->CalcTextSizeA(ss, FLT_MAX, 0.0f, query_caption).x;
    dl->AddText(small, ss, ImVec2(std::max(g0.x - qc_w - 8.0f * s, min.x + 4.0f * s), g0.y - ss - 6.0f * s),
                pal.text_muted, query_caption);

    st.query_rects.assign(T_q, ProbeRect{});
    st.key_rects.assign(T_k, ProbeRect{});
    for (int q = 0; q < T_q; ++q) {
        const float y = g0.y + (q + 0.5f) * cell;
        st.query_rects[q] = {g0.x - label_w, y - cell * 0.5f, label_w, cell};
        if (q % label_step_q != 0 && q != sel_q) continue;
        const char* t = token_label(tr.queries[q]);
        float w = text_w(tr.queries[q]);
        ImVec2 p(g0.x - w - 8.0f * s, y - fs * 0.5f);
        if (q == sel_q) dl->AddRectFilled(ImVec2(p.x - 4.0f * s, p.y - 1.0f * s), ImVec2(g0.x - 3.0f * s, p.y + fs + 1.0f * s), pal.token_hover, 3.0f * s);
        dl->AddText(font, fs, p, pal.text, t);
    }
    for (int k = 0; k < T_k; ++k) {
        const float x = g0.x + (k + 0.5f) * cell;
        st.key_rects[k] = {x - cell * 0.5f, g0.y - header_h, cell, header_h};
        if (k % label_step_k != 0 && k != sel_k) continue;
        const char* t = token_label(tr.keys[k]);
        float w = text_w(tr.keys[k]);
        if (upright) {
            ImVec2 p(x - w * 0.5f, g0.y - fs - 6.0f * s);
            if (k == sel_k) dl->AddRectFilled(ImVec2(p.x - 4.0f * s, p.y - 1.0f * s), ImVec2(p.x + w + 4.0f * s, p.y + fs + 1.0f * s), pal.token_hover, 3.0f * s);
            dl->AddText(font, fs, p, pal.text, t);
        } else {
            ImVec2 p(x - fs * 0.5f, g0.y - 6.0f * s);
            if (k == sel_k) dl->AddRectFilled(ImVec2(p.x - 1.0f * s, p.y - w - 4.0f * s), ImVec2(p.x + fs + 1.0f * s, p.y + 2.0f * s), pal.token_hover, 3.0f * s);
            add_text_upwards(dl, font, fs, p, pal.text, t);
        }
    }

    char buffer[64];
    // Numbers in the cells: the label font in big cells, the small one otherwise.
    ImFont* number_font = cell >= 64.0f * s ? font : small;
    const float ns = number_font->FontSize;
    const float number_w = number_font->CalcTextSizeA(ns, FLT_MAX, 0.0f, "0.00").x;
    if (o.show_numbers && cell >= number_w + 8.0f * s && cell >= ns + 6.0f * s) {
        for (int q = 0; q < T_q; ++q)
            for (int k = 0; k < T_k; ++k) {
                size_t i = (static_cast<size_t>(q) * T_k + k) * 2;
                const bool allowed = values.value_allowed[i + 1] > 0.5f;
                const ImVec2 c(g0.x + (k + 0.5f) * cell, g0.y + (q + 0.5f) * cell);
                if (!allowed) {
                    if (o.values == HeatValues::Scores) {
                        const char* inf = "\xe2\x88\x92\xe2\x88\x9e";  // −∞
                        float w = number_font->CalcTextSizeA(ns, FLT_MAX, 0.0f, inf).x;
                        dl->AddText(number_font, ns, ImVec2(c.x - w * 0.5f, c.y - ns * 0.5f), pal.masked_text, inf);
                    }
                    continue;
                }
                const float x = values.value_allowed[i];
                format_value(buffer, sizeof buffer, x);
                float span = values.hi - values.lo;
                auto rgb = colormap_sample(map, span > 0.0f ? (x - values.lo) / span : 0.5f);
                const ImU32 color = ink_on(rgb);
                float w = number_font->CalcTextSizeA(ns, FLT_MAX, 0.0f, buffer).x;
                dl->AddText(number_font, ns, ImVec2(c.x - w * 0.5f, c.y - ns * 0.5f), color, buffer);
            }
    }
    // Row / column of the selection, and the hovered cell.
    const ImU32 outline = st.theme == Theme::Dark ? IM_COL32(255, 255, 255, 230) : IM_COL32(20, 20, 24, 230);
    if (sel_q >= 0 && hq < 0)
        dl->AddRect(ImVec2(g0.x, g0.y + sel_q * cell), ImVec2(g1.x, g0.y + (sel_q + 1) * cell), outline, 0.0f, 0, 1.5f * s);
    if (sel_k >= 0 && hk < 0)
        dl->AddRect(ImVec2(g0.x + sel_k * cell, g0.y), ImVec2(g0.x + (sel_k + 1) * cell, g1.y), outline, 0.0f, 0, 1.5f * s);
    if (hq >= 0 && hk >= 0)
        dl->AddRect(ImVec2(g0.x + hk * cell, g0.y + hq * cell), ImVec2(g0.x + (hk + 1) * cell, g0.y + (hq + 1) * cell),
                    outline, 0.0f, 0, 2.0f * s);

    // [SECTION] Legend -----------------------------------------------------------------------
    const float bar_x = g1.x + 26.0f * s;
    const float bar_w = 14.0f * s;
    const float bar_h = std::clamp(grid_h, 90.0f * s, 280.0f * s);
    const float bar_y = g0.y + ss + 8.0f * s;
    const char* legend_title = attn::tr(o.values == HeatValues::Weights ? Str::LegendWeight : Str::LegendScore);
    dl->AddText(small, ss, ImVec2(bar_x, g0.y), pal.text_muted, legend_title);
    // The LUT texture turned upright: t = 1 at the top.
    dl->AddImageQuad(ctx.renderer.lut_texture(o.colormap), ImVec2(bar_x, bar_y), ImVec2(bar_x + bar_w, bar_y),
                     ImVec2(bar_x + bar_w, bar_y + bar_h), ImVec2(bar_x, bar_y + bar_h), ImVec2(1, 0.5f),
                     ImVec2(1, 0.5f), ImVec2(0, 0.5f), ImVec2(0, 0.5f));
    dl->AddRect(ImVec2(bar_x, bar_y), ImVec2(bar_x + bar_w, bar_y + bar_h), pal.text_muted);
    for (int i = 0; i <= 4; ++i) {
        float t = static_cast<float>(i) / 4.0f;
        float y = bar_y + bar_h * (1.0f - t);
        format_value(buffer, sizeof buffer, values.lo + (values.hi - values.lo) * t);
        dl->AddLine(ImVec2(bar_x + bar_w, y), ImVec2(bar_x + bar_w + 4.0f * s, y), pal.text_muted);
        dl->AddText(small, ss, ImVec2(bar_x + bar_w + 7.0f * s, y - ss * 0.5f), pal.text, buffer);
    }
    if (values.any_masked) {
        float y = bar_y + bar_h + 14.0f * s;
        hatch_rect(dl, ImVec2(bar_x, y), ImVec2(bar_x + bar_w, y + bar_w), pal, s);
        dl->AddRect(ImVec2(bar_x, y), ImVec2(bar_x + bar_w, y + bar_w), pal.text_muted);
        dl->AddText(small, ss, ImVec2(bar_x + bar_w + 7.0f * s, y + (bar_w - ss) * 0.5f), pal.text, attn::tr(Str::Masked));
    }

    // [SECTION] Hover ----------------------------------------------------------------------
    if (hq >= 0 && hk >= 0) {
        const int h0 = o.head >= 0 && o.head < tr.heads ? o.head : 0;
        const bool allowed = tr.allowed(hq, hk) != 0;
        ImGui::BeginTooltip();
        ImGui::Text("%s \xe2\x86\x92 %s", token_label(tr.queries[hq]), token_label(tr.keys[hk]));
        if (o.head >= 0 && o.head < tr.heads) ImGui::TextDisabled(attn::tr(Str::TipCell), hq + 1, hk + 1, o.head + 1);
        else ImGui::TextDisabled(attn::tr(Str::TipCellMean), hq + 1, hk + 1);
        ImGui::Separator();
        if (o.head < 0 || o.head >= tr.heads) {
            ImGui::Text(attn::tr(Str::MeanWeight), allowed ? cell_value(tr, HeatmapOptions{-1, 0, HeatValues::Weights, true}, hq, hk) : 0.0f);
            for (int h = 0; h < tr.heads && h < 8; ++h)
                ImGui::TextColored(head_color(st.theme, h), attn::tr(Str::TipHeadWeight), h + 1, tr.attention.heads[h].weights(hq, hk));
        } else {
            const HeadTrace& head = tr.attention.heads[h0];
            ImGui::Text(attn::tr(Str::Weight), head.weights(hq, hk));
            if (head.scores.size() > 0) {  // imported attention has the weights only
                ImGui::Text(attn::tr(Str::Score), head.scores(hq, hk));
                if (allowed) ImGui::Text(attn::tr(Str::ScaledScore), head.scaled(hq, hk));
            }
        }
        if (!allowed) {
            ImGui::TextColored(ImVec4(1.0f, 0.55f, 0.4f, 1.0f), "%s", attn::tr(Str::TipMaskedScore));
            if (tr.kind == AttentionKind::Masked) ImGui::TextDisabled("%s", attn::tr(Str::TipLaterKeys));
        }
        ImGui::EndTooltip();
    }
}

}  // namespace attn
