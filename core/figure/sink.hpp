// sink.hpp: the attention-sink display option of the heatmap and the lines: a map without its
// first key. Today's models put most of many rows' weight on the first token (an attention sink:
// Xiao et al. 2023; Gu et al. 2024's α), which leaves every other cell at the colormap's bottom.
// Left out, and each row renormalized over the keys that remain, the rest of the pattern shows:
//
//   w′(q, k) = w(q, k) / Σ_{j ≥ 1, allowed(q, j)} w(q, j)    for k ≥ 1;   key 0: not allowed
//
// A row whose only key was the first (a causal map's first query) keeps none: all 0, as a fully
// masked row. Only the weights are kept (no scores, Q, K or V): the derived trace is for drawing,
// the figure keeps the true weights (the tooltips read them).
#pragma once

#include "scene.hpp"

namespace attn {

// The option can apply: two keys or more, and a trace that holds its maps whole (not a long one).
bool sink_hideable(const Trace& trace);
// The trace with key 0 masked and every row renormalized over the other allowed keys. Tokens,
// kind, heads, window and the mask otherwise as `trace`'s. Expects sink_hideable(trace).
Trace without_sink(const Trace& trace);

}  // namespace attn
