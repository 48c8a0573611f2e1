// heatmap_layout.cpp: the heatmap's layout (see heatmap_layout.hpp). The numbers are the ones
// web/ui/heatmap_view.cpp computed inline before it drew from this: s is the UI scale.
//
// [SECTION] Geometry
// [SECTION] Items
#include "heatmap_layout.hpp"

#include "colormaps.hpp"
#include "display_map.hpp"
#include "steps.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace attn {

std::string heatmap_value_text(float x) {
    const float a = std::fabs(x);
    return format_number(x, a >= 100.0f ? 0 : a >= 10.0f ? 1 : 2);
}

bool any_masked(const Trace& tr, bool sink_hidden) {
    const Eigen::Index first = sink_hidden ? 1 : 0;
    return tr.allowed.any_masked(first);
}

// [SECTION] Geometry -----------------------------------------------------------------------------
// The box the map fits at zoom 1 is laid out as before zooming existed; zooming enlarges the
// cells inside the same box.

HeatmapLayout lay_out_heatmap(const HeatmapInput& in, const TextMeasure& m, const LabelWidths& widths) {
    HeatmapLayout L;
    const Trace& tr = *in.trace;
    const float s = in.scale;
    L.trace = &tr;
    L.T_q = tr.T_q(), L.T_k = tr.T_k();
    L.s = s;
    L.box = in.box;
    L.dark = in.dark, L.scores = in.scores, L.any_masked = in.any_masked;
    L.window_legend = window_bites(tr), L.sink_hidden = in.sink_hidden;
    L.words = in.words;
    if (L.T_q == 0 || L.T_k == 0) return L;
    const int T_q = L.T_q, T_k = L.T_k;
    const Box& b = in.box;
    L.fs = m.size(FontRole::Body), L.ss = m.size(FontRole::Small);
    const float fs = L.fs, ss = L.ss;
    L.maxw_q = widths.q, L.maxw_k = widths.k;
    const float margin = 14.0f * s;
    L.crops = in.crops;
    L.crop_w = in.crops.any() ? fs + 4.0f * s : 0.0f;
    L.label_w = L.maxw_q + 14.0f * s + L.crop_w;
    // The queries' caption sits left of the column labels, over the row labels' column; wider
    // than that column and the margin, it would reach over the column labels: a line of its own.
    const std::string& query_caption = tr.kind == AttentionKind::Cross ? in.words.caption_target_queries : in.words.caption_queries;
    L.captions_stacked = m.width(query_caption, FontRole::Small) + 8.0f * s > L.label_w + margin - 4.0f * s;
    // The legend's column: the bar's labels, or the widest entry below it (swatch, gap, words).
    float legend_w = 96.0f * s;
    auto entry = [&](const std::string& text) { legend_w = std::max(legend_w, (26.0f + 14.0f + 7.0f + 6.0f) * s + m.width(text, FontRole::Small)); };
    if (L.window_legend) entry(in.words.outside_window), entry(printf_string(in.words.window_size, tr.window));
    if (L.sink_hidden) entry(in.words.sink_hidden), entry(in.words.sink_renormalized);
    L.title_h = ss + 10.0f * s + (L.captions_stacked ? ss + 4.0f * s : 0.0f);  // axis captions above the column labels
    const float avail_w = std::max(b.x1 - b.x0 - 2.0f * margin - L.label_w - legend_w, 20.0f);
    const float max_cell = 96.0f * s;
    // Big maps state their memory (and progress) in a line below the cells.
    L.big = static_cast<std::int64_t>(T_q) * T_k > 64 * 64 || tr.is_long();
    const float footer_h = L.big ? ss + 8.0f * s : 0.0f;
    auto fit = [&](float header_h) {
        float avail_h = std::max(b.y1 - b.y0 - 2.0f * margin - L.title_h - header_h - footer_h, 20.0f);
        return std::min({avail_w / T_k, avail_h / T_q, max_cell});
    };
    float header_h = fs + 10.0f * s + L.crop_w;
    float cell0 = fit(header_h);
    L.upright = L.maxw_k + 8.0f * s <= cell0;
    if (!L.upright) {
        header_h = std::min(L.maxw_k + 12.0f * s, (b.y1 - b.y0) * 0.35f) + L.crop_w;
        cell0 = fit(header_h);
    }
    L.header_h = header_h;
    L.cell0 = cell0;
    const float grid_w = cell0 * T_k, grid_h = cell0 * T_q;
    const float block_w = L.label_w + grid_w + legend_w;
    const float gx0 = b.x0 + margin + std::max((b.x1 - b.x0 - 2.0f * margin - block_w) * 0.5f, 0.0f) + L.label_w;
    // A little above the middle when there is room to spare, like a figure on a page.
    const float spare_h = std::max(b.y1 - b.y0 - 2.0f * margin - L.title_h - header_h - grid_h - ss - 10.0f * s, 0.0f);
    L.top = b.y0 + margin + spare_h * 0.35f;
    const float gy0 = L.top + L.title_h + header_h;
    L.grid = {gx0, gy0, gx0 + grid_w, gy0 + grid_h};
    L.max_zoom = std::max(1.0f, max_cell / cell0);

    // Legend: the bar right of the grid, the hatch below it when something is masked.
    const float bar_x = L.grid.x1 + 26.0f * s, bar_w = 14.0f * s;
    const float bar_y = gy0 + ss + 8.0f * s;
    // As tall as the grid within 90…280, but inside the box (a short phone screen held sideways).
    const float bar_h = std::max(std::min(std::clamp(grid_h, 90.0f * s, 280.0f * s), b.y1 - 8.0f * s - bar_y), 30.0f * s);
    L.bar = {bar_x, bar_y, bar_x + bar_w, bar_y + bar_h};
    float below_y = bar_y + bar_h + 14.0f * s;
    L.swatch = {bar_x, below_y, bar_x + bar_w, below_y + bar_w};
    if (in.any_masked) below_y += bar_w + 12.0f * s;
    // Two lines of words beside each of these swatches.
    if (L.window_legend) {
        L.window_swatch = {bar_x, below_y, bar_x + bar_w, below_y + bar_w};
        below_y += std::max(bar_w, 2.0f * ss + 2.0f * s) + 12.0f * s;
    }
    if (L.sink_hidden) {
        L.sink_swatch = {bar_x, below_y, bar_x + bar_w, below_y + bar_w};
        below_y += std::max(bar_w, 2.0f * ss + 2.0f * s) + 12.0f * s;
    }
    L.fit_x = bar_x, L.fit_y = below_y;
    L.footer_y = L.grid.y1 + 6.0f * s;
    L.set_view(in.zoom, in.view_x, in.view_y);
    return L;
}

