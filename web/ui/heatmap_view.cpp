// heatmap_view.cpp: the attention matrix on screen. Rows are queries, columns are keys. The
// layout (grid, labels, numbers, legend) comes from core/figure/heatmap_layout.hpp, which the
// SVG writer reads too; this file keeps what only a screen has: the cells from a compact display
// copy of the map (core/display_map.hpp: a byte per cell and a max pyramid), built a few
// milliseconds a frame so long traces fill in while the UI keeps drawing, and drawn as GPU tiles
// of the pyramid level that fits the zoom (renderer.hpp); zoom, pan and the pointer; the
// progress and memory line; the tooltip. Masked cells are hatched, so the causal triangle
// never reads as zeros; cells outside a sliding window are hatched in warm tones the other way.
// With the sink option (AppState::hides_sink) the map drawn is without its first key, rows
// renormalized (core/figure/sink.hpp); the tooltip still gives the true weights.
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
// [SECTION] Cells, labels, numbers and legend
// [SECTION] Progress and memory
// [SECTION] Hover
#include "view.hpp"
#include "controls.hpp"
#include "text.hpp"

#include "colormaps.hpp"
#include "display_map.hpp"
#include "steps.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <limits>

namespace attn {

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
    bool any_masked = false;  // anywhere in the map but a hidden sink's column (the legend shows the hatch from the start)
    bool matches(const AppState& st, const Trace& t) const {
        return trace == &t && revision == st.revision && head == st.heatmap.head &&
               scores == wants_scores(st.figure, st.heatmap) && log == st.heatmap.log_scale;
    }
    void start(const AppState& st, const Trace& t, std::uint64_t new_id) {
        revision = st.revision, head = st.heatmap.head, scores = wants_scores(st.figure, st.heatmap);
        log = st.heatmap.log_scale;
        trace = &t;
        id = new_id;
        any_masked = attn::any_masked(t, &t != &st.figure.trace());
        builder.start(t, head, scores, 0, log);
    }
};

