// gguf.cpp: see gguf.hpp.
//
// [SECTION] The container
// [SECTION] Metadata, checked
// [SECTION] Architectures
// [SECTION] Tensors under transformers' names
// [SECTION] The configuration
// [SECTION] The tokenizer
// [SECTION] The model
#include "gguf.hpp"
#include "text.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace attn {

// [SECTION] The container ----------------------------------------------------------------------


const char* gguf_type_name(GgufValue::Type t) {
    constexpr const char* kNames[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"};
    const auto i = static_cast<std::size_t>(t);
    return i < std::size(kNames) ? kNames[i] : "?";
}

namespace {

// The header's bytes in order, each read checked against the file's size (and against the bytes
// held, for a sliced file).
class Cursor {
public:
    Cursor(const FileBytes& f, const std::string& file) : f_(f), file_(file) {}
    const std::string& file() const { return file_; }
    std::size_t at() const { return at_; }
    std::size_t left() const { return f_.file_size() - at_; }
    const std::uint8_t* take(std::uint64_t n, const std::string& where) {
        if (n > left())
            throw ModelError(file_, where, "needs " + std::to_string(n) + " bytes at offset " + std::to_string(at_) + ", past the end of the file (" +
                                               std::to_string(f_.file_size()) + " bytes)");
        const std::uint8_t* p = f_.range(at_, at_ + n);
        if (!p) throw ModelError(file_, where, "its bytes were not given (" + std::to_string(f_.size()) + " of the file's were)");
        at_ += n;
        return p;
    }
    template <class T>
    T number(const std::string& where) {
        T v;
        std::memcpy(&v, take(sizeof v, where), sizeof v);  // little-endian hosts only (x86-64, wasm)
        return v;
    }
    std::string text(const std::string& where) {  // GGUF's strings are UTF-8
        const auto n = number<std::uint64_t>(where);
        const std::uint8_t* p = take(n, where + " (a string of " + std::to_string(n) + " bytes)");
        std::string s(reinterpret_cast<const char*>(p), static_cast<std::size_t>(n));
        if (const std::optional<std::size_t> bad = first_bad_utf8(s))
            throw ModelError(file_, where, "a string that is not UTF-8 (byte " + std::to_string(*bad) + ")");
        return s;
    }

private:
    const FileBytes& f_;
    const std::string& file_;
    std::size_t at_ = 0;
};

using Type = GgufValue::Type;

std::size_t smallest_bytes(Type t) {  // of one value of the type (a string: its length)
    switch (t) {
        case Type::U8: case Type::I8: case Type::Bool: return 1;
        case Type::U16: case Type::I16: return 2;
        case Type::U32: case Type::I32: case Type::F32: return 4;
        default: return 8;  // U64, I64, F64, a string's length, an array's type and count (12)
    }
}

GgufValue read_value(Cursor& c, Type type, const std::string& key, int depth) {
    GgufValue v;
    v.type = type;
    const auto integer = [&](std::int64_t x) { v.integer = x, v.real = static_cast<double>(x); };
    switch (type) {
        case Type::U8: integer(c.number<std::uint8_t>(key)); break;
        case Type::I8: integer(c.number<std::int8_t>(key)); break;
        case Type::U16: integer(c.number<std::uint16_t>(key)); break;
        case Type::I16: integer(c.number<std::int16_t>(key)); break;
        case Type::U32: integer(c.number<std::uint32_t>(key)); break;
        case Type::I32: integer(c.number<std::int32_t>(key)); break;
        case Type::I64: integer(c.number<std::int64_t>(key)); break;
        case Type::U64: {
            const auto u = c.number<std::uint64_t>(key);
            integer(static_cast<std::int64_t>(std::min<std::uint64_t>(u, std::numeric_limits<std::int64_t>::max())));
            break;
        }
        case Type::Bool: {
            const auto b = c.number<std::uint8_t>(key);
            if (b > 1) throw ModelError(c.file(), key, "a bool of value " + std::to_string(b));
            integer(b);
            break;
        }
        case Type::F32: v.real = c.number<float>(key); break;
        case Type::F64: v.real = c.number<double>(key); break;
        case Type::String: v.text = c.text(key); break;
        case Type::Array: {
            if (depth >= 2) throw ModelError(c.file(), key, "arrays nested deeper than two");
            const auto element = c.number<std::uint32_t>(key);
            if (element > static_cast<std::uint32_t>(Type::F64)) throw ModelError(c.file(), key, "array of unknown type " + std::to_string(element));
            v.element = static_cast<Type>(element);
            const auto n = c.number<std::uint64_t>(key);
            if (n > c.left() / smallest_bytes(v.element))
                throw ModelError(c.file(), key, "an array of " + std::to_string(n) + " values, more than the file's " + std::to_string(c.left()) +
                                              " bytes left can hold");
            v.items.reserve(static_cast<std::size_t>(n));
            for (std::uint64_t i = 0; i < n; ++i) v.items.push_back(read_value(c, v.element, key, depth + 1));
            break;
        }
        default: throw ModelError(c.file(), key, "unknown value type " + std::to_string(static_cast<std::uint32_t>(type)));
    }
    return v;
}

}  // namespace

// pass 1: magic, version (2 or 3), counts (each bounded by the bytes left)
// pass 2: the key/values (general.alignment: a power of two)
// pass 3: the tensor infos: ≤ 4 dimensions, a row in whole blocks, offsets aligned
// pass 4: the data after the infos at the alignment; each tensor inside it, none overlapping
GgufFile read_gguf(const FileBytes& f, const std::string& file) {
    GgufFile g;
    g.file = file;
    Cursor c(f, file);
    if (f.file_size() < 4 || std::memcmp(c.take(4, "header"), "GGUF", 4) != 0) throw ModelError(file, "header", "not a GGUF file (no \"GGUF\" at its start)");
    g.version = c.number<std::uint32_t>("header");
    if (g.version != 2 && g.version != 3)
        throw ModelError(file, "header", "GGUF version " + std::to_string(g.version) + " (attnviz reads versions 2 and 3)");
    const auto n_tensors = c.number<std::uint64_t>("header"), n_kv = c.number<std::uint64_t>("header");
    if (n_kv > c.left() / 12) throw ModelError(file, "header", std::to_string(n_kv) + " key/values cannot fit in the file");
    if (n_tensors > c.left() / 24) throw ModelError(file, "header", std::to_string(n_tensors) + " tensors cannot fit in the file");
    for (std::uint64_t i = 0; i < n_kv; ++i) {
        const std::string where = "key/value " + std::to_string(i);
        std::string key = c.text(where);
        const auto type = c.number<std::uint32_t>(key);
        if (type > static_cast<std::uint32_t>(Type::F64)) throw ModelError(file, key, "unknown value type " + std::to_string(type));
        GgufValue v = read_value(c, static_cast<Type>(type), key, 0);
        if (!g.metadata.emplace(key, std::move(v)).second) throw ModelError(file, key, "given twice");
    }
    if (const GgufValue* a = g.find("general.alignment")) {
        if (!a->is_integer() || a->integer <= 0 || a->integer > (1 << 20) || (a->integer & (a->integer - 1)))
            throw ModelError(file, "general.alignment", "expected a power of two, got " + std::to_string(a->real));
        g.alignment = static_cast<std::size_t>(a->integer);
    }
    std::vector<std::uint64_t> offsets;
    for (std::uint64_t i = 0; i < n_tensors; ++i) {
        GgufTensor t;
        t.name = c.text("tensor " + std::to_string(i));
        const auto n_dims = c.number<std::uint32_t>(t.name);
        if (n_dims < 1 || n_dims > 4) throw ModelError(file, t.name, std::to_string(n_dims) + " dimensions (GGUF has 1 to 4)");
        std::int64_t elements = 1;
        for (std::uint32_t d = 0; d < n_dims; ++d) {
            const auto n = c.number<std::uint64_t>(t.name);
            if (n == 0 || n > (std::uint64_t{1} << 40) || elements > (std::int64_t{1} << 50) / static_cast<std::int64_t>(n))
                throw ModelError(file, t.name, "dimension " + std::to_string(n) + " (at most 2^40, and 2^50 numbers in all)");
            t.dims.push_back(static_cast<std::int64_t>(n));
            elements *= static_cast<std::int64_t>(n);
        }
        t.ggml_type = c.number<std::uint32_t>(t.name);
        t.format = quant_format_of_ggml(t.ggml_type);
        const auto offset = c.number<std::uint64_t>(t.name);
        if (offset % g.alignment) throw ModelError(file, t.name, "offset " + std::to_string(offset) + " is not a multiple of the alignment");
        if (t.format && t.dims[0] % t.format->block)
            throw ModelError(file, t.name, "a row of " + std::to_string(t.dims[0]) + " numbers is not whole blocks of " +
                                               std::to_string(t.format->block) + " (" + dtype_name(t.format->dtype) + ")");
        offsets.push_back(offset);
        if (t.format) t.end = tensor_bytes(t.format->dtype, elements);  // its size, for now
        g.tensors.push_back(std::move(t));
    }
    g.data_begin = (c.at() + g.alignment - 1) / g.alignment * g.alignment;
    if (g.data_begin > f.file_size() && !g.tensors.empty())
        throw ModelError(file, "header", "the data would start at " + std::to_string(g.data_begin) + ", past the end of the file");
    const std::size_t data_size = f.file_size() - std::min(g.data_begin, f.file_size());
    std::vector<std::size_t> order(g.tensors.size());
    for (std::size_t i = 0; i < order.size(); ++i) {
        GgufTensor& t = g.tensors[i];
        order[i] = i;
        if (!t.format) continue;  // its size is unknown: named when a model uses it
        if (offsets[i] > data_size || t.end > data_size - offsets[i])
            throw ModelError(file, t.name, "its " + std::to_string(t.end) + " bytes at offset " + std::to_string(offsets[i]) +
                                               " are past the end of the data (" + std::to_string(data_size) + " bytes)");
        t.begin = g.data_begin + static_cast<std::size_t>(offsets[i]);
        t.end += t.begin;
    }
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return offsets[a] < offsets[b]; });
    for (std::size_t k = 1; k < order.size(); ++k) {
        const GgufTensor &a = g.tensors[order[k - 1]], &b = g.tensors[order[k]];
        if (a.format && offsets[order[k]] < a.end - g.data_begin)
            throw ModelError(file, b.name, "its data overlaps " + a.name + "'s");
    }
    return g;
}