void HeatmapLayout::set_view(float z, float vx, float vy) {
    if (T_q == 0 || T_k == 0) return;
    zoom = std::clamp(std::isfinite(z) ? z : 1.0f, 1.0f, max_zoom);
    view_x = std::clamp(std::isfinite(vx) ? vx : 0.0f, 0.0f, T_k - T_k / zoom);
    view_y = std::clamp(std::isfinite(vy) ? vy : 0.0f, 0.0f, T_q - T_q / zoom);
    cell = cell0 * zoom;
    const float vw = T_k / zoom, vh = T_q / zoom;  // cells across the box
    row0 = std::clamp(static_cast<int>(std::floor(view_y)), 0, T_q - 1);
    row1 = std::clamp(static_cast<int>(std::ceil(view_y + vh - 1e-4f)), row0 + 1, T_q);
    col0 = std::clamp(static_cast<int>(std::floor(view_x)), 0, T_k - 1);
    col1 = std::clamp(static_cast<int>(std::ceil(view_x + vw - 1e-4f)), col0 + 1, T_k);
}

int HeatmapLayout::query_at(float y) const {
    return std::clamp(static_cast<int>(std::floor(view_y + (y - grid.y0) / cell)), 0, T_q - 1);
}
int HeatmapLayout::key_at(float x) const {
    return std::clamp(static_cast<int>(std::floor(view_x + (x - grid.x0) / cell)), 0, T_k - 1);
}

// [SECTION] Items --------------------------------------------------------------------------------

bool heatmap_numbers_fit(const HeatmapLayout& L, const TextMeasure& m) {
    const FontRole font = L.cell >= 64.0f * L.s ? FontRole::Body : FontRole::Small;
    return L.cell >= m.width("0.00", font) + 8.0f * L.s && L.cell >= m.size(font) + 6.0f * L.s;
}

