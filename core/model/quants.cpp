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

// One block of each format as groups of 16 numbers: q[i] (exact in 8 bits) and, per group g,
// s[g] and o[g], the number being s·q + o; s and o are ggml's d·scale and −dmin·min, formed as
// ggml forms them (so that s·q + o, rounded twice, is ggml's dequantized number).
struct Groups : QuantGroups {
    void set(int g, float scale, float offset) { s[g] = scale, o[g] = offset; }
    // a K-quant's group g: s = d·a, o = m·b (each a half times a 6- or 8-bit integer: exact), and
    // its block's factors
    void coded(int g, float d, int code_a, float m, int code_b) {
        set(g, d * static_cast<float>(code_a), m * static_cast<float>(code_b));
        if (a) a[g] = static_cast<std::int8_t>(code_a), b[g] = static_cast<std::int8_t>(code_b);
        if (this->d) *this->d = d, *this->m = m;
    }
};
// d·(q − 8) as d·q − 8d, q in 0 … 15: the same number (d·q, 15 bits, and −8d are exact, and so is
// their sum), and 4-bit numbers (held_as: Q4)
void q4_0(const std::uint8_t* b, Groups y) {
    for (int j = 0; j < 16; ++j) y.q[j] = static_cast<std::int8_t>(b[2 + j] & 0x0F), y.q[j + 16] = static_cast<std::int8_t>(b[2 + j] >> 4);
    y.set(0, half(b), -8.0f * half(b)), y.set(1, half(b), -8.0f * half(b));
}
void q4_1(const std::uint8_t* b, Groups y) {
    for (int j = 0; j < 16; ++j) y.q[j] = static_cast<std::int8_t>(b[4 + j] & 0x0F), y.q[j + 16] = static_cast<std::int8_t>(b[4 + j] >> 4);
    y.set(0, half(b), half(b + 2)), y.set(1, half(b), half(b + 2));
}
void q5(const std::uint8_t* b, Groups y, bool with_min) {  // Q5_0: d, qh, qs; Q5_1: d, m, qh, qs
    std::uint32_t qh;
    std::memcpy(&qh, b + (with_min ? 4 : 2), 4);
    const std::uint8_t* qs = b + (with_min ? 8 : 6);
    const int shift = with_min ? 0 : 16;
    for (int j = 0; j < 16; ++j) {
        y.q[j] = static_cast<std::int8_t>((((qs[j] & 0x0F) | (((qh >> j) << 4) & 0x10))) - shift);
        y.q[j + 16] = static_cast<std::int8_t>((((qs[j] >> 4) | ((qh >> (j + 12)) & 0x10))) - shift);
    }
    const float m = with_min ? half(b + 2) : 0.0f;
    y.set(0, half(b), m), y.set(1, half(b), m);
}
void q8_0(const std::uint8_t* b, Groups y) {
    std::memcpy(y.q, b + 2, 32);
    y.set(0, half(b), 0.0f), y.set(1, half(b), 0.0f);
}
void q2_k(const std::uint8_t* b, Groups y) {
    const std::uint8_t *scales = b, *q = b + 16;
    const float d = half(b + 80), dmin = half(b + 82);
    int g = 0;
    for (int n = 0; n < 256; n += 128, q += 32)
        for (int shift = 0; shift < 8; shift += 2)
            for (int part = 0; part < 2; ++part, ++g) {
                const std::uint8_t sc = scales[g];
                y.set(g, d * (sc & 0x0F), -(dmin * (sc >> 4)));
                for (int l = 0; l < 16; ++l) y.q[16 * g + l] = static_cast<std::int8_t>((q[l + 16 * part] >> shift) & 3);
            }
}
void q3_k(const std::uint8_t* b, Groups y) {
    const std::uint8_t *hm = b, *q = b + 32, *packed = b + 96;
    const float d_all = half(b + 108);
    int g = 0;
    std::uint8_t m = 1;
    for (int n = 0; n < 256; n += 128, q += 32)
        for (int shift = 0; shift < 8; shift += 2, m = static_cast<std::uint8_t>(m << 1))
            for (int part = 0; part < 2; ++part, ++g) {
                // 16 6-bit scales: low 4 bits in bytes 0–7 (two per byte), high 2 bits in bytes 8–11
                const int low = g < 8 ? packed[g] & 0x0F : packed[g - 8] >> 4;
                const int high = (packed[8 + g % 4] >> (2 * (g / 4))) & 3;
                y.coded(g, d_all, (low | (high << 4)) - 32, 0.0f, 0);
                for (int l = 0; l < 16; ++l) {
                    const int k = l + 16 * part;
                    y.q[16 * g + l] = static_cast<std::int8_t>(((q[k] >> shift) & 3) - ((hm[k] & m) ? 0 : 4));
                }
            }
}
void q45_k(const std::uint8_t* b, Groups y, bool fifth) {  // Q4_K; Q5_K with its fifth bits
    const float d = half(b), dmin = half(b + 2);
    const std::uint8_t *packed = b + 4, *qh = b + 16, *ql = b + (fifth ? 48 : 16);
    for (int j = 0; j < 8; ++j) {  // sub-block j: 32 numbers, the low nibbles of ql[32·(j/2) …] or the high
        int sc, mn;
        scale_min_k4(j, packed, sc, mn);
        y.coded(2 * j, d, sc, -dmin, mn), y.coded(2 * j + 1, d, sc, -dmin, mn);  // −dmin·mn: −(dmin·mn) exactly
        const std::uint8_t* bytes = ql + 32 * (j / 2);
        for (int l = 0; l < 32; ++l) {
            const int low = j % 2 ? bytes[l] >> 4 : bytes[l] & 0x0F;
            y.q[32 * j + l] = static_cast<std::int8_t>(low + (fifth && (qh[l] & (1 << j)) ? 16 : 0));
        }
    }
}
void q6_k(const std::uint8_t* b, Groups y) {
    const std::uint8_t *ql = b, *qh = b + 128;
    const std::int8_t* sc = reinterpret_cast<const std::int8_t*>(b + 192);
    const float d = half(b + 208);
    for (int g = 0; g < 16; ++g) y.coded(g, d, sc[g], 0.0f, 0);
    for (int n = 0; n < 2; ++n, ql += 64, qh += 32)
        for (int l = 0; l < 32; ++l) {
            std::int8_t* q = y.q + 128 * n + l;
            q[0] = static_cast<std::int8_t>(((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32);
            q[32] = static_cast<std::int8_t>(((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32);
            q[64] = static_cast<std::int8_t>(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
            q[96] = static_cast<std::int8_t>(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
        }
}
void levels(const std::uint8_t* qs, const std::int8_t* table, float d, Groups y) {  // IQ4_NL, MXFP4
    for (int j = 0; j < 16; ++j) y.q[j] = table[qs[j] & 0x0F], y.q[j + 16] = table[qs[j] >> 4];
    y.set(0, d, 0.0f), y.set(1, d, 0.0f);
}

void decode_block(Dtype dtype, const std::uint8_t* b, Groups y) {
    switch (dtype) {
        case Dtype::Q4_0: return q4_0(b, y);
        case Dtype::Q4_1: return q4_1(b, y);
        case Dtype::Q5_0: return q5(b, y, false);
        case Dtype::Q5_1: return q5(b, y, true);
        case Dtype::Q8_0: return q8_0(b, y);
        case Dtype::Q2_K: return q2_k(b, y);
        case Dtype::Q3_K: return q3_k(b, y);
        case Dtype::Q4_K: return q45_k(b, y, false);
        case Dtype::Q5_K: return q45_k(b, y, true);
        case Dtype::Q6_K: return q6_k(b, y);
        case Dtype::IQ4_NL: return levels(b + 2, kIq4nlLevels, half(b), y);
        case Dtype::MXFP4: return levels(b + 1, kMxfp4Levels, std::ldexp(1.0f, static_cast<int>(b[0]) - 128), y);  // ggml's E8M0 "half"
        default: return;
    }
}

}  // namespace

kernels::Precision held_as(Dtype dtype) {
    switch (dtype) {
        case Dtype::Q4_0:
        case Dtype::Q4_1: return kernels::Precision::Q4;
        case Dtype::Q4_K: return kernels::Precision::Q4K;
        case Dtype::Q5_K: return kernels::Precision::Q5K;
        case Dtype::Q8_0:
        case Dtype::Q5_0:
        case Dtype::IQ4_NL:
        case Dtype::MXFP4: return kernels::Precision::Q8S;
        case Dtype::Q6_K: return kernels::Precision::Q6K;
        case Dtype::Q3_K: return kernels::Precision::Q8K;
        default: return kernels::Precision::Q8;
    }
}

void decode_groups(Dtype dtype, const std::uint8_t* in, std::int64_t n, const QuantGroups& out) {
    const QuantFormat* f = quant_format_of(dtype);
    const int groups = f->block / kGroup;
    const auto at = [](auto* p, std::int64_t i) { return p ? p + i : nullptr; };
    for (std::int64_t i = 0; i < n / f->block; ++i) {
        Groups y;
        y.q = out.q + i * f->block, y.s = out.s + i * groups, y.o = out.o + i * groups;
        y.a = at(out.a, i * groups), y.b = at(out.b, i * groups);
        const bool coded = f->block == 256 && out.d;  // the K-quants' block: one d and m
        y.d = coded ? out.d + i : nullptr, y.m = coded ? out.m + i : nullptr;
        decode_block(dtype, in + i * f->block_bytes, y);
    }
}

void dequantize(Dtype dtype, const std::uint8_t* in, std::int64_t n, float* out) {
    if (!is_block_format(dtype)) {  // F32, F16, BF16: convert_to_f32's
        TensorInfo t;
        t.dtype = dtype, t.shape = {n}, t.end = static_cast<std::size_t>(n) * dtype_bytes(dtype);
        convert_to_f32(in, t, out);
        return;
    }
    const QuantFormat* f = quant_format_of(dtype);
    std::int8_t q[256];
    float s[16], o[16];
    for (std::int64_t i = 0; i < n / f->block; ++i) {
        Groups y;
        y.q = q, y.s = s, y.o = o;
        decode_block(dtype, in + i * f->block_bytes, y);
        for (int k = 0; k < f->block; ++k) {
            const float scaled = s[k / kGroup] * q[k];  // ggml's d·q, then + m or − dmin·min
            out[i * f->block + k] = scaled + o[k / kGroup];
        }
    }
}

}  // namespace attn
