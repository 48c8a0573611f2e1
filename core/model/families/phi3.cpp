// phi3.cpp: Phi-3 / Phi-3.5 / Phi-4-mini (model_type "phi3"): llama with q, k and v fused in one
// qkv_proj and gate and up in one gate_up_proj (each split by rows at load), the rotation on the
// first partial_rotary_factor of each head only, longrope scaling (short and long factors,
// original_max_position_embeddings at the top of config.json), a sliding window on every layer
// (sliding_window; null: none), no biases, the head separate by default.
#include "family.hpp"

namespace attn {

namespace {

void read_phi3(const ConfigFields& f, ModelConfig& c) {
    read_llama_like(f, c);
    const int window = f.integer("sliding_window", 1, 0);
    read_windows(f, c, window, [&](int) { return window > 0; });
}

constexpr LlamaLayout kPhi3Layout{"input_layernorm", nullptr, "post_attention_layernorm", nullptr, true, true, 0};

}  // namespace

const FamilyDef kPhi3Family{"phi3", Family::Phi3, read_phi3, plan_layout<kPhi3Layout>, "model.", "embed_tokens.weight"};

}  // namespace attn