HeatmapItems heatmap_items(const HeatmapLayout& L, const HeatmapSelection& sel, const HeatmapValues& v,
                           const TextMeasure& m) {
    HeatmapItems out;
    if (L.T_q == 0 || L.T_k == 0) return out;
    const Trace& tr = *L.trace;
    const int T_k = L.T_k;
    const float s = L.s, fs = L.fs, ss = L.ss, cell = L.cell;
    const FigurePalette& pal = figure_palette(L.dark);
    const Colormap& cmap = colormaps()[std::clamp(v.colormap, 0, static_cast<int>(colormaps().size()) - 1)];
    const Box& g = L.grid;
    std::vector<Item>& items = out.items;
    out.clips.push_back(g);
    const int kGridClip = 0, kRowClip = 1, kColClip = 2;
    {
        Item grid;
        grid.kind = Item::Grid;
        grid.box = g;
        grid.clip = kGridClip;
        items.push_back(grid);
    }
    const int sel_q = sel.hover_q >= 0 ? sel.hover_q : sel.query;
    const int sel_k = sel.hover_k >= 0 ? sel.hover_k : sel.key;

    // Axis captions.
    const bool cross = tr.kind == AttentionKind::Cross;
    const std::string& key_caption = cross ? L.words.caption_source_keys : L.words.caption_keys;
    const std::string& query_caption = cross ? L.words.caption_target_queries : L.words.caption_queries;
    items.push_back(text_item(ItemRole::Caption, g.x0, L.top, FontRole::Small, pal.text_muted, key_caption,
                              m.width(key_caption, FontRole::Small)));
    // Right-aligned above the row labels, in the corner the column labels leave free.
    const float qc_w = m.width(query_caption, FontRole::Small);
    if (L.captions_stacked)  // under the keys' caption, from the row labels' column
        items.push_back(text_item(ItemRole::Caption, std::max(g.x0 - L.label_w, L.box.x0 + 4.0f * s), L.top + ss + 4.0f * s,
                                  FontRole::Small, pal.text_muted, query_caption, qc_w));
    else
        items.push_back(text_item(ItemRole::Caption, std::max(g.x0 - qc_w - 8.0f * s, L.box.x0 + 4.0f * s), g.y0 - ss - 6.0f * s,
                                  FontRole::Small, pal.text_muted, query_caption, qc_w));

    // Labels of the visible rows and columns; closer together than a line of text they would
    // overlap: every n-th one (counted from the first token, so they stay put while panning).
    const int label_step_k = L.upright && L.zoom == 1.0f ? 1 : std::max(1, static_cast<int>(std::ceil(fs / std::max(cell, 1e-3f))));
    const int label_step_q = std::max(1, static_cast<int>(std::ceil(fs / std::max(cell, 1e-3f))));
    // Whole, the first and last labels may stand out half a line; zoomed, rows cut by the box
    // have their labels cut with them.
    const float label_overhang = L.zoom > 1.0f ? 0.0f : fs * 0.5f;
    out.clips.push_back({L.box.x0, g.y0 - label_overhang, g.x0, g.y1 + label_overhang});
    for (int q = L.row0; q < L.row1; ++q) {
        if (q % label_step_q != 0 && q != sel_q) continue;
        const float y = L.cell_y(q + 0.5f);
        const std::string t(token_text(tr.queries[q]));
        const float w = m.width(t, FontRole::Body);
        const float px = g.x0 - w - 8.0f * s - L.crop_w, py = y - fs * 0.5f;
        if (q == sel_q) {
            items.push_back(rect_item(ItemRole::LabelMark, {px - 4.0f * s, py - 1.0f * s, g.x0 - 3.0f * s, py + fs + 1.0f * s},
                                      pal.token_hover, 3.0f * s, q));
            items.back().clip = kRowClip;
        }
        Item crop;
        if (L.crops.item(q, {g.x0 - 8.0f * s - fs, py, g.x0 - 8.0f * s, py + fs}, crop)) {
            items.push_back(crop);
            items.back().clip = kRowClip;
        }
        items.push_back(text_item(ItemRole::RowLabel, px, py, FontRole::Body, pal.text, t, w, Item::Right, q));
        items.back().clip = kRowClip;
        ++out.labels_q;
    }
    // On screen ImGui culls glyphs past the clip rectangle's right edge before the turned labels
    // are turned: the rectangle reaches a label's length past the last column.
    out.clips.push_back({g.x0 - fs * 0.5f, L.top + L.title_h - 2.0f * s, g.x1 + (L.upright ? fs * 0.5f : L.maxw_k + fs), g.y0});
    for (int k = L.col0; k < L.col1; ++k) {
        if (k % label_step_k != 0 && k != sel_k) continue;
        const float x = L.cell_x(k + 0.5f);
        const std::string t(token_text(tr.keys[k]));
        const float w = m.width(t, FontRole::Body);
        Item crop;
        if (L.crops.item(k, {x - fs * 0.5f, g.y0 - 6.0f * s - fs, x + fs * 0.5f, g.y0 - 6.0f * s}, crop)) {
            items.push_back(crop);
            items.back().clip = kColClip;
        }
        if (L.upright) {
            const float px = x - w * 0.5f, py = g.y0 - fs - 6.0f * s - L.crop_w;
            if (k == sel_k) {
                items.push_back(rect_item(ItemRole::LabelMark, {px - 4.0f * s, py - 1.0f * s, px + w + 4.0f * s, py + fs + 1.0f * s},
                                          pal.token_hover, 3.0f * s, k));
                items.back().clip = kColClip;
            }
            items.push_back(text_item(ItemRole::ColLabel, px, py, FontRole::Body, pal.text, t, w, Item::Center, k));
        } else {
            const float px = x - fs * 0.5f, py = g.y0 - 6.0f * s - L.crop_w;
            if (k == sel_k) {
                items.push_back(rect_item(ItemRole::LabelMark, {px - 1.0f * s, py - w - 4.0f * s, px + fs + 1.0f * s, py + 2.0f * s},
                                          pal.token_hover, 3.0f * s, k));
                items.back().clip = kColClip;
            }
            items.push_back(text_item(ItemRole::ColLabel, px, py, FontRole::Body, pal.text, t, w, Item::Left, k));
            items.back().upwards = true;
        }
        items.back().clip = kColClip;
        ++out.labels_k;
    }

    // Numbers in the cells: the label font in big cells, the small one otherwise.
    const FontRole number_font = cell >= 64.0f * s ? FontRole::Body : FontRole::Small;
    const float ns = m.size(number_font);
    if (v.show_numbers && v.range_known && v.rows && heatmap_numbers_fit(L, m)) {
        for (int q = L.row0; q < L.row1; ++q)
            for (int k = L.col0; k < L.col1; ++k) {
                const float cx = L.cell_x(k + 0.5f), cy = L.cell_y(q + 0.5f);
                if (tr.allowed(q, k) == 0) {
                    if (L.scores) {
                        const std::string inf = "\xe2\x88\x92\xe2\x88\x9e";  // −∞
                        const float w = m.width(inf, number_font);
                        items.push_back(text_item(ItemRole::NumberMasked, cx - w * 0.5f, cy - ns * 0.5f, number_font, pal.masked_text,
                                                  inf, w, Item::Center, q * T_k + k));
                        items.back().clip = kGridClip;
                    }
                    continue;
                }
                const float x = v.rows[static_cast<size_t>(q - L.row0) * T_k + k];
                const std::string text = heatmap_value_text(x);
                const Color ink = ink_on_color(colormap_sample(cmap, colormap_position(x, v.lo, v.hi, v.log)));
                const float w = m.width(text, number_font);
                items.push_back(text_item(ItemRole::Number, cx - w * 0.5f, cy - ns * 0.5f, number_font, ink, text, w, Item::Center,
                                          q * T_k + k));
                items.back().clip = kGridClip;
                ++out.numbers;
            }
    }
    // Row / column of the selection, and the hovered cell.
    if (sel_q >= 0 && sel.hover_q < 0) {
        items.push_back(outline_item(ItemRole::Selection, {g.x0, L.cell_y(sel_q), g.x1, L.cell_y(sel_q + 1.0f)}, pal.outline, 1.5f * s, 0.0f, sel_q));
        items.back().clip = kGridClip;
    }
    if (sel_k >= 0 && sel.hover_k < 0) {
        items.push_back(outline_item(ItemRole::Selection, {L.cell_x(sel_k), g.y0, L.cell_x(sel_k + 1.0f), g.y1}, pal.outline, 1.5f * s, 0.0f, sel_k));
        items.back().clip = kGridClip;
    }
    if (sel.hover_q >= 0 && sel.hover_k >= 0) {
        items.push_back(outline_item(ItemRole::Hover,
                                     {L.cell_x(sel.hover_k), L.cell_y(sel.hover_q), L.cell_x(sel.hover_k + 1.0f), L.cell_y(sel.hover_q + 1.0f)},
                                     pal.outline, 2.0f * s));
        items.back().clip = kGridClip;
    }

    // Legend: title, the colormap bar (outlined), five ticks, and the hatch when something is masked.
    const Box& bar = L.bar;
    const std::string& title = L.scores ? L.words.score : L.words.weight;
    items.push_back(text_item(ItemRole::LegendTitle, bar.x0, g.y0, FontRole::Small, pal.text_muted, title, m.width(title, FontRole::Small)));
    {
        Item it;
        it.kind = Item::Colormap;
        it.role = ItemRole::LegendBar;
        it.box = bar;
        it.index = v.colormap;
        items.push_back(it);
    }
    items.push_back(outline_item(ItemRole::LegendBar, bar, pal.text_muted, 1.0f));
    for (int i = 0; i <= 4; ++i) {
        const float t = static_cast<float>(i) / 4.0f;
        const float y = bar.y0 + bar.h() * (1.0f - t);
        const std::string label = v.log ? kLogTicks[i] : v.range_known ? heatmap_value_text(v.lo + (v.hi - v.lo) * t)
                                                                       : "\xe2\x80\xa6";  // … until the first pass has the range
        items.push_back(segment_item(ItemRole::LegendTick, bar.x1, y, bar.x1 + 4.0f * s, y, pal.text_muted, 1.0f, i));
        items.push_back(text_item(ItemRole::LegendLabel, bar.x1 + 7.0f * s, y - ss * 0.5f, FontRole::Small, pal.text, label,
                                  m.width(label, FontRole::Small), Item::Left, i));
    }
    if (L.any_masked) {
        Item hatch;
        hatch.kind = Item::Hatch;
        hatch.role = ItemRole::MaskedSwatch;
        hatch.box = L.swatch;
        items.push_back(hatch);
        items.push_back(outline_item(ItemRole::MaskedSwatch, L.swatch, pal.text_muted, 1.0f));
        items.push_back(text_item(ItemRole::MaskedLabel, L.swatch.x1 + 7.0f * s, L.swatch.y0 + (L.swatch.w() - ss) * 0.5f,
                                  FontRole::Small, pal.text, L.words.masked, m.width(L.words.masked, FontRole::Small)));
    }
    // An entry of two lines: the words beside the swatch, the second muted below them.
    auto entry_words = [&](const Box& swatch, ItemRole role, const std::string& first, const std::string& second) {
        const float x = swatch.x1 + 7.0f * s, y = swatch.y0 + (swatch.w() - ss) * 0.5f;
        items.push_back(text_item(role, x, y, FontRole::Small, pal.text, first, m.width(first, FontRole::Small), Item::Left, 0));
        items.push_back(text_item(role, x, y + ss + 2.0f * s, FontRole::Small, pal.text_muted, second, m.width(second, FontRole::Small),
                                  Item::Left, 1));
    };
    if (L.window_legend) {
        Item hatch;
        hatch.kind = Item::WindowHatch;
        hatch.role = ItemRole::WindowSwatch;
        hatch.box = L.window_swatch;
        items.push_back(hatch);
        items.push_back(outline_item(ItemRole::WindowSwatch, L.window_swatch, pal.text_muted, 1.0f));
        entry_words(L.window_swatch, ItemRole::WindowLabel, L.words.outside_window, printf_string(L.words.window_size, tr.window));
    }
    if (L.sink_hidden) {
        items.push_back(rect_item(ItemRole::SinkSwatch, L.sink_swatch, sink_fill(pal)));
        items.push_back(outline_item(ItemRole::SinkSwatch, L.sink_swatch, pal.text_muted, 1.0f));
        entry_words(L.sink_swatch, ItemRole::SinkLabel, L.words.sink_hidden, L.words.sink_renormalized);
    }
    return out;
}

}  // namespace attn
