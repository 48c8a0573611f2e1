// image.cpp: image.hpp's resampling (PIL's Resample.c, 8 bits a channel), crop and processor.
#include "image.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

namespace attn {

// [SECTION] Resampling as PIL does ---------------------------------------------------------------

namespace {

constexpr double kPi = 3.14159265358979323846;

double box_filter(double x) { return x > -0.5 && x <= 0.5 ? 1.0 : 0.0; }
double bilinear_filter(double x) {
    x = std::fabs(x);
    return x < 1.0 ? 1.0 - x : 0.0;
}
double hamming_filter(double x) {
    x = std::fabs(x);
    if (x == 0.0) return 1.0;
    if (x >= 1.0) return 0.0;
    x *= kPi;
    return std::sin(x) / x * (0.54 + 0.46 * std::cos(x));
}
double bicubic_filter(double x) {  // a = −0.5
    constexpr double a = -0.5;
    x = std::fabs(x);
    if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
    if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
    return 0.0;
}
double sinc(double x) {
    if (x == 0.0) return 1.0;
    x *= kPi;
    return std::sin(x) / x;
}
double lanczos_filter(double x) { return -3.0 <= x && x < 3.0 ? sinc(x) * sinc(x / 3) : 0.0; }

struct Filter {
    double (*f)(double);
    double support;
};

Filter filter_of(Resample r) {
    switch (r) {
    case Resample::Box: return {box_filter, 0.5};
    case Resample::Bilinear: return {bilinear_filter, 1.0};
    case Resample::Hamming: return {hamming_filter, 1.0};
    case Resample::Bicubic: return {bicubic_filter, 2.0};
    case Resample::Lanczos: return {lanczos_filter, 3.0};
    case Resample::Nearest: break;
    }
    return {bilinear_filter, 1.0};  // Nearest is refused where it is read (read_image_processor)
}

constexpr int kPrecisionBits = 32 - 8 - 2;

// One output pixel's inputs: the first, their count, and their 22-bit fixed-point weights.
struct Taps {
    int first = 0, count = 0;
    std::vector<std::int32_t> k;
};

// normalize_coeffs_8bpc: resample_weights' as 22-bit fixed-point numbers.
std::vector<Taps> coefficients(int in_size, int out_size, Resample filter) {
    std::vector<Taps> out;
    for (const ResampleWeights& r : resample_weights(in_size, out_size, filter)) {
        Taps& t = out.emplace_back();
        t.first = r.first, t.count = static_cast<int>(r.w.size());
        for (double v : r.w) {
            const double fixed = v * (1 << kPrecisionBits);
            t.k.push_back(static_cast<std::int32_t>(v < 0 ? -0.5 + fixed : 0.5 + fixed));
        }
    }
    return out;
}

std::uint8_t clip8(std::int64_t v) {
    if (v >= (std::int64_t{1} << kPrecisionBits << 8)) return 255;
    if (v <= 0) return 0;
    return static_cast<std::uint8_t>(v >> kPrecisionBits);
}

}  // namespace

// precompute_coeffs: each output sample's window of inputs and their filter values, normalized.
std::vector<ResampleWeights> resample_weights(int in_size, int out_size, Resample r) {
    const Filter filter = filter_of(r);
    const double scale = static_cast<double>(in_size) / out_size;
    const double filterscale = std::max(scale, 1.0);
    const double support = filter.support * filterscale;
    std::vector<ResampleWeights> out(static_cast<std::size_t>(out_size));
    for (int xx = 0; xx < out_size; ++xx) {
        const double center = (xx + 0.5) * scale;
        const double ss = 1.0 / filterscale;
        int xmin = static_cast<int>(center - support + 0.5);
        if (xmin < 0) xmin = 0;
        int xmax = static_cast<int>(center + support + 0.5);
        if (xmax > in_size) xmax = in_size;
        xmax -= xmin;
        ResampleWeights& t = out[static_cast<std::size_t>(xx)];
        t.first = xmin;
        t.w.resize(static_cast<std::size_t>(std::max(xmax, 0)));
        double ww = 0.0;
        for (int x = 0; x < xmax; ++x) {
            t.w[static_cast<std::size_t>(x)] = filter.f((x + xmin - center + 0.5) * ss);
            ww += t.w[static_cast<std::size_t>(x)];
        }
        if (ww != 0.0)
            for (double& v : t.w) v /= ww;
    }
    return out;
}

Image resize_image(const Image& in, int width, int height, Resample r) {
    Image cur = in;
    if (width != cur.width) {  // the horizontal pass first, each pixel rounded to 8 bits
        const std::vector<Taps> taps = coefficients(cur.width, width, r);
        Image out{width, cur.height, std::vector<std::uint8_t>(static_cast<std::size_t>(width) * cur.height * 3)};
        for (int y = 0; y < cur.height; ++y)
            for (int x = 0; x < width; ++x) {
                const Taps& t = taps[static_cast<std::size_t>(x)];
                for (int c = 0; c < 3; ++c) {
                    std::int64_t s = std::int64_t{1} << (kPrecisionBits - 1);
                    for (int k = 0; k < t.count; ++k) s += std::int64_t{cur.at(t.first + k, y, c)} * t.k[static_cast<std::size_t>(k)];
                    out.rgb[(static_cast<std::size_t>(y) * width + x) * 3 + c] = clip8(s);
                }
            }
        cur = std::move(out);
    }
    if (height != cur.height) {  // then the vertical pass
        const std::vector<Taps> taps = coefficients(cur.height, height, r);
        Image out{cur.width, height, std::vector<std::uint8_t>(static_cast<std::size_t>(cur.width) * height * 3)};
        for (int y = 0; y < height; ++y) {
            const Taps& t = taps[static_cast<std::size_t>(y)];
            for (int x = 0; x < cur.width; ++x)
                for (int c = 0; c < 3; ++c) {
                    std::int64_t s = std::int64_t{1} << (kPrecisionBits - 1);
                    for (int k = 0; k < t.count; ++k) s += std::int64_t{cur.at(x, t.first + k, c)} * t.k[static_cast<std::size_t>(k)];
                    out.rgb[(static_cast<std::size_t>(y) * cur.width + x) * 3 + c] = clip8(s);
                }
        }
        cur = std::move(out);
    }
    return cur;
}

Image center_crop(const Image& in, int width, int height) {
    const int top = (in.height - height) / 2 - ((in.height - height) % 2 != 0 && in.height < height);  // Python's //
    const int left = (in.width - width) / 2 - ((in.width - width) % 2 != 0 && in.width < width);
    Image out{width, height, std::vector<std::uint8_t>(static_cast<std::size_t>(width) * height * 3, 0)};
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x) {
            const int sy = y + top, sx = x + left;
            if (sy < 0 || sy >= in.height || sx < 0 || sx >= in.width) continue;
            for (int c = 0; c < 3; ++c) out.rgb[(static_cast<std::size_t>(y) * width + x) * 3 + c] = in.at(sx, sy, c);
        }
    return out;
}

