// lines_view.cpp: the head view on screen. The layout, the choice of lines and everything drawn
// come from core/figure/lines_layout.hpp (the SVG writer reads the same); this file keeps what
// only a screen has: the lists built a little every frame, the pointer (hover a token to show
// only its lines, click pins it, shift-click gathers queries), the GPU's instanced lines and
// their cache, and ImGui's draw calls. With the sink option (AppState::hides_sink) the lines
// are those of the map without its first key, rows renormalized (core/figure/sink.hpp).
//
// [SECTION] Cache
// [SECTION] Draw
#include "view.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

namespace attn {

// [SECTION] Cache ------------------------------------------------------------------------------
// What the view keeps between frames for one figure.
struct LinesView::Cache {
    const Trace* trace = nullptr;             // the trace it belongs to
    int revision = -1, T_q = 0, T_k = 0, heads = 0;
    std::optional<LinesWeights> weights;      // top-k lists per head, rows on demand
    // Label widths (they cost a pass over every token), for the font they were measured in.
    const ImFont* width_font = nullptr;
    float width_size = 0.0f;
    LabelWidths widths;
    long long overview_lines = 0;             // lines the overview would draw without its budget
    // The line instances of the last frame and what they were built from.
    std::vector<float> line_key;
    std::vector<LineInstance> lines;
    std::uint64_t lines_version = 0;          // new with every rebuild (Renderer::add_lines)
    std::uint64_t versions = 0;               // a version names one content of the line instances (renderer.hpp)

    SinklessTrace sinkless;                   // the map without its first key (the sink option)

