// gpt_oss.cpp: gpt-oss (model_type "gpt_oss"): llama with
//
//   sinks     a learned logit per head (self_attn.sinks) in every softmax row's denominator:
//             weights = e^{s−m} / (Σ e^{s−m} + e^{sink−m}), the rest of the row the sink's
//   windows   sliding and full layers alternating (layer_types; sliding_window 128), YaRN
//   biases    on q, k, v and o (attention_bias)
//   experts   every layer: a router with a bias (mlp.router) picks num_experts_per_tok of
//             num_local_experts by their logits, weighted by a softmax over those; each expert's
//             gate and up are interleaved in one bank (mlp.experts.gate_up_proj [n, d, 2·ff],
//             with _bias) and its output is down((clamp(up, ±7) + 1)·g·σ(1.702·g)), g =
//             min(gate, 7) (mlp.experts.down_proj [n, ff, d], with _bias); the Hub's checkpoints
//             hold both banks in MXFP4 (_blocks, _scales: quantization_config "mxfp4")
#include "family.hpp"

namespace attn {

namespace {

void read_gpt_oss(const ConfigFields& f, ModelConfig& c) {
    read_llama_like(f, c);
    c.qkv_bias = c.o_bias = f.boolean("attention_bias", true);
    c.sinks = true;
    const int window = f.integer("sliding_window", 1, 128);
    read_windows(f, c, window, [](int i) { return i % 2 == 0; });
    Experts& ex = c.experts;
    ex.n = f.integer("num_local_experts", 1, 128);
    ex.top_k = f.integer("num_experts_per_tok", 1, 4);
    if (ex.top_k > ex.n)
        f.fail("num_experts_per_tok", "expected at most num_local_experts (" + std::to_string(ex.n) + "), got " + std::to_string(ex.top_k));
    ex.d_ff = c.d_ff;
    ex.router = Experts::Router::TopKSoftmax;
    ex.clamped_swiglu = true;
    if (f.has("swiglu_limit") && f.real("swiglu_limit") != 7.0) f.fail("swiglu_limit", "attnviz runs gpt-oss's 7 only");
    // The Hub's checkpoints: the experts in MXFP4 (read as such, checkpoint.cpp), the rest 16-bit.
    if (const std::optional<ConfigFields> q = f.object("quantization_config"))
        if (const std::string method = q->text("quant_method", ""); method != "mxfp4")
            q->fail("quant_method", "\"" + method + "\": attnviz reads gpt-oss's MXFP4 experts, or unquantized weights");
    ex.layers.assign(static_cast<std::size_t>(c.n_layers), 1);
}

constexpr LlamaLayout kGptOssLayout{"input_layernorm", nullptr, "post_attention_layernorm", nullptr, false, false, 0,
                                    LlamaLayout::ExpertNames::Banks};

}  // namespace

const FamilyDef kGptOssFamily{"gpt_oss", Family::GptOss, read_gpt_oss, plan_layout<kGptOssLayout>, "model.", "embed_tokens.weight"};

}  // namespace attn
