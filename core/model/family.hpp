// family.hpp: what a family's file (core/model/families/*.cpp) states, and the tools it states
// it with; not for users of the runtime (transformer.hpp, model.hpp).
//
// A family is data: a function that reads its config.json fields into a ModelConfig (sizes and
// the architecture's switches, config.hpp), and one that names its tensors and says where each
// goes (a Plan into ModelWeights). The forward pass (transformer.cpp) is one for every family.
//
// [SECTION] config.json fields
// [SECTION] Weights as the forward reads them
// [SECTION] A checkpoint: one file or shards
// [SECTION] The plan: tensor names, shapes, places
// [SECTION] The families
#pragma once

#include "blocks.hpp"
#include "config.hpp"
#include "files.hpp"
#include "safetensors.hpp"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace attn {

// [SECTION] config.json fields ---------------------------------------------------------------

// The fields of one config.json object (or of one of its objects, such as rope_scaling: then
// `path` is "rope_scaling." and messages name "rope_scaling.factor"); every error names the file
// and the field.
struct ConfigFields {
    const nlohmann::json& j;
    const std::string& file;
    std::string path;
    // Every field looked up is added here (when given): read_config refuses a field that changes
    // the math and that the family never looked at (kMathFields, config.cpp).
    std::set<std::string>* read = nullptr;

    [[noreturn]] void fail(const std::string& field, const std::string& message) const;
    const nlohmann::json* find(const std::string& field) const;  // nullptr when absent or null
    bool has(const std::string& field) const { return find(field) != nullptr; }
    // An integer ≥ minimum; `fallback` when absent (or null) if given, else "missing".
    int integer(const std::string& field, int minimum, std::optional<int> fallback = std::nullopt) const;
    int token(const std::string& field) const;  // a token id: absent or null gives -1 (a list: its first)
    float positive(const std::string& field, float fallback) const;  // > 0 as a float too
    double real(const std::string& field, std::optional<double> fallback = std::nullopt) const;  // any finite number
    bool boolean(const std::string& field, bool fallback) const;
    std::string text(const std::string& field, const std::string& fallback) const;
    std::vector<double> reals(const std::string& field, std::size_t n) const;        // a list of n numbers
    std::vector<std::string> texts(const std::string& field, std::size_t n) const;   // a list of n strings
    Activation activation(const std::string& field, const std::string& fallback) const;
    // A head count that divides `d`, named by the field that gave d.
    int heads(const std::string& field, int d, const std::string& d_field) const;
    // The fields of an object-valued field (absent: nullopt).
    std::optional<ConfigFields> object(const std::string& field) const;
};

// [SECTION] Weights as the forward reads them ------------------------------------------------

using blocks::Linear;

struct Norm {  // LayerNorm: g and b; RMSNorm: g (b nullptr); absent: g nullptr
    const float* g = nullptr;
    const float* b = nullptr;
    bool present() const { return g != nullptr; }
};

struct AttentionWeights {
    Linear q, k, v, o;     // q: d_model -> n_heads·d_head; k, v: d_model -> n_kv_heads·d_head; o: back
    Norm q_norm, k_norm;   // qk_norm: RMSNorm over d_head, one g shared by every head
    const float* sinks = nullptr;  // gpt_oss: n_heads logits, one in each of a head's softmax rows
};

// One layer. Pre-norm (gpt2, llama): norm_1 before the attention, norm_2 before the MLP.
// Post-norm (bert, marian): norm_1 after the (self) attention, norm_2 after the feed-forward,
// norm_3 after marian's cross attention. Sandwich (gemma): norm_1 and norm_2 before, and
// post_attention and post_ff after the attention and the MLP.
struct ExpertWeights {
    Linear gate, up, down;  // d_model -> d_ff (gate, up) -> d_model; clamped_swiglu: gate is gate | up
};                          // interleaved (d_model -> 2·d_ff, with its bias) and up is unused

struct LayerWeights {
    Norm norm_1, norm_2, norm_3, post_attention, post_ff;
    AttentionWeights self, cross;
    Linear fc1, fc2;  // d_model -> d_ff -> d_model (gated: fc1 is "up", fc2 "down")
    Linear gate;      // gated MLPs: d_model -> d_ff
    Linear router;    // experts: d_model -> n_experts (gpt_oss: with a bias)
    // dinov2's LayerScale: the attention's and the MLP's outputs times these d factors before
    // the residual adds them (nullptr: none)
    const float* layer_scale_1 = nullptr;
    const float* layer_scale_2 = nullptr;
    std::vector<ExpertWeights> experts;  // in place of the MLP, where the layer has experts
};