// [SECTION] A processor: preprocessor_config.json ------------------------------------------------

std::pair<int, int> ImageProcessor::resized_size(int w, int h) const {
    if (!resize) return {w, h};
    if (factor > 0) {  // smart_resize: sides in Python's round (half to even), floor or ceil
        const double f = factor, area = static_cast<double>(w) * h;
        auto side = [&](int v) { return static_cast<int>(std::nearbyint(v / f)) * factor; };
        int hb = side(h), wb = side(w);
        if (static_cast<double>(hb) * wb > max_pixels) {
            const double beta = std::sqrt(area / max_pixels);
            hb = std::max(factor, static_cast<int>(std::floor(h / beta / f)) * factor);
            wb = std::max(factor, static_cast<int>(std::floor(w / beta / f)) * factor);
        } else if (static_cast<double>(hb) * wb < min_pixels) {
            const double beta = std::sqrt(min_pixels / area);
            hb = static_cast<int>(std::ceil(h * beta / f)) * factor, wb = static_cast<int>(std::ceil(w * beta / f)) * factor;
        }
        return {std::max(wb, factor), std::max(hb, factor)};
    }
    if (shortest_edge == 0) return {width, height};
    // get_resize_output_image_size(default_to_square=False): the long side in proportion, truncated
    const int shorter = std::min(w, h), longer = std::max(w, h);
    const int new_long = static_cast<int>(static_cast<double>(shortest_edge) * longer / shorter);
    return w <= h ? std::pair{shortest_edge, new_long} : std::pair{new_long, shortest_edge};
}

std::pair<int, int> ImageProcessor::output_size(int w, int h) const {
    return crop ? std::pair{crop_width, crop_height} : resized_size(w, h);
}

