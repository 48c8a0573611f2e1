// gguf.hpp: GGUF files (llama.cpp's, as ollama, LM Studio and the Hub's *-GGUF repos keep
// models): the container read and checked, and the model it holds stated as attnviz's own
// families read a Hugging Face checkpoint: a ModelConfig, the tensors under transformers' names
// and shapes, and the tokenizer as a tokenizer.json.
//
// The format (v2 and v3, little-endian): "GGUF", u32 version, u64 tensor count, u64 key/value
// count; the key/values (a string key, a u32 type, the value: integers, floats, bool, strings
// as u64 length + bytes, arrays as u32 element type + u64 count + elements); the tensor infos
// (name, u32 dimension count, u64 dimensions innermost first, u32 ggml type, u64 offset); then,
// at general.alignment (32), the data, each tensor at its offset.
//
// [SECTION] The container
// [SECTION] The model it holds
#pragma once

#include "config.hpp"
#include "files.hpp"
#include "quants.hpp"
#include "safetensors.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace attn {

// [SECTION] The container ----------------------------------------------------------------------

struct GgufValue {
    enum class Type : std::uint32_t { U8, I8, U16, I16, U32, I32, F32, Bool, String, Array, U64, I64, F64 };
    Type type = Type::U32;
    Type element = Type::U32;    // an array's
    std::int64_t integer = 0;    // integer and bool values (a u64 above 2^63 − 1 is clamped)
    double real = 0;             // every number (integers too)
    std::string text;            // strings
    std::vector<GgufValue> items;  // arrays
    bool is_integer() const { return is_number() && type != Type::F32 && type != Type::F64; }  // an integer type or bool
    bool is_number() const { return type != Type::String && type != Type::Array; }             // an integer, float or bool
};
const char* gguf_type_name(GgufValue::Type t);

struct GgufTensor {
    std::string name;
    std::vector<std::int64_t> dims;  // ne[0] (the innermost, a row) first
    std::uint32_t ggml_type = 0;
    const QuantFormat* format = nullptr;  // nullptr: a type attnviz does not read (named when used)
    std::size_t begin = 0, end = 0;       // absolute byte offsets in the file
};

struct GgufFile {
    std::string file;  // as messages name it
    std::uint32_t version = 3;
    std::size_t alignment = 32, data_begin = 0;
    std::map<std::string, GgufValue> metadata;
    std::vector<GgufTensor> tensors;  // in the file's order
    const GgufValue* find(const std::string& key) const {
        auto it = metadata.find(key);
        return it == metadata.end() ? nullptr : &it->second;
    }
    const GgufTensor* tensor(const std::string& name) const {
        for (const GgufTensor& t : tensors)
            if (t.name == name) return &t;
        return nullptr;
    }
};

// Reads and checks the header, the key/values and the tensor infos: every length and count
// against the bytes left, every tensor inside the data and apart from the others. Throws
// ModelError(file, KEY or TENSOR, …). Reads only the bytes it needs, so a sliced file whose
// head holds the header will do.
GgufFile read_gguf(const FileBytes& f, const std::string& file);

// [SECTION] The model it holds -------------------------------------------------------------------

struct GgufModel {
    std::string architecture;            // general.architecture: "llama", "qwen2", …
    ModelConfig config;                  // as config.json would give it (its family's)
    SafetensorsHeader tensors;           // the tensors under transformers' names and shapes, with
                                         // what to undo (TensorInfo::pair_rows, stored_add)
    std::map<std::string, std::string> file_names;  // transformers' name -> the file's (messages)
    std::map<std::string, int> types;    // the file's tensors by type name ("Q4_K": 98, "F32": 33)
};

// The model of a read file. `f`: its bytes (rope_freqs, a tensor, is read here). Throws
// ModelError(file, KEY, …) for an architecture attnviz does not run, a missing or bad key.
GgufModel gguf_model(const GgufFile& g, const FileBytes& f);
// The tokenizer.ggml.* keys as a tokenizer.json (read_tokenizer_json reads it): "gpt2", byte-level
// BPE with the pre-tokenizer tokenizer.ggml.pre names; "llama", SentencePiece BPE with byte
// fallback, merges from the scores. Throws ModelError(file, KEY, …).
std::string gguf_tokenizer_json(const GgufFile& g);

}  // namespace attn
