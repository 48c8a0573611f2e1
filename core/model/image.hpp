// image.hpp: a picture as a vision model's processor hands it over (preprocessor_config.json),
// the same numbers transformers' image processors compute: PIL's resampling of 8-bit pixels
// (Resample.c: the filters' coefficients, 22-bit fixed point, the horizontal pass before the
// vertical, each rounded to 8 bits), the crop, then rescale and normalize in float32 as NumPy.
//
// [SECTION] Pixels
// [SECTION] Resampling as PIL does
// [SECTION] A processor: preprocessor_config.json
#pragma once

#include "files.hpp"

#include <cstdint>
#include <string_view>
#include <utility>
#include <string>
#include <vector>

namespace attn {

// [SECTION] Pixels -------------------------------------------------------------------------------

struct Image {
    int width = 0, height = 0;
    std::vector<std::uint8_t> rgb;  // height × width × 3, rows top first
    std::uint8_t at(int x, int y, int c) const { return rgb[(static_cast<std::size_t>(y) * width + x) * 3 + c]; }
};

// PNG, JPEG, BMP or GIF (its first frame) as RGB, as PIL's convert("RGB") gives it (gray
// repeated, alpha dropped), with stb_image. Throws ModelError(file, "", …).
Image decode_image(const std::uint8_t* bytes, std::size_t size, const std::string& file);
// Whether the bytes start as a PNG, JPEG, GIF or BMP file does (what decode_image reads).
bool looks_like_picture(std::string_view bytes);

// [SECTION] Resampling as PIL does ---------------------------------------------------------------

// PIL's Image.Resampling values, as preprocessor_config.json's "resample" gives them.
enum class Resample { Nearest = 0, Lanczos = 1, Bilinear = 2, Bicubic = 3, Box = 4, Hamming = 5 };

// One output sample's inputs along an axis resized from in_size to out_size samples: the first
// input and the weights of it and those after it, summing to 1: PIL's precompute_coeffs for the
// filter, stretched by in/out when shrinking (torch's interpolate with antialias=True computes
// the same for bicubic). Nearest: bilinear's.
struct ResampleWeights {
    int first = 0;
    std::vector<double> w;
};
std::vector<ResampleWeights> resample_weights(int in_size, int out_size, Resample filter);

// Image.resize((width, height), resample) of an RGB image.
Image resize_image(const Image& in, int width, int height, Resample filter);
// transformers' center_crop: the middle height × width ((size − crop) // 2 from the top and the
// left), padded with zeros where the picture is smaller.
Image center_crop(const Image& in, int width, int height);

// [SECTION] A processor: preprocessor_config.json ------------------------------------------------

struct ImageProcessor {
    std::string type;             // image_processor_type: "ViTImageProcessor", "CLIPImageProcessor", …
    bool resize = true;           // do_resize
    int width = 224, height = 224;  // size {"height", "width"}
    int shortest_edge = 0;        // or size {"shortest_edge"}: the short side to this, the long one in proportion
    // Idefics3's and SmolVLM's (picture_views): size {"longest_edge"}, the long side to this;
    // max_image_size {"longest_edge"}, the side of a view; do_image_splitting into tiles
    int longest_edge = 0, tile = 0;
    bool split = false;
    // Qwen2-VL's (Qwen2.5-VL's): smart_resize, both sides to multiples of `factor` (patch_size ·
    // merge_size) nearest the picture's, scaled to min_pixels … max_pixels pixels where outside;
    // the patches it cuts (patch_size, merge_size, temporal_patch_size), which the model's must equal
    int factor = 0, min_pixels = 0, max_pixels = 0;
    int patch_size = 0, merge_size = 0, temporal_patch_size = 0;
    Resample resample = Resample::Bilinear;
    bool crop = false;            // do_center_crop, to crop_width × crop_height
    int crop_width = 224, crop_height = 224;
    bool rescale = true;          // do_rescale, by rescale_factor (1/255)
    double rescale_factor = 1.0 / 255.0;
    bool normalize = true;        // do_normalize with image_mean, image_std (per channel)
    float mean[3] = {0.5f, 0.5f, 0.5f}, std[3] = {0.5f, 0.5f, 0.5f};

    // The size after the resize, and after the crop too, of an image of this size.
    std::pair<int, int> resized_size(int width, int height) const;
    std::pair<int, int> output_size(int width, int height) const;
};

// preprocessor_config.json (or processor_config.json's "image_processor"); every error names the
// file and the field. Throws ModelError.
ImageProcessor read_image_processor(std::string_view json, const std::string& file);

// What the processor hands the model: pixel_values[c][y][x], channels first (3 × H × W, row-major).
struct PixelValues {
    int width = 0, height = 0;
    std::vector<float> values;
    float at(int c, int y, int x) const { return values[(static_cast<std::size_t>(c) * height + y) * width + x]; }
};
// The picture as the model sees it, before the numbers: resized and cropped (8 bits a channel).
Image sized_picture(const ImageProcessor& p, const Image& image);
// Its pixel values: rescaled and normalized.
PixelValues pixel_values(const ImageProcessor& p, const Image& sized);
// Both: what transformers' processor returns for `image`.
PixelValues process_image(const ImageProcessor& p, const Image& image);

// Idefics3's views of a picture (its PIL processor), each tile × tile pixels:
//   1. the long side to longest_edge, the short in proportion (truncated, then made even; at most
//      4096 a side)
//   2. split: both sides up to multiples of `tile` (the short one from the long one's aspect),
//      cut into rows × cols tiles, row by row, then the whole resized to tile × tile (the global
//      view, last); a picture of one tile is the one view (rows = cols = 0)
//      not split: the one view, resized to tile × tile
// Every resize is PIL's of the 8-bit pixels, with p.resample (Lanczos).
struct PictureViews {
    std::vector<Image> views;
    int rows = 0, cols = 0;
};
PictureViews picture_views(const ImageProcessor& p, const Image& image);
// The sizes those steps resize a width × height picture to, and its tiles, without its pixels
// (what the prompt needs before the views are cut): step 1's, then step 2's (not split: the
// tile's), rows × cols tiles (0 × 0: one view).
struct ViewSizes {
    int width = 0, height = 0;
    int tiled_width = 0, tiled_height = 0;
    int rows = 0, cols = 0;
};
ViewSizes view_sizes(const ImageProcessor& p, int width, int height);
// The tiles of split views side by side, as they cover the picture (rows·tile × cols·tile).
Image joined_tiles(const PictureViews& v);

}  // namespace attn
