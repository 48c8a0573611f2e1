// marian.cpp: Marian (model_type "marian", the opus-mt translators). Encoder-decoder: encoder
// self-attention, decoder causal self-attention and cross attention, post-LN, sinusoidal
// positions, embeddings scaled by √d (scale_embedding), SiLU, the LM head tied to the shared
// embedding plus final_logits_bias.
#include "family.hpp"

#include <cmath>

namespace attn {

namespace {

void read_marian(const ConfigFields& f, ModelConfig& c) {
    c.vocab_size = f.integer("vocab_size", 1);
    c.d_model = f.integer("d_model", 1);
    c.n_layers = f.integer("encoder_layers", 1);
    c.n_heads = f.heads("encoder_attention_heads", c.d_model, "d_model");
    c.d_ff = f.integer("encoder_ffn_dim", 1);
    c.decoder_layers = f.integer("decoder_layers", 1);
    c.decoder_heads = f.heads("decoder_attention_heads", c.d_model, "d_model");
    c.decoder_ff = f.integer("decoder_ffn_dim", 1);
    c.activation = f.activation("activation_function", "swish");
    c.max_positions = f.integer("max_position_embeddings", 1, 1024);
    if (f.boolean("scale_embedding", false)) c.embedding_scale = std::sqrt(static_cast<float>(c.d_model));
    c.layer_norm_eps = 1e-5f;
    c.pad_id = f.token("pad_token_id");
    c.eos_id = f.token("eos_token_id");
    c.bos_id = f.token("bos_token_id");
    c.decoder_start_id = f.token("decoder_start_token_id");
    if (c.decoder_start_id < 0) c.decoder_start_id = c.pad_id;
    c.tie_word_embeddings = f.boolean("tie_word_embeddings", true);
    const int decoder_vocab = f.integer("decoder_vocab_size", 1, c.vocab_size);
    if (decoder_vocab != c.vocab_size)
        f.fail("decoder_vocab_size", "a separate target vocabulary (" + std::to_string(decoder_vocab) +
                                         ", source " + std::to_string(c.vocab_size) + ") is not supported");
    c.norm = NormKind::LayerNorm, c.residual = Residual::PostNorm, c.positions = Positions::Sinusoidal;
}

AttentionWeights attention(Plan& p, const std::string& name, int d) {
    AttentionWeights a;
    a.q = p.linear(name + ".q_proj", d, d), a.k = p.linear(name + ".k_proj", d, d);
    a.v = p.linear(name + ".v_proj", d, d), a.o = p.linear(name + ".out_proj", d, d);
    return a;
}

void plan_marian(const ModelConfig& c, Plan& p, ModelWeights& w) {
    const int d = c.d_model, V = c.vocab_size, P = c.max_positions;
    const bool untied = !c.tie_word_embeddings && p.has("lm_head.weight", false);
    w.token_embedding = p.table("shared.weight", V, d);
    // The sinusoidal table as the file has it, else computed (the same numbers).
    w.positions = p.maybe("encoder.embed_positions.weight", {P, d});
    w.decoder_positions = p.maybe("decoder.embed_positions.weight", {P, d});
    if (!w.positions || !w.decoder_positions) {
        constexpr std::int64_t kMaxTable = std::int64_t{1} << 26;  // 256 MB of floats
        if (static_cast<std::int64_t>(P) * d > kMaxTable)
            throw ModelError(p.file(), p.full(w.positions ? "decoder.embed_positions.weight" : "encoder.embed_positions.weight"),
                             "missing, and max_position_embeddings × d_model (" + std::to_string(P) + " × " +
                                 std::to_string(d) + ") is too large a table to compute");
        float* table = p.computed(static_cast<std::size_t>(P) * d);
        blocks::sinusoidal_positions(P, d, table);
        if (!w.positions) w.positions = table;
        if (!w.decoder_positions) w.decoder_positions = table;
    }
    for (int i = 0; i < c.n_layers; ++i) {
        const std::string e = "encoder.layers." + std::to_string(i) + ".";
        LayerWeights l;
        l.self = attention(p, e + "self_attn", d);
        l.norm_1 = p.layer_norm(e + "self_attn_layer_norm", d);
        l.fc1 = p.linear(e + "fc1", d, c.d_ff);
        l.fc2 = p.linear(e + "fc2", c.d_ff, d);
        l.norm_2 = p.layer_norm(e + "final_layer_norm", d);
        w.layers.push_back(l);
    }
    for (int i = 0; i < c.decoder_layers; ++i) {
        const std::string e = "decoder.layers." + std::to_string(i) + ".";
        LayerWeights l;
        l.self = attention(p, e + "self_attn", d);
        l.norm_1 = p.layer_norm(e + "self_attn_layer_norm", d);
        l.cross = attention(p, e + "encoder_attn", d);
        l.norm_3 = p.layer_norm(e + "encoder_attn_layer_norm", d);
        l.fc1 = p.linear(e + "fc1", d, c.decoder_ff);
        l.fc2 = p.linear(e + "fc2", c.decoder_ff, d);
        l.norm_2 = p.layer_norm(e + "final_layer_norm", d);
        w.decoder_layers.push_back(l);
    }
    // MarianMTModel: lm_head.weight (often left out when tied) and final_logits_bias [1, V].
    w.lm_head = {untied ? p.table("lm_head.weight", V, d, false) : w.token_embedding, nullptr};
    if (p.has("final_logits_bias", false)) {
        const bool flat = p.shape("final_logits_bias", false).size() == 1;
        w.lm_head.b = flat ? p.need("final_logits_bias", {V}, false) : p.need("final_logits_bias", {1, V}, false);
    }
}

}  // namespace

const FamilyDef kMarianFamily{"marian", Family::Marian, read_marian, plan_marian, "model.", "shared.weight"};

}  // namespace attn
