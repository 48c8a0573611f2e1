// compare_view.cpp: the Compare view: a live model's map of one head on the text and on a
// second text (ModelSession::compare), side by side, and their difference on a diverging
// colormap centred on 0 (core/figure/explain_layout.hpp lays the three out). Past
// kExplainCells (a long text's maps on demand among them), one query's row on each text and
// their difference (core/figure/explain_rows.hpp).
#include "view.hpp"
#include "controls.hpp"

#include "explain_layout.hpp"
#include "explain_rows.hpp"
#include "import_state.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace attn {

// The second text's run as an import (its tokens per stack), made once per run, not per frame;
// past kExplainCells the query's rows on both texts, made when the runs, the map or the query change.
struct CompareView::Cache {
    std::weak_ptr<const LiveRun> run;  // (weak: the figure holds the runs, a long one's Q and K hundreds of MB)
    ImportedAttention attention;
    std::weak_ptr<const LiveRun> row_a, row_b;
    int stack = -1, layer = -1, head = -1, query = -1;
    RowVector a, b, diff;                       // diff empty: the texts' lengths differ
    std::vector<std::string> keys_a, keys_b;    // display tokens
};
CompareView::CompareView() : cache_(std::make_unique<Cache>()) {}
CompareView::~CompareView() = default;

namespace {

// Whether the view reads one query's row: a text's maps on demand, or either map past kExplainCells.
bool compares_rows(const LiveRun& a, const LiveRun& b, const AttentionStack& sa, const AttentionStack& sb) {
    const auto cells = [](const AttentionStack& x) { return static_cast<long long>(x.queries.size()) * static_cast<long long>(x.keys.size()); };
    return !a.input.keep_maps || !b.input.keep_maps || std::max(cells(sa), cells(sb)) > kExplainCells;
}

std::vector<std::string> shown_tokens(const std::vector<std::string>& tokens) {
    std::vector<std::string> out;
    for (const std::string& t : tokens) out.push_back(token_text(display_token(t)));
    return out;
}

}  // namespace

