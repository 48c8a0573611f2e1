// why_view.cpp: the "why" grids (core/figure/why_layout.hpp) of a live model's run — head
// importance, direct logit attribution, the logit lens, activation patching — built once from
// the figure for both places they are drawn: the controls panel (each under its switch,
// compact) and the Why view (all of them at the figure's size, with column labels, for the PNG
// and SVG exports). A cell's tooltip and a lens cell's click are the same in both.
//
// [SECTION] The grids
// [SECTION] Drawing one
// [SECTION] The Why view
#include "view.hpp"
#include "controls.hpp"

#include "import_state.hpp"
#include "text.hpp"
#include "why.hpp"

#include <cmath>
#include <cstdio>

namespace attn {

// [SECTION] The grids ------------------------------------------------------------------------

namespace {

std::string shown(const Tokenizer& t, int id) { return token_text(display_token(t.token(id))); }

std::vector<std::string> numbered(const char* prefix, int n, int first) {
    std::vector<std::string> out;
    for (int i = 0; i < n; ++i) out.push_back(prefix + std::to_string(i + first));
    return out;
}

// A layers × heads grid of numbers.
WhyGrid head_numbers(std::string caption, const std::vector<float>& values, int layers, int heads, bool labels) {
    WhyGrid g;
    g.caption = std::move(caption);
    g.rows = layers, g.cols = heads;
    g.row_labels = numbered("L", layers, 1);
    if (labels) g.col_labels = numbered("H", heads, 1);
    g.values = values;
    return g;
}

}  // namespace

std::vector<WhyShown> why_grids(const AppState& st, bool labels, std::optional<WhyKind> only) {
    std::vector<WhyShown> out;
    const LiveRun* live = st.figure.live.get();
    if (!live) return out;
    const auto wanted = [&](WhyKind k) { return !only || *only == k; };
    const ModelExperiment& ex = st.model.experiment;
    const Tokenizer& t = live->model->decoder_tokenizer();
    const Lang lang = st.lang;
    char caption[400];
    if (const HeadImportance* hi = st.figure.importance.get(); ex.importance && hi && wanted(WhyKind::Importance)) {
        std::snprintf(caption, sizeof caption, tr(lang, Str::ImportanceCaption), shown(t, hi->token).c_str());
        out.push_back({WhyKind::Importance, head_numbers(caption, hi->delta, hi->layers, hi->heads, labels), "importance", 1});
    }
    if (const Attribution* a = st.figure.attribution.get(); ex.attribution && a && wanted(WhyKind::Attribution)) {
        double heads = 0, mlps = 0;
        for (double v : a->head) heads += v;
        for (double v : a->mlp) mlps += v;
        if (a->contrast >= 0)
            std::snprintf(caption, sizeof caption, tr(lang, Str::AttributionCaptionContrast), shown(t, a->target).c_str(),
                          shown(t, a->contrast).c_str(), a->total, heads, mlps, a->embed + a->bias);
        else
            std::snprintf(caption, sizeof caption, tr(lang, Str::AttributionCaption), shown(t, a->target).c_str(), a->total, heads, mlps,
                          a->embed + a->bias);
        out.push_back({WhyKind::Attribution, head_numbers(caption, std::vector<float>(a->head.begin(), a->head.end()), a->layers, a->heads, labels),
                       "attribution", 1});
    }
    if (const Lens* lens = st.figure.lens.get();
        ex.lens && lens && lens->positions == static_cast<int>(live->input.ids.size()) && wanted(WhyKind::Lens)) {
        WhyGrid g;
        g.caption = tr(lang, Str::LensCaption);
        g.rows = lens->layers, g.cols = lens->positions;
        g.row_labels = numbered("L", lens->layers, 0);
        g.row_labels.front() = "emb";
        for (int id : live->input.ids) g.col_labels.push_back(shown(t, id));
        for (const LensCell& c : lens->cells) {
            g.values.push_back(c.top.front().p);
            g.texts.push_back(shown(t, c.top.front().id));
        }
        out.push_back({WhyKind::Lens, std::move(g), "lens", 0});
    }
    const Patching* p = st.figure.patching.get();
    if (!ex.patching || !p || p->positions != static_cast<int>(live->input.ids.size())) return out;
    if (wanted(WhyKind::PatchingHeads)) {
        std::snprintf(caption, sizeof caption, tr(lang, Str::PatchingCaption), p->clean, p->corrupted);
        out.push_back({WhyKind::PatchingHeads, head_numbers(caption, std::vector<float>(p->head.begin(), p->head.end()), p->layers, p->heads, labels),
                       "patching.head", 1});
    }
    if (wanted(WhyKind::PatchingStream)) {
        WhyGrid g;
        g.caption = tr(lang, Str::PatchingStreamCaption);
        g.rows = p->layers + 1, g.cols = p->positions;
        g.row_labels = numbered("L", p->layers + 1, 0);
        if (labels)
            for (int id : live->input.ids) g.col_labels.push_back(shown(t, id));
        g.values.assign(p->resid.begin(), p->resid.end());
        out.push_back({WhyKind::PatchingStream, std::move(g), "patching.resid", 0});
    }
    return out;
}

void why_cell_hovered(AppState& st, WhyKind kind, int row, int col, bool clicked) {
    const LiveRun* live = st.figure.live.get();
    if (!live) return;
    const Tokenizer& t = live->model->decoder_tokenizer();
    const Lang lang = st.lang;
    switch (kind) {
        case WhyKind::Importance: {
            const HeadImportance& hi = *st.figure.importance;
            if (std::isfinite(hi.at(row, col))) ImGui::SetTooltip(tr(lang, Str::ImportanceCell), row + 1, col + 1, static_cast<double>(hi.at(row, col)));
            break;
        }
        case WhyKind::Attribution: {
            const Attribution& a = *st.figure.attribution;
            int most = 0;
            for (int j = 1; j < a.positions; ++j)
                if (std::fabs(a.source(row, col, j)) > std::fabs(a.source(row, col, most))) most = j;
            ImGui::SetTooltip(tr(lang, Str::AttributionCell), row + 1, col + 1, a.at(row, col), shown(t, a.target).c_str(), a.source(row, col, most),
                              most + 1, shown(t, live->input.ids[static_cast<std::size_t>(most)]).c_str());
            break;
        }
        case WhyKind::Lens: {
            const LensCell& cell = st.figure.lens->at(row, col);
            std::string tip;
            char line[200];
            for (const TokenP& k : cell.top) {
                std::snprintf(line, sizeof line, "%5.1f%%  \"%s\"\n", 100.0 * k.p, shown(t, k.id).c_str());
                tip += line;
            }
            std::snprintf(line, sizeof line, tr(lang, Str::LensCell), shown(t, cell.target).c_str(), cell.target_rank, 100.0 * cell.target_p);
            ImGui::SetTooltip("%s%s", tip.c_str(), line);
            if (row > 0 && clicked) {  // that layer's map, the position's row
                select_import_map(st, row - 1, st.imported.import_head);
                st.view = View::Lines;
                st.pinned = {TokenRef::Query, col};
            }
            break;
        }
        case WhyKind::PatchingHeads:
            ImGui::SetTooltip(tr(lang, Str::PatchingHeadCell), row + 1, col + 1, 100.0 * st.figure.patching->at(row, col));
            break;
        case WhyKind::PatchingStream:
            ImGui::SetTooltip(tr(lang, Str::PatchingStreamCell), row, col + 1, shown(t, live->input.ids[static_cast<std::size_t>(col)]).c_str(),
                              100.0 * st.figure.patching->resid_at(row, col));
            break;
    }
}

// [SECTION] Drawing one ----------------------------------------------------------------------

WhyLayout draw_why(ViewContext& ctx, WhyInput& in, const std::vector<WhyShown>& grids, const std::string& prefix) {
    AppState& st = ctx.state;
    const FontsMeasure measure(ctx.fonts);
    in.scale = ctx.scale, in.dark = st.theme == Theme::Dark, in.colormap = st.heatmap.colormap;
    for (const WhyShown& g : grids) in.grids.push_back(g.grid);
    WhyLayout layout = lay_out_why(in, measure);
    draw_items(ImGui::GetWindowDrawList(), layout.items, {}, measure, palette(st.theme), ctx.scale, [](const Item&) {});
    char name[96];
    for (const WhyLayout::Cell& c : layout.cells) {  // PREFIX.KIND.ROW.COLUMN, rows as labelled, columns from 1
        const WhyShown& g = grids[static_cast<std::size_t>(c.grid)];
        std::snprintf(name, sizeof name, "%s.%s.%d.%d", prefix.c_str(), g.probe, c.row + g.first_row, c.col + 1);
        st.probe[name] = {c.box.x0, c.box.y0, c.box.w(), c.box.h()};
    }
    if (ctx.interactive && ImGui::IsWindowHovered()) {
        const ImVec2 mouse = ImGui::GetIO().MousePos;
        if (const WhyLayout::Cell c = layout.hit(mouse.x, mouse.y); c.grid >= 0)
            why_cell_hovered(st, grids[static_cast<std::size_t>(c.grid)].kind, c.row, c.col, ImGui::IsMouseClicked(ImGuiMouseButton_Left));
    }
    return layout;
}

void panel_why_grid(ViewContext& ctx, WhyKind kind) {
    const std::vector<WhyShown> grids = why_grids(ctx.state, false, kind);
    if (grids.empty()) return;
    const ImVec2 at = ImGui::GetCursorScreenPos();
    WhyInput in;
    in.box = {at.x, at.y, at.x + ImGui::GetContentRegionAvail().x, at.y};
    if (kind != WhyKind::Lens) {
        const WhyLayout layout = draw_why(ctx, in, grids, "model");
        ImGui::Dummy(ImVec2(std::max(layout.content_w, 1.0f), layout.content_h));
        return;
    }
    // The lens is wider than the panel: a child that scrolls sideways, as tall as the grid.
    const FontsMeasure measure(ctx.fonts);
    WhyInput sizing = in;
    sizing.scale = ctx.scale, sizing.grids = {grids.front().grid};
    const float h = lay_out_why(sizing, measure).content_h;
    ImGui::BeginChild("##lens", ImVec2(-FLT_MIN, h + ImGui::GetStyle().ScrollbarSize + 4.0f * ctx.scale), false, ImGuiWindowFlags_HorizontalScrollbar);
    const WhyLayout layout = draw_why(ctx, in, grids, "model");
    ImGui::Dummy(ImVec2(layout.content_w, layout.content_h));
    ImGui::EndChild();
}

// [SECTION] The Why view ---------------------------------------------------------------------

struct WhyView::Cache {
    float content_h = 0.0f;
};
WhyView::WhyView() : cache_(std::make_unique<Cache>()) {}
WhyView::~WhyView() = default;
float WhyView::content_height() const { return cache_->content_h; }

WhyInput why_view_input(Box box, float scale) {
    const float pad = 8.0f * scale;
    WhyInput in;
    in.box = {box.x0 + pad, box.y0 + pad, std::min(box.x1, box.x0 + 900.0f * scale) - pad, box.y0 + pad};
    in.scale = scale, in.max_cell = 56.0f, in.token_cell = 60.0f;
    return in;
}

void WhyView::draw(ViewContext& ctx, ImVec2 min, ImVec2 max) {
    AppState& st = ctx.state;
    const std::vector<WhyShown> grids = why_grids(st, true);
    if (grids.empty()) return draw_panels_note(ctx, st.figure.live ? Str::WhyViewNone : Str::WhyLiveOnly, min, max, "why");
    ImGui::SetCursorScreenPos(min);
    ImGui::BeginChild("##why", ImVec2(max.x - min.x, max.y - min.y), false, ImGuiWindowFlags_HorizontalScrollbar);
    const ImVec2 origin = ImGui::GetCursorScreenPos();  // moves with the scroll
    WhyInput in = why_view_input({origin.x, origin.y, origin.x + ImGui::GetContentRegionAvail().x, origin.y}, ctx.scale);
    const WhyLayout layout = draw_why(ctx, in, grids, "why");
    ImGui::Dummy(ImVec2(layout.content_w + 16.0f * ctx.scale, layout.content_h + 16.0f * ctx.scale));  // the scrolled extent
    if (ctx.interactive) cache_->content_h = layout.content_h + 16.0f * ctx.scale;
    if (st.touch) drag_scroll(ctx.panels.drag_scrolling, ctx.scale, true);
    ImGui::EndChild();
}

// The colours (the lens' cells).
void WhyView::toolbar(ViewContext& ctx) {
    toolbar_colormap(ctx);
}

}  // namespace attn
