// llama.cpp: Llama (model_type "llama": Llama 2/3/3.1/3.2/3.3, SmolLM2, TinyLlama) and what the
// Llama-like families share (family.hpp), and Mistral (model_type "mistral").
//
//   llama    decoder-only, pre-norm with RMSNorm, rotary positions (rope_theta, rope_scaling),
//            grouped-query attention (num_key_value_heads), a gated MLP down(silu(gate(x))·up(x)),
//            optional biases (attention_bias on q, k, v, o; mlp_bias), tied or separate LM head
//   mistral  llama with a sliding window on every layer (sliding_window; null: none)
//
// [SECTION] What the Llama-like families share
// [SECTION] llama
// [SECTION] mistral
#include "family.hpp"

namespace attn {

// [SECTION] What the Llama-like families share ------------------------------------------------

std::vector<std::string> read_layer_types(const ConfigFields& f, const ModelConfig& c) {
    if (!f.has("layer_types")) return {};
    std::vector<std::string> types = f.texts("layer_types", static_cast<std::size_t>(c.n_layers));
    for (const std::string& t : types)
        if (t != "sliding_attention" && t != "full_attention")
            f.fail("layer_types", "\"" + t + "\" is not a layer type attnviz runs (full_attention, sliding_attention)");
    return types;
}

void read_optional_windows(const ConfigFields& f, ModelConfig& c) {
    if (!f.boolean("use_sliding_window", false)) {  // then transformers drops the window: every
        read_layer_types(f, c);                        // layer attends fully, whatever layer_types says
        c.window.assign(static_cast<std::size_t>(c.n_layers), 0);
        return;
    }
    const int window = f.integer("sliding_window", 1, 0);
    const int from = f.integer("max_window_layers", 0, 28);
    read_windows(f, c, window, [&](int i) { return window > 0 && i >= from; });
}

void read_llama_biases(const ConfigFields& f, ModelConfig& c) {
    c.qkv_bias = c.o_bias = f.boolean("attention_bias", false);
    c.mlp_bias = f.boolean("mlp_bias", false);
}

void read_llama_like(const ConfigFields& f, ModelConfig& c, double rope_theta) {
    c.vocab_size = f.integer("vocab_size", 1);
    c.d_model = f.integer("hidden_size", 1);
    c.n_layers = f.integer("num_hidden_layers", 1);
    c.n_heads = f.integer("num_attention_heads", 1);
    c.head_dim = f.integer("head_dim", 1, 0);
    if (c.head_dim == 0) c.head_dim = c.d_model / f.heads("num_attention_heads", c.d_model, "hidden_size");
    c.n_kv_heads = f.integer("num_key_value_heads", 1, c.n_heads);
    if (c.n_heads % c.n_kv_heads)
        f.fail("num_key_value_heads", "expected a divisor of num_attention_heads (" + std::to_string(c.n_heads) + "), got " +
                                          std::to_string(c.n_kv_heads));
    c.d_ff = f.integer("intermediate_size", 1);
    c.activation = f.activation("hidden_act", "silu");
    c.max_positions = f.integer("max_position_embeddings", 1, 2048);
    c.layer_norm_eps = f.positive("rms_norm_eps", 1e-6f);
    c.bos_id = f.token("bos_token_id");
    c.eos_id = f.token("eos_token_id");
    c.pad_id = f.token("pad_token_id");
    c.tie_word_embeddings = f.boolean("tie_word_embeddings", false);
    c.norm = NormKind::RmsNorm, c.residual = Residual::PreNorm, c.positions = Positions::Rotary;
    c.gated_mlp = true;
    read_rope(f, c, rope_theta);
}

void plan_embedding_and_head(const ModelConfig& c, Plan& p, ModelWeights& w, const std::string& embedding) {
    const int d = c.d_model, V = c.vocab_size;
    w.token_embedding = p.table(embedding, V, d);
    w.lm_head = {c.tie_word_embeddings ? w.token_embedding : p.table("lm_head.weight", V, d, false), nullptr};
}

namespace {

// A layer's experts (e: "layers.N."), named as the layout says.
void plan_experts(const ModelConfig& c, Plan& p, const std::string& e, const LlamaLayout& L, LayerWeights& l) {
    const int d = c.d_model, n = c.experts.n, ff = c.experts.d_ff;
    if (L.expert_names == LlamaLayout::ExpertNames::Banks) {
        l.router = p.linear(e + "mlp.router", d, n, Bias::Required);
        const bool mxfp4 = p.has(e + "mlp.experts.gate_up_proj_blocks");  // the Hub's gpt-oss
        const auto bank = [&](const std::string& name, int in, int out) {
            return mxfp4 ? p.mxfp4_bank(name, n, in, out) : p.bank(name, n, in, out);
        };
        const std::vector<Linear> gate_up = bank(e + "mlp.experts.gate_up_proj", d, 2 * ff);
        const std::vector<Linear> down = bank(e + "mlp.experts.down_proj", ff, d);
        for (int k = 0; k < n; ++k) l.experts.push_back({gate_up[k], {}, down[k]});
        return;
    }
    l.router = p.linear(e + "mlp.gate", d, n, Bias::None);
    for (int k = 0; k < n; ++k) {
        const std::string x = e + "mlp.experts." + std::to_string(k) + ".";
        l.experts.push_back({p.linear(x + "gate_proj", d, ff, Bias::None), p.linear(x + "up_proj", d, ff, Bias::None),
                             p.linear(x + "down_proj", ff, d, Bias::None)});
    }
}

}  // namespace

void plan_llama_like(const ModelConfig& c, Plan& p, ModelWeights& w, const LlamaLayout& L) {
    const Bias qkv_bias = c.qkv_bias ? Bias::Required : Bias::None, o_bias = c.o_bias ? Bias::Required : Bias::None;
    const Bias mlp_bias = c.mlp_bias ? Bias::Required : Bias::None;
    const int d = c.d_model, hd = c.d_head(), q = c.n_heads * hd, kv = c.kv_heads() * hd;
    const auto norm = [&](const char* name, const std::string& e) { return name ? p.rms_norm(e + name, d, L.norm_add) : Norm{}; };
    plan_embedding_and_head(c, p, w, "embed_tokens.weight");
    for (int i = 0; i < c.n_layers; ++i) {
        const std::string e = "layers." + std::to_string(i) + ".";
        LayerWeights l;
        l.norm_1 = norm(L.pre_attention, e);
        if (L.fused_qkv) {
            const std::vector<Linear> qkv = p.linear_parts(e + "self_attn.qkv_proj", d, {q, kv, kv}, qkv_bias);
            l.self.q = qkv[0], l.self.k = qkv[1], l.self.v = qkv[2];
        } else {
            l.self.q = p.linear(e + "self_attn.q_proj", d, q, qkv_bias);
            l.self.k = p.linear(e + "self_attn.k_proj", d, kv, qkv_bias);
            l.self.v = p.linear(e + "self_attn.v_proj", d, kv, qkv_bias);
        }
        l.self.o = p.linear(e + "self_attn.o_proj", q, d, o_bias);
        if (c.sinks) l.self.sinks = p.need(e + "self_attn.sinks", {c.n_heads});
        if (c.qk_norm) {
            l.self.q_norm = p.rms_norm(e + "self_attn.q_norm", c.qk_norm_whole ? q : hd, L.norm_add);
            l.self.k_norm = p.rms_norm(e + "self_attn.k_norm", c.qk_norm_whole ? kv : hd, L.norm_add);
        }
        l.post_attention = norm(L.post_attention, e);
        l.norm_2 = norm(L.pre_mlp, e);
        if (c.has_experts(i)) {
            plan_experts(c, p, e, L, l);
        } else if (L.fused_gate_up) {
            const std::vector<Linear> gate_up = p.linear_parts(e + "mlp.gate_up_proj", d, {c.d_ff, c.d_ff}, mlp_bias);
            l.gate = gate_up[0], l.fc1 = gate_up[1];
        } else {
            l.gate = p.linear(e + "mlp.gate_proj", d, c.d_ff, mlp_bias);
            l.fc1 = p.linear(e + "mlp.up_proj", d, c.d_ff, mlp_bias);
        }
        if (!c.has_experts(i)) l.fc2 = p.linear(e + "mlp.down_proj", c.d_ff, d, mlp_bias);
        l.post_ff = norm(L.post_mlp, e);
        w.layers.push_back(l);
    }
    w.final_norm = p.rms_norm("norm", d, L.norm_add);
}

namespace {

// [SECTION] llama -------------------------------------------------------------------------------

void read_llama(const ConfigFields& f, ModelConfig& c) {
    read_llama_like(f, c);
    read_llama_biases(f, c);
    read_windows(f, c, 0, [](int) { return false; });  // no windows: a layer_types that slides is refused
}

// [SECTION] mistral -----------------------------------------------------------------------------

void read_mistral(const ConfigFields& f, ModelConfig& c) {
    read_llama_like(f, c);
    const int window = f.integer("sliding_window", 1, 0);  // null: no window
    read_windows(f, c, window, [&](int) { return window > 0; });
}

}  // namespace

const FamilyDef kLlamaFamily{"llama", Family::Llama, read_llama, plan_layout<kLlamaLayout>, "model.", "embed_tokens.weight"};
const FamilyDef kMistralFamily{"mistral", Family::Mistral, read_mistral, plan_layout<kLlamaLayout>, "model.", "embed_tokens.weight"};

}  // namespace attn
