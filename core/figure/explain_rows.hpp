// explain_rows.hpp: Explain and Compare one query's row at a time (issue 47). Past
// kExplainCells a map has too many cells to draw three of side by side, a long text's maps are
// computed on demand, and its rollout would multiply every layer's whole map (T³ a layer). One
// query's row of each reading is exact and costs rows, not maps:
//   weights         row i of the head's map (the shown trace's attention_rows)
//   value-weighted  value_shares(α_i, n): n_j = ‖v_j·W_o^h‖ (attention_maps.hpp value_norms; a
//                   run whose maps are on demand keeps them per block, KeptHeads::value_norms)
//   rollout         r = e_iᵀ·Ã_l·Ã_{l−1}···Ã_0, Ã_m = rows_normalised(½·mean_h A_m + ½·I) as
//                   attention_rollout defines it: the row vector times each layer's rows, from
//                   the shown layer down to the first. Layer m costs the rows r has reached (the
//                   first, row i alone; then every row up to i in a causal stack, over the keys
//                   they see: about i²/2 weights a head; every row otherwise), so RolloutRow
//                   works a block of rows at a time and the view spreads it over frames with its
//                   progress.
// Laid out as strips over the keys (bars pooled to the width, each the largest value it covers)
// with each reading's strongest keys named under it; web/ui/explain_view.cpp and compare_view.cpp
// draw the items.
//
// [SECTION] Rows of a run's maps
// [SECTION] Rollout of one row
// [SECTION] Layout
#pragma once

#include "explain_layout.hpp"
#include "kernels.hpp"

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace attn {

// [SECTION] Rows of a run's maps ---------------------------------------------------------------

// One stack's maps as rows: rows(ctx, layer, head, r0, r1, c1) is rows r0 … r1 − 1 of that map
// over keys 0 … c1 − 1 ((r1 − r0)×c1; c1 = T_k: whole rows): a run's kept maps, or computed
// again from what it kept (bit for bit the forward's, costing just those entries), an import's
// maps, or a scene's one layer. It holds its run, import or trace weakly: a view's cache never
// keeps a long run's Q and K alive once the figure has let it go (an empty matrix then).
struct RowSource {
    int layers = 0, heads = 0, T_q = 0, T_k = 0;
    bool causal = false;   // no query sees a later key: the rollout's rows stop at the query
    std::string no_rollout;  // why there is no rollout ("cross", "served"), or empty
    std::function<Matrix(kernels::Context&, int layer, int head, int r0, int r1, int c1)> rows;  // nullptr: none
};
// A live run's stack (maps kept or on demand).
RowSource run_rows(std::shared_ptr<const LiveRun> run, int stack);
// The figure's stack: a live run's, an import's, a scene's (one layer: its shown trace). A served
// model's layers come one at a time: no rows (no_rollout "served").
RowSource figure_rows(const Figure& figure, int stack);

// n_j of the figure's shown head (layer `layer` of `stack`, its trace's head `head`), or an empty
// vector: not known (an import has no V or W_o; a served model whose W_o its server does not know
// sends none).
RowVector shown_value_norms(const Figure& figure, int stack, int layer, int head);

// Query q's row of the shown trace's head: its weights (T_k), exact (attention_rows).
RowVector shown_row(const Trace& trace, int head, int q);

// [SECTION] Rollout of one row ---------------------------------------------------------------

class RolloutRow {
public:
    // Row `query` of the rollout through layers 0 … `layer` of the source's stack (which must have
    // rows and no no_rollout). block_rows: rows per unit of work (0: about a million weights).
    // `pool`: threads for a unit's heads (each head's rows on one; summed in head order, so the
    // numbers are the same on any count), or none.
    void start(RowSource source, int layer, int query, int block_rows = 0, kernels::Pool* pool = nullptr);
    // Works through units (one block of rows of one layer, every head) until `budget_seconds`
    // have passed, at least one; true once the row is done.
    bool step(double budget_seconds);
    bool done() const { return layer_ < 0; }
    double progress() const;           // 0 … 1, by the rows each layer is expected to cost
    int layer_at() const { return layer_; }  // the layer being multiplied (−1: done)
    const RowVector& row() const { return r_; }  // T_k, once done

private:
    void do_unit();
    void next_layer();

    RowSource src_;
    kernels::Context ctx_;
    int layer_ = -1, block_ = 1;
    int lo_ = 0, hi_ = 0, at_ = 0;     // the rows r reaches in this layer, [lo_, hi_), and the next to do
    RowVector r_;
    Eigen::Matrix<double, 1, Eigen::Dynamic> next_;  // r·Ã_m as it sums: T terms an entry, in double
    double done_rows_ = 0, total_rows_ = 1;
};

// [SECTION] Layout -----------------------------------------------------------------------------

// One reading of the row: T_k values over `keys`, or `missing` (why not, or what is being computed:
// progress < 1 draws its bar).
struct RowPanel {
    std::string title, caption;
    const RowVector* row = nullptr;
    std::string missing;
    double progress = 1.0;
    const std::vector<std::string>* keys = nullptr;  // as shown (display tokens), T_k
    int query = -1;        // the query's own place among the keys (self-attention), marked; −1: none
    int masked_from = -1;  // keys from here on are masked (a causal query's later keys); −1: none
    bool diverging = false;  // values −range … range (bars up and down from the middle), else 0 … max
    int unscaled = -1;     // a key left out of the bars' scale, its bar clipped at the top (the rollout's own
                           // query: the residual's ½·I; the first key when the sink is hidden); −1: none
};

struct RowsInput {
    Box box;
    float scale = 1.0f;
    bool dark = true;
    int colormap = 0;
    std::string heading;   // which query, and how to pick another
    std::array<RowPanel, kExplainKinds> panels;
    std::string top_label = "strongest";  // before each reading's strongest keys
    std::string max_label = "max";        // before the bars' scale
    bool log = false;      // bars on a log scale, kLogWeightDecades below each strip's largest (display_map.hpp)
    std::string log_label = "log";
    int top = 6;           // keys named under each strip
};

struct RowsLayout {
    std::array<Box, kExplainKinds> strips;                 // each reading's bars (empty when missing)
    std::array<std::vector<int>, kExplainKinds> columns;   // C + 1 key edges: column c covers keys [e[c], e[c + 1])
    float content_h = 0.0f;                                // the height drawn (the view scrolls past the box)
    // The keys under (x, y): {panel, first key, end}, or panel −1.
    struct Hit {
        int panel = -1, k0 = -1, k1 = -1;
    };
    Hit hit(float x, float y) const;
    std::vector<Item> items;
};

// The heading, then per reading: title, caption (wrapped), a strip of bars as wide as the box
// (columns of at least 2 px, each the largest value of the keys it covers, as tall and coloured
// as its share of the strip's largest, or with `log` its log10 over the decades below it; masked
// keys hatched; the query's place marked), key positions under it,
// and the strongest keys ("token" #position value). One column per key while they fit.
RowsLayout lay_out_rows(const RowsInput& input, const TextMeasure& measure);

// The `count` keys of the largest values (by magnitude when signed), largest first; ties by position.
std::vector<int> strongest_keys(const RowVector& row, int count, bool by_magnitude = false);

}  // namespace attn
