// Pictures as vision models' processors hand them over (image.hpp), against what python3-pil and
// NumPy give doing what transformers' image processors do (tests/model/image_reference.py, written
// by the build): every picture (real photographs and drawings from Debian's emscripten package,
// pictures written at odd sizes in every PNG mode) through every processor (ViT, CLIP, SigLIP,
// DINOv2's, and ViT's with every PIL filter), bit for bit; PNG decoding byte for byte, JPEG
// decoding within what two decoders' IDCTs differ by; then the errors.
#include "image.hpp"
#include "test_util.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

using namespace attn;

namespace {

std::string file_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE_MESSAGE(in, "missing " << path << " (the build writes it: python3-pil, scripts/setup.sh)");
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

const std::string kRefs = ATTN_IMAGE_REFS;

Image reference_rgb(const nlohmann::json& entry) {
    Image im;
    im.width = entry["width"], im.height = entry["height"];
    const std::string raw = file_bytes(kRefs + "/" + entry["name"].get<std::string>() + ".rgb");
    REQUIRE(raw.size() == static_cast<std::size_t>(im.width) * im.height * 3);
    im.rgb.assign(raw.begin(), raw.end());
    return im;
}

std::string processor_error(const std::string& json) {
    try {
        read_image_processor(json, "m/preprocessor_config.json");
    } catch (const ModelError& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST_CASE("image: every picture through every processor equals PIL and NumPy's pixel values, bit for bit") {
    const nlohmann::json index = nlohmann::json::parse(file_bytes(kRefs + "/index.json"));
    REQUIRE(index["images"].size() >= 8);
    std::map<std::string, ImageProcessor> processors;
    for (const auto& p : index["processors"]) {
        const std::string file = p["file"];
        processors[p["name"]] = read_image_processor(file_bytes(kRefs + "/" + file), file);
    }
    std::map<std::string, Image> images;
    for (const auto& i : index["images"]) images[i["name"]] = reference_rgb(i);
    int cases = 0;
    for (const auto& c : index["cases"]) {
        const std::string name = c["image"], processor = c["processor"];
        CAPTURE(name);
        CAPTURE(processor);
        const PixelValues got = process_image(processors.at(processor), images.at(name));
        REQUIRE(got.width == c["width"].get<int>());
        REQUIRE(got.height == c["height"].get<int>());
        CHECK(processors.at(processor).output_size(images.at(name).width, images.at(name).height) == std::pair{got.width, got.height});
        const std::string want = file_bytes(kRefs + "/" + c["file"].get<std::string>());
        REQUIRE(want.size() == got.values.size() * sizeof(float));
        std::size_t differ = 0;
        float worst = 0;
        for (std::size_t k = 0; k < got.values.size(); ++k) {
            float w;
            std::memcpy(&w, want.data() + k * sizeof(float), sizeof(float));
            if (std::memcmp(&w, &got.values[k], sizeof(float)) != 0) ++differ, worst = std::max(worst, std::fabs(w - got.values[k]));
        }
        CHECK_MESSAGE(differ == 0, differ << " values differ, the largest by " << worst);
        ++cases;
    }
    MESSAGE(cases << " pictures × processors, every pixel value PIL's and NumPy's bit for bit");
    CHECK(cases >= 80);
}

TEST_CASE("image: PNG decodes as PIL's convert(\"RGB\") byte for byte (every mode); a JPEG within the decoders' IDCTs") {
    const nlohmann::json index = nlohmann::json::parse(file_bytes(kRefs + "/index.json"));
    int png = 0, jpeg = 0;
    for (const auto& i : index["images"]) {
        const std::string path = i["path"], name = i["name"];
        CAPTURE(name);
        const std::string bytes = file_bytes(path);
        const Image got = decode_image(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size(), path);
        const Image want = reference_rgb(i);
        REQUIRE(got.width == want.width);
        REQUIRE(got.height == want.height);
        if (path.ends_with(".png")) {
            CHECK(got.rgb == want.rgb);
            ++png;
            continue;
        }
        // libjpeg (PIL) and stb_image compute the IDCT and the chroma upsampling differently: on
        // emscripten's photograph 3 levels apart at most, 0.03 on average.
        int worst = 0;
        double sum = 0;
        for (std::size_t k = 0; k < got.rgb.size(); ++k) {
            const int d = std::abs(int{got.rgb[k]} - int{want.rgb[k]});
            worst = std::max(worst, d), sum += d;
        }
        const double mean = sum / static_cast<double>(got.rgb.size());
        MESSAGE(name << ": stb_image against libjpeg: largest difference " << worst << " levels, mean " << mean);
        CHECK(worst <= 8);
        CHECK(mean <= 0.25);
        ++jpeg;
    }
    CHECK(png >= 10);
    CHECK(jpeg >= 1);
    // What the app takes for a picture (a file chosen or dropped goes to the vision model): every
    // picture above, a 1×1 BMP; not JSON, nor a safetensors file whose header is 19 778 bytes
    // (its length's first bytes are "BM").
    for (const auto& i : index["images"]) CHECK(looks_like_picture(file_bytes(i["path"])));
    std::string bmp = "BM";
    const auto put32 = [&](std::uint32_t v) { for (int k = 0; k < 4; ++k) bmp += static_cast<char>(v >> (8 * k) & 0xff); };
    put32(58), put32(0), put32(54), put32(40), put32(1), put32(1);  // file size, reserved, offset; DIB: 40, 1 × 1
    bmp += std::string("\x01\x00\x18\x00", 4), put32(0), put32(4), put32(2835), put32(2835), put32(0), put32(0);  // 1 plane, 24 bits
    bmp += std::string("\x10\x20\x30\x00", 4);  // one pixel, BGR, padded to 4
    CHECK(looks_like_picture(bmp));
    const Image one = decode_image(reinterpret_cast<const std::uint8_t*>(bmp.data()), bmp.size(), "one.bmp");
    CHECK((one.width == 1 && one.height == 1 && one.rgb == std::vector<std::uint8_t>{0x30, 0x20, 0x10}));
    CHECK_FALSE(looks_like_picture(std::string("BM\0\0\0\0\0\0{\"w\": {\"dtype\": \"F32\"}}", 32)));
    CHECK_FALSE(looks_like_picture("{\"version\": 1}"));
    const std::string junk = "not a picture";
    CHECK_THROWS_WITH_AS(decode_image(reinterpret_cast<const std::uint8_t*>(junk.data()), junk.size(), "cat.png"),
                         doctest::Contains("cat.png: not an image attnviz reads (PNG, JPEG, BMP, GIF)"), ModelError);
}

// A picture past 100 million pixels, or of none, is refused from its header's size before a pixel
// is decoded (a 40 000 × 40 000 PNG would ask for 4.8 GB): PNG, GIF, BMP (top-down too) and JPEG
// (its start-of-frame after other segments); the real pictures above, JPEGs too, pass.
TEST_CASE("image: too big or empty pictures are refused by the size their headers state, before decoding") {
    const auto be32 = [](std::uint32_t v) { return std::string{char(v >> 24), char(v >> 16 & 0xff), char(v >> 8 & 0xff), char(v & 0xff)}; };
    const auto le = [](std::uint32_t v, int n) {
        std::string out;
        for (int k = 0; k < n; ++k) out += static_cast<char>(v >> (8 * k) & 0xff);
        return out;
    };
    const auto png = [&](std::uint32_t w, std::uint32_t h) {
        return std::string("\x89PNG\r\n\x1a\n", 8) + be32(13) + "IHDR" + be32(w) + be32(h) + std::string("\x08\x02\0\0\0", 5) + be32(0);
    };
    const auto gif = [&](std::uint32_t w, std::uint32_t h) { return "GIF89a" + le(w, 2) + le(h, 2) + std::string("\0\0\0", 3); };
    const auto bmp = [&](std::uint32_t w, std::int32_t h) {
        return "BM" + le(70, 4) + le(0, 4) + le(54, 4) + le(40, 4) + le(w, 4) + le(static_cast<std::uint32_t>(h), 4) + le(1, 2) + le(24, 2) + std::string(24, '\0');
    };
    const auto jpeg = [&](std::uint32_t w, std::uint32_t h) {  // SOI, an APP0 of 16 bytes, then SOF0
        const auto be16 = [](std::uint32_t v) { return std::string{char(v >> 8 & 0xff), char(v & 0xff)}; };
        return std::string("\xff\xd8\xff\xe0", 4) + be16(16) + std::string("JFIF\0\x01\x01\0\0\x01\0\x01\0\0", 14) +
               std::string("\xff\xc0", 2) + be16(17) + "\x08" + be16(h) + be16(w) + std::string("\x03\x01\x22\0\x02\x11\x01\x03\x11\x01", 10);
    };
    const auto error = [](const std::string& bytes, const std::string& file) {
        try {
            decode_image(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size(), file);
        } catch (const ModelError& e) {
            return std::string(e.what());
        }
        return std::string("(decoded)");
    };
    CHECK(error(png(40000, 40000), "huge.png") == "huge.png: 40000 × 40000 pixels: more than 100 million (refused before decoding)");
    CHECK(error(png(0, 0), "empty.png") == "empty.png: 0 × 0 pixels: an empty picture");
    CHECK(error(gif(60000, 2000), "wide.gif") == "wide.gif: 60000 × 2000 pixels: more than 100 million (refused before decoding)");
    CHECK(error(gif(0, 7), "none.gif") == "none.gif: 0 × 7 pixels: an empty picture");
    CHECK(error(bmp(20000, -20000), "top-down.bmp") == "top-down.bmp: 20000 × 20000 pixels: more than 100 million (refused before decoding)");
    CHECK(error(bmp(20000, 20000), "bottom-up.bmp") == "bottom-up.bmp: 20000 × 20000 pixels: more than 100 million (refused before decoding)");
    CHECK(error(jpeg(12000, 9000), "photo.jpg") == "photo.jpg: 12000 × 9000 pixels: more than 100 million (refused before decoding)");
    CHECK(error(jpeg(0, 10), "zero.jpg") == "zero.jpg: 0 × 10 pixels: an empty picture");
    // A stated size that is allowed goes on to the decoder, which finds the rest missing.
    CHECK(test::contains(error(png(640, 480), "cut.png"), "cut.png: not an image attnviz reads (PNG, JPEG, BMP, GIF)"));
    CHECK(test::contains(error(jpeg(640, 480), "cut.jpg"), "cut.jpg: not an image attnviz reads (PNG, JPEG, BMP, GIF)"));
}

TEST_CASE("image: a processor's config read as transformers reads it; the rest refused by name") {
    const ImageProcessor vit = read_image_processor(R"({"feature_extractor_type": "ViTFeatureExtractor", "size": 384, "resample": 2})", "f");
    CHECK(vit.width == 384);
    CHECK(vit.height == 384);
    CHECK(vit.shortest_edge == 0);
    CHECK_FALSE(vit.crop);
    const ImageProcessor clip = read_image_processor(R"({"image_processor_type": "CLIPImageProcessor", "size": 224, "crop_size": 224})", "f");
    CHECK(clip.shortest_edge == 224);
    CHECK(clip.crop);
    CHECK(clip.resample == Resample::Bicubic);
    CHECK(clip.output_size(640, 480) == std::pair{224, 224});
    CHECK(clip.resized_size(640, 480) == std::pair{298, 224});  // int(224 · 640 / 480) = 298
    CHECK(clip.resized_size(480, 641) == std::pair{224, 299});
    const ImageProcessor nested = read_image_processor(R"({"image_processor": {"image_processor_type": "SiglipImageProcessor", "size": {"height": 384, "width": 384}}})", "f");
    CHECK(nested.width == 384);
    CHECK(nested.resample == Resample::Bicubic);
    CHECK(processor_error(R"({"image_processor_type": "LlavaNextImageProcessor"})") ==
          "m/preprocessor_config.json: image_processor_type: \"LlavaNextImageProcessor\": attnviz reads ViT's, DeiT's, CLIP's, SigLIP's, Bit's "
          "(DINOv2's), Idefics3's, SmolVLM's, Gemma 3's and Qwen2-VL's image processors");
    // Gemma 3's (the Hub's preprocessor_config.json: pan and scan null, bilinear to 896 × 896)
    const ImageProcessor gemma = read_image_processor(
        R"({"image_processor_type": "Gemma3ImageProcessor", "do_pan_and_scan": null, "resample": 2, "size": {"height": 896, "width": 896}})", "f");
    CHECK(gemma.tile == 0);
    CHECK(gemma.resample == Resample::Bilinear);
    CHECK(gemma.output_size(640, 480) == std::pair{896, 896});
    CHECK(processor_error(R"({"image_processor_type": "Gemma3ImageProcessor", "do_pan_and_scan": true})") ==
          "m/preprocessor_config.json: do_pan_and_scan: true: attnviz reads the one view of the whole picture, not pan and scan's crops "
          "(Gemma3Processor's default is false)");
    // Qwen2-VL's smart resize (image_processing_qwen2_vl.py's smart_resize; Python's round, half to
    // even): the Hub's 14-pixel patches merged 2 × 2, 3136 … 12845056 pixels; and small ones
    const ImageProcessor qwen = read_image_processor(
        R"({"image_processor_type": "Qwen2VLImageProcessor", "min_pixels": 3136, "max_pixels": 12845056, "patch_size": 14, "merge_size": 2})", "f");
    CHECK(qwen.factor == 28);
    CHECK(qwen.resample == Resample::Bicubic);
    CHECK(qwen.resized_size(640, 480) == std::pair{644, 476});  // round(22.86) = 23, round(17.14) = 17 (× 28)
    CHECK(qwen.output_size(640, 480) == std::pair{644, 476});   // no crop, whatever do_center_crop says
    CHECK(read_image_processor(R"({"image_processor_type": "Qwen2VLImageProcessor", "do_center_crop": true})", "f").output_size(640, 480) ==
          std::pair{644, 476});
    const auto small = [](int min, int max) {
        return read_image_processor(R"({"image_processor_type": "Qwen2VLImageProcessor", "patch_size": 4, "merge_size": 2, "size": {"shortest_edge": )" +
                                        std::to_string(min) + R"(, "longest_edge": )" + std::to_string(max) + "}}", "f");
    };
    CHECK(small(256, 4096).resized_size(45, 37) == std::pair{48, 40});
    CHECK(small(1, 4096).resized_size(12, 52) == std::pair{16, 48});   // 1.5 and 6.5: both to the even 2 and 6
    CHECK(small(256, 2048).resized_size(70, 52) == std::pair{48, 32});  // 72 × 56 is past 2048: floor of the scaled sides
    CHECK(small(256, 4096).resized_size(10, 10) == std::pair{16, 16});  // 8 × 8 is below 256: ceil of the scaled sides
    CHECK(processor_error(R"({"image_processor_type": "Qwen2VLImageProcessor", "min_pixels": 5000, "max_pixels": 4000})") ==
          "m/preprocessor_config.json: max_pixels: 4000 is below min_pixels 5000");
    const ImageProcessor tiles = read_image_processor(
        R"({"image_processor_type": "Idefics3ImageProcessor", "size": {"longest_edge": 2048}, "max_image_size": {"longest_edge": 512}})", "f");
    CHECK(tiles.longest_edge == 2048);
    CHECK(tiles.tile == 512);
    CHECK(tiles.split);
    CHECK(tiles.resample == Resample::Lanczos);
    CHECK(processor_error(R"({"image_processor_type": "SmolVLMImageProcessor", "max_image_size": 512})") ==
          "m/preprocessor_config.json: max_image_size: expected {\"longest_edge\": pixels}");
    CHECK(processor_error(R"({"image_processor_type": "ViTImageProcessor", "resample": 0})") ==
          "m/preprocessor_config.json: resample: 0 (nearest) is not read yet: bilinear (2), bicubic (3), lanczos (1), box (4), hamming (5)");
    CHECK(processor_error(R"({"image_processor_type": "ViTImageProcessor", "size": {"height": 0, "width": 3}})") ==
          "m/preprocessor_config.json: size.height: expected a size from 1 to 8192 pixels");
    CHECK(processor_error(R"({"image_processor_type": "ViTImageProcessor", "image_std": [0.5, 0, 0.5]})") ==
          "m/preprocessor_config.json: image_std[1]: expected a number above 0");
    CHECK(processor_error(R"({"size": 224})") == "m/preprocessor_config.json: image_processor_type: missing: which processor (ViTImageProcessor, CLIPImageProcessor, …)");
    CHECK(processor_error("[1]") == "m/preprocessor_config.json: not a JSON object");
}

TEST_CASE("image: Idefics3's views: the long side, then multiples of the tile, tiles row by row and the whole last") {
    ImageProcessor p = read_image_processor(
        R"({"image_processor_type": "Idefics3ImageProcessor", "size": {"longest_edge": 64}, "max_image_size": {"longest_edge": 32}})", "f");
    const auto picture = [](int w, int h) {
        Image im;
        im.width = w, im.height = h;
        for (int i = 0; i < w * h * 3; ++i) im.rgb.push_back(static_cast<std::uint8_t>(i * 7 % 251));
        return im;
    };
    // 50 × 40: the long side to 64, the short int(64 / 1.25) = 51, made even: 52; then both up to
    // multiples of 32: 64 × 64, 2 × 2 tiles and the whole
    PictureViews v = picture_views(p, picture(50, 40));
    CHECK(v.rows == 2);
    CHECK(v.cols == 2);
    REQUIRE(v.views.size() == 5);
    for (const Image& view : v.views) CHECK((view.width == 32 && view.height == 32));
    // The tiles are the 64 × 64 picture's quarters: tile (1, 0)'s first pixel is row 32's
    const Image sized = resize_image(resize_image(picture(50, 40), 64, 52, Resample::Lanczos), 64, 64, Resample::Lanczos);
    CHECK(v.views[2].at(0, 0, 1) == sized.at(0, 32, 1));
    CHECK(v.views[1].at(31, 31, 2) == sized.at(63, 31, 2));
    CHECK(v.views[4].rgb == resize_image(sized, 32, 32, Resample::Lanczos).rgb);
    // A tall picture: 20 × 90 → 14 × 64 (int(64 · 0.2222) = 14), then 32 wide and 64 high: 2 × 1
    v = picture_views(p, picture(20, 90));
    CHECK(v.rows == 2);
    CHECK(v.cols == 1);
    CHECK(v.views.size() == 3);
    // Not split: one view, tile × tile
    p.split = false;
    v = picture_views(p, picture(50, 40));
    CHECK(v.rows == 0);
    REQUIRE(v.views.size() == 1);
    CHECK(v.views[0].rgb == resize_image(resize_image(picture(50, 40), 64, 52, Resample::Lanczos), 32, 32, Resample::Lanczos).rgb);
}

TEST_CASE("image: a crop larger than the picture pads with zeros, centred as transformers centres it") {
    Image im{3, 2, {1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5, 5, 6, 6, 6}};
    const Image c = center_crop(im, 6, 5);  // left (3 − 6) // 2 = −2, top (2 − 5) // 2 = −2
    CHECK(c.at(0, 0, 0) == 0);
    CHECK(c.at(2, 2, 0) == 1);
    CHECK(c.at(4, 3, 0) == 6);
    CHECK(c.at(5, 4, 0) == 0);
    const Image same = resize_image(im, 3, 2, Resample::Bicubic);
    CHECK(same.rgb == im.rgb);
}
