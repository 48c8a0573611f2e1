// qk_view.cpp: the Q–K space view (core/figure/qk_layout.hpp): one head's queries and keys as
// points of one plane, or every head of the layer as small panels. This file keeps the planes
// between frames (t-SNE takes a moment), the pointer and the pin (the Lines view's: a query
// pinned here is pinned there), the tooltip and the words for the twin.
//
// [SECTION] Cache
// [SECTION] Words
// [SECTION] Draw
#include "view.hpp"
#include "controls.hpp"

#include "qk_layout.hpp"

#include <algorithm>
#include <climits>
#include <cstdio>

namespace attn {

// [SECTION] Cache ------------------------------------------------------------------------------

// The shown head's plane, and for the overview every head's PCA: made again when the figure,
// the head or the projection changes.
struct QkView::Cache {
    const Trace* trace = nullptr;
    int revision = INT_MIN, head = -1;
    QkProjection projection = QkProjection::Pca;
    QkPlane plane;
    std::vector<QkPlane> heads;

    void update(const AppState& st, int h) {
        const Trace& tr = st.figure.trace();
        if (trace == &tr && revision == st.revision && head == h && projection == st.qk) return;
        trace = &tr, revision = st.revision, head = h, projection = st.qk;
        heads.clear();
        if (st.qk == QkProjection::Heads)
            for (int i = 0; i < tr.heads; ++i) heads.push_back(qk_plane(tr, i, QkProjection::Pca));
        else plane = qk_plane(tr, h, st.qk);
    }
};
QkView::QkView() : cache_(std::make_unique<Cache>()) {}
QkView::~QkView() = default;

namespace {

// [SECTION] Words ------------------------------------------------------------------------------

// "In this plane, query “sat” lies nearest to keys “cat” and “The”. Its largest weight is on
// “<|endoftext|>” (0.57): …": the plane's two nearest keys it may attend to, and where its weight
// goes (nearness in two directions is not the weight, which reads all of d_k).
std::string nearest_words(const AppState& st, const Trace& trace, const QkPlane& p, int head, int query) {
    const std::vector<int> near = nearest_keys(p.points, p.T_q, query, 2, trace.allowed);
    if (near.empty()) return "";
    const std::string q = quoted_token(trace.queries[static_cast<size_t>(query)]);
    const std::string k0 = quoted_token(trace.keys[static_cast<size_t>(near[0])]);
    std::string out = near.size() == 1 ? printf_string(attn::tr(st.lang, Str::QkNearestOne), q.c_str(), k0.c_str())
                                       : printf_string(attn::tr(st.lang, Str::QkNearest), q.c_str(), k0.c_str(),
                                                       quoted_token(trace.keys[static_cast<size_t>(near[1])]).c_str());
    std::vector<float> weights(static_cast<size_t>(trace.T_k()));
    attention_rows(trace, head, query, query + 1, weights.data());
    const int top = static_cast<int>(std::max_element(weights.begin(), weights.end()) - weights.begin());
    if (std::find(near.begin(), near.end(), top) == near.end())
        out += (st.lang == Lang::Zh ? "" : " ") + printf_string(attn::tr(st.lang, Str::QkStrongest),
                                                                quoted_token(trace.keys[static_cast<size_t>(top)]).c_str(),
                                                                static_cast<double>(weights[static_cast<size_t>(top)]), trace.d_k);
    return out;
}

}  // namespace

// [SECTION] Draw -------------------------------------------------------------------------------

void QkView::draw(ViewContext& ctx, ImVec2 min, ImVec2 max) {
    AppState& st = ctx.state;
    if (st.figure.empty()) return;
    if (!st.figure.has(Detail::Projections) && !st.figure.has(Detail::Queries)) return draw_panels_note(ctx, Str::QkNoQk, min, max, "qk");
    const Trace& trace = st.figure.trace();
    if (trace.queries.empty() || trace.keys.empty()) return;
    const float s = ctx.scale;
    const int head = std::clamp(st.steps.head, 0, trace.heads - 1);
    Cache& c = *cache_;
    c.update(st, head);
    const FontsMeasure measure(ctx.fonts);
    const Palette& pal = palette(st.theme);
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const Box box{min.x, min.y, max.x, max.y};
    const ImGuiIO& io = ImGui::GetIO();
    const bool pointer = ctx.interactive && ImGui::IsWindowHovered() && box.contains(io.MousePos.x, io.MousePos.y);

    if (st.qk == QkProjection::Heads) {  // every head of the layer: a click opens its plane
        QkGridInput in;
        in.planes = &c.heads, in.box = box, in.scale = s, in.dark = st.theme == Theme::Dark, in.current = head;
        const QkWords words = qk_words(st.lang);
        in.titles = qk_grid_titles(c.heads, words);
        in.queries = words.queries, in.keys = words.keys;
        in.heading = (st.figure.has(Detail::Layers) ? printf_string(attn::tr(st.lang, Str::LayerN), st.imported.import_layer + 1) + " \xc2\xb7 " : "") +
                     attn::tr(st.lang, Str::QkHeadsHeading);
        QkGridLayout layout = lay_out_qk_grid(in, measure);
        in.hover = pointer ? layout.hit(io.MousePos.x, io.MousePos.y) : -1;
        if (in.hover >= 0) ImGui::SetMouseCursor(ImGuiMouseCursor_Hand);
        if (in.hover >= 0 && ImGui::IsMouseReleased(ImGuiMouseButton_Left)) st.steps.head = in.hover, st.qk = QkProjection::Pca;
        const std::vector<Item> items = qk_grid_items(layout, in, measure);
        draw_items(dl, items, {}, measure, pal, s, [](const Item&) {});
        for (size_t h = 0; h < layout.panels.size(); ++h) {
            const Box& b = layout.panels[h];
            st.probe["qk.head." + std::to_string(h + 1)] = {b.x0, b.y0, b.w(), b.h()};
        }
        st.steps_said = attn::tr(st.lang, Str::QkHeadsHint);
        return;
    }

    const QkPlane& plane = c.plane;
    QkInput in;
    in.trace = &trace, in.head = head, in.plane = &plane, in.box = box, in.scale = s, in.dark = st.theme == Theme::Dark;
    const int n_points = plane.T_q + plane.T_k;
    qk_fill_words(in, qk_words(st.lang), st.qk);
    QkLayout layout = lay_out_qk(in, measure);

    // The pointer: the point under it is the hover; a click pins it (as in the Lines view).
    if (pointer) {
        const int hit = layout.hit(io.MousePos.x, io.MousePos.y);
        TokenRef found;
        if (hit >= 0) found = hit < plane.T_q ? TokenRef{TokenRef::Query, hit} : TokenRef{TokenRef::Key, hit - plane.T_q};
        st.hover = found;
        if (found.valid()) ImGui::SetMouseCursor(ImGuiMouseCursor_Hand);
        if (ImGui::IsMouseClicked(ImGuiMouseButton_Left) && found.valid()) st.pinned = st.pinned == found ? TokenRef{} : found;
    }
    if (ctx.interactive && st.cursor.on && !st.hover.valid()) st.hover = st.cursor.token;
    const TokenRef sel = st.selected();
    if (sel.side == TokenRef::Query && sel.index < plane.T_q) in.query = sel.index;
    if (sel.side == TokenRef::Key && sel.index < plane.T_k) in.key = sel.index;
    if (in.query >= 0) {
        in.weights.resize(static_cast<size_t>(plane.T_k));
        attention_rows(trace, head, in.query, in.query + 1, in.weights.data());
    }
    const std::vector<Item> items = qk_items(layout, in, measure);
    draw_items(dl, items, {}, measure, pal, s, [](const Item&) {});
    probe_captions(st, items, measure);
    const float r = layout.radius;
    st.query_rects.assign(static_cast<size_t>(plane.T_q), ProbeRect{});
    st.key_rects.assign(static_cast<size_t>(plane.T_k), ProbeRect{});
    for (int i = 0; i < n_points; ++i) {
        const auto& p = layout.at[static_cast<size_t>(i)];
        (i < plane.T_q ? st.query_rects[static_cast<size_t>(i)] : st.key_rects[static_cast<size_t>(i - plane.T_q)]) = {p[0] - r, p[1] - r, 2 * r, 2 * r};
    }

    // The words for the twin and the tooltip: the selected query's nearest keys, else the last query's.
    const int about = in.query >= 0 ? in.query : plane.T_q - 1;
    const std::string nearest = nearest_words(st, trace, plane, head, about);
    st.steps_said = in.what + " " + in.correlation + (nearest.empty() ? "" : " " + nearest);
    if (in.query >= 0 || in.key >= 0) {
        ImGui::BeginTooltip();
        if (in.query >= 0) {
            ImGui::PushTextWrapPos(ImGui::GetFontSize() * 28.0f);
            ImGui::TextUnformatted(nearest.c_str());
            ImGui::PopTextWrapPos();
        } else {
            ImGui::Text("%s %s", attn::tr(st.lang, Str::QkKeys), quoted_token(trace.keys[static_cast<size_t>(in.key)]).c_str());
        }
        ImGui::EndTooltip();
    }
}

// [SECTION] Toolbar -----------------------------------------------------------------------------

// One head's plane (PCA or t-SNE), or every head's.
void QkView::toolbar(ViewContext& ctx) {
    AppState& st = ctx.state;
    const float s = ctx.scale;
    const Trace& tr = st.figure.trace();
    if (layer_combo(st, s, "qk", st.steps.head) && st.qk != QkProjection::Heads) ImGui::SameLine();
    if (st.qk != QkProjection::Heads) head_buttons(st, tr.heads, "qk");
    same_line_if_fits(240.0f * s);
    segmented(st, "##qk", &st.qk,
              {{QkProjection::Pca, Str::QkPca, "pca"}, {QkProjection::Tsne, Str::QkTsne, "tsne"}, {QkProjection::Heads, Str::QkHeads, "heads"}},
              "qk", 240.0f * s);
}

}  // namespace attn
