// test_png.cpp: core/formats/png.cpp's PNG files decoded again by stb_image (libstb-dev's
// reader, written apart from the writer's deflate and filters): the same pixels, every byte.
#include <doctest/doctest.h>

#include "link_state.hpp"  // base64url_decode, which takes base64's + / too
#include "png.hpp"
#include "svg.hpp"

#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_STATIC
#define STBI_ONLY_PNG
#define STBI_NO_STDIO
#include <stb/stb_image.h>

#include <cstdint>
#include <random>
#include <vector>

namespace {

// The pixels of a PNG as RGBA, or empty when stb_image cannot read it.
std::vector<std::uint8_t> decode(const std::vector<std::uint8_t>& png, int& width, int& height) {
    int channels = 0;
    stbi_uc* pixels = stbi_load_from_memory(png.data(), static_cast<int>(png.size()), &width, &height, &channels, 4);
    if (!pixels) return {};
    std::vector<std::uint8_t> out(pixels, pixels + static_cast<size_t>(width) * height * 4);
    stbi_image_free(pixels);
    return out;
}

}  // namespace

TEST_CASE("encode_png: noise, gradients, flat colour and one pixel decode to the same RGBA") {
    std::mt19937 rng(5);
    struct Size {
        int w, h;
    };
    int images = 0;
    for (const Size size : {Size{1, 1}, Size{3, 2}, Size{17, 9}, Size{256, 64}, Size{1200, 3}}) {
        for (int pattern = 0; pattern < 3; ++pattern) {
            std::vector<std::uint8_t> rgba(static_cast<size_t>(size.w) * size.h * 4);
            for (size_t i = 0; i < rgba.size(); ++i) {
                const size_t pixel = i / 4;
                rgba[i] = pattern == 0 ? static_cast<std::uint8_t>(rng())                                  // noise
                        : pattern == 1 ? static_cast<std::uint8_t>(pixel % size.w * 7 + pixel / size.w + i % 4)  // gradients
                                       : static_cast<std::uint8_t>(i % 4 == 3 ? 255 : 40);                  // flat
            }
            const std::vector<std::uint8_t> png = attn::encode_png(rgba, size.w, size.h);
            REQUIRE(png.size() > 8);
            CHECK(std::vector<std::uint8_t>(png.begin(), png.begin() + 8) ==
                  std::vector<std::uint8_t>{0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'});
            int w = 0, h = 0;
            CAPTURE(size.w);
            CAPTURE(pattern);
            CHECK(decode(png, w, h) == rgba);
            CHECK(w == size.w);
            CHECK(h == size.h);
            ++images;
        }
    }
    MESSAGE(images << " images round-tripped");
}

TEST_CASE("encode_png: sizes that do not match the pixels give nothing, and write_png says so") {
    const std::vector<std::uint8_t> rgba(4 * 6, 128);
    CHECK(attn::encode_png(rgba, 2, 3).size() > 8);
    CHECK(attn::encode_png(rgba, 3, 3).empty());
    CHECK(attn::encode_png(rgba, 0, 6).empty());
    CHECK(attn::encode_png(rgba, -2, -3).empty());
    CHECK(attn::encode_png({}, 1, 1).empty());
    std::string error;
    CHECK_FALSE(attn::write_png("/nonexistent-folder/x.png", rgba, 3, 3, error));
    CHECK(error.find("cannot encode") != std::string::npos);
    CHECK_FALSE(attn::write_png("/nonexistent-folder/x.png", rgba, 2, 3, error));
    CHECK(error.find("cannot open") != std::string::npos);
}

// The Picture view's SVG (svg.hpp SvgRaster): the picture under the items, stretched over its
// box, as a PNG in a data: URI whose pixels are the picture's, every byte.
TEST_CASE("an SVG's picture: <image> over its box, a PNG of the same pixels") {
    std::mt19937 rng(7);
    const int w = 37, h = 23;
    std::vector<std::uint8_t> rgb(static_cast<size_t>(w) * h * 3);
    for (std::uint8_t& v : rgb) v = static_cast<std::uint8_t>(rng());
    const attn::SvgRaster under{{10.0f, 20.0f, 110.0f, 90.0f}, rgb.data(), w, h};
    attn::SvgOptions o;
    const std::string svg = attn::write_items_svg({}, o, "image", {under});
    CHECK(svg.find("data-view=\"image\"") != std::string::npos);
    const std::string image = "<image class=\"picture\" x=\"10\" y=\"20\" width=\"100\" height=\"70\" preserveAspectRatio=\"none\" "
                              "data-pixels=\"37 23\" style=\"image-rendering:pixelated\" xlink:href=\"data:image/png;base64,";
    const size_t at = svg.find(image);  // at most 64 px a side: square pixels, as the renderer draws it
    REQUIRE(at != std::string::npos);
    {
        std::vector<std::uint8_t> wide(65 * 2 * 3, 128);
        const attn::SvgRaster big{{0.0f, 0.0f, 130.0f, 4.0f}, wide.data(), 65, 2};
        CHECK(attn::write_items_svg({}, o, "image", {big}).find("image-rendering") == std::string::npos);
    }
    const size_t begin = at + image.size(), end = svg.find('"', begin);
    const std::optional<std::string> bytes = attn::base64url_decode(std::string_view(svg).substr(begin, end - begin));
    REQUIRE(bytes);
    int dw = 0, dh = 0;
    const std::vector<std::uint8_t> rgba = decode(std::vector<std::uint8_t>(bytes->begin(), bytes->end()), dw, dh);
    REQUIRE(dw == w);
    REQUIRE(dh == h);
    bool same = true;
    for (size_t i = 0; i < static_cast<size_t>(w) * h; ++i)
        same = same && rgba[4 * i] == rgb[3 * i] && rgba[4 * i + 1] == rgb[3 * i + 1] && rgba[4 * i + 2] == rgb[3 * i + 2] && rgba[4 * i + 3] == 255;
    CHECK(same);
    CHECK(attn::write_items_svg({}, o, "why").find("<image") == std::string::npos);  // none without a picture
    // a colour bar among the items: the colormap's gradient, which it is filled with
    attn::Item bar;
    bar.kind = attn::Item::Colormap;
    bar.box = {0.0f, 0.0f, 10.0f, 100.0f};
    CHECK(svg.find("<linearGradient id=\"colormap\"") == std::string::npos);
    const std::string with_bar = attn::write_items_svg({bar}, o, "image", {under});
    CHECK(with_bar.find("<linearGradient id=\"colormap\"") != std::string::npos);
    CHECK(with_bar.find("url(#colormap)") != std::string::npos);
}
