// clip.cpp: the vision towers of CLIP (model_type "clip", "clip_vision_model") and SigLIP
// ("siglip", "siglip_vision_model"), as their differences from ViT (vit.cpp). Both: pre-LN layers
// under "vision_model.", named layer_norm1, self_attn.{q,k,v,out}_proj, layer_norm2, mlp.fc1, fc2;
// learned positions (an nn.Embedding); no classifier.
//   CLIP    a class embedding (the [CLS]), a patch embedding without bias, a LayerNorm on the
//           embeddings (pre_layrnorm, sic), QuickGELU; its last hidden state has no norm
//           (post_layernorm is the pooled [CLS]'s only)
//   SigLIP  no [CLS], a patch embedding with a bias, tanh-GELU, post_layernorm on every row
// A CLIPModel's or SiglipModel's text tower and projections, and SigLIP's pooling head, are not
// read: attnviz shows the picture's attention.
#include "family.hpp"

namespace attn {

namespace {

enum class Tower { Clip, Siglip };

template <Tower T>
void read_tower(const ConfigFields& top, ModelConfig& c) {
    constexpr bool clip = T == Tower::Clip;
    // "clip", "siglip": the whole model's config; the tower's fields are its vision_config
    const bool whole = c.model_type == "clip" || c.model_type == "siglip";
    const std::optional<ConfigFields> nested = whole ? top.object("vision_config") : std::nullopt;
    if (whole && !nested) top.fail("vision_config", "missing: the vision tower's sizes");
    // The defaults are CLIPVisionConfig's and SiglipVisionConfig's.
    read_vision_tower(whole ? *nested : top, c, clip, TowerDefaults{768, 12, 12, 3072, 224, clip ? 32 : 16});
}

template <Tower T>
void plan_tower(const ModelConfig& c, Plan& p, ModelWeights& w) {
    constexpr bool clip = T == Tower::Clip;
    const int d = c.d_model;
    if (clip) {
        w.cls_token = p.need("embeddings.class_embedding", {d});
        w.embedding_norm = p.layer_norm("pre_layrnorm", d);
    }
    w.patch_embedding = p.patch_embedding("embeddings.patch_embedding", c.channels, c.patch_size, d, clip ? Bias::None : Bias::Required);
    w.positions = p.need("embeddings.position_embedding.weight", {c.max_positions, d});
    for (int i = 0; i < c.n_layers; ++i) {
        const std::string e = "encoder.layers." + std::to_string(i) + ".";
        LayerWeights l;
        l.norm_1 = p.layer_norm(e + "layer_norm1", d);
        l.self.q = p.linear(e + "self_attn.q_proj", d, d);
        l.self.k = p.linear(e + "self_attn.k_proj", d, d);
        l.self.v = p.linear(e + "self_attn.v_proj", d, d);
        l.self.o = p.linear(e + "self_attn.out_proj", d, d);
        l.norm_2 = p.layer_norm(e + "layer_norm2", d);
        l.fc1 = p.linear(e + "mlp.fc1", d, c.d_ff);
        l.fc2 = p.linear(e + "mlp.fc2", c.d_ff, d);
        w.layers.push_back(l);
    }
    if (!clip) w.final_norm = p.layer_norm("post_layernorm", d);
}

constexpr const char* kPrefix = "vision_model.";
constexpr const char* kProbe = "embeddings.patch_embedding.weight";

}  // namespace

void read_vision_tower(const ConfigFields& f, ModelConfig& c, bool clip, const TowerDefaults& defaults) {
    c.d_model = f.integer("hidden_size", 1, defaults.hidden);
    c.n_layers = f.integer("num_hidden_layers", 1, defaults.layers);
    c.n_heads = f.integer("num_attention_heads", 1, defaults.heads);
    if (c.d_model % c.n_heads != 0) f.fail("num_attention_heads", std::to_string(c.n_heads) + " does not divide hidden_size " + std::to_string(c.d_model));
    c.d_ff = f.integer("intermediate_size", 1, defaults.ff);
    c.activation = f.activation("hidden_act", clip ? "quick_gelu" : "gelu_pytorch_tanh");
    c.layer_norm_eps = f.positive("layer_norm_eps", clip ? 1e-5f : 1e-6f);
    c.image_size = f.integer("image_size", 1, defaults.image);
    c.patch_size = f.integer("patch_size", 1, defaults.patch);
    c.channels = f.integer("num_channels", 1, 3);
    if (c.image_size % c.patch_size != 0)
        f.fail("patch_size", std::to_string(c.patch_size) + " does not divide image_size " + std::to_string(c.image_size));
    c.class_token = clip;
    c.max_positions = c.patch_grid() * c.patch_grid() + (clip ? 1 : 0);
    c.norm = NormKind::LayerNorm, c.residual = Residual::PreNorm, c.positions = Positions::Learned;
}

const FamilyDef kClipFamily{"clip", Family::Clip, read_tower<Tower::Clip>, plan_tower<Tower::Clip>, kPrefix, kProbe};
const FamilyDef kClipVisionFamily{"clip_vision_model", Family::ClipVision, read_tower<Tower::Clip>, plan_tower<Tower::Clip>, kPrefix, kProbe};
const FamilyDef kSiglipFamily{"siglip", Family::Siglip, read_tower<Tower::Siglip>, plan_tower<Tower::Siglip>, kPrefix, kProbe};
const FamilyDef kSiglipVisionFamily{"siglip_vision_model", Family::SiglipVision, read_tower<Tower::Siglip>, plan_tower<Tower::Siglip>,
                                    kPrefix, kProbe};

}  // namespace attn
