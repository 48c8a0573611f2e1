// palette.hpp: the figures' colours as data, for the screen (web/ui converts them to ImGui's
// colours) and the SVG writer alike: one table, so the two cannot drift apart. ImPlot keeps its
// colormaps the same way (implot_internal.h, ImPlotColormapData): colours are numbers in a table.
//
// Colours are straight (not premultiplied) RGBA in 0..1. A table entry written as 0xRRGGBB is
// exactly representable on the way back to bytes: round(c · 255) gives the byte again.
#pragma once

#include <array>
#include <cstdint>

namespace attn {

struct Color {
    float r = 0.0f, g = 0.0f, b = 0.0f, a = 1.0f;
    friend bool operator==(const Color&, const Color&) = default;
};

// 0xRRGGBB (and an alpha byte) as a Color.
constexpr Color rgb8(std::uint32_t hex, std::uint32_t alpha = 255) {
    return {static_cast<float>((hex >> 16) & 0xff) / 255.0f, static_cast<float>((hex >> 8) & 0xff) / 255.0f,
            static_cast<float>(hex & 0xff) / 255.0f, static_cast<float>(alpha) / 255.0f};
}
// Back to 0xRRGGBB, each channel rounded to the nearest byte.
std::uint32_t hex_rgb(const Color& c);
// Byte of a channel (0..1 → 0..255, rounded, clamped).
std::uint8_t channel_byte(float c);

// The colours a figure is drawn with, per theme.
struct FigurePalette {
    Color background;                  // the figure's area
    Color text, text_muted;
    Color token_fill, token_hover, token_pinned, token_outline;
    Color error;
    Color hatch_a, hatch_b;            // masked cells: two neutral greys in stripes
    Color grid;                        // the lines between big heatmap cells (alpha: how much)
    Color masked_text;                 // "−∞" on a masked cell
    Color outline;                     // the heatmap's selected row / column and hovered cell
    Color on_tint;                     // a token's label on a strongly tinted box (light theme)
    Color accent;                      // the chosen thing (ImGui's active button, the model view's shown map)
    Color window_a, window_b;          // cells outside a sliding window: two warm greys in stripes the other way
};
const FigurePalette& figure_palette(bool dark);

// The flat tone of the first key's column when the sink option leaves it out (between the
// hatch's two greys, without stripes: not masked, only not shown).
inline Color sink_fill(const FigurePalette& p) {
    return {(p.hatch_a.r + p.hatch_b.r) * 0.5f, (p.hatch_a.g + p.hatch_b.g) * 0.5f, (p.hatch_a.b + p.hatch_b.b) * 0.5f, 1.0f};
}

// Signed numbers (the why grids) and token shading: blue up, red down.
inline constexpr std::uint32_t kSignedPositiveRgb = 0x2166AB, kSignedNegativeRgb = 0xD63026;
inline constexpr Color kSignedPositive = rgb8(kSignedPositiveRgb), kSignedNegative = rgb8(kSignedNegativeRgb);

// One colour per head (Tableau 10, a brighter variant on the dark background; colormaps.hpp).
Color head_color(bool dark, int head);

// Dark or light text, whichever reads on a cell of colour rgb (0..1): by its luminance.
Color ink_on_color(const std::array<float, 3>& rgb);

// a + (b − a)·t per channel, t clamped to [0, 1]; opaque.
Color mix(const Color& a, const Color& b, float t);

}  // namespace attn
