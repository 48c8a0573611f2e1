// olmo2.cpp: OLMo 2 (model_type "olmo2") and EXAONE 4 (model_type "exaone4"): llama with the
// norms after each sub-block only, none before: x = x + post_norm(f(x)).
//
//   olmo2    q_norm and k_norm over the whole projection (n_heads·head_dim, n_kv_heads·head_dim)
//            before it is split into heads; attention_bias on q, k, v and o
//   exaone4  q_norm and k_norm over each head (as qwen3); sliding layers (layer_types, or
//            sliding_window_pattern) rotate, and with a window the full-attention layers go
//            without RoPE
//
// [SECTION] olmo2
// [SECTION] exaone4
#include "family.hpp"

namespace attn {

namespace {

constexpr LlamaLayout kPostOnlyLayout{nullptr, "post_attention_layernorm", nullptr, "post_feedforward_layernorm"};

// [SECTION] olmo2 -------------------------------------------------------------------------------

void read_olmo2(const ConfigFields& f, ModelConfig& c) {
    read_llama_like(f, c);
    c.residual = Residual::PostOnly;
    c.qkv_bias = c.o_bias = f.boolean("attention_bias", false);
    c.qk_norm = c.qk_norm_whole = true;
    read_windows(f, c, 0, [](int) { return false; });
}

// [SECTION] exaone4 -----------------------------------------------------------------------------

void read_exaone4(const ConfigFields& f, ModelConfig& c) {
    read_llama_like(f, c);
    c.residual = Residual::PostOnly;
    c.qk_norm = true;
    const int window = f.integer("sliding_window", 1, 0);
    const int pattern = f.integer("sliding_window_pattern", 1, 4);
    read_windows(f, c, window, [&](int i) { return window > 0 && (i + 1) % pattern != 0; });
    if (window > 0) {
        c.no_rope.assign(static_cast<std::size_t>(c.n_layers), 0);
        for (int i = 0; i < c.n_layers; ++i) c.no_rope[i] = c.window[i] == 0;
    }
}

}  // namespace

const FamilyDef kOlmo2Family{"olmo2", Family::Olmo2, read_olmo2, plan_layout<kPostOnlyLayout>, "model.", "embed_tokens.weight"};
const FamilyDef kExaone4Family{"exaone4", Family::Exaone4, read_exaone4, plan_layout<kPostOnlyLayout>, "model.", "embed_tokens.weight"};

}  // namespace attn
