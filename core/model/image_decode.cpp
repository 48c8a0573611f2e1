// image_decode.cpp: image.hpp's decode_image with stb_image (a file of its own: its functions are
// static here, and the app's PNG code has its own).
#include "image.hpp"

#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_ONLY_BMP
#define STBI_ONLY_GIF
#define STBI_NO_STDIO  // the bytes are in memory
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"  // static: the functions this file does not call
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12 on stbi__context's callbacks, which memory never uses
#endif
#include <stb/stb_image.h>
#pragma GCC diagnostic pop

#include <limits>
#include <memory>
#include <string_view>
#include <utility>

namespace attn {

namespace {

constexpr long long kMostPicturePixels = 100'000'000LL;

// The width and height a picture's header states ({-1, -1}: not one of the four, or cut short):
// PNG's IHDR, GIF's logical screen, BMP's DIB header (a negative height: rows top-down), JPEG's
// first start-of-frame marker.
std::pair<long long, long long> header_size(const std::uint8_t* b, std::size_t n) {
    const auto be = [&](std::size_t at, int bytes) {
        long long v = 0;
        for (int i = 0; i < bytes; ++i) v = v << 8 | b[at + static_cast<std::size_t>(i)];
        return v;
    };
    const auto le = [&](std::size_t at, int bytes) {
        long long v = 0;
        for (int i = bytes - 1; i >= 0; --i) v = v << 8 | b[at + static_cast<std::size_t>(i)];
        return v;
    };
    const std::string_view s(reinterpret_cast<const char*>(b), n);
    if (n >= 24 && s.starts_with("\x89PNG\r\n\x1a\n") && s.substr(12, 4) == "IHDR") return {be(16, 4), be(20, 4)};
    if (n >= 10 && s.starts_with("GIF8")) return {le(6, 2), le(8, 2)};
    if (n >= 26 && s.starts_with("BM")) {
        const long long height = le(22, 4);
        return {le(18, 4), height >= (1LL << 31) ? (1LL << 32) - height : height};
    }
    if (n >= 4 && s.starts_with("\xff\xd8")) {
        for (std::size_t at = 2; at + 9 <= n;) {  // marker segments: FF, type, a 16-bit length
            if (b[at] != 0xff) break;
            const int type = b[at + 1];
            if (type >= 0xc0 && type <= 0xcf && type != 0xc4 && type != 0xc8 && type != 0xcc) return {be(at + 7, 2), be(at + 5, 2)};
            at += 2 + static_cast<std::size_t>(be(at + 2, 2));
        }
    }
    return {-1, -1};
}

}  // namespace

Image decode_image(const std::uint8_t* bytes, std::size_t size, const std::string& file) {
    if (size > static_cast<std::size_t>(std::numeric_limits<int>::max())) throw ModelError(file, "", "an image past 2 GB");
    int w = 0, h = 0, channels = 0;
    // The size from the header, before any pixel is decoded: a 40 000 × 40 000 picture is refused
    // before it asks for 4.8 GB.
    if (const auto [hw, hh] = header_size(bytes, size); hw >= 0) {
        const std::string stated = std::to_string(hw) + " × " + std::to_string(hh) + " pixels";
        if (hw == 0 || hh == 0) throw ModelError(file, "", stated + ": an empty picture");
        if (hw * hh > kMostPicturePixels) throw ModelError(file, "", stated + ": more than 100 million (refused before decoding)");
    }
    std::unique_ptr<stbi_uc, void (*)(void*)> px(stbi_load_from_memory(bytes, static_cast<int>(size), &w, &h, &channels, 3), stbi_image_free);
    if (!px) throw ModelError(file, "", std::string("not an image attnviz reads (PNG, JPEG, BMP, GIF): ") + stbi_failure_reason());
    if (static_cast<long long>(w) * h > kMostPicturePixels) throw ModelError(file, "", std::to_string(w) + " × " + std::to_string(h) + " pixels: more than 100 million");
    Image im;
    im.width = w, im.height = h;
    im.rgb.assign(px.get(), px.get() + static_cast<std::size_t>(w) * h * 3);
    return im;
}

bool looks_like_picture(std::string_view b) {
    // A BMP: "BM", four reserved zero bytes, and a DIB header of a size BMPs have (12 … 124
    // bytes): "BM" alone could begin a safetensors file (a header of 19 778 bytes)
    const auto u32 = [&](std::size_t at) {
        std::uint32_t v = 0;
        for (int i = 3; i >= 0; --i) v = v << 8 | static_cast<unsigned char>(b[at + static_cast<std::size_t>(i)]);
        return v;
    };
    const bool bmp = b.size() >= 26 && b.starts_with("BM") && u32(6) == 0 &&
                     (u32(14) == 12 || u32(14) == 40 || u32(14) == 52 || u32(14) == 56 || u32(14) == 64 || u32(14) == 108 || u32(14) == 124);
    return b.starts_with("\x89PNG\r\n\x1a\n") || b.starts_with("\xff\xd8\xff") || b.starts_with("GIF8") || bmp;
}

}  // namespace attn
