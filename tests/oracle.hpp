// oracle.hpp: attention written as plain loops in double, the reference every kernel is
// checked against (llm.c test_gpt2.c style), and a small deterministic random source.
#pragma once

#include "attention.hpp"

#include <cmath>
#include <cstdint>
#include <vector>

namespace attn::oracle {

using Grid = std::vector<std::vector<double>>;  // [row][col]

struct Head {
    Grid q, k, v, scores, weights, output;
    std::vector<bool> fully_masked;
};

struct Result {
    std::vector<Head> heads;
    Grid output;
};

inline Grid grid(const Matrix& m) {
    Grid g(m.rows(), std::vector<double>(m.cols()));
    for (int i = 0; i < m.rows(); ++i)
        for (int j = 0; j < m.cols(); ++j) g[i][j] = m(i, j);
    return g;
}

// x·W + b, x: T×d, W: d×d.
inline Grid project(const Grid& x, const Matrix& w, const RowVector& b) {
    const size_t T = x.size(), d = static_cast<size_t>(w.cols());
    Grid y(T, std::vector<double>(d));
    for (size_t t = 0; t < T; ++t)
        for (size_t c = 0; c < d; ++c) {
            double acc = b(c);
            for (size_t r = 0; r < x[t].size(); ++r) acc += x[t][r] * w(r, c);
            y[t][c] = acc;
        }
    return y;
}

// mask(i, j) = 1: query i may attend key j. scale_factor multiplies the scores.
inline Result attention(const Matrix& x_q, const Matrix& x_kv, const Weights& w, int n_heads,
                        double scale_factor, const MaskMatrix& mask) {
    const Grid Q = project(grid(x_q), w.w_q, w.b_q), K = project(grid(x_kv), w.w_k, w.b_k),
               V = project(grid(x_kv), w.w_v, w.b_v);
    const size_t T_q = Q.size(), T_k = K.size(), d_model = static_cast<size_t>(w.d_model());
    const size_t d_k = d_model / n_heads;
    Result r;
    Grid concat(T_q, std::vector<double>(d_model));
    for (int h = 0; h < n_heads; ++h) {
        Head hd;
        auto slice = [&](const Grid& m) {
            Grid s(m.size(), std::vector<double>(d_k));
            for (size_t t = 0; t < m.size(); ++t)
                for (size_t c = 0; c < d_k; ++c) s[t][c] = m[t][h * d_k + c];
            return s;
        };
        hd.q = slice(Q), hd.k = slice(K), hd.v = slice(V);
        hd.scores.assign(T_q, std::vector<double>(T_k));
        hd.weights.assign(T_q, std::vector<double>(T_k, 0.0));
        hd.output.assign(T_q, std::vector<double>(d_k, 0.0));
        hd.fully_masked.assign(T_q, false);
        for (size_t i = 0; i < T_q; ++i) {
            for (size_t j = 0; j < T_k; ++j) {
                double dot = 0;
                for (size_t c = 0; c < d_k; ++c) dot += hd.q[i][c] * hd.k[j][c];
                hd.scores[i][j] = dot;
            }
            double mx = -INFINITY;
            for (size_t j = 0; j < T_k; ++j)
                if (mask(i, j)) mx = std::max(mx, hd.scores[i][j] * scale_factor);
            if (mx == -INFINITY) {
                hd.fully_masked[i] = true;
                continue;
            }
            double sum = 0;
            for (size_t j = 0; j < T_k; ++j)
                if (mask(i, j)) sum += hd.weights[i][j] = std::exp(hd.scores[i][j] * scale_factor - mx);
            for (size_t j = 0; j < T_k; ++j) hd.weights[i][j] /= sum;
            for (size_t c = 0; c < d_k; ++c) {
                double acc = 0;
                for (size_t j = 0; j < T_k; ++j) acc += hd.weights[i][j] * hd.v[j][c];
                hd.output[i][c] = acc;
                concat[i][h * d_k + c] = acc;
            }
        }
        r.heads.push_back(std::move(hd));
    }
    r.output = project(concat, w.w_o, w.b_o);
    return r;
}

// Deterministic values in [-1, 1) for test inputs.
struct Random {
    std::uint64_t state;
    explicit Random(std::uint64_t seed) : state(seed * 0x9E3779B97F4A7C15ull + 1) {}
    std::uint64_t next() {
        state ^= state << 13, state ^= state >> 7, state ^= state << 17;
        return state;
    }
    float uniform() { return static_cast<float>(next() >> 40) * (1.0f / 8388608.0f) - 1.0f; }
    int below(int n) { return static_cast<int>(next() % static_cast<std::uint64_t>(n)); }
    Matrix matrix(int rows, int cols) {
        Matrix m(rows, cols);
        for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = uniform();
        return m;
    }
};

}  // namespace attn::oracle