struct ModelWeights {
    // every tensor, F32, as in the file's layout, but the Linears' weights and the tables
    // (embedding, LM head): packed as the products read them (kernels::pack_columns, for the
    // best instruction set), as floats, as the 16-bit numbers of a BF16 or F16 file (storage16),
    // or as the 8-bit (4-bit) numbers and group scales of a GGUF's block formats (storage8)
    std::vector<std::unique_ptr<float[]>> storage;
    std::vector<std::unique_ptr<std::uint16_t[]>> storage16;
    std::vector<std::unique_ptr<std::int8_t[]>> storage8;  // a GGUF's block formats, kept quantized (quants.hpp held_as)
    std::size_t bytes = 0;
    std::int64_t parameters = 0;
    bool mxfp4 = false;  // some weights came as MXFP4 (their bytes are file_bytes' U8)
    std::map<Dtype, std::size_t> file_bytes;  // the checkpoint's bytes of the tensors read, by dtype

    // The token embedding as a d×V matrix, one column per token (kernels::column reads one),
    // packed as the LM head's product reads it: tied, it is the LM head's.
    kernels::PackedB token_embedding;
    const float* positions = nullptr;           // P×d: gpt2 wpe, bert position_embeddings, marian encoder's
    const float* decoder_positions = nullptr;   // marian: P×d
    const float* token_types = nullptr;         // bert: type_vocab×d (row 0 is used)
    Norm embedding_norm;                        // bert; clip (pre_layrnorm)
    const float* cls_token = nullptr;           // vit, clip: d
    Linear patch_embedding;                     // vit: a patch's channels·p·p pixels -> d
    const float* registers = nullptr;           // dinov2_with_registers: registers×d, after the [CLS]
    Linear projector;                           // idefics3, smolvlm, gemma3: the connector, s²·d_vision (gemma3: d_vision) -> d
    Norm projector_norm;                        // gemma3: the RMSNorm before it (mm_soft_emb_norm, 1 + w); qwen2_5_vl: each patch's (ln_q)
    Linear projector_out;                       // qwen2_5_vl: the connector's second Linear, after a GELU
    Norm final_norm;                            // gpt2 ln_f, llama norm
    std::vector<LayerWeights> layers;           // gpt2, bert, llama; marian's encoder
    std::vector<LayerWeights> decoder_layers;   // marian
    // The LM head, d -> V: logits = x·lm_head (+ marian's final_logits_bias); a step's
    // product over 50257 columns streams its packed panels once. Encoders: none (data nullptr).
    Linear lm_head;
};

// [SECTION] A checkpoint: one file or shards -------------------------------------------------

// model.safetensors, or the shards model.safetensors.index.json names (its weight_map).
struct Checkpoint {
    struct Shard {
        std::shared_ptr<const FileBytes> bytes;  // mapped, owned, or sliced (the page's: its header held)
        std::string name;   // among the model's files: "model-00001-of-00002.safetensors"
        std::string shown;  // "folder/model-00001-of-00002.safetensors"
        SafetensorsHeader header;
    };
    struct Tensor {
        const TensorInfo* info;
        int shard;
    };
    std::string file;  // how messages name the checkpoint: the one file, or the index
    std::vector<Shard> shards;
    std::map<std::string, Tensor> tensors;  // every tensor of every shard (an index's: those it names)
    std::map<std::string, std::string> file_names;  // a GGUF's: transformers' name -> the file's
    std::string named(const std::string& name) const;  // for messages: "blk.0.attn_q.weight" for a GGUF's
    // Every tensor whose name starts with `from` found under `to` + the rest instead (messages
    // still name the file's name): ModelConfig::renamed.
    void rename(const std::string& from, const std::string& to);

    const Tensor* find(const std::string& name) const;
    bool has(const std::string& name) const { return find(name) != nullptr; }
    static Checkpoint one_file(std::shared_ptr<const FileBytes> bytes, std::string shown);
    // model.safetensors.index.json and its shards from `files`; or model.safetensors; or the
    // one GGUF file (files.gguf()), its tensors under transformers' names (gguf.hpp).
    static Checkpoint from_files(const ModelFiles& files);
};

// [SECTION] The plan: tensor names, shapes, places -------------------------------------------

// What the loader reads: a tensor of the file into its F32 place, or (a Linear's weight or a
// table, out = nullptr) packed from the file's bytes as they are (F32, BF16 or F16), with no copy.
struct Conversion {
    Checkpoint::Tensor tensor;
    float* out;
    float add = 0;           // added to every element (Gemma's RMSNorm scales by 1 + w)
    std::uint8_t* raw = nullptr;  // a U8 tensor's bytes kept as they are (MXFP4 blocks and scales), not out
};

