// heatmap_view.cpp: the attention matrix. Rows are queries, columns are keys. The cells come
// from a compact display copy of the map (core/figure/display_map.hpp: a byte per cell and a max
// pyramid), built a few milliseconds a frame so long traces fill in while the UI keeps
// drawing, and drawn as GPU tiles of the pyramid level that fits the zoom (renderer.hpp).
// Labels, numbers, legend and tooltip are ImGui, for the visible rows and columns only.
// Masked cells are hatched, so the causal triangle never reads as zeros.
//
// Zoom: the wheel at the cursor (ctrl/⌘ + wheel, i.e. a trackpad pinch, in figure-only embeds,
// where the plain wheel scrolls the page), a two-finger pinch on a touch screen about its centre
// (two fingers also pan), drag to pan, double-click or "Fit" to see it all.
// An exported PNG shows the figure as it is on screen: the current zoom.
//
// [SECTION] Display map (built progressively)
// [SECTION] Values of visible cells
// [SECTION] Layout
// [SECTION] Zoom and pan
// [SECTION] Cells, labels and numbers
// [SECTION] Legend, progress and memory
// [SECTION] Hover
#include "view.hpp"

#include "colormaps.hpp"
#include "display_map.hpp"
#include "steps.hpp"

#include <algorithm>
#include <climits>
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

// [SECTION] Display map (built progressively) --------------------------------------------------


bool wants_scores(const Figure& figure, const HeatmapOptions& o) {
    return o.values == HeatValues::Scores && figure.has(Detail::Scores);
}

struct MapCache {
    int revision = INT_MIN, head = -2;
    bool scores = false, log = false;
    const Trace* trace = nullptr;
    DisplayMapBuilder builder;
    std::uint64_t id = 0;
    bool any_masked = false;  // anywhere in the map (the legend shows the hatch from the start)
    bool matches(const AppState& st) const {
        return trace == &st.figure.trace() && revision == st.revision && head == st.heatmap.head &&
               scores == wants_scores(st.figure, st.heatmap) && log == st.heatmap.log_scale;
    }
    void start(const AppState& st, std::uint64_t new_id) {
        revision = st.revision, head = st.heatmap.head, scores = wants_scores(st.figure, st.heatmap);
        log = st.heatmap.log_scale;
        trace = &st.figure.trace();
        id = new_id;
        any_masked = st.figure.trace().allowed.size() > 0 && st.figure.trace().allowed.minCoeff() == 0;
        builder.start(st.figure.trace(), head, scores, 0, log);
    }
};

// The map to draw: on screen a bounded step of building each frame; off screen (a PNG) the
// whole map at once.
const MapCache& current_map(ViewContext& ctx, MapCache& m, std::uint64_t& last_id) {
    if (!m.matches(ctx.state)) m.start(ctx.state, ++last_id);
    m.builder.step(ctx.interactive ? build_budget_seconds() : 1e30);
    return m;
}

// [SECTION] Values of visible cells --------------------------------------------------------------

// The map's values of rows [r0, r1) (all keys), for the numbers in cells: one head or the mean,
// weights or scaled scores, through attention_rows (recomputed rows in a long trace).
struct RowValues {
    std::uint64_t map_id = 0;
    int r0 = 0, r1 = 0;
    std::vector<float> values;
};

const RowValues& visible_values(const Trace& tr, const MapCache& m, int r0, int r1, RowValues& cache) {
    if (cache.map_id == m.id && cache.r0 == r0 && cache.r1 == r1) return cache;
    cache.map_id = m.id, cache.r0 = r0, cache.r1 = r1;
    const size_t cells = static_cast<size_t>(r1 - r0) * tr.T_k();
    std::vector<float> weights(cells), scaled(m.scores ? cells : 0);
    cache.values.assign(cells, 0.0f);
    const bool mean = m.head < 0 || m.head >= tr.heads;
    for (int h = mean ? 0 : m.head; h < (mean ? tr.heads : m.head + 1); ++h) {
        attention_rows(tr, h, r0, r1, weights.data(), m.scores ? scaled.data() : nullptr);
        const std::vector<float>& src = m.scores ? scaled : weights;
        for (size_t i = 0; i < cells; ++i) cache.values[i] += src[i];
    }
    if (mean)
        for (float& v : cache.values) v /= static_cast<float>(tr.heads);
    return cache;
}

