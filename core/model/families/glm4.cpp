// glm4.cpp: GLM-4 (model_type "glm4"): llama with
//
//   four norms per layer (input, post_self_attn, post_attention before the MLP, post_mlp):
//   x = x + post(f(norm(x))) around the attention and the MLP, as gemma's sandwich
//   RoPE on the first partial_rotary_factor of each head, on interleaved pairs (2i, 2i + 1)
//   attention_bias on q, k and v, never on o; gate and up fused in mlp.gate_up_proj
#include "family.hpp"

namespace attn {

namespace {

void read_glm4(const ConfigFields& f, ModelConfig& c) {
    read_llama_like(f, c);
    c.residual = Residual::Sandwich;
    c.qkv_bias = f.boolean("attention_bias", false);
    c.rope.interleaved = true;
    read_windows(f, c, 0, [](int) { return false; });
}

constexpr LlamaLayout kGlm4Layout{"input_layernorm", "post_self_attn_layernorm", "post_attention_layernorm",
                                  "post_mlp_layernorm", false, true};

}  // namespace

const FamilyDef kGlm4Family{"glm4", Family::Glm4, read_glm4, plan_layout<kGlm4Layout>, "model.", "embed_tokens.weight"};

}  // namespace attn
