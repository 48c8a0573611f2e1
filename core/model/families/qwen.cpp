// qwen.cpp: Qwen2 / Qwen2.5 (model_type "qwen2") and Qwen3 (model_type "qwen3"): llama with
//
//   qwen2  a bias on q, k and v (not on o); sliding windows only with use_sliding_window, on
//          the layers from max_window_layers on (or as layer_types says)
//   qwen3  no biases (attention_bias); an RMSNorm over each query and key head (q_norm, k_norm)
//          before the rotation; head_dim given explicitly (128, not hidden_size / heads)
//   qwen3_moe  qwen3 with a mixture of experts in place of the MLP (num_local_experts, or
//          num_experts before transformers 5), num_experts_per_tok of them per token by a
//          softmax router (mlp.gate), renormalized with norm_topk_prob; experts on the layers i
//          with (i + 1) % decoder_sparse_step == 0 that mlp_only_layers does not name
//
// [SECTION] qwen2
// [SECTION] qwen3
// [SECTION] qwen3_moe
#include "family.hpp"

#include <nlohmann/json.hpp>

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

// [SECTION] qwen3_moe ---------------------------------------------------------------------------

void read_qwen3_moe(const ConfigFields& f, ModelConfig& c) {
    read_qwen3(f, c);
    Experts& ex = c.experts;
    const char* count = f.has("num_local_experts") ? "num_local_experts" : "num_experts";
    ex.n = f.integer(count, 1);
    ex.top_k = f.integer("num_experts_per_tok", 1);
    if (ex.top_k > ex.n)
        f.fail("num_experts_per_tok", "expected at most " + std::string(count) + " (" + std::to_string(ex.n) + "), got " +
                                          std::to_string(ex.top_k));
    ex.d_ff = f.integer("moe_intermediate_size", 1);
    ex.normalize = f.boolean("norm_topk_prob", false);
    const int step = f.integer("decoder_sparse_step", 1, 1);
    std::vector<std::uint8_t> dense(static_cast<std::size_t>(c.n_layers), 0);
    if (const nlohmann::json* only = f.find("mlp_only_layers")) {
        if (!only->is_array()) f.fail("mlp_only_layers", "expected a list of layer numbers");
        for (const nlohmann::json& i : *only) {
            if (!i.is_number_integer() || i.get<long long>() < 0 || i.get<long long>() >= c.n_layers)
                f.fail("mlp_only_layers", "expected layer numbers from 0 to " + std::to_string(c.n_layers - 1) + ", got " + i.dump());
            dense[static_cast<std::size_t>(i.get<long long>())] = 1;
        }
    }
    ex.layers.assign(static_cast<std::size_t>(c.n_layers), 0);
    for (int i = 0; i < c.n_layers; ++i) ex.layers[i] = !dense[i] && (i + 1) % step == 0;
}

}  // namespace

const FamilyDef kQwen2Family{"qwen2", Family::Qwen2, read_qwen2, plan_layout<kLlamaLayout>, "model.", "embed_tokens.weight"};
const FamilyDef kQwen3Family{"qwen3", Family::Qwen3, read_qwen3, plan_layout<kLlamaLayout>, "model.", "embed_tokens.weight"};
const FamilyDef kQwen3MoeFamily{"qwen3_moe", Family::Qwen3Moe, read_qwen3_moe, plan_layout<kLlamaLayout>, "model.",
                                "embed_tokens.weight"};

}  // namespace attn
