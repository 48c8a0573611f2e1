// config.cpp: config.json of a gpt2, bert or marian checkpoint (see config.hpp).
//
// [SECTION] Fields
// [SECTION] One family each
// [SECTION] read_config
#include "config.hpp"

#include "files.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <optional>

namespace attn {

namespace {

using nlohmann::json;

// [SECTION] Fields ---------------------------------------------------------------------------

// Sizes and ids beyond this are no model's: 2^24 keeps every product of the shapes' sizes that
// the loader forms (3·d_model, 4·d_model) inside an int.
constexpr long long kMaxField = 1 << 24;

// The fields of one config.json; every error names the file and the field.
struct Fields {
    const json& j;
    const std::string& file;

    [[noreturn]] void fail(const std::string& field, const std::string& message) const {
        throw ModelError(file, field, message);
    }
    const json* find(const std::string& field) const {
        auto it = j.find(field);
        return it == j.end() ? nullptr : &*it;
    }
    // An integer ≥ minimum; `fallback` when absent (or null) if given, else "missing".
    int integer(const std::string& field, int minimum, std::optional<int> fallback = std::nullopt) const {
        const json* v = find(field);
        if (!v || v->is_null()) {
            if (fallback) return *fallback;
            fail(field, "missing");
        }
        const std::string what = minimum == 1 ? "a positive integer" : minimum == 0 ? "a non-negative integer" : "an integer";
        if (!v->is_number_integer()) fail(field, "expected " + what + ", got " + v->dump());
        const long long n = v->get<long long>();
        if (n < minimum) fail(field, "expected " + what + ", got " + v->dump());
        if (n > kMaxField) fail(field, "expected " + what + " up to " + std::to_string(kMaxField) + ", got " + v->dump());
        return static_cast<int>(n);
    }
    // A token id: absent or null gives -1.
    int token(const std::string& field) const { return integer(field, 0, -1); }
    float positive(const std::string& field, float fallback) const {
        const json* v = find(field);
        if (!v || v->is_null()) return fallback;
        // Positive as a float too: 1e-50 is 0 in F32, and the runtime computes in F32.
        const double d = v->is_number() ? v->get<double>() : 0.0;
        if (!v->is_number() || !(d > 0) || !std::isfinite(d) || !(static_cast<float>(d) > 0) || !std::isfinite(static_cast<float>(d)))
            fail(field, "expected a positive number (of float's range), got " + v->dump());
        return static_cast<float>(d);
    }
    bool boolean(const std::string& field, bool fallback) const {
        const json* v = find(field);
        if (!v || v->is_null()) return fallback;
        if (!v->is_boolean()) fail(field, "expected true or false, got " + v->dump());
        return v->get<bool>();
    }
    std::string text(const std::string& field, const std::string& fallback) const {
        const json* v = find(field);
        if (!v || v->is_null()) return fallback;
        if (!v->is_string()) fail(field, "expected a string, got " + v->dump());
        return v->get<std::string>();
    }
    Activation activation(const std::string& field, const std::string& fallback) const {
        const std::string a = text(field, fallback);
        if (a == "gelu") return Activation::GeluExact;
        if (a == "gelu_new" || a == "gelu_pytorch_tanh") return Activation::GeluTanh;
        if (a == "relu") return Activation::Relu;
        if (a == "silu" || a == "swish") return Activation::Silu;
        fail(field, "\"" + a + "\" is not one of gelu, gelu_new, gelu_pytorch_tanh, relu, silu, swish");
    }
    // A head count that divides d_model, named by the field that gave d_model.
    int heads(const std::string& field, int d_model, const std::string& d_field) const {
        const json* v = find(field);
        const int n = v && v->is_number_integer() && v->get<long long>() > 0 && v->get<long long>() <= kMaxField
                          ? static_cast<int>(v->get<long long>())
                          : 0;
        if (!v) fail(field, "missing");
        if (n <= 0 || d_model % n != 0)
            fail(field, "expected a positive integer that divides " + d_field + " (" + std::to_string(d_model) + ")" +
                            (n > 0 || !v ? "" : ", got " + v->dump()));
        return n;
    }
};

// [SECTION] One family each ------------------------------------------------------------------

void read_gpt2(const Fields& f, ModelConfig& c) {
    c.vocab_size = f.integer("vocab_size", 1);
    c.d_model = f.integer("n_embd", 1);
    c.n_layers = f.integer("n_layer", 1);
    c.n_heads = f.heads("n_head", c.d_model, "n_embd");
    c.max_positions = f.integer("n_positions", 1, f.integer("n_ctx", 1, 1024));
    c.d_ff = f.integer("n_inner", 1, 4 * c.d_model);  // null: 4·n_embd
    c.activation = f.activation("activation_function", "gelu_new");
    c.layer_norm_eps = f.positive("layer_norm_epsilon", 1e-5f);
    c.bos_id = f.token("bos_token_id");
    c.eos_id = f.token("eos_token_id");
    c.tie_word_embeddings = f.boolean("tie_word_embeddings", true);
}

void read_bert(const Fields& f, ModelConfig& c) {
    c.vocab_size = f.integer("vocab_size", 1);
    c.d_model = f.integer("hidden_size", 1);
    c.n_layers = f.integer("num_hidden_layers", 1);
    c.n_heads = f.heads("num_attention_heads", c.d_model, "hidden_size");
    c.d_ff = f.integer("intermediate_size", 1, 4 * c.d_model);
    c.activation = f.activation("hidden_act", "gelu");
    c.max_positions = f.integer("max_position_embeddings", 1, 512);
    c.type_vocab_size = f.integer("type_vocab_size", 1, 2);
    c.layer_norm_eps = f.positive("layer_norm_eps", 1e-12f);
    c.pad_id = f.token("pad_token_id");
    c.tie_word_embeddings = f.boolean("tie_word_embeddings", true);
}

void read_marian(const Fields& f, ModelConfig& c) {
    c.vocab_size = f.integer("vocab_size", 1);
    c.d_model = f.integer("d_model", 1);
    c.n_layers = f.integer("encoder_layers", 1);
    c.n_heads = f.heads("encoder_attention_heads", c.d_model, "d_model");
    c.d_ff = f.integer("encoder_ffn_dim", 1);
    c.decoder_layers = f.integer("decoder_layers", 1);
    c.decoder_heads = f.heads("decoder_attention_heads", c.d_model, "d_model");
    c.decoder_ff = f.integer("decoder_ffn_dim", 1);
    c.activation = f.activation("activation_function", "swish");
    c.max_positions = f.integer("max_position_embeddings", 1, 1024);
    c.scale_embedding = f.boolean("scale_embedding", false);
    c.layer_norm_eps = 1e-5f;
    c.pad_id = f.token("pad_token_id");
    c.eos_id = f.token("eos_token_id");
    c.bos_id = f.token("bos_token_id");
    c.decoder_start_id = f.token("decoder_start_token_id");
    if (c.decoder_start_id < 0) c.decoder_start_id = c.pad_id;
    c.tie_word_embeddings = f.boolean("tie_word_embeddings", true);
    const int decoder_vocab = f.integer("decoder_vocab_size", 1, c.vocab_size);
    if (decoder_vocab != c.vocab_size)
        f.fail("decoder_vocab_size", "a separate target vocabulary (" + std::to_string(decoder_vocab) +
                                         ", source " + std::to_string(c.vocab_size) + ") is not supported");
}

}  // namespace

// [SECTION] read_config ----------------------------------------------------------------------

ModelConfig read_config(std::string_view text, const std::string& file) {
    json j;
    try {
        j = json::parse(text);
    } catch (const json::exception& e) {
        std::string what = e.what();  // "[json.exception.parse_error.101] parse error at …"
        if (auto p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
        throw ModelError(file, "", "not JSON: " + what);
    }
    if (!j.is_object()) throw ModelError(file, "", "expected a JSON object");
    const Fields f{j, file};
    ModelConfig c;
    const json* type = f.find("model_type");
    if (!type) f.fail("model_type", "missing");
    if (!type->is_string()) f.fail("model_type", "expected a string, got " + type->dump());
    c.model_type = type->get<std::string>();
    if (c.model_type == "gpt2") c.family = Family::Gpt2, read_gpt2(f, c);
    else if (c.model_type == "bert") c.family = Family::Bert, read_bert(f, c);
    else if (c.model_type == "marian") c.family = Family::Marian, read_marian(f, c);
    else f.fail("model_type", type->dump() + " is not one of gpt2, bert, marian");
    c.name = f.text("_name_or_path", "");
    return c;
}

}  // namespace attn
