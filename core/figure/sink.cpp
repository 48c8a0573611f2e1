// sink.cpp: a map without its first key (sink.hpp).
#include "sink.hpp"

namespace attn {

bool sink_hideable(const Trace& tr) { return tr.T_k() >= 2 && !tr.is_long() && tr.allowed.size() > 0; }

Trace without_sink(const Trace& tr) {
    Trace out;
    out.kind = tr.kind;
    out.queries = tr.queries, out.keys = tr.keys;
    out.heads = tr.heads, out.d_k = tr.d_k, out.d_model = tr.d_model;
    out.scale = tr.scale;
    out.window = tr.window;
    MaskMatrix allowed = tr.allowed.cells();
    allowed.col(0).setZero();
    out.allowed = std::move(allowed);
    const Eigen::Index T_q = tr.T_q(), T_k = tr.T_k();
    for (const HeadTrace& head : tr.attention.heads) {
        // weights: T_q×T_k → T_q×T_k. Per row: pass 1 the sum over the allowed keys but the first
        // (in double: a row of 8192 small weights); pass 2 each divided by it.
        HeadTrace h;
        h.weights = Matrix::Zero(T_q, T_k);
        for (Eigen::Index q = 0; q < T_q; ++q) {
            double sum = 0;
            for (Eigen::Index k = 1; k < T_k; ++k)
                if (out.allowed(q, k)) sum += head.weights(q, k);
            if (!(sum > 0)) continue;  // no key left, or all of them at 0: the row stays 0
            const float inv = static_cast<float>(1.0 / sum);
            for (Eigen::Index k = 1; k < T_k; ++k)
                if (out.allowed(q, k)) h.weights(q, k) = head.weights(q, k) * inv;
        }
        out.attention.heads.push_back(std::move(h));
    }
    return out;
}

}  // namespace attn
