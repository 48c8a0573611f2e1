// attention_file.hpp: imported attention (SPEC.md §3) in binary, as a .safetensors file: the
// maps as tensors, the tokens in the header's metadata. What attnviz.show() sends from a
// notebook (python/), and what `safetensors.torch.save_file` writes from a model's output:
//
//   tensors   "attention"                       [layers, heads, T, T]    F16, BF16 or F32
//             or any of "encoder_attention"     [layers, heads, T_enc, T_enc]
//                       "decoder_attention"     [layers, heads, T_dec, T_dec]
//                       "cross_attention"       [layers, heads, T_dec, T_enc]
//   metadata  "tokens" (with "attention"), "encoder_tokens", "decoder_tokens": JSON arrays of
//             strings; "model": a name for the UI (optional)
//
// The same rules and limits as the JSON reader (core/formats/import.hpp), the same checks on
// every row.
#pragma once

#include "import.hpp"

#include <string_view>

namespace attn {

// Throws SceneError whose where() is the tensor or metadata field ("attention",
// "tokens", "cross_attention[1][0][2]"), or ModelError(file, …) for a broken header.
ImportedAttention read_import_safetensors(std::string_view bytes, const std::string& file);

// Any import file: .safetensors (is_safetensors) as above, else JSON (read_import).
ImportedAttention read_import_file(std::string_view bytes, const std::string& file);

}  // namespace attn
