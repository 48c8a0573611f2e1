// blocks.hpp: the building blocks of the forward passes (transformer.cpp), one function each,
// on plain row-major float arrays, so each can be checked against a naive loop (tests).
//
//   layer_norm            y = (x − mean) / √(var + eps) · g + b, per row
//   rms_norm              y = x / √(mean(x²) + eps) · g, per row
//   gelu_tanh, gelu_exact, silu, relu, activate      in place, elementwise
//   linear                y = x·W + b through kernels::matmul, W packed once (kernels::PackedB)
//                         (an LM head too: W the d×V table)
//   embed                 columns of a packed d×V table, scaled, plus position rows
//   sinusoidal_positions  Marian's fixed position table
//
// [SECTION] Normalization and activations
// [SECTION] Products
// [SECTION] Embeddings
#pragma once

#include "config.hpp"
#include "kernels.hpp"

#include <cstddef>
#include <vector>

namespace attn::blocks {

// [SECTION] Normalization and activations ------------------------------------------------------

// x, y: T×d (row stride d; y may be x); g, b: d. Mean and variance in double, biased variance.
void layer_norm(const float* x, int T, int d, const float* g, const float* b, float eps, float* y);
// x, y: T×d (row stride ld; y may be x); g: d. The mean of squares in double.
void rms_norm(const float* x, int T, int d, int ld, const float* g, float eps, float* y);

// In place on n floats. tanh and σ through the kernels' exp (kernels::exp_nonpositive).
void gelu_tanh(kernels::Isa isa, float* x, std::size_t n);  // 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))  (gelu_new)
void gelu_exact(float* x, std::size_t n);                   // 0.5·x·(1 + erf(x/√2))
void silu(kernels::Isa isa, float* x, std::size_t n);       // x·σ(x)  (Marian's "swish")
void relu(float* x, std::size_t n);
void activate(kernels::Isa isa, Activation a, float* x, std::size_t n);

// [SECTION] Products -------------------------------------------------------------------------

// A linear map y = x·W + b, W of `in`×`out` in the row-vector convention, packed once as the
// products read it (kernels::pack: from GPT-2's Conv1D [in, out] as it is, from nn.Linear's
// weight [out, in] transposed). b: `out` entries or nullptr.
struct Linear {
    kernels::PackedB w;  // K = in, N = out
    const float* b = nullptr;
    int in() const { return w.K; }
    int out() const { return w.N; }
};

// x: T×in (row stride ldx) -> y: T×out (row stride ldy), with kernels::matmul.
void linear(kernels::Context& ctx, const Linear& f, const float* x, int T, int ldx, float* y, int ldy);

// [SECTION] Embeddings -------------------------------------------------------------------------

// out[t] = scale·table[:, ids[t]] + positions[first_position + t] (positions may be nullptr).
// table: d×V packed (Plan::table), one column per token, F32 or 16-bit. out: ids.size()×d.
// The ids are in range (checked by the caller).
void embed(const kernels::PackedB& table, const std::vector<int>& ids, float scale, const float* positions,
           int first_position, float* out);

// Hugging Face's MarianSinusoidalPositionalEmbedding: out: n×d with, for c < ⌈d/2⌉,
// out[p][c] = sin(p / 10000^(2c/d)) and, for c < d/2, out[p][⌈d/2⌉ + c] = cos(p / 10000^(2c/d)).
void sinusoidal_positions(int n, int d, float* out);

}  // namespace attn::blocks
