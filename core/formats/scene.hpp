// scene.hpp: the scene file of SPEC.md §1, its validation, and the trace it computes.
//
// [SECTION] Limits
// [SECTION] Scene
// [SECTION] Reading and writing
// [SECTION] Computing
// [SECTION] Rows on demand
#pragma once

#include "attention.hpp"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace attn {

// [SECTION] Limits ---------------------------------------------------------------------------
// Documented in docs/SCENES.md; the reader rejects anything larger with a message naming the field.
inline constexpr int kMaxTokens = 8192;      // per sequence
inline constexpr int kMaxDModel = 4096;
inline constexpr int kMaxHeads = 64;
inline constexpr float kMaxAbsValue = 1e6f;  // embeddings and weights; keeps QKᵀ finite

// [SECTION] Scene ----------------------------------------------------------------------------

enum class AttentionKind { Self, Masked, Cross };

struct IdentityWeights {
    friend bool operator==(const IdentityWeights&, const IdentityWeights&) = default;
};
struct SeededWeights {
    std::uint64_t seed = 0;
    friend bool operator==(const SeededWeights&, const SeededWeights&) = default;
};
struct ExplicitWeights {
    Matrix w_q, w_k, w_v, w_o;
    RowVector b_q, b_k, b_v, b_o;  // empty = zero
    friend bool operator==(const ExplicitWeights&, const ExplicitWeights&);
};
using WeightsSpec = std::variant<IdentityWeights, SeededWeights, ExplicitWeights>;

enum class Positional { None, Sinusoidal };

struct Scene {
    std::string name;         // optional, for presets and the UI
    std::string description;  // optional
    AttentionKind kind = AttentionKind::Self;
    std::vector<std::string> tokens;         // query side (decoder side for cross)
    std::vector<std::string> source_tokens;  // cross only: key/value side (encoder side)
    std::optional<Matrix> embeddings;         // T_q×d_model; omitted: generated
    std::optional<Matrix> source_embeddings;  // T_k×d_model; omitted: generated
    int d_model = 8;
    int heads = 1;
    WeightsSpec weights = IdentityWeights{};
    Scale scale{};
    bool causal_mask = false;                  // "mask": "causal" (extra to kind)
    std::optional<MaskMatrix> mask_matrix;    // "mask": 0/1 matrix, T_q×T_k
    std::vector<std::uint8_t> key_padding;    // optional, T_k entries, 1 = real token
    Positional positional = Positional::None;

    int d_k() const { return d_model / heads; }
    const std::vector<std::string>& key_tokens() const {
        return kind == AttentionKind::Cross ? source_tokens : tokens;
    }
    friend bool operator==(const Scene&, const Scene&);
};

// Bad input: `where` is the field path ("heads", "embeddings[2][1]") or "line:column" of
// malformed JSON; what() is one readable line without the file name.
class SceneError : public std::runtime_error {
public:
    SceneError(std::string where, const std::string& expected);
    const std::string& where() const { return where_; }

private:
    std::string where_;
};

// "line:column" of a byte offset into a JSON text (1-based; columns count bytes): the where()
// of malformed JSON, for the scene and the import readers.
std::string line_column(std::string_view text, size_t byte);

// Checks every invariant a Scene must hold to be computed (shapes, limits, finite values),
// throwing SceneError naming the field.
void validate(const Scene& scene);

// [SECTION] Reading and writing --------------------------------------------------------------

// Parses and validates. Throws SceneError.
Scene read_scene(std::string_view json_text);
// Compact, stable JSON; read_scene(write_scene(s)) == s for every valid s.
std::string write_scene(const Scene& scene, bool pretty = true);

const char* kind_name(AttentionKind kind);

// [SECTION] Computing ------------------------------------------------------------------------

// Above this many T×T cells (heads·T_q·T_k) compute() keeps no T×T matrix for the rows past
// kLongTraceRows: 8 heads at T = 1024 keep 96 MB of scores, scaled scores and weights; 8 heads
// at T = 8192 would keep 6 GB. Such a long trace computes any other row again on demand.
inline constexpr std::int64_t kFullTraceCells = std::int64_t{8} << 20;
inline constexpr int kLongTraceRows = 16;  // rows a long trace keeps whole (the Steps view's first rows)

