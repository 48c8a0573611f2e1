// induction.hpp: why an induction head's query looks where it does, from one live run's maps
// (Olsson et al. 2022, "In-context learning and induction heads"). On a repeated text the
// query token t at position q looks at the token *after* t's earlier occurrence e, key e + 1.
// Nothing in t's own embedding says where that is: an earlier layer's previous-token head has
// moved t into the residual stream at e + 1 (it attends from e + 1 to e), and the induction
// head's W_K reads what it moved there, so the K at e + 1 says "my previous token is t", which
// is what the Q of t asks for. The K is composed from an earlier head's output: K-composition.
//
// Read from the maps alone (the Steps view's words under the figure, web/ui/steps_view.cpp):
//   earlier  the latest e < q with ids[e] == ids[q]                     (−1: t is new here)
//   top      argmax_k A[q][k] of the head, and its weight
//   after    A[q][e + 1]: the weight an induction head would put on the key after the copy
//   writer   among the earlier layers' heads, the one with the largest A'[e + 1][e], and that
//            weight: the previous-token head that moved t to e + 1
#pragma once

#include "import.hpp"

#include <optional>
#include <vector>

namespace attn {

struct InductionWhy {
    int query = 0;
    int earlier = -1;          // −1: the query's token has not appeared before it
    int top = 0;               // the key with the largest weight (the lowest on ties)
    float top_weight = 0.0f;
    float after_weight = 0.0f; // A[query][earlier + 1]; 0 without an earlier occurrence
    int writer_layer = -1, writer_head = -1;  // the earlier layers' previous-token head (−1: none, layer 0)
    float writer_weight = 0.0f;               // its A[earlier + 1][earlier]
    bool matched() const { return earlier >= 0 && top == earlier + 1; }
};

// The reading of query `query` of map (layer, head) of a causal self-attention stack whose
// tokens are `ids` (ids.size() == the stack's T). nullopt when the stack is not one sequence,
// the ids do not fit it, or the query is out of range.
std::optional<InductionWhy> induction_why(const AttentionStack& stack, const std::vector<int>& ids, int layer, int head,
                                          int query);

// The query the words are about when the reader has not chosen one: the last query that matches
// (top == earlier + 1) with an earlier layer's writer, else the last query. −1: no queries.
int induction_example_query(const AttentionStack& stack, const std::vector<int>& ids, int layer, int head);

}  // namespace attn
