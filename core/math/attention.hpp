// attention.hpp: scaled dot-product and multi-head attention that keep every intermediate.
//
// Conventions (SPEC.md §1): row vectors. X has one row per token, T×d_model.
// Q = X·W_q + b_q, K = X_kv·W_k + b_k, V = X_kv·W_v + b_v; head h uses columns
// h·d_k … (h+1)·d_k − 1; output = concat(head outputs)·W_o + b_o.
//
// The kernels run in a kernels::Context: the instruction set and the packed panels' memory.
// The functions that take one use the caller's (its set; its memory kept from call to call, as
// a benchmark or a caller that computes many times wants); the others make one for the call,
// with the best instruction set. Nothing is kept anywhere else.
//
// [SECTION] Types
// [SECTION] Masks
// [SECTION] Kernels: scores, masked softmax, weighted sum
// [SECTION] Multi-head attention
#pragma once

#include "kernels.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <functional>
#include <iterator>
#include <utility>
#include <vector>

namespace attn {

// [SECTION] Types ----------------------------------------------------------------------------

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowVector = Eigen::Matrix<float, 1, Eigen::Dynamic>;
// 1 = the query may attend to the key, 0 = masked. T_q×T_k.
using MaskMatrix = Eigen::Matrix<std::uint8_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// splitmix64 (Steele, Lea, Flood 2014): the project's one random stream (random weights, the
// head probe, sampling), the same numbers in every build and in the Python references.
struct SplitMix64 {
    std::uint64_t state;
    std::uint64_t next() {
        std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // uniform in [0, 1)
};

enum class ScaleKind { InvSqrtDk, None, Divisor };

// How QKᵀ is scaled before the softmax: by 1/√d_k (the paper), not at all (seed 002's
// softmax(XXᵀ)X), or divided by a given positive number (a temperature).
struct Scale {
    ScaleKind kind = ScaleKind::InvSqrtDk;
    float divisor = 1.0f;  // used when kind == Divisor

    // The factor the scores are multiplied by.
    float factor(int d_k) const;
    friend bool operator==(const Scale&, const Scale&) = default;
};

// Projection weights in the row-vector convention: every W is d_model×d_model, every b has
// d_model entries.
struct Weights {
    Matrix w_q, w_k, w_v, w_o;
    RowVector b_q, b_k, b_v, b_o;