namespace {

struct ProcessorFields {
    const nlohmann::json& j;
    const std::string& file;
    [[noreturn]] void fail(const std::string& field, const std::string& message) const { throw ModelError(file, field, message); }
    const nlohmann::json* find(const char* field) const {
        auto it = j.find(field);
        return it == j.end() || it->is_null() ? nullptr : &*it;
    }
    bool boolean(const char* field, bool fallback) const {
        const nlohmann::json* v = find(field);
        if (!v) return fallback;
        if (!v->is_boolean()) fail(field, "expected true or false");
        return v->get<bool>();
    }
    // A whole number ≥ 1; `fallback` when absent.
    int integer(const char* field, int fallback) const {
        const nlohmann::json* v = find(field);
        if (!v) return fallback;
        if (!v->is_number_integer() || v->get<long long>() < 1 || v->get<long long>() > (1 << 30)) fail(field, "expected a whole number ≥ 1");
        return v->get<int>();
    }
    // {"longest_edge": N} (idefics3's size and max_image_size); `fallback` when absent.
    int edge(const char* field, int fallback) const {
        const nlohmann::json* v = find(field);
        if (!v) return fallback;
        if (!v->is_object() || !v->contains("longest_edge")) fail(field, "expected {\"longest_edge\": pixels}");
        return size((*v)["longest_edge"], std::string(field) + ".longest_edge");
    }
    int size(const nlohmann::json& v, const std::string& field) const {
        if (!v.is_number_integer() || v.get<long long>() < 1 || v.get<long long>() > 8192) fail(field, "expected a size from 1 to 8192 pixels");
        return v.get<int>();
    }
    // {"height", "width"}, {"shortest_edge"} or one number (square, or the shortest edge where
    // the processor does not default to a square).
    void sizes(const char* field, int& w, int& h, int* shortest, bool square_number) const {
        const nlohmann::json* v = find(field);
        if (!v) return;
        const std::string f = field;
        if (v->is_number()) {
            if (shortest && !square_number) *shortest = size(*v, f);
            else w = h = size(*v, f);
        } else if (v->is_object() && v->contains("height") && v->contains("width")) {
            h = size((*v)["height"], f + ".height"), w = size((*v)["width"], f + ".width");
        } else if (shortest && v->is_object() && v->contains("shortest_edge")) {
            if (v->contains("longest_edge")) fail(f + ".longest_edge", "a longest edge is not read yet");
            *shortest = size((*v)["shortest_edge"], f + ".shortest_edge");
        } else {
            fail(f, shortest ? "expected {\"height\", \"width\"} or {\"shortest_edge\"}" : "expected {\"height\", \"width\"}");
        }
    }
    void triple(const char* field, float out[3]) const {
        const nlohmann::json* v = find(field);
        if (!v) return;
        if (!v->is_array() || v->size() != 3) fail(field, "expected 3 numbers, one a channel");
        for (int c = 0; c < 3; ++c) {
            if (!(*v)[c].is_number()) fail(std::string(field) + "[" + std::to_string(c) + "]", "expected a number");
            out[c] = static_cast<float>((*v)[c].get<double>());
        }
        if (std::string(field) == "image_std")
            for (int c = 0; c < 3; ++c)
                if (!(out[c] > 0)) fail(std::string(field) + "[" + std::to_string(c) + "]", "expected a number above 0");
    }
};

}  // namespace

