// compare_view.cpp: the Compare view: a live model's map of one head on the text and on a
// second text (ModelSession::compare), side by side, and their difference on a diverging
// colormap centred on 0 (core/figure/explain_layout.hpp lays the three out).
#include "view.hpp"
#include "controls.hpp"

#include "explain_layout.hpp"
#include "import_state.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace attn {

// The second text's run as an import (its tokens per stack), made once per run, not per frame.
struct CompareView::Cache {
    std::shared_ptr<const LiveRun> run;
    ImportedAttention attention;
};
CompareView::CompareView() : cache_(std::make_unique<Cache>()) {}
CompareView::~CompareView() = default;

namespace {

std::vector<std::string> shown_tokens(const std::vector<std::string>& tokens) {
    std::vector<std::string> out;
    for (const std::string& t : tokens) out.push_back(token_text(display_token(t)));
    return out;
}

}  // namespace

void CompareView::draw(ViewContext& ctx, ImVec2 min, ImVec2 max) {
    AppState& st = ctx.state;
    const ImportView& im = st.imported;
    const float s = ctx.scale;
    const LiveRun* a = st.figure.live.get();
    const LiveRun* b = st.figure.compare.get();
    const bool one_head = im.show == ImportShow::Head;
    if (!a || !b || !one_head)
        return draw_panels_note(ctx, !a ? Str::CompareLiveOnly : !b ? Str::CompareNoText : Str::ExplainOneHead, min, max, "compare");
    if (!a->input.keep_maps || !b->input.keep_maps)  // a long text's maps are on demand: past this view's cells anyway
        return draw_panels_note(ctx, Str::ExplainTooLong, min, max, "compare");
    const int stack = im.import_stack, layer = im.import_layer, head = im.import_head;
    const Matrix& ma = a->result.stacks[static_cast<size_t>(stack)].layers[static_cast<size_t>(layer)].weights[static_cast<size_t>(head)];
    const Matrix& mb = b->result.stacks[static_cast<size_t>(stack)].layers[static_cast<size_t>(layer)].weights[static_cast<size_t>(head)];
    Cache& c = *cache_;
    if (c.run != st.figure.compare) c.run = st.figure.compare, c.attention = run_attention(*b->model, b->input, b->result);
    const AttentionStack& sa = st.figure.stack(stack);  // the figure's layers are the first text's run
    const AttentionStack& sb = c.attention.stacks[static_cast<size_t>(stack)];
    if (static_cast<long long>(std::max(ma.size(), mb.size())) > kExplainCells)
        return draw_panels_note(ctx, Str::ExplainTooLong, min, max, "compare");
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

// The colours.
void CompareView::toolbar(ViewContext& ctx) {
    toolbar_colormap(ctx);
}

}  // namespace attn
