// image_layout.cpp: see image_layout.hpp.
#include "image_layout.hpp"

#include "colormaps.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace attn {

int ImageLayout::hit(float x, float y) const {
    for (std::size_t i = 0; i < chips.size(); ++i)
        if (chips[i].contains(x, y)) return chip_tokens[i];
    const auto in_grid = [&](const Box& g, float cw, float ch, const std::vector<int>& tokens) {
        if (!g.contains(x, y) || cw <= 0.0f || ch <= 0.0f) return -1;
        const int cols = static_cast<int>(std::lround(g.w() / cw)), rows = static_cast<int>(std::lround(g.h() / ch));
        const int r = std::min(static_cast<int>((y - g.y0) / ch), rows - 1), c = std::min(static_cast<int>((x - g.x0) / cw), cols - 1);
        return static_cast<std::size_t>(r * cols + c) < tokens.size() ? tokens[static_cast<std::size_t>(r * cols + c)] : -1;
    };
    if (const int t = in_grid(global, global_cell, global_cell, global_cells); t >= 0) return t;
    return in_grid(grid, cell_w, cell_h, cells);
}

namespace {

// As wide as "0.000" at most (the chips' room for it): none is 0, a trace "1e-05".
std::string weight_text(float w) {
    if (w == 0.0f) return "0";
    char b[24];
    std::snprintf(b, sizeof b, w >= 0.1f ? "%.2f" : w >= 0.001f ? "%.3f" : "%.0e", static_cast<double>(w));
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
    // Which token each cell and chip is: the input's, or a vision model's (the last rows × cols
    // tokens the patches, those before them the chips)
    L.cells = in.cells, L.chip_tokens = in.chip_tokens, L.global_cells = in.global_cells;
    const bool given = static_cast<int>(in.cells.size()) == patches;
    if (!given) {
        L.cells.resize(static_cast<std::size_t>(patches));
        for (int i = 0; i < patches; ++i) L.cells[static_cast<std::size_t>(i)] = L.first + i;
        L.chip_tokens.resize(static_cast<std::size_t>(L.first));
        for (int t = 0; t < L.first; ++t) L.chip_tokens[static_cast<std::size_t>(t)] = t;
        L.global_cells.clear();
    }
    const auto valid = [&](int t) { return t >= 0 && t < T; };
    std::erase_if(L.chip_tokens, [&](int t) { return !valid(t); });
    const bool global = given && in.global_size > 0 && in.global_rows > 0 && static_cast<int>(L.global_cells.size()) == in.global_rows * in.global_rows;
    if (!global) L.global_cells.clear();
    const bool overlay = static_cast<int>(in.weights.size()) == T;
    for (const std::vector<int>* cells : {&L.cells, &L.global_cells})
        for (int t : *cells)
            if (overlay && valid(t)) L.top = std::max(L.top, in.weights[static_cast<std::size_t>(t)]);
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
    // in a portrait box (a phone) the chips in rows above the picture, which takes the width; a
    // vision-language model's text in a strip of rows under the picture; its global view beside
    // the picture, a third of the width
    const int n_chips = static_cast<int>(L.chip_tokens.size());
    float chip_w = 0.0f;
    for (int t : L.chip_tokens)
        chip_w = std::max({chip_w, m.width(token_text(in.tokens[static_cast<std::size_t>(t)]), FontRole::Small), m.width("0.000", FontRole::Small)});
    if (n_chips > 0) chip_w += 14.0f * s;
    const float chip_h = 2.0f * ss + 10.0f * s, gap = 6.0f * s;
    const float legend_w = overlay ? std::max(m.width(in.legend, FontRole::Small), 40.0f * s + m.width("0.000", FontRole::Small)) + pad : 0.0f;
    const bool strip = given && n_chips > 0, chips_above = !strip && n_chips > 0 && in.box.w() < in.box.h();
    const bool rows_of_chips = strip || chips_above;
    const float rows_w = in.box.w() - 2.0f * pad - (strip ? legend_w : 0.0f);
    // A strip's chips flow as wide as each token is; the others are one width
    const auto chip_width = [&](int t) {
        return strip ? std::max(m.width(token_text(in.tokens[static_cast<std::size_t>(t)]), FontRole::Small), m.width("0.000", FontRole::Small)) + 14.0f * s
                     : chip_w;
    };
    // Each chip's x from its row's start and its row; a strip takes at most 40 % of the height: past
    // that its first chips give way to a note of how many (the text's end, where the question is, stays)
    std::vector<std::pair<float, int>> placed;
    const std::string earlier_note = "…";
    const auto place = [&](std::size_t from) {
        placed.clear();
        float x = from > 0 ? m.width(earlier_note + std::to_string(from), FontRole::Small) + gap : 0.0f;
        int row = 0;
        for (std::size_t i = from; i < L.chip_tokens.size(); ++i) {
            const float w = chip_width(L.chip_tokens[i]);
            if (rows_of_chips && x > 0.0f && x + w > rows_w) x = 0.0f, ++row;
            placed.push_back({rows_of_chips ? x : 0.0f, rows_of_chips ? row : static_cast<int>(placed.size())});
            x += w + gap;
        }
        return placed.empty() ? 0 : placed.back().second + 1;
    };
    std::size_t dropped = 0;
    const int most_rows = std::max(1, static_cast<int>(0.4f * in.box.h() / (chip_h + gap)));
    for (int rows = place(0); strip && rows > most_rows && dropped + 1 < L.chip_tokens.size(); rows = place(++dropped)) {
    }
    L.chip_tokens.erase(L.chip_tokens.begin(), L.chip_tokens.begin() + static_cast<std::ptrdiff_t>(dropped));
    const int n_shown = static_cast<int>(L.chip_tokens.size());
    const float chips_h = rows_of_chips && n_shown > 0 ? static_cast<float>(placed.back().second + 1) * (chip_h + gap) : 0.0f;
    // The caption under the picture, two lines (a strip's: from the box's left, as many lines as
    // its words need across the box)
    const float strip_caption_w = std::max(in.box.w() - 2.0f * pad, 120.0f * s);
    const float caption_lines = std::max(1.0f, std::ceil(m.width(in.caption, FontRole::Small) / (0.9f * strip_caption_w)));
    const float caption_h = in.caption.empty() ? 0.0f : (strip ? caption_lines * 1.3f : 2.0f) * ss + 10.0f * s;
    const Box area{in.box.x0 + pad + (chip_w > 0.0f && !rows_of_chips ? chip_w + pad : 0.0f), in.box.y0 + pad + (chips_above ? chips_h : 0.0f),
                   in.box.x1 - pad - legend_w, in.box.y1 - pad - caption_h - (strip ? chips_h + gap : 0.0f)};
    const float global_w = global ? std::min(area.w() / 3.0f, area.h()) : 0.0f;
    const float k = std::max(std::min((area.w() - (global ? global_w + pad : 0.0f)) / static_cast<float>(in.picture_width),
                                      area.h() / static_cast<float>(in.picture_height)), 0.0f);
    const float pw = k * static_cast<float>(in.picture_width), ph = k * static_cast<float>(in.picture_height);
    const float used_w = pw + (global ? pad + global_w : 0.0f);
    L.picture = {area.x0 + (area.w() - used_w) * 0.5f, area.y0, area.x0 + (area.w() - used_w) * 0.5f + pw, area.y0 + ph};
    L.cell_w = L.cell_h = k * static_cast<float>(in.patch);
    L.grid = {L.picture.x0, L.picture.y0, L.picture.x0 + L.cell_w * static_cast<float>(in.cols), L.picture.y0 + L.cell_h * static_cast<float>(in.rows)};
    if (global) {
        const float side = std::min(global_w, ph);
        L.global = {L.picture.x1 + pad, L.picture.y0 + ss + 4.0f * s, L.picture.x1 + pad + side, L.picture.y0 + ss + 4.0f * s + side};
        L.global_cell = side / static_cast<float>(in.global_rows);
    }

    // [pass 2] the overlay: opacity 0.15 … 0.8 and the colormap's colour by weight / top
    const auto shade = [&](float w) {
        const float t = L.top > 0.0f ? std::clamp(w / L.top, 0.0f, 1.0f) : 0.0f;
        const std::array<float, 3> rgb = colormap_sample(cmap, t);
        return Color{rgb[0], rgb[1], rgb[2], 0.15f + 0.65f * t};
    };
    // One grid's cells (rows × cols of `cell` over `g`, their tokens): the overlay or a hidden
    // token's stripes, the lines between cells where they leave room, the query's cell outlined
    // twice (dark and light: any picture)
    const auto draw_grid = [&](const Box& g, float cell, int rows, int cols, const std::vector<int>& tokens) {
        for (int r = 0; r < rows; ++r)
            for (int c = 0; c < cols; ++c) {
                const int token = tokens[static_cast<std::size_t>(r * cols + c)];
                const Box box{g.x0 + c * cell, g.y0 + r * cell, g.x0 + (c + 1) * cell, g.y0 + (r + 1) * cell};
                if (!valid(token)) continue;
                if (is_hidden(token)) L.items.push_back(hatch_item(box, token));
                else if (overlay) L.items.push_back(rect_item(ItemRole::Other, box, shade(in.weights[static_cast<std::size_t>(token)]), 0.0f, token));
            }
        if (cell >= 6.0f * s) {
            const Color line{pal.text.r, pal.text.g, pal.text.b, 0.18f};
            for (int c = 1; c < cols; ++c) L.items.push_back(segment_item(ItemRole::Other, g.x0 + c * cell, g.y0, g.x0 + c * cell, g.y1, line, 1.0f));
            for (int r = 1; r < rows; ++r) L.items.push_back(segment_item(ItemRole::Other, g.x0, g.y0 + r * cell, g.x1, g.y0 + r * cell, line, 1.0f));
        }
        for (int i = 0; i < rows * cols; ++i)
            if (tokens[static_cast<std::size_t>(i)] == in.query) {
                const int r = i / cols, c = i % cols;
                const Box box{g.x0 + c * cell, g.y0 + r * cell, g.x0 + (c + 1) * cell, g.y0 + (r + 1) * cell};
                L.items.push_back(outline_item(ItemRole::Selection, box, Color{0, 0, 0, 1}, 4.0f * s, 0.0f, in.query));
                L.items.push_back(outline_item(ItemRole::Selection, box, Color{1, 1, 1, 1}, 2.0f * s, 0.0f, in.query));
            }
    };
    draw_grid(L.grid, L.cell_w, in.rows, in.cols, L.cells);
    L.items.push_back(outline_item(ItemRole::Other, L.picture, pal.text_muted, 1.0f));
    if (in.tiles_rows > 0 && in.tiles_cols > 0) {  // the tiles' borders, over the cells' lines
        for (int c = 1; c < in.tiles_cols; ++c) {
            const float x = L.picture.x0 + pw * static_cast<float>(c) / static_cast<float>(in.tiles_cols);
            L.items.push_back(segment_item(ItemRole::Other, x, L.picture.y0, x, L.picture.y1, pal.text_muted, 1.5f * s));
        }
        for (int r = 1; r < in.tiles_rows; ++r) {
            const float y = L.picture.y0 + ph * static_cast<float>(r) / static_cast<float>(in.tiles_rows);
            L.items.push_back(segment_item(ItemRole::Other, L.picture.x0, y, L.picture.x1, y, pal.text_muted, 1.5f * s));
        }
    }
    if (global) {
        draw_grid(L.global, L.global_cell, in.global_rows, in.global_rows, L.global_cells);
        L.items.push_back(outline_item(ItemRole::Other, L.global, pal.text_muted, 1.0f));
        text(ItemRole::Caption, L.global.x0, L.picture.y0, FontRole::Small, pal.text_muted, in.global_label);
    }

    // [pass 3] the chips: the token, its weight, its colour (the query's outlined); a column left
    // of the picture, rows above it (a phone), or the strip under it
    const float strip_y = L.picture.y1 + gap + (in.caption.empty() ? 0.0f : caption_h);
    if (dropped > 0)  // the strip's first chips that gave way
        text(ItemRole::Caption, in.box.x0 + pad, strip_y + 0.5f * (chip_h - ss), FontRole::Small, pal.text_muted, earlier_note + std::to_string(dropped));
    for (int i = 0; i < n_shown; ++i) {
        const int t = L.chip_tokens[static_cast<std::size_t>(i)];
        const auto [cx, row] = placed[static_cast<std::size_t>(i)];
        const float x = in.box.x0 + pad + cx;
        const float y = strip ? strip_y + static_cast<float>(row) * (chip_h + gap)
                        : chips_above ? in.box.y0 + pad + static_cast<float>(row) * (chip_h + gap)
                                      : L.picture.y0 + static_cast<float>(row) * (chip_h + gap);
        const Box chip{x, y, x + chip_width(t), y + chip_h};
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
        Item cap = text_item(ItemRole::Caption, strip ? in.box.x0 + pad : L.picture.x0, L.picture.y1 + 8.0f * s, FontRole::Small, pal.text_muted, in.caption,
                             m.width(in.caption, FontRole::Small));
        cap.wrap = strip ? strip_caption_w : std::max(in.box.x1 - pad - L.picture.x0, 120.0f * s);
        L.items.push_back(cap);
    }
    return L;
}

}  // namespace attn
