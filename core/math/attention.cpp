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

// Uniform in [-1, 1) from the top 24 bits: k·2⁻²³ − 1 is exact in float.
float uniform_pm1(SplitMix64& rng) {
    auto k = static_cast<std::int32_t>(rng.next() >> 40);
    return std::ldexp(static_cast<float>(k), -23) - 1.0f;
}

// d_model×d_model uniform in [-a, a) with a = 3/√d_model: for generated embeddings (variance
// 1/3) the projected q and k entries get unit variance, so the scores QKᵀ/√d_k spread by about
// one: visible patterns, not one-hot rows. One correctly rounded multiply per entry: the same
// bits in every build.
Matrix random_matrix(SplitMix64& rng, int d_model) {
    const float a = static_cast<float>(3.0 / std::sqrt(static_cast<double>(d_model)));
    Matrix m(d_model, d_model);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = uniform_pm1(rng) * a;
    return m;
}

}  // namespace

Weights Weights::random(std::uint64_t seed, int d_model) {
    SplitMix64 rng{seed ^ (0xA77E4710ull * static_cast<std::uint64_t>(d_model))};
    Weights w;
    w.w_q = random_matrix(rng, d_model);
    w.w_k = random_matrix(rng, d_model);
    w.w_v = random_matrix(rng, d_model);
    w.w_o = random_matrix(rng, d_model);
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

const std::uint8_t* KeyMask::row(Eigen::Index i, std::vector<std::uint8_t>& scratch) const {
    if (!ruled_) return cells_.data() + i * T_k_;
    scratch.assign(static_cast<std::size_t>(T_k_), 0);
    const int T_k = static_cast<int>(T_k_);
    const auto [lo, hi] = key_span(static_cast<int>(i), T_k, rule_.causal, rule_.window, rule_.both_ways);
    for (int j = lo; j < hi; ++j) scratch[static_cast<std::size_t>(j)] = rule_.allows(static_cast<int>(i), j, T_k);
    return scratch.data();
}

MaskMatrix KeyMask::rows_between(Eigen::Index r0, Eigen::Index r1) const {
    if (!ruled_) return cells_.middleRows(r0, r1 - r0);
    MaskMatrix m(r1 - r0, T_k_);
    std::vector<std::uint8_t> scratch;
    for (Eigen::Index i = r0; i < r1; ++i) std::copy_n(row(i, scratch), T_k_, m.data() + (i - r0) * T_k_);
    return m;
}

bool KeyMask::any_masked(Eigen::Index first) const {
    if (first >= T_k_ || T_q_ == 0) return false;
    if (!ruled_) return cells_.rightCols(T_k_ - first).minCoeff() == 0;
    // A rule's keys first … T_k − 1: a hidden one, or two windows, mask some row's; else a row
    // whose span does not hold them all, or whose window is another.
    const auto f = static_cast<std::size_t>(first);
    if (!rule_.keys.empty() && std::find(rule_.keys.begin() + f, rule_.keys.end(), 0) != rule_.keys.end()) return true;
    if (!rule_.groups.empty() && std::any_of(rule_.groups.begin() + f, rule_.groups.end(), [&](int g) { return g != rule_.groups[f]; }))
        return true;
    for (Eigen::Index i = 0; i < T_q_; ++i) {
        const auto [lo, hi] = key_span(static_cast<int>(i), static_cast<int>(T_k_), rule_.causal, rule_.window, rule_.both_ways);
        if (lo > first || hi < T_k_ || (!rule_.groups.empty() && rule_.groups[static_cast<std::size_t>(i)] != rule_.groups[f])) return true;
    }
    return false;
}

// [SECTION] Masked softmax -------------------------------------------------------------------

// scaled, allowed: T_q×T_k -> weights: T_q×T_k (kernels::softmax_rows: max; exp, store and sum;
// scale, per row, with the SIMD exp).
std::vector<int> masked_softmax(const Matrix& scaled, const MaskMatrix& allowed, Matrix& weights) {
    const int T_q = static_cast<int>(scaled.rows()), T_k = static_cast<int>(scaled.cols());
    weights.resize(T_q, T_k);
    std::vector<int> fully_masked;
    kernels::softmax_rows(kernels::best_isa(), scaled.data(), 1.0f, allowed.data(), nullptr, T_q, T_k, nullptr,
                          weights.data(), &fully_masked);
    return fully_masked;
}

// [SECTION] One head -------------------------------------------------------------------------

namespace {

// q: T_q×d_k, k: T_k×d_k, v: T_k×d_k, allowed: T_q×T_k; spans: T_q entries or nullptr.
// pass 1: scores = Q·Kᵀ (T_q×T_k, every entry: the trace shows QKᵀ before masking)
// pass 2: scaled = scores·factor, masked entries -inf (the articles' M = −∞)
// pass 3: softmax rows, the masked half of each row skipped
// pass 4: output = weights·V (T_q×d_k) over the keys each block of rows attends to
// All four run fused per block of rows in kernels::attention_head.
HeadTrace head_trace(kernels::Context& ctx, Matrix q, Matrix k, Matrix v, const MaskMatrix& allowed,
                     const kernels::RowSpan* spans, Scale scale) {
    HeadTrace h;
    h.q = std::move(q);
    h.k = std::move(k);
    h.v = std::move(v);
    const int T_q = static_cast<int>(h.q.rows()), T_k = static_cast<int>(h.k.rows());
    const int d_k = static_cast<int>(h.q.cols());
    h.scores.resize(T_q, T_k);
    h.scaled.resize(T_q, T_k);
    h.weights.resize(T_q, T_k);
    h.output.resize(T_q, d_k);
    kernels::HeadArgs args;
    args.T_q = T_q, args.T_k = T_k, args.d_k = d_k;
    args.q = h.q.data(), args.k = h.k.data(), args.v = h.v.data();
    args.allowed = allowed.data(), args.spans = spans;
    args.factor = scale.factor(d_k);
    args.scores = h.scores.data(), args.scaled = h.scaled.data(), args.weights = h.weights.data();
    args.output = h.output.data();
    args.fully_masked = &h.fully_masked_rows;
    kernels::attention_head(ctx, args);
    return h;
}

struct Projected {
    int d_model, n_heads, d_k, T_q, T_k;
    Matrix Q, K, V;  // T_q×d_model, T_k×d_model, T_k×d_model
};

Projected project_all(kernels::Context& ctx, const Matrix& x_q, const Matrix& x_kv, const Weights& weights,
                      int n_heads) {
    const int d_model = weights.d_model();
    if (n_heads < 1 || d_model % n_heads != 0)
        throw std::invalid_argument("d_model must be a multiple of the number of heads");
    if (x_q.cols() != d_model || x_kv.cols() != d_model)
        throw std::invalid_argument("inputs must have d_model columns");
    Projected p{d_model, n_heads, d_model / n_heads, static_cast<int>(x_q.rows()), static_cast<int>(x_kv.rows()),
                project(ctx, x_q, weights.w_q, weights.b_q), project(ctx, x_kv, weights.w_k, weights.b_k),
                project(ctx, x_kv, weights.w_v, weights.b_v)};
    return p;
}

}  // namespace

Matrix project(kernels::Context& ctx, const Matrix& x, const Matrix& w, const RowVector& b) {
    Matrix y(x.rows(), w.cols());
    kernels::matmul(ctx, static_cast<int>(x.rows()), static_cast<int>(w.cols()), static_cast<int>(x.cols()),
                    x.data(), static_cast<int>(x.cols()), w.data(), static_cast<int>(w.cols()), false,
                    b.size() ? b.data() : nullptr, y.data(), static_cast<int>(y.cols()));
    return y;
}

Matrix project(const Matrix& x, const Matrix& w, const RowVector& b) {
    kernels::Context ctx;
    return project(ctx, x, w, b);
}

HeadTrace scaled_dot_product_attention(Matrix q, Matrix k, Matrix v, const MaskMatrix& allowed,
                                       Scale scale) {
    kernels::Context ctx;
    return head_trace(ctx, std::move(q), std::move(k), std::move(v), allowed, nullptr, scale);
}

// [SECTION] Multi-head attention -------------------------------------------------------------

MultiHeadTrace multi_head_attention(kernels::Context& ctx, const Matrix& x_q, const Matrix& x_kv,
                                    const Weights& weights, const AttentionOptions& options) {
    const Projected p = project_all(ctx, x_q, x_kv, weights, options.n_heads);
    MultiHeadTrace t;
    t.x_q = x_q;
    t.x_kv = x_kv;
    const MaskMatrix allowed = combine_masks(options.mask, p.T_q, p.T_k);
    const std::vector<kernels::RowSpan> spans = kernels::row_spans(allowed.data(), p.T_q, p.T_k);

    t.concat.resize(p.T_q, p.d_model);
    t.heads.resize(static_cast<std::size_t>(p.n_heads));
    const double work = 2.0 * p.T_q * p.T_k * p.d_model;  // S and O of every head
    kernels::for_parts(ctx, p.n_heads, work, [&](int h, kernels::Context& head_ctx) {  // a head per part
        const int c0 = h * p.d_k;
        HeadTrace& head = t.heads[static_cast<std::size_t>(h)];
        head = head_trace(head_ctx, p.Q.middleCols(c0, p.d_k), p.K.middleCols(c0, p.d_k), p.V.middleCols(c0, p.d_k),
                          allowed, spans.data(), options.scale);
        t.concat.middleCols(c0, p.d_k) = head.output;
    });
    t.output = project(ctx, t.concat, weights.w_o, weights.b_o);
    return t;
}

MultiHeadTrace multi_head_attention(const Matrix& x_q, const Matrix& x_kv, const Weights& weights,
                                    const AttentionOptions& options) {
    kernels::Context ctx;
    return multi_head_attention(ctx, x_q, x_kv, weights, options);
}

Matrix multi_head_attention_weights(kernels::Context& ctx, const Matrix& x_q, const Matrix& x_kv,
                                    const Weights& weights, const AttentionOptions& options, const OnHead& on_head) {
    const Projected p = project_all(ctx, x_q, x_kv, weights, options.n_heads);
    const MaskMatrix allowed = combine_masks(options.mask, p.T_q, p.T_k);
    const std::vector<kernels::RowSpan> spans = kernels::row_spans(allowed.data(), p.T_q, p.T_k);
    // Each head reads its columns of Q, K and V and writes its columns of concat in place; a
    // group of heads at a time (one per thread), each into a weights buffer of its own.
    const double plane = static_cast<double>(p.T_q) * p.T_k;
    const int group = std::clamp(static_cast<int>(kHeadBuffersBytes / std::max(4.0 * plane, 1.0)), 1, std::min(ctx.threads(), p.n_heads));
    Matrix concat(p.T_q, p.d_model);
    std::vector<Matrix> w(static_cast<std::size_t>(group), Matrix(p.T_q, p.T_k));
    for (int h0 = 0; h0 < p.n_heads; h0 += group) {
        const int n = std::min(group, p.n_heads - h0);
        kernels::for_parts(ctx, n, 2.0 * plane * p.d_k * n, [&](int i, kernels::Context& head_ctx) {
            const int c0 = (h0 + i) * p.d_k;
            kernels::HeadArgs args;
            args.T_q = p.T_q, args.T_k = p.T_k, args.d_k = p.d_k;
            args.ld_q = args.ld_kv = args.ld_out = p.d_model;
            args.q = p.Q.data() + c0, args.k = p.K.data() + c0, args.v = p.V.data() + c0;
            args.allowed = allowed.data(), args.spans = spans.data();
            args.factor = options.scale.factor(p.d_k);
            args.weights = w[static_cast<std::size_t>(i)].data(), args.output = concat.data() + c0;
            kernels::attention_head(head_ctx, args);
        });
        if (on_head)
            for (int i = 0; i < n; ++i) on_head(h0 + i, w[static_cast<std::size_t>(i)]);
    }
    return project(ctx, concat, weights.w_o, weights.b_o);
}

Matrix multi_head_attention_weights(const Matrix& x_q, const Matrix& x_kv, const Weights& weights,
                                    const AttentionOptions& options, const OnHead& on_head) {
    kernels::Context ctx;
    return multi_head_attention_weights(ctx, x_q, x_kv, weights, options, on_head);
}

}  // namespace attn
