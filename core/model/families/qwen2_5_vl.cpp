// qwen2_5_vl.cpp: Qwen2.5-VL (model_type "qwen2_5_vl", Qwen2_5_VLForConditionalGeneration) as its
// differences from a Qwen2 and from the vision towers before it:
//   text_config    a qwen2 (q, k, v biases) whose rotation is M-RoPE: the head's pairs in three
//                  sections (rope_parameters.mrope_section), turned by a token's time, height and
//                  width positions (model.hpp picture_positions); the Hub's older files write
//                  the text model's fields at the top and rope_scaling {type "mrope", …}
//   vision_config  its own tower (model.visual.*, the Hub's older files visual.*): the patch
//                  embedding a bias-free Conv3d over temporal_patch_size frames (a picture is
//                  repeated), no [CLS] and no position table but a 2-D rotation of each head
//                  (its pairs' first half turned by the patch's row, the second by its column,
//                  each half's frequencies its own), RMSNorm (eps 1e-6) before the attention
//                  (fused qkv, biases) and the SwiGLU MLP (biases); the layers attend within
//                  windows of window_size pixels a side but those of fullatt_block_indexes
//   connector      the merger: each spatial_merge_size² block of the picture's patches, each
//                  patch through ln_q (RMSNorm), side by side, then mlp.0, GELU, mlp.2
// The picture's grid is its own (the processor's smart resize), so the image tokens' count is.
#include "family.hpp"

#include <nlohmann/json.hpp>