// An MXFP4 weight (gpt-oss's experts on the Hub), packed once the loader has read its blocks
// and scales (ModelLoader::take): W [out, in] in groups of 32 along `in`, each group 16 bytes of
// 4-bit E2M1 codes (low nibble first) and one E8M0 scale byte: w = fp4[code]·2^(scale − 127).
// Dequantized exactly to BF16 (every such value is one) and packed as a BF16 weight is.
struct Mxfp4Packing {
    std::size_t blocks, scales;  // their conversions (raw bytes), [n, out, in/32, 16] and [n, out, in/32]
    int index;                   // which of the n weights
    int in, out;
    kernels::Isa isa;
    void* to;                    // kernels::packed_size(isa, in, out) 16-bit numbers
};
// Packs one, once its conversions' raw bytes (the whole blocks and scales) are read.
void pack_mxfp4(const Mxfp4Packing& m, const std::vector<Conversion>& conversions);

// A Linear's weight (or a table), packed once its tensor is read: W (in×out) from element
// `offset` of the tensor, stored as [in, out] with row stride ld, or as [out, in] (transposed).
struct Packing {
    std::size_t conversion;
    std::ptrdiff_t offset;
    int ld;
    bool transposed;
    kernels::Isa isa;
    kernels::Precision precision;  // the tensor's: F32, BF16 or F16, packed from the file's bytes; grouped: a block format's (held_as)
    int in, out;
    void* to;  // kernels::packed_bytes(precision, packed_size(isa, in, out))
    void* scales = nullptr;  // grouped: kernels::scales_bytes(precision, packed_size(isa, in, out))
};

enum class Bias { Required, None };

// The tensor names of a family, as a plan: each name with its expected shape and where it goes.
// Names are under the family's prefix ("model.", "transformer.", …) unless `prefixed` is false.
class Plan {
public:
    Plan(const Checkpoint& checkpoint, std::string prefix, ModelWeights& w)
        : checkpoint_(checkpoint), prefix_(std::move(prefix)), w_(w) {}

    std::string full(const std::string& name, bool prefixed = true) const { return prefixed ? prefix_ + name : name; }
    const std::string& file() const { return checkpoint_.file; }
    bool has(const std::string& name, bool prefixed = true) const { return checkpoint_.has(full(name, prefixed)); }
    std::vector<std::int64_t> shape(const std::string& name, bool prefixed = true) const;  // {} when absent
    // A required tensor: checked, given its F32 place (converted later).
    float* need(const std::string& name, std::vector<std::int64_t> shape, bool prefixed = true);
    // A required [V, d] table (an embedding, an LM head's weight) as the d×V matrix whose column
    // j is its row j, packed: an LM head's product, a token's embedding by kernels::column.
    kernels::PackedB table(const std::string& name, int V, int d, bool prefixed = true);
    // An optional tensor: nullptr when absent.
    float* maybe(const std::string& name, std::vector<std::int64_t> shape, bool prefixed = true);
    // Memory for a table computed here (not from the file).
    float* computed(std::size_t n);

    Norm layer_norm(const std::string& name, int d);  // NAME.weight, NAME.bias
    // NAME.weight; `add` 1 for Gemma's (1 + w)
    Norm rms_norm(const std::string& name, int d, float add = 0, bool prefixed = true);
    // nn.Linear: weight [out, in], bias [out] (or none).
    Linear linear(const std::string& name, int in, int out, Bias bias = Bias::Required, bool prefixed = true);
    // nn.Linear fused along its outputs (phi3's qkv_proj, gate_up_proj): one Linear per part,
    // parts[k] rows of the weight each, in order.
    std::vector<Linear> linear_parts(const std::string& name, int in, const std::vector<int>& parts, Bias bias, bool prefixed = true);
    // A weight stored [in, out] and read as x·W, without a bias (Gemma 3's
    // mm_input_projection_weight: an nn.Parameter, not an nn.Linear).
    Linear matrix(const std::string& name, int in, int out, bool prefixed = true);
    // A vision model's patch embedding, nn.Conv2d(channels, out, kernel = stride = size): weight
    // [out, channels, size, size], bias [out] (or none), as the Linear of a patch's pixels
    // (channel, row, column). `frames` > 1: nn.Conv3d's over that many frames (qwen2_5_vl's),
    // weight [out, channels, frames, size, size], pixels (channel, frame, row, column).
    Linear patch_embedding(const std::string& name, int channels, int size, int out, Bias bias = Bias::Required, int frames = 1);
    // GPT-2's Conv1D: weight [in, out], bias [out]; `parts` Linears of out/parts columns each
    // (c_attn: Q | K | V side by side, each packed on its own).
    std::vector<Linear> conv1d(const std::string& name, int in, int out, int parts = 1);
    // A bank of n linears in one tensor NAME [n, in, out] (x·W, as gpt_oss stores its experts),
    // their biases in NAME_bias [n, out].
    std::vector<Linear> bank(const std::string& name, int n, int in, int out);
    // The same bank in MXFP4, as the Hub's gpt-oss checkpoints hold it: NAME_blocks [n, out,
    // in/32, 16] and NAME_scales [n, out, in/32] (U8), biases NAME_bias [n, out].
    std::vector<Linear> mxfp4_bank(const std::string& name, int n, int in, int out);

