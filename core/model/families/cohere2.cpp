// cohere2.cpp: Command R7B and Command A (model_type "cohere2"): llama with
//
//   one LayerNorm per layer (mean subtracted, a weight and no bias), read by the attention and
//   the MLP side by side: x = x + attention(norm(x)) + mlp(norm(x))
//   RoPE on the sliding layers only, on interleaved pairs (2i, 2i + 1); the full-attention
//   layers see no positions but through the causal mask
//   the logits scaled by logit_scale; the head tied to the embedding
#include "family.hpp"

namespace attn {

namespace {

void read_cohere2(const ConfigFields& f, ModelConfig& c) {
    read_llama_like(f, c);
    c.norm = NormKind::LayerNorm, c.residual = Residual::Parallel;
    c.layer_norm_eps = f.positive("layer_norm_eps", 1e-5f);
    c.qkv_bias = c.o_bias = f.boolean("attention_bias", false);
    c.tie_word_embeddings = f.boolean("tie_word_embeddings", true);
    c.logit_scale = f.positive("logit_scale", 0.0625f);
    c.rope.interleaved = true;
    const int window = f.integer("sliding_window", 1, 4096);
    const int pattern = f.integer("sliding_window_pattern", 1, 4);
    read_windows(f, c, window, [&](int i) { return (i + 1) % pattern != 0; });
    c.no_rope.assign(static_cast<std::size_t>(c.n_layers), 0);
    for (int i = 0; i < c.n_layers; ++i) c.no_rope[i] = c.window[i] == 0;
}

constexpr LlamaLayout kCohere2Layout{"input_layernorm", nullptr, nullptr, nullptr};

}  // namespace

const FamilyDef kCohere2Family{"cohere2", Family::Cohere2, read_cohere2, plan_layout<kCohere2Layout>, "model.", "embed_tokens.weight"};

}  // namespace attn