// The map to draw: on screen a bounded step of building each frame; off screen (a PNG) the
// whole map at once.
const MapCache& current_map(ViewContext& ctx, const Trace& t, MapCache& m, std::uint64_t& last_id) {
    if (!m.matches(ctx.state, t)) m.start(ctx.state, t, ++last_id);
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
struct WidthCache {
    int revision = INT_MIN;
    const Trace* trace = nullptr;
    const ImFont* font = nullptr;
    float size = 0.0f;
    LabelWidths widths;
};

// One cell of each head shown, recomputed in a long trace: cached while the mouse rests.
struct CellTip {
    const Trace* trace = nullptr;
    int revision = INT_MIN, q = -1, k = -1;
    std::vector<CellValues> heads;
};

// The wheel, a trackpad's or a touch pinch, a drag and a double click move the view of
// the map (HeatmapOptions' zoom and view); a tap pins a cell. Whether the pointer is on the grid.
bool zoom_and_pan(ViewContext& ctx, HeatmapLayout& layout) {
    AppState& st = ctx.state;
    HeatmapOptions& o = st.heatmap;
    const float s = ctx.scale;
    const ImGuiIO& io = ImGui::GetIO();
    const ImVec2 g0(layout.grid.x0, layout.grid.y0);
    const float grid_w = layout.grid.w(), grid_h = layout.grid.h(), cell0 = layout.cell0, max_zoom = layout.max_zoom;
    bool grid_hovered = false;
    const platform::ZoomGesture gesture = platform::take_zoom(io.MouseWheel);
    // An invisible button over the box: drags pan the map instead of reaching the window.
    const ImVec2 cursor = ImGui::GetCursorScreenPos();
    ImGui::SetCursorScreenPos(g0);
    ImGui::InvisibleButton("##heatmap_grid", ImVec2(std::max(grid_w, 1.0f), std::max(grid_h, 1.0f)));
    grid_hovered = ImGui::IsItemHovered();
    if (ImGui::IsItemActivated()) o.dragging = true;
    if (!ImGui::IsItemActive()) o.dragging = false;
    // A tap or click that did not pan pins the cell, or lets it go (its values stay shown).
    if (ImGui::IsItemDeactivated() && tap(s)) {
        const int q = layout.query_at(io.MousePos.y), k = layout.key_at(io.MousePos.x);
        const bool same = st.pinned_q == q && st.pinned_k == k;
        st.pinned_q = same ? -1 : q, st.pinned_k = same ? -1 : k;
    }
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
    layout.set_view(o.zoom, o.view_x, o.view_y);
    o.zoom = layout.zoom, o.view_x = layout.view_x, o.view_y = layout.view_y;
    if (o.dragging) ImGui::SetMouseCursor(ImGuiMouseCursor_ResizeAll);
    return grid_hovered;
}

// Under the map, a muted line: progress while the map fills in (a bar and the
// percentage), and the memory a big map takes. Returns the progress (1: done).
double progress_and_memory(ViewContext& ctx, const Trace& tr, const Trace& truth, const MapCache& cache, const HeatmapLayout& layout,
                           float right) {
    AppState& st = ctx.state;
    const float s = ctx.scale;
    const Palette& pal = palette(st.theme);
    ImDrawList* dl = ImGui::GetWindowDrawList();
    ImFont* small = ctx.fonts.small;
    const float ss = small->FontSize;
    const DisplayMap& map = cache.builder.map();
    HeatmapProbe& probe = st.heatmap_probe;
    const float grid_w = layout.grid.w();
    const ImVec2 g0(layout.grid.x0, layout.grid.y0);
    char buffer[64];
    const double progress = cache.builder.progress();
    const std::size_t display_bytes = map.bytes() + cache.builder.scratch_bytes(), trace_mem = trace_bytes(truth);
    const float line_y = layout.footer_y;
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
    if (layout.big) {
        char head_text[48], line[160];
        if (cache.head >= 0 && cache.head < tr.heads) std::snprintf(head_text, sizeof head_text, attn::tr(st.lang, Str::HeadN), cache.head + 1);
        else std::snprintf(head_text, sizeof head_text, attn::tr(st.lang, Str::HeatMeanHeads), tr.heads);
        std::snprintf(line, sizeof line, attn::tr(st.lang, Str::HeatMemory), tr.T_q(), tr.T_k(), head_text, byte_size(static_cast<double>(display_bytes)).c_str(),
                      byte_size(static_cast<double>(trace_mem)).c_str());
        dl->AddText(small, ss, ImVec2(line_x, line_y), pal.text_muted, line, nullptr, std::max(std::min(right, layout.bar.x0) - 8.0f * s - line_x, 80.0f * s));  // wraps before the legend (a phone)
    }
    probe.display_bytes = display_bytes, probe.trace_bytes = trace_mem;
    return progress;
}

// The cell's tooltip: its tokens, the weight (each head's, or the mean), the score and
// the scaled score, what a hidden sink leaves there, why a masked cell is masked. From the true
// weights (the figure's, `truth`), whatever the map shows; beside the cell when it is the
// keyboard's or the pinned one (`at_cell`).
void cell_tooltip(ViewContext& ctx, CellTip& tip, const Trace& tr, const Trace& truth, const HeatmapLayout& layout, int hq, int hk,
                  bool at_cell) {
    AppState& st = ctx.state;
    const HeatmapOptions& o = st.heatmap;
    const float s = ctx.scale;
    const bool sink_hidden = &tr != &truth;
    if (tip.trace != &truth || tip.revision != st.revision || tip.q != hq || tip.k != hk) {
        tip.trace = &truth, tip.revision = st.revision, tip.q = hq, tip.k = hk;
        tip.heads.clear();
        for (int h = 0; h < truth.heads; ++h) tip.heads.push_back(cell_values(truth, h, hq, hk));
    }
    const bool allowed = truth.allowed(hq, hk) != 0;
    const bool has_scores = st.figure.has(Detail::Scores);
    if (at_cell) ImGui::SetNextWindowPos(ImVec2(layout.cell_x(hk + 1.0f) + 8.0f * s, layout.cell_y(hq + 1.0f) + 4.0f * s));
    ImGui::BeginTooltip();
    ImGui::Text("%s \xe2\x86\x92 %s", token_text(tr.queries[hq]).c_str(), token_text(tr.keys[hk]).c_str());
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
    if (sink_hidden && allowed) {  // what the map shows there instead
        if (hk == 0) {
            ImGui::TextDisabled("%s", attn::tr(st.lang, Str::TipSinkHidden));
        } else {
            const bool mean = o.head < 0 || o.head >= tr.heads;
            float shown = 0.0f;
            for (int h = mean ? 0 : o.head; h < (mean ? tr.heads : o.head + 1); ++h)
                shown += tr.attention.heads[static_cast<size_t>(h)].weights(hq, hk);
            ImGui::TextDisabled(attn::tr(st.lang, Str::TipSinkShown), mean ? shown / static_cast<float>(tr.heads) : shown);
        }
    }
    if (!allowed) {
        ImGui::TextColored(ImVec4(1.0f, 0.55f, 0.4f, 1.0f), "%s", attn::tr(st.lang, Str::TipMaskedScore));
        if (outside_window(truth, hq, hk)) ImGui::TextDisabled(attn::tr(st.lang, Str::TipOutsideWindow), truth.window, truth.window - 1);
        else if (truth.kind == AttentionKind::Masked) ImGui::TextDisabled("%s", attn::tr(st.lang, Str::TipLaterKeys));
    }
    ImGui::EndTooltip();
}

}  // namespace

