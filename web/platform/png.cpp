// png.cpp: PNG through stb_image_write, its one implementation in the build (static, so its
// symbols stay in this file). Deflate at stb's level 8, no prediction filter: a figure's rows
// are flat colour or noise, and stb's per-row choice made them larger and slower (the model
// view of a 12 × 12 import at 1200×800: 1.05 MB in 98 ms chosen per row, 0.83 MB in 85 ms
// without; a small heatmap: 57.8 KB in 49 ms, 58.5 KB in 39 ms).
#include "png.hpp"

#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#define STBI_WRITE_NO_STDIO  // the bytes go to a vector; writing the file is ours
#include <stb/stb_image_write.h>

#include <climits>
#include <cstdio>

namespace attn {

std::vector<std::uint8_t> encode_png(const std::vector<std::uint8_t>& rgba, int width, int height) {
    std::vector<std::uint8_t> out;
    if (width <= 0 || height <= 0 || width > INT_MAX / 4 ||  // stb takes the row stride as an int
        rgba.size() != static_cast<size_t>(width) * static_cast<size_t>(height) * 4)
        return out;
    auto append = [](void* context, void* data, int size) {
        auto* bytes = static_cast<std::uint8_t*>(data);
        static_cast<std::vector<std::uint8_t>*>(context)->insert(static_cast<std::vector<std::uint8_t>*>(context)->end(),
                                                                  bytes, bytes + size);
    };
    stbi_write_force_png_filter = 0;  // file-local (STB_IMAGE_WRITE_STATIC); always this value
    if (!stbi_write_png_to_func(append, &out, width, height, 4, rgba.data(), width * 4)) out.clear();
    return out;
}

bool write_png(const std::string& path, const std::vector<std::uint8_t>& rgba, int width, int height,
               std::string& error) {
    const std::vector<std::uint8_t> png = encode_png(rgba, width, height);
    if (png.empty()) {
        error = "png: cannot encode a " + std::to_string(width) + "×" + std::to_string(height) + " image";
        return false;
    }
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) {
        error = path + ": cannot open for writing";
        return false;
    }
    bool ok = std::fwrite(png.data(), 1, png.size(), f) == png.size();
    ok = std::fclose(f) == 0 && ok;
    if (!ok) error = path + ": write failed";
    return ok;
}

}  // namespace attn
