// explain_view.cpp: the Explain view (core/figure/explain_layout.hpp): one head's attention
// read three ways, side by side in one colour scale, with captions; the hover's tooltip gives
// the three numbers of the cell under the mouse.
#include "view.hpp"
#include "controls.hpp"

#include "panels.hpp"
#include "explain_layout.hpp"
#include "import_state.hpp"

#include <algorithm>
#include <cstdio>

namespace attn {

// The three maps of the shown head, computed when the figure, the head or the layer changes.
struct ExplainView::Cache {
    const void* shown = nullptr;
    int revision = -1, head = -1, stack = -1, layer = -1;
    Explanation explanation;
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
    if (why == "projections") return tr(lang, Str::ExplainNoProjections);
    if (why == "cross") return tr(lang, Str::ExplainNoRollout);
    return tr(lang, Str::ExplainLong);
}

}  // namespace

void ExplainView::draw(ViewContext& ctx, ImVec2 min, ImVec2 max) {
    AppState& st = ctx.state;
    if (st.figure.empty()) return;
    const Trace& t = st.figure.trace();
    const int head = explained_head(st);
    const bool layered = st.figure.has(Detail::Layers);
    const int stack = layered ? st.imported.import_stack : 0, layer = layered ? st.imported.import_layer : 0;
    const float s = ctx.scale;
    if (head < 0 || static_cast<long long>(t.T_q()) * t.T_k() > kExplainCells)
        return draw_panels_note(ctx, head < 0 ? Str::ExplainOneHead : Str::ExplainTooLong, min, max, "explain");
    Cache& c = *cache_;
    if (c.shown != st.figure.shown.get() || c.revision != st.revision || c.head != head || c.stack != stack || c.layer != layer) {
        c.explanation = explain(st.figure, head, stack, layer);
        c.shown = st.figure.shown.get(), c.revision = st.revision, c.head = head, c.stack = stack, c.layer = layer;
    }
    const Explanation& e = c.explanation;
    ExplainInput in;
    in.scale = s;
    in.dark = st.theme == Theme::Dark;
    in.colormap = st.heatmap.colormap;
    std::vector<std::string> queries, keys;
    for (const std::string& q : t.queries) queries.push_back(token_text(q));
    for (const std::string& k : t.keys) keys.push_back(token_text(k));
    constexpr Str kTitles[kExplainKinds] = {Str::ExplainWeights, Str::ExplainValueWeighted, Str::ExplainRollout};
    constexpr Str kCaptions[kExplainKinds] = {Str::ExplainWeightsCap, Str::ExplainValueWeightedCap, Str::ExplainRolloutCap};
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

void draw_panels_note(ViewContext& ctx, Str note, ImVec2 min, ImVec2 max, const char* probe) {
    const float s = ctx.scale;
    const char* text = tr(ctx.state.lang, note);
    const float wrap = std::min(max.x - min.x - 40.0f * s, 520.0f * s);
    const ImVec2 size = ImGui::CalcTextSize(text, nullptr, false, wrap);
    const ImVec2 p((min.x + max.x - size.x) * 0.5f, min.y + 24.0f * s);
    ImGui::GetWindowDrawList()->AddText(ImGui::GetFont(), ImGui::GetFontSize(), p, palette(ctx.state.theme).text_muted, text, nullptr, wrap);
    ctx.state.probe[std::string(probe) + ".note"] = {p.x, p.y, size.x, size.y};
}

void draw_panels(ViewContext& ctx, ExplainInput& in, ImVec2 min, ImVec2 max, const char* probe,
                 const std::function<void(const ExplainLayout&)>& hover) {
    AppState& st = ctx.state;
    ImGui::SetCursorScreenPos(min);
    ImGui::BeginChild((std::string("##") + probe).c_str(), ImVec2(max.x - min.x, max.y - min.y), false);
    const ImVec2 origin = ImGui::GetCursorScreenPos();  // moves with the scroll
    in.box = {origin.x, origin.y, origin.x + ImGui::GetContentRegionAvail().x, origin.y + (max.y - min.y)};
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
    if (st.touch) drag_scroll(ctx.panels.drag_scrolling, ctx.scale, true);
    ImGui::EndChild();
}

// [SECTION] Toolbar -----------------------------------------------------------------------------

// A scene's head here (a layered figure's in the panel's choice of map), and the colours.
void ExplainView::toolbar(ViewContext& ctx) {
    AppState& st = ctx.state;
    const Trace& tr = st.figure.trace();
    const bool layers = st.figure.has(Detail::Layers);
    if (!layers) head_buttons(st, tr.heads, "explain");
    toolbar_colormap(ctx);
}

}  // namespace attn