// Widths of the longest query and key labels, once per figure (thousands of tokens).
struct LabelWidths {
    int revision = INT_MIN;
    const Trace* trace = nullptr;
    const ImFont* font = nullptr;
    float size = 0.0f, q = 0.0f, k = 0.0f;
};

// Fewer decimals for bigger numbers so that every value fits its cell.
void format_value(char* out, size_t n, float x) {
    const float a = std::fabs(x);
    std::snprintf(out, n, "%s", format_number(x, a >= 100.0f ? 0 : a >= 10.0f ? 1 : 2).c_str());
}

std::string format_bytes(std::size_t n) {
    char b[32];
    const double x = static_cast<double>(n);
    if (x >= 1e6) std::snprintf(b, sizeof b, x >= 1e7 ? "%.0f MB" : "%.1f MB", x / 1e6);
    else if (x >= 1e3) std::snprintf(b, sizeof b, "%.0f KB", x / 1e3);
    else std::snprintf(b, sizeof b, "%zu B", n);
    return b;
}

// One cell of each head shown, recomputed in a long trace: cached while the mouse rests.
struct CellTip {
    const Trace* trace = nullptr;
    int revision = INT_MIN, q = -1, k = -1;
    std::vector<CellValues> heads;
};

}  // namespace

struct HeatmapView::Cache {
    MapCache map;
    std::uint64_t last_map_id = 0;
    RowValues rows;
    LabelWidths widths;
    int last_T_q = -1, last_T_k = -1;  // a figure of another size starts whole (zoom 1)
    CellTip tip;
};
HeatmapView::HeatmapView() : cache_(std::make_unique<Cache>()) {}
HeatmapView::~HeatmapView() = default;

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

