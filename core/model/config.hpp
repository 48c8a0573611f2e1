// config.hpp: a checkpoint's config.json, as far as the runtime needs it (SPEC.md §5).
#pragma once

#include <string>
#include <string_view>

namespace attn {

enum class Family { Gpt2, Bert, Marian };  // model_type "gpt2", "bert", "marian"
enum class Activation { GeluExact, GeluTanh, Relu, Silu };  // "gelu", "gelu_new", "relu", "silu"/"swish"

struct ModelConfig {
    Family family = Family::Gpt2;
    std::string model_type;            // as written in config.json
    std::string name;                  // "_name_or_path" when present, else ""
    int vocab_size = 0;
    int d_model = 0;                   // n_embd / hidden_size / d_model
    int max_positions = 0;             // n_positions / max_position_embeddings
    // gpt2 and bert: the one stack; marian: the encoder (encoder_layers, encoder_attention_heads,
    // encoder_ffn_dim) and the decoder (decoder_…).
    int n_layers = 0, n_heads = 0, d_ff = 0;
    int decoder_layers = 0, decoder_heads = 0, decoder_ff = 0;
    float layer_norm_eps = 1e-5f;      // gpt2 layer_norm_epsilon, bert layer_norm_eps; marian 1e-5
    Activation activation = Activation::GeluTanh;
    int type_vocab_size = 0;           // bert
    bool scale_embedding = false;      // marian: embeddings × √d_model
    bool tie_word_embeddings = true;
    int pad_id = -1, bos_id = -1, eos_id = -1, decoder_start_id = -1;  // -1: not given

    int d_head() const { return d_model / n_heads; }
};

// Throws ModelError(file, FIELD, …) for a missing or bad field, or an unknown model_type.
ModelConfig read_config(std::string_view json, const std::string& file);

}  // namespace attn
