// smollm3.cpp: SmolLM3 (model_type "smollm3"): llama without the rotation on some layers.
//
//   no_rope_layers           one 0/1 per layer: 0 = no RoPE there (the layer sees no positions
//                            but through the causal mask); absent: every no_rope_layer_interval-th
//                            layer (4: layers 3, 7, …) goes without
//   attention_bias, mlp_bias on q, k, v, o and on the MLP, as llama's
//   windows                  as qwen2's (use_sliding_window, max_window_layers, layer_types)
#include "family.hpp"

namespace attn {

namespace {

void read_smollm3(const ConfigFields& f, ModelConfig& c) {
    read_llama_like(f, c);
    read_llama_biases(f, c);
    const int interval = f.integer("no_rope_layer_interval", 1, 4);
    c.no_rope.assign(static_cast<std::size_t>(c.n_layers), 0);
    if (f.has("no_rope_layers")) {
        const std::vector<double> uses = f.reals("no_rope_layers", static_cast<std::size_t>(c.n_layers));
        for (int i = 0; i < c.n_layers; ++i) {
            if (uses[i] != 0 && uses[i] != 1) f.fail("no_rope_layers", "expected a list of 0 (no RoPE) and 1 (RoPE)");
            c.no_rope[i] = uses[i] == 0;
        }
    } else {
        for (int i = 0; i < c.n_layers; ++i) c.no_rope[i] = (i + 1) % interval == 0;
    }
    read_optional_windows(f, c);
}

}  // namespace

const FamilyDef kSmolLM3Family{"smollm3", Family::SmolLM3, read_smollm3, plan_layout<kLlamaLayout>, "model.", "embed_tokens.weight"};

}  // namespace attn
