// FlashAttention's tiles (core/math/flash.hpp) against a plain loop of the online softmax in double,
// every intermediate of every tile, and the final output against softmax(QKᵀ·scale)V computed
// directly, over many shapes, tile sizes and masks (self, causal, cross with padding, an explicit
// mask with fully masked rows; T not a multiple of the tile).
#include "flash.hpp"
#include "oracle.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

using namespace attn;

namespace {

enum class FlashMask { None, Causal, Padding, Explicit };

MaskMatrix flash_mask(FlashMask kind, int T_q, int T_k, oracle::Random& rng) {
    MaskMatrix a = MaskMatrix::Ones(T_q, T_k);
    for (int r = 0; r < T_q; ++r)
        for (int c = 0; c < T_k; ++c) {
            if (kind == FlashMask::Causal) a(r, c) = c <= r;
            if (kind == FlashMask::Explicit) a(r, c) = r % 3 != 1 && rng.below(3) != 0;  // every third row fully masked
        }
    if (kind == FlashMask::Padding)
        for (int c = 0; c < T_k; ++c)
            if (rng.below(4) == 0) a.col(c).setZero();
    return a;
}

// The online softmax of one query row over key tiles of `cols`, in double: per tile the running
// maximum, the rescale, the running sum and the unnormalized output after it.
struct RowSteps {
    std::vector<double> m, alpha, l;   // per tile
    std::vector<std::vector<double>> o;
    std::vector<double> output;        // O / ℓ
};

RowSteps online_softmax_row(const Matrix& q, const Matrix& k, const Matrix& v, float scale, const MaskMatrix& allowed,
                            int row, int cols) {
    const double ninf = -std::numeric_limits<double>::infinity();
    const int T_k = static_cast<int>(k.rows()), d = static_cast<int>(q.cols()), d_v = static_cast<int>(v.cols());
    RowSteps out;
    double m = ninf, l = 0;
    std::vector<double> o(static_cast<size_t>(d_v), 0.0);
    for (int c0 = 0; c0 < T_k; c0 += cols) {
        const int c1 = std::min(T_k, c0 + cols);
        std::vector<double> s;
        double m_new = m;
        for (int c = c0; c < c1; ++c) {
            double dot = 0;
            for (int x = 0; x < d; ++x) dot += static_cast<double>(q(row, x)) * k(c, x);
            s.push_back(allowed(row, c) ? dot * scale : ninf);
            m_new = std::max(m_new, s.back());
        }
        const double alpha = m_new == ninf ? 1.0 : std::exp(m - m_new);
        l *= alpha;
        for (double& x : o) x *= alpha;
        for (int c = c0; c < c1; ++c) {
            const double p = s[static_cast<size_t>(c - c0)] == ninf ? 0.0 : std::exp(s[static_cast<size_t>(c - c0)] - m_new);
            l += p;
            for (int x = 0; x < d_v; ++x) o[static_cast<size_t>(x)] += p * v(c, x);
        }
        m = m_new;
        out.m.push_back(m), out.alpha.push_back(alpha), out.l.push_back(l), out.o.push_back(o);
    }
    for (double x : o) out.output.push_back(l > 0 ? x / l : 0.0);
    return out;
}

// softmax(q·kᵀ·scale + M)·v for one row, directly, in double.
std::vector<double> direct_row(const Matrix& q, const Matrix& k, const Matrix& v, float scale, const MaskMatrix& allowed, int row) {
    const int T_k = static_cast<int>(k.rows());
    std::vector<double> s(static_cast<size_t>(T_k));
    double mx = -std::numeric_limits<double>::infinity();
    for (int c = 0; c < T_k; ++c) {
        double dot = 0;
        for (int x = 0; x < q.cols(); ++x) dot += static_cast<double>(q(row, x)) * k(c, x);
        s[static_cast<size_t>(c)] = dot * scale;
        if (allowed(row, c)) mx = std::max(mx, s[static_cast<size_t>(c)]);
    }
    std::vector<double> out(static_cast<size_t>(v.cols()), 0.0);
    if (mx == -std::numeric_limits<double>::infinity()) return out;
    double sum = 0;
    for (int c = 0; c < T_k; ++c)
        if (allowed(row, c)) sum += std::exp(s[static_cast<size_t>(c)] - mx);
    for (int c = 0; c < T_k; ++c)
        if (allowed(row, c))
            for (int x = 0; x < v.cols(); ++x) out[static_cast<size_t>(x)] += std::exp(s[static_cast<size_t>(c)] - mx) / sum * v(c, x);
    return out;
}

// |a − b| / (1 + |b|); equal infinities are no difference.
double flash_rel(double a, double b) {
    if (std::isinf(a) || std::isinf(b)) return a == b ? 0.0 : INFINITY;
    return std::fabs(a - b) / (1.0 + std::fabs(b));
}

}  // namespace

