// display_map.cpp: the heatmap's compact display copy (display_map.hpp).
#include "display_map.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>

namespace attn {

// [SECTION] Quantisation ---------------------------------------------------------------------

float dequantize(std::uint8_t texel, float lo, float hi) {
    return lo + (hi - lo) * static_cast<float>(texel) / static_cast<float>(kTopTexel);
}

// [SECTION] Map --------------------------------------------------------------------------------

bool DisplayMap::complete() const {
    return std::all_of(levels.begin(), levels.end(), [](const DisplayLevel& l) { return l.done_rows == l.rows; });
}

std::size_t DisplayMap::bytes() const {
    std::size_t n = 0;
    for (const DisplayLevel& l : levels) n += l.texels.capacity();  // held from the start
    return n;
}

// [SECTION] Builder ------------------------------------------------------------------------------

void DisplayMapBuilder::start(const Trace& trace, int head, bool scores, int block_rows, bool log) {
    trace_ = &trace;
    map_ = DisplayMap{};
    const int T_q = trace.T_q(), T_k = trace.T_k();
    const bool mean = head < 0 || head >= trace.heads;
    map_.head = mean ? -1 : head;
    heads_ = mean ? std::max(trace.heads, 1) : 1;
    // Imports keep the weights only; a long trace computes its scaled scores again.
    const HeadTrace& first = trace.attention.heads[static_cast<size_t>(mean ? 0 : head)];
    use_scores_ = scores && (trace.is_long() || first.scaled.size() > 0);
    map_.scores = use_scores_;
    map_.log = log && !use_scores_;
    for (int l = 0;; ++l) {
        DisplayLevel level;
        level.rows = level_side(T_q, l), level.cols = level_side(T_k, l);
        // Held now, its pages touched only as its rows are done: a zeroed 85 MB at T = 8192 took
        // 0.3 s in one frame on this VM (first touches of new memory), natively and in the page.
        level.texels.reserve(static_cast<size_t>(level.rows) * level.cols);
        map_.levels.push_back(std::move(level));
        if (std::max(level_side(T_q, l), level_side(T_k, l)) <= kTopLevelSide) break;
    }
    // About a million floats per buffer: 32 rows at T_k = 8192, a few ms of work in wasm.
    block_rows_ = std::clamp(block_rows > 0 ? block_rows : 262144 / std::max(T_k, 1), 1, std::max(T_q, 1));
    const size_t cells = static_cast<size_t>(block_rows_) * T_k;
    weights_.assign(cells, 0.0f);
    scaled_.assign(use_scores_ ? cells : 0, 0.0f);
    sum_.assign(heads_ > 1 ? cells : 0, 0.0f);
    row_ = 0, head_i_ = 0, units_done_ = 0;
    const long long blocks = (T_q + block_rows_ - 1) / block_rows_;
    units_total_ = std::max(1LL, blocks * heads_ * (use_scores_ ? 2 : 1));
    range_lo_ = std::numeric_limits<float>::infinity(), range_hi_ = -range_lo_;
    if (use_scores_) {
        phase_ = Phase::Range;
    } else {
        map_.lo = 0.0f, map_.hi = 1.0f, map_.range_known = true;  // weights: one fixed scale
        phase_ = Phase::Fill;
    }
    if (T_q == 0 || T_k == 0) phase_ = Phase::Done;
}

double DisplayMapBuilder::progress() const {
    if (done()) return 1.0;
    return static_cast<double>(units_done_) / static_cast<double>(units_total_);
}

std::size_t DisplayMapBuilder::scratch_bytes() const {
    return (weights_.capacity() + scaled_.capacity() + sum_.capacity()) * sizeof(float);
}

bool DisplayMapBuilder::step(double budget_seconds, int max_units) {
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    for (int units = 0; !done() && units < max_units; ++units) {
        do_unit();
        if (std::chrono::duration<double>(clock::now() - t0).count() >= budget_seconds) break;
    }
    if (done()) {  // the scratch is no longer needed
        std::vector<float>().swap(weights_), std::vector<float>().swap(scaled_), std::vector<float>().swap(sum_);
    }
    return done();
}

void DisplayMapBuilder::do_unit() {
    const Trace& t = *trace_;
    const int T_q = t.T_q(), T_k = t.T_k();
    const int r0 = row_, r1 = std::min(row_ + block_rows_, T_q);
    const size_t cells = static_cast<size_t>(r1 - r0) * T_k;
    const int h = map_.head < 0 ? head_i_ : map_.head;
    attention_rows(t, h, r0, r1, weights_.data(), use_scores_ ? scaled_.data() : nullptr);
    const float* src = use_scores_ ? scaled_.data() : weights_.data();
    if (heads_ > 1) {
        // The same operations as a plain loop: sum = 0; sum += x_h for each head; sum / heads.
        if (head_i_ == 0) std::fill_n(sum_.begin(), cells, 0.0f);
        for (size_t i = 0; i < cells; ++i) sum_[i] += src[i];
    }
    ++units_done_;
    if (++head_i_ < heads_) return;
    head_i_ = 0;
    if (heads_ > 1) {
        const float n = static_cast<float>(heads_);
        for (size_t i = 0; i < cells; ++i) sum_[i] = sum_[i] / n;
    }
    if (phase_ == Phase::Range) finish_block_range();
    else finish_block_fill();
    row_ = r1;
    if (row_ < T_q) return;
    row_ = 0;
    if (phase_ == Phase::Range) {
        if (std::isfinite(range_lo_)) map_.lo = range_lo_, map_.hi = range_hi_;
        else map_.lo = 0.0f, map_.hi = 0.0f;  // nothing allowed: every texel is masked anyway
        map_.range_known = true;
        phase_ = Phase::Fill;
    } else {
        phase_ = Phase::Done;
    }
}

void DisplayMapBuilder::finish_block_range() {
    const Trace& t = *trace_;
    const int T_k = t.T_k(), r1 = std::min(row_ + block_rows_, t.T_q());
    const float* values = heads_ > 1 ? sum_.data() : scaled_.data();
    std::vector<std::uint8_t> scratch;
    for (int r = row_; r < r1; ++r) {
        const std::uint8_t* allowed = t.allowed.row(r, scratch);
        for (int k = 0; k < T_k; ++k) {
            const float x = values[static_cast<size_t>(r - row_) * T_k + k];
            if (allowed[k] == 0 || !std::isfinite(x)) continue;
            range_lo_ = std::min(range_lo_, x), range_hi_ = std::max(range_hi_, x);
        }
    }
}

void DisplayMapBuilder::finish_block_fill() {
    const Trace& t = *trace_;
    const int T_k = t.T_k(), r1 = std::min(row_ + block_rows_, t.T_q());
    const float* values = heads_ > 1 ? sum_.data() : use_scores_ ? scaled_.data() : weights_.data();
    DisplayLevel& level = map_.levels[0];
    level.texels.resize(static_cast<size_t>(r1) * T_k);  // within its capacity: no texel moves
    // The log scale quantises log10 of the weight over [−decades, 0] (colormap_position).
    const float lo = map_.log ? -kLogWeightDecades : map_.lo, hi = map_.log ? 0.0f : map_.hi;
    const float floor = kLogWeightFloor;
    bool masked = false;
    std::vector<std::uint8_t> scratch;
    for (int r = row_; r < r1; ++r) {
        std::uint8_t* out = level.texels.data() + static_cast<size_t>(r) * T_k;
        const float* in = values + static_cast<size_t>(r - row_) * T_k;
        const std::uint8_t* allowed = t.allowed.row(r, scratch);
        for (int k = 0; k < T_k; ++k) {
            const float x = map_.log ? std::log10(std::max(in[k], floor)) : in[k];
            out[k] = allowed[k] ? quantize(x, lo, hi) : kMaskedTexel;
            masked |= allowed[k] == 0;
        }
    }
    map_.any_masked |= masked;
    level.done_rows = r1;
    build_pyramid_rows();
}

void DisplayMapBuilder::build_pyramid_rows() {
    // A row of level l is final once both its rows below are (or the last one, for odd sides).
    for (size_t l = 1; l < map_.levels.size(); ++l) {
        const DisplayLevel& below = map_.levels[l - 1];
        DisplayLevel& level = map_.levels[l];
        const int target = below.done_rows == below.rows ? level.rows : below.done_rows / 2;
        // Shifted by one (masked 255 → 0, values v → v + 1) the max over allowed texels is a
        // plain max, and 0 (every texel masked) shifts back to 255.
        auto lift = [](std::uint8_t v) { return static_cast<std::uint8_t>(v + 1); };
        level.texels.resize(static_cast<size_t>(target) * level.cols);  // target never falls
        for (int r = level.done_rows; r < target; ++r) {
            const std::uint8_t* a = below.texels.data() + static_cast<size_t>(2 * r) * below.cols;
            const std::uint8_t* b = 2 * r + 1 < below.rows ? a + below.cols : a;
            std::uint8_t* out = level.texels.data() + static_cast<size_t>(r) * level.cols;
            const int pairs = below.cols / 2;
            for (int c = 0; c < pairs; ++c) {
                const std::uint8_t m = std::max(std::max(lift(a[2 * c]), lift(a[2 * c + 1])),
                                                std::max(lift(b[2 * c]), lift(b[2 * c + 1])));
                out[c] = static_cast<std::uint8_t>(m - 1);
            }
            if (below.cols % 2) {
                const int c = below.cols - 1;
                out[c / 2] = static_cast<std::uint8_t>(std::max(lift(a[c]), lift(b[c])) - 1);
            }
        }
        level.done_rows = std::max(level.done_rows, target);
    }
}

DisplayMap build_display_map(const Trace& trace, int head, bool scores, bool log) {
    DisplayMapBuilder builder;
    builder.start(trace, head, scores, 0, log);
    while (!builder.step(1e30)) {}
    return builder.map();
}

}  // namespace attn
