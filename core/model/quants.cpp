// quants.cpp: see quants.hpp. Each dequantizer walks a block as ggml lays it out, and forms each
// number with ggml's operations in ggml's order (d·scale first, then ·q, then − min), so the
// floats are ggml's own, bit for bit.
//
// [SECTION] Sizes
// [SECTION] Dequantization
#include "quants.hpp"

#include <cmath>
#include <cstring>

namespace attn {

// [SECTION] Sizes ------------------------------------------------------------------------------

namespace {

constexpr QuantFormat kFormats[] = {
    {Dtype::F32, 0, 1, 4},          {Dtype::F16, 1, 1, 2},         {Dtype::Q4_0, 2, 32, 18},
    {Dtype::Q4_1, 3, 32, 20},       {Dtype::Q5_0, 6, 32, 22},      {Dtype::Q5_1, 7, 32, 24},
    {Dtype::Q8_0, 8, 32, 34},       {Dtype::Q2_K, 10, 256, 84},    {Dtype::Q3_K, 11, 256, 110},
    {Dtype::Q4_K, 12, 256, 144},    {Dtype::Q5_K, 13, 256, 176},   {Dtype::Q6_K, 14, 256, 210},
    {Dtype::IQ4_NL, 20, 32, 18},    {Dtype::BF16, 30, 1, 2},       {Dtype::MXFP4, 39, 32, 17},
};

// ggml's names of the types it has and attnviz does not read (ggml.c's type_traits).
constexpr const char* kOtherTypes[] = {
    nullptr,   nullptr,   nullptr,   nullptr,   "Q4_2",    "Q4_3",     nullptr,  nullptr,  nullptr,  "Q8_1",
    nullptr,   nullptr,   nullptr,   nullptr,   nullptr,   "Q8_K",     "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S",
    nullptr,   "IQ3_S",   "IQ2_S",   "IQ4_XS",  "I8",      "I16",      "I32",    "I64",    "F64",    "IQ1_M",
    nullptr,   "Q4_0_4_4", "Q4_0_4_8", "Q4_0_8_8", "TQ1_0", "TQ2_0",   "IQ4_NL_4_4", "IQ4_NL_4_8", "IQ4_NL_8_8", nullptr,
};

}  // namespace

const QuantFormat* quant_format_of_ggml(std::uint32_t ggml_type) {
    for (const QuantFormat& f : kFormats)
        if (f.ggml_type == ggml_type) return &f;
    return nullptr;
}

const QuantFormat* quant_format_of(Dtype dtype) {
    for (const QuantFormat& f : kFormats)
        if (f.dtype == dtype) return &f;
    return nullptr;
}

std::size_t tensor_bytes(Dtype dtype, std::int64_t n) {
    const QuantFormat* f = quant_format_of(dtype);
    return f ? static_cast<std::size_t>(n / f->block) * static_cast<std::size_t>(f->block_bytes)
             : static_cast<std::size_t>(n) * dtype_bytes(dtype);
}

std::string ggml_type_name(std::uint32_t ggml_type) {
    if (const QuantFormat* f = quant_format_of_ggml(ggml_type)) return dtype_name(f->dtype);
    if (ggml_type < std::size(kOtherTypes) && kOtherTypes[ggml_type]) return kOtherTypes[ggml_type];
    return "type " + std::to_string(ggml_type);
}

// [SECTION] Dequantization -------------------------------------------------------------------

namespace {

float half(const std::uint8_t* p) { return f16_to_f32(static_cast<std::uint16_t>(p[0] | (p[1] << 8))); }

// Q4_K and Q5_K: the j-th of 8 6-bit scales and mins packed in 12 bytes.
void scale_min_k4(int j, const std::uint8_t* q, int& scale, int& min) {
    if (j < 4) {
        scale = q[j] & 63, min = q[j + 4] & 63;
    } else {
        scale = (q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4);
        min = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

constexpr std::int8_t kIq4nlLevels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
constexpr std::int8_t kMxfp4Levels[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};  // 2·E2M1

// One block of each format: 32 or 256 numbers from `b` to `y`.
void q4_0(const std::uint8_t* b, float* y) {
    const float d = half(b);
    for (int j = 0; j < 16; ++j) y[j] = ((b[2 + j] & 0x0F) - 8) * d, y[j + 16] = ((b[2 + j] >> 4) - 8) * d;
}
void q4_1(const std::uint8_t* b, float* y) {
    const float d = half(b), m = half(b + 2);
    for (int j = 0; j < 16; ++j) y[j] = (b[4 + j] & 0x0F) * d + m, y[j + 16] = (b[4 + j] >> 4) * d + m;
}
void q5_0(const std::uint8_t* b, float* y) {
    const float d = half(b);
    std::uint32_t qh;
    std::memcpy(&qh, b + 2, 4);
    const std::uint8_t* qs = b + 6;
    for (int j = 0; j < 16; ++j) {
        const int high0 = ((qh >> j) << 4) & 0x10, high1 = (qh >> (j + 12)) & 0x10;
        y[j] = (((qs[j] & 0x0F) | high0) - 16) * d;
        y[j + 16] = (((qs[j] >> 4) | high1) - 16) * d;
    }
}
void q5_1(const std::uint8_t* b, float* y) {
    const float d = half(b), m = half(b + 2);
    std::uint32_t qh;
    std::memcpy(&qh, b + 4, 4);
    const std::uint8_t* qs = b + 8;
    for (int j = 0; j < 16; ++j) {
        const int high0 = ((qh >> j) << 4) & 0x10, high1 = (qh >> (j + 12)) & 0x10;
        y[j] = ((qs[j] & 0x0F) | high0) * d + m;
        y[j + 16] = ((qs[j] >> 4) | high1) * d + m;
    }
}
void q8_0(const std::uint8_t* b, float* y) {
    const float d = half(b);
    for (int j = 0; j < 32; ++j) y[j] = static_cast<std::int8_t>(b[2 + j]) * d;
}
void q2_k(const std::uint8_t* b, float* y) {
    const std::uint8_t *scales = b, *q = b + 16;
    const float d = half(b + 80), dmin = half(b + 82);
    int is = 0;
    for (int n = 0; n < 256; n += 128, q += 32)
        for (int shift = 0; shift < 8; shift += 2)
            for (int part = 0; part < 2; ++part) {
                const std::uint8_t sc = scales[is++];
                const float dl = d * (sc & 0x0F), ml = dmin * (sc >> 4);
                for (int l = 0; l < 16; ++l) *y++ = dl * ((q[l + 16 * part] >> shift) & 3) - ml;
            }
}
void q3_k(const std::uint8_t* b, float* y) {
    const std::uint8_t *hm = b, *q = b + 32, *packed = b + 96;
    const float d_all = half(b + 108);
    // 16 6-bit scales: low 4 bits in bytes 0–7 (two per byte), high 2 bits in bytes 8–11
    std::int8_t scales[16];
    for (int j = 0; j < 16; ++j) {
        const int low = j < 8 ? packed[j] & 0x0F : packed[j - 8] >> 4;
        const int high = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
        scales[j] = static_cast<std::int8_t>(low | (high << 4));
    }
    int is = 0;
    std::uint8_t m = 1;
    for (int n = 0; n < 256; n += 128, q += 32)
        for (int shift = 0; shift < 8; shift += 2, m = static_cast<std::uint8_t>(m << 1))
            for (int part = 0; part < 2; ++part) {
                const float dl = d_all * (scales[is++] - 32);
                for (int l = 0; l < 16; ++l) {
                    const int k = l + 16 * part;
                    *y++ = dl * (((q[k] >> shift) & 3) - ((hm[k] & m) ? 0 : 4));
                }
            }
}
void q4_k(const std::uint8_t* b, float* y) {
    const float d = half(b), dmin = half(b + 2);
    const std::uint8_t *packed = b + 4, *q = b + 16;
    for (int j = 0; j < 8; j += 2, q += 32) {
        int sc, mn;
        scale_min_k4(j, packed, sc, mn);
        const float d1 = d * sc, m1 = dmin * mn;
        scale_min_k4(j + 1, packed, sc, mn);
        const float d2 = d * sc, m2 = dmin * mn;
        for (int l = 0; l < 32; ++l) *y++ = d1 * (q[l] & 0x0F) - m1;
        for (int l = 0; l < 32; ++l) *y++ = d2 * (q[l] >> 4) - m2;
    }
}
void q5_k(const std::uint8_t* b, float* y) {
    const float d = half(b), dmin = half(b + 2);
    const std::uint8_t *packed = b + 4, *qh = b + 16, *ql = b + 48;
    std::uint8_t u1 = 1, u2 = 2;
    for (int j = 0; j < 8; j += 2, ql += 32, u1 = static_cast<std::uint8_t>(u1 << 2), u2 = static_cast<std::uint8_t>(u2 << 2)) {
        int sc, mn;
        scale_min_k4(j, packed, sc, mn);
        const float d1 = d * sc, m1 = dmin * mn;
        scale_min_k4(j + 1, packed, sc, mn);
        const float d2 = d * sc, m2 = dmin * mn;
        for (int l = 0; l < 32; ++l) *y++ = d1 * ((ql[l] & 0x0F) + (qh[l] & u1 ? 16 : 0)) - m1;
        for (int l = 0; l < 32; ++l) *y++ = d2 * ((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
    }
}
void q6_k(const std::uint8_t* b, float* y) {
    const std::uint8_t *ql = b, *qh = b + 128;
    const std::int8_t* sc = reinterpret_cast<const std::int8_t*>(b + 192);
    const float d = half(b + 208);
    for (int n = 0; n < 256; n += 128, y += 128, ql += 64, qh += 32, sc += 8)
        for (int l = 0; l < 32; ++l) {
            const int is = l / 16;
            const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
            const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
            const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
            const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
            y[l] = d * sc[is] * q1;
            y[l + 32] = d * sc[is + 2] * q2;
            y[l + 64] = d * sc[is + 4] * q3;
            y[l + 96] = d * sc[is + 6] * q4;
        }
}
void iq4_nl(const std::uint8_t* b, float* y) {
    const float d = half(b);
    for (int j = 0; j < 16; ++j) y[j] = d * kIq4nlLevels[b[2 + j] & 0x0F], y[j + 16] = d * kIq4nlLevels[b[2 + j] >> 4];
}
void mxfp4(const std::uint8_t* b, float* y) {
    const float d = std::ldexp(1.0f, static_cast<int>(b[0]) - 128);  // ggml's E8M0 "half": 2^(e − 127) / 2
    for (int j = 0; j < 16; ++j) y[j] = kMxfp4Levels[b[1 + j] & 0x0F] * d, y[j + 16] = kMxfp4Levels[b[1 + j] >> 4] * d;
}

}  // namespace

void dequantize(Dtype dtype, const std::uint8_t* in, std::int64_t n, float* out) {
    const QuantFormat* f = quant_format_of(dtype);
    void (*block)(const std::uint8_t*, float*) = nullptr;
    switch (dtype) {
        case Dtype::Q4_0: block = q4_0; break;
        case Dtype::Q4_1: block = q4_1; break;
        case Dtype::Q5_0: block = q5_0; break;
        case Dtype::Q5_1: block = q5_1; break;
        case Dtype::Q8_0: block = q8_0; break;
        case Dtype::Q2_K: block = q2_k; break;
        case Dtype::Q3_K: block = q3_k; break;
        case Dtype::Q4_K: block = q4_k; break;
        case Dtype::Q5_K: block = q5_k; break;
        case Dtype::Q6_K: block = q6_k; break;
        case Dtype::IQ4_NL: block = iq4_nl; break;
        case Dtype::MXFP4: block = mxfp4; break;
        default: {  // F32, F16, BF16: convert_to_f32's
            TensorInfo t;
            t.dtype = dtype, t.shape = {n}, t.end = static_cast<std::size_t>(n) * dtype_bytes(dtype);
            convert_to_f32(in, t, out);
            return;
        }
    }
    for (std::int64_t i = 0; i < n / f->block; ++i) block(in + i * f->block_bytes, out + i * f->block);
}

}  // namespace attn
