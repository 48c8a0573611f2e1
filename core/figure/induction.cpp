// induction.cpp: see induction.hpp.
#include "induction.hpp"

namespace attn {

std::optional<InductionWhy> induction_why(const AttentionStack& stack, const std::vector<int>& ids, int layer, int head,
                                          int query) {
    const int T = static_cast<int>(ids.size());
    if (!stack.is_self() || T != static_cast<int>(stack.queries.size()) || T != static_cast<int>(stack.keys.size()) || query < 0 ||
        query >= T || layer < 0 || layer >= stack.layers || head < 0 || head >= stack.heads || stack.maps.empty())
        return std::nullopt;  // (no maps: a long text's are on demand, one layer at a time)
    const Matrix& A = stack.map(layer, head);
    InductionWhy why;
    why.query = query;
    for (int k = 1; k < T; ++k)
        if (A(query, k) > A(query, why.top)) why.top = k;
    why.top_weight = A(query, why.top);
    for (int e = query - 1; e >= 0 && why.earlier < 0; --e)
        if (ids[static_cast<size_t>(e)] == ids[static_cast<size_t>(query)]) why.earlier = e;
    if (why.earlier < 0) return why;
    const int next = why.earlier + 1;  // ≤ query
    why.after_weight = A(query, next);
    for (int l = 0; l < layer; ++l)
        for (int h = 0; h < stack.heads; ++h)
            if (const float w = stack.map(l, h)(next, why.earlier); why.writer_layer < 0 || w > why.writer_weight)
                why.writer_layer = l, why.writer_head = h, why.writer_weight = w;
    return why;
}

int induction_example_query(const AttentionStack& stack, const std::vector<int>& ids, int layer, int head) {
    const int T = static_cast<int>(ids.size());
    for (int q = T - 1; q >= 0; --q)
        if (const std::optional<InductionWhy> why = induction_why(stack, ids, layer, head, q); why && why->matched() && why->writer_layer >= 0)
            return q;
    return T - 1;
}

}  // namespace attn
