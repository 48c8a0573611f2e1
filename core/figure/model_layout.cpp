// model_layout.cpp: the model view's layout (see model_layout.hpp). The numbers are the ones
// web/ui/model_view.cpp computed inline before it drew from this: s is the UI scale.
//
// [SECTION] Geometry
// [SECTION] Items
#include "model_layout.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace attn {
namespace {

std::string layer_label(const ModelWords& words, int layer) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, words.layer.c_str(), layer + 1);
    return buffer;
}

}  // namespace

// [SECTION] Geometry -----------------------------------------------------------------------------

ModelLayout lay_out_model(const ModelInput& in, const TextMeasure& m) {
    ModelLayout L;
    const float sc = in.scale, ss = m.size(FontRole::Small);
    const int Ly = std::max(in.layers, 1), H = std::max(in.heads, 1);
    L.layers = in.layers, L.heads = in.heads, L.s = sc, L.view = in.view;
    // The widest row label.
    for (int l = 0; l < in.layers; ++l) L.label_w = std::max(L.label_w, m.width(layer_label(in.words, l), FontRole::Small));
    L.label_w += 12.0f * sc;
    L.margin = 16.0f * sc;
    L.header_h = 2.0f * ss + 14.0f * sc;  // caption, then head numbers
    size_t tag_lines = 0;
    for (const std::vector<HeadTag>& t : in.tags) tag_lines = std::max(tag_lines, t.size());
    L.tag_h = tag_lines ? static_cast<float>(tag_lines) * (ss + 2.0f * sc) + 3.0f * sc : 0.0f;
    // The colour scale: bar and swatches 12 wide, then their labels (the widest of "masked", the
    // window's, the groups'; the scale's 0 … 1 fit in 72 px); beside the grid 22 px off it.
    // Grouped-query attention: query heads per K/V head, when the K/V heads divide the heads.
    const bool grouped = in.kv_heads > 0 && in.kv_heads < H && H % in.kv_heads == 0;
    L.group = grouped ? H / in.kv_heads : 1;
    const int groups = H / L.group;
    float words_w = m.width(in.words.masked, FontRole::Small);
    if (in.window) words_w = std::max(words_w, m.width(in.words.outside_window, FontRole::Small));
    if (grouped) words_w = std::max(words_w, m.width(in.words.kv_shared, FontRole::Small));
    if (in.rows_scaled) words_w = std::max(words_w, m.width(in.words.rows_scaled, FontRole::Small) - 7.0f * sc);
    L.legend_w = std::max(72.0f * sc, (22.0f + 12.0f + 7.0f + 8.0f) * sc + words_w);
    // A frame 5.5 px out from its thumbnails, clear of the accent around the shown map (3 px
    // out, 2.5 wide); two frames 4 px apart at least.
    L.frame_pad = grouped ? 5.5f * sc : 0.0f;
    const float kMinCell = 30.0f * sc, kMaxCell = 150.0f * sc;
    const float legend_h = ss + 8.0f * sc + 60.0f * sc + 14.0f * sc + 3.0f * (12.0f + 12.0f) * sc;  // under the grid: a short bar, the swatches
    // The thumbnail's side for a grid in avail_w × avail_h (the gaps follow the side's room).
    const auto side = [&](float avail_w, float avail_h) {
        L.gap = std::clamp(std::min(avail_w / H, avail_h / Ly) * 0.08f, 2.0f * sc, 8.0f * sc);
        L.group_gap = L.row_gap = grouped ? std::max(L.gap, 2.0f * L.frame_pad + 4.0f * sc) : L.gap;
        const float gaps_w = L.gap * (H - groups) + L.group_gap * (groups - 1), gaps_h = (L.row_gap + L.tag_h) * (Ly - 1) + L.tag_h;
        return std::clamp(std::min((avail_w - gaps_w) / H, (avail_h - gaps_h) / Ly), kMinCell, kMaxCell);
    };
    const float beside_w = std::max(in.view.w() - 2.0f * L.margin - L.label_w - L.legend_w, 10.0f);
    const float beside_h = std::max(in.view.h() - 2.0f * L.margin - L.header_h, 10.0f);
    const float below_w = std::max(in.view.w() - 2.0f * L.margin - L.label_w, 10.0f), below_h = std::max(beside_h - legend_h, 10.0f);
    // Under the grid when the view is narrow and that makes the thumbnails a quarter bigger.
    L.legend_below = in.view.w() < 600.0f * sc && side(below_w, below_h) > 1.25f * side(beside_w, beside_h);
    const float avail_w = L.legend_below ? below_w : beside_w, avail_h = L.legend_below ? below_h : beside_h;
    L.cell = side(avail_w, avail_h);
    const float gaps_w = L.gap * (H - groups) + L.group_gap * (groups - 1), gaps_h = (L.row_gap + L.tag_h) * (Ly - 1) + L.tag_h;
    const float grid_w = H * L.cell + gaps_w, grid_h = Ly * L.cell + gaps_h;
    const float spare_w = std::max(avail_w - grid_w, 0.0f), spare_h = std::max(avail_h - grid_h, 0.0f);
    const float gx0 = in.x0 + L.margin + L.label_w + spare_w * 0.5f;
    const float gy0 = in.y0 + L.margin + L.header_h + spare_h * 0.3f;
    L.grid = {gx0, gy0, gx0 + grid_w, gy0 + grid_h};
    L.content_w = L.margin * 2.0f + L.label_w + grid_w + (L.legend_below ? 0.0f : L.legend_w);
    L.content_h = L.margin * 2.0f + L.header_h + grid_h + (L.legend_below ? legend_h : 0.0f);
    // Legend: the weight scale (fixed 0..1, as in the heatmap) and the swatches below it.
    const float bar_x = L.legend_below ? gx0 : gx0 + grid_w + 22.0f * sc, bar_w = 12.0f * sc;
    const float top = L.legend_below ? gy0 + grid_h + 18.0f * sc : gy0;
    const float bar_y = top + ss + 8.0f * sc;
    const float bar_h = L.legend_below ? 60.0f * sc : std::clamp(grid_h - ss - 8.0f * sc, 60.0f * sc, 220.0f * sc);
    L.bar = {bar_x, bar_y, bar_x + bar_w, bar_y + bar_h};
    // The swatches: under the bar, or beside it (right of its labels) when the legend is under the grid.
    const float sx = L.legend_below ? bar_x + 72.0f * sc : bar_x;
    float y = L.legend_below ? bar_y : bar_y + bar_h + 14.0f * sc;
    L.swatch = {sx, y, sx + bar_w, y + bar_w};
    if (in.causal) y += bar_w + 12.0f * sc;
    L.window_swatch = {sx, y, sx + bar_w, y + bar_w};
    if (in.window) y += bar_w + 12.0f * sc;
    L.group_swatch = {sx, y, sx + bar_w, y + bar_w};
    return L;
}