ImageProcessor read_image_processor(std::string_view json, const std::string& file) {
    const nlohmann::json parsed = nlohmann::json::parse(json, nullptr, false);
    if (!parsed.is_object()) throw ModelError(file, "", "not a JSON object");
    const nlohmann::json& j = parsed.contains("image_processor") && parsed["image_processor"].is_object() ? parsed["image_processor"] : parsed;
    const ProcessorFields f{j, file};
    ImageProcessor p;
    const char* type_field = f.find("image_processor_type") ? "image_processor_type" : "feature_extractor_type";
    const nlohmann::json* type = f.find(type_field);
    if (!type || !type->is_string()) f.fail("image_processor_type", "missing: which processor (ViTImageProcessor, CLIPImageProcessor, …)");
    p.type = type->get<std::string>();
    std::string base = p.type;
    for (const char* suffix : {"ImageProcessorFast", "ImageProcessor", "FeatureExtractor"})
        if (base.size() > std::string_view(suffix).size() && base.ends_with(suffix)) {
            base.resize(base.size() - std::string_view(suffix).size());
            break;
        }
    // ViT and SigLIP resize to a square; CLIP and Bit (DINOv2's) the shortest edge, then crop;
    // Idefics3 and SmolVLM the longest edge, then into tiles (picture_views).
    // Gemma 3's resizes to a square as SigLIP's, bilinear (its pan and scan, extra crops of a long
    // picture, is off unless asked for).
    const bool square = base == "ViT" || base == "Siglip" || base == "DeiT" || base == "Gemma3", tiles = base == "Idefics3" || base == "SmolVLM";
    const bool smart = base == "Qwen2VL" || base == "Qwen2_5_VL";
    if (!square && !tiles && !smart && base != "CLIP" && base != "Bit")
        f.fail(type_field, "\"" + p.type + "\": attnviz reads ViT's, DeiT's, CLIP's, SigLIP's, Bit's (DINOv2's), Idefics3's, SmolVLM's, Gemma 3's and Qwen2-VL's image processors");
    if (f.boolean("do_pan_and_scan", false))
        f.fail("do_pan_and_scan", "true: attnviz reads the one view of the whole picture, not pan and scan's crops (Gemma3Processor's default is false)");
    if (!square && !tiles && !smart) p.shortest_edge = 224, p.crop = true, p.resample = Resample::Bicubic;
    if (tiles) {  // Idefics3ImageProcessor's defaults
        p.resample = Resample::Lanczos;
        p.longest_edge = f.edge("size", 4 * 364), p.tile = f.edge("max_image_size", 364);
        p.split = f.boolean("do_image_splitting", true);
    }
    if (smart) {  // Qwen2VLImageProcessor's defaults; min_pixels and max_pixels before size's edges
        p.resample = Resample::Bicubic;
        p.patch_size = f.integer("patch_size", 14), p.merge_size = f.integer("merge_size", 2);
        p.temporal_patch_size = f.integer("temporal_patch_size", 2);
        p.factor = p.patch_size * p.merge_size;
        const nlohmann::json* size = f.find("size");
        const auto edge = [&](const char* field, const char* key, int fallback) {
            if (f.find(field)) return f.integer(field, fallback);
            if (!size || !size->is_object() || !size->contains(key)) return fallback;
            const nlohmann::json& v = (*size)[key];
            if (!v.is_number_integer() || v.get<long long>() < 1 || v.get<long long>() > (1 << 30))
                f.fail(std::string("size.") + key, "expected a number of pixels ≥ 1");
            return v.get<int>();
        };
        p.min_pixels = edge("min_pixels", "shortest_edge", 56 * 56), p.max_pixels = edge("max_pixels", "longest_edge", 28 * 28 * 1280);
        if (p.max_pixels < p.min_pixels) f.fail("max_pixels", std::to_string(p.max_pixels) + " is below min_pixels " + std::to_string(p.min_pixels));
    }
    if (base == "CLIP" || base == "Bit" || smart) {
        const float m[3] = {0.48145466f, 0.4578275f, 0.40821073f}, s[3] = {0.26862954f, 0.26130258f, 0.27577711f};
        std::copy(m, m + 3, p.mean), std::copy(s, s + 3, p.std);
    }
    if (base == "Siglip") p.resample = Resample::Bicubic;
    p.resize = f.boolean("do_resize", true);
    if (!tiles && !smart) f.sizes("size", p.width, p.height, &p.shortest_edge, square);
    if (square) p.shortest_edge = 0;
    if (const nlohmann::json* r = f.find("resample")) {
        if (!r->is_number_integer() || r->get<int>() < 0 || r->get<int>() > 5) f.fail("resample", "expected PIL's resampling filter, 0 to 5");
        p.resample = static_cast<Resample>(r->get<int>());
        if (p.resample == Resample::Nearest) f.fail("resample", "0 (nearest) is not read yet: bilinear (2), bicubic (3), lanczos (1), box (4), hamming (5)");
    }
    p.crop = !smart && f.boolean("do_center_crop", p.crop);  // Qwen2VLImageProcessor never crops
    f.sizes("crop_size", p.crop_width, p.crop_height, nullptr, true);
    p.rescale = f.boolean("do_rescale", true);
    if (const nlohmann::json* r = f.find("rescale_factor")) {
        if (!r->is_number() || !(r->get<double>() > 0)) f.fail("rescale_factor", "expected a number above 0");
        p.rescale_factor = r->get<double>();
    }
    p.normalize = f.boolean("do_normalize", true);
    f.triple("image_mean", p.mean);
    f.triple("image_std", p.std);
    return p;
}

Image sized_picture(const ImageProcessor& p, const Image& image) {
    Image im = image;
    if (const auto [w, h] = p.resized_size(im.width, im.height); w != im.width || h != im.height) im = resize_image(im, w, h, p.resample);
    if (p.crop) im = center_crop(im, p.crop_width, p.crop_height);
    return im;
}

PixelValues process_image(const ImageProcessor& p, const Image& image) { return pixel_values(p, sized_picture(p, image)); }