namespace attn {

namespace {

// Qwen2_5_VLVisionConfig's fields, with its defaults.
std::shared_ptr<ModelConfig> read_tower(const ConfigFields& v) {
    auto t = std::make_shared<ModelConfig>();
    t->model_type = v.text("model_type", "qwen2_5_vl");
    t->family = Family::Qwen25Vision;
    t->d_model = v.integer("hidden_size", 1, 3584);
    t->n_layers = v.integer("depth", 1, 32);
    t->n_heads = v.integer("num_heads", 1, 16);
    if (t->d_model % t->n_heads != 0) v.fail("num_heads", std::to_string(t->n_heads) + " does not divide hidden_size " + std::to_string(t->d_model));
    t->d_ff = v.integer("intermediate_size", 1, 3420);
    t->activation = v.activation("hidden_act", "silu");
    t->channels = v.integer("in_channels", 1, 3);
    t->patch_size = v.integer("patch_size", 1, 14);
    t->temporal_patch = v.integer("temporal_patch_size", 1, 2);
    t->layer_norm_eps = 1e-6f;  // Qwen2RMSNorm(…, eps=1e-6): not a config field
    t->norm = NormKind::RmsNorm, t->residual = Residual::PreNorm, t->positions = Positions::Rotary;
    t->gated_mlp = true, t->qkv_bias = t->o_bias = t->mlp_bias = true;
    const int head = t->d_model / t->n_heads;
    if (head % 4 != 0) v.fail("num_heads", "gives heads of " + std::to_string(head) + ": the rotation splits a head's pairs between rows and columns (a multiple of 4)");
    t->rope.dim = head, t->rope.theta = 10000, t->rope.sections = {head / 4, head / 4}, t->rope.own_frequencies = true;
    return t;
}

void read_qwen2_5_vl(const ConfigFields& f, ModelConfig& c) {
    // transformers 5 nests the text model's fields in text_config; the Hub's older files keep them at the top
    const std::optional<ConfigFields> nested = f.object("text_config");
    const ConfigFields& text = nested ? *nested : f;
    if (nested)
        if (const std::string type = text.text("model_type", "qwen2_5_vl_text"); type != "qwen2_5_vl_text")
            text.fail("model_type", "\"" + type + "\": attnviz's qwen2_5_vl reads a qwen2_5_vl_text language model");
    read_llama_like(text, c, 1e6);
    c.qkv_bias = true;
    read_optional_windows(text, c);
    if (nested && f.has("tie_word_embeddings")) c.tie_word_embeddings = f.boolean("tie_word_embeddings", false);
    const std::optional<ConfigFields> vision = f.object("vision_config");
    if (!vision) f.fail("vision_config", "missing: the vision tower's sizes");
    std::shared_ptr<ModelConfig> tower = read_tower(*vision);
    c.scale_factor = vision->integer("spatial_merge_size", 1, 2);
    const int unit = tower->patch_size * c.scale_factor, window = vision->integer("window_size", 1, 112);
    if (window % unit != 0)
        vision->fail("window_size", std::to_string(window) + " pixels: not a whole number of merged patches (" + std::to_string(unit) + " pixels)");
    tower->window_patches = window / tower->patch_size;
    tower->full_layers.assign(static_cast<std::size_t>(tower->n_layers), 0);
    if (const nlohmann::json* full = vision->find("fullatt_block_indexes")) {
        if (!full->is_array()) vision->fail("fullatt_block_indexes", "expected a list of layer numbers");
        for (const nlohmann::json& i : *full) {
            if (!i.is_number_integer() || i.get<long long>() < 0 || i.get<long long>() >= tower->n_layers)
                vision->fail("fullatt_block_indexes", "expected layer numbers from 0 to " + std::to_string(tower->n_layers - 1) + ", got " + i.dump());
            tower->full_layers[static_cast<std::size_t>(i.get<long long>())] = 1;
        }
    }
    const int out = vision->integer("out_hidden_size", 1, 3584);
    if (out != c.d_model) vision->fail("out_hidden_size", std::to_string(out) + ": the language model's hidden_size is " + std::to_string(c.d_model));
    c.connector = ModelConfig::Connector::Merge;
    c.image_token_id = f.integer("image_token_id", 0, 151655);
    c.boi_token_id = f.integer("vision_start_token_id", 0, 151652);
    c.eoi_token_id = f.integer("vision_end_token_id", 0, 151653);
    c.renamed = {{"model.layers.", "model.language_model.layers."},
                 {"model.embed_tokens.", "model.language_model.embed_tokens."},
                 {"model.norm.", "model.language_model.norm."},
                 {"visual.", "model.visual."}};
    tower->renamed = c.renamed;
    tower->weights_prefix = "model.visual.";
    c.vision_tower = std::move(tower);
}

void plan_qwen2_5_vl(const ModelConfig& c, Plan& p, ModelWeights& w) {
    ModelConfig text = c;  // tied unless the checkpoint has an LM head of its own
    text.tie_word_embeddings = !p.has("lm_head.weight", false);
    plan_llama_like(text, p, w, kLlamaLayout);
    const int dv = c.vision_tower->d_model, merged = dv * c.scale_factor * c.scale_factor;
    const std::string m = "model.visual.merger.";
    w.projector_norm = p.rms_norm(m + "ln_q", dv, 0, false);
    w.projector = p.linear(m + "mlp.0", merged, merged, Bias::Required, false);
    w.projector_out = p.linear(m + "mlp.2", merged, c.d_model, Bias::Required, false);
}

void plan_tower(const ModelConfig& c, Plan& p, ModelWeights& w) {
    const int d = c.d_model;
    w.patch_embedding = p.patch_embedding("patch_embed.proj", c.channels, c.patch_size, d, Bias::None, c.temporal_patch);
    for (int i = 0; i < c.n_layers; ++i) {
        const std::string b = "blocks." + std::to_string(i) + ".";
        LayerWeights l;
        l.norm_1 = p.rms_norm(b + "norm1", d);
        const std::vector<Linear> qkv = p.linear_parts(b + "attn.qkv", d, {d, d, d}, Bias::Required);
        l.self.q = qkv[0], l.self.k = qkv[1], l.self.v = qkv[2];
        l.self.o = p.linear(b + "attn.proj", d, d);
        l.norm_2 = p.rms_norm(b + "norm2", d);
        l.gate = p.linear(b + "mlp.gate_proj", d, c.d_ff);
        l.fc1 = p.linear(b + "mlp.up_proj", d, c.d_ff);
        l.fc2 = p.linear(b + "mlp.down_proj", c.d_ff, d);
        w.layers.push_back(l);
    }
}

}  // namespace

const FamilyDef kQwen25VlFamily{"qwen2_5_vl", Family::Qwen25Vl, read_qwen2_5_vl, plan_qwen2_5_vl, "model.language_model.", "embed_tokens.weight"};
// The tower: read with its model's config.json (no model_type of its own to open)
const FamilyDef kQwen25VisionFamily{"", Family::Qwen25Vision, nullptr, plan_tower, "model.visual.", "patch_embed.proj.weight"};

}  // namespace attn
