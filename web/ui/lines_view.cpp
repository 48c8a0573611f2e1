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
#include "controls.hpp"

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
    std::shared_ptr<const Image> picture;     // a vision model's, whose pieces are in the patches' boxes (kept: its texture's key)
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
    in.crops = patch_crops(st, tr);
    cc.picture = in.crops.any() ? st.figure.live->picture : nullptr;
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
        if (it.kind == Item::Picture && cc.picture) draw_picture_part(ctx, dl, *cc.picture, it);
    });
    probe_captions(st, items.items, measure);
    for (const char* side : {"q", "k"})  // the first patch's piece of the picture in each column, for the tests
        for (const Item& it : items.items)
            if (it.kind == Item::Picture && (it.box.x1 <= layout.xq_right) == (side[0] == 'q')) {
                st.probe[std::string("lines.crop.") + side + "." + std::to_string(it.index)] = {it.box.x0, it.box.y0, it.box.w(), it.box.h()};
                break;
            }
    for (int q = 0; q < T_q; ++q) {
        const Box& r = items.query_rects[static_cast<size_t>(q)];
        st.query_rects[q] = {r.x0, r.y0, r.w(), r.h()};
    }
    for (int k = 0; k < T_k; ++k) {
        const Box& r = items.key_rects[static_cast<size_t>(k)];
        st.key_rects[k] = {r.x0, r.y0, r.w(), r.h()};
    }
}

// [SECTION] Toolbar -----------------------------------------------------------------------------

// Heads (each in its colour, a click hides it), the threshold, top-k per query, the sink.
void LinesView::toolbar(ViewContext& ctx) {
    AppState& st = ctx.state;
    const float s = ctx.scale;
    const Trace& tr = st.figure.trace();
    // Heads legend: the colour of each head, click to toggle.
    for (int h = 0; h < tr.heads && h < static_cast<int>(st.lines.head_visible.size()); ++h) {
        ImGui::PushID(h);
        ImVec4 c = head_color(st.theme, h);
        bool on = st.lines.head_visible[h];
        ImGui::PushStyleColor(ImGuiCol_CheckMark, ImVec4(1, 1, 1, 1));
        ImGui::PushStyleColor(ImGuiCol_FrameBg, on ? c : ImVec4(c.x, c.y, c.z, 0.25f));
        ImGui::PushStyleColor(ImGuiCol_FrameBgHovered, ImVec4(c.x, c.y, c.z, 0.8f));
        char label[24];
        std::snprintf(label, sizeof label, attn::tr(st.lang, Str::HeadN), h + 1);
        if (h > 0) same_line_if_fits(ImGui::GetFrameHeight() + ImGui::CalcTextSize(label).x + 8.0f * s);
        if (ImGui::Checkbox(label, &on)) st.lines.head_visible[h] = on;
        ImGui::PopStyleColor(3);
        std::snprintf(label, sizeof label, "head.%d", h + 1);
        probe(st, label);
        ImGui::PopID();
    }
    same_line_if_fits(ImGui::CalcTextSize(attn::tr(st.lang, Str::HideBelow)).x + 120.0f * s);
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted(attn::tr(st.lang, Str::HideBelow));
    ImGui::SameLine();
    ImGui::SetNextItemWidth(110.0f * s);
    ImGui::SliderFloat("##threshold", &st.lines.threshold, 0.0f, 1.0f, "%.2f");
    probe(st, "threshold");
    same_line_if_fits(ImGui::CalcTextSize(attn::tr(st.lang, Str::TopK)).x + 120.0f * s);
    ImGui::TextUnformatted(attn::tr(st.lang, Str::TopK));
    ImGui::SameLine();
    // 0 = auto: every line up to kTopAllUpTo keys, kLinesAutoTopK per query past it.
    char auto_k[48], auto_n[16], value[48];
    std::snprintf(auto_n, sizeof auto_n, "%d", lines_auto_top_k(tr));
    std::snprintf(auto_k, sizeof auto_k, attn::tr(st.lang, Str::TopKAuto),
                  lines_auto_top_k(tr) >= tr.T_k() ? attn::tr(st.lang, Str::All) : auto_n);
    const int k_max = lines_top_k_max(tr);
    st.lines.top_k = std::clamp(st.lines.top_k, 0, k_max);
    std::snprintf(value, sizeof value, "%d", st.lines.top_k);
    const char* shown = st.lines.top_k == 0 ? auto_k : value;
    // With few keys an integer slider's grab is wide (a step of the track each) and would
    // cover its centred text: the value is written beside the grab instead, on the wider
    // side, and the slider is wide enough for it there.
    const float pad = ImGui::GetStyle().FramePadding.x, text_w = ImGui::CalcTextSize(auto_k).x;
    const float steps = static_cast<float>(k_max + 1);
    const float slider_w = std::max(110.0f * s, (text_w + 2.0f * pad + 4.0f) * steps / std::max(steps - 1.0f, 1.0f));
    ImGui::SetNextItemWidth(std::min(slider_w, 260.0f * s));
    ImGui::SliderInt("##topk", &st.lines.top_k, 0, k_max, "", ImGuiSliderFlags_AlwaysClamp);
    {
        const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
        // ImGui's grab (SliderBehaviorT): a track 2 px in from each side, a step of it wide.
        const float track = b.x - a.x - 4.0f;
        const float grab = std::max(track / steps, ImGui::GetStyle().GrabMinSize);
        const float g0 = a.x + 2.0f + (track - grab) * static_cast<float>(st.lines.top_k) / static_cast<float>(std::max(k_max, 1));
        const float left = g0 - a.x, right = b.x - (g0 + grab);
        const float w = ImGui::CalcTextSize(shown).x;
        const float x = right >= left ? g0 + grab + (right - w) * 0.5f : a.x + (left - w) * 0.5f;
        ImGui::GetWindowDrawList()->AddText(ImVec2(std::max(x, a.x + 2.0f), (a.y + b.y - ImGui::GetFontSize()) * 0.5f),
                                            ImGui::GetColorU32(ImGuiCol_Text), shown);
    }
    probe(st, "topk");
    sink_checkbox(ctx);
}

}  // namespace attn
