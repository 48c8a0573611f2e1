// rope.hpp: rotary position embeddings (RoPE) as transformers computes them
// (modeling_rope_utils.py, apply_rotary_pos_emb with rotate_half), for config.hpp's Rope.
//
//   inv_freq[i], i < dim/2       the pair (i, i + dim/2)'s angle per position, by rope type:
//     default   1 / θ^(2i/dim)
//     linear    default / factor
//     dynamic   default, θ raised to θ·((factor·L/P) − (factor − 1))^(dim/(dim−2)) once the
//               sequence's length L passes max_position_embeddings P (never, within P)
//     llama3    long wavelengths (> original/low_freq_factor) / factor, short ones kept, those
//               between smoothly interpolated
//     yarn      a ramp between interpolation (/ factor) and extrapolation over the dimensions
//               between beta_fast's and beta_slow's correction dims; cos and sin × mscale
//     longrope  1 / (ext[i]·θ^(2i/dim)), ext = long_factor when L > original, else
//               short_factor; cos and sin × √(1 + ln(factor)/ln(original))
//     own_frequencies (Rope::sections): section s's n pairs 1 / θ^(2j/2n), j < n
//   rotation    for a head x at position p, a = p·inv_freq[i] (in double):
//               x′[i]         = x[i]·cos a − x[i + dim/2]·sin a
//               x′[i + dim/2] = x[i + dim/2]·cos a + x[i]·sin a      (dimensions ≥ dim untouched)
//               interleaved (cohere2, glm4): the pair (2i, 2i + 1) in place of (i, i + dim/2)
#pragma once

#include "config.hpp"

#include <vector>

namespace attn {

struct RopeFrequencies {
    std::vector<double> inv_freq;  // dim/2
    double attention_factor = 1;   // cos and sin are scaled by it
};
// For a forward over `length` positions (dynamic and longrope depend on it).
RopeFrequencies rope_frequencies(const Rope& r, int length);

// cos and sin of positions [first, first + T): T × dim/2 each, times the attention factor.
struct RopeTable {
    int dim = 0, first = 0, T = 0;
    bool interleaved = false;  // the Rope's
    std::vector<float> cos, sin;
    float cos_at(int t, int i) const { return cos[static_cast<std::size_t>(t) * (dim / 2) + i]; }
    float sin_at(int t, int i) const { return sin[static_cast<std::size_t>(t) * (dim / 2) + i]; }
};
RopeTable rope_table(const Rope& r, int first, int T, int length);

// Positions in streams (Rope::sections; RunInput::positions): streams[s][t], row t's position in
// stream s (qwen2_5_vl's time, height and width); empty: row t at t in every stream. Rows past
// the streams' end go on from the largest position: row t at t + (largest + 1 − n) in every
// stream (transformers' rope_deltas, for the tokens generated after a prompt of n).
using PositionStreams = std::vector<std::vector<int>>;
int stream_position(const PositionStreams& streams, int stream, int t);
// Each pair's stream: pair i of section s (Rope::sections) is turned by stream s's position (a
// Rope without sections: stream 0's).
std::vector<int> pair_streams(const Rope& r);
// rope_table for rows [first, first + T) at their positions in `streams`.
RopeTable rope_table(const Rope& r, const PositionStreams& streams, int first, int T, int length);

// x: T rows (row stride ld) of `heads` heads of d_head columns each, at the table's rows
// row0 … row0 + T − 1 (positions table.first + row0 …): every head's first table.dim columns
// rotated in place.
void apply_rope(const RopeTable& table, float* x, int row0, int T, int ld, int heads, int d_head);

}  // namespace attn
