// flash.cpp: FlashAttention's tiles with the online softmax (flash.hpp has the loop, numbered; the
// same numbers mark the passes here).
#include "flash.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace attn {

TileSize flash_tile_size(long sram_floats, int d, int T_q, int T_k) {
    d = std::max(d, 1);
    const long cols = std::max(1L, (sram_floats + 4L * d - 1) / (4L * d));
    const long rows = std::min<long>(cols, d);
    return {static_cast<int>(std::clamp<long>(rows, 1, std::max(T_q, 1))),
            static_cast<int>(std::clamp<long>(cols, 1, std::max(T_k, 1)))};
}

FlashTrace flash_attention(const Matrix& q, const Matrix& k, const Matrix& v, float scale, const KeyMask& allowed,
                           TileSize tile, float softcap) {
    const int T_q = static_cast<int>(q.rows()), T_k = static_cast<int>(k.rows()), d_v = static_cast<int>(v.cols());
    if (k.cols() != q.cols() || v.rows() != k.rows())
        throw std::invalid_argument("flash_attention: Q is " + std::to_string(T_q) + "×" + std::to_string(q.cols()) + ", K " +
                                    std::to_string(T_k) + "×" + std::to_string(k.cols()) + ", V " + std::to_string(v.rows()) +
                                    "×" + std::to_string(d_v));
    if (allowed.size() != 0 && (allowed.rows() != T_q || allowed.cols() != T_k))
        throw std::invalid_argument("flash_attention: the mask is " + std::to_string(allowed.rows()) + "×" +
                                    std::to_string(allowed.cols()) + ", the scores " + std::to_string(T_q) + "×" + std::to_string(T_k));
    const float ninf = -std::numeric_limits<float>::infinity();
    auto may = [&](int r, int c) { return allowed.size() == 0 || allowed(r, c) != 0; };

    FlashTrace t;
    t.tile = {std::max(tile.rows, 1), std::max(tile.cols, 1)};
    t.T_q = T_q, t.T_k = T_k, t.d_v = d_v;
    const int Br = t.tile.rows, Bc = t.tile.cols;
    t.row_tiles = (T_q + Br - 1) / Br;
    t.col_tiles = (T_k + Bc - 1) / Bc;
    t.tiles.reserve(static_cast<size_t>(t.row_tiles) * static_cast<size_t>(t.col_tiles));
    t.m = RowVector::Constant(T_q, ninf);
    t.l = RowVector::Zero(T_q);
    t.output = Matrix::Zero(T_q, d_v);

    for (int i = 0; i < t.row_tiles; ++i) {
        const int r0 = i * Br, r1 = std::min(T_q, r0 + Br), n = r1 - r0;
        RowVector m = RowVector::Constant(n, ninf), l = RowVector::Zero(n);
        Matrix o = Matrix::Zero(n, d_v);
        for (int j = 0; j < t.col_tiles; ++j) {
            FlashTile& f = t.tiles.emplace_back();
            f.i = i, f.j = j, f.r0 = r0, f.r1 = r1;
            f.c0 = j * Bc, f.c1 = std::min(T_k, f.c0 + Bc);
            const int w = f.c1 - f.c0;
            int masked = 0;
            for (int r = r0; r < r1; ++r)
                for (int c = f.c0; c < f.c1; ++c) masked += !may(r, c);
            f.skipped = masked == n * w;
            f.partly_masked = masked > 0 && !f.skipped;
            f.m_old = m, f.l_old = l;
            if (f.skipped) {
                f.m_new = m, f.l_new = l, f.alpha = RowVector::Ones(n), f.o = o;
                continue;
            }
            // 1. S = Q_i K_jᵀ · scale, masked −∞
            f.s = (q.middleRows(r0, n) * k.middleRows(f.c0, w).transpose()) * scale;
            if (softcap > 0.0f) f.s = f.s.unaryExpr([softcap](float x) { return softcap * std::tanh(x / softcap); });
            for (int r = 0; r < n; ++r)
                for (int c = 0; c < w; ++c)
                    if (!may(r0 + r, f.c0 + c)) f.s(r, c) = ninf;
            // 2. m' = max(m, rowmax(S))   3. P = e^(S − m')   4. α = e^(m − m')   5. ℓ' = α·ℓ + rowsum(P)
            f.m_new.resize(n), f.alpha.resize(n), f.l_new.resize(n);
            f.p.resize(n, w);
            for (int r = 0; r < n; ++r) {
                const float m_new = std::max(m(r), f.s.row(r).maxCoeff());
                f.m_new(r) = m_new;
                const bool none_yet = m_new == ninf;  // every key so far masked in this row
                f.alpha(r) = none_yet ? 1.0f : std::exp(m(r) - m_new);  // e^(−∞) = 0 when m was −∞
                float sum = 0.0f;
                for (int c = 0; c < w; ++c) {
                    f.p(r, c) = none_yet || f.s(r, c) == ninf ? 0.0f : std::exp(f.s(r, c) - m_new);
                    sum += f.p(r, c);
                }
                f.l_new(r) = f.alpha(r) * l(r) + sum;
            }
            // 6. O' = diag(α)·O + P·V_j
            o = f.alpha.transpose().asDiagonal() * o;
            o.noalias() += f.p * v.middleRows(f.c0, w);
            f.o = o;
            m = f.m_new, l = f.l_new;
        }
        // O_i = diag(1/ℓ)·O; a row that met no key stays 0
        for (int r = 0; r < n; ++r) {
            t.m(r0 + r) = m(r), t.l(r0 + r) = l(r);
            if (l(r) > 0.0f) t.output.row(r0 + r) = o.row(r) / l(r);
        }
    }
    return t;
}

}  // namespace attn
