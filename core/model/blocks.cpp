// blocks.cpp: see blocks.hpp.
#include "blocks.hpp"

#include <algorithm>
#include <cmath>

namespace attn::blocks {

// [SECTION] Normalization and activations ------------------------------------------------------

// x: T×d -> y: T×d
// pass 1: mean of the row; pass 2: variance (biased, as torch's LayerNorm); pass 3: normalize,
// scale and shift
void layer_norm(const float* x, int T, int d, const float* g, const float* b, float eps, float* y) {
    for (int t = 0; t < T; ++t) {
        const float* xr = x + static_cast<std::ptrdiff_t>(t) * d;
        float* yr = y + static_cast<std::ptrdiff_t>(t) * d;
        double mean = 0;
        for (int i = 0; i < d; ++i) mean += xr[i];
        mean /= d;
        double var = 0;
        for (int i = 0; i < d; ++i) var += (xr[i] - mean) * (xr[i] - mean);
        var /= d;
        const double inv = 1.0 / std::sqrt(var + eps);
        for (int i = 0; i < d; ++i) yr[i] = static_cast<float>((xr[i] - mean) * inv) * g[i] + (b ? b[i] : 0.0f);
    }
}

// x: T×d -> y: T×d: pass 1: the mean of squares; pass 2: scale by its inverse root and by g
void rms_norm(const float* x, int T, int d, int ld, const float* g, float eps, float* y) {
    for (int t = 0; t < T; ++t) {
        const float* xr = x + static_cast<std::ptrdiff_t>(t) * ld;
        float* yr = y + static_cast<std::ptrdiff_t>(t) * ld;
        double squares = 0;
        for (int i = 0; i < d; ++i) squares += static_cast<double>(xr[i]) * xr[i];
        const double inv = 1.0 / std::sqrt(squares / d + eps);
        for (int i = 0; i < d; ++i) yr[i] = static_cast<float>(xr[i] * inv) * g[i];
    }
}

namespace {

// x[i] = out(x[i], e^(arg(x[i]))) for every i, arg ≤ 0: the exps from the kernels' SIMD exp
// (relative error < 2e-7) where libm's tanhf and expf would cost a call each; kChunk at a time.
template <class Arg, class Out>
void with_exp(kernels::Isa isa, float* x, std::size_t n, Arg arg, Out out) {
    constexpr std::size_t kChunk = 256;
    float a[kChunk], e[kChunk];
    for (std::size_t i0 = 0; i0 < n; i0 += kChunk) {
        const std::size_t m = std::min(kChunk, n - i0);
        for (std::size_t i = 0; i < m; ++i) a[i] = arg(x[i0 + i]);
        kernels::exp_nonpositive(isa, a, e, static_cast<int>(m));
        for (std::size_t i = 0; i < m; ++i) x[i0 + i] = out(x[i0 + i], e[i]);
    }
}

}  // namespace

void gelu_tanh(kernels::Isa isa, float* x, std::size_t n) {
    // tanh(u) = sign(u)·(1 − e^(−2|u|)) / (1 + e^(−2|u|)), u = √(2/π)·(v + 0.044715·v³)
    constexpr float k = 0.7978845608028654f;
    auto u = [](float v) { return k * (v + 0.044715f * v * v * v); };
    with_exp(isa, x, n, [&](float v) { return -2.0f * std::fabs(u(v)); },
             [&](float v, float e) { return 0.5f * v * (1.0f + std::copysign((1.0f - e) / (1.0f + e), u(v))); });
}

void gelu_exact(float* x, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * 0.70710678118654752f));
}

void silu(kernels::Isa isa, float* x, std::size_t n) {
    // x·σ(x) with e = e^(−|x|): x / (1 + e) for x ≥ 0, x·e / (1 + e) below
    with_exp(isa, x, n, [](float v) { return -std::fabs(v); },
             [](float v, float e) { return (v >= 0.0f ? v : v * e) / (1.0f + e); });
}

void quick_gelu(kernels::Isa isa, float* x, std::size_t n) {
    // x·σ(1.702·x), σ as silu's: e = e^(−1.702·|x|)
    with_exp(isa, x, n, [](float v) { return -1.702f * std::fabs(v); },
             [](float v, float e) { return (v >= 0.0f ? v : v * e) / (1.0f + e); });
}

void relu(float* x, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) x[i] = x[i] > 0 ? x[i] : 0.0f;
}

void activate(kernels::Isa isa, Activation a, float* x, std::size_t n) {
    switch (a) {
        case Activation::GeluTanh: return gelu_tanh(isa, x, n);
        case Activation::GeluExact: return gelu_exact(x, n);
        case Activation::Silu: return silu(isa, x, n);
        case Activation::Relu: return relu(x, n);
        case Activation::QuickGelu: return quick_gelu(isa, x, n);
    }
}

// [SECTION] Products -------------------------------------------------------------------------

void linear(kernels::Context& ctx, const Linear& f, const float* x, int T, int ldx, float* y, int ldy) {
    kernels::matmul(ctx, T, x, ldx, f.w, f.b, y, ldy);
}

// [SECTION] Embeddings -------------------------------------------------------------------------

void embed(const kernels::PackedB& table, const std::vector<int>& ids, float scale, const float* positions,
           int first_position, float* out) {
    const int d = table.K;
    for (std::size_t t = 0; t < ids.size(); ++t) {
        const float* p = positions ? positions + static_cast<std::ptrdiff_t>(first_position + t) * d : nullptr;
        float* o = out + static_cast<std::ptrdiff_t>(t) * d;
        kernels::column(table, ids[t], o);
        for (int i = 0; i < d; ++i) o[i] = scale * o[i] + (p ? p[i] : 0.0f);
    }
}

// In double, rounded once: the table torch builds in float64 (numpy) and stores as float32.
void sinusoidal_positions(int n, int d, float* out) {
    const int half = (d + 1) / 2;  // sin columns; the cos columns follow
    for (int p = 0; p < n; ++p) {
        float* row = out + static_cast<std::ptrdiff_t>(p) * d;
        for (int c = 0; c < half; ++c) {
            const double angle = p / std::pow(10000.0, 2.0 * c / d);
            row[c] = static_cast<float>(std::sin(angle));
            if (half + c < d) row[half + c] = static_cast<float>(std::cos(angle));
        }
    }
}

}  // namespace attn::blocks