    static Weights identity(int d_model);
    // Deterministic from the seed and d_model alone: bit-identical in every build.
    static Weights random(std::uint64_t seed, int d_model);
    int d_model() const { return static_cast<int>(w_q.rows()); }
};

// [SECTION] Masks ----------------------------------------------------------------------------

// The masks that combine (a key is attended only if every one of them allows it).
struct MaskSpec {
    bool causal = false;                     // key j only for queries i ≥ j (top-left aligned)
    std::vector<std::uint8_t> key_padding;   // empty, or T_k entries: 1 = real token, 0 = padding
    MaskMatrix allowed;                      // empty, or T_q×T_k: 1 = may attend
};

// T_q×T_k matrix of 0/1 from the spec. Sizes of key_padding / allowed must match.
MaskMatrix combine_masks(const MaskSpec& spec, int T_q, int T_k);

// Runs of tokens [first, end) that attend to each other both ways in a causal model (gemma3: a
// picture's image tokens), sorted, apart.
using BothWays = std::vector<std::pair<int, int>>;

// The keys [lo, hi) that query i may attend (before any hidden key): causal, up to itself (else
// all T_k); sliding, from the window's start; the whole of a both-ways run that i is in.
inline std::pair<int, int> key_span(int i, int T_k, bool causal, int window, const BothWays& both_ways) {
    int lo = window > 0 ? std::max(i - window + 1, 0) : 0, hi = causal ? std::min(i + 1, T_k) : T_k;
    const auto run = std::upper_bound(both_ways.begin(), both_ways.end(), std::pair{i, INT_MAX});
    if (run != both_ways.begin() && i < std::prev(run)->second)
        lo = std::min(lo, std::prev(run)->first), hi = std::max(hi, std::min(std::prev(run)->second, T_k));
    return {std::min(lo, T_k), std::max(std::min(lo, T_k), hi)};
}

// Whether query i may attend key j: in its span (key_span), not hidden (keys: T_k of 0/1, or
// empty), in the query's own window group (groups: a group per token, or empty).
inline bool rule_allows(int i, int j, int T_k, bool causal, int window, const BothWays& both_ways,
                        const std::vector<std::uint8_t>& keys, const std::vector<int>& groups) {
    const auto [lo, hi] = key_span(i, T_k, causal, window, both_ways);
    return j >= lo && j < hi && (keys.empty() || keys[static_cast<std::size_t>(j)]) &&
           (groups.empty() || groups[static_cast<std::size_t>(i)] == groups[static_cast<std::size_t>(j)]);
}

// The keys a model's run lets each query see, as a rule rather than cells (rule_allows).
struct KeyRule {
    bool causal = false;
    int window = 0;                    // > 0: a query sees itself and the window − 1 keys before it
    BothWays both_ways;                // gemma3: a picture's tokens, each seeing all of them
    std::vector<std::uint8_t> keys;    // T_k of 0/1 (0: hidden), or empty: every key
    std::vector<int> groups;           // qwen2_5_vl's tower: each token's window, or empty
    bool allows(int i, int j, int T_k) const { return rule_allows(i, j, T_k, causal, window, both_ways, keys, groups); }
};

// Which keys each query of a trace may attend, T_q×T_k: every cell held (a scene's mask, a
// file's, a short run's), or a model's KeyRule, so that a long text holds no T×T bytes (67 MB at
// 8 192 tokens; making them was most of the frame that showed a served layer). An empty mask
// (0×0) is one nobody gave.
class KeyMask {
public:
    KeyMask() = default;
    KeyMask(MaskMatrix cells) : cells_(std::move(cells)), T_q_(cells_.rows()), T_k_(cells_.cols()) {}  // NOLINT: a held mask
    KeyMask(int T_q, int T_k, KeyRule rule) : rule_(std::move(rule)), T_q_(T_q), T_k_(T_k), ruled_(true) {}

