// bert.cpp: BERT (model_type "bert"). Encoder-only: bidirectional self-attention, post-LN
// (LayerNorm after each residual sum), learned positions and token types with a LayerNorm on
// the embeddings, nn.Linear weights; no LM head.
#include "family.hpp"

namespace attn {

namespace {

void read_bert(const ConfigFields& f, ModelConfig& c) {
    c.vocab_size = f.integer("vocab_size", 1);
    c.d_model = f.integer("hidden_size", 1);
    c.n_layers = f.integer("num_hidden_layers", 1);
    c.n_heads = f.heads("num_attention_heads", c.d_model, "hidden_size");
    c.d_ff = f.integer("intermediate_size", 1, 4 * c.d_model);
    c.activation = f.activation("hidden_act", "gelu");
    c.max_positions = f.integer("max_position_embeddings", 1, 512);
    c.type_vocab_size = f.integer("type_vocab_size", 1, 2);
    c.layer_norm_eps = f.positive("layer_norm_eps", 1e-12f);
    c.pad_id = f.token("pad_token_id");
    c.tie_word_embeddings = f.boolean("tie_word_embeddings", true);
    if (const std::string p = f.text("position_embedding_type", "absolute"); p != "absolute")
        f.fail("position_embedding_type", "\"" + p + "\": attnviz's bert runs absolute positions only");
    c.norm = NormKind::LayerNorm, c.residual = Residual::PostNorm, c.positions = Positions::Learned;
}

void plan_bert(const ModelConfig& c, Plan& p, ModelWeights& w) {
    const int d = c.d_model;
    w.token_embedding = p.table("embeddings.word_embeddings.weight", c.vocab_size, d);
    w.positions = p.need("embeddings.position_embeddings.weight", {c.max_positions, d});
    w.token_types = p.need("embeddings.token_type_embeddings.weight", {c.type_vocab_size, d});
    w.embedding_norm = p.layer_norm("embeddings.LayerNorm", d);
    for (int i = 0; i < c.n_layers; ++i) {
        const std::string e = "encoder.layer." + std::to_string(i) + ".";
        LayerWeights l;
        l.self.q = p.linear(e + "attention.self.query", d, d);
        l.self.k = p.linear(e + "attention.self.key", d, d);
        l.self.v = p.linear(e + "attention.self.value", d, d);
        l.self.o = p.linear(e + "attention.output.dense", d, d);
        l.norm_1 = p.layer_norm(e + "attention.output.LayerNorm", d);
        l.fc1 = p.linear(e + "intermediate.dense", d, c.d_ff);
        l.fc2 = p.linear(e + "output.dense", c.d_ff, d);
        l.norm_2 = p.layer_norm(e + "output.LayerNorm", d);
        w.layers.push_back(l);
    }
}

}  // namespace

const FamilyDef kBertFamily{"bert", Family::Bert, read_bert, plan_bert, "bert.", "embeddings.word_embeddings.weight"};

}  // namespace attn
