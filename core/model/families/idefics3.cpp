// idefics3.cpp: the vision-language models Idefics3 (model_type "idefics3",
// Idefics3ForConditionalGeneration) and SmolVLM ("smolvlm", the same architecture), as their
// differences from a Llama and a SigLIP tower:
//   vision_config  a SigLIP tower without its pooling head (model.vision_model.*: patch embedding
//                  with a bias, learned positions, pre-LN layers, post_layernorm), its own defaults
//                  (Idefics3VisionConfig's: 1152 wide, 12 layers of 16 heads, patches of 32)
//   connector      pixel shuffle by scale_factor (each s×s block of the tower's patches becomes
//                  one row, s²·d_v wide), then model.connector.modality_projection.proj (no bias)
//   text_config    a Llama (model.text_model.*, lm_head), whose image_token_id rows' embeddings
//                  the connector's rows replace, in order; causal over the whole sequence
// The tower is a Model of its own (model.hpp's LoadedModel::vision); the picture's views and the
// prompt around them are model.hpp's vision_language_input.
#include "family.hpp"

namespace attn {

namespace {

void read_idefics3(const ConfigFields& f, ModelConfig& c) {
    const std::optional<ConfigFields> text = f.object("text_config");
    if (!text) f.fail("text_config", "missing: the language model's sizes");
    if (const std::string type = text->text("model_type", "llama"); type != "llama")
        text->fail("model_type", "\"" + type + "\": attnviz's " + c.model_type + " reads a llama language model");
    kLlamaFamily.read(*text, c);
    const std::optional<ConfigFields> vision = f.object("vision_config");
    if (!vision) f.fail("vision_config", "missing: the vision tower's sizes");
    auto tower = std::make_shared<ModelConfig>();
    tower->model_type = vision->text("model_type", c.model_type + "_vision");
    tower->family = Family::SiglipVision;
    read_vision_tower(*vision, *tower, false, TowerDefaults{1152, 12, 16, 3072, 224, 32});
    tower->weights_prefix = "model.vision_model.";
    c.scale_factor = f.integer("scale_factor", 1, 2);
    if (tower->patch_grid() % c.scale_factor != 0)
        f.fail("scale_factor", std::to_string(c.scale_factor) + " does not divide the " + std::to_string(tower->patch_grid()) + " patches a side");
    c.image_token_id = f.integer("image_token_id", 0, 128257);
    c.vision_tower = std::move(tower);
}

void plan_idefics3(const ModelConfig& c, Plan& p, ModelWeights& w) {
    ModelConfig text = c;  // tied where the checkpoint has no LM head of its own
    text.tie_word_embeddings = !p.has("lm_head.weight", false);
    kLlamaFamily.plan(text, p, w);
    const int s = c.scale_factor;
    w.projector = p.linear("model.connector.modality_projection.proj", c.vision_tower->d_model * s * s, c.d_model, Bias::None, false);
}

}  // namespace

const FamilyDef kIdefics3Family{"idefics3", Family::Idefics3, read_idefics3, plan_idefics3, "model.text_model.", "embed_tokens.weight"};
const FamilyDef kSmolVlmFamily{"smolvlm", Family::SmolVlm, read_idefics3, plan_idefics3, "model.text_model.", "embed_tokens.weight"};

}  // namespace attn