ModelLayout::Hit ModelLayout::hit(float x, float y) const {
    // Across: the group, then the head within it (the wider gap between groups is no thumbnail).
    const float group_pitch = group * (cell + gap) - gap + group_gap;
    const int g = static_cast<int>(std::floor((x - grid.x0) / group_pitch));
    const int i = static_cast<int>(std::floor((x - grid.x0 - g * group_pitch) / (cell + gap)));
    const int h = g * group + i;
    const int l = static_cast<int>(std::floor((y - grid.y0) / (cell + tag_h + row_gap)));
    if (g < 0 || i < 0 || i >= group || h >= heads || l < 0 || l >= layers) return {};
    const Box b = thumb(l, h);
    return x >= b.x0 && x < b.x1 && y < b.y1 ? Hit{l, h} : Hit{};
}

// [SECTION] Items --------------------------------------------------------------------------------

std::vector<Item> model_items(const ModelLayout& L, const ModelInput& in, const ModelLayout::Hit& hover, const TextMeasure& m) {
    std::vector<Item> items;
    const float sc = L.s, ss = m.size(FontRole::Small);
    const FigurePalette& pal = figure_palette(in.dark);
    const Box& g = L.grid;
    auto small_text = [&](ItemRole role, float x, float y, Color c, const std::string& t, int index = -1) {
        items.push_back(text_item(role, x, y, FontRole::Small, c, t, m.width(t, FontRole::Small), Item::Left, index));
    };
    // A head's tags: a line each under its thumbnail, the brief form where the full one is too wide.
    auto add_tags = [&](const Box& b, const std::vector<HeadTag>& tags, int index) {
        float y = b.y1 + 2.0f * sc;
        for (const HeadTag& tag : tags) {
            const std::string& t = m.width(tag.text, FontRole::Small) <= L.cell ? tag.text : tag.brief;
            if (const float w = m.width(t, FontRole::Small); !t.empty() && w <= L.cell)
                items.push_back(text_item(ItemRole::HeadTag, b.x0, y, FontRole::Small, pal.text, t, w, Item::Left, index));
            y += ss + 2.0f * sc;
        }
    };
    // Captions and labels.
    small_text(ItemRole::Caption, g.x0, g.y0 - L.header_h + 2.0f * sc, pal.text_muted, in.words.heads);
    const float lc_w = m.width(in.words.layers, FontRole::Small);
    small_text(ItemRole::Caption, g.x0 - lc_w - 10.0f * sc, g.y0 - ss - 6.0f * sc, pal.text_muted, in.words.layers);
    const bool one_head = in.show == ModelShow::Head;
    auto on = [](const std::vector<bool>& v, int i) { return i >= 0 && i < static_cast<int>(v.size()) && v[static_cast<size_t>(i)]; };
    for (int h = 0; h < L.heads; ++h) {
        const std::string label = std::to_string(h + 1);
        const float w = m.width(label, FontRole::Small);
        const Box b = L.thumb(0, h);
        const bool chosen = one_head ? h == in.head : on(in.heads_on, h);
        small_text(ItemRole::ColLabel, b.x0 + (L.cell - w) * 0.5f, g.y0 - ss - 6.0f * sc, chosen ? pal.text : pal.text_muted, label, h);
    }
    for (int l = 0; l < L.layers; ++l) {
        const std::string label = layer_label(in.words, l);
        const float w = m.width(label, FontRole::Small);
        const Box b = L.thumb(l, 0);
        const bool chosen = in.show == ModelShow::Aggregate ? on(in.layers_on, l) : l == in.layer;
        small_text(ItemRole::RowLabel, g.x0 - w - 10.0f * sc, b.y0 + (L.cell - ss) * 0.5f, chosen ? pal.text : pal.text_muted, label, l);
    }
    // Thumbnails: one textured quad each (the GPU's), veiled when outside the aggregate.
    Color veil = pal.background;
    veil.a = 170.0f / 255.0f;
    const Color border{pal.grid.r, pal.grid.g, pal.grid.b, 1.0f};
    for (int l = 0; l < L.layers; ++l) {
        if (!L.near_view(l)) continue;  // scrolled out of sight
        for (int h = 0; h < L.heads; ++h) {
            const Box b = L.thumb(l, h);
            Item thumb;
            thumb.kind = Item::Grid, thumb.box = b, thumb.index = l * L.heads + h;
            items.push_back(thumb);
            const bool in_aggregate = in.show != ModelShow::Aggregate || (on(in.layers_on, l) && on(in.heads_on, h));
            if (!in_aggregate) items.push_back(rect_item(ItemRole::Other, b, veil));
            const size_t t = static_cast<size_t>(l * L.heads + h);
            if (on(in.off, static_cast<int>(t))) {  // knocked out: veiled, crossed corner to corner
                const float inset = 0.18f * L.cell;
                items.push_back(rect_item(ItemRole::Knockout, b, veil, 0.0f, thumb.index));
                items.push_back(segment_item(ItemRole::Knockout, b.x0 + inset, b.y0 + inset, b.x1 - inset, b.y1 - inset, pal.text, 2.0f * sc, thumb.index));
                items.push_back(segment_item(ItemRole::Knockout, b.x1 - inset, b.y0 + inset, b.x0 + inset, b.y1 - inset, pal.text, 2.0f * sc, thumb.index));
            }
            items.push_back(outline_item(ItemRole::Other, b, border, 1.0f));
            if (t < in.tags.size()) add_tags(b, in.tags[t], thumb.index);
        }
    }
    if (L.group > 1) {  // the query heads of each K/V head, framed in every row
        const Color frame = pal.text_muted;
        const int groups = L.heads / L.group;
        for (int l = 0; l < L.layers; ++l) {
            if (!L.near_view(l)) continue;
            for (int g = 0; g < groups; ++g)
                items.push_back(outline_item(ItemRole::GroupFrame, L.group_frame(l, g), frame, 1.25f * sc, 4.0f * sc, l * groups + g));
        }
    }
    if (one_head || in.show == ModelShow::Rollout) {
        // The map the other views show (for rollout: the layer it is rolled out to).
        const int h0 = one_head ? in.head : 0, h1 = one_head ? in.head : L.heads - 1;
        const Box a = L.thumb(in.layer, h0), b = L.thumb(in.layer, h1);
        items.push_back(outline_item(ItemRole::Selection, {a.x0 - 3.0f * sc, a.y0 - 3.0f * sc, b.x1 + 3.0f * sc, b.y1 + 3.0f * sc},
                                     pal.accent, 2.5f * sc, 3.0f * sc));
    }
    if (hover.layer >= 0) {
        const Box a = L.thumb(hover.layer, hover.head);
        items.push_back(outline_item(ItemRole::Hover, {a.x0 - 1.5f * sc, a.y0 - 1.5f * sc, a.x1 + 1.5f * sc, a.y1 + 1.5f * sc},
                                     pal.outline, 2.0f * sc, 2.0f * sc));
    }
    // Legend.
    const Box& bar = L.bar;
    small_text(ItemRole::LegendTitle, bar.x0, bar.y0 - ss - 8.0f * sc, pal.text_muted, in.words.weight);
    Item scale;
    scale.kind = Item::Colormap, scale.role = ItemRole::LegendBar, scale.box = bar;
    items.push_back(scale);
    items.push_back(outline_item(ItemRole::LegendBar, bar, pal.text_muted, 1.0f));
    for (int i = 0; i <= 2; ++i) {
        const float y = bar.y0 + bar.h() * (1.0f - i * 0.5f);
        items.push_back(segment_item(ItemRole::LegendTick, bar.x1, y, bar.x1 + 4.0f * sc, y, pal.text_muted, 1.0f, i));
        small_text(ItemRole::LegendLabel, bar.x1 + 7.0f * sc, y - ss * 0.5f, pal.text,
                   i == 0 ? "0" : i == 1 ? (in.rows_scaled ? "" : "0.5") : in.rows_scaled ? in.words.rows_scaled : "1", i);
    }
    if (in.causal) {
        Item hatch;
        hatch.kind = Item::Hatch, hatch.role = ItemRole::MaskedSwatch, hatch.box = L.swatch;
        items.push_back(hatch);
        items.push_back(outline_item(ItemRole::MaskedSwatch, L.swatch, pal.text_muted, 1.0f));
        small_text(ItemRole::MaskedLabel, L.swatch.x1 + 7.0f * sc, L.swatch.y0 + (L.swatch.w() - ss) * 0.5f, pal.text, in.words.masked);
    }
    if (in.window) {  // the heatmap's warm stripes, the other way
        Item stripes;
        stripes.kind = Item::WindowHatch, stripes.role = ItemRole::WindowSwatch, stripes.box = L.window_swatch;
        items.push_back(stripes);
        items.push_back(outline_item(ItemRole::WindowSwatch, L.window_swatch, pal.text_muted, 1.0f));
        small_text(ItemRole::WindowLabel, L.window_swatch.x1 + 7.0f * sc, L.window_swatch.y0 + (L.window_swatch.w() - ss) * 0.5f, pal.text,
                   in.words.outside_window);
    }
    if (L.group > 1) {
        const Box& b = L.group_swatch;
        items.push_back(outline_item(ItemRole::GroupFrame, b, pal.text_muted, 1.25f * sc, 3.0f * sc));
        small_text(ItemRole::GroupFrame, b.x1 + 7.0f * sc, b.y0 + (b.w() - ss) * 0.5f, pal.text, in.words.kv_shared);
    }
    return items;
}

}  // namespace attn
