// top_keys.hpp: each query's strongest keys and each key's strongest queries, for one head,
// so that the lines view draws k lines per token without reading T_q×T_k weights each frame
// (a long trace has no such matrix: scene.hpp "Rows on demand").
//
// Built incrementally from attention_rows() in blocks of rows: advance() does a bounded amount
// of work, so the UI stays responsive while a head of T = 8192 (about a second in wasm) builds.
//
// Order, as a plain sort would give it: weight descending; equal weights by distance to the
// token itself, |k − q|, nearer first, then by the lower index. Equal weights are common in the
// teaching scenes (a repeated word with Q = K = X): the nearest copies give short, local lines
// rather than every line running back to the first copy. Only allowed cells count (a weight of exactly 0 that is allowed does count); a fully masked row has none.
#pragma once

#include "scene.hpp"

#include <cstdint>
#include <vector>

namespace attn {

// Up to this many keys per query (and queries per key) are kept when T is larger than
// kTopAllUpTo; at or below it every allowed cell is kept.
inline constexpr int kTopKeysMax = 32;
inline constexpr int kTopAllUpTo = 64;

// The K a cache keeps for a side of n tokens: all of them up to kTopAllUpTo, else kTopKeysMax.
inline int top_keys_capacity(int n) { return n <= kTopAllUpTo ? n : kTopKeysMax; }

struct TopEntry {
    std::int32_t index = 0;  // key (in a query's list) or query (in a key's list)
    float weight = 0;
    friend bool operator==(const TopEntry&, const TopEntry&) = default;
};

// One head's lists. by_query: T_q lists of up to K_q entries; by_key: T_k lists of up to K_k.
class TopKeys {
public:
    TopKeys() = default;
    TopKeys(const Trace& trace, int head, int keys_per_query, int queries_per_key);

    // Processes rows until at least `min_cells` cells (rows × T_k) are done, or all are, in
    // blocks of at most max(min_cells, 256 K) cells; at least one row. Returns true when the
    // lists are complete.
    bool advance(const Trace& trace, std::int64_t min_cells);
    // Builds everything in one call.
    void build(const Trace& trace) { while (!advance(trace, std::int64_t{1} << 40)) {} }

    bool done() const { return next_row_ >= T_q_; }
    int rows_done() const { return next_row_; }
    float progress() const { return T_q_ == 0 ? 1.0f : static_cast<float>(next_row_) / static_cast<float>(T_q_); }
    int head() const { return head_; }
    int T_q() const { return T_q_; }
    int T_k() const { return T_k_; }
    int keys_per_query() const { return K_q_; }
    int queries_per_key() const { return K_k_; }

    // The strongest keys of query q, strongest first (complete once rows_done() > q).
    const TopEntry* query_top(int q, int* count) const;
    // The strongest queries of key k, strongest first (only once done()).
    const TopEntry* key_top(int k, int* count) const;

    std::size_t bytes() const;

private:
    void add_row(int q, const float* weights, const std::uint8_t* allowed);
    void finish_keys();

    int head_ = 0, T_q_ = 0, T_k_ = 0, K_q_ = 0, K_k_ = 0;
    int next_row_ = 0;
    std::vector<TopEntry> by_query_;            // T_q × K_q
    std::vector<std::int32_t> query_count_;     // T_q
    std::vector<TopEntry> by_key_;              // T_k × K_k; unordered until finish_keys()
    std::vector<std::int32_t> key_count_;       // T_k
    std::vector<float> key_floor_;              // T_k: the weakest weight kept while a list is full
    std::vector<float> block_;                  // rows × T_k weights of the block being read
    std::vector<std::uint8_t> mask_row_;        // a row of a mask that is a rule (KeyMask::row)
};

// Σ of the weights of a set of queries, per key (1×T_k): the rows on demand, so it works in a
// long trace too. Throws std::out_of_range for a query outside 0…T_q−1.
RowVector summed_rows(const Trace& trace, int head, const std::vector<int>& queries);

}  // namespace attn
