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

void plan_phi3(const ModelConfig& c, Plan& p, ModelWeights& w) {
    const int d = c.d_model, hd = c.d_head(), q = c.n_heads * hd, kv = c.kv_heads() * hd;
    plan_embedding_and_head(c, p, w, "embed_tokens.weight");
    for (int i = 0; i < c.n_layers; ++i) {
        const std::string e = "layers." + std::to_string(i) + ".";
        LayerWeights l;
        l.norm_1 = p.rms_norm(e + "input_layernorm", d);
        const std::vector<Linear> qkv = p.linear_parts(e + "self_attn.qkv_proj", d, {q, kv, kv}, Bias::None);
        l.self.q = qkv[0], l.self.k = qkv[1], l.self.v = qkv[2];
        l.self.o = p.linear(e + "self_attn.o_proj", q, d, Bias::None);
        l.norm_2 = p.rms_norm(e + "post_attention_layernorm", d);
        const std::vector<Linear> gate_up = p.linear_parts(e + "mlp.gate_up_proj", d, {c.d_ff, c.d_ff}, Bias::None);
        l.gate = gate_up[0], l.fc1 = gate_up[1];
        l.fc2 = p.linear(e + "mlp.down_proj", c.d_ff, d, Bias::None);
        w.layers.push_back(l);
    }
    w.final_norm = p.rms_norm("norm", d);
}

}  // namespace

const FamilyDef kPhi3Family{"phi3", Family::Phi3, read_phi3, plan_phi3, "model.", "embed_tokens.weight"};

}  // namespace attn
