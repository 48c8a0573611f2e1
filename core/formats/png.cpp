// png.cpp: PNG through stb_image_write, its one implementation in the build (static, so its
// symbols stay in this file). Deflate at stb's level 8, no prediction filter: a figure's rows
// are flat colour or noise, and stb's per-row choice made them larger and slower (the model
// view of a 12 × 12 import at 1200×800: 1.05 MB in 98 ms chosen per row, 0.83 MB in 85 ms
// without; a small heatmap: 57.8 KB in 49 ms, 58.5 KB in 39 ms).
// In the page its zlib stream is stored blocks (no compression; stored_zlib): the page's PNG
// exports are the browser canvas's, and the pictures an SVG embeds there are small (a vision
// model's input, 224² or so), so no deflate reaches the wasm download.
#include "png.hpp"

#include <cstdlib>
#include <cstring>

#if defined(__EMSCRIPTEN__)
namespace {
// zlib's format (RFC 1950) around stored deflate blocks (RFC 1951 §3.2.4: BTYPE 00, at most
// 65535 bytes each), malloc'd as stb_image_write frees it.
unsigned char* stored_zlib(unsigned char* data, int size, int* out_size, int /*quality*/) {
    const int blocks = std::max(1, (size + 65534) / 65535);
    const int total = 2 + blocks * 5 + size + 4;
    auto* out = static_cast<unsigned char*>(std::malloc(static_cast<std::size_t>(total)));
    if (!out) return nullptr;
    unsigned char* p = out;
    *p++ = 0x78, *p++ = 0x01;  // deflate, 32 KB window, no dictionary; (0x78·256 + 0x01) % 31 == 0
    std::uint32_t a = 1, b = 0;  // Adler-32 of the data
    for (int at = 0, k = 0; k < blocks; ++k) {
        const int n = std::min(65535, size - at);
        *p++ = k + 1 == blocks ? 1 : 0;  // BFINAL on the last, BTYPE 00
        *p++ = static_cast<unsigned char>(n & 0xff), *p++ = static_cast<unsigned char>(n >> 8);
        *p++ = static_cast<unsigned char>(~n & 0xff), *p++ = static_cast<unsigned char>((~n >> 8) & 0xff);
        if (n > 0) std::memcpy(p, data + at, static_cast<std::size_t>(n));
        for (int i = 0; i < n; ++i) a = (a + data[at + i]) % 65521, b = (b + a) % 65521;
        p += n, at += n;
    }
    const std::uint32_t adler = (b << 16) | a;
    for (int shift = 24; shift >= 0; shift -= 8) *p++ = static_cast<unsigned char>(adler >> shift);
    *out_size = static_cast<int>(p - out);
    return out;
}
}  // namespace
#define STBIW_ZLIB_COMPRESS stored_zlib
#endif

#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#define STBI_WRITE_NO_STDIO  // the bytes go to a vector; writing the file is ours
#include <stb/stb_image_write.h>

#include <algorithm>
#include <climits>
#include <cstdint>
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