    std::vector<Conversion> conversions;
    std::vector<Packing> packings;
    std::vector<Mxfp4Packing> mxfp4;
    std::vector<std::unique_ptr<std::uint8_t[]>> raw;  // the raw conversions' bytes, until packed

private:
    std::size_t packed_weight(const std::string& name, std::vector<std::int64_t> shape, bool prefixed = true);
    Linear packed(std::size_t weight, std::ptrdiff_t offset, int ld, bool transposed, int in, int out, const float* b);
    float* required(const std::string& name, const std::vector<std::int64_t>& shape, bool prefixed, bool kept);
    float* place(const std::string& full, const Checkpoint::Tensor& t, const std::vector<std::int64_t>& shape, bool kept = true);

    const Checkpoint& checkpoint_;
    std::string prefix_;
    ModelWeights& w_;
};

// [SECTION] The families ---------------------------------------------------------------------

struct FamilyDef {
    const char* model_type;
    Family family;
    void (*read)(const ConfigFields& f, ModelConfig& c);  // nullptr: a tower, read by its model's config
    void (*plan)(const ModelConfig& c, Plan& p, ModelWeights& w);
    // The base model's prefix of a checkpoint with a head ("transformer.", "model.", …): used
    // when the checkpoint holds `prefix` + `probe`, else none (the base model alone).
    const char* prefix;
    const char* probe;
};

// One per file of core/model/families/.
extern const FamilyDef kGpt2Family, kBertFamily, kMarianFamily;          // gpt2.cpp, bert.cpp, marian.cpp
extern const FamilyDef kLlamaFamily, kMistralFamily;                     // llama.cpp
extern const FamilyDef kQwen2Family, kQwen3Family, kQwen3MoeFamily;      // qwen.cpp
extern const FamilyDef kGemma2Family, kGemma3Family, kGemma3VlmFamily;   // gemma.cpp
extern const FamilyDef kPhi3Family;                                      // phi3.cpp
extern const FamilyDef kSmolLM3Family;                                   // smollm3.cpp
extern const FamilyDef kGraniteFamily;                                   // granite.cpp
extern const FamilyDef kOlmo2Family, kExaone4Family;                     // olmo2.cpp
extern const FamilyDef kCohere2Family;                                   // cohere2.cpp
extern const FamilyDef kVitFamily;                                       // vit.cpp
extern const FamilyDef kClipFamily, kClipVisionFamily, kSiglipFamily, kSiglipVisionFamily;  // clip.cpp
extern const FamilyDef kDinov2Family, kDinov2RegistersFamily;            // dinov2.cpp
extern const FamilyDef kIdefics3Family, kSmolVlmFamily;                  // idefics3.cpp
extern const FamilyDef kGlm4Family;                                      // glm4.cpp
extern const FamilyDef kSeedOssFamily;                                   // seed_oss.cpp
extern const FamilyDef kGptOssFamily;                                    // gpt_oss.cpp
extern const FamilyDef kQwen25VlFamily, kQwen25VisionFamily;             // qwen2_5_vl.cpp

const FamilyDef* find_family(const std::string& model_type);  // nullptr: not supported
const FamilyDef& family_of(const ModelConfig& c);

// A CLIP- or SigLIP-style vision tower's fields (clip.cpp): hidden_size, num_hidden_layers,
// num_attention_heads, intermediate_size, hidden_act, layer_norm_eps, image_size, patch_size,
// num_channels, with the defaults of the config class that wrote them (save_pretrained leaves
// the defaults out).
struct TowerDefaults {
    int hidden = 768, layers = 12, heads = 12, ff = 3072, image = 224, patch = 16;
};
void read_vision_tower(const ConfigFields& f, ModelConfig& c, bool clip, const TowerDefaults& defaults);

