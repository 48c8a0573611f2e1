// gemma.cpp: Gemma 2 (model_type "gemma2") and Gemma 3's text model ("gemma3_text"): llama with
//
//   both    the embeddings scaled by √hidden_size; RMSNorm scaling by (1 + w); four norms per
//           layer (before and after the attention, before and after the MLP: "sandwich");
//           scores scaled by query_pre_attn_scalar^−½ instead of head_dim^−½; a gated MLP with
//           GELU (tanh); the head tied to the embedding
//   gemma2  scores soft-capped, cap·tanh(s/cap) (attn_logit_softcapping), and the logits too
//           (final_logit_softcapping); sliding and full layers alternating, sliding first
//   gemma3  q_norm and k_norm over each head before the rotation (1 + w as well); a sliding
//           layer in each group of sliding_window_pattern but the last (or layer_types); the
//           sliding layers rotate with their own base, rope_local_base_freq, and no scaling (or
//           as rope_parameters.sliding_attention says: transformers 5)
//
// [SECTION] What both share
// [SECTION] gemma2
// [SECTION] gemma3_text
#include "family.hpp"

#include <nlohmann/json.hpp>

#include <cmath>

namespace attn {

namespace {

// [SECTION] What both share ---------------------------------------------------------------------

// A soft cap: `fallback` when config.json leaves the field out (transformers' default), none
// when it is null.
float softcap(const ConfigFields& f, const std::string& field, float fallback) {
    if (!f.j.contains(field)) return fallback;
    return f.has(field) ? f.positive(field, fallback) : 0.0f;
}

void read_gemma(const ConfigFields& f, ModelConfig& c) {
    read_llama_like(f, c);
    c.tie_word_embeddings = f.boolean("tie_word_embeddings", true);
    c.activation = f.activation("hidden_activation", "gelu_pytorch_tanh");
    c.residual = Residual::Sandwich;
    c.embedding_scale = std::sqrt(static_cast<float>(c.d_model));
    c.query_scale = 1.0f / std::sqrt(f.positive("query_pre_attn_scalar", 256.0f));
    c.qkv_bias = c.o_bias = f.boolean("attention_bias", false);
}

constexpr LlamaLayout kGemmaLayout{"input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                                   "post_feedforward_layernorm", false, false, 1};

// [SECTION] gemma2 ------------------------------------------------------------------------------

void read_gemma2(const ConfigFields& f, ModelConfig& c) {
    read_gemma(f, c);
    c.attn_softcap = softcap(f, "attn_logit_softcapping", 50.0f);
    c.final_softcap = softcap(f, "final_logit_softcapping", 30.0f);
    const int window = f.integer("sliding_window", 1, 4096);
    read_windows(f, c, window, [](int i) { return i % 2 == 0; });
}

// [SECTION] gemma3_text -------------------------------------------------------------------------

void read_gemma3(const ConfigFields& f, ModelConfig& c) {
    read_gemma(f, c);
    c.qk_norm = true;
    c.attn_softcap = softcap(f, "attn_logit_softcapping", 0.0f);
    c.final_softcap = softcap(f, "final_logit_softcapping", 0.0f);
    const int window = f.integer("sliding_window", 1, 4096);
    const int pattern = f.integer("sliding_window_pattern", 1, 6);
    read_windows(f, c, window, [&](int i) { return (i + 1) % pattern != 0; });
    if (c.local_rope.dim > 0) {  // rope_parameters.sliding_attention (transformers 5)
        if (f.has("rope_local_base_freq") && f.real("rope_local_base_freq") != c.local_rope.theta)
            f.fail("rope_local_base_freq", "differs from rope_parameters.sliding_attention.rope_theta");
        return;
    }
    c.local_rope = Rope{};
    c.local_rope.dim = c.rope.dim;
    c.local_rope.theta = f.real("rope_local_base_freq", 10000.0);
    c.local_rope.max_positions = c.max_positions;
}

}  // namespace

const FamilyDef kGemma2Family{"gemma2", Family::Gemma2, read_gemma2, plan_layout<kGemmaLayout>, "model.", "embed_tokens.weight"};
const FamilyDef kGemma3Family{"gemma3_text", Family::Gemma3, read_gemma3, plan_layout<kGemmaLayout>, "model.", "embed_tokens.weight"};

}  // namespace attn
