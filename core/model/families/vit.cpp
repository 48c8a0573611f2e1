// vit.cpp: the Vision Transformer (model_type "vit"; ViTModel, ViTForImageClassification).
// Encoder-only and bidirectional as BERT, but pre-LN (layernorm_before the attention,
// layernorm_after before the MLP, a final layernorm), and its tokens are a picture's: a [CLS]
// then the patches in row order, each patch's channels·p·p pixels through the patch embedding
// (a convolution of stride p), learned positions added. With a classifier, the logits are its
// labels' at the [CLS] row.
#include "family.hpp"

#include <nlohmann/json.hpp>

namespace attn {

namespace {

void read_vit(const ConfigFields& f, ModelConfig& c) {
    c.d_model = f.integer("hidden_size", 1);
    c.n_layers = f.integer("num_hidden_layers", 1);
    c.n_heads = f.heads("num_attention_heads", c.d_model, "hidden_size");
    c.d_ff = f.integer("intermediate_size", 1, 4 * c.d_model);
    c.activation = f.activation("hidden_act", "gelu");
    c.layer_norm_eps = f.positive("layer_norm_eps", 1e-12f);
    c.image_size = f.integer("image_size", 1, 224);
    c.patch_size = f.integer("patch_size", 1, 16);
    c.channels = f.integer("num_channels", 1, 3);
    if (c.image_size % c.patch_size != 0)
        f.fail("patch_size", std::to_string(c.patch_size) + " does not divide image_size " + std::to_string(c.image_size));
    if (!f.boolean("qkv_bias", true)) f.fail("qkv_bias", "false: attnviz's vit reads query, key and value biases");
    c.class_token = true;
    c.max_positions = 1 + c.patch_grid() * c.patch_grid();
    read_labels(f, c);
    c.norm = NormKind::LayerNorm, c.residual = Residual::PreNorm, c.positions = Positions::Learned;
}

void plan_vit(const ModelConfig& c, Plan& p, ModelWeights& w) {
    const int d = c.d_model;
    w.cls_token = p.need("embeddings.cls_token", {1, 1, d});
    w.positions = p.need("embeddings.position_embeddings", {1, c.max_positions, d});
    w.patch_embedding = p.patch_embedding("embeddings.patch_embeddings.projection", c.channels, c.patch_size, d);
    for (int i = 0; i < c.n_layers; ++i) {
        const std::string e = "encoder.layer." + std::to_string(i) + ".";
        LayerWeights l;
        l.norm_1 = p.layer_norm(e + "layernorm_before", d);
        l.self.q = p.linear(e + "attention.attention.query", d, d);
        l.self.k = p.linear(e + "attention.attention.key", d, d);
        l.self.v = p.linear(e + "attention.attention.value", d, d);
        l.self.o = p.linear(e + "attention.output.dense", d, d);
        l.norm_2 = p.layer_norm(e + "layernorm_after", d);
        l.fc1 = p.linear(e + "intermediate.dense", d, c.d_ff);
        l.fc2 = p.linear(e + "output.dense", c.d_ff, d);
        w.layers.push_back(l);
    }
    w.final_norm = p.layer_norm("layernorm", d);
    // ViTForImageClassification's head (outside the "vit." prefix); ViTModel has none (its pooler is not read).
    if (p.has("classifier.weight", false))
        w.lm_head = {p.table("classifier.weight", c.vocab_size, d, false), p.need("classifier.bias", {c.vocab_size}, false)};
}

}  // namespace

void read_labels(const ConfigFields& f, ModelConfig& c) {
    c.labels = {"LABEL_0", "LABEL_1"};  // save_pretrained leaves the default out
    if (const nlohmann::json* labels = f.find("id2label")) {
        if (!labels->is_object()) f.fail("id2label", "expected {\"0\": \"a label\", …}");
        c.labels.assign(labels->size(), "");
        for (const auto& [id, name] : labels->items()) {
            std::size_t k = 0;
            const bool number = !id.empty() && id.find_first_not_of("0123456789") == std::string::npos && (k = std::stoul(id.substr(0, 9))) < c.labels.size();
            if (!number || !name.is_string() || !c.labels[k].empty()) f.fail("id2label", "expected the labels of ids 0 to " + std::to_string(c.labels.size() - 1) + ", each once");
            c.labels[k] = name.get<std::string>();
        }
    }
    c.vocab_size = static_cast<int>(c.labels.size());
}

const FamilyDef kVitFamily{"vit", Family::Vit, read_vit, plan_vit, "vit.", "embeddings.cls_token"};

}  // namespace attn
