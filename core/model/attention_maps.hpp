// attention_maps.hpp: a block's attention maps as questions, not stored arrays (issue 47).
//
// A forward pass keeps, per attention block, what any head's map is recomputed from: the heads'
// Q and K as the scores read them (projected, normed, rotated) and each row's softmax as the
// kernel computed it (kernels::RowStat: its maximum and 1/Σ). A map's region is then
//   weight(i, j) = e(cap(factor·q_i·k_j) − max_i) · inv_i     (kernels::head_region)
// for just the entries asked for: a zoom costs its own entries, never whole rows, and every
// number is the forward's, bit for bit (the kernel's own dot products and exp). Memory per
// block: (T_q·heads + T_k·kv_heads)·d_head floats and T_q·heads RowStats, against T_q·T_k·heads
// floats for the maps themselves.
//
// [SECTION] What a block keeps
// [SECTION] Regions, exact and pooled
// [SECTION] Value norms
#pragma once

#include "attention.hpp"
#include "kernels.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <iterator>
#include <utility>
#include <vector>

namespace attn {

// [SECTION] What a block keeps ---------------------------------------------------------------

struct KeptHeads {
    int heads = 0, kv_heads = 0, d_head = 0;  // query head h reads K head h / (heads / kv_heads)
    int T_q = 0, T_k = 0;
    Matrix q;                                 // T_q×(heads·d_head)
    Matrix k;                                 // T_k×(kv_heads·d_head)
    std::vector<kernels::RowStat> stats;      // heads × T_q, head-major
    float factor = 1.0f, softcap = 0.0f;      // the scores' scale and cap (kernels::HeadArgs)
    std::vector<float> sinks;                 // gpt_oss: each head's sink logit (kernels::HeadArgs::sink), or empty
    bool causal = false;
    int window = 0;                           // > 0: a query sees itself and the window − 1 keys before it
    BothWays both_ways;                       // gemma3: a picture's tokens, each seeing all of them
    std::vector<std::uint8_t> keys;           // T_k of 0/1 (0: hidden), or empty: every key
    std::vector<int> groups;                  // qwen2_5_vl's tower: each token's window (a query sees its
                                              // own window's keys alone), or empty
    Matrix value_norms;                       // heads×T_k: ‖v_j·W_o^h‖ (value_norms below), or empty (a served layer)

    bool empty() const { return T_q == 0; }
    bool allowed(int i, int j) const { return rule_allows(i, j, T_k, causal, window, both_ways, keys, groups); }
    KeyMask mask() const { return {T_q, T_k, KeyRule{causal, window, both_ways, keys, groups}}; }  // the trace's
    std::size_t bytes() const;  // what it holds
};

// [SECTION] Regions, exact and pooled --------------------------------------------------------

// Rows r0 … r1 − 1 × keys c0 … c1 − 1 of a map.
struct MapRegion {
    int r0 = 0, r1 = 0, c0 = 0, c1 = 0;
    int rows() const { return r1 - r0; }
    int cols() const { return c1 - c0; }
    friend bool operator==(const MapRegion&, const MapRegion&) = default;
};
// The whole map of a block.
inline MapRegion whole_map(const KeptHeads& k) { return {0, k.T_q, 0, k.T_k}; }
// Whether the region lies within the map (and is not empty).
bool inside(const KeptHeads& k, const MapRegion& region);

// The exact weights of `region` of head h: rows()×cols(). Throws std::out_of_range for a head
// or a region outside the map (a source answers nothing rather than garbage).
Matrix map_region(kernels::Context& ctx, const KeptHeads& k, int head, const MapRegion& region);

// The region pooled to at most rows × cols blocks (each at least one entry): block (a, b)
// covers rows r0 + ⌊a·n/R⌋ … and keys c0 + ⌊b·m/C⌋ … (n, m the region's rows and keys, R, C the
// blocks), and holds the maximum or the mean of the exact weights it covers. A block whose
// entries are all masked holds 0. Rows are computed a band at a time on ctx's threads: memory
// is a band's, not the region's.
enum class PoolReduce { Max, Mean };
const char* pool_reduce_name(PoolReduce r);  // "max", "mean"
struct PooledMap {
    MapRegion region;
    PoolReduce reduce = PoolReduce::Max;
    std::vector<int> row_edges, col_edges;  // R + 1 and C + 1 positions: block a's rows [row_edges[a], row_edges[a + 1])
    Matrix values;                          // R×C
};
PooledMap map_pooled(kernels::Context& ctx, const KeptHeads& k, int head, const MapRegion& region, int rows, int cols,
                     PoolReduce reduce = PoolReduce::Max);
// The same blocks of a map at hand (a run that kept its maps): the same numbers.
PooledMap pooled(const Matrix& map, const MapRegion& region, int rows, int cols, PoolReduce reduce = PoolReduce::Max);

// [SECTION] Value norms ----------------------------------------------------------------------

// What key j adds to a head's output per unit of weight: n_j = ‖v_j·W_o^h‖ (Kobayashi et al.
// 2020), for every key. v: T_k×d_k, the head's values; w_o_rows: d_k×d, the head's rows of W_o.
//   pass 1: G = W_o^h·W_o^hᵀ                    (d_k×d_k, once)
//   pass 2: n_j = √(v_j·G·v_jᵀ)                 (d_k² a key, not d_k·d; the dot in double)
// The Explain view's value-weighted reading (explain_layout.hpp); a run whose maps are on
// demand keeps them per block (KeptHeads::value_norms): 4·heads bytes a key.
RowVector value_norms(Eigen::Ref<const Matrix> v, Eigen::Ref<const Matrix> w_o_rows);

}  // namespace attn
