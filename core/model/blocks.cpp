// blocks.cpp: see blocks.hpp.
#include "blocks.hpp"

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
        for (int i = 0; i < d; ++i) yr[i] = static_cast<float>((xr[i] - mean) * inv) * g[i] + b[i];
    }
}

void gelu_tanh(float* x, std::size_t n) {
    const float k = std::sqrt(2.0f / 3.14159265358979f);
    for (std::size_t i = 0; i < n; ++i) {
        const float v = x[i];
        x[i] = 0.5f * v * (1.0f + std::tanh(k * (v + 0.044715f * v * v * v)));
    }
}

void gelu_exact(float* x, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * 0.70710678118654752f));
}

void silu(float* x, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) x[i] = x[i] / (1.0f + std::exp(-x[i]));
}

void relu(float* x, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) x[i] = x[i] > 0 ? x[i] : 0.0f;
}

void activate(Activation a, float* x, std::size_t n) {
    switch (a) {
        case Activation::GeluTanh: return gelu_tanh(x, n);
        case Activation::GeluExact: return gelu_exact(x, n);
        case Activation::Silu: return silu(x, n);
        case Activation::Relu: return relu(x, n);
    }
}

// [SECTION] Products -------------------------------------------------------------------------

void linear(kernels::Context& ctx, const Linear& f, const float* x, int T, int ldx, float* y, int ldy) {
    kernels::matmul(ctx, T, f.out, f.in, x, ldx, f.w, f.ld, f.transposed, f.b, y, ldy);
}

// E: V×d, x: d -> logits: V. As a product, E (V×d) · x (d×1).
void lm_head(kernels::Context& ctx, const float* E, int V, int d, const float* x, const float* bias, float* logits) {
    kernels::matmul(ctx, V, 1, d, E, d, x, 1, false, nullptr, logits, 1);
    if (bias)
        for (int i = 0; i < V; ++i) logits[i] += bias[i];
}

// [SECTION] Embeddings -------------------------------------------------------------------------

void embed(const float* table, int d, const std::vector<int>& ids, float scale, const float* positions,
           int first_position, float* out) {
    for (std::size_t t = 0; t < ids.size(); ++t) {
        const float* e = table + static_cast<std::ptrdiff_t>(ids[t]) * d;
        const float* p = positions ? positions + static_cast<std::ptrdiff_t>(first_position + t) * d : nullptr;
        float* o = out + static_cast<std::ptrdiff_t>(t) * d;
        for (int i = 0; i < d; ++i) o[i] = scale * e[i] + (p ? p[i] : 0.0f);
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