struct HeatmapView::Cache {
    MapCache map;
    std::uint64_t last_map_id = 0;
    RowValues rows;
    WidthCache widths;
    int last_T_q = -1, last_T_k = -1;  // a figure of another size starts whole (zoom 1)
    CellTip tip;
    SinklessTrace sinkless;  // the map without its first key (the sink option)
    std::shared_ptr<const Image> picture;  // a vision model's, whose pieces label the patches (kept: its address is the texture's key)
};
HeatmapView::HeatmapView() : cache_(std::make_unique<Cache>()) {}
HeatmapView::~HeatmapView() = default;

void HeatmapView::draw(ViewContext& ctx, ImVec2 min, ImVec2 max) {
    AppState& st = ctx.state;
    // `tr` is what is drawn; `truth` the figure's own weights (the same trace unless the sink is hidden).
    const Trace& truth = st.figure.trace();
    const Trace& tr = drawn_trace(st, View::Heatmap, cache_->sinkless);
    const bool sink_hidden = &tr != &truth;
    HeatmapOptions& o = st.heatmap;
    const float s = ctx.scale;
    const Palette& pal = palette(st.theme);
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const FontsMeasure measure(ctx.fonts);
    ImFont* font = ctx.fonts.body;
    const int T_q = tr.T_q(), T_k = tr.T_k();
    if (T_q == 0 || T_k == 0) return;
    const MapCache& cache = current_map(ctx, tr, cache_->map, cache_->last_map_id);
    const DisplayMap& map = cache.builder.map();
    HeatmapProbe& probe = st.heatmap_probe;
    probe = HeatmapProbe{};

    // [SECTION] Layout ---------------------------------------------------------------------
    WidthCache& widths = cache_->widths;
    if (widths.revision != st.revision || widths.trace != &tr || widths.font != font || widths.size != font->FontSize)
        widths = WidthCache{st.revision, &tr, font, font->FontSize, label_widths(tr, FontRole::Body, measure)};
    HeatmapInput in;
    in.trace = &tr;
    in.box = {min.x, min.y, max.x, max.y};
    in.scale = s;
    in.dark = st.theme == Theme::Dark;
    in.scores = o.values == HeatValues::Scores;
    in.any_masked = cache.any_masked;
    in.sink_hidden = sink_hidden;
    in.words = heatmap_words(st.lang);
    in.crops = patch_crops(st, tr);
    cache_->picture = in.crops.any() ? st.figure.live->picture : nullptr;
    // A new figure of another size starts whole.
    if (ctx.interactive && (cache_->last_T_q != T_q || cache_->last_T_k != T_k)) {
        o.zoom = 1.0f, o.view_x = o.view_y = 0.0f, o.dragging = false;
        cache_->last_T_q = T_q, cache_->last_T_k = T_k;
    }
    in.zoom = o.zoom, in.view_x = o.view_x, in.view_y = o.view_y;
    HeatmapLayout layout = lay_out_heatmap(in, measure, widths.widths);
    o.zoom = layout.zoom, o.view_x = layout.view_x, o.view_y = layout.view_y;  // clamped to the map
    const ImVec2 g0(layout.grid.x0, layout.grid.y0), g1(layout.grid.x1, layout.grid.y1);
    const float grid_w = layout.grid.w(), grid_h = layout.grid.h(), max_zoom = layout.max_zoom;
    st.grid_rect = {g0.x, g0.y, grid_w, grid_h};

    // [SECTION] Zoom and pan -----------------------------------------------------------------
    const ImGuiIO& io = ImGui::GetIO();
    bool grid_hovered = false;
    if (ctx.interactive) grid_hovered = zoom_and_pan(ctx, layout);
    const float cell = layout.cell;
    // The pyramid level whose texels are at least a framebuffer pixel: every texel (the max of
    // the cells below it) shows, so a single strong weight is never skipped when zoomed out.
    const float px = io.DisplayFramebufferScale.x > 0.0f ? io.DisplayFramebufferScale.x : 1.0f;
    int level = 0;
    while (level + 1 < static_cast<int>(map.levels.size()) && cell * px * static_cast<float>(1 << level) < 1.0f) ++level;

    // [SECTION] Cells, labels, numbers and legend --------------------------------------------
    HeatmapDraw draw;
    draw.min = g0, draw.max = g1;
    draw.T_q = T_q, draw.T_k = T_k;
    draw.value_min = map.lo, draw.value_max = map.hi;
    draw.colormap = o.colormap;
    draw.hatch_a = pal.hatch_a, draw.hatch_b = pal.hatch_b, draw.grid = pal.grid;
    draw.window_a = pal.window_a, draw.window_b = pal.window_b;
    draw.window = tr.window, draw.sink_hidden = sink_hidden;
    draw.map = &map, draw.map_id = cache.id, draw.level = level;
    draw.cell_x0 = layout.view_x, draw.cell_y0 = layout.view_y, draw.cells_w = T_k / layout.zoom, draw.cells_h = T_q / layout.zoom;

    // The cell under the pointer (its labels are marked, the cell outlined).
    HeatmapSelection sel;
    // Else the keyboard's cell, else the pinned one (access.hpp): its tooltip beside the cell.
    bool at_cell = false;
    if (grid_hovered && !o.dragging) sel.hover_q = layout.query_at(io.MousePos.y), sel.hover_k = layout.key_at(io.MousePos.x);
    else if (ctx.interactive && st.cursor.on) sel.hover_q = st.cursor.q, sel.hover_k = st.cursor.k, at_cell = true;
    else if (ctx.interactive && st.pinned_q >= 0) sel.hover_q = st.pinned_q, sel.hover_k = st.pinned_k, at_cell = true;
    const TokenRef picked = st.selected();
    sel.query = picked.side == TokenRef::Query ? picked.index : -1;
    sel.key = picked.side == TokenRef::Key ? picked.index : -1;
    HeatmapValues values;
    values.colormap = o.colormap;
    values.lo = map.lo, values.hi = map.hi, values.log = map.log;
    values.range_known = map.range_known;
    values.show_numbers = o.show_numbers;
    // Only the visible rows' values are fetched (recomputed rows in a long trace), and only
    // when the cells are big enough to show them.
    if (o.show_numbers && map.range_known && heatmap_numbers_fit(layout, measure))
        values.rows = visible_values(tr, cache, layout.row0, layout.row1, cache_->rows).values.data();
    const HeatmapItems items = heatmap_items(layout, sel, values, measure);
    draw_items(dl, items.items, items.clips, measure, pal, s, [&](const Item& it) {
        if (it.kind == Item::Grid) ctx.renderer.add_heatmap(dl, draw);
        if (it.kind == Item::Picture && cache_->picture) draw_picture_part(ctx, dl, *cache_->picture, it);
        // The LUT texture turned upright: t = 1 at the top.
        if (it.kind == Item::Colormap)
            dl->AddImageQuad(ctx.renderer.lut_texture(o.colormap), ImVec2(it.box.x0, it.box.y0), ImVec2(it.box.x1, it.box.y0),
                             ImVec2(it.box.x1, it.box.y1), ImVec2(it.box.x0, it.box.y1), ImVec2(1, 0.5f), ImVec2(1, 0.5f),
                             ImVec2(0, 0.5f), ImVec2(0, 0.5f));
    });
    probe_captions(st, items.items, measure);
    for (const char* axis : {"q", "k"})  // the first patch's piece of the picture on each axis, for the tests
        for (const Item& it : items.items)
            if (it.kind == Item::Picture && (it.box.x1 <= layout.grid.x0) == (axis[0] == 'q')) {
                st.probe[std::string("heatmap.crop.") + axis + "." + std::to_string(it.index)] = {it.box.x0, it.box.y0, it.box.w(), it.box.h()};
                break;
            }
    probe.labels_q = items.labels_q, probe.labels_k = items.labels_k, probe.numbers = items.numbers;
    st.query_rects.assign(T_q, ProbeRect{});
    st.key_rects.assign(T_k, ProbeRect{});
    for (int q = 0; q < T_q; ++q) {
        const Box r = layout.query_rect(q);
        st.query_rects[q] = {r.x0, r.y0, r.w(), r.h()};
    }
    for (int k = 0; k < T_k; ++k) {
        const Box r = layout.key_rect(k);
        st.key_rects[k] = {r.x0, r.y0, r.w(), r.h()};
    }
    // Back to the whole map.
    if (ctx.interactive && o.zoom > 1.0f) {
        const ImVec2 cursor = ImGui::GetCursorScreenPos();
        ImGui::SetCursorScreenPos(ImVec2(layout.fit_x, layout.fit_y));
        if (small_button(st, attn::tr(st.lang, Str::HeatFit))) o.zoom = 1.0f, o.view_x = o.view_y = 0.0f;
        const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
        st.probe["heatmap.fit"] = {a.x, a.y, b.x - a.x, b.y - a.y};
        ImGui::SetCursorScreenPos(cursor);
    }

    // [SECTION] Progress and memory ------------------------------------------------------------
    const double progress = progress_and_memory(ctx, tr, truth, cache, layout, max.x);
    probe.level = level;
    probe.window_legend = layout.window_legend, probe.sink_legend = layout.sink_hidden;
    if (layout.window_legend) st.probe["heatmap.window_swatch"] = {layout.window_swatch.x0, layout.window_swatch.y0,
                                                                   layout.window_swatch.w(), layout.window_swatch.h()};
    probe.row0 = layout.row0, probe.row1 = layout.row1, probe.col0 = layout.col0, probe.col1 = layout.col1;
    probe.cell = cell, probe.max_zoom = max_zoom;
    probe.progress = progress;
    probe.gpu_bytes = ctx.renderer.tile_bytes(), probe.tiles = ctx.renderer.tiles_resident();

    // [SECTION] Hover ----------------------------------------------------------------------
    const int hq = sel.hover_q, hk = sel.hover_k;
    if (hq >= 0 && hk >= 0) cell_tooltip(ctx, cache_->tip, tr, truth, layout, hq, hk, at_cell);
}