TEST_CASE("flash: every tile's m, ℓ, α and O equal a plain online softmax in double; the output, softmax(QKᵀ)V") {
    oracle::Random rng(34);
    struct Case {
        int T_q, T_k, d, d_v;
    };
    std::vector<Case> cases = {{1, 1, 1, 1}, {5, 5, 4, 4}, {7, 7, 3, 5}, {12, 12, 8, 8}, {6, 11, 4, 2}, {33, 17, 16, 16}, {64, 64, 32, 32}};
    for (int n = 0; n < 24; ++n) cases.push_back({1 + rng.below(40), 1 + rng.below(40), 1 + rng.below(24), 1 + rng.below(24)});
    const TileSize tiles[] = {{1, 1}, {2, 2}, {2, 3}, {3, 2}, {4, 4}, {5, 7}, {16, 16}, {64, 64}};
    double worst_steps = 0, worst_output = 0;
    int tiles_checked = 0, skipped_seen = 0, partial_seen = 0, zero_rows_seen = 0;
    for (const Case& c : cases)
        for (FlashMask kind : {FlashMask::None, FlashMask::Causal, FlashMask::Padding, FlashMask::Explicit})
            for (TileSize tile : tiles) {
                if (rng.below(3) == 0 && !(c.T_q == 5 && c.T_k == 5)) continue;  // a third of the variants, all for 5×5
                CAPTURE(c.T_q);
                CAPTURE(c.T_k);
                CAPTURE(c.d);
                CAPTURE(static_cast<int>(kind));
                CAPTURE(tile.rows);
                CAPTURE(tile.cols);
                const Matrix q = rng.matrix(c.T_q, c.d) * 2.0f, k = rng.matrix(c.T_k, c.d) * 2.0f, v = rng.matrix(c.T_k, c.d_v);
                const float scale = 1.0f / std::sqrt(static_cast<float>(c.d));
                const MaskMatrix allowed = flash_mask(kind, c.T_q, c.T_k, rng);
                const FlashTrace t = flash_attention(q, k, v, scale, allowed, tile);
                REQUIRE(t.row_tiles == (c.T_q + tile.rows - 1) / tile.rows);
                REQUIRE(t.col_tiles == (c.T_k + tile.cols - 1) / tile.cols);
                REQUIRE(t.tiles.size() == static_cast<size_t>(t.row_tiles * t.col_tiles));
                for (int r = 0; r < c.T_q; ++r) {
                    const RowSteps want = online_softmax_row(q, k, v, scale, allowed, r, tile.cols);
                    const int i = r / tile.rows, x = r - i * tile.rows;
                    for (int j = 0; j < t.col_tiles; ++j) {
                        const FlashTile& f = t.at(i, j);
                        REQUIRE(f.r0 == i * tile.rows);
                        REQUIRE(f.c0 == j * tile.cols);
                        const auto u = static_cast<size_t>(j);
                        worst_steps = std::max({worst_steps, flash_rel(f.m_new(x), want.m[u]), flash_rel(f.alpha(x), want.alpha[u]),
                                                flash_rel(f.l_new(x), want.l[u])});
                        for (int y = 0; y < c.d_v; ++y) worst_steps = std::max(worst_steps, flash_rel(f.o(x, y), want.o[u][static_cast<size_t>(y)]));
                        if (j > 0) {  // the state a tile starts from is the one the tile before it left
                            CHECK(f.m_old(x) == t.at(i, j - 1).m_new(x));
                            CHECK(f.l_old(x) == t.at(i, j - 1).l_new(x));
                        }
                    }
                    const std::vector<double> direct = direct_row(q, k, v, scale, allowed, r);
                    bool zero = true;
                    for (int y = 0; y < c.d_v; ++y) {
                        CHECK(std::isfinite(t.output(r, y)));
                        worst_output = std::max({worst_output, flash_rel(t.output(r, y), direct[static_cast<size_t>(y)]),
                                                 flash_rel(t.output(r, y), want.output[static_cast<size_t>(y)])});
                        zero = zero && t.output(r, y) == 0.0f;
                    }
                    if (allowed.row(r).sum() == 0) {
                        CHECK(zero);  // a fully masked row: zeros, never NaN
                        ++zero_rows_seen;
                    }
                }
                for (const FlashTile& f : t.tiles) {
                    int masked = 0;
                    for (int r = f.r0; r < f.r1; ++r)
                        for (int col = f.c0; col < f.c1; ++col) masked += !allowed(r, col);
                    const int all = (f.r1 - f.r0) * (f.c1 - f.c0);
                    CHECK(f.skipped == (masked == all));
                    CHECK(f.partly_masked == (masked > 0 && masked < all));
                    CHECK(f.s.size() == (f.skipped ? 0 : all));
                    skipped_seen += f.skipped, partial_seen += f.partly_masked;
                    ++tiles_checked;
                }
            }
    std::printf("flash: %d tiles; steps within %.2e, output within %.2e of double; %d skipped, %d partly masked, %d zero rows\n",
                tiles_checked, worst_steps, worst_output, skipped_seen, partial_seen, zero_rows_seen);
    CHECK(worst_steps < 1e-5);
    CHECK(worst_output < 1e-5);
    CHECK(skipped_seen > 100);
    CHECK(partial_seen > 100);
    CHECK(zero_rows_seen > 10);
}