// [SECTION] Metadata, checked --------------------------------------------------------------------

namespace {

// The key/values of one file, read with the checks and messages of config.json's fields.
struct Meta {
    const GgufFile& g;
    std::string arch;  // the keys' prefix: "llama." …

    [[noreturn]] void fail(const std::string& key, const std::string& message) const { throw ModelError(g.file, key, message); }
    const GgufValue* find(const std::string& key) const { return g.find(key); }
    std::string key(const std::string& name) const { return arch + "." + name; }  // "llama.block_count"
    std::int64_t integer(const std::string& k, std::int64_t minimum, std::optional<std::int64_t> fallback = std::nullopt,
                         std::int64_t maximum = (std::int64_t{1} << 31) - 1) const {
        const GgufValue* v = find(k);
        if (!v) {
            if (fallback) return *fallback;
            fail(k, "missing");
        }
        if (!v->is_integer()) fail(k, std::string("expected an integer, got a ") + gguf_type_name(v->type));
        if (v->integer < minimum || v->integer > maximum)
            fail(k, "expected an integer from " + std::to_string(minimum) + " to " + std::to_string(maximum) + ", got " + std::to_string(v->integer));
        return v->integer;
    }
    double real(const std::string& k, double fallback) const {
        const GgufValue* v = find(k);
        if (!v) return fallback;
        if (!v->is_number() || !std::isfinite(v->real)) fail(k, std::string("expected a finite number, got a ") + gguf_type_name(v->type));
        return v->real;
    }
    bool boolean(const std::string& k, bool fallback) const {
        const GgufValue* v = find(k);
        if (!v) return fallback;
        if (v->type != Type::Bool) fail(k, std::string("expected a bool, got a ") + gguf_type_name(v->type));
        return v->integer != 0;
    }
    std::string text(const std::string& k, const std::string& fallback) const {
        const GgufValue* v = find(k);
        if (!v) return fallback;
        if (v->type != Type::String) fail(k, std::string("expected a string, got a ") + gguf_type_name(v->type));
        return v->text;
    }
    // An array of `element` values (n of them when n ≥ 0).
    const std::vector<GgufValue>& array(const std::string& k, Type element, std::int64_t n = -1) const {
        const GgufValue* v = find(k);
        if (!v) fail(k, "missing");
        if (v->type != Type::Array || (v->element != element && !(element == Type::I32 && v->is_integer())))
            fail(k, std::string("expected an array of ") + gguf_type_name(element));
        if (n >= 0 && static_cast<std::int64_t>(v->items.size()) != n)
            fail(k, "expected " + std::to_string(n) + " values, got " + std::to_string(v->items.size()));
        return v->items;
    }
};

// [SECTION] Architectures --------------------------------------------------------------------

// How llama.cpp's converter (convert_hf_to_gguf.py) wrote each architecture it maps onto one of
// attnviz's families.
struct Arch {
    const char* name;        // general.architecture
    const char* model_type;  // the family's
    bool pairs = false;      // Q and K rows reordered per head for adjacent-pair RoPE (LlamaModel.permute)
    bool norms_plus_one = false;  // every *norm.weight stored as 1 + w (Gemma's RMSNorm)
    bool sandwich = false;   // four norms a layer (Gemma)
    bool fused = false;      // phi3: attn_qkv, and ffn_up holding gate | up
    bool gpt2 = false;       // GPT-2's own names and config (GPT2Model): Conv1D weights transposed to [out, in]
};
constexpr Arch kArchs[] = {
    {"llama", "llama", true},
    {"mistral", "llama", true},
    {"qwen2", "qwen2"},
    {"qwen3", "qwen3"},
    {"gemma2", "gemma2", false, true, true},
    {"gemma3", "gemma3_text", false, true, true},
    {"phi3", "phi3", false, false, false, true},
    {"gpt2", "gpt2", false, false, false, false, true},
};

const Arch* find_arch(const std::string& name) {
    for (const Arch& a : kArchs)
        if (name == a.name) return &a;
    return nullptr;
}

std::string architectures() {  // "llama, mistral, qwen2, …", for messages
    std::string s;
    for (const Arch& a : kArchs) (s += s.empty() ? "" : ", ") += a.name;
    return s;
}

// [SECTION] Tensors under transformers' names ------------------------------------------------------

// A layer's tensor: GGUF's blk.N.NAME and transformers' model.layers.N.NAME.
struct LayerName {
    const char* gguf;
    const char* hf;
};
constexpr LayerName kLayerNames[] = {
    {"attn_norm", "input_layernorm"},        {"attn_q", "self_attn.q_proj"},        {"attn_k", "self_attn.k_proj"},
    {"attn_v", "self_attn.v_proj"},          {"attn_output", "self_attn.o_proj"},   {"attn_q_norm", "self_attn.q_norm"},
    {"attn_k_norm", "self_attn.k_norm"},     {"ffn_gate", "mlp.gate_proj"},         {"ffn_down", "mlp.down_proj"},
};

// GPT-2's: GGUF's blk.N.NAME and transformers' h.N.NAME.
constexpr LayerName kGpt2LayerNames[] = {
    {"attn_norm", "ln_1"}, {"attn_qkv", "attn.c_attn"}, {"attn_output", "attn.c_proj"},
    {"ffn_norm", "ln_2"},  {"ffn_up", "mlp.c_fc"},      {"ffn_down", "mlp.c_proj"},
};

std::string gpt2_name(const std::string& base, const std::string& suffix) {
    if (base == "token_embd") return "wte" + suffix;
    if (base == "position_embd") return "wpe" + suffix;
    if (base == "output_norm") return "ln_f" + suffix;
    if (base == "output") return "lm_head" + suffix;
    const auto second = base.find('.', 4);
    if (base.rfind("blk.", 0) != 0 || second == std::string::npos) return "";
    for (const LayerName& n : kGpt2LayerNames)
        if (base.substr(second + 1) == n.gguf) return "h." + base.substr(4, second - 4) + "." + n.hf + suffix;
    return "";
}

// transformers' name of a GGUF tensor, or "" for one no family reads (rope_freqs: the config's).
std::string hf_name(const Arch& a, const std::string& name) {
    const auto dot = name.rfind('.');
    const std::string base = name.substr(0, dot), suffix = dot == std::string::npos ? "" : name.substr(dot);
    if (a.gpt2) return gpt2_name(base, suffix);
    if (base == "token_embd") return "model.embed_tokens" + suffix;
    if (base == "output_norm") return "model.norm" + suffix;
    if (base == "output") return "lm_head" + suffix;
    if (base.rfind("blk.", 0) != 0) return "";
    const auto second = base.find('.', 4);
    if (second == std::string::npos) return "";
    const std::string layer = base.substr(4, second - 4), part = base.substr(second + 1);
    const std::string prefix = "model.layers." + layer + ".";
    if (a.fused && part == "attn_qkv") return prefix + "self_attn.qkv_proj" + suffix;
    if (part == "ffn_up") return prefix + (a.fused ? "mlp.gate_up_proj" : "mlp.up_proj") + suffix;
    if (part == "ffn_norm") return prefix + (a.sandwich ? "pre_feedforward_layernorm" : "post_attention_layernorm") + suffix;
    if (a.sandwich && part == "post_attention_norm") return prefix + "post_attention_layernorm" + suffix;
    if (a.sandwich && part == "post_ffw_norm") return prefix + "post_feedforward_layernorm" + suffix;
    for (const LayerName& n : kLayerNames)
        if (part == n.gguf) return prefix + n.hf + suffix;
    return "";
}

// [SECTION] The configuration --------------------------------------------------------------------

// config.json's fields from the metadata (llama.cpp's llama-arch.cpp keys), for the family's own
// reader; what config.json cannot say is set on the ModelConfig after (gguf_model).
nlohmann::json config_json(const Meta& m, const Arch& a, const GgufFile& g) {
    nlohmann::json j;
    j["model_type"] = a.model_type;
    const GgufValue* tokens = m.find("tokenizer.ggml.tokens");
    const std::int64_t vocab = m.integer(m.key("vocab_size"), 1, tokens && tokens->type == Type::Array
                                                                    ? std::optional<std::int64_t>(tokens->items.size())
                                                                    : std::nullopt);
    for (const char* k : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.padding_token_id"}) {
        const std::string field = std::string(k).substr(15);  // "bos_token_id", …
        if (m.find(k)) j[field == "padding_token_id" ? "pad_token_id" : field] = m.integer(k, 0);
    }
    j["_name_or_path"] = m.text("general.name", "");
    if (a.gpt2) {  // GPT2Model.set_gguf_parameters: GPT-2's own config.json fields
        j["vocab_size"] = vocab;
        j["n_embd"] = m.integer(m.key("embedding_length"), 1, std::nullopt, 1 << 18);
        j["n_layer"] = m.integer(m.key("block_count"), 1, std::nullopt, 4096);
        j["n_head"] = m.integer(m.key("attention.head_count"), 1, std::nullopt, 4096);
        j["n_positions"] = m.integer(m.key("context_length"), 1, std::nullopt, 1 << 22);
        j["n_inner"] = m.integer(m.key("feed_forward_length"), 1, std::nullopt, 1 << 22);
        j["layer_norm_epsilon"] = m.real(m.key("attention.layer_norm_epsilon"), 1e-5);
        j["activation_function"] = "gelu_new";  // llama.cpp's ggml_gelu: the tanh approximation
        j["tie_word_embeddings"] = g.tensor("output.weight") == nullptr;
        return j;
    }
    // bounds far above any model's, below what would exhaust memory before a tensor is read
    const std::int64_t d = m.integer(m.key("embedding_length"), 1, std::nullopt, 1 << 18);
    const std::int64_t layers = m.integer(m.key("block_count"), 1, std::nullopt, 4096);
    const std::int64_t heads = m.integer(m.key("attention.head_count"), 1, std::nullopt, 4096);
    const std::int64_t head_dim = m.integer(m.key("attention.key_length"), 1, d / heads, 1 << 16);
    j["vocab_size"] = vocab;
    j["hidden_size"] = d;
    j["num_hidden_layers"] = layers;
    j["intermediate_size"] = m.integer(m.key("feed_forward_length"), 1, std::nullopt, 1 << 22);
    j["num_attention_heads"] = heads;
    j["num_key_value_heads"] = m.integer(m.key("attention.head_count_kv"), 1, heads, 4096);
    j["head_dim"] = head_dim;
    j["max_position_embeddings"] = m.integer(m.key("context_length"), 1, 4096);
    j["rms_norm_eps"] = m.real(m.key("attention.layer_norm_rms_epsilon"), 1e-6);
    j["rope_theta"] = m.real(m.key("rope.freq_base"), 10000.0);
    j["tie_word_embeddings"] = g.tensor("output.weight") == nullptr;
    const std::int64_t rotated = m.integer(m.key("rope.dimension_count"), 1, head_dim);
    if (rotated != head_dim) j["partial_rotary_factor"] = static_cast<double>(rotated) / static_cast<double>(head_dim);
    const std::string scaling = m.text(m.key("rope.scaling.type"), "none");
    if (scaling == "linear" || scaling == "yarn") {
        nlohmann::json s = {{"rope_type", scaling}, {"factor", m.real(m.key("rope.scaling.factor"), 1.0)}};
        if (m.find(m.key("rope.scaling.original_context_length")))
            s["original_max_position_embeddings"] = m.integer(m.key("rope.scaling.original_context_length"), 1);
        j["rope_scaling"] = s;
    } else if (scaling != "none") {
        m.fail(m.key("rope.scaling.type"), "\"" + scaling + "\" is not a scaling attnviz reads from GGUF (none, linear, yarn)");
    }
    if (a.model_type == std::string("llama")) {
        j["attention_bias"] = g.tensor("blk.0.attn_q.bias") != nullptr;
    }
    if (a.sandwich) {  // gemma2, gemma3: the query scale llama.cpp uses (27B: d / heads, else head_dim)
        const bool big = (a.name == std::string("gemma2") && layers == 46) || (a.name == std::string("gemma3") && layers == 62);
        j["query_pre_attn_scalar"] = big ? d / heads : head_dim;
        j["sliding_window"] = m.integer(m.key("attention.sliding_window"), 1);
        j["attn_logit_softcapping"] = m.find(m.key("attn_logit_softcapping")) ? nlohmann::json(m.real(m.key("attn_logit_softcapping"), 0))
                                                                              : nlohmann::json(nullptr);
        j["final_logit_softcapping"] = m.find(m.key("final_logit_softcapping")) ? nlohmann::json(m.real(m.key("final_logit_softcapping"), 0))
                                                                                : nlohmann::json(nullptr);
        const int pattern = a.name == std::string("gemma2") ? 2 : 6;  // llama.cpp's swa pattern for each
        nlohmann::json types = nlohmann::json::array();
        for (std::int64_t i = 0; i < layers; ++i) types.push_back(i % pattern < pattern - 1 ? "sliding_attention" : "full_attention");
        j["layer_types"] = types;
        if (a.name == std::string("gemma3")) j["rope_local_base_freq"] = 10000.0;  // llama.cpp's, not in the file
    }
    if (a.fused) {  // phi3
        j["sliding_window"] = m.find(m.key("attention.sliding_window")) ? nlohmann::json(m.integer(m.key("attention.sliding_window"), 1))
                                                                        : nlohmann::json(nullptr);
    }
    return j;
}

// [SECTION] The tokenizer ----------------------------------------------------------------------

// tokenizer.ggml.pre's pre-tokenizer regexes (llama.cpp's llama-vocab.cpp), for the names
// attnviz's families use.
struct PreTokenizer {
    const char* names[4];
    const char* regex;
};
constexpr const char* kGpt2Regex = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
constexpr PreTokenizer kPreTokenizers[] = {
    {{"default", "gpt-2", "gpt2", nullptr}, kGpt2Regex},
    {{"llama3", "llama-bpe", "llama-v3", nullptr},
     R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
    {{"qwen2", "stablelm2", nullptr, nullptr},
     R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
};

// Token types (tokenizer.ggml.token_type): llama.cpp's LLAMA_TOKEN_TYPE_*.
constexpr std::int64_t kNormal = 1, kControl = 3, kUserDefined = 4;  // also: 2 unknown, 5 unused, 6 byte

nlohmann::json added_token(int id, const std::string& content, bool special) {
    return {{"id", id}, {"content", content}, {"single_word", false}, {"lstrip", false}, {"rstrip", false}, {"normalized", false},
            {"special", special}};
}

// tokenizer.ggml.model "gpt2" (byte-level BPE: tokens, merges, the pre-tokenizer named by
// tokenizer.ggml.pre) or "llama" (SentencePiece BPE with byte fallback: tokens and scores, the
// merges that reproduce llama.cpp's highest-score-first pairing: each token's splits into two
// tokens, ranked by the token's score), as a tokenizer.json.
std::string tokenizer_json_of(const Meta& m) {
    const std::string kind = m.text("tokenizer.ggml.model", "");
    if (kind.empty()) m.fail("tokenizer.ggml.model", "missing: the file holds no tokenizer (give --ids)");
    const auto& tokens = m.array("tokenizer.ggml.tokens", Type::String);
    const auto n = static_cast<std::int64_t>(tokens.size());
    const GgufValue* types_v = m.find("tokenizer.ggml.token_type");
    const std::vector<GgufValue>* types = types_v ? &m.array("tokenizer.ggml.token_type", Type::I32, n) : nullptr;
    const auto type_of = [&](std::int64_t i) { return types ? (*types)[static_cast<std::size_t>(i)].integer : kNormal; };
    nlohmann::json vocab = nlohmann::json::object(), added = nlohmann::json::array(), merges = nlohmann::json::array();
    for (std::int64_t i = 0; i < n; ++i) {
        const std::string& t = tokens[static_cast<std::size_t>(i)].text;
        if (!vocab.contains(t)) vocab[t] = i;
        if (type_of(i) == kControl || type_of(i) == kUserDefined) added.push_back(added_token(static_cast<int>(i), t, type_of(i) == kControl));
    }
    const auto id = [&](const char* key) { return m.find(key) ? m.integer(key, 0) : -1; };
    const bool add_bos = m.boolean("tokenizer.ggml.add_bos_token", kind == "llama");
    const std::int64_t bos = id("tokenizer.ggml.bos_token_id");
    if (add_bos && (bos < 0 || bos >= n)) m.fail("tokenizer.ggml.bos_token_id", "missing or outside the vocabulary, and add_bos_token is true");
    nlohmann::json j;
    j["version"] = "1.0";
    j["added_tokens"] = added;
    if (add_bos) {
        const std::string b = tokens[static_cast<std::size_t>(bos)].text;
        j["post_processor"] = {{"type", "TemplateProcessing"},
                               {"single", {{{"SpecialToken", {{"id", b}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
                               {"pair", {{{"SpecialToken", {{"id", b}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                                         {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}}},
                               {"special_tokens", {{b, {{"id", b}, {"ids", {bos}}, {"tokens", {b}}}}}}};
    }
    if (kind == "gpt2") {
        for (const GgufValue& v : m.array("tokenizer.ggml.merges", Type::String)) merges.push_back(v.text);
        const std::string pre = m.text("tokenizer.ggml.pre", "default");
        const char* regex = nullptr;
        for (const PreTokenizer& p : kPreTokenizers)
            for (const char* name : p.names)
                if (name && pre == name) regex = p.regex;
        if (!regex) m.fail("tokenizer.ggml.pre", "\"" + pre + "\" is not a pre-tokenizer attnviz knows (default, gpt-2, llama-bpe, qwen2, …)");
        j["pre_tokenizer"] = {{"type", "Sequence"},
                              {"pretokenizers",
                               {{{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"}, {"invert", false}},
                                {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}}}}};
        j["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}};
        j["model"] = {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}, {"byte_fallback", false}, {"ignore_merges", pre != "default" && pre != "gpt-2" && pre != "gpt2"}};
        return j.dump();
    }
    if (kind != "llama") m.fail("tokenizer.ggml.model", "\"" + kind + "\" is not a tokenizer attnviz reads from GGUF (gpt2, llama)");
    const auto& scores = m.array("tokenizer.ggml.scores", Type::F32, n);
    // merges: every split of a token into two tokens, the token's score first (stable: ids)
    struct Merge {
        double score;
        std::int64_t left, right;
        std::string text;
    };
    std::vector<Merge> all;
    for (std::int64_t i = 0; i < n; ++i) {
        const std::string& t = tokens[static_cast<std::size_t>(i)].text;
        if (type_of(i) != kNormal && type_of(i) != kUserDefined) continue;
        std::vector<Merge> local;
        for (std::size_t cut = 1; cut < t.size(); ++cut) {
            if ((static_cast<unsigned char>(t[cut]) & 0xC0) == 0x80) continue;  // inside a character
            auto l = vocab.find(t.substr(0, cut)), r = vocab.find(t.substr(cut));
            if (l != vocab.end() && r != vocab.end())
                local.push_back({scores[static_cast<std::size_t>(i)].real, l->get<std::int64_t>(), r->get<std::int64_t>(),
                                 t.substr(0, cut) + " " + t.substr(cut)});
        }
        std::sort(local.begin(), local.end(), [](const Merge& a, const Merge& b) { return a.left != b.left ? a.left < b.left : a.right < b.right; });
        all.insert(all.end(), local.begin(), local.end());
    }
    std::stable_sort(all.begin(), all.end(), [](const Merge& a, const Merge& b) { return a.score > b.score; });
    for (const Merge& x : all) merges.push_back(nlohmann::json::array({x.text.substr(0, x.text.find(' ')), x.text.substr(x.text.find(' ') + 1)}));
    const std::int64_t unk = id("tokenizer.ggml.unknown_token_id");
    const bool prefix = m.boolean("tokenizer.ggml.add_space_prefix", true);
    nlohmann::json norm = nlohmann::json::array();
    if (prefix) norm.push_back({{"type", "Prepend"}, {"prepend", "\xE2\x96\x81"}});
    norm.push_back({{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xE2\x96\x81"}});
    j["normalizer"] = {{"type", "Sequence"}, {"normalizers", norm}};
    nlohmann::json dec = nlohmann::json::array({{{"type", "Replace"}, {"pattern", {{"String", "\xE2\x96\x81"}}}, {"content", " "}},
                                                {{"type", "ByteFallback"}},
                                                {{"type", "Fuse"}}});
    if (prefix) dec.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
    j["decoder"] = {{"type", "Sequence"}, {"decoders", dec}};
    j["model"] = {{"type", "BPE"},
                  {"vocab", vocab},
                  {"merges", merges},
                  {"byte_fallback", true},
                  {"fuse_unk", true},
                  {"unk_token", unk >= 0 && unk < n ? nlohmann::json(tokens[static_cast<std::size_t>(unk)].text) : nlohmann::json(nullptr)}};
    return j.dump();
}

}  // namespace

// [SECTION] The model ----------------------------------------------------------------------------

GgufModel gguf_model(const GgufFile& g, const FileBytes& f) {
    GgufModel out;
    Meta m{g, ""};
    out.architecture = m.text("general.architecture", "");
    if (out.architecture.empty()) m.fail("general.architecture", "missing");
    const Arch* a = find_arch(out.architecture);
    if (!a) m.fail("general.architecture", "\"" + out.architecture + "\" is not one attnviz runs (" + architectures() + ")");
    m.arch = out.architecture;
    out.config = read_config(config_json(m, *a, g).dump(), g.file + " (its metadata as config.json)");
    const int heads = out.config.n_heads, kv_heads = out.config.kv_heads(), d_head = out.config.d_head();
    for (const GgufTensor& t : g.tensors) {
        ++out.types[ggml_type_name(t.ggml_type)];
        if (t.name == "rope_freqs.weight") {  // llama 3's scaling, as llama.cpp keeps it
            if (!t.format || t.format->dtype != Dtype::F32 || t.dims.size() != 1 || t.dims[0] != out.config.rope.dim / 2)
                throw ModelError(g.file, t.name, "expected " + std::to_string(out.config.rope.dim / 2) + " F32 numbers");
            const std::uint8_t* p = f.range(t.begin, t.end);
            if (!p) throw ModelError(g.file, t.name, "its bytes were not given");
            out.config.rope.freq_factors.resize(static_cast<std::size_t>(t.dims[0]));
            for (std::size_t i = 0; i < out.config.rope.freq_factors.size(); ++i) {
                float x;
                std::memcpy(&x, p + 4 * i, 4);
                if (!(x > 0 && std::isfinite(x))) throw ModelError(g.file, t.name, "a factor of " + std::to_string(x) + " (expected > 0)");
                out.config.rope.freq_factors[i] = x;
            }
            continue;
        }
        const std::string name = hf_name(*a, t.name);
        if (name.empty()) continue;  // a tensor no family reads
        if (!t.format)
            throw ModelError(g.file, t.name, "type " + ggml_type_name(t.ggml_type) +
                                                 " is not one attnviz reads (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K … Q6_K, IQ4_NL, MXFP4)");
        TensorInfo info;
        info.dtype = t.format->dtype;
        info.begin = t.begin, info.end = t.end;
        info.shape.assign(t.dims.rbegin(), t.dims.rend());
        const bool q = name.find("self_attn.q_proj.weight") != std::string::npos, k = name.find("self_attn.k_proj.weight") != std::string::npos;
        if (a->pairs && (q || k)) {
            if (info.shape.size() != 2 || info.shape[0] != static_cast<std::int64_t>(q ? heads : kv_heads) * d_head || d_head % 2)
                throw ModelError(g.file, t.name, "expected " + std::to_string((q ? heads : kv_heads) * d_head) + " rows of whole heads");
            info.pair_rows = d_head;
        }
        if (a->norms_plus_one && name.ends_with("norm.weight")) info.stored_add = 1;
        if (a->gpt2 && info.shape.size() == 2 && name.starts_with("h.") && name.ends_with(".weight")) info.linear_layout = true;
        out.file_names[name] = t.name;
        out.tensors.tensors.emplace(name, std::move(info));
    }
    out.tensors.data_begin = g.data_begin;
    return out;
}

std::string gguf_tokenizer_json(const GgufFile& g) { return tokenizer_json_of(Meta{g, ""}); }

}  // namespace attn
