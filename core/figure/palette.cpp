// palette.cpp: the two themes' figure colours (see palette.hpp).
#include "palette.hpp"

#include "colormaps.hpp"

#include <algorithm>
#include <cmath>

namespace attn {

std::uint8_t channel_byte(float c) {
    return static_cast<std::uint8_t>(static_cast<int>(std::clamp(std::isfinite(c) ? c : 0.0f, 0.0f, 1.0f) * 255.0f + 0.5f));
}

std::uint32_t hex_rgb(const Color& c) {
    return (static_cast<std::uint32_t>(channel_byte(c.r)) << 16) | (static_cast<std::uint32_t>(channel_byte(c.g)) << 8) |
           channel_byte(c.b);
}

namespace {

constexpr FigurePalette kDark{
    rgb8(0x16181d), rgb8(0xe9ecef), rgb8(0x9aa3ad), rgb8(0x2a2e36), rgb8(0x3b4352), rgb8(0x4a5a7a), rgb8(0x5c6470),
    rgb8(0xff6b6b), {0.30f, 0.31f, 0.34f, 1.0f}, {0.21f, 0.22f, 0.245f, 1.0f}, {0.086f, 0.094f, 0.114f, 0.9f},
    rgb8(0xb8bec6), rgb8(0xffffff, 230), rgb8(0xffffff), rgb8(0x2f6fb3), rgb8(0x5a4a30), rgb8(0x352e24)};
constexpr FigurePalette kLight{
    rgb8(0xffffff), rgb8(0x1f2328), rgb8(0x5c6670), rgb8(0xeef1f4), rgb8(0xdbe4f0), rgb8(0xc5d5f0), rgb8(0xaeb6bf),
    rgb8(0xc92a2a), {0.86f, 0.87f, 0.89f, 1.0f}, {0.74f, 0.75f, 0.78f, 1.0f}, {1.0f, 1.0f, 1.0f, 0.9f},
    rgb8(0x4a4f55), rgb8(0x141418, 230), rgb8(0xffffff), rgb8(0x1f77b4), rgb8(0xf0d9b0), rgb8(0xdcc08e)};

}  // namespace

const FigurePalette& figure_palette(bool dark) { return dark ? kDark : kLight; }

Color head_color(bool dark, int head) { return rgb8(head_color_hex(dark, head)); }

Color ink_on_color(const std::array<float, 3>& rgb) {
    const float luminance = 0.2126f * rgb[0] + 0.7152f * rgb[1] + 0.0722f * rgb[2];
    return luminance > 0.5f ? rgb8(0x141418) : rgb8(0xf5f5f5);
}

Color mix(const Color& a, const Color& b, float t) {
    t = std::clamp(t, 0.0f, 1.0f);
    return {a.r + (b.r - a.r) * t, a.g + (b.g - a.g) * t, a.b + (b.b - a.b) * t, 1.0f};
}

}  // namespace attn
