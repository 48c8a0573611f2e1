// gemma.cpp: Gemma 2 (model_type "gemma2") and Gemma 3's text model ("gemma3_text"): llama with
//
//   both    the embeddings scaled by √hidden_size; RMSNorm scaling by (1 + w); four norms per
//           layer (before and after the attention, before and after the MLP: "sandwich");
//           scores scaled by query_pre_attn_scalar^−½ instead of head_dim^−½; a gated MLP with
//           GELU (tanh); the head tied to the embedding
//   gemma2  scores soft-capped, cap·tanh(s/cap) (attn_logit_softcapping), and the logits too
//           (final_logit_softcapping); sliding and full layers alternating, sliding first
//   gemma3  q_norm and k_norm over each head before the rotation (1 + w as well); a sliding
//           layer in each group of sliding_window_pattern but the last (or layer_types); the
//           sliding layers rotate with their own base, rope_local_base_freq, and no scaling (or
//           as rope_parameters.sliding_attention says: transformers 5)
// And Gemma 3 with pictures ("gemma3", Gemma3ForConditionalGeneration): a gemma3_text language
// model (text_config, model.language_model.*) and a SigLIP tower (vision_config,
// model.vision_tower.vision_model.*), as their differences from Idefics3 (idefics3.cpp):
//   connector  the tower's G×G patches averaged over k×k blocks (AvgPool2d, k = G / √mm_tokens_per_image),
//              each mean through an RMSNorm scaling by 1 + w (mm_soft_emb_norm, the tower's eps),
//              then times mm_input_projection_weight [d_vision, d] (x·W)
//   prompt     the text's <start_of_image> (boi_token_index) becomes "\n\n<start_of_image>",
//              mm_tokens_per_image <image_soft_token> (image_token_index), "<end_of_image>\n\n"
//   mask       an image's tokens attend to each other both ways (token_type_ids' or-mask), in
//              the sliding layers too; every other query as the text model's
//   names      the Hub's files keep transformers 4.50's: language_model.model.*, vision_tower.*,
//              multi_modal_projector.*, read as the newer (ModelConfig::renamed)
//
// [SECTION] What both share
// [SECTION] gemma2
// [SECTION] gemma3_text
// [SECTION] gemma3 (with pictures)
#include "family.hpp"

#include <nlohmann/json.hpp>

#include <cmath>

