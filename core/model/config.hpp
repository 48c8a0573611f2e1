// config.hpp: a checkpoint's config.json, as far as the runtime needs it (SPEC.md §5), and the
// architecture it names stated as data: which norm, where the norms sit, how positions enter,
// how the heads share keys and values, which layers see a sliding window. Each family's file
// (core/model/families/) reads its config.json fields into this and names its tensors; the
// forward pass (transformer.cpp) is one for all, driven by these fields.
//
// [SECTION] The architecture as data
// [SECTION] The configuration
// [SECTION] Reading config.json
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attn {

// [SECTION] The architecture as data ---------------------------------------------------------

// model_type "gpt2", "bert", "marian", "llama", "mistral", "qwen2", "qwen3", "gemma2",
// "gemma3_text", "phi3", "smollm3", "granite", "olmo2", "exaone4", "cohere2", "glm4",
// "seed_oss", "qwen3_moe", "gpt_oss"; the vision encoders "vit", "clip", "clip_vision_model",
// "siglip", "siglip_vision_model", "dinov2", "dinov2_with_registers"; the vision-language
// "idefics3", "smolvlm", "gemma3", "qwen2_5_vl" (families/*.cpp); Qwen25Vision is qwen2_5_vl's
// tower, read by its model's config alone.
enum class Family {
    Gpt2, Bert, Marian, Llama, Mistral, Qwen2, Qwen3, Gemma2, Gemma3, Phi3, SmolLM3, Granite, Olmo2, Exaone4, Cohere2, Glm4,
    SeedOss, Qwen3Moe, GptOss, Vit, Clip, ClipVision, Siglip, SiglipVision, Dinov2, Dinov2Registers, Idefics3, SmolVlm,
    Gemma3Vlm, Qwen25Vl, Qwen25Vision
};
// "gelu", "gelu_new" / "gelu_pytorch_tanh", "relu", "silu" / "swish", "quick_gelu" (CLIP: x·σ(1.702x))
enum class Activation { GeluExact, GeluTanh, Relu, Silu, QuickGelu };

enum class NormKind {
    LayerNorm,  // (x − mean) / √(var + eps) · g + b
    RmsNorm,    // x / √(mean(x²) + eps) · g   (Gemma's (1 + w) is folded into g at load)
};
enum class Residual {
    PostNorm,  // bert, marian:   x = norm(x + f(x))
    PreNorm,   // gpt2, llama:    x = x + f(norm(x))
    Sandwich,  // gemma2, gemma3, glm4: x = x + post_norm(f(pre_norm(x)))
    PostOnly,  // olmo2, exaone4: x = x + post_norm(f(x))
    Parallel,  // cohere2: x = x + attention(norm(x)) + mlp(norm(x)), one norm
};
enum class Positions { Learned, Sinusoidal, Rotary };
// A vision model's position table on a picture of another patch grid (dinov2: torch's bicubic
// interpolate, align_corners=False; dinov2_with_registers: with antialias=True). None: refused.
enum class PositionResize { None, Bicubic, BicubicAntialias };

// Rotary positions (RoPE, rotate-half as transformers writes it): the first `dim` dimensions of
// every query and key head, pairs (i, i + dim/2), turned by the angle p·inv_freq[i] at position
// p; cos and sin scaled by the attention factor. `type` as config.json's rope_scaling names it
// (rope.hpp computes inv_freq for each).
struct Rope {
    enum class Type { Default, Linear, Dynamic, Llama3, Yarn, LongRope };
    Type type = Type::Default;
    int dim = 0;                       // rotated dimensions of a head (head_dim · partial_rotary_factor)
    double theta = 10000;              // rope_theta (or gemma3's rope_local_base_freq)
    double factor = 1;                 // rope_scaling.factor
    double low_freq_factor = 1, high_freq_factor = 4;  // llama3
    double beta_fast = 32, beta_slow = 1;              // yarn
    double attention_factor = 0;       // given (yarn, longrope), or 0: from the type's rule
    double mscale = 0, mscale_all_dim = 0;             // yarn
    bool truncate = true;              // yarn
    bool interleaved = false;          // cohere2, glm4: the pairs (2i, 2i + 1) instead of (i, i + dim/2)
    int original_max_positions = 0;    // rope_scaling's / config's original_max_position_embeddings (0: none)
    int max_positions = 0;             // the config's max_position_embeddings
    std::vector<double> short_factor, long_factor;     // longrope, dim/2 each
    std::vector<double> freq_factors;  // a GGUF's rope_freqs (llama 3's scaling as llama.cpp stores
                                       // it): dim/2 divisors of the type's inv_freq, or empty
    // Positions in several streams (RunInput::positions): the pairs in sections of these sizes
    // (summing to dim/2), section s turned by stream s's position. qwen2_5_vl's M-RoPE:
    // mrope_section (time, height, width) over the one inv_freq; its tower's (height, width) with
    // `own_frequencies`: each section's inv_freq that of a rotation of 2·size dimensions.
    std::vector<int> sections;
    bool own_frequencies = false;
};
// rope_scaling's type as config.json names it: "linear", …, "longrope"; "" for Default.
const char* rope_type_name(Rope::Type type);

// A mixture of experts in place of the MLP (qwen3_moe, gpt_oss): a router scores the experts
// for each token, the top k run on it, and their outputs are summed, each times its weight.
struct Experts {
    enum class Router {
        SoftmaxTopK,  // qwen3_moe: softmax over every expert, the k largest (renormalized to sum 1 with `normalize`)
        TopKSoftmax,  // gpt_oss: the k largest logits (the router has a bias), softmax over those k
    };
    int n = 0;                  // num_local_experts (num_experts); 0: no experts
    int top_k = 0;              // num_experts_per_tok
    int d_ff = 0;               // each expert's hidden size (qwen3_moe: moe_intermediate_size)
    Router router = Router::SoftmaxTopK;
    bool normalize = false;     // qwen3_moe: norm_topk_prob
    // gpt_oss: gate and up interleaved in one product with biases; out = (u + 1)·g·σ(1.702·g),
    // g = min(gate, 7), u = clamp(up, −7, 7). Else down(act(gate(x))·up(x)), no biases.
    bool clamped_swiglu = false;
    std::vector<std::uint8_t> layers;  // per layer: 1 = experts, 0 = the dense MLP (qwen3_moe's mlp_only_layers)
};

// [SECTION] The configuration ----------------------------------------------------------------

struct ModelConfig {
    Family family = Family::Gpt2;
    std::string model_type;            // as written in config.json
    std::string name;                  // "_name_or_path" when present, else ""
    int vocab_size = 0;
    int d_model = 0;                   // n_embd / hidden_size / d_model
    int max_positions = 0;             // n_positions / max_position_embeddings
    // gpt2, bert and the decoder-only families: the one stack; marian: the encoder
    // (encoder_layers, encoder_attention_heads, encoder_ffn_dim) and the decoder (decoder_…).
    int n_layers = 0, n_heads = 0, d_ff = 0;
    int decoder_layers = 0, decoder_heads = 0, decoder_ff = 0;
    int n_kv_heads = 0;                // num_key_value_heads (grouped-query attention); 0: n_heads
    int head_dim = 0;                  // head_dim; 0: d_model / n_heads
    float layer_norm_eps = 1e-5f;      // gpt2 layer_norm_epsilon, bert layer_norm_eps, llama rms_norm_eps
    Activation activation = Activation::GeluTanh;
    int type_vocab_size = 0;           // bert
    bool tie_word_embeddings = true;
    int pad_id = -1, bos_id = -1, eos_id = -1, decoder_start_id = -1;  // -1: not given
    // Vision encoders (vit, clip, siglip): the picture's side in pixels, a patch's, the channels; a
    // token is the [CLS] (where class_token) or a patch (no vocabulary); vocab_size counts the
    // classifier's labels (0: none).
    int image_size = 0, patch_size = 0, channels = 0;
    bool class_token = false;
    std::vector<std::string> labels;   // id2label, in id order
    int registers = 0;                 // dinov2_with_registers: register tokens after the [CLS] (no position)
    PositionResize position_resize = PositionResize::None;  // another grid than image_size's: how positions follow
    bool pooled_head = false;          // dinov2: the classifier reads the [CLS] and the patches' mean (2·d)
    // Vision-language models (idefics3, smolvlm): this config is the language model's (its
    // text_config); the vision tower's is `vision_tower` (a siglip_vision_model whose tensors are
    // under weights_prefix). A picture's view becomes image_seq_len() rows: the tower's patches
    // pixel-shuffled by scale_factor (each s×s block of patches side by side, s²·d_v wide), then
    // the connector (ModelWeights::projector) to d_model; they replace the image_token_id rows'
    // embeddings in order.
    // Gemma 3 (gemma3): each s×s block of patches averaged instead (AvgPool2d), the mean through
    // an RMSNorm (ModelWeights::projector_norm) before the connector; its image tokens (boi_token_id
    // <image_soft_token>… eoi_token_id) attend to every token of their picture, later ones too
    // (bidirectional_images), as a causal text's cannot.
    std::shared_ptr<const ModelConfig> vision_tower;
    int image_token_id = -1, scale_factor = 1;
    // qwen2_5_vl (Connector::Merge): each s×s block of the picture's own grid (any size: the
    // processor's smart resize) side by side as the shuffle, each patch through the RMSNorm
    // (projector_norm) first, then projector, GELU, projector_out; its tower's patches span
    // temporal_patch frames (the picture repeated), its layers attend within windows of
    // window_patches a side but those of full_layers; its image tokens sit between boi_token_id
    // and eoi_token_id (<|vision_start|>, <|vision_end|>), their positions in three streams.
    enum class Connector { Shuffle, MeanPool, Merge } connector = Connector::Shuffle;
    int temporal_patch = 1, window_patches = 0;
    std::vector<std::uint8_t> full_layers;
    int boi_token_id = -1, eoi_token_id = -1;
    bool bidirectional_images = false;
    // The checkpoint's prefix of this model's tensors when it is a part of another's ("" = the
    // family's, found by its probe).
    std::string weights_prefix;
    // Older names of the checkpoint's tensors, read as the newer ones (transformers'
    // _checkpoint_conversion_mapping): a tensor whose name starts with `first` is read as if it
    // started with `second` (the Hub's Gemma 3 files: "language_model.model." for
    // "model.language_model.").
    std::vector<std::pair<std::string, std::string>> renamed;

    // The architecture (each family's file sets what differs from these, GPT-2's).
    NormKind norm = NormKind::LayerNorm;
    Residual residual = Residual::PreNorm;
    Positions positions = Positions::Learned;
    bool gated_mlp = false;            // down(act(gate(x)) · up(x)) instead of fc2(act(fc1(x)))
    float embedding_scale = 1;         // marian scale_embedding, gemma: √d_model, granite: embedding_multiplier
    float residual_scale = 1;          // granite: x = x + residual_multiplier·f(norm(x))
    float logit_scale = 1;             // granite: 1 / logits_scaling (the logits' factor)
    float query_scale = 0;             // scores' factor; 0: 1/√head_dim (gemma: query_pre_attn_scalar^−½)
    float attn_softcap = 0;            // gemma2: scores = cap·tanh(scores/cap) before the mask; 0: none
    float final_softcap = 0;           // gemma2: the same on the logits
    bool qkv_bias = false, o_bias = false, mlp_bias = false;  // the Llama-like: which projections have a bias
    bool qk_norm = false;              // qwen3, gemma3: RMSNorm over each query and key head before RoPE
    bool qk_norm_whole = false;        // olmo2: over the whole projection (n_heads·d_head) instead
    bool sinks = false;                // gpt_oss: a learned logit per head in every softmax row's
                                       // denominator (self_attn.sinks): weight given to no token
    Rope rope;                         // positions == Rotary: the full-attention layers'
    Rope local_rope;                   // gemma3: the sliding layers' (rope_local_base_freq, no scaling)
    Experts experts;                   // qwen3_moe, gpt_oss
    std::vector<std::uint8_t> no_rope; // per layer: 1 = no rotation there (smollm3's no_rope_layers 0)
    std::vector<int> window;           // per layer of the one stack: 0 = full attention, W = a query
                                       // sees itself and the W − 1 keys before it (sliding window)

    int d_head() const { return head_dim > 0 ? head_dim : d_model / n_heads; }
    int kv_heads() const { return n_kv_heads > 0 ? n_kv_heads : n_heads; }
    // The longest sequence the model runs: its position table's length (learned, sinusoidal);
    // rotary positions have no table, and run past max_positions, beyond what was trained
    // (past_training says so; dynamic scaling exists for it).
    int position_limit() const { return positions == Positions::Rotary ? kMaxRotaryPositions : max_positions; }
    bool past_training(int T) const { return positions == Positions::Rotary && T > max_positions; }
    static constexpr int kMaxRotaryPositions = 1 << 24;
    bool has_experts(int layer) const {
        return layer >= 0 && layer < static_cast<int>(experts.layers.size()) && experts.layers[layer];
    }
    bool rotates(int layer) const {
        return positions == Positions::Rotary && !(layer >= 0 && layer < static_cast<int>(no_rope.size()) && no_rope[layer]);
    }
    int window_of(int layer) const { return layer >= 0 && layer < static_cast<int>(window.size()) ? window[layer] : 0; }
    bool vision() const { return patch_size > 0; }
    bool vision_language() const { return vision_tower != nullptr; }
    // The rows a picture's view becomes in the language model (idefics3's image_seq_len).
    int image_seq_len() const {
        return vision_language() ? vision_tower->patch_grid() * vision_tower->patch_grid() / (scale_factor * scale_factor) : 0;
    }
    int patch_grid() const { return vision() ? image_size / patch_size : 0; }  // patches a side
    // The patches a side that tokens are named for (vision_tokens): a model whose positions
    // follow the picture (position_resize) reads any grid of up to kMaxPatchSide a side.
    int name_grid() const { return picture_grid() ? kMaxPatchSide : patch_grid(); }
    // Whether the grid is the picture's (positions resized, or rotated) rather than image_size's.
    bool picture_grid() const { return position_resize != PositionResize::None || (vision() && positions == Positions::Rotary); }
    // Whether layer `layer` of a tower attends within windows of its patches (window_patches).
    bool patch_windows(int layer) const {
        return window_patches > 0 && !(layer >= 0 && layer < static_cast<int>(full_layers.size()) && full_layers[layer]);
    }
    static constexpr int kMaxPatchSide = 128;  // 1 792 pixels of DINOv2's 14
    bool encoder_only() const { return family == Family::Bert || vision(); }
    bool encoder_decoder() const { return family == Family::Marian; }
    bool decoder_only() const { return !encoder_only() && !encoder_decoder(); }  // gpt2 and the Llama-like
};

// [SECTION] Reading config.json --------------------------------------------------------------

// Throws ModelError(file, FIELD, …) for a missing or bad field, or an unknown model_type (the
// message lists the supported ones).
ModelConfig read_config(std::string_view json, const std::string& file);

// "gpt2, bert, marian, llama, …": every model_type the runtime opens.
std::string supported_model_types();

}  // namespace attn