TEST_CASE("flash: a causal mask skips the tiles above the diagonal; the seeds' five tokens in 2×2 tiles") {
    oracle::Random rng(5);
    const Matrix q = rng.matrix(5, 4), k = rng.matrix(5, 4), v = rng.matrix(5, 4);
    const FlashTrace t = flash_attention(q, k, v, 0.5f, flash_mask(FlashMask::Causal, 5, 5, rng), {2, 2});
    CHECK(t.row_tiles == 3);
    CHECK(t.col_tiles == 3);
    // Tiles (i, j) with j > i hold only keys after every query of the tile.
    for (const FlashTile& f : t.tiles) CHECK(f.skipped == (f.j > f.i));
    // The diagonal tiles are partly masked, but the last (row 4 alone against key 4) is not.
    CHECK(t.at(0, 0).partly_masked);
    CHECK(t.at(1, 1).partly_masked);
    CHECK_FALSE(t.at(2, 2).partly_masked);
    CHECK(t.at(2, 2).r1 - t.at(2, 2).r0 == 1);  // T not a multiple of the tile
    // The first tile of a row starts from m = −∞, ℓ = 0: its α is e^(−∞) = 0.
    CHECK(t.at(1, 0).alpha(0) == 0.0f);
    CHECK(std::isinf(t.at(1, 0).m_old(0)));
}

TEST_CASE("flash: tile sizes from on-chip memory (FlashAttention's Algorithm 1)") {
    // 100 KB of floats (25600), d = 64: B_c = ⌈25600 / 256⌉ = 100, B_r = min(100, 64) = 64.
    CHECK(flash_tile_size(25600, 64, 1000, 1000) == TileSize{64, 100});
    CHECK(flash_tile_size(25600, 64, 10, 30) == TileSize{10, 30});  // never larger than the sequence
    CHECK(flash_tile_size(1, 128, 5, 5) == TileSize{1, 1});
    CHECK_THROWS_AS(flash_attention(Matrix(3, 4), Matrix(3, 5), Matrix(3, 2), 1.0f, MaskMatrix(), {2, 2}), std::invalid_argument);
    CHECK_THROWS_AS(flash_attention(Matrix(3, 4), Matrix(3, 4), Matrix(3, 2), 1.0f, MaskMatrix(2, 3), {2, 2}), std::invalid_argument);
}
