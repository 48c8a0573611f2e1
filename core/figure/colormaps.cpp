// colormaps.cpp: key colours of matplotlib's perceptually uniform maps (sampled at nine even
// steps) and two ColorBrewer sequential maps.
#include "colormaps.hpp"

#include <algorithm>
#include <cmath>

namespace attn {
namespace {

constexpr std::uint32_t kViridis[] = {0x440154, 0x472d7b, 0x3b528b, 0x2c728e, 0x21918c,
                                      0x28ae80, 0x5ec962, 0xaadc32, 0xfde725};
constexpr std::uint32_t kMagma[] = {0x000004, 0x1c1044, 0x4f127b, 0x812581, 0xb5367a,
                                    0xe55064, 0xfb8761, 0xfec287, 0xfcfdbf};
constexpr std::uint32_t kInferno[] = {0x000004, 0x1f0c48, 0x550f6d, 0x88226a, 0xba3655,
                                      0xe35933, 0xf98e09, 0xf9cb35, 0xfcffa4};
constexpr std::uint32_t kPlasma[] = {0x0d0887, 0x4c02a1, 0x7e03a8, 0xa92395, 0xcc4778,
                                     0xe56b5d, 0xf89540, 0xfdc527, 0xf0f921};
constexpr std::uint32_t kBlues[] = {0xf7fbff, 0xdeebf7, 0xc6dbef, 0x9ecae1, 0x6baed6,
                                    0x4292c6, 0x2171b5, 0x08519c, 0x08306b};
constexpr std::uint32_t kGreys[] = {0xffffff, 0xf0f0f0, 0xd9d9d9, 0xbdbdbd, 0x969696,
                                    0x737373, 0x525252, 0x252525, 0x000000};

// ColorBrewer RdBu, reversed (diverging_colormap).
constexpr std::uint32_t kRdBu[] = {0x053061, 0x2166ac, 0x4393c3, 0x92c5de, 0xd1e5f0, 0xf7f7f7,
                                   0xfddbc7, 0xf4a582, 0xd6604d, 0xb2182b, 0x67001f};
constexpr Colormap kDiverging{"rdbu", kRdBu};

constexpr Colormap kMaps[] = {
    {"viridis", kViridis}, {"magma", kMagma},   {"inferno", kInferno},
    {"plasma", kPlasma},   {"blues", kBlues},   {"greys", kGreys},
};

// Categorical palettes (Tableau 10, and a brighter variant for the dark background), each at
// least 3:1 against its figure background (WCAG AA for lines; tests/test_describe.cpp).
constexpr std::uint32_t kHeadsLight[] = {0x1f77b4, 0xe8590c, 0x2b8a3e, 0xc92a2a, 0x7048e8,
                                         0x8c564b, 0xd6336c, 0x5c7cfa, 0x868f00, 0x0c8599};
constexpr std::uint32_t kHeadsDark[] = {0x4dabf7, 0xff922b, 0x69db7c, 0xff6b6b, 0xb197fc,
                                        0xe5b083, 0xf783ac, 0x91a7ff, 0xd8f5a2, 0x66d9e8};

}  // namespace

std::uint32_t head_color_hex(bool dark, int head) {
    const std::uint32_t* table = dark ? kHeadsDark : kHeadsLight;  // pointers: no array temporary
    return table[((head % 10) + 10) % 10];
}

std::span<const Colormap> colormaps() { return kMaps; }

const Colormap& diverging_colormap() { return kDiverging; }

std::array<float, 3> colormap_sample(const Colormap& map, float t) {
    if (!(t >= 0.0f)) t = 0.0f;  // also catches NaN
    t = std::min(t, 1.0f);
    const int n = static_cast<int>(map.keys.size());
    float x = t * static_cast<float>(n - 1);
    int i = std::min(static_cast<int>(std::floor(x)), n - 2);
    float f = x - static_cast<float>(i);
    std::array<float, 3> out{};
    for (int c = 0; c < 3; ++c) {
        int shift = 16 - 8 * c;
        float a = static_cast<float>((map.keys[i] >> shift) & 0xff);
        float b = static_cast<float>((map.keys[i + 1] >> shift) & 0xff);
        out[c] = (a + (b - a) * f) / 255.0f;
    }
    return out;
}

std::array<std::uint8_t, 256 * 4> colormap_lut(const Colormap& map) {
    std::array<std::uint8_t, 256 * 4> lut{};
    for (int i = 0; i < 256; ++i) {
        auto rgb = colormap_sample(map, static_cast<float>(i) / 255.0f);
        for (int c = 0; c < 3; ++c)
            lut[i * 4 + c] = static_cast<std::uint8_t>(std::lround(rgb[c] * 255.0f));
        lut[i * 4 + 3] = 255;
    }
    return lut;
}

}  // namespace attn