// A vision classifier's labels (vit.cpp): id2label {"0": "tabby, tabby cat", …} in id order
// into c.labels and c.vocab_size; absent, transformers' default two (LABEL_0, LABEL_1).
void read_labels(const ConfigFields& f, ModelConfig& c);

// What the Llama-like families share (families/llama.cpp): RMSNorm, pre-norm, RoPE, GQA, a
// gated MLP, tied or separate head. Each such family reads these fields, then its own.
void read_llama_like(const ConfigFields& f, ModelConfig& c, double rope_theta = 10000);  // rope_theta's default
// llama's biases: attention_bias on q, k, v and o, mlp_bias on the MLP (both false by default).
void read_llama_biases(const ConfigFields& f, ModelConfig& c);
// The names of a Llama-like layer's tensors where families differ (nullptr: no such norm). The
// norms go where c.residual reads them: pre_attention → norm_1, post_attention →
// post_attention, pre_mlp → norm_2, post_mlp → post_ff.
struct LlamaLayout {
    const char* pre_attention = "input_layernorm";
    const char* post_attention = nullptr;
    const char* pre_mlp = "post_attention_layernorm";
    const char* post_mlp = nullptr;
    bool fused_qkv = false;      // phi3: self_attn.qkv_proj, q | k | v by rows
    bool fused_gate_up = false;  // phi3, glm4: mlp.gate_up_proj, gate | up by rows
    float norm_add = 0;          // gemma: 1 (its RMSNorm scales by 1 + w)
    // Where a layer has experts (c.experts): qwen3_moe's mlp.gate (the router) and
    // mlp.experts.E.{gate,up,down}_proj; gpt_oss's mlp.router (with a bias) and the banks
    // mlp.experts.gate_up_proj, mlp.experts.down_proj (with _bias).
    enum class ExpertNames { OneByOne, Banks } expert_names = ExpertNames::OneByOne;
};
inline constexpr LlamaLayout kLlamaLayout{};
// model.embed_tokens, layers.N.{the layout's norms, self_attn.{q,k,v,o}_proj (+ q_norm, k_norm:
// over a head, or the whole projection with c.qk_norm_whole), mlp.{gate,up,down}_proj}, norm,
// lm_head; biases as c says.
void plan_llama_like(const ModelConfig& c, Plan& p, ModelWeights& w, const LlamaLayout& layout);
// A family's plan: plan_llama_like with its layout (FamilyDef::plan).
template <const LlamaLayout& L>
void plan_layout(const ModelConfig& c, Plan& p, ModelWeights& w) {
    plan_llama_like(c, p, w, L);
}
// The embedding and the LM head: tied (one table serves both) or lm_head.weight (unprefixed).
void plan_embedding_and_head(const ModelConfig& c, Plan& p, ModelWeights& w, const std::string& embedding);
// config.json's layer_types (a list of n_layers, each "full_attention" or "sliding_attention";
// any other value refused by name); empty when absent.
std::vector<std::string> read_layer_types(const ConfigFields& f, const ModelConfig& c);
// config.json's sliding-window fields as per-layer windows: `layer_types` where present, else
// `sliding(layer)` says which layers slide. A sliding layer needs a window (> 0).
template <class Sliding>
void read_windows(const ConfigFields& f, ModelConfig& c, int window, Sliding sliding) {
    const std::vector<std::string> types = read_layer_types(f, c);
    c.window.assign(static_cast<std::size_t>(c.n_layers), 0);
    for (int i = 0; i < c.n_layers; ++i) {
        const bool slides = types.empty() ? sliding(i) : types[i] == "sliding_attention";
        if (slides && window <= 0) f.fail("sliding_window", "missing, and layer " + std::to_string(i) + " slides");
        c.window[i] = slides ? window : 0;
    }
}
// transformers' Qwen2Config and those that copy it (smollm3): sliding_window is kept only with
// use_sliding_window; then the layers i ≥ max_window_layers slide (or those layer_types names).
void read_optional_windows(const ConfigFields& f, ModelConfig& c);
// The rotation into c.rope (and c.local_rope for the sliding layers where the config gives them
// their own), from either form of config.json (every type of rope.hpp):
//   transformers 5   rope_parameters: {rope_type, rope_theta, partial_rotary_factor, the type's
//                    fields}, or one such object per layer type ({full_attention: …,
//                    sliding_attention: …}); a field missing there is looked for at the top
//   before           rope_theta, partial_rotary_factor at the top, rope_scaling: {the type's fields}
// `theta` is the family's default base. A field the type does not read is refused, not ignored.
void read_rope(const ConfigFields& f, ModelConfig& c, double theta = 10000);

}  // namespace attn