void HeatmapView::draw(ViewContext& ctx, ImVec2 min, ImVec2 max) {
    AppState& st = ctx.state;
    const Trace& tr = st.figure.trace();
    HeatmapOptions& o = st.heatmap;
    const float s = ctx.scale;
    const Palette& pal = palette(st.theme);
    ImDrawList* dl = ImGui::GetWindowDrawList();
    ImFont* font = ctx.fonts.body;
    ImFont* small = ctx.fonts.small;
    const float fs = font->FontSize, ss = small->FontSize;
    const int T_q = tr.T_q(), T_k = tr.T_k();
    if (T_q == 0 || T_k == 0) return;
    const MapCache& cache = current_map(ctx, cache_->map, cache_->last_map_id);
    const DisplayMap& map = cache.builder.map();
    const float lo = map.lo, hi = map.hi;
    const Colormap& cmap = colormaps()[std::clamp(o.colormap, 0, static_cast<int>(colormaps().size()) - 1)];
    HeatmapProbe& probe = st.heatmap_probe;
    probe = HeatmapProbe{};

    // [SECTION] Layout ---------------------------------------------------------------------
    // The box the map fits at zoom 1 is laid out as before zooming existed; zooming enlarges
    // the cells inside the same box.
    auto text_w = [&](const std::string& t) { return font->CalcTextSizeA(fs, FLT_MAX, 0.0f, token_label(t)).x; };
    LabelWidths& widths = cache_->widths;
    if (widths.revision != st.revision || widths.trace != &tr || widths.font != font || widths.size != fs) {
        widths = LabelWidths{st.revision, &tr, font, fs, 0.0f, 0.0f};
        for (auto& t : tr.queries) widths.q = std::max(widths.q, text_w(t));
        for (auto& t : tr.keys) widths.k = std::max(widths.k, text_w(t));
    }
    const float maxw_q = widths.q, maxw_k = widths.k;
    const float margin = 14.0f * s;
    const float label_w = maxw_q + 14.0f * s;
    const float legend_w = 96.0f * s;
    const float title_h = ss + 10.0f * s;  // axis captions above the column labels
    const float avail_w = std::max(max.x - min.x - 2.0f * margin - label_w - legend_w, 20.0f);
    const float max_cell = 96.0f * s;
    // Big maps state their memory (and progress) in a line below the cells.
    const bool big = static_cast<std::int64_t>(T_q) * T_k > 64 * 64 || tr.is_long();
    const float footer_h = big ? ss + 8.0f * s : 0.0f;
    auto fit = [&](float header_h) {
        float avail_h = std::max(max.y - min.y - 2.0f * margin - title_h - header_h - footer_h, 20.0f);
        return std::min({avail_w / T_k, avail_h / T_q, max_cell});
    };
    float header_h = fs + 10.0f * s;
    float cell0 = fit(header_h);
    const bool upright = maxw_k + 8.0f * s <= cell0;
    if (!upright) {
        header_h = std::min(maxw_k + 12.0f * s, (max.y - min.y) * 0.35f);
        cell0 = fit(header_h);
    }
    const float grid_w = cell0 * T_k, grid_h = cell0 * T_q;
    const float block_w = label_w + grid_w + legend_w;
    const float gx0 = min.x + margin + std::max((max.x - min.x - 2.0f * margin - block_w) * 0.5f, 0.0f) + label_w;
    // A little above the middle when there is room to spare, like a figure on a page.
    const float spare_h = std::max(max.y - min.y - 2.0f * margin - title_h - header_h - grid_h - ss - 10.0f * s, 0.0f);
    const float top = min.y + margin + spare_h * 0.35f;
    const float gy0 = top + title_h + header_h;
    const ImVec2 g0(gx0, gy0), g1(gx0 + grid_w, gy0 + grid_h);
    st.grid_rect = {g0.x, g0.y, grid_w, grid_h};

    // [SECTION] Zoom and pan -----------------------------------------------------------------
    // A new figure of another size starts whole.
    if (ctx.interactive && (cache_->last_T_q != T_q || cache_->last_T_k != T_k)) {
        o.zoom = 1.0f, o.view_x = o.view_y = 0.0f, o.dragging = false;
        cache_->last_T_q = T_q, cache_->last_T_k = T_k;
    }
    const float max_zoom = std::max(1.0f, max_cell / cell0);
    auto clamp_view = [&] {
        o.zoom = std::clamp(std::isfinite(o.zoom) ? o.zoom : 1.0f, 1.0f, max_zoom);
        o.view_x = std::clamp(std::isfinite(o.view_x) ? o.view_x : 0.0f, 0.0f, T_k - T_k / o.zoom);
        o.view_y = std::clamp(std::isfinite(o.view_y) ? o.view_y : 0.0f, 0.0f, T_q - T_q / o.zoom);
    };
    clamp_view();
    const ImGuiIO& io = ImGui::GetIO();
    bool grid_hovered = false;
    if (ctx.interactive) {
        const platform::ZoomGesture gesture = platform::take_zoom(io.MouseWheel);
        // An invisible button over the box: drags pan the map instead of reaching the window.
        const ImVec2 cursor = ImGui::GetCursorScreenPos();
        ImGui::SetCursorScreenPos(g0);
        ImGui::InvisibleButton("##heatmap_grid", ImVec2(std::max(grid_w, 1.0f), std::max(grid_h, 1.0f)));
        grid_hovered = ImGui::IsItemHovered();
        if (ImGui::IsItemActivated()) o.dragging = true;
        if (!ImGui::IsItemActive()) o.dragging = false;
        ImGui::SetCursorScreenPos(cursor);
        // The one zoom of the wheel, a trackpad pinch and a touch pinch: about the cell under
        // (ax, ay), which stays there. Two fingers first carry the map along with their centre.
        auto zoom_about = [&](float ax, float ay, float log) {
            const float cell = cell0 * o.zoom;
            const float mx = o.view_x + (ax - g0.x) / cell, my = o.view_y + (ay - g0.y) / cell;
            o.zoom = std::clamp(o.zoom * std::exp(log), 1.0f, max_zoom);
            const float c2 = cell0 * o.zoom;
            o.view_x = mx - (ax - g0.x) / c2, o.view_y = my - (ay - g0.y) / c2;
        };
        if (gesture.anchored) {
            o.view_x -= gesture.pan_x / (cell0 * o.zoom), o.view_y -= gesture.pan_y / (cell0 * o.zoom);
            if (gesture.log != 0.0f) zoom_about(gesture.x, gesture.y, gesture.log);
        } else if (grid_hovered && gesture.log != 0.0f) {
            zoom_about(io.MousePos.x, io.MousePos.y, gesture.log);
        }
        if (o.dragging && (io.MouseDelta.x != 0.0f || io.MouseDelta.y != 0.0f)) {
            const float cell = cell0 * o.zoom;
            o.view_x -= io.MouseDelta.x / cell, o.view_y -= io.MouseDelta.y / cell;
        }
        if (grid_hovered && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) o.zoom = 1.0f, o.view_x = o.view_y = 0.0f;
        clamp_view();
        if (o.dragging) ImGui::SetMouseCursor(ImGuiMouseCursor_ResizeAll);
    }
    const float cell = cell0 * o.zoom;
    const float vw = T_k / o.zoom, vh = T_q / o.zoom;  // cells across the box
    const int row0 = std::clamp(static_cast<int>(std::floor(o.view_y)), 0, T_q - 1);
    const int row1 = std::clamp(static_cast<int>(std::ceil(o.view_y + vh - 1e-4f)), row0 + 1, T_q);
    const int col0 = std::clamp(static_cast<int>(std::floor(o.view_x)), 0, T_k - 1);
    const int col1 = std::clamp(static_cast<int>(std::ceil(o.view_x + vw - 1e-4f)), col0 + 1, T_k);
    auto cell_x = [&](float k) { return g0.x + (k - o.view_x) * cell; };  // left edge of key k
    auto cell_y = [&](float q) { return g0.y + (q - o.view_y) * cell; };
    // The pyramid level whose texels are at least a framebuffer pixel: every texel (the max of
    // the cells below it) shows, so a single strong weight is never skipped when zoomed out.
    const float px = io.DisplayFramebufferScale.x > 0.0f ? io.DisplayFramebufferScale.x : 1.0f;
    int level = 0;
    while (level + 1 < static_cast<int>(map.levels.size()) && cell * px * static_cast<float>(1 << level) < 1.0f) ++level;

    // [SECTION] Cells, labels and numbers --------------------------------------------------
    HeatmapDraw draw;
    draw.min = g0, draw.max = g1;
    draw.T_q = T_q, draw.T_k = T_k;
    draw.value_min = lo, draw.value_max = hi;
    draw.colormap = o.colormap;
    draw.hatch_a = pal.hatch_a, draw.hatch_b = pal.hatch_b, draw.grid = pal.grid;
    draw.map = &map, draw.map_id = cache.id, draw.level = level;
    draw.cell_x0 = o.view_x, draw.cell_y0 = o.view_y, draw.cells_w = vw, draw.cells_h = vh;
    dl->PushClipRect(g0, g1, true);
    ctx.renderer.add_heatmap(dl, draw);
    dl->PopClipRect();

    // Hovered cell (needed to highlight labels).
    int hq = -1, hk = -1;
    if (grid_hovered && !o.dragging) {
        const ImVec2 m = io.MousePos;
        hq = std::clamp(static_cast<int>(std::floor(o.view_y + (m.y - g0.y) / cell)), 0, T_q - 1);
        hk = std::clamp(static_cast<int>(std::floor(o.view_x + (m.x - g0.x) / cell)), 0, T_k - 1);
    }
    const TokenRef sel = st.selected();
    const int sel_q = hq >= 0 ? hq : (sel.side == TokenRef::Query ? sel.index : -1);
    const int sel_k = hk >= 0 ? hk : (sel.side == TokenRef::Key ? sel.index : -1);

    // Axis captions.
    const bool cross = tr.kind == AttentionKind::Cross;
    const char* key_caption = attn::tr(st.lang, cross ? Str::CaptionSourceKeys : Str::CaptionKeys);
    const char* query_caption = attn::tr(st.lang, cross ? Str::CaptionTargetQueries : Str::CaptionQueries);
    dl->AddText(small, ss, ImVec2(g0.x, top), pal.text_muted, key_caption);
    // Right-aligned above the row labels, in the corner the column labels leave free.
    float qc_w = small->CalcTextSizeA(ss, FLT_MAX, 0.0f, query_caption).x;
    dl->AddText(small, ss, ImVec2(std::max(g0.x - qc_w - 8.0f * s, min.x + 4.0f * s), g0.y - ss - 6.0f * s),
                pal.text_muted, query_caption);

    // Labels of the visible rows and columns; closer together than a line of text they would
    // overlap: every n-th one (counted from the first token, so they stay put while panning).
    const int label_step_k = upright && o.zoom == 1.0f ? 1 : std::max(1, static_cast<int>(std::ceil(fs / std::max(cell, 1e-3f))));
    const int label_step_q = std::max(1, static_cast<int>(std::ceil(fs / std::max(cell, 1e-3f))));
    st.query_rects.assign(T_q, ProbeRect{});
    st.key_rects.assign(T_k, ProbeRect{});
    for (int q = 0; q < T_q; ++q) st.query_rects[q] = {g0.x - label_w, cell_y(static_cast<float>(q)), label_w, cell};
    for (int k = 0; k < T_k; ++k) st.key_rects[k] = {cell_x(static_cast<float>(k)), g0.y - header_h, cell, header_h};
    // Whole, the first and last labels may stand out half a line; zoomed, rows cut by the box
    // have their labels cut with them.
    const float label_overhang = o.zoom > 1.0f ? 0.0f : fs * 0.5f;
    dl->PushClipRect(ImVec2(min.x, g0.y - label_overhang), ImVec2(g0.x, g1.y + label_overhang), true);
    for (int q = row0; q < row1; ++q) {
        if (q % label_step_q != 0 && q != sel_q) continue;
        const float y = cell_y(q + 0.5f);
        const char* t = token_label(tr.queries[q]);
        float w = text_w(tr.queries[q]);
        ImVec2 p(g0.x - w - 8.0f * s, y - fs * 0.5f);
        if (q == sel_q) dl->AddRectFilled(ImVec2(p.x - 4.0f * s, p.y - 1.0f * s), ImVec2(g0.x - 3.0f * s, p.y + fs + 1.0f * s), pal.token_hover, 3.0f * s);
        dl->AddText(font, fs, p, pal.text, t);
        ++probe.labels_q;
    }
    dl->PopClipRect();
    // ImGui culls glyphs past the clip rectangle's right edge before add_text_upwards turns
    // them: the rectangle reaches a label's length past the last column.
    dl->PushClipRect(ImVec2(g0.x - fs * 0.5f, top + title_h - 2.0f * s), ImVec2(g1.x + (upright ? fs * 0.5f : maxw_k + fs), g0.y), true);
    for (int k = col0; k < col1; ++k) {
        if (k % label_step_k != 0 && k != sel_k) continue;
        const float x = cell_x(k + 0.5f);
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
        ++probe.labels_k;
    }
    dl->PopClipRect();

    char buffer[64];
    // Numbers in the cells: the label font in big cells, the small one otherwise; only the
    // visible rows' values are fetched (recomputed rows in a long trace).
    ImFont* number_font = cell >= 64.0f * s ? font : small;
    const float ns = number_font->FontSize;
    const float number_w = number_font->CalcTextSizeA(ns, FLT_MAX, 0.0f, "0.00").x;
    dl->PushClipRect(g0, g1, true);
    if (o.show_numbers && map.range_known && cell >= number_w + 8.0f * s && cell >= ns + 6.0f * s) {
        const RowValues& rows = visible_values(tr, cache, row0, row1, cache_->rows);
        for (int q = row0; q < row1; ++q)
            for (int k = col0; k < col1; ++k) {
                const ImVec2 c(cell_x(k + 0.5f), cell_y(q + 0.5f));
                if (tr.allowed(q, k) == 0) {
                    if (o.values == HeatValues::Scores) {
                        const char* inf = "\xe2\x88\x92\xe2\x88\x9e";  // −∞
                        float w = number_font->CalcTextSizeA(ns, FLT_MAX, 0.0f, inf).x;
                        dl->AddText(number_font, ns, ImVec2(c.x - w * 0.5f, c.y - ns * 0.5f), pal.masked_text, inf);
                    }
                    continue;
                }
                const float x = rows.values[static_cast<size_t>(q - row0) * T_k + k];
                format_value(buffer, sizeof buffer, x);
                auto rgb = colormap_sample(cmap, colormap_position(x, lo, hi, map.log));
                float w = number_font->CalcTextSizeA(ns, FLT_MAX, 0.0f, buffer).x;
                dl->AddText(number_font, ns, ImVec2(c.x - w * 0.5f, c.y - ns * 0.5f), ink_on(rgb), buffer);
                ++probe.numbers;
            }
    }
    // Row / column of the selection, and the hovered cell.
    const ImU32 outline = st.theme == Theme::Dark ? IM_COL32(255, 255, 255, 230) : IM_COL32(20, 20, 24, 230);
    if (sel_q >= 0 && hq < 0)
        dl->AddRect(ImVec2(g0.x, cell_y(sel_q)), ImVec2(g1.x, cell_y(sel_q + 1.0f)), outline, 0.0f, 0, 1.5f * s);
    if (sel_k >= 0 && hk < 0)
        dl->AddRect(ImVec2(cell_x(sel_k), g0.y), ImVec2(cell_x(sel_k + 1.0f), g1.y), outline, 0.0f, 0, 1.5f * s);
    if (hq >= 0 && hk >= 0)
        dl->AddRect(ImVec2(cell_x(hk), cell_y(hq)), ImVec2(cell_x(hk + 1.0f), cell_y(hq + 1.0f)), outline, 0.0f, 0, 2.0f * s);
    dl->PopClipRect();

    // [SECTION] Legend, progress and memory -------------------------------------------------
    const float bar_x = g1.x + 26.0f * s;
    const float bar_w = 14.0f * s;
    const float bar_h = std::clamp(grid_h, 90.0f * s, 280.0f * s);
    const float bar_y = g0.y + ss + 8.0f * s;
    const char* legend_title = attn::tr(st.lang, o.values == HeatValues::Weights ? Str::LegendWeight : Str::LegendScore);
    dl->AddText(small, ss, ImVec2(bar_x, g0.y), pal.text_muted, legend_title);
    // The LUT texture turned upright: t = 1 at the top.
    dl->AddImageQuad(ctx.renderer.lut_texture(o.colormap), ImVec2(bar_x, bar_y), ImVec2(bar_x + bar_w, bar_y),
                     ImVec2(bar_x + bar_w, bar_y + bar_h), ImVec2(bar_x, bar_y + bar_h), ImVec2(1, 0.5f),
                     ImVec2(1, 0.5f), ImVec2(0, 0.5f), ImVec2(0, 0.5f));
    dl->AddRect(ImVec2(bar_x, bar_y), ImVec2(bar_x + bar_w, bar_y + bar_h), pal.text_muted);
    for (int i = 0; i <= 4; ++i) {
        float t = static_cast<float>(i) / 4.0f;
        float y = bar_y + bar_h * (1.0f - t);
        if (map.log) std::snprintf(buffer, sizeof buffer, "%s", kLogTicks[i]);
        else if (map.range_known) format_value(buffer, sizeof buffer, lo + (hi - lo) * t);
        else std::snprintf(buffer, sizeof buffer, "\xe2\x80\xa6");  // … until the first pass has the range
        dl->AddLine(ImVec2(bar_x + bar_w, y), ImVec2(bar_x + bar_w + 4.0f * s, y), pal.text_muted);
        dl->AddText(small, ss, ImVec2(bar_x + bar_w + 7.0f * s, y - ss * 0.5f), pal.text, buffer);
    }
    float below_y = bar_y + bar_h + 14.0f * s;
    if (cache.any_masked) {
        hatch_rect(dl, ImVec2(bar_x, below_y), ImVec2(bar_x + bar_w, below_y + bar_w), pal, s);
        dl->AddRect(ImVec2(bar_x, below_y), ImVec2(bar_x + bar_w, below_y + bar_w), pal.text_muted);
        dl->AddText(small, ss, ImVec2(bar_x + bar_w + 7.0f * s, below_y + (bar_w - ss) * 0.5f), pal.text, attn::tr(st.lang, Str::Masked));
        below_y += bar_w + 12.0f * s;
    }
    // Back to the whole map.
    if (ctx.interactive && o.zoom > 1.0f) {
        const ImVec2 cursor = ImGui::GetCursorScreenPos();
        ImGui::SetCursorScreenPos(ImVec2(bar_x, below_y));
        if (ImGui::SmallButton(attn::tr(st.lang, Str::HeatFit))) o.zoom = 1.0f, o.view_x = o.view_y = 0.0f;
        attn::probe(st, "heatmap.fit");
        ImGui::SetCursorScreenPos(cursor);
    }
    // Progress while the map fills in, and the memory a big map takes: a muted line below it.
    const double progress = cache.builder.progress();
    const std::size_t display_bytes = map.bytes() + cache.builder.scratch_bytes(), trace_mem = trace_bytes(tr);
    const float line_y = g1.y + 6.0f * s;
    float line_x = g0.x;
    if (progress < 1.0) {  // a bar and the percentage, then the memory on the same line
        std::snprintf(buffer, sizeof buffer, attn::tr(st.lang, Str::HeatComputing), static_cast<int>(progress * 100.0));
        const float w = std::min(grid_w, 120.0f * s), y = line_y + ss * 0.5f - 1.5f * s;
        dl->AddRectFilled(ImVec2(line_x, y), ImVec2(line_x + w, y + 3.0f * s), pal.token_fill);
        dl->AddRectFilled(ImVec2(line_x, y), ImVec2(line_x + w * static_cast<float>(progress), y + 3.0f * s), pal.text_muted);
        line_x += w + 8.0f * s;
        dl->AddText(small, ss, ImVec2(line_x, line_y), pal.text_muted, buffer);
        line_x += small->CalcTextSizeA(ss, FLT_MAX, 0.0f, buffer).x + 14.0f * s;
    }
    if (big) {
        char head_text[48], line[160];
        if (cache.head >= 0 && cache.head < tr.heads) std::snprintf(head_text, sizeof head_text, attn::tr(st.lang, Str::HeadN), cache.head + 1);
        else std::snprintf(head_text, sizeof head_text, attn::tr(st.lang, Str::HeatMeanHeads), tr.heads);
        std::snprintf(line, sizeof line, attn::tr(st.lang, Str::HeatMemory), T_q, T_k, head_text, format_bytes(display_bytes).c_str(),
                      format_bytes(trace_mem).c_str());
        dl->AddText(small, ss, ImVec2(line_x, line_y), pal.text_muted, line);
    }
    probe.level = level;
    probe.row0 = row0, probe.row1 = row1, probe.col0 = col0, probe.col1 = col1;
    probe.cell = cell, probe.max_zoom = max_zoom;
    probe.progress = progress;
    probe.display_bytes = display_bytes, probe.trace_bytes = trace_mem;
    probe.gpu_bytes = ctx.renderer.tile_bytes(), probe.tiles = ctx.renderer.tiles_resident();

    // [SECTION] Hover ----------------------------------------------------------------------
    if (hq >= 0 && hk >= 0) {
        CellTip& tip = cache_->tip;
        if (tip.trace != &tr || tip.revision != st.revision || tip.q != hq || tip.k != hk) {
            tip.trace = &tr, tip.revision = st.revision, tip.q = hq, tip.k = hk;
            tip.heads.clear();
            for (int h = 0; h < tr.heads; ++h) tip.heads.push_back(cell_values(tr, h, hq, hk));
        }
        const bool allowed = tr.allowed(hq, hk) != 0;
        const bool has_scores = st.figure.has(Detail::Scores);
        ImGui::BeginTooltip();
        ImGui::Text("%s \xe2\x86\x92 %s", token_label(tr.queries[hq]), token_label(tr.keys[hk]));
        if (o.head >= 0 && o.head < tr.heads) ImGui::TextDisabled(attn::tr(st.lang, Str::TipCell), hq + 1, hk + 1, o.head + 1);
        else ImGui::TextDisabled(attn::tr(st.lang, Str::TipCellMean), hq + 1, hk + 1);
        ImGui::Separator();
        if (o.head < 0 || o.head >= tr.heads) {
            float sum = 0.0f;
            for (const CellValues& c : tip.heads) sum += c.weight;
            ImGui::Text(attn::tr(st.lang, Str::MeanWeight), allowed ? sum / static_cast<float>(tr.heads) : 0.0f);
            for (int h = 0; h < tr.heads && h < 8; ++h)
                ImGui::TextColored(head_color(st.theme, h), attn::tr(st.lang, Str::TipHeadWeight), h + 1, tip.heads[h].weight);
        } else {
            const CellValues& c = tip.heads[static_cast<size_t>(o.head)];
            ImGui::Text(attn::tr(st.lang, Str::Weight), c.weight);
            if (has_scores) {
                ImGui::Text(attn::tr(st.lang, Str::Score), c.score);
                if (allowed) ImGui::Text(attn::tr(st.lang, Str::ScaledScore), c.scaled);
            }
        }
        if (!allowed) {
            ImGui::TextColored(ImVec4(1.0f, 0.55f, 0.4f, 1.0f), "%s", attn::tr(st.lang, Str::TipMaskedScore));
            if (tr.kind == AttentionKind::Masked) ImGui::TextDisabled("%s", attn::tr(st.lang, Str::TipLaterKeys));
        }
        ImGui::EndTooltip();
    }
}

}  // namespace attn
