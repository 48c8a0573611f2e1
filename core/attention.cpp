// attention.cpp: the kernels behind attention.hpp.
//
// [SECTION] Scale and weights
// [SECTION] Masks
// [SECTION] Masked softmax
// [SECTION] One head
// [SECTION] Multi-head attention
#include "attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace attn {

// [SECTION] Scale and weights ----------------------------------------------------------------

float Scale::factor(int d_k) const {
    switch (kind) {
        case ScaleKind::InvSqrtDk: return 1.0f / std::sqrt(static_cast<float>(d_k));
        case ScaleKind::None: return 1.0f;
        case ScaleKind::Divisor: return 1.0f / divisor;
    }
    return 1.0f;
}

Weights Weights::identity(int d_model) {
    Weights w;
    w.w_q = w.w_k = w.w_v = w.w_o = Matrix::Identity(d_model, d_model);
    w.b_q = w.b_k = w.b_v = w.b_o = RowVector::Zero(d_model);
    return w;
}

namespace {

std::uint64_t splitmix64(std::uint64_t& state) {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// Uniform in [-1, 1) from the top 24 bits: k·2⁻²³ − 1 is exact in float.
float uniform_pm1(std::uint64_t& state) {
    auto k = static_cast<std::int32_t>(splitmix64(state) >> 40);
    return std::ldexp(static_cast<float>(k), -23) - 1.0f;
}

// d_model×d_model uniform in [-s, s) with s = 2^-round(log2 √d_model): a power of two keeps
// every entry exact, and the scale keeps X·W of the same size as X (Xavier-like).
Matrix random_matrix(std::uint64_t& state, int d_model) {
    int shift = static_cast<int>(std::lround(0.5 * std::log2(static_cast<double>(d_model))));
    Matrix m(d_model, d_model);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = std::ldexp(uniform_pm1(state), -shift);
    return m;
}

}  // namespace

Weights Weights::random(std::uint64_t seed, int d_model) {
    std::uint64_t state = seed ^ (0xA77E4710ull * static_cast<std::uint64_t>(d_model));
    Weights w;
    w.w_q = random_matrix(state, d_model);
    w.w_k = random_matrix(state, d_model);
    w.w_v = random_matrix(state, d_model);
    w.w_o = random_matrix(state, d_model);
    w.b_q = w.b_k = w.b_v = w.b_o = RowVector::Zero(d_model);
    return w;
}

// [SECTION] Masks ----------------------------------------------------------------------------

MaskMatrix combine_masks(const MaskSpec& spec, int T_q, int T_k) {
    MaskMatrix allowed = MaskMatrix::Ones(T_q, T_k);
    if (spec.causal) {
        for (int i = 0; i < T_q; ++i)
            for (int j = i + 1; j < T_k; ++j) allowed(i, j) = 0;
    }
    if (!spec.key_padding.empty()) {
        if (static_cast<int>(spec.key_padding.size()) != T_k)
            throw std::invalid_argument("key_padding needs one entry per key");
        for (int j = 0; j < T_k; ++j)
            if (!spec.key_padding[j]) allowed.col(j).setZero();
    }
    if (spec.allowed.size() != 0) {
        if (spec.allowed.rows() != T_q || spec.allowed.cols() != T_k)
            throw std::invalid_argument("mask matrix must be T_q×T_k");
        allowed = allowed.cwiseMin(spec.allowed.cwiseMin(std::uint8_t{1}));
    }
    return allowed;
}

// [SECTION] Masked softmax -------------------------------------------------------------------

// scaled, allowed: T_q×T_k -> weights: T_q×T_k.
// pass 1: row max over allowed entries (+inf clamps to the float max so that inf − inf
//         never happens; a row with nothing allowed, or only -inf, is fully masked)
// pass 2: e = exp(s − max) for allowed entries, 0 elsewhere; sum
// pass 3: scale by 1/sum (sum ≥ 1: the max entry contributes exp(0))
std::vector<int> masked_softmax(const Matrix& scaled, const MaskMatrix& allowed, Matrix& weights) {
    const int T_q = static_cast<int>(scaled.rows()), T_k = static_cast<int>(scaled.cols());
    constexpr float kBig = std::numeric_limits<float>::max();
    weights.setZero(T_q, T_k);
    std::vector<int> fully_masked;
    for (int i = 0; i < T_q; ++i) {
        const float* s = scaled.data() + static_cast<Eigen::Index>(i) * T_k;
        const std::uint8_t* a = allowed.data() + static_cast<Eigen::Index>(i) * T_k;
        float* w = weights.data() + static_cast<Eigen::Index>(i) * T_k;
        // pass 1: row max
        float row_max = -std::numeric_limits<float>::infinity();
        for (int j = 0; j < T_k; ++j)
            if (a[j] && !std::isnan(s[j])) row_max = std::max(row_max, std::min(s[j], kBig));
        if (row_max == -std::numeric_limits<float>::infinity()) {
            fully_masked.push_back(i);
            continue;
        }
        // pass 2: exp and sum
        double sum = 0.0;
        for (int j = 0; j < T_k; ++j) {
            if (!a[j] || std::isnan(s[j])) continue;
            w[j] = std::exp(std::min(s[j], kBig) - row_max);
            sum += w[j];
        }
        // pass 3: normalise
        const float inv = static_cast<float>(1.0 / sum);
        for (int j = 0; j < T_k; ++j) w[j] *= inv;
    }
    return fully_masked;
}

// [SECTION] One head -------------------------------------------------------------------------

// q: T_q×d_k, k: T_k×d_k, v: T_k×d_k, allowed: T_q×T_k.
HeadTrace scaled_dot_product_attention(Matrix q, Matrix k, Matrix v, const MaskMatrix& allowed,
                                       Scale scale) {
    HeadTrace h;
    h.q = std::move(q);
    h.k = std::move(k);
    h.v = std::move(v);
    const int d_k = static_cast<int>(h.q.cols());
    // pass 1: scores = Q·Kᵀ (T_q×T_k)
    h.scores.noalias() = h.q * h.k.transpose();
    // pass 2: scaled = scores·factor, masked entries -inf (the articles' M = −∞)
    const float factor = scale.factor(d_k);
    h.scaled = h.scores * factor;
    for (Eigen::Index i = 0; i < h.scaled.size(); ++i)
        if (!allowed.data()[i]) h.scaled.data()[i] = -std::numeric_limits<float>::infinity();
    // pass 3: softmax rows
    h.fully_masked_rows = masked_softmax(h.scaled, allowed, h.weights);
    // pass 4: output = weights·V (T_q×d_k)
    h.output.noalias() = h.weights * h.v;
    return h;
}

// [SECTION] Multi-head attention -------------------------------------------------------------

MultiHeadTrace multi_head_attention(const Matrix& x_q, const Matrix& x_kv, const Weights& weights,
                                    const AttentionOptions& options) {
    const int d_model = weights.d_model();
    const int n_heads = options.n_heads;
    if (n_heads < 1 || d_model % n_heads != 0)
        throw std::invalid_argument("d_model must be a multiple of the number of heads");
    if (x_q.cols() != d_model || x_kv.cols() != d_model)
        throw std::invalid_argument("inputs must have d_model columns");
    const int d_k = d_model / n_heads;
    const int T_q = static_cast<int>(x_q.rows()), T_k = static_cast<int>(x_kv.rows());

    MultiHeadTrace t;
    t.x_q = x_q;
    t.x_kv = x_kv;
    // Projections, all heads at once: Q T_q×d_model, K and V T_k×d_model.
    Matrix Q = (x_q * weights.w_q).rowwise() + weights.b_q;
    Matrix K = (x_kv * weights.w_k).rowwise() + weights.b_k;
    Matrix V = (x_kv * weights.w_v).rowwise() + weights.b_v;
    const MaskMatrix allowed = combine_masks(options.mask, T_q, T_k);

    t.concat.resize(T_q, d_model);
    t.heads.reserve(n_heads);
    for (int h = 0; h < n_heads; ++h) {
        const int c0 = h * d_k;
        t.heads.push_back(scaled_dot_product_attention(Q.middleCols(c0, d_k), K.middleCols(c0, d_k),
                                                       V.middleCols(c0, d_k), allowed, options.scale));
        t.concat.middleCols(c0, d_k) = t.heads.back().output;
    }
    t.output = (t.concat * weights.w_o).rowwise() + weights.b_o;
    return t;
}

}  // namespace attn