// What today's decoder families add to a head's pipeline, for the Steps view: a live model's
// block (figure.cpp's live_layer_trace, from model/transformer.hpp's BlockTrace); empty or 0
// for scenes, imports, gpt2, bert and marian, whose Steps show none of it.
//   grouped-query attention  query head h reads K/V head h / group (of kv_heads)
//   q/k norm                 Q and K as projected, then each head's RMSNorm:
//                            q / √(mean(q²) + norm_eps) · gain
//   rotary positions         Q and K before the rotation (after any norm); at position p the
//                            pair (i, i + rope_dim/2) of a head turned by rope_angle(p, i) =
//                            p·rope_inv_freq[i]; dimensions ≥ rope_dim pass through
//   soft-capping             the scaled scores s become softcap·tanh(s/softcap) before the mask
//   query_pre_attn_scalar    gemma: the scores are multiplied by its −½ power, not d_k's
struct FamilyTrace {
    int kv_heads = 0, group = 1;
    std::vector<Matrix> q_projected, k_projected, q_normed, k_normed;  // T×d_k per head (k: per K/V head)
    RowVector q_norm_gain, k_norm_gain;                                // d_k each (gemma's 1 + w)
    float norm_eps = 0;
    std::vector<Matrix> q_unrotated, k_unrotated;                      // T×d_k per head (k: per K/V head)
    int rope_dim = 0;
    double rope_theta = 0;
    double rope_attention_factor = 1;   // rope_cos and rope_sin are scaled by it (yarn, longrope)
    std::string rope_scaling;           // rope_scaling's type ("linear", "longrope", …), "" for none
    std::vector<double> rope_inv_freq;  // rope_dim/2: the angle per position of each pair
    Matrix rope_angle, rope_cos, rope_sin;  // T_k×rope_dim/2
    // M-RoPE (qwen2_5_vl): the pairs in sections, each turned by its own stream of positions
    // (time, height, width): rope_positions[stream][token], rope_streams[pair]; empty: one, p itself
    std::vector<std::vector<int>> rope_positions;
    std::vector<int> rope_streams;
    // A vision model's first layer: its input as the patch embedding made it (model/transformer.hpp
    // PatchEmbedding): each token's pixels T×k (the [CLS]'s and registers' rows 0), W_e k×d, b,
    // and E = P·W_e + b, T×d (the learned tokens' own vectors); empty elsewhere
    Matrix patch_pixels, patch_weight, patch_embedded;
    RowVector patch_bias;
    int patch_first = 0;  // rows before the patches' (the [CLS], the registers)
    int patch_channels = 0, patch_size = 0;  // a row of P: channels × patch_size × patch_size
    float softcap = 0;
    float query_pre_attn_scalar = 0;
    float factor = 0;                   // > 0: the scores' factor as the forward applied it (scale.factor's, to the bit)
    std::vector<float> sinks;           // gpt-oss: each head's learned sink logit, in every softmax row's denominator

    bool qk_norm() const { return !q_normed.empty(); }
    bool rotary() const { return rope_dim > 0 && !q_unrotated.empty(); }
    bool grouped() const { return group > 1; }
    int kv_head_of(int h) const { return h / std::max(group, 1); }
};

struct Trace {
    AttentionKind kind = AttentionKind::Self;
    std::vector<std::string> queries, keys;
    int heads = 1, d_k = 1, d_model = 1;
    Scale scale{};
    KeyMask allowed;           // the combined mask, T_q×T_k (a long run's: its rule, no cells)
    // > 0: the map is a sliding-window layer's (a live model's config says so): query i sees
    // itself and the window − 1 keys before it, so keys j ≤ i − window are masked "outside the
    // window" (`allowed` holds it), as distinct from the causal mask of later keys.
    int window = 0;
    // Inputs, per-head intermediates, concat and output. In a long trace every matrix with a
    // row per query holds only the first kLongTraceRows rows (q, scores, scaled, weights,
    // output, x_q, concat); k and v are whole.
    MultiHeadTrace attention;
    Matrix w_o;                  // the output projection, d_model×d_model (value-weighted attention reads it)
    // Long traces only: every query's Q, T_q × (heads·d_k), head h in columns h·d_k. A long
    // trace made from a run's block (figure.cpp) shares the block's Q, and its K as long_k:
    // T_k × (kv_heads·d_k), head h's in columns kv_head_of(h)·d_k, each head's k then empty.
    // head_queries and head_keys read either.
    std::shared_ptr<const Matrix> long_q, long_k;
    FamilyTrace family;          // a live Llama-family block's extra stages (empty otherwise)

    int T_q() const { return static_cast<int>(queries.size()); }
    int T_k() const { return static_cast<int>(keys.size()); }
    bool is_long() const { return long_q != nullptr; }
};

// A view of rows of floats, d columns, any row stride (Eigen::Ref: no copy of a block's columns).
using MatrixRef = Eigen::Ref<const Matrix>;
// Head h's queries, every row (a long trace keeps only the first in its head trace), T_q × d_k;
// and its keys, T_k × d_k.
MatrixRef head_queries(const Trace& trace, int head);
MatrixRef head_keys(const Trace& trace, int head);

// Embeddings (given or generated), positional encoding, weights, masks; then attention.
// Expects a validated scene. A scene with more than max_cells T×T cells gives a long trace.
Trace compute(const Scene& scene, std::int64_t max_cells = kFullTraceCells);

// [SECTION] Rows on demand -------------------------------------------------------------------

// Rows [r0, r1) of one head, row-major with stride T_k: the weights and, when `scaled` is not
// null, the scaled scores (masked −inf). Copied from the trace's matrices, or for a long trace
// computed again from its queries and keys (the same kernel, the same numbers: a live model's
// soft cap and sinks too).
void attention_rows(const Trace& trace, int head, int r0, int r1, float* weights, float* scaled = nullptr);

// Reads one head row by row, for code that walks a map once: a row of the trace's matrices, or
// of a block of rows computed again (attention_rows) when the trace is long.
class HeadRows {
public:
    HeadRows(const Trace& trace, int head, int block_rows = 64) : trace_(trace), head_(head), block_(block_rows) {}
    const float* weights(int q) { return row(q, false); }
    const float* scaled(int q) { return row(q, true); }  // masked: −inf

private:
    const float* row(int q, bool scaled);
    const Trace& trace_;
    int head_, block_, r0_ = 0, r1_ = 0;
    std::vector<float> weights_, scaled_;
};

// One cell of one head, for tooltips and numbers: O(T_k·d_k) in a long trace (its whole row).
struct CellValues {
    float score = 0, scaled = 0, weight = 0;  // scaled is −inf where masked
    bool allowed = true;
};
CellValues cell_values(const Trace& trace, int head, int q, int k);

// Bytes the trace holds (matrices and mask), as the UI states it.
std::size_t trace_bytes(const Trace& trace);

// SPEC.md §2 trace: masked scaled scores are null.
std::string write_trace(const Trace& trace);

}  // namespace attn