// [SECTION] Toolbar -----------------------------------------------------------------------------

// A model's layer and the head (or their mean) the heatmap and the Image view show.
void heatmap_head_toolbar(ViewContext& ctx) {
    AppState& st = ctx.state;
    const float s = ctx.scale;
    const Trace& tr = st.figure.trace();
    const bool layers = st.figure.has(Detail::Layers);
    if (layer_combo(st, s, "heatmap", std::max(st.heatmap.head, 0)))  // a model's layer, its heads: which layer
        same_line_if_fits(ImGui::CalcTextSize(attn::tr(st.lang, Str::Head)).x + 120.0f * s);
    if (tr.heads > 1 || !layers) {  // an aggregate or rollout of a model's layers is one map
        ImGui::AlignTextToFramePadding();
        ImGui::TextUnformatted(attn::tr(st.lang, Str::Head));
        ImGui::SameLine();
        ImGui::SetNextItemWidth(110.0f * s);
        char current[32];
        if (st.heatmap.head < 0) std::snprintf(current, sizeof current, "%s", attn::tr(st.lang, Str::Mean));
        else std::snprintf(current, sizeof current, attn::tr(st.lang, Str::HeadOf), st.heatmap.head + 1, tr.heads);
        if (ImGui::BeginCombo("##head", current)) {
            if (tr.heads > 1 && ImGui::Selectable(attn::tr(st.lang, Str::Mean), st.heatmap.head < 0)) st.heatmap.head = -1;
            for (int h = 0; h < tr.heads; ++h) {
                char label[32];
                std::snprintf(label, sizeof label, attn::tr(st.lang, Str::HeadOf), h + 1, tr.heads);
                if (ImGui::Selectable(label, h == st.heatmap.head)) st.heatmap.head = h;
            }
            ImGui::EndCombo();
        }
        probe(st, "heatmap.head");
        if (layers && st.imported.show == ImportShow::Head && st.heatmap.head >= 0) st.imported.import_head = st.heatmap.head;
    }
}

