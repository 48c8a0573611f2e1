// top_keys.cpp: the per-head lists of top_keys.hpp.
//
// Both sides keep a bounded list per token while the rows stream by: a cell enters when the list
// has room or when it is stronger than the list's weakest entry, which it then replaces. Most
// cells lose to the weakest weight (the list's "floor") in one comparison; only a tie with the
// floor needs the full order. Lists are sorted when complete.
#include "top_keys.hpp"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>

namespace attn {
namespace {

// The order of top_keys.hpp, for the list of token `self`: weight, then distance, then index.
bool stronger(const TopEntry& a, const TopEntry& b, std::int32_t self) {
    if (a.weight != b.weight) return a.weight > b.weight;
    const std::int32_t da = std::abs(a.index - self), db = std::abs(b.index - self);
    return da < db || (da == db && a.index < b.index);
}

// Offers (index, w) to the list of token `self`, capacity K, holding `count` entries; `floor`
// is the weakest weight kept once the list is full.
void offer(TopEntry* list, std::int32_t& count, float& floor, int K, std::int32_t self, std::int32_t index, float w) {
    if (count < K) {
        list[count++] = {index, w};
        if (count == K) {
            floor = list[0].weight;
            for (int i = 1; i < K; ++i) floor = std::min(floor, list[i].weight);
        }
        return;
    }
    if (w < floor) return;
    int weakest = 0;
    for (int i = 1; i < K; ++i)
        if (stronger(list[weakest], list[i], self)) weakest = i;
    if (!stronger({index, w}, list[weakest], self)) return;
    list[weakest] = {index, w};
    floor = list[0].weight;
    for (int i = 1; i < K; ++i) floor = std::min(floor, list[i].weight);
}

// Rows per block: about 256 K cells (1 MB of weights), at least one row.
int block_rows(int T_k) { return std::max(1, (256 * 1024) / std::max(T_k, 1)); }

}  // namespace

TopKeys::TopKeys(const Trace& trace, int head, int keys_per_query, int queries_per_key)
    : head_(head), T_q_(trace.T_q()), T_k_(trace.T_k()),
      K_q_(std::clamp(keys_per_query, 0, trace.T_k())), K_k_(std::clamp(queries_per_key, 0, trace.T_q())) {
    if (head < 0 || head >= trace.heads) throw std::out_of_range("head " + std::to_string(head) + " is not in the trace");
    by_query_.resize(static_cast<size_t>(T_q_) * static_cast<size_t>(K_q_));
    query_count_.assign(static_cast<size_t>(T_q_), 0);
    by_key_.resize(static_cast<size_t>(T_k_) * static_cast<size_t>(K_k_));
    key_count_.assign(static_cast<size_t>(T_k_), 0);
    key_floor_.assign(static_cast<size_t>(T_k_), 0.0f);
}

bool TopKeys::advance(const Trace& trace, std::int64_t min_cells) {
    if (done()) return true;
    // Blocks no larger than the work asked for, so a small min_cells bounds the call.
    const int per_block = static_cast<int>(std::clamp<std::int64_t>(min_cells / std::max(T_k_, 1), 1, block_rows(T_k_)));
    std::int64_t cells = 0;
    do {
        const int r0 = next_row_, r1 = std::min(T_q_, r0 + per_block);
        block_.resize(static_cast<size_t>(r1 - r0) * static_cast<size_t>(T_k_));
        attention_rows(trace, head_, r0, r1, block_.data());
        for (int q = r0; q < r1; ++q) add_row(q, block_.data() + static_cast<std::ptrdiff_t>(q - r0) * T_k_, trace.allowed.row(q, mask_row_));
        next_row_ = r1;
        cells += static_cast<std::int64_t>(r1 - r0) * T_k_;
    } while (!done() && cells < min_cells);
    if (done()) {
        finish_keys();
        std::vector<float>().swap(block_);
    }
    return done();
}

void TopKeys::add_row(int q, const float* w, const std::uint8_t* allowed) {
    TopEntry* list = by_query_.data() + static_cast<std::ptrdiff_t>(q) * K_q_;
    std::int32_t count = 0;
    float floor = 0.0f;
    for (int k = 0; k < T_k_; ++k) {
        if (!allowed[k]) continue;
        if (K_q_ > 0) offer(list, count, floor, K_q_, q, k, w[k]);
        if (K_k_ > 0)
            offer(by_key_.data() + static_cast<std::ptrdiff_t>(k) * K_k_, key_count_[static_cast<size_t>(k)],
                  key_floor_[static_cast<size_t>(k)], K_k_, k, q, w[k]);
    }
    std::sort(list, list + count, [q](const TopEntry& a, const TopEntry& b) { return stronger(a, b, q); });
    query_count_[static_cast<size_t>(q)] = count;
}

void TopKeys::finish_keys() {
    for (int k = 0; k < T_k_; ++k) {
        TopEntry* list = by_key_.data() + static_cast<std::ptrdiff_t>(k) * K_k_;
        std::sort(list, list + key_count_[static_cast<size_t>(k)],
                  [k](const TopEntry& a, const TopEntry& b) { return stronger(a, b, k); });
    }
}

const TopEntry* TopKeys::query_top(int q, int* count) const {
    *count = q >= 0 && q < next_row_ ? query_count_[static_cast<size_t>(q)] : 0;
    return by_query_.data() + static_cast<std::ptrdiff_t>(std::clamp(q, 0, std::max(T_q_ - 1, 0))) * K_q_;
}

const TopEntry* TopKeys::key_top(int k, int* count) const {
    *count = done() && k >= 0 && k < T_k_ ? key_count_[static_cast<size_t>(k)] : 0;
    return by_key_.data() + static_cast<std::ptrdiff_t>(std::clamp(k, 0, std::max(T_k_ - 1, 0))) * K_k_;
}

std::size_t TopKeys::bytes() const {
    return (by_query_.size() + by_key_.size()) * sizeof(TopEntry) +
           (query_count_.size() + key_count_.size()) * sizeof(std::int32_t) + key_floor_.size() * sizeof(float) +
           block_.capacity() * sizeof(float);
}

RowVector summed_rows(const Trace& trace, int head, const std::vector<int>& queries) {
    const int T_k = trace.T_k();
    RowVector sum = RowVector::Zero(T_k);
    std::vector<float> row(static_cast<size_t>(T_k));
    for (int q : queries) {
        if (q < 0 || q >= trace.T_q())
            throw std::out_of_range("query row " + std::to_string(q) + " is not in 0…" + std::to_string(trace.T_q() - 1));
        attention_rows(trace, head, q, q + 1, row.data());
        sum += Eigen::Map<const RowVector>(row.data(), T_k);
    }
    return sum;
}

}  // namespace attn
