// gpt2.cpp: GPT-2 (model_type "gpt2"). Decoder-only: causal self-attention, pre-LN (LayerNorm
// before each sub-block), learned positions, a final ln_f, the LM head tied to the embedding
// (unless tie_word_embeddings is false: a GGUF's own output.weight); Conv1D weights stored
// [in, out] (a GGUF's [out, in]: TensorInfo::linear_layout), Q | K | V fused in c_attn.
#include "family.hpp"

namespace attn {

namespace {

void read_gpt2(const ConfigFields& f, ModelConfig& c) {
    c.vocab_size = f.integer("vocab_size", 1);
    c.d_model = f.integer("n_embd", 1);
    c.n_layers = f.integer("n_layer", 1);
    c.n_heads = f.heads("n_head", c.d_model, "n_embd");
    c.max_positions = f.integer("n_positions", 1, f.integer("n_ctx", 1, 1024));
    c.d_ff = f.integer("n_inner", 1, 4 * c.d_model);  // null: 4·n_embd
    c.activation = f.activation("activation_function", "gelu_new");
    c.layer_norm_eps = f.positive("layer_norm_epsilon", 1e-5f);
    c.bos_id = f.token("bos_token_id");
    c.eos_id = f.token("eos_token_id");
    c.tie_word_embeddings = f.boolean("tie_word_embeddings", true);
    c.norm = NormKind::LayerNorm, c.residual = Residual::PreNorm, c.positions = Positions::Learned;
}

void plan_gpt2(const ModelConfig& c, Plan& p, ModelWeights& w) {
    const int d = c.d_model, V = c.vocab_size;
    w.token_embedding = p.table("wte.weight", V, d);
    w.positions = p.need("wpe.weight", {c.max_positions, d});
    for (int i = 0; i < c.n_layers; ++i) {
        const std::string h = "h." + std::to_string(i) + ".";
        LayerWeights l;
        l.norm_1 = p.layer_norm(h + "ln_1", d);
        // c_attn: [d, 3d], Q | K | V side by side
        const std::vector<Linear> qkv = p.conv1d(h + "attn.c_attn", d, 3 * d, 3);
        l.self.q = qkv[0], l.self.k = qkv[1], l.self.v = qkv[2];
        l.self.o = p.conv1d(h + "attn.c_proj", d, d)[0];
        l.norm_2 = p.layer_norm(h + "ln_2", d);
        l.fc1 = p.conv1d(h + "mlp.c_fc", d, c.d_ff)[0];
        l.fc2 = p.conv1d(h + "mlp.c_proj", c.d_ff, d)[0];
        w.layers.push_back(l);
    }
    w.final_norm = p.layer_norm("ln_f", d);
    w.lm_head = {c.tie_word_embeddings ? w.token_embedding : p.table("lm_head.weight", V, d, false), nullptr};
}

}  // namespace

const FamilyDef kGpt2Family{"gpt2", Family::Gpt2, read_gpt2, plan_gpt2, "transformer.", "wte.weight"};

}  // namespace attn
