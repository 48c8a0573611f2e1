// png.hpp: writes 8-bit RGBA images as PNG (zlib from the system).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace attn {

// rgba: width×height×4 bytes, the top row first. false with `error` set on failure.
bool write_png(const std::string& path, const std::vector<std::uint8_t>& rgba, int width, int height,
               std::string& error);

}  // namespace attn
