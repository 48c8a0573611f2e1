// seed_oss.cpp: Seed-OSS (model_type "seed_oss"): llama with the attention's biases apart:
// attention_bias on q, k and v, attention_out_bias on o.
#include "family.hpp"

namespace attn {

namespace {

void read_seed_oss(const ConfigFields& f, ModelConfig& c) {
    read_llama_like(f, c);
    read_llama_biases(f, c);
    c.o_bias = f.boolean("attention_out_bias", false);
    read_windows(f, c, 0, [](int) { return false; });
}

}  // namespace

const FamilyDef kSeedOssFamily{"seed_oss", Family::SeedOss, read_seed_oss, plan_layout<kLlamaLayout>, "model.", "embed_tokens.weight"};

}  // namespace attn
