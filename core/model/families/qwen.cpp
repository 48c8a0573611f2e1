// qwen.cpp: Qwen2 / Qwen2.5 (model_type "qwen2") and Qwen3 (model_type "qwen3"): llama with
//
//   qwen2  a bias on q, k and v (not on o); sliding windows only with use_sliding_window, on
//          the layers from max_window_layers on (or as layer_types says)
//   qwen3  no biases (attention_bias); an RMSNorm over each query and key head (q_norm, k_norm)
//          before the rotation; head_dim given explicitly (128, not hidden_size / heads)
//
// [SECTION] qwen2
// [SECTION] qwen3
#include "family.hpp"

namespace attn {

namespace {

// [SECTION] qwen2 -------------------------------------------------------------------------------

void read_qwen2(const ConfigFields& f, ModelConfig& c) {
    read_llama_like(f, c);
    c.qkv_bias = true;
    read_optional_windows(f, c);
}

// [SECTION] qwen3 -------------------------------------------------------------------------------

void read_qwen3(const ConfigFields& f, ModelConfig& c) {
    read_llama_like(f, c);
    c.qkv_bias = c.o_bias = f.boolean("attention_bias", false);
    c.qk_norm = true;
    read_optional_windows(f, c);
}

}  // namespace

const FamilyDef kQwen2Family{"qwen2", Family::Qwen2, read_qwen2, plan_layout<kLlamaLayout>, "model.", "embed_tokens.weight"};
const FamilyDef kQwen3Family{"qwen3", Family::Qwen3, read_qwen3, plan_layout<kLlamaLayout>, "model.", "embed_tokens.weight"};

}  // namespace attn
