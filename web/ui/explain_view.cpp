// explain_view.cpp: the Explain view (core/figure/explain_layout.hpp): one head's attention
// read three ways, side by side in one colour scale, with captions; the hover's tooltip gives
// the three numbers of the cell under the mouse. Past kExplainCells (a long text's maps on demand
// among them), one query's row read the three ways (core/figure/explain_rows.hpp), the rollout
// computed a block of rows a frame.
//
// [SECTION] The three maps
// [SECTION] One query's row
// [SECTION] Drawing the panels
// [SECTION] Toolbar
#include "view.hpp"
#include "controls.hpp"

#include "panels.hpp"
#include "explain_layout.hpp"
#include "explain_rows.hpp"
#include "import_state.hpp"

#include <algorithm>
#include <cstdio>

namespace attn {

// The three maps of the shown head, computed when the figure, the head or the layer changes;
// past kExplainCells the query's three rows, the rollout's as it goes.
struct ExplainView::Cache {
    const void* shown = nullptr;
    int revision = -1, head = -1, stack = -1, layer = -1, query = -1;
    bool rows = false;
    Explanation explanation;
    RowVector weights, valued;   // rows: the query's weights and value-weighted shares (empty: not known)
    std::string valued_why, rollout_why;  // why not (explain_rows.hpp's keys), or empty
    RolloutRow rollout;
};
ExplainView::ExplainView() : cache_(std::make_unique<Cache>()) {}
ExplainView::~ExplainView() = default;

namespace {

// The head the view explains: a layered figure's chosen map (one head, not an aggregate), else
// the Steps view's head. -1: none to explain.
int explained_head(const AppState& st) {
    const Trace& t = st.figure.trace();
    if (st.figure.has(Detail::Layers)) return st.imported.show == ImportShow::Head ? std::clamp(st.imported.import_head, 0, t.heads - 1) : -1;
    return std::clamp(st.steps.head, 0, t.heads - 1);
}

const char* why_text(Lang lang, const std::string& why) {
    if (why == "cross") return tr(lang, Str::ExplainNoRollout);
    if (why == "served") return tr(lang, Str::RowsServed);
    if (why == "words") return tr(lang, Str::RowsWords);
    return tr(lang, Str::ExplainNoProjections);
}

constexpr Str kTitles[kExplainKinds] = {Str::ExplainWeights, Str::ExplainValueWeighted, Str::ExplainRollout};
constexpr Str kCaptions[kExplainKinds] = {Str::ExplainWeightsCap, Str::ExplainValueWeightedCap, Str::ExplainRolloutCap};

}  // namespace

// [SECTION] The three maps -------------------------------------------------------------------------

void ExplainView::draw(ViewContext& ctx, ImVec2 min, ImVec2 max) {
    AppState& st = ctx.state;
    st.steps_said.clear();  // the twin's words of one query's rows (draw_rows), or none
    if (st.figure.empty()) return;
    const Trace& t = st.figure.trace();
    const int head = explained_head(st);
    const bool layered = st.figure.has(Detail::Layers);
    const int stack = layered ? st.imported.import_stack : 0, layer = layered ? st.imported.import_layer : 0;
    const float s = ctx.scale;
    if (head < 0) return draw_panels_note(ctx, Str::ExplainOneHead, min, max, "explain");
    Cache& c = *cache_;
    const bool rows = reads_rows(t);
    const int query = rows ? row_query(st, t.T_q()) : -1;
    // The same map and query (the maps: query −1); the rollout is every head's: another head keeps it.
    const bool same_rows = c.shown == st.figure.shown.get() && c.revision == st.revision && c.stack == stack && c.layer == layer &&
                           c.rows == rows && c.query == query;
    if (!same_rows || c.head != head) {
        if (rows) {
            c.weights = shown_row(t, head, query);
            const RowVector norms = shown_value_norms(st.figure, stack, layer, head);
            c.valued = norms.size() == t.T_k() ? value_shares(c.weights, norms) : RowVector();
            c.valued_why = st.figure.remote ? "served" : "projections";
            if (!same_rows) {
                RowSource src = figure_rows(st.figure, stack);
                c.rollout_why = src.no_rollout;
                // merged words (the rollout is of tokens); a sink's column (gpt-oss) only adds a key, the row's last
                if (c.rollout_why.empty() && src.T_q != t.T_q()) c.rollout_why = "words";
                if (c.rollout_why.empty()) c.rollout.start(std::move(src), layer, query, 0, st.model.pool.get());  // the model's threads
            }
        } else {
            c.explanation = explain(st.figure, head, stack, layer);
        }
        c.shown = st.figure.shown.get(), c.revision = st.revision, c.head = head, c.stack = stack, c.layer = layer;
        c.rows = rows, c.query = query;
    }
    if (rows) {  // one query's row
        const int q = c.query;
        // Off screen (a PNG) a bounded wait: a long text's row can take a minute (BENCHMARKS.md), and
        // the export is of what is shown, its progress included.
        constexpr double kOffScreenSeconds = 2.0;
        if (c.rollout_why.empty()) c.rollout.step(ctx.interactive ? build_budget_seconds() : kOffScreenSeconds);
        RowsInput in;
        in.scale = ctx.scale;
        in.dark = st.theme == Theme::Dark;
        in.colormap = st.heatmap.colormap;
        in.top_label = tr(st.lang, Str::RowsStrongest), in.max_label = tr(st.lang, Str::RowsMax);
        in.log = st.heatmap.log_scale, in.log_label = tr(st.lang, Str::LogScale);
        char heading[512];
        std::snprintf(heading, sizeof heading, tr(st.lang, Str::RowsHeading), token_text(t.queries[static_cast<size_t>(q)]).c_str(), q, t.T_q());
        in.heading = heading;
        const bool self = t.kind != AttentionKind::Cross;
        const std::array<const RowVector*, kExplainKinds> readings = {&c.weights, c.valued.size() ? &c.valued : nullptr,
                                                                       c.rollout_why.empty() && c.rollout.done() ? &c.rollout.row() : nullptr};
        for (int k = 0; k < kExplainKinds; ++k) {
            RowPanel& p = in.panels[static_cast<size_t>(k)];
            p.title = tr(st.lang, kTitles[k]);
            p.caption = tr(st.lang, kCaptions[k]);
            p.row = readings[static_cast<size_t>(k)];
            p.keys = &t.keys;
            p.query = self ? q : -1;
            p.masked_from = t.kind == AttentionKind::Masked ? q + 1 : -1;
            p.unscaled = k == 2 ? q : st.sink_hidden ? 0 : -1;  // the rollout's residual on its own query; a sink
            if (p.row) continue;
            if (k == 1) p.missing = why_text(st.lang, c.valued_why);
            else if (!c.rollout_why.empty()) p.missing = why_text(st.lang, c.rollout_why);
            else {  // rolling out
                char running[160];
                std::snprintf(running, sizeof running, tr(st.lang, Str::RowsRollingOut), layer + 1 - c.rollout.layer_at(), layer + 1,
                              static_cast<int>(c.rollout.progress() * 100.0));
                p.missing = running, p.progress = c.rollout.progress();
            }
        }
        draw_rows(ctx, in, min, max, "explain", self);
        return;
    }
    const Explanation& e = c.explanation;
    ExplainInput in;
    in.scale = s;
    in.dark = st.theme == Theme::Dark;
    in.colormap = st.heatmap.colormap;
    std::vector<std::string> queries, keys;
    for (const std::string& q : t.queries) queries.push_back(token_text(q));
    for (const std::string& k : t.keys) keys.push_back(token_text(k));
    for (int k = 0; k < kExplainKinds; ++k) {
        const size_t i = static_cast<size_t>(k);
        ExplainPanel& p = in.panels[i];
        p.map = e.maps[i] ? &*e.maps[i] : nullptr;
        p.title = tr(st.lang, kTitles[k]);
        p.caption = tr(st.lang, kCaptions[k]);
        if (!e.maps[i]) p.missing = why_text(st.lang, e.why[i]);
        p.queries = queries, p.keys = keys;
        if (k != 2) p.allowed = t.allowed;  // the rollout is a product of whole layers: no mask of its own
    }
    in.legend = tr(st.lang, Str::LegendWeight);
    draw_panels(ctx, in, min, max, "explain", [&](const ExplainLayout& layout) {
        if (!ctx.interactive || !ImGui::IsWindowHovered()) return;
        const ExplainLayout::Hit hit = layout.hit(ImGui::GetIO().MousePos.x, ImGui::GetIO().MousePos.y);
        if (hit.map < 0 || hit.query >= t.T_q() || hit.key >= t.T_k()) return;
        ImGui::BeginTooltip();
        ImGui::Text("%s \xe2\x86\x92 %s", token_text(t.queries[static_cast<size_t>(hit.query)]).c_str(), token_text(t.keys[static_cast<size_t>(hit.key)]).c_str());
        for (int k = 0; k < kExplainKinds; ++k)
            if (e.maps[static_cast<size_t>(k)])
                ImGui::Text("%-16s %.3f", tr(st.lang, kTitles[k]), static_cast<double>((*e.maps[static_cast<size_t>(k)])(hit.query, hit.key)));
        ImGui::EndTooltip();
    });
}

// [SECTION] One query's row -------------------------------------------------------------------------

bool reads_rows(const Trace& t) { return t.is_long() || static_cast<long long>(t.T_q()) * t.T_k() > kExplainCells; }

int row_query(const AppState& st, int T_q) {
    if (st.pinned.side == TokenRef::Query && st.pinned.index < T_q) return st.pinned.index;
    if (st.pinned_q >= 0 && st.pinned_q < T_q) return st.pinned_q;
    return T_q - 1;
}

// [SECTION] Drawing the panels -------------------------------------------------------------------------

void draw_panels_note(ViewContext& ctx, Str note, ImVec2 min, ImVec2 max, const char* probe) {
    const float s = ctx.scale;
    const char* text = tr(ctx.state.lang, note);
    const float wrap = std::min(max.x - min.x - 40.0f * s, 520.0f * s);
    const ImVec2 size = ImGui::CalcTextSize(text, nullptr, false, wrap);
    const ImVec2 p((min.x + max.x - size.x) * 0.5f, min.y + 24.0f * s);
    ImGui::GetWindowDrawList()->AddText(ImGui::GetFont(), ImGui::GetFontSize(), p, palette(ctx.state.theme).text_muted, text, nullptr, wrap);
    ctx.state.probe[std::string(probe) + ".note"] = {p.x, p.y, size.x, size.y};
}

namespace {

// A child window over [min, max) that scrolls (panels one above another on a phone): the box
// of its content, at the scroll's origin. end_scrolling: a finger dragged on a touch screen
// scrolls it, and the child ends.
Box begin_scrolling(ImVec2 min, ImVec2 max, const char* probe) {
    ImGui::SetCursorScreenPos(min);
    ImGui::BeginChild((std::string("##") + probe).c_str(), ImVec2(max.x - min.x, max.y - min.y), false);
    const ImVec2 origin = ImGui::GetCursorScreenPos();  // moves with the scroll
    return {origin.x, origin.y, origin.x + ImGui::GetContentRegionAvail().x, origin.y + (max.y - min.y)};
}
void end_scrolling(ViewContext& ctx) {
    if (ctx.state.touch) drag_scroll(ctx.panels.drag_scrolling, ctx.scale, true);
    ImGui::EndChild();
}

}  // namespace

void draw_panels(ViewContext& ctx, ExplainInput& in, ImVec2 min, ImVec2 max, const char* probe,
                 const std::function<void(const ExplainLayout&)>& hover) {
    AppState& st = ctx.state;
    in.box = begin_scrolling(min, max, probe);
    const FontsMeasure measure(ctx.fonts);
    const ExplainLayout layout = lay_out_explain(in, measure);
    ImDrawList* dl = ImGui::GetWindowDrawList();
    draw_items(dl, layout.items, {}, measure, palette(st.theme), ctx.scale, [&](const Item& it) {
        if (it.kind == Item::Colormap)
            dl->AddImageQuad(ctx.renderer.lut_texture(st.heatmap.colormap), ImVec2(it.box.x0, it.box.y0), ImVec2(it.box.x1, it.box.y0),
                             ImVec2(it.box.x1, it.box.y1), ImVec2(it.box.x0, it.box.y1), ImVec2(1, 0.5f), ImVec2(1, 0.5f),
                             ImVec2(0, 0.5f), ImVec2(0, 0.5f));
    });
    for (int k = 0; k < kExplainKinds; ++k) {  // for the tests
        const Box& g = layout.grids[static_cast<size_t>(k)];
        if (g.w() > 0.0f) st.probe[std::string(probe) + ".map." + std::to_string(k)] = {g.x0, g.y0, g.w(), g.h()};
    }
    ImGui::Dummy(ImVec2(in.box.w(), layout.content_h));  // the scrolled extent
    hover(layout);
    end_scrolling(ctx);
}

void draw_rows(ViewContext& ctx, RowsInput& in, ImVec2 min, ImVec2 max, const char* probe, bool clickable) {
    AppState& st = ctx.state;
    in.box = begin_scrolling(min, max, probe);
    const FontsMeasure measure(ctx.fonts);
    const RowsLayout layout = lay_out_rows(in, measure);
    // For the twin (a screen reader): each reading's three strongest keys, or why it is missing.
    std::string said;
    for (const RowPanel& p : in.panels) {
        if (p.title.empty()) continue;
        said += (said.empty() ? "" : " ") + p.title + ": ";
        if (!p.row || !p.keys) {
            said += p.missing;
            continue;
        }
        said += in.top_label;
        for (int j : strongest_keys(*p.row, 3, p.diverging)) {
            char v[32];
            std::snprintf(v, sizeof v, p.diverging ? "%+.3g" : "%.3g", static_cast<double>((*p.row)(j)));
            said += " \xe2\x80\x9c" + token_text((*p.keys)[static_cast<size_t>(j)]) + "\xe2\x80\x9d #" + std::to_string(j) + " " + v;
        }
        said += ".";
    }
    st.steps_said = said;
    draw_items(ImGui::GetWindowDrawList(), layout.items, {}, measure, palette(st.theme), ctx.scale, [](const Item&) {});
    for (int k = 0; k < kExplainKinds; ++k) {  // for the tests
        const Box& b = layout.strips[static_cast<size_t>(k)];
        if (b.w() > 0.0f) st.probe[std::string(probe) + ".strip." + std::to_string(k)] = {b.x0, b.y0, b.w(), b.h()};
    }
    ImGui::Dummy(ImVec2(in.box.w(), layout.content_h));  // the scrolled extent
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    const RowsLayout::Hit hit = ctx.interactive && ImGui::IsWindowHovered() ? layout.hit(mouse.x, mouse.y) : RowsLayout::Hit{};
    if (hit.panel >= 0) {
        // The keys under the pointer: one key's values in every reading, or a column's strongest in each.
        ImGui::BeginTooltip();
        const RowPanel& at = in.panels[static_cast<size_t>(hit.panel)];
        if (hit.k1 - hit.k0 == 1) ImGui::Text("\xe2\x80\x9c%s\xe2\x80\x9d #%d", token_text((*at.keys)[static_cast<size_t>(hit.k0)]).c_str(), hit.k0);
        else ImGui::Text(tr(st.lang, Str::RowsKeys), hit.k0, hit.k1 - 1);
        int strongest = hit.k0;  // in the panel pointed at
        for (const RowPanel& p : in.panels) {
            if (!p.row || hit.k1 > p.row->size()) continue;
            int best = hit.k0;
            for (int j = hit.k0; j < hit.k1; ++j)
                if (p.diverging ? std::abs((*p.row)(j)) > std::abs((*p.row)(best)) : (*p.row)(j) > (*p.row)(best)) best = j;
            if (&p == &at) strongest = best;
            if (hit.k1 - hit.k0 == 1) ImGui::Text("%-16s %.4g", p.title.c_str(), static_cast<double>((*p.row)(best)));
            else ImGui::Text("%-16s %.4g  \xe2\x80\x9c%s\xe2\x80\x9d #%d", p.title.c_str(), static_cast<double>((*p.row)(best)),
                             token_text((*p.keys)[static_cast<size_t>(best)]).c_str(), best);
        }
        ImGui::EndTooltip();
        if (clickable && ImGui::IsMouseReleased(ImGuiMouseButton_Left) && tap(ctx.scale))  // a tap, not a drag that scrolls
            st.pinned = {TokenRef::Query, strongest};  // read its row
    }
    end_scrolling(ctx);
}

void rows_toolbar(ViewContext& ctx, int T_q) {
    AppState& st = ctx.state;
    int q = row_query(st, T_q);
    ImGui::TextUnformatted(tr(st.lang, Str::RowsQuery));
    ImGui::SameLine();
    ImGui::SetNextItemWidth(110.0f * ctx.scale);
    if (ImGui::InputInt("##row_query", &q, 1, 16)) st.pinned = {TokenRef::Query, std::clamp(q, 0, T_q - 1)};
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tr(st.lang, Str::RowsQueryTip));
    ImGui::SameLine();
    ImGui::Checkbox((std::string(tr(st.lang, Str::LogScale)) + "###rows_log").c_str(), &st.heatmap.log_scale);  // the heatmap's setting
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tr(st.lang, Str::LogScaleTip));
    ImGui::SameLine();
}

// [SECTION] Toolbar -----------------------------------------------------------------------------

// A scene's head here (a layered figure's in the panel's choice of map), the query of a row,
// and the colours.
void ExplainView::toolbar(ViewContext& ctx) {
    AppState& st = ctx.state;
    const Trace& tr = st.figure.trace();
    const bool layers = st.figure.has(Detail::Layers);
    if (!layers) head_buttons(st, tr.heads, "explain");
    if (!st.figure.empty() && reads_rows(tr)) rows_toolbar(ctx, tr.T_q());
    toolbar_colormap(ctx);
}

}  // namespace attn