    Eigen::Index rows() const { return T_q_; }
    Eigen::Index cols() const { return T_k_; }
    Eigen::Index size() const { return T_q_ * T_k_; }
    std::uint8_t operator()(Eigen::Index i, Eigen::Index j) const {
        return ruled_ ? rule_.allows(static_cast<int>(i), static_cast<int>(j), static_cast<int>(T_k_)) : cells_(i, j);
    }
    // Row i's T_k bytes: the held row, or the rule's written into scratch.
    const std::uint8_t* row(Eigen::Index i, std::vector<std::uint8_t>& scratch) const;
    // Rows [r0, r1) as cells.
    MaskMatrix rows_between(Eigen::Index r0, Eigen::Index r1) const;
    // Rows [r0, r1)'s bytes, (r1 − r0)×T_k: the held rows where they are, or a rule's made in scratch.
    const std::uint8_t* rows_at(Eigen::Index r0, Eigen::Index r1, MaskMatrix& scratch) const {
        if (!ruled_) return cells_.data() + r0 * T_k_;
        scratch = rows_between(r0, r1);
        return scratch.data();
    }
    // Every cell (a copy where held): for what edits a mask, or reads a short one whole.
    MaskMatrix cells() const { return ruled_ ? rows_between(0, T_q_) : cells_; }
    // Whether any cell of the keys first … T_k − 1 is masked.
    bool any_masked(Eigen::Index first = 0) const;
    std::size_t bytes() const { return static_cast<std::size_t>(cells_.size()) + rule_.keys.size() + 4 * rule_.groups.size(); }
    friend bool operator==(const KeyMask& a, const KeyMask& b) {
        return a.rows() == b.rows() && a.cols() == b.cols() && a.cells() == b.cells();
    }

private:
    MaskMatrix cells_;
    KeyRule rule_;
    Eigen::Index T_q_ = 0, T_k_ = 0;
    bool ruled_ = false;
};

// [SECTION] Kernels --------------------------------------------------------------------------

// Everything one head computes, in the order of the pipeline.
struct HeadTrace {
    Matrix q, k, v;        // T_q×d_k, T_k×d_k, T_k×d_k
    Matrix scores;         // Q·Kᵀ, T_q×T_k, before scaling
    Matrix scaled;         // scores·factor; masked positions hold -infinity
    Matrix weights;        // softmax rows; masked positions 0; a fully masked row is all 0
    Matrix output;         // weights·V, T_q×d_k
    std::vector<int> fully_masked_rows;  // queries with no key to attend to (rows of zeros)
};

// Row-wise softmax of `scaled` where allowed (1); masked entries get 0. Returns the rows that
// were fully masked. Finite for any finite or infinite input: +inf scores share the row,
// a row of -inf / masked entries gives zeros.
std::vector<int> masked_softmax(const Matrix& scaled, const MaskMatrix& allowed, Matrix& weights);

// One head: q T_q×d_k, k and v T_k×d_k, allowed T_q×T_k.
HeadTrace scaled_dot_product_attention(Matrix q, Matrix k, Matrix v, const MaskMatrix& allowed,
                                       Scale scale);

// [SECTION] Multi-head attention -------------------------------------------------------------

// x·W + b (b may be empty): T×d_out, with kernels::matmul (the same kernel natively and in wasm).
Matrix project(kernels::Context& ctx, const Matrix& x, const Matrix& w, const RowVector& b);
Matrix project(const Matrix& x, const Matrix& w, const RowVector& b);

struct AttentionOptions {
    int n_heads = 1;
    Scale scale{};
    MaskSpec mask{};
};

struct MultiHeadTrace {
    Matrix x_q, x_kv;              // inputs as used (after any positional encoding)
    std::vector<HeadTrace> heads;  // n_heads entries
    Matrix concat;                 // T_q×d_model, head outputs side by side
    Matrix output;                 // concat·W_o + b_o, T_q×d_model
};

// x_q T_q×d_model, x_kv T_k×d_model (the same matrix for self-attention). d_model must be a
// multiple of n_heads; shapes are checked by the caller (scene validation).
MultiHeadTrace multi_head_attention(kernels::Context& ctx, const Matrix& x_q, const Matrix& x_kv,
                                    const Weights& weights, const AttentionOptions& options);
MultiHeadTrace multi_head_attention(const Matrix& x_q, const Matrix& x_kv, const Weights& weights,
                                    const AttentionOptions& options);

// The same attention without the trace, for long sequences (T = 8192: one T×T matrix is
// 256 MB): heads one after another in one T_q×T_k weights buffer, shown to on_head (if set),
// in order, before the next head overwrites it; no scores or scaled matrices, and QKᵀ too
// skips the masked half. With threads (ctx.pool), as many heads at a time as there are threads,
// each in a buffer of its own, while the buffers stay within kHeadBuffersBytes. Returns the
// output, T_q×d_model.
constexpr double kHeadBuffersBytes = 256.0 * (1 << 20);
using OnHead = std::function<void(int head, const Matrix& weights)>;
Matrix multi_head_attention_weights(kernels::Context& ctx, const Matrix& x_q, const Matrix& x_kv,
                                    const Weights& weights, const AttentionOptions& options,
                                    const OnHead& on_head = {});
Matrix multi_head_attention_weights(const Matrix& x_q, const Matrix& x_kv, const Weights& weights,
                                    const AttentionOptions& options, const OnHead& on_head = {});

}  // namespace attn
