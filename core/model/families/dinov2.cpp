// dinov2.cpp: DINOv2 (model_type "dinov2": Dinov2Model, Dinov2ForImageClassification) and DINOv2
// with registers ("dinov2_with_registers", Darcet et al. 2024), as their differences from ViT
// (vit.cpp):
//   - LayerScale: the attention's and the MLP's outputs times a learned factor per channel
//     (layer_scale1, layer_scale2) before the residual adds them; norm1, norm2 around them;
//   - the MLP is mlp.fc1, fc2 of int(hidden_size·mlp_ratio), or with use_swiglu_ffn a SwiGLU
//     (mlp.weights_in's two halves: silu(x₁) ⊙ x₂, then weights_out);
//   - the position table is image_size's (518 for the Hub's checkpoints) and follows the picture:
//     on another patch grid it is resized by torch's bicubic interpolate (dinov2: plain;
//     with registers: antialias=True), the [CLS]'s kept;
//   - with registers: num_register_tokens learned tokens after the [CLS], added after the
//     positions (they have none), so the tokens are [CLS], reg0 …, then the patches;
//   - the classifier reads the [CLS] and the mean of the patches (not the registers): 2·d.
#include "family.hpp"

namespace attn {

namespace {

template <bool Registers>
void read_dinov2(const ConfigFields& f, ModelConfig& c) {
    // The defaults are Dinov2Config's and Dinov2WithRegistersConfig's.
    c.d_model = f.integer("hidden_size", 1, 768);
    c.n_layers = f.integer("num_hidden_layers", 1, 12);
    c.n_heads = f.heads("num_attention_heads", c.d_model, "hidden_size");
    const double ratio = f.real("mlp_ratio", 4.0);
    if (ratio <= 0) f.fail("mlp_ratio", "expected a positive number");
    const int hidden = static_cast<int>(c.d_model * ratio);  // Python's int(): toward zero
    c.gated_mlp = f.boolean("use_swiglu_ffn", false);
    c.d_ff = c.gated_mlp ? (static_cast<int>(hidden * 2.0 / 3.0) + 7) / 8 * 8 : hidden;
    if (c.d_ff < 1) f.fail("mlp_ratio", "gives an MLP of no width");
    c.activation = c.gated_mlp ? Activation::Silu : f.activation("hidden_act", "gelu");
    c.layer_norm_eps = f.positive("layer_norm_eps", 1e-6f);
    c.image_size = f.integer("image_size", 1, 224);
    c.patch_size = f.integer("patch_size", 1, Registers ? 16 : 14);
    c.channels = f.integer("num_channels", 1, 3);
    if (c.image_size < c.patch_size) f.fail("patch_size", std::to_string(c.patch_size) + " is more than image_size " + std::to_string(c.image_size));
    if (!f.boolean("qkv_bias", true)) f.fail("qkv_bias", "false: attnviz's dinov2 reads query, key and value biases");
    c.class_token = true;
    c.registers = Registers ? f.integer("num_register_tokens", 0, 4) : 0;
    c.position_resize = Registers ? PositionResize::BicubicAntialias : PositionResize::Bicubic;
    c.max_positions = 1 + c.registers + c.name_grid() * c.name_grid();  // the tokens of the largest grid read
    c.pooled_head = true;
    read_labels(f, c);
    c.norm = NormKind::LayerNorm, c.residual = Residual::PreNorm, c.positions = Positions::Learned;
}

template <bool Registers>
void plan_dinov2(const ModelConfig& c, Plan& p, ModelWeights& w) {
    const int d = c.d_model;
    w.cls_token = p.need("embeddings.cls_token", {1, 1, d});
    if (Registers && c.registers > 0) w.registers = p.need("embeddings.register_tokens", {1, c.registers, d});
    w.positions = p.need("embeddings.position_embeddings", {1, 1 + c.patch_grid() * c.patch_grid(), d});  // image_size's grid
    w.patch_embedding = p.patch_embedding("embeddings.patch_embeddings.projection", c.channels, c.patch_size, d);
    for (int i = 0; i < c.n_layers; ++i) {
        const std::string e = "encoder.layer." + std::to_string(i) + ".";
        LayerWeights l;
        l.norm_1 = p.layer_norm(e + "norm1", d);
        l.self.q = p.linear(e + "attention.attention.query", d, d);
        l.self.k = p.linear(e + "attention.attention.key", d, d);
        l.self.v = p.linear(e + "attention.attention.value", d, d);
        l.self.o = p.linear(e + "attention.output.dense", d, d);
        l.layer_scale_1 = p.need(e + "layer_scale1.lambda1", {d});
        l.norm_2 = p.layer_norm(e + "norm2", d);
        if (c.gated_mlp) {  // weights_in's first half is the gate (silu), its second the up
            const std::vector<Linear> in = p.linear_parts(e + "mlp.weights_in", d, {c.d_ff, c.d_ff}, Bias::Required);
            l.gate = in[0], l.fc1 = in[1];
            l.fc2 = p.linear(e + "mlp.weights_out", c.d_ff, d);
        } else {
            l.fc1 = p.linear(e + "mlp.fc1", d, c.d_ff);
            l.fc2 = p.linear(e + "mlp.fc2", c.d_ff, d);
        }
        l.layer_scale_2 = p.need(e + "layer_scale2.lambda1", {d});
        w.layers.push_back(l);
    }
    w.final_norm = p.layer_norm("layernorm", d);
    // Dinov2ForImageClassification's head (outside the prefix) reads [CLS] ‖ mean(patches).
    if (p.has("classifier.weight", false))
        w.lm_head = {p.table("classifier.weight", c.vocab_size, 2 * d, false), p.need("classifier.bias", {c.vocab_size}, false)};
}

}  // namespace

const FamilyDef kDinov2Family{"dinov2", Family::Dinov2, read_dinov2<false>, plan_dinov2<false>, "dinov2.", "embeddings.cls_token"};
const FamilyDef kDinov2RegistersFamily{"dinov2_with_registers", Family::Dinov2Registers, read_dinov2<true>, plan_dinov2<true>,
                                       "dinov2_with_registers.", "embeddings.cls_token"};

}  // namespace attn