PixelValues pixel_values(const ImageProcessor& p, const Image& im) {
    PixelValues out;
    out.width = im.width, out.height = im.height;
    out.values.resize(static_cast<std::size_t>(3) * im.width * im.height);
    for (int c = 0; c < 3; ++c)
        for (int y = 0; y < im.height; ++y)
            for (int x = 0; x < im.width; ++x) {
                // As NumPy: float32(float64(u8) · factor), then (v − mean) / std in float32.
                float v = p.rescale ? static_cast<float>(static_cast<double>(im.at(x, y, c)) * p.rescale_factor) : static_cast<float>(im.at(x, y, c));
                if (p.normalize) v = (v - p.mean[c]) / p.std[c];
                out.values[(static_cast<std::size_t>(c) * im.height + y) * im.width + x] = v;
            }
    return out;
}

ViewSizes view_sizes(const ImageProcessor& p, int width, int height) {
    // 1. get_resize_output_image_size: the long side to longest_edge (the short one truncated,
    //    then even), then at most 4096 a side; sizes as Python's int(float) gives them
    ViewSizes v;
    int w = width, h = height;
    if (p.resize) {
        double aspect = static_cast<double>(w) / h;
        if (w >= h) w = p.longest_edge, h = static_cast<int>(w / aspect), h += h % 2;
        else h = p.longest_edge, w = static_cast<int>(h * aspect), w += w % 2;
        w = std::max(w, 1), h = std::max(h, 1);
        constexpr int kMaxSide = 4096;
        aspect = static_cast<double>(w) / h;
        if (w >= h && w > kMaxSide) w = kMaxSide, h = static_cast<int>(w / aspect);
        else if (h > w && h > kMaxSide) h = kMaxSide, w = static_cast<int>(h * aspect);
        w = std::max(w, 1), h = std::max(h, 1);
    }
    v.width = w, v.height = h;
    const int t = p.tile;
    if (!p.split) {
        v.tiled_width = v.tiled_height = t;
        return v;
    }
    // 2. resize_for_vision_encoder: the long side up to a multiple of the tile, the short one from
    //    it in proportion, then up to a multiple too
    const auto up = [t](double x) { return static_cast<int>(std::ceil(x / t)) * t; };
    const double aspect = static_cast<double>(w) / h;
    if (w >= h) w = up(w), h = up(static_cast<int>(w / aspect));
    else h = up(h), w = up(static_cast<int>(h * aspect));
    v.tiled_width = w, v.tiled_height = h;
    if (w > t || h > t) v.rows = h / t, v.cols = w / t;
    return v;
}

PictureViews picture_views(const ImageProcessor& p, const Image& image) {
    const ViewSizes v = view_sizes(p, image.width, image.height);
    const auto sized_to = [&](const Image& from, int w, int h) { return w != from.width || h != from.height ? resize_image(from, w, h, p.resample) : from; };
    const Image sized = sized_to(sized_to(image, v.width, v.height), v.tiled_width, v.tiled_height);
    PictureViews out;
    out.rows = v.rows, out.cols = v.cols;
    if (v.rows == 0) {  // one view
        out.views.push_back(sized);
        return out;
    }
    const int t = p.tile, w = v.tiled_width;
    for (int r = 0; r < out.rows; ++r)
        for (int c = 0; c < out.cols; ++c) {
            Image& tile = out.views.emplace_back();
            tile.width = tile.height = t;
            tile.rgb.resize(static_cast<std::size_t>(t) * t * 3);
            for (int y = 0; y < t; ++y) {
                const std::uint8_t* row = &sized.rgb[((static_cast<std::size_t>(r) * t + y) * w + static_cast<std::size_t>(c) * t) * 3];
                std::copy(row, row + static_cast<std::size_t>(t) * 3, &tile.rgb[static_cast<std::size_t>(y) * t * 3]);
            }
        }
    out.views.push_back(resize_image(sized, t, t, p.resample));
    return out;
}

Image joined_tiles(const PictureViews& v) {
    Image out;
    if (v.rows <= 0 || v.cols <= 0 || v.views.empty()) return out;
    const int t = v.views.front().width;
    out.width = v.cols * t, out.height = v.rows * t;
    out.rgb.resize(static_cast<std::size_t>(out.width) * out.height * 3);
    for (int r = 0; r < v.rows; ++r)
        for (int c = 0; c < v.cols; ++c) {
            const Image& tile = v.views[static_cast<std::size_t>(r * v.cols + c)];
            for (int y = 0; y < t; ++y)
                std::copy_n(&tile.rgb[static_cast<std::size_t>(y) * t * 3], static_cast<std::size_t>(t) * 3,
                            &out.rgb[((static_cast<std::size_t>(r) * t + y) * out.width + static_cast<std::size_t>(c) * t) * 3]);
        }
    return out;
}

}  // namespace attn
