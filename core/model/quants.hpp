// quants.hpp: ggml's block formats, as GGUF files hold weights (llama.cpp, ollama, LM Studio):
// each row of a tensor is cut into blocks of 32 or 256 numbers, each block stored as a few
// scales and small integers. Their sizes, and each block's numbers as ggml's dequantize_row_*
// computes them, exactly (the same float operations in the same order).
//
// The formats (QK = numbers per block, bytes per block; d, dmin: IEEE halves, read as floats):
//   Q4_0    32  18  d, 16 bytes of 4-bit q (numbers j and j + 16 in byte j):  d·(q − 8) = d·q − 8d
//   Q4_1    32  20  d, m, 16 bytes of 4-bit q:                                 d·q + m
//   Q5_0    32  22  d, 32 high bits, 16 bytes of low nibbles:                   d·(q − 16)
//   Q5_1    32  24  d, m, 32 high bits, 16 bytes of low nibbles:                d·q + m
//   Q8_0    32  34  d, 32 int8:                                                 d·q
//   Q2_K   256  84  16 bytes of 4-bit scale | 4-bit min, 64 bytes of 2-bit q, d, dmin:
//                   per 16 numbers (d·scale)·q − dmin·min
//   Q3_K   256 110  32 bytes of high bits, 64 bytes of 2-bit low bits, 12 bytes of 16 6-bit
//                   scales, d: per 16 numbers (d·(scale − 32))·(q − 4·(high bit unset))
//   Q4_K   256 144  d, dmin, 12 bytes of 8 6-bit scales and mins, 128 bytes of 4-bit q:
//                   per 32 numbers (d·scale)·q − dmin·min
//   Q5_K   256 176  as Q4_K, then 32 bytes of fifth bits before the low nibbles
//   Q6_K   256 210  128 bytes of low nibbles, 64 bytes of 2-bit high parts, 16 int8 scales,
//                   d: per 16 numbers (d·scale)·(q − 32)
//   IQ4_NL  32  18  d, 16 bytes of 4-bit indices into a fixed table of 16 levels: d·level
//   MXFP4   32  17  an E8M0 exponent e, 16 bytes of 4-bit E2M1 codes: 2^(e − 128)·(2·fp4)
// F32, F16 and BF16 are blocks of one number.
//
// [SECTION] Sizes
// [SECTION] Dequantization
#pragma once

#include "kernels.hpp"
#include "safetensors.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

namespace attn {

// [SECTION] Sizes ------------------------------------------------------------------------------

// GGUF's tensor type numbers (ggml_type) for the types attnviz reads.
struct QuantFormat {
    Dtype dtype;
    std::uint32_t ggml_type;  // as GGUF stores it
    int block;                // numbers per block (1 for F32, F16, BF16)
    int block_bytes;
};
// The row of a GGUF type number, or nullptr when attnviz does not read it.
const QuantFormat* quant_format_of_ggml(std::uint32_t ggml_type);
const QuantFormat* quant_format_of(Dtype dtype);  // nullptr for a dtype that is not a GGUF type
// The bytes of n numbers of `dtype` (n a multiple of its block).
std::size_t tensor_bytes(Dtype dtype, std::int64_t n);
// ggml's name of a type number attnviz does not read ("IQ2_XXS", …), for messages; "type N" if unknown.
std::string ggml_type_name(std::uint32_t ggml_type);

// [SECTION] Dequantization -------------------------------------------------------------------

// Every block is groups of 16 numbers, each s·q + o with q an 8-bit integer and the group's
// scale s and offset o (ggml's d·scale and −dmin·min, or d and m, or d and 0): what a product
// reads them as, kept quantized (kernels.hpp's grouped precisions).
constexpr int kGroup = kernels::kQ8Group;
// The precision a product reads a block format in (q and s·q + o as decode_groups gives them):
//   Q4_0, Q4_1  Q4: every q in 0 … 15 (Q4_0's as d·q − 8d, exactly its d·(q − 8)), each two
//               groups of 16 with one scale and offset (0.75 bytes a number where Q8 takes 1.5);
//   Q4_K        Q4K: the same, with s and o coded as the file codes them (d·a, m·b);
//   Q5_K        Q5K: 5-bit numbers, coded as Q4K;
//   Q6_K        Q6K: 6-bit numbers, s = d·a, o = 0;
//   Q3_K        Q8K: the same as 8-bit numbers;
//   Q8_0, Q5_0, IQ4_NL, MXFP4  Q8S: 8-bit numbers, one scale per 32 (o = 0);
//   the others  Q8 (Q2_K, Q5_1).
kernels::Precision held_as(Dtype dtype);
// A block format's numbers as groups of 16: q[0 … n), s[0 … n/16), o[0 … n/16) (the number
// s·q + o); for the K-quants also the codes a, b per group (n/16 each) and the factors d, m per
// block of 256 (n/256 each), s = d·a and o = m·b exactly (Q6_K, Q3_K: b and m 0). The codes
// and factors are written where given (the others' are left unwritten).
struct QuantGroups {
    std::int8_t* q = nullptr;
    float* s = nullptr;
    float* o = nullptr;
    std::int8_t* a = nullptr;
    std::int8_t* b = nullptr;
    float* d = nullptr;
    float* m = nullptr;
};
// n / block blocks at `in` (a block format; n a multiple of its block).
void decode_groups(Dtype dtype, const std::uint8_t* in, std::int64_t n, const QuantGroups& out);
// out[0 … n) = the numbers of n / block blocks at `in` (n a multiple of the block): s·q + o
// rounded twice, as ggml's dequantize_row_* forms them. F32, F16 and BF16 as convert_to_f32.
void dequantize(Dtype dtype, const std::uint8_t* in, std::int64_t n, float* out);

}  // namespace attn
