// why_layout.cpp: see why_layout.hpp.
#include "why_layout.hpp"

#include "colormaps.hpp"
#include "palette.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace attn {

namespace {

// `text` cut at a character to fit `width`, with "…" where it was cut.
std::string fitted(std::string text, float width, const TextMeasure& m, FontRole role) {
    if (m.width(text, role) <= width) return text;
    const std::string ellipsis = "\xe2\x80\xa6";
    while (!text.empty() && m.width(text + ellipsis, role) > width) {
        text.pop_back();
        while (!text.empty() && (static_cast<unsigned char>(text.back()) & 0xC0) == 0x80) text.pop_back();  // a whole character
    }
    return text + ellipsis;
}

}  // namespace

WhyLayout::Cell WhyLayout::hit(float x, float y) const {
    for (const Cell& c : cells)
        if (c.box.contains(x, y)) return c;
    return {};
}

WhyLayout lay_out_why(const WhyInput& in, const TextMeasure& m) {
    WhyLayout L;
    const float s = in.scale, fs = m.size(FontRole::Body), gap = 2.0f * s;
    const FigurePalette& pal = figure_palette(in.dark);
    const Colormap& cmap = colormaps()[static_cast<std::size_t>(std::clamp(in.colormap, 0, static_cast<int>(colormaps().size()) - 1))];
    const float width = std::max(in.box.w(), 1.0f);
    float y = in.box.y0;
    for (int g = 0; g < static_cast<int>(in.grids.size()); ++g) {
        const WhyGrid& grid = in.grids[static_cast<std::size_t>(g)];
        const bool tokens = !grid.texts.empty();
        // 1. the caption, wrapped
        if (!grid.caption.empty()) {
            L.items.push_back(text_item(ItemRole::Caption, in.box.x0, y, FontRole::Body, pal.text_muted, grid.caption,
                                        m.width(grid.caption, FontRole::Body)));
            L.items.back().wrap = width;
            y += m.wrapped_height(grid.caption, FontRole::Body, width) + 4.0f * s;
        }
        // 2. the cells' size
        float label_w = 0.0f;
        for (const std::string& r : grid.row_labels) label_w = std::max(label_w, m.width(r, FontRole::Body));
        label_w += 6.0f * s;
        const float cw = tokens ? in.token_cell * s
                                : std::clamp((width - label_w) / static_cast<float>(std::max(grid.cols, 1)), 10.0f * s, in.max_cell * s);
        const float ch = tokens ? fs + 8.0f * s : cw;
        const float x0 = in.box.x0 + label_w;
        // 3. the column labels, each fitted to its column
        if (!grid.col_labels.empty()) {
            for (int c = 0; c < grid.cols && c < static_cast<int>(grid.col_labels.size()); ++c) {
                const std::string t = fitted(grid.col_labels[static_cast<std::size_t>(c)], cw - gap - 4.0f * s, m, FontRole::Body);
                const float w = m.width(t, FontRole::Body);
                L.items.push_back(text_item(ItemRole::ColLabel, x0 + c * cw + (cw - gap - w) * 0.5f, y + 2.0f * s, FontRole::Body,
                                            pal.text_muted, t, w, Item::Left, c));
            }
            y += fs + 6.0f * s;
        }
        // 4. the rows: label, then cells
        float extent = 1e-6f;
        for (float v : grid.values)
            if (std::isfinite(v)) extent = std::max(extent, std::fabs(v));
        const Box cells{x0, y, x0 + grid.cols * cw, y + grid.rows * ch};
        for (int r = 0; r < grid.rows; ++r) {
            const float ry = y + r * ch;
            if (r < static_cast<int>(grid.row_labels.size())) {
                const std::string& label = grid.row_labels[static_cast<std::size_t>(r)];
                L.items.push_back(text_item(ItemRole::RowLabel, in.box.x0, ry + (ch - gap - fs) * 0.5f, FontRole::Body, pal.text_muted, label,
                                            m.width(label, FontRole::Body), Item::Left, r));
            }
            for (int c = 0; c < grid.cols; ++c) {
                const std::size_t i = static_cast<std::size_t>(r * grid.cols + c);
                const float v = i < grid.values.size() ? grid.values[i] : 0.0f;
                const Box b{x0 + c * cw, ry, x0 + (c + 1) * cw - gap, ry + ch - gap};
                L.cells.push_back({g, r, c, b});
                if (tokens) {
                    const std::array<float, 3> rgb = colormap_sample(cmap, std::clamp(v, 0.0f, 1.0f));
                    L.items.push_back(rect_item(ItemRole::Other, b, Color{rgb[0], rgb[1], rgb[2], 1.0f}, 0.0f, static_cast<int>(i)));
                    const std::string t = fitted(i < grid.texts.size() ? grid.texts[i] : std::string(), b.w() - 4.0f * s, m, FontRole::Body);
                    const float w = m.width(t, FontRole::Body);
                    L.items.push_back(text_item(ItemRole::Number, b.x0 + (b.w() - w) * 0.5f, b.y0 + (b.h() - fs) * 0.5f, FontRole::Body,
                                                ink_on_color(rgb), t, w, Item::Left, static_cast<int>(i)));
                    continue;
                }
                const float t = std::isfinite(v) ? std::clamp(v / extent, -1.0f, 1.0f) : 0.0f, k = std::fabs(t);
                L.items.push_back(rect_item(ItemRole::Other, b, mix(pal.background, t < 0 ? kSignedNegative : kSignedPositive, k), 0.0f, static_cast<int>(i)));
                L.items.push_back(outline_item(ItemRole::Other, b, pal.token_outline, 1.0f, 0.0f, static_cast<int>(i)));
                if (!std::isfinite(v)) {  // a head the experiment knocked out itself
                    L.items.push_back(segment_item(ItemRole::Other, b.x0, b.y0, b.x1, b.y1, pal.text_muted, 1.5f * s));
                    L.items.push_back(segment_item(ItemRole::Other, b.x1, b.y0, b.x0, b.y1, pal.text_muted, 1.5f * s));
                } else if (cw >= fs * 2.2f) {
                    char value[16];
                    std::snprintf(value, sizeof value, "%+.2f", static_cast<double>(v));
                    const float w = m.width(value, FontRole::Body);
                    L.items.push_back(text_item(ItemRole::Number, b.x0 + (b.w() - w) * 0.5f, b.y0 + (b.h() - fs) * 0.5f, FontRole::Body,
                                                k > 0.55f ? Color{1, 1, 1, 1} : pal.text, value, w, Item::Left, static_cast<int>(i)));
                }
            }
        }
        L.grids.push_back(cells);
        L.content_w = std::max(L.content_w, label_w + grid.cols * cw);
        y = cells.y1 + 12.0f * s;
    }
    L.content_h = std::max(0.0f, y - in.box.y0 - 12.0f * s);
    return L;
}

}  // namespace attn