// The head (or their mean), weights or scores, the colours, numbers, the log scale, the sink.
void HeatmapView::toolbar(ViewContext& ctx) {
    AppState& st = ctx.state;
    const float s = ctx.scale;
    heatmap_head_toolbar(ctx);
    if (st.figure.has(Detail::Scores)) {
        same_line_if_fits(ImGui::CalcTextSize(attn::tr(st.lang, Str::Show)).x + 160.0f * s);
        ImGui::TextUnformatted(attn::tr(st.lang, Str::Show));
        ImGui::SameLine();
        ImGui::SetNextItemWidth(150.0f * s);
        int values = static_cast<int>(st.heatmap.values);
        const char* value_names[] = {attn::tr(st.lang, Str::ValuesWeights), attn::tr(st.lang, Str::ValuesScores)};
        if (ImGui::Combo("##values", &values, value_names, 2)) st.heatmap.values = static_cast<HeatValues>(values);
        probe(st, "values");
    }
    toolbar_colormap(ctx);
    same_line_if_fits(ImGui::GetFrameHeight() + ImGui::CalcTextSize(attn::tr(st.lang, Str::Numbers)).x + 8.0f * s);
    ImGui::Checkbox((std::string(attn::tr(st.lang, Str::Numbers)) + "###numbers").c_str(), &st.heatmap.show_numbers);
    if (st.heatmap.values == HeatValues::Weights) {  // scores can be negative: linear only
        same_line_if_fits(ImGui::GetFrameHeight() + ImGui::CalcTextSize(attn::tr(st.lang, Str::LogScale)).x + 8.0f * s);
        ImGui::Checkbox((std::string(attn::tr(st.lang, Str::LogScale)) + "###log").c_str(), &st.heatmap.log_scale);
        probe(st, "log");
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", attn::tr(st.lang, Str::LogScaleTip));
        sink_checkbox(ctx);
    }
}

}  // namespace attn
