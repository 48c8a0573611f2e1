// flash.hpp: one head's attention computed the FlashAttention way, every intermediate kept, so the
// Steps view can show it tile by tile (issue 34).
//
// FlashAttention (Dao et al. 2022; the loop order of FlashAttention-2, Dao 2023) never holds the
// T_q×T_k scores: Q is cut into row tiles of B_r queries, K and V into column tiles of B_c keys,
// and for each query tile the key tiles arrive in order. The softmax is the online one (Milakov &
// Gimelshein 2018): per query row a running maximum m and a running sum ℓ of e^(s − m), and an
// unnormalized output O, all rescaled by e^(m_old − m_new) whenever a tile raises the maximum:
//
//   for each query tile i (rows r0 … r1−1):         m = −∞, ℓ = 0, O = 0
//     for each key tile j (columns c0 … c1−1):
//       1. S   = Q_i K_jᵀ · scale, masked entries −∞        B_r×B_c   (capped: cap·tanh(S/cap))
//       2. m'  = max(m, rowmax(S))                           B_r
//       3. P   = e^(S − m')                                  B_r×B_c   (0 where masked)
//       4. α   = e^(m − m')                                  B_r       (the rescale)
//       5. ℓ'  = α·ℓ + rowsum(P)                             B_r
//       6. O'  = diag(α)·O + P·V_j                           B_r×d_v
//     O_i = diag(1/ℓ)·O                                      B_r×d_v   (a row with ℓ = 0: zeros)
//
// A tile whose every entry is masked (a causal mask's tiles above the diagonal) is skipped: none of
// 1–6 runs and m, ℓ, O stay as they were. Rows still at m = −∞ take α = 1 and P = 0, so a fully
// masked row ends as zeros, never NaN. Arithmetic in float, as a GPU's accumulators.
//
// [SECTION] Tile sizes
// [SECTION] The tiles
#pragma once

#include "attention.hpp"

#include <vector>

namespace attn {

// [SECTION] Tile sizes ----------------------------------------------------------------------------

struct TileSize {
    int rows = 2, cols = 2;  // B_r × B_c
    friend bool operator==(const TileSize&, const TileSize&) = default;
};

// FlashAttention's Algorithm 1: with on-chip memory of M floats and head size d,
// B_c = ⌈M / 4d⌉ and B_r = min(B_c, d) (Q_i, K_j, V_j and O_i fit together). Clamped to the
// sequence: a tile is never larger than T_q × T_k.
TileSize flash_tile_size(long sram_floats, int d, int T_q, int T_k);

// [SECTION] The tiles -----------------------------------------------------------------------------

// One visit of query tile i and key tile j, in the order computed.
struct FlashTile {
    int i = 0, j = 0;              // tile indices
    int r0 = 0, r1 = 0;            // query rows [r0, r1)
    int c0 = 0, c1 = 0;            // key columns [c0, c1)
    bool skipped = false;          // every entry masked: nothing computed, m, ℓ, O unchanged
    bool partly_masked = false;    // some entries masked (drawn as such)
    Matrix s;                      // (r1−r0)×(c1−c0): Q_i K_jᵀ·scale, masked −∞  (empty when skipped)
    Matrix p;                      // e^(S − m_new), masked 0                      (empty when skipped)
    RowVector m_old, m_new;        // r1−r0: the running maxima before and after the tile
    RowVector l_old, l_new;        // r1−r0: the running sums before and after
    RowVector alpha;               // r1−r0: e^(m_old − m_new), the factor on ℓ and O
    Matrix o;                      // (r1−r0)×d_v: the unnormalized output after the tile
};

struct FlashTrace {
    TileSize tile;
    int T_q = 0, T_k = 0, d_v = 0;
    int row_tiles = 0, col_tiles = 0;  // ⌈T_q / B_r⌉, ⌈T_k / B_c⌉
    std::vector<FlashTile> tiles;      // row_tiles × col_tiles, for i, for j (skipped ones too)
    RowVector m, l;                    // T_q: the final maxima and sums
    Matrix output;                     // T_q×d_v: O / ℓ

    const FlashTile& at(int i, int j) const { return tiles.at(static_cast<size_t>(i * col_tiles + j)); }
};

// q: T_q×d, k: T_k×d, v: T_k×d_v; scale: the factor on q·k (1/√d_k); allowed: T_q×T_k (empty:
// every key allowed). softcap > 0: the scores capped as Gemma 2 does, cap·tanh(s/cap) after the
// scale. Tile sizes below 1 are taken as 1. Throws std::invalid_argument on shapes that do not agree.
FlashTrace flash_attention(const Matrix& q, const Matrix& k, const Matrix& v, float scale, const KeyMask& allowed,
                           TileSize tile, float softcap = 0.0f);

}  // namespace attn