    bool matches(const AppState& st, const Trace& t) const {
        return trace == &t && revision == st.revision && T_q == t.T_q() && T_k == t.T_k() && heads == t.heads;
    }
    void reset(const AppState& st, const Trace& t) {
        trace = &t, revision = st.revision, T_q = t.T_q(), T_k = t.T_k(), heads = t.heads;
        weights.emplace(t);
        width_font = nullptr;
        line_key.clear();
        lines.clear();
        overview_lines = 0;
    }
};
LinesView::LinesView() : cache_(std::make_unique<Cache>()) {}
LinesView::~LinesView() = default;

LinesWeights* LinesView::weights_for(const AppState& st) {
    const Trace& t = drawn_trace(st, View::Lines, cache_->sinkless);
    return cache_->matches(st, t) && cache_->weights ? &*cache_->weights : nullptr;
}

// [SECTION] Draw -------------------------------------------------------------------------------

void LinesView::draw(ViewContext& ctx, ImVec2 min, ImVec2 max) {
    AppState& st = ctx.state;
    Cache& cc = *cache_;
    const Trace& tr = drawn_trace(st, View::Lines, cc.sinkless);
    const float s = ctx.scale;
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const int T_q = tr.T_q(), T_k = tr.T_k();
    st.query_rects.assign(T_q, ProbeRect{});
    st.key_rects.assign(T_k, ProbeRect{});
    st.lines_drawn = 0;
    st.lines_ready = 1.0f;
    if (T_q == 0 || T_k == 0) return;

    std::vector<int> visible;
    for (int h = 0; h < tr.heads; ++h)
        if (h < static_cast<int>(st.lines.head_visible.size()) && st.lines.head_visible[h]) visible.push_back(h);
    if (!cc.matches(st, tr)) cc.reset(st, tr);
    LinesWeights& weights = *cc.weights;
    if (!weights.all_done()) weights.advance(visible, ctx.interactive ? build_budget_seconds() : 0.0);
    st.lines_ready = weights.progress(visible);
    const bool keys_ready = std::all_of(visible.begin(), visible.end(), [&](int h) { return weights.top(h).done(); });

    // Geometry (lines_layout.hpp).
    const FontsMeasure measure(ctx.fonts);
    LinesInput in;
    in.trace = &tr;
    in.visible = visible;
    in.threshold = st.lines.threshold;
    in.top_k = st.lines.top_k;
    in.box = {min.x, min.y, max.x, max.y};
    in.scale = s;
    in.legend = !ctx.interactive;  // the PNG export: no toolbar, so the heads legend is in the figure
    in.dark = st.theme == Theme::Dark;
    in.ready = st.lines_ready;
    in.words = lines_words(st.lang);
    const ImFont* font = measure.font(lines_token_font(in, measure));
    if (cc.width_font != font || cc.width_size != font->FontSize) {
        cc.width_font = font, cc.width_size = font->FontSize;
        cc.widths = label_widths(tr, lines_token_font(in, measure), measure);
    }
    const LinesLayout layout = lay_out_lines(in, measure, cc.widths);

    // The pointer: the token under it is the hover; a click pins it, shift-click gathers queries.
    if (ctx.interactive && ImGui::IsWindowHovered()) {
        const ImVec2 m = ImGui::GetIO().MousePos;
        const LinesLayout::Hit hit = layout.hit(m.x, m.y);
        TokenRef found;
        if (hit.side == 1) found = {TokenRef::Query, hit.index};
        if (hit.side == 2) found = {TokenRef::Key, hit.index};
        st.hover = found;
        if (found.valid()) ImGui::SetMouseCursor(ImGuiMouseCursor_Hand);
        if (ImGui::IsMouseClicked(ImGuiMouseButton_Left) && found.valid()) {
            if (ImGui::GetIO().KeyShift && found.side == TokenRef::Query) {
                // Shift-click gathers queries: their attention is summed (a pinned query joins).
                if (st.query_set.empty() && st.pinned.side == TokenRef::Query) st.query_set.push_back(st.pinned.index);
                auto it = std::find(st.query_set.begin(), st.query_set.end(), found.index);
                if (it == st.query_set.end()) st.query_set.push_back(found.index);
                else st.query_set.erase(it);
                st.pinned = {};
            } else {
                st.query_set.clear();
                st.pinned = st.pinned == found ? TokenRef{} : found;
            }
        }
    }
    // The keyboard's token is the hover while the pointer is on none (access.hpp).
    if (ctx.interactive && st.cursor.on && !st.hover.valid()) st.hover = st.cursor.token;
    // Several queries chosen together: lines from each, and beside the keys their summed weight.
    std::erase_if(st.query_set, [&](int q) { return q < 0 || q >= T_q; });
    LinesSelection sel;
    sel.set = st.query_set;
    if (sel.set.empty()) {
        const TokenRef t = st.selected();
        if (t.side == TokenRef::Query && t.index < T_q) sel.query = t.index;
        if (t.side == TokenRef::Key && t.index < T_k) sel.key = t.index;
        sel.pinned = st.pinned.valid();
    }

    // Lines (GPU, instanced): rebuilt only when what they depend on changes. While the lists
    // build, in steps of a tenth: every rebuild is a rasterization of all the lines
    // (renderer.hpp), which in a software WebGL would slow the frames the build is paced by.
    const float ready_step = std::floor(st.lines_ready * 10.0f) / 10.0f;
    std::vector<float> key = {static_cast<float>(st.revision), static_cast<float>(in.dark),
                              static_cast<float>(layout.overview_k), static_cast<float>(layout.focus_k), st.lines.threshold,
                              static_cast<float>(sel.query), static_cast<float>(sel.key), layout.xq_right, layout.xk_left,
                              layout.top_q, layout.top_k, layout.row_q, layout.row_k, layout.head_step, s, ready_step,
                              static_cast<float>(keys_ready)};
    for (int h : visible) key.push_back(static_cast<float>(h));
    key.push_back(-1.0f);
    for (int q : sel.set) key.push_back(static_cast<float>(q));
    if (key != cc.line_key) {
        cc.line_key = key;
        cc.lines_version = ++cc.versions;
        cc.overview_lines = choose_lines(layout, sel, weights, st.lines.threshold, cc.lines);
    }
    st.lines_drawn = static_cast<int>(cc.lines.size());

    // Everything else, in the layout's order; the lines where it puts them.
    const LinesItems items = lines_items(layout, sel, weights, measure, st.lines_drawn, cc.overview_lines);
    draw_items(dl, items.items, {}, measure, palette(st.theme), s, [&](const Item& it) {
        if (it.kind == Item::Lines) ctx.renderer.add_lines(dl, cc.lines, cc.lines_version);
    });
    probe_captions(st, items.items, measure);
    for (int q = 0; q < T_q; ++q) {
        const Box& r = items.query_rects[static_cast<size_t>(q)];
        st.query_rects[q] = {r.x0, r.y0, r.w(), r.h()};
    }
    for (int k = 0; k < T_k; ++k) {
        const Box& r = items.key_rects[static_cast<size_t>(k)];
        st.key_rects[k] = {r.x0, r.y0, r.w(), r.h()};
    }
}

}  // namespace attn
