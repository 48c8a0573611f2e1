// colormaps.hpp: colormaps as data (key colours, evenly spaced) and their 256-entry LUTs, and
// the heads' categorical colours. Plain data (no GL): the GPU figures and the SVG export share it.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

namespace attn {

struct Colormap {
    std::string_view name;
    std::span<const std::uint32_t> keys;  // 0xRRGGBB, evenly spaced from t = 0 to t = 1
};

std::span<const Colormap> colormaps();  // viridis first (the default)
// A diverging map for differences centred on 0 (ColorBrewer RdBu, reversed: blue for
// negative at t = 0, near-white at 0.5, red for positive at t = 1). Not among colormaps().
const Colormap& diverging_colormap();

// 256 RGBA8 entries, linear interpolation between the key colours.
std::array<std::uint8_t, 256 * 4> colormap_lut(const Colormap& map);

// The colour at t (clamped to [0, 1]) as 0..1 floats.
std::array<float, 3> colormap_sample(const Colormap& map, float t);

// One colour per head as 0xRRGGBB (Tableau 10, a brighter variant on the dark background);
// cycles after ten.
std::uint32_t head_color_hex(bool dark, int head);

}  // namespace attn