namespace attn {

namespace {

// [SECTION] What both share ---------------------------------------------------------------------

// A soft cap: `fallback` when config.json leaves the field out (transformers' default), none
// when it is null.
float softcap(const ConfigFields& f, const std::string& field, float fallback) {
    if (!f.j.contains(field)) return fallback;
    return f.has(field) ? f.positive(field, fallback) : 0.0f;
}

void read_gemma(const ConfigFields& f, ModelConfig& c, double rope_theta) {
    read_llama_like(f, c, rope_theta);
    c.tie_word_embeddings = f.boolean("tie_word_embeddings", true);
    c.activation = f.activation("hidden_activation", "gelu_pytorch_tanh");
    c.residual = Residual::Sandwich;
    c.embedding_scale = std::sqrt(static_cast<float>(c.d_model));
    c.query_scale = 1.0f / std::sqrt(f.positive("query_pre_attn_scalar", 256.0f));
    c.qkv_bias = c.o_bias = f.boolean("attention_bias", false);
}

constexpr LlamaLayout kGemmaLayout{"input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                                   "post_feedforward_layernorm", false, false, 1};

// [SECTION] gemma2 ------------------------------------------------------------------------------

void read_gemma2(const ConfigFields& f, ModelConfig& c) {
    read_gemma(f, c, 10000);
    c.attn_softcap = softcap(f, "attn_logit_softcapping", 50.0f);
    c.final_softcap = softcap(f, "final_logit_softcapping", 30.0f);
    const int window = f.integer("sliding_window", 1, 4096);
    read_windows(f, c, window, [](int i) { return i % 2 == 0; });
}

// [SECTION] gemma3_text -------------------------------------------------------------------------

void read_gemma3(const ConfigFields& f, ModelConfig& c) {
    read_gemma(f, c, 1e6);  // Gemma3TextConfig's rope_theta (the Hub's gemma-3 files leave it out)
    c.qk_norm = true;
    c.attn_softcap = softcap(f, "attn_logit_softcapping", 0.0f);
    c.final_softcap = softcap(f, "final_logit_softcapping", 0.0f);
    const int window = f.integer("sliding_window", 1, 4096);
    const int pattern = f.integer("sliding_window_pattern", 1, 6);
    read_windows(f, c, window, [&](int i) { return (i + 1) % pattern != 0; });
    if (c.local_rope.dim > 0) {  // rope_parameters.sliding_attention (transformers 5)
        if (f.has("rope_local_base_freq") && f.real("rope_local_base_freq") != c.local_rope.theta)
            f.fail("rope_local_base_freq", "differs from rope_parameters.sliding_attention.rope_theta");
        return;
    }
    c.local_rope = Rope{};
    c.local_rope.dim = c.rope.dim;
    c.local_rope.theta = f.real("rope_local_base_freq", 10000.0);
    c.local_rope.max_positions = c.max_positions;
}

// [SECTION] gemma3 (with pictures) --------------------------------------------------------------

void read_gemma3_vlm(const ConfigFields& f, ModelConfig& c) {
    const std::optional<ConfigFields> text = f.object("text_config");
    if (!text) f.fail("text_config", "missing: the language model's sizes");
    if (const std::string type = text->text("model_type", "gemma3_text"); type != "gemma3_text")
        text->fail("model_type", "\"" + type + "\": attnviz's gemma3 reads a gemma3_text language model");
    read_gemma3(*text, c);
    const std::optional<ConfigFields> vision = f.object("vision_config");
    if (!vision) f.fail("vision_config", "missing: the vision tower's sizes");
    auto tower = std::make_shared<ModelConfig>();
    tower->model_type = vision->text("model_type", "siglip_vision_model");
    tower->family = Family::SiglipVision;
    read_vision_tower(*vision, *tower, false, TowerDefaults{});  // SiglipVisionConfig's defaults
    tower->weights_prefix = "model.vision_tower.vision_model.";
    const int tokens = f.integer("mm_tokens_per_image", 1, 256);
    const int side = static_cast<int>(std::lround(std::sqrt(static_cast<double>(tokens))));
    if (side * side != tokens) f.fail("mm_tokens_per_image", std::to_string(tokens) + " is not a square: a picture's tokens are a grid of its patches' means");
    if (tower->patch_grid() % side != 0)
        f.fail("mm_tokens_per_image", std::to_string(tokens) + ": " + std::to_string(side) + " a side does not divide the tower's " +
                                          std::to_string(tower->patch_grid()) + " patches a side");
    c.scale_factor = tower->patch_grid() / side;
    c.connector = ModelConfig::Connector::MeanPool;
    c.bidirectional_images = true;
    // Gemma3Config's attribute_map: image_token_id is image_token_index (and boi_, eoi_ likewise)
    const auto index = [&](const char* name, const char* alias, int fallback) {
        return f.has(name) ? f.integer(name, 0) : f.integer(alias, 0, fallback);
    };
    c.image_token_id = index("image_token_index", "image_token_id", 262144);
    c.boi_token_id = index("boi_token_index", "boi_token_id", 255999);
    c.eoi_token_id = index("eoi_token_index", "eoi_token_id", 256000);
    c.renamed = {{"language_model.model.", "model.language_model."},
                 {"language_model.lm_head.", "lm_head."},
                 {"vision_tower.", "model.vision_tower."},
                 {"multi_modal_projector.", "model.multi_modal_projector."}};
    tower->renamed = c.renamed;
    c.vision_tower = std::move(tower);
}

void plan_gemma3_vlm(const ModelConfig& c, Plan& p, ModelWeights& w) {
    ModelConfig text = c;  // tied unless the checkpoint has an LM head of its own
    text.tie_word_embeddings = !p.has("lm_head.weight", false);
    plan_layout<kGemmaLayout>(text, p, w);
    const int dv = c.vision_tower->d_model;
    w.projector_norm = p.rms_norm("model.multi_modal_projector.mm_soft_emb_norm", dv, 1, false);
    w.projector = p.matrix("model.multi_modal_projector.mm_input_projection_weight", dv, c.d_model, false);
}

}  // namespace

const FamilyDef kGemma2Family{"gemma2", Family::Gemma2, read_gemma2, plan_layout<kGemmaLayout>, "model.", "embed_tokens.weight"};
const FamilyDef kGemma3Family{"gemma3_text", Family::Gemma3, read_gemma3, plan_layout<kGemmaLayout>, "model.", "embed_tokens.weight"};
const FamilyDef kGemma3VlmFamily{"gemma3", Family::Gemma3Vlm, read_gemma3_vlm, plan_gemma3_vlm, "model.language_model.", "embed_tokens.weight"};

}  // namespace attn
