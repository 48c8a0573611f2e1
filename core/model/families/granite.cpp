// granite.cpp: IBM Granite 3 (model_type "granite"): llama with four multipliers.
//
//   embedding_multiplier   the embeddings' factor
//   attention_multiplier   the scores' scale, in place of 1/√head_dim (default 1)
//   residual_multiplier    each sub-block's output scaled before it joins the residual stream
//   logits_scaling         the logits divided by it
#include "family.hpp"

namespace attn {

namespace {

void read_granite(const ConfigFields& f, ModelConfig& c) {
    read_llama_like(f, c);
    read_llama_biases(f, c);
    c.embedding_scale = f.positive("embedding_multiplier", 1.0f);
    c.query_scale = f.positive("attention_multiplier", 1.0f);
    c.residual_scale = f.positive("residual_multiplier", 1.0f);
    c.logit_scale = 1.0f / f.positive("logits_scaling", 1.0f);
    read_windows(f, c, 0, [](int) { return false; });
}

}  // namespace

const FamilyDef kGraniteFamily{"granite", Family::Granite, read_granite, plan_layout<kLlamaLayout>, "model.", "embed_tokens.weight"};

}  // namespace attn
