// png.hpp: 8-bit RGBA images as PNG, encoded by stb_image_write (Debian's libstb-dev). No
// platform calls: the desktop's exports, `attnviz render`, and the SVG's embedded pictures.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace attn {

// rgba: width×height×4 bytes, the top row first. Empty when the sizes are not positive or do
// not match rgba, or when encoding fails.
std::vector<std::uint8_t> encode_png(const std::vector<std::uint8_t>& rgba, int width, int height);

// encode_png written to path. false with `error` set on failure.
bool write_png(const std::string& path, const std::vector<std::uint8_t>& rgba, int width, int height,
               std::string& error);

}  // namespace attn
