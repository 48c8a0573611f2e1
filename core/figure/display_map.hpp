// display_map.hpp: a compact copy of one attention map for drawing (the heatmap's textures).
//
// One byte per cell instead of the trace's floats: 0..254 is the position of the value in the
// colormap range [lo, hi], 255 marks a masked cell. Weights use the fixed range [0, 1] (every
// figure on one scale); scaled scores use their min and max over the allowed cells, found by a
// first pass over the rows (so a scores map computes its rows twice; a weights map once).
//
// A level-of-detail pyramid: level l+1 halves both sides of level l (odd sides round up); a
// texel holds the MAX of the allowed texels below it, so one strong weight stays visible when
// the map is zoomed out; it is masked only when every texel below is masked.
//
// Built progressively from attention_rows() in blocks of rows: step() does a bounded amount of
// work, so at T = 8192 (a second or more per head in wasm) the UI keeps drawing while the map
// fills in from the top. The mean over heads sums each block of rows over the heads (no T×T
// float buffer). At T = 8192 the map takes 64 MB at level 0 and 85 MB with its pyramid.
//
// [SECTION] Quantisation
// [SECTION] Map
// [SECTION] Builder
#pragma once

#include "scene.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace attn {

// [SECTION] Quantisation ---------------------------------------------------------------------

inline constexpr std::uint8_t kMaskedTexel = 255;  // a cell the mask forbids
inline constexpr int kTopTexel = 254;               // the value hi; 0 is lo

// Position of x in [lo, hi] as 0..254: (x − lo) · (254 / (hi − lo)) rounded half up, clamped.
// hi <= lo: the middle of the map; x not finite: lo.
inline std::uint8_t quantize(float x, float lo, float hi) {
    if (!(hi > lo)) return kTopTexel / 2;
    const float t = (x - lo) * (static_cast<float>(kTopTexel) / (hi - lo)) + 0.5f;
    if (!(t >= 1.0f)) return 0;  // below the first bin's upper half, or NaN
    if (t >= static_cast<float>(kTopTexel)) return kTopTexel;
    return static_cast<std::uint8_t>(static_cast<int>(t));
}
// The value at the centre of a texel's bin (for the legend and tests).
float dequantize(std::uint8_t texel, float lo, float hi);

// Weights on a log scale: log10 of the weight over [kLogWeightFloor, 1], four decades, so that
// the small weights of a long sequence (about 1/T each) still differ in colour; 0 and anything
// below the floor take the bottom colour. Scores stay linear (they can be negative).
inline constexpr float kLogWeightFloor = 1e-4f;
inline constexpr float kLogWeightDecades = 4.0f;
// The legend's ticks on the log scale, bottom to top: one per decade.
inline constexpr const char* kLogTicks[] = {"0.0001", "0.001", "0.01", "0.1", "1"};
// Position of a value in the colormap, 0..1: linear over [lo, hi] (the middle when hi <= lo),
// or log10 over [kLogWeightFloor, 1]. The heatmap's texels, numbers and the SVG export agree.
inline float colormap_position(float x, float lo, float hi, bool log) {
    if (log) return std::clamp(1.0f + std::log10(std::max(x, kLogWeightFloor)) / kLogWeightDecades, 0.0f, 1.0f);
    return hi > lo ? std::clamp((x - lo) / (hi - lo), 0.0f, 1.0f) : 0.5f;
}

// [SECTION] Map --------------------------------------------------------------------------------

struct DisplayLevel {
    int rows = 0, cols = 0;          // ceil(T_q / 2^l) × ceil(T_k / 2^l)
    int done_rows = 0;               // rows [0, done_rows) hold their final texels
    std::vector<std::uint8_t> texels;  // done_rows × cols, row-major, rows × cols reserved from the start
    std::uint8_t at(int r, int c) const { return texels[static_cast<size_t>(r) * cols + c]; }
};

struct DisplayMap {
    int head = 0;                    // -1: the mean over heads
    bool scores = false;             // scaled scores (else weights)
    bool log = false;                // weights on the log scale (colormap_position)
    float lo = 0.0f, hi = 1.0f;      // the colormap range; known once range_known
    bool range_known = false;
    bool any_masked = false;         // over the rows done
    std::vector<DisplayLevel> levels;  // [0] = one texel per cell; the last is at most kTopLevelSide a side

    int T_q() const { return levels.empty() ? 0 : levels[0].rows; }
    int T_k() const { return levels.empty() ? 0 : levels[0].cols; }
    bool complete() const;
    std::size_t bytes() const;       // texels of every level
};

inline constexpr int kTopLevelSide = 64;  // the pyramid stops once both sides fit this

// Level l's side from level 0's: ceil(n / 2^l).
inline int level_side(int n, int level) { return (n + (1 << level) - 1) >> level; }

// [SECTION] Builder ------------------------------------------------------------------------------

class DisplayMapBuilder {
public:
    // head -1: the mean over heads. scores: the scaled scores (falls back to the weights for a
    // trace without them, i.e. an import). The trace must stay alive and unchanged until done.
    // block_rows: rows per block (0: about a million cells per block).
    // log: weights on the log scale (ignored for scores).
    void start(const Trace& trace, int head, bool scores, int block_rows = 0, bool log = false);
    // Works through blocks of rows until `budget_seconds` have passed or `max_units` units (one
    // head of one block of rows) are done, at least one unit; true once the map is complete.
    bool step(double budget_seconds, int max_units = INT_MAX);
    bool done() const { return trace_ == nullptr || phase_ == Phase::Done; }
    // 0..1 over both passes of a scores map.
    double progress() const;
    const DisplayMap& map() const { return map_; }
    // Floats held while building (one block of rows: weights, scaled scores, the sum over heads).
    std::size_t scratch_bytes() const;
    int block_rows() const { return block_rows_; }

private:
    enum class Phase { Range, Fill, Done };
    void do_unit();
    void finish_block_range();
    void finish_block_fill();
    void build_pyramid_rows();

    const Trace* trace_ = nullptr;
    DisplayMap map_;
    Phase phase_ = Phase::Done;
    int block_rows_ = 1;
    int row_ = 0;       // first row of the current block
    int head_i_ = 0;    // head within the current block (mean over heads)
    int heads_ = 1;     // heads summed per block (1, or all for the mean)
    bool use_scores_ = false;
    long long units_done_ = 0, units_total_ = 1;
    float range_lo_ = 0.0f, range_hi_ = 0.0f;
    std::vector<float> weights_, scaled_, sum_;
};

// The whole map at once (start + step until done).
DisplayMap build_display_map(const Trace& trace, int head, bool scores, bool log = false);

}  // namespace attn