void CompareView::draw(ViewContext& ctx, ImVec2 min, ImVec2 max) {
    AppState& st = ctx.state;
    st.steps_said.clear();  // the twin's words of one query's rows (draw_rows), or none
    const ImportView& im = st.imported;
    const float s = ctx.scale;
    const LiveRun* a = st.figure.live.get();
    const LiveRun* b = st.figure.compare.get();
    const bool one_head = im.show == ImportShow::Head;
    if (!a || !b || !one_head)
        return draw_panels_note(ctx, !a ? Str::CompareLiveOnly : !b ? Str::CompareNoText : Str::ExplainOneHead, min, max, "compare");
    const int stack = im.import_stack, layer = im.import_layer, head = im.import_head;
    Cache& c = *cache_;
    if (c.run.lock() != st.figure.compare) c.run = st.figure.compare, c.attention = run_attention(*b->model, b->input, b->result);
    const AttentionStack& sa = st.figure.stack(stack);  // the figure's layers are the first text's run
    const AttentionStack& sb = c.attention.stacks[static_cast<size_t>(stack)];
    if (compares_rows(*a, *b, sa, sb)) {  // one query's row
        const int T_a = static_cast<int>(sa.queries.size()), T_b = static_cast<int>(sb.queries.size());
        const int q = row_query(st, T_a), q_b = std::min(q, T_b - 1);
        const bool same_runs = c.row_a.lock() == st.figure.live && c.row_b.lock() == st.figure.compare;
        if (!same_runs || c.stack != stack || c.layer != layer || c.head != head || c.query != q) {
            if (!same_runs || c.stack != stack) {
                c.keys_a.clear(), c.keys_b.clear();
                for (const std::string& k : sa.keys) c.keys_a.push_back(display_token(k));
                for (const std::string& k : sb.keys) c.keys_b.push_back(display_token(k));
            }
            c.row_a = st.figure.live, c.row_b = st.figure.compare, c.stack = stack, c.layer = layer, c.head = head, c.query = q;
            kernels::Context one;
            const RowSource ra = run_rows(st.figure.live, stack), rb = run_rows(st.figure.compare, stack);
            c.a = ra.rows(one, layer, head, q, q + 1, ra.T_k);
            c.b = rb.rows(one, layer, head, q_b, q_b + 1, rb.T_k);
            c.diff = c.a.size() == c.b.size() ? RowVector(c.a - c.b) : RowVector();
        }
        RowsInput in;
        in.scale = s;
        in.dark = st.theme == Theme::Dark;
        in.colormap = st.heatmap.colormap;
        in.top_label = tr(st.lang, Str::RowsStrongest), in.max_label = tr(st.lang, Str::RowsMax);
        in.log = st.heatmap.log_scale, in.log_label = tr(st.lang, Str::LogScale);
        char heading[512];
        std::snprintf(heading, sizeof heading, tr(st.lang, Str::CompareRowsHeading), token_text(display_token(sa.queries[static_cast<size_t>(q)])).c_str(), q);
        in.heading = heading;
        const bool self = sa.is_self(), causal = st.figure.causal[static_cast<size_t>(stack)];
        const auto excerpt = [](const std::string& text) {  // a long text's first words
            std::string e = text.substr(0, 120);
            while (!e.empty() && e.size() < text.size() && (static_cast<unsigned char>(e.back()) & 0xC0) == 0x80) e.pop_back();
            if (!e.empty() && e.size() < text.size()) e.pop_back(), e += "\xe2\x80\xa6";
            return e;
        };
        char lengths[160];
        std::snprintf(lengths, sizeof lengths, tr(st.lang, Str::CompareLengths), T_a, T_b);
        const std::array<RowPanel, kExplainKinds> panels = {
            RowPanel{tr(st.lang, Str::CompareA), excerpt(st.model.text), &c.a, "", 1.0, &c.keys_a, self ? q : -1, causal ? q + 1 : -1, false},
            RowPanel{tr(st.lang, Str::CompareB), excerpt(st.model.compare), &c.b, "", 1.0, &c.keys_b, self ? q_b : -1, causal ? q_b + 1 : -1, false},
            RowPanel{tr(st.lang, Str::CompareDiff), tr(st.lang, Str::CompareDiffRowCap), c.diff.size() ? &c.diff : nullptr, lengths, 1.0, &c.keys_a,
                     self ? q : -1, causal ? q + 1 : -1, true}};
        in.panels = panels;
        if (st.sink_hidden) in.panels[0].unscaled = in.panels[1].unscaled = in.panels[2].unscaled = 0;
        draw_rows(ctx, in, min, max, "compare", self);
        return;
    }
    const Matrix& ma = a->result.stacks[static_cast<size_t>(stack)].layers[static_cast<size_t>(layer)].weights[static_cast<size_t>(head)];
    const Matrix& mb = b->result.stacks[static_cast<size_t>(stack)].layers[static_cast<size_t>(layer)].weights[static_cast<size_t>(head)];
    const bool same = ma.rows() == mb.rows() && ma.cols() == mb.cols();
    const Matrix diff = same ? Matrix(ma - mb) : Matrix();
    const float range = same ? std::max(diff.cwiseAbs().maxCoeff(), 1e-3f) : 1.0f;
    ExplainInput in;
    in.scale = s;
    in.dark = st.theme == Theme::Dark;
    in.colormap = st.heatmap.colormap;
    MaskSpec causal;
    causal.causal = true;
    const MaskMatrix causal_a = st.figure.causal[static_cast<size_t>(stack)] ? combine_masks(causal, static_cast<int>(ma.rows()), static_cast<int>(ma.cols())) : MaskMatrix();
    const MaskMatrix causal_b = st.figure.causal[static_cast<size_t>(stack)] ? combine_masks(causal, static_cast<int>(mb.rows()), static_cast<int>(mb.cols())) : MaskMatrix();
    char lengths[160];
    std::snprintf(lengths, sizeof lengths, tr(st.lang, Str::CompareLengths), static_cast<int>(ma.rows()), static_cast<int>(mb.rows()));
    in.panels[0] = {tr(st.lang, Str::CompareA), st.model.text, &ma, "", shown_tokens(sa.queries), shown_tokens(sa.keys), causal_a};
    in.panels[1] = {tr(st.lang, Str::CompareB), st.model.compare, &mb, "", shown_tokens(sb.queries), shown_tokens(sb.keys), causal_b};
    in.panels[2] = {tr(st.lang, Str::CompareDiff), tr(st.lang, Str::CompareDiffCap), same ? &diff : nullptr, lengths,
                    shown_tokens(sa.queries), shown_tokens(sa.keys), causal_a, true, range};
    in.legend = tr(st.lang, Str::LegendWeight);
    in.diverging_legend = tr(st.lang, Str::CompareDiff);
    draw_panels(ctx, in, min, max, "compare", [&](const ExplainLayout& layout) {
        if (!ctx.interactive || !ImGui::IsWindowHovered()) return;
        const ExplainLayout::Hit hit = layout.hit(ImGui::GetIO().MousePos.x, ImGui::GetIO().MousePos.y);
        if (hit.map < 0) return;
        const Matrix& m = hit.map == 0 ? ma : hit.map == 1 ? mb : diff;
        const AttentionStack& tokens = hit.map == 1 ? sb : sa;
        if (hit.query >= m.rows() || hit.key >= m.cols()) return;
        ImGui::SetTooltip("%s \xe2\x86\x92 %s  %+.3f", token_text(display_token(tokens.queries[static_cast<size_t>(hit.query)])).c_str(),
                          token_text(display_token(tokens.keys[static_cast<size_t>(hit.key)])).c_str(), static_cast<double>(m(hit.query, hit.key)));
    });
}

// [SECTION] Toolbar -----------------------------------------------------------------------------

// The query of a row (past kExplainCells), and the colours.
void CompareView::toolbar(ViewContext& ctx) {
    AppState& st = ctx.state;
    const Cache& c = *cache_;  // the second text's tokens, once the view has drawn it
    if (st.figure.live && st.figure.compare && c.run.lock() == st.figure.compare && st.figure.has(Detail::Layers)) {
        const int stack = st.imported.import_stack;
        const AttentionStack& sa = st.figure.stack(stack);
        if (compares_rows(*st.figure.live, *st.figure.compare, sa, c.attention.stacks[static_cast<size_t>(stack)]))
            rows_toolbar(ctx, static_cast<int>(sa.queries.size()));
    }
    toolbar_colormap(ctx);
}

}  // namespace attn
