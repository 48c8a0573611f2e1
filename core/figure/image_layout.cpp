// image_layout.cpp: see image_layout.hpp.
#include "image_layout.hpp"

#include "colormaps.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace attn {

int ImageLayout::hit(float x, float y) const {
    for (std::size_t i = 0; i < chips.size(); ++i)
        if (chips[i].contains(x, y)) return static_cast<int>(i);
    if (!grid.contains(x, y) || cell_w <= 0.0f || cell_h <= 0.0f) return -1;
    const int cols = static_cast<int>(std::lround(grid.w() / cell_w));
    const int r = static_cast<int>((y - grid.y0) / cell_h), c = std::min(static_cast<int>((x - grid.x0) / cell_w), cols - 1);
    return first + r * cols + c;
}

namespace {

std::string weight_text(float w) {
    char b[24];
    std::snprintf(b, sizeof b, w >= 0.1f ? "%.2f" : w >= 0.001f ? "%.3f" : "%.1e", static_cast<double>(w));
    return b;
}

}  // namespace

ImageLayout lay_out_image(const ImageInput& in, const TextMeasure& m) {
    ImageLayout L;
    const float s = in.scale, ss = m.size(FontRole::Small), pad = 12.0f * s;
    const FigurePalette& pal = figure_palette(in.dark);
    const Colormap& cmap = colormaps()[static_cast<std::size_t>(std::clamp(in.colormap, 0, static_cast<int>(colormaps().size()) - 1))];
    const int patches = in.rows * in.cols, T = static_cast<int>(in.tokens.size());
    L.first = std::max(T - patches, 0);
    if (patches <= 0 || in.picture_width <= 0 || in.picture_height <= 0 || in.patch <= 0) return L;
    const bool overlay = static_cast<int>(in.weights.size()) == T;
    for (int t = L.first; overlay && t < T; ++t) L.top = std::max(L.top, in.weights[static_cast<std::size_t>(t)]);
    const auto is_hidden = [&](int t) { return t < static_cast<int>(in.hidden.size()) && in.hidden[static_cast<std::size_t>(t)]; };
    const auto hatch_item = [](Box box, int token) {  // a hidden token: the masked cells' stripes over it
        Item it;
        it.kind = Item::Hatch, it.role = ItemRole::Knockout, it.box = box, it.index = token;
        return it;
    };
    auto text = [&](ItemRole role, float x, float y, FontRole f, Color c, const std::string& t, int index = -1) {
        L.items.push_back(text_item(role, x, y, f, c, t, m.width(t, f), Item::Left, index));
    };

    // [pass 1] the chips' column (the widest token and weight), the legend's, the picture between;
    // in a portrait box (a phone) the chips in rows above the picture, which takes the width
    float chip_w = 0.0f;
    for (int t = 0; t < L.first; ++t)
        chip_w = std::max({chip_w, m.width(token_text(in.tokens[static_cast<std::size_t>(t)]), FontRole::Small), m.width("0.000", FontRole::Small)});
    if (L.first > 0) chip_w += 14.0f * s;
    const float chip_h = 2.0f * ss + 10.0f * s, gap = 6.0f * s;
    const float legend_w = overlay ? std::max(m.width(in.legend, FontRole::Small), 40.0f * s + m.width("0.000", FontRole::Small)) + pad : 0.0f;
    const bool chips_above = L.first > 0 && in.box.w() < in.box.h();
    const int per_row = std::max(1, static_cast<int>((in.box.w() - 2.0f * pad + gap) / (chip_w + gap)));
    const float chips_h = chips_above ? static_cast<float>((L.first + per_row - 1) / per_row) * (chip_h + gap) : 0.0f;
    const float caption_h = in.caption.empty() ? 0.0f : 2.0f * ss + 10.0f * s;
    const Box area{in.box.x0 + pad + (chip_w > 0.0f && !chips_above ? chip_w + pad : 0.0f), in.box.y0 + pad + chips_h,
                   in.box.x1 - pad - legend_w, in.box.y1 - pad - caption_h};
    const float k = std::max(std::min(area.w() / static_cast<float>(in.picture_width), area.h() / static_cast<float>(in.picture_height)), 0.0f);
    const float pw = k * static_cast<float>(in.picture_width), ph = k * static_cast<float>(in.picture_height);
    L.picture = {area.x0 + (area.w() - pw) * 0.5f, area.y0, area.x0 + (area.w() - pw) * 0.5f + pw, area.y0 + ph};
    L.cell_w = L.cell_h = k * static_cast<float>(in.patch);
    L.grid = {L.picture.x0, L.picture.y0, L.picture.x0 + L.cell_w * static_cast<float>(in.cols), L.picture.y0 + L.cell_h * static_cast<float>(in.rows)};

    // [pass 2] the overlay: opacity 0.15 … 0.8 and the colormap's colour by weight / top
    const auto shade = [&](float w) {
        const float t = L.top > 0.0f ? std::clamp(w / L.top, 0.0f, 1.0f) : 0.0f;
        const std::array<float, 3> rgb = colormap_sample(cmap, t);
        return Color{rgb[0], rgb[1], rgb[2], 0.15f + 0.65f * t};
    };
    for (int r = 0; r < in.rows; ++r)
        for (int c = 0; c < in.cols; ++c) {
            const int token = L.first + r * in.cols + c;
            const Box cell{L.grid.x0 + c * L.cell_w, L.grid.y0 + r * L.cell_h, L.grid.x0 + (c + 1) * L.cell_w, L.grid.y0 + (r + 1) * L.cell_h};
            if (is_hidden(token)) L.items.push_back(hatch_item(cell, token));
            else if (overlay) L.items.push_back(rect_item(ItemRole::Other, cell, shade(in.weights[static_cast<std::size_t>(token)]), 0.0f, token));
        }
    if (L.cell_w >= 6.0f * s) {  // the grid's lines, where they leave room for the picture
        const Color line{pal.text.r, pal.text.g, pal.text.b, 0.18f};
        for (int c = 1; c < in.cols; ++c)
            L.items.push_back(segment_item(ItemRole::Other, L.grid.x0 + c * L.cell_w, L.grid.y0, L.grid.x0 + c * L.cell_w, L.grid.y1, line, 1.0f));
        for (int r = 1; r < in.rows; ++r)
            L.items.push_back(segment_item(ItemRole::Other, L.grid.x0, L.grid.y0 + r * L.cell_h, L.grid.x1, L.grid.y0 + r * L.cell_h, line, 1.0f));
    }
    L.items.push_back(outline_item(ItemRole::Other, L.picture, pal.text_muted, 1.0f));
    if (in.query >= L.first && in.query < T) {  // the query's patch, outlined twice (dark and light: any picture)
        const int p = in.query - L.first, r = p / in.cols, c = p % in.cols;
        const Box cell{L.grid.x0 + c * L.cell_w, L.grid.y0 + r * L.cell_h, L.grid.x0 + (c + 1) * L.cell_w, L.grid.y0 + (r + 1) * L.cell_h};
        L.items.push_back(outline_item(ItemRole::Selection, cell, Color{0, 0, 0, 1}, 4.0f * s, 0.0f, in.query));
        L.items.push_back(outline_item(ItemRole::Selection, cell, Color{1, 1, 1, 1}, 2.0f * s, 0.0f, in.query));
    }

    // [pass 3] the chips: the token, its weight, its colour (the query's outlined); a column left
    // of the picture, or rows above it
    for (int t = 0; t < L.first; ++t) {
        const float x = in.box.x0 + pad + (chips_above ? static_cast<float>(t % per_row) * (chip_w + gap) : 0.0f);
        const float y = chips_above ? in.box.y0 + pad + static_cast<float>(t / per_row) * (chip_h + gap)
                                    : L.picture.y0 + static_cast<float>(t) * (chip_h + gap);
        const Box chip{x, y, x + chip_w, y + chip_h};
        L.chips.push_back(chip);
        const float w = overlay ? in.weights[static_cast<std::size_t>(t)] : 0.0f;
        Color fill = pal.token_fill;
        if (overlay) {
            const std::array<float, 3> rgb = colormap_sample(cmap, L.top > 0.0f ? std::clamp(w / L.top, 0.0f, 1.0f) : 0.0f);
            fill = {rgb[0], rgb[1], rgb[2], 1.0f};
        }
        L.items.push_back(rect_item(ItemRole::TokenKey, chip, fill, 4.0f * s, t));
        if (is_hidden(t)) L.items.push_back(hatch_item(chip, t));
        L.items.push_back(outline_item(t == in.query ? ItemRole::Selection : ItemRole::Other, chip, t == in.query ? pal.accent : pal.token_outline,
                                       t == in.query ? 2.0f * s : 1.0f, 4.0f * s, t));
        const Color ink = overlay ? ink_on_color({fill.r, fill.g, fill.b}) : pal.text;
        text(ItemRole::TokenLabel, chip.x0 + 7.0f * s, chip.y0 + 4.0f * s, FontRole::Small, ink, token_text(in.tokens[static_cast<std::size_t>(t)]), t);
        if (overlay) text(ItemRole::Number, chip.x0 + 7.0f * s, chip.y0 + 4.0f * s + ss, FontRole::Small, ink, weight_text(w), t);
    }
    if (overlay) {  // the legend: the colormap from 0 to the largest weight on a patch
        const float lx = in.box.x1 - legend_w + 8.0f * s, bar_w = 12.0f * s;
        const float ly = L.picture.y0 + 1.5f * ss + 6.0f * s, bar_h = std::clamp(ph - 2.0f * ss, 60.0f * s, 200.0f * s);
        text(ItemRole::LegendTitle, lx, L.picture.y0, FontRole::Small, pal.text_muted, in.legend);
        Item bar;
        bar.kind = Item::Colormap, bar.role = ItemRole::LegendBar, bar.box = {lx, ly, lx + bar_w, ly + bar_h};
        L.items.push_back(bar);
        L.items.push_back(outline_item(ItemRole::LegendBar, bar.box, pal.text_muted, 1.0f));
        const std::string labels[2] = {"0", weight_text(L.top)};
        for (int t = 0; t < 2; ++t) {
            const float y = t == 0 ? bar.box.y1 : bar.box.y0;
            L.items.push_back(segment_item(ItemRole::LegendTick, bar.box.x1, y, bar.box.x1 + 4.0f * s, y, pal.text_muted, 1.0f, t));
            text(ItemRole::LegendLabel, bar.box.x1 + 7.0f * s, y - ss * 0.5f, FontRole::Small, pal.text, labels[t], t);
        }
    }
    if (!in.caption.empty()) {
        Item cap = text_item(ItemRole::Caption, L.picture.x0, L.picture.y1 + 8.0f * s, FontRole::Small, pal.text_muted, in.caption,
                             m.width(in.caption, FontRole::Small));
        cap.wrap = std::max(in.box.x1 - pad - L.picture.x0, 120.0f * s);
        L.items.push_back(cap);
    }
    return L;
}

}  // namespace attn
