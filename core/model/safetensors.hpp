// safetensors.hpp: the header of a .safetensors file, checked, and its tensors converted to F32.
//
// The format: 8 bytes, the header's length N (little-endian u64); N bytes of JSON,
// {"NAME": {"dtype": "F32", "shape": [768, 2304], "data_offsets": [BEGIN, END]}, …,
// "__metadata__": {…}}; then the data, offsets relative to its start. Every offset and size is
// checked here (the data of the tensors covers the data section exactly, without overlaps), so
// a bad file is a ModelError before a byte of a tensor is read.
//
// [SECTION] Dtypes
// [SECTION] The header
// [SECTION] Conversion to F32
#pragma once

#include "files.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace attn {

// [SECTION] Dtypes ---------------------------------------------------------------------------

// Every dtype of the format; the runtime converts F32, F16 and BF16 (the others are buffers it
// ignores, such as GPT-2's attn.bias or BERT's position_ids). Then ggml's block formats, which
// only GGUF files hold (quants.hpp): their numbers come in blocks, dtype_bytes is 0.
enum class Dtype {
    F64, F32, F16, BF16, I64, I32, I16, I8, U64, U32, U16, U8, BOOL, F8_E4M3, F8_E5M2,
    Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, MXFP4
};
const char* dtype_name(Dtype d);
std::size_t dtype_bytes(Dtype d);
bool is_float_weight(Dtype d);  // F32, F16 or BF16
bool is_block_format(Dtype d);  // Q4_0 … MXFP4 (GGUF's)

// [SECTION] The header -----------------------------------------------------------------------

struct TensorInfo {
    Dtype dtype = Dtype::F32;
    std::vector<std::int64_t> shape;
    std::size_t begin = 0, end = 0;  // absolute byte offsets in the file
    // How a GGUF file changed the tensor from the checkpoint's (gguf.hpp), undone when read:
    int pair_rows = 0;      // > 0: llama.cpp's converter reordered each run of that many rows (a
                            // head of Q or K) from rotate-half's (i, i + n/2) to adjacent pairs
    float stored_add = 0;   // the file holds w + stored_add (Gemma's norms: 1 + w)
    bool linear_layout = false;  // a Conv1D weight stored [out, in] as a Linear's (GPT-2's, by the converter)
    std::int64_t elements() const;
};

struct SafetensorsHeader {
    std::map<std::string, TensorInfo> tensors;
    std::map<std::string, std::string> metadata;  // "__metadata__"
    std::size_t data_begin = 0;                   // 8 + header length
};

// Throws ModelError(file, WHERE, …): WHERE is "header" or the tensor's name. Reads only the
// header's bytes, so a sliced file (files.hpp) whose head holds them will do; offsets are
// checked against the file's size.
SafetensorsHeader read_safetensors_header(const FileBytes& f, const std::string& file);

// "[768, 2304]"
std::string shape_text(const std::vector<std::int64_t>& shape);

// [SECTION] Conversion to F32 ----------------------------------------------------------------

// out[i] = the i-th element of the tensor as float (F32, F16, BF16 and the block formats of
// quants.hpp; `t` from the header, so its bytes are inside the file).
void convert_to_f32(const std::uint8_t* data, const TensorInfo& t, float* out);
float f16_to_f32(std::uint16_t h);
float bf16_to_f32(std::uint16_t h);

}  // namespace attn
