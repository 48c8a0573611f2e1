// qk_space.hpp: the math of the Q–K space view (issue 34 §1; AttentionViz, Yeh et al. VIS 2023):
// one head's queries and keys as points of one plane, where a query should lie near the keys it
// attends to. Core only: the view draws what these return.
//
// 1. Normalization. q: T_q×d, k: T_k×d. A head's queries and keys often sit in two clouds far
//    apart and of different sizes; two changes bring them together and leave every softmax row
//    as it was:
//      t = mean(q) − mean(k)                 d     every key moved by t: k′_j = k_j + t.
//          Query i's scores all move by the same q_i·t, and a softmax row does not change when
//          all its entries move together (masked entries stay masked).
//      c = √(mean‖k′‖ / mean‖q‖)                   queries ×c, keys ×1/c: q″·k″ = q·k′ exactly,
//          and mean‖q″‖ = mean‖k″‖ (= √(mean‖q‖ · mean‖k′‖)).
//    The key centroid meets the query centroid after the move; the scaling then puts them at
//    c·μ_q and μ_q/c (apart again only when μ_q ≠ 0 and c ≠ 1).
// 2. The plane. The joint points X = [q″; k″], N×d with N = T_q + T_k (queries first), go to
//    N×2 by either
//    PCA: centre X, C = XᵀX/N (d×d, double), the eigenvectors of C's two largest eigenvalues
//         (cyclic Jacobi rotations; from the Gram matrix XXᵀ/N when N < d), each signed so that
//         its largest-|x| entry is positive; points = X·[a₁ a₂].
//    t-SNE (van der Maaten & Hinton 2008; Barnes–Hut: van der Maaten 2014, as his bhtsne does):
//      pass 1: X centred and divided by its largest |entry|; per point i a Gaussian over the
//              others, p_j|i ∝ e^(−β_i‖x_i − x_j‖²), β_i bisected until e^H(p·|i) = perplexity.
//              Exact: over all N − 1 others. Barnes–Hut: over the ⌊3·perplexity⌋ nearest.
//      pass 2: P = (p_j|i + p_i|j) / Σ, symmetric, summing to 1    N×N, or sparse
//      pass 3: Y N×2 from seeded noise, about Gaussian of std 1e-4 (twelve SplitMix64 uniforms
//              less 6, ×1e-4; not from PCA), then each iteration
//                w_ij = (1 + ‖y_i − y_j‖²)⁻¹,  Z = Σ_{k≠l} w_kl,  q_ij = w_ij / Z
//                g_i  = Σ_j (α·p_ij − q_ij) w_ij (y_i − y_j)      (bhtsne's ∂C/∂y_i: no factor 4)
//                gain += 0.2 where g's sign differs from the last step's, else gain ×= 0.8; ≥ 0.01
//                step  = μ·step − η·gain·g;  Y += step;  Y centred
//              α = 12 (early exaggeration) and momentum μ = 0.5 for the first 250 iterations,
//              then α = 1 and μ = 0.8; η = max(200, N/12) (bhtsne's 200; N/α for large N,
//              Belkina et al. 2019). Barnes–Hut takes the repulsion Σ_j w_ij² (y_i − y_j) and Z
//              from a quadtree: a cell of side s whose centre of mass lies at distance D from
//              y_i counts as its n points there when s/D < θ.
//    Everything in double, in plain loops in a fixed order, with exp and log of our own: the same
//    seed gives the same layout, bit for bit, natively and in wasm.
// 3. Reading the plane: the Pearson correlation between q·k and the 2-D distance from query to
//    key (negative: nearer means more attention), and the keys nearest a query.
//
// [SECTION] Normalization
// [SECTION] PCA
// [SECTION] t-SNE
// [SECTION] Reading the plane
#pragma once

#include "attention.hpp"

#include <array>
#include <cstdint>
#include <vector>

namespace attn {

// [SECTION] Normalization -------------------------------------------------------------------------

struct QKNormalized {
    Matrix q;                        // T_q×d: the queries ×c
    Matrix k;                        // T_k×d: the keys moved by t, then ×1/c
    RowVector translation;           // d: t = mean(q) − mean(k), added to every key before the scaling
    float translation_norm = 0.0f;   // |t|
    float query_scale = 1.0f;        // c; the keys are ×1/c. 1 when a mean norm is 0

    Matrix joint() const;            // (T_q+T_k)×d: q over k, the points the plane is made from
};

// q: T_q×d, k: T_k×d, one head's original queries and keys. With no queries or no keys, t = 0
// and c = 1. Throws std::invalid_argument when the widths differ.
QKNormalized normalize_qk(const Matrix& q, const Matrix& k);

// [SECTION] PCA -----------------------------------------------------------------------------------

struct PcaPlane {
    Matrix points;                   // N×2: the centred points along the two axes
    Matrix axes;                     // 2×d: unit principal directions, largest-|x| entry positive
    std::array<float, 2> explained{};  // each axis's share of the total variance (0 … 1)
};

// points: N×d. d = 1: the second axis and coordinate are 0. N ≤ 1 or equal points: every point
// at 0 and shares 0. Two equal eigenvalues leave their axes any orthonormal pair of their plane.
PcaPlane pca_plane(const Matrix& points);

// [SECTION] t-SNE ---------------------------------------------------------------------------------

struct TsneOptions {
    float perplexity = 30.0f;        // clamped to (N − 1)/3, then to at least 1
    int iterations = 1000;
    std::uint64_t seed = 1;          // the starting noise (SplitMix64)
    int barnes_hut_from = 700;       // N from which the gradient is Barnes–Hut; below, exact O(N²)
                                     // (the two took the same time at N = 700, 1000 iterations)
    float theta = 0.5f;              // Barnes–Hut: a cell counts as one point when side/distance < θ
};

struct TsnePlane {
    Matrix points;                   // N×2
    float perplexity = 0.0f;         // as used, after the clamps
    bool barnes_hut = false;
    int neighbours = 0;              // the others each p_·|i spreads over: N − 1, or ⌊3·perplexity⌋
};

// points: N×d (the joint points). N ≤ 1: zeros. The exact gradient holds P as N×N doubles.
TsnePlane tsne_plane(const Matrix& points, const TsneOptions& options = {});

// [SECTION] Reading the plane ---------------------------------------------------------------------

// Pearson's r between q_i·k_j (the original q: T_q×d and k: T_k×d) and ‖plane_i − plane_{T_q+j}‖,
// over the pairs `allowed` (T_q×T_k; empty: every pair). plane: (T_q+T_k)×2, queries first.
// 0 when fewer than two pairs are allowed or either side is constant. Throws
// std::invalid_argument on shapes that do not agree.
float qk_distance_correlation(const Matrix& q, const Matrix& k, const KeyMask& allowed, const Matrix& plane);

// The n keys (0 … T_k−1) nearest to query `query` in the plane ((T_q+T_k)×2), nearest first,
// ties to the lower index; only the keys `allowed` (T_q×T_k; empty: all). Fewer when fewer keys
// are there; none for a query out of range. Throws std::invalid_argument on shapes that do not agree.
std::vector<int> nearest_keys(const Matrix& plane, int T_q, int query, int n, const KeyMask& allowed = {});

}  // namespace attn
