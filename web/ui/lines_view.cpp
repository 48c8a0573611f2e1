// lines_view.cpp: the head view. Queries in the left column, keys in the right one (for cross
// attention the target / decoder tokens on the left and the source / encoder tokens on the
// right), one line per query-key pair and visible head: opacity and width from the weight.
// Hover a token to show only its lines with the weights beside the other column; click pins.
//
// At scale the view reads no T_q×T_k matrix (a long trace has none): each head's strongest keys
// per query and queries per key come from a TopKeys cache (core/figure/top_keys.hpp), built a few rows
// blocks per frame, and a selected query's row or a query set's sum is computed on demand.
// Up to kTopAllUpTo tokens a side every line is drawn, as always; past it each query keeps its
// top kLinesAutoTopK keys unless the user picks another k (toolbar). When the tokens no longer fit a
// readable row each, the columns become compact rails: every n-th token labelled, plus the
// selected token and its strongest partners; hover picks the nearest token.
//
// [SECTION] Cache
// [SECTION] Layout
// [SECTION] Pointer
// [SECTION] Lines (GPU, instanced)
// [SECTION] Tokens and weights (ImGui)
#include "view.hpp"

#include "top_keys.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace attn {

const char* token_label(const std::string& token) { return token.empty() ? "\xe2\x88\x85" : token.c_str(); }

namespace {

// kLinesAutoTopK (app_state.hpp), the lines per query past kTopAllUpTo keys when the user chose
// no k, is 3: enough to follow where a query looks (the strongest keys carry most of a peaked
// softmax), and 3·T·heads lines stay a figure of strands rather than a solid fill at thousands
// of tokens (98 K lines for 8 heads at T = 4096).
// Labels in the compact columns of the selected token's strongest partners.
constexpr int kPartnerLabels = 8;
// The overview draws at most this many lines, the strongest of the top-k lists: each line is a
// quad the width of the figure, and in a software-rendered WebGL (SwiftShader) 100 K of them
// (8 heads × T = 4096 × k = 3) take hundreds of ms a frame and fill the figure solid.
constexpr int kMaxOverviewLines = 32768;

ImU32 mix_color(ImU32 a, ImVec4 b, float t) {
    ImVec4 av = ImGui::ColorConvertU32ToFloat4(a);
    t = std::clamp(t, 0.0f, 1.0f);
    return ImGui::GetColorU32(ImVec4(av.x + (b.x - av.x) * t, av.y + (b.y - av.y) * t,
                                     av.z + (b.z - av.z) * t, 1.0f));
}

// [SECTION] Cache --------------------------------------------------------------------------
// What the view keeps between frames for one figure.
struct LinesCache {
    // The trace it belongs to.
    const Trace* trace = nullptr;
    int revision = -1, T_q = 0, T_k = 0, heads = 0;
    std::vector<TopKeys> top;                 // per head
    // Rows on demand: the selected query's row per head, and the query set's sums per head.
    int row_query = -1;
    std::vector<std::vector<float>> rows;     // heads × T_k
    std::vector<int> sum_set;
    std::vector<RowVector> sums;              // heads × T_k
    // Label widths (they cost a pass over every token).
    const ImFont* width_font = nullptr;
    float width_size = 0.0f, maxw_q = 0.0f, maxw_k = 0.0f;
    long long overview_lines = 0;             // lines the overview would draw without its budget
    // The line instances of the last frame and what they were built from.
    std::vector<float> line_key;
    std::vector<LineInstance> lines;
    std::uint64_t lines_version = 0;          // new with every rebuild (Renderer::add_lines)

    bool matches(const AppState& st) const {
        const Trace& t = st.figure.trace();
        return trace == &t && revision == st.revision && T_q == t.T_q() && T_k == t.T_k() && heads == t.heads;
    }
    void reset(const AppState& st) {
        *this = LinesCache{};
        const Trace& t = st.figure.trace();
        trace = &t, revision = st.revision, T_q = t.T_q(), T_k = t.T_k(), heads = t.heads;
        for (int h = 0; h < heads; ++h)
            top.emplace_back(t, h, top_keys_capacity(T_k), top_keys_capacity(T_q));
    }
    bool all_done() const {
        return std::all_of(top.begin(), top.end(), [](const TopKeys& t) { return t.done(); });
    }
    // Builds visible heads first, then the others, for about the budget (everything when
    // `all`, for PNG exports that get one frame).
    void advance(const Trace& t, const std::vector<int>& visible, bool all) {
        using Clock = std::chrono::steady_clock;
        const auto start = Clock::now();
        const double budget = 1000.0 * build_budget_seconds();  // ms; at least one block of rows
        std::vector<int> order = visible;
        for (int h = 0; h < heads; ++h)
            if (std::find(order.begin(), order.end(), h) == order.end()) order.push_back(h);
        for (int h : order) {
            TopKeys& k = top[static_cast<size_t>(h)];
            while (!k.done()) {
                k.advance(t, 256 * 1024);
                const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
                if (!all && ms > budget) return;
            }
        }
    }
    float progress(const std::vector<int>& visible) const {
        if (visible.empty()) return 1.0f;
        float p = 0.0f;
        for (int h : visible) p += top[static_cast<size_t>(h)].progress();
        return p / static_cast<float>(visible.size());
    }
    const std::vector<float>& row(const Trace& t, int h, int q) {
        if (row_query != q) {
            rows.assign(static_cast<size_t>(heads), {});
            row_query = q;
        }
        std::vector<float>& r = rows[static_cast<size_t>(h)];
        if (r.empty()) {
            r.resize(static_cast<size_t>(T_k));
            attention_rows(t, h, q, q + 1, r.data());
        }
        return r;
    }
    const std::vector<RowVector>& summed(const Trace& t, const std::vector<int>& set) {
        if (set != sum_set || sums.empty()) {
            sum_set = set;
            sums.clear();
            for (int h = 0; h < heads; ++h) sums.push_back(summed_rows(t, h, set));
        }
        return sums;
    }
};

}  // namespace

struct LinesView::Cache {
    LinesCache lines;
    std::uint64_t versions = 0;  // a version names one content of the line instances (renderer.hpp)
};
LinesView::LinesView() : cache_(std::make_unique<Cache>()) {}
LinesView::~LinesView() = default;

void LinesView::draw(ViewContext& ctx, ImVec2 min, ImVec2 max) {
    AppState& st = ctx.state;
    const Trace& tr = st.figure.trace();
    const float s = ctx.scale;
    const Palette& pal = palette(st.theme);
    ImDrawList* dl = ImGui::GetWindowDrawList();
    ImFont* small = ctx.fonts.small;
    const int T_q = tr.T_q();
    const int T_k = tr.T_k();
    const bool cross = tr.kind == AttentionKind::Cross;
    st.query_rects.assign(T_q, ProbeRect{});
    st.key_rects.assign(T_k, ProbeRect{});
    st.lines_drawn = 0;
    st.lines_ready = 1.0f;
    if (T_q == 0 || T_k == 0) return;

    std::vector<int> visible;
    for (int h = 0; h < tr.heads; ++h)
        if (h < static_cast<int>(st.lines.head_visible.size()) && st.lines.head_visible[h]) visible.push_back(h);
    const int n_visible = static_cast<int>(visible.size());
    LinesCache& cc = cache_->lines;
    if (!cc.matches(st)) cc.reset(st);
    if (!cc.all_done()) cc.advance(tr, visible, !ctx.interactive);
    st.lines_ready = cc.progress(visible);
    const bool keys_ready = std::all_of(visible.begin(), visible.end(), [&](int h) { return cc.top[static_cast<size_t>(h)].done(); });

    // [SECTION] Layout ---------------------------------------------------------------------
    // Short sequences get the larger font and taller rows; long ones shrink to fit. Past a
    // readable row per token (12 px at scale 1) both columns fill the height as rails.
    const int T_max = std::max(T_q, T_k);
    const float avail_rows_h = max.y - min.y - 60.0f * s;
    const float header_h = small->FontSize + 18.0f * s;
    const bool export_legend = !ctx.interactive && tr.heads > 1;
    const float avail_guess = std::max(max.y - min.y - header_h - 12.0f * s, 10.0f);
    const bool compact = avail_guess / static_cast<float>(T_max) < 12.0f * s;
    ImFont* font = compact ? small : avail_rows_h / T_max >= 46.0f * s ? ctx.fonts.title : ctx.fonts.body;
    const float fs = font->FontSize;
    const float pad = compact ? 4.0f * s : 7.0f * s;
    auto text_w = [&](const std::string& t) { return font->CalcTextSizeA(fs, FLT_MAX, 0.0f, token_label(t)).x; };
    if (cc.width_font != font || cc.width_size != fs) {
        cc.width_font = font, cc.width_size = fs, cc.maxw_q = cc.maxw_k = 0.0f;
        for (auto& t : tr.queries) cc.maxw_q = std::max(cc.maxw_q, text_w(t));
        for (auto& t : tr.keys) cc.maxw_k = std::max(cc.maxw_k, text_w(t));
        // Compact labels are few and short-lived: cap their column so the lines keep the room.
        if (compact) cc.maxw_q = std::min(cc.maxw_q, 160.0f * s), cc.maxw_k = std::min(cc.maxw_k, 160.0f * s);
    }
    const float maxw_q = cc.maxw_q, maxw_k = cc.maxw_k;
    const int n_numbers = n_visible > 4 ? 1 : std::max(n_visible, 1);  // > 4 heads: their mean
    ImFont* numbers = compact ? small : ctx.fonts.body;  // the weights written beside the other column
    const float num_w = numbers->CalcTextSizeA(numbers->FontSize, FLT_MAX, 0.0f, "0.00").x + 10.0f * s;
    const float weights_w = n_numbers * num_w + 8.0f * s;
    const float width = max.x - min.x;
    const float rail_w = compact ? 6.0f * s : 0.0f;  // the compact column: a strip, a row per token
    // The PNG export draws the heads legend along the bottom edge: keep that strip free.
    const float legend_h = export_legend ? (compact ? ctx.fonts.body->FontSize : fs) + 16.0f * s : 0.0f;
    const float avail_h = std::max(max.y - min.y - header_h - 12.0f * s - legend_h, 10.0f);
    const float row_h = compact ? 0.0f : std::clamp(avail_h / static_cast<float>(T_max), 12.0f * s, 52.0f * s);
    const float row_q = compact ? avail_h / static_cast<float>(T_q) : row_h;
    const float row_k = compact ? avail_h / static_cast<float>(T_k) : row_h;
    const float box_h = compact ? fs + 4.0f * s : std::min(row_h - 3.0f * s, fs + 9.0f * s);
    const float fixed_w = 2.0f * weights_w + maxw_q + maxw_k + 4.0f * pad + 2.0f * rail_w;
    const float span = std::clamp(width - fixed_w - 48.0f * s, 110.0f * s, compact ? 640.0f * s : 480.0f * s);
    const float total_w = fixed_w + span;
    const float x0 = min.x + std::max((width - total_w) * 0.5f, 8.0f * s);
    const float xq_right = x0 + weights_w + maxw_q + 2.0f * pad + rail_w;  // right edge of query boxes (rail)
    const float xk_left = xq_right + span;                                  // left edge of key boxes (rail)
    const float top = min.y + header_h;
    const float top_q = top + std::max((avail_h - T_q * row_q) * 0.5f, 0.0f);
    const float top_k = top + std::max((avail_h - T_k * row_k) * 0.5f, 0.0f);
    auto yq = [&](int i) { return top_q + (static_cast<float>(i) + 0.5f) * row_q; };
    auto yk = [&](int j) { return top_k + (static_cast<float>(j) + 0.5f) * row_k; };

    // Column headings.
    const char* left_title = attn::tr(st.lang, cross ? Str::AxisTargetQueries : Str::AxisQueries);
    const char* right_title = attn::tr(st.lang, cross ? Str::AxisSourceKeys : Str::AxisKeys);
    const float lt_w = small->CalcTextSizeA(small->FontSize, FLT_MAX, 0.0f, left_title).x;
    const float rt_w = small->CalcTextSizeA(small->FontSize, FLT_MAX, 0.0f, right_title).x;
    dl->AddText(small, small->FontSize, ImVec2(std::max(xq_right - lt_w, min.x + 6.0f * s), min.y + 8.0f * s),
                pal.text_muted, left_title);
    dl->AddText(small, small->FontSize, ImVec2(std::min(xk_left, max.x - rt_w - 6.0f * s), min.y + 8.0f * s),
                pal.text_muted, right_title);

    // [SECTION] Pointer --------------------------------------------------------------------
    // Compact: labels end at the rail; a query's label box sits left of it, a key's right of it.
    auto query_box = [&](int i) {
        float w = text_w(tr.queries[i]) + 2.0f * pad;
        const float right = xq_right - rail_w - (compact ? 3.0f * s : 0.0f);
        return ImVec4(right - w, yq(i) - box_h * 0.5f, right, yq(i) + box_h * 0.5f);
    };
    auto key_box = [&](int j) {
        float w = text_w(tr.keys[j]) + 2.0f * pad;
        const float left = xk_left + rail_w + (compact ? 3.0f * s : 0.0f);
        return ImVec4(left, yk(j) - box_h * 0.5f, left + w, yk(j) + box_h * 0.5f);
    };
    if (ctx.interactive && ImGui::IsWindowHovered()) {
        ImVec2 m = ImGui::GetIO().MousePos;
        TokenRef found;
        // The whole row of a column is the target, not just the text, so short tokens are easy to
        // hit; in a compact column the nearest token.
        if (m.x >= xq_right - maxw_q - 2.0f * pad - rail_w && m.x <= xq_right && m.y >= top_q && m.y < top_q + T_q * row_q)
            found = {TokenRef::Query, std::min(static_cast<int>((m.y - top_q) / row_q), T_q - 1)};
        if (m.x >= xk_left && m.x <= xk_left + maxw_k + 2.0f * pad + rail_w && m.y >= top_k && m.y < top_k + T_k * row_k)
            found = {TokenRef::Key, std::min(static_cast<int>((m.y - top_k) / row_k), T_k - 1)};
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
    // Several queries chosen together: lines from each, and beside the keys their summed weight.
    std::erase_if(st.query_set, [&](int q) { return q < 0 || q >= T_q; });
    const bool summing = !st.query_set.empty();
    auto in_set = [&](int q) { return std::find(st.query_set.begin(), st.query_set.end(), q) != st.query_set.end(); };
    const TokenRef sel = summing ? TokenRef{} : st.selected();
    const bool sel_query = sel.side == TokenRef::Query && sel.index < T_q;
    const bool sel_key = sel.side == TokenRef::Key && sel.index < T_k;

    // [SECTION] Lines (GPU, instanced) -----------------------------------------------------
    // Keys per query: the user's k, else all up to kTopAllUpTo keys and kLinesAutoTopK past it. A
    // selected query or a query set shows its lists whole (all, or the kTopKeysMax strongest)
    // unless the user chose a k; a selected key its strongest queries.
    const int cap = top_keys_capacity(T_k);
    const bool user_k = st.lines.top_k > 0;
    const int overview_k = user_k ? std::min(st.lines.top_k, cap) : lines_auto_top_k(tr);
    const int focus_k = user_k ? std::min(st.lines.top_k, cap) : cap;
    const float head_step = n_visible > 1 ? std::min(2.5f * s, std::max(box_h, 4.0f * s) * 0.5f / n_visible) : 0.0f;
    // Everything the instances depend on: rebuilt only when one of these changes. While the
    // lists build, in steps of a tenth: every rebuild is a rasterization of all the lines
    // (renderer.hpp), which in a software WebGL would slow the frames the build is paced by.
    const float ready_step = std::floor(st.lines_ready * 10.0f) / 10.0f;
    std::vector<float> key = {static_cast<float>(st.revision), static_cast<float>(st.theme == Theme::Dark),
                              static_cast<float>(overview_k), static_cast<float>(focus_k), st.lines.threshold,
                              static_cast<float>(sel.side), static_cast<float>(sel.index), xq_right, xk_left,
                              top_q, top_k, row_q, row_k, head_step, s, ready_step, static_cast<float>(keys_ready)};
    for (int h : visible) key.push_back(static_cast<float>(h));
    key.push_back(-1.0f);
    for (int q : st.query_set) key.push_back(static_cast<float>(q));
    if (key != cc.line_key) {
        cc.line_key = key;
        cc.lines_version = ++cache_->versions;
        std::vector<LineInstance>& lines = cc.lines;
        lines.clear();
        std::vector<TopEntry> kept;
        const float width_scale = compact ? 0.4f : 1.0f;  // thousands of strands: thinner
        // Compact: thousands of overlapping strands; fainter in proportion to their density (lines
        // per pixel of column) so that the figure shows where attention gathers, not a solid fill.
        const float density = compact ? static_cast<float>(std::min<long long>(
                                            static_cast<long long>(overview_k) * T_q * n_visible, kMaxOverviewLines)) /
                                            std::max(avail_h, 1.0f)
                                      : 0.0f;
        const float alpha_scale = compact && !sel.valid() && !summing ? std::clamp(6.0f / std::max(density, 1e-3f), 0.08f, 1.0f) : 1.0f;
        struct Candidate {
            float w;
            int order, q, k, vi;
        };
        std::vector<Candidate> candidates;  // overview only
        for (int vi = 0; vi < n_visible; ++vi) {
            const int h = visible[vi];
            const TopKeys& top = cc.top[static_cast<size_t>(h)];
            const ImVec4 c = head_color(st.theme, h);
            const float dy = (static_cast<float>(vi) - 0.5f * static_cast<float>(n_visible - 1)) * head_step;
            auto add = [&](int q, int k, float w) {
                if (!(w > 0.0f) || w < st.lines.threshold) return;
                // Opacity grows a little faster than the weight so that 0.1-0.3 stays visible.
                const float alpha = sel.valid() || summing ? 0.3f + 0.7f * std::pow(w, 0.7f) : 0.95f * std::pow(w, 0.7f) * alpha_scale;
                lines.push_back({xq_right + 3.0f * s, yq(q) + dy, xk_left - 3.0f * s, yk(k) + dy, c.x, c.y, c.z,
                                 std::min(alpha, 1.0f), (0.8f + 4.0f * w) * s * width_scale});
            };
            // A query's kept keys; all of them in key order (as a full figure draws), else the
            // strongest first.
            auto from_query = [&](int q, int keep) {
                int n = 0;
                const TopEntry* list = top.query_top(q, &n);
                kept.assign(list, list + std::min(n, keep));
                if (keep >= T_k) std::sort(kept.begin(), kept.end(), [](const TopEntry& a, const TopEntry& b) { return a.index < b.index; });
                for (const TopEntry& e : kept) add(q, e.index, e.weight);
            };
            if (sel_key) {
                if (!top.done()) continue;
                int n = 0;
                const TopEntry* list = top.key_top(sel.index, &n);
                kept.assign(list, list + n);
                std::sort(kept.begin(), kept.end(), [](const TopEntry& a, const TopEntry& b) { return a.index < b.index; });
                for (const TopEntry& e : kept) add(e.index, sel.index, e.weight);
            } else if (sel_query) {
                from_query(sel.index, focus_k);
            } else if (summing) {
                for (int q : st.query_set) from_query(q, focus_k);
            } else {
                for (int q = 0; q < T_q; ++q) {
                    int n = 0;
                    const TopEntry* list = top.query_top(q, &n);
                    for (int i = 0; i < std::min(n, overview_k); ++i)
                        if (list[i].weight > 0.0f && list[i].weight >= st.lines.threshold)
                            candidates.push_back({list[i].weight, static_cast<int>(candidates.size()), q, list[i].index, vi});
                }
            }
        }
        cc.overview_lines = static_cast<long long>(candidates.size());
        if (!candidates.empty()) {
            // Past the budget the strongest lines stay (ties by order), drawn in their order.
            if (static_cast<int>(candidates.size()) > kMaxOverviewLines) {
                auto stronger = [](const Candidate& a, const Candidate& b) { return a.w > b.w || (a.w == b.w && a.order < b.order); };
                std::nth_element(candidates.begin(), candidates.begin() + kMaxOverviewLines, candidates.end(), stronger);
                candidates.resize(kMaxOverviewLines);
                std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) { return a.order < b.order; });
            }
            const bool all_keys = overview_k >= T_k;
            for (size_t i = 0; i < candidates.size();) {
                // One query of one head at a time: all keys in key order (as a full figure draws).
                size_t j = i;
                while (j < candidates.size() && candidates[j].q == candidates[i].q && candidates[j].vi == candidates[i].vi) ++j;
                if (all_keys) std::sort(candidates.begin() + i, candidates.begin() + j, [](const Candidate& a, const Candidate& b) { return a.k < b.k; });
                for (size_t n = i; n < j; ++n) {
                    const Candidate& c = candidates[n];
                    const int h = visible[c.vi];
                    const ImVec4 col = head_color(st.theme, h);
                    const float dy = (static_cast<float>(c.vi) - 0.5f * static_cast<float>(n_visible - 1)) * head_step;
                    const float alpha = 0.95f * std::pow(c.w, 0.7f) * alpha_scale;
                    lines.push_back({xq_right + 3.0f * s, yq(c.q) + dy, xk_left - 3.0f * s, yk(c.k) + dy, col.x, col.y, col.z,
                                     std::min(alpha, 1.0f), (0.8f + 4.0f * c.w) * s * width_scale});
                }
                i = j;
            }
        }
    }
    ctx.renderer.add_lines(dl, cc.lines, cc.lines_version);
    st.lines_drawn = static_cast<int>(cc.lines.size());
    {
        char note[160] = "";
        if (st.lines_ready < 1.0f)
            std::snprintf(note, sizeof note, attn::tr(st.lang, Str::LinesBuilding), static_cast<int>(st.lines_ready * 100.0f));
        else if (!sel.valid() && !summing && st.lines_drawn < cc.overview_lines)
            std::snprintf(note, sizeof note, attn::tr(st.lang, Str::LinesStrongest), st.lines_drawn, overview_k);
        else if (overview_k < T_k && !sel.valid() && !summing)
            std::snprintf(note, sizeof note, attn::tr(st.lang, Str::LinesTopK), overview_k,
                          static_cast<long long>(n_visible) * T_q * T_k);
        if (note[0] && !summing) {
            const float w = small->CalcTextSizeA(small->FontSize, FLT_MAX, 0.0f, note).x;
            dl->AddText(small, small->FontSize, ImVec2((min.x + max.x - w) * 0.5f, min.y + 8.0f * s), pal.text_muted, note);
        }
    }

    // [SECTION] Tokens and weights (ImGui) -------------------------------------------------
    // The selection's weights, per visible head: a selected query's rows on demand; a selected
    // key's strongest queries (every allowed query up to kTopAllUpTo).
    auto key_weight = [&](int h, int q) -> float {  // weight of query q on the selected key, 0 if not kept
        int n = 0;
        const TopEntry* list = cc.top[static_cast<size_t>(h)].key_top(sel.index, &n);
        for (int i = 0; i < n; ++i)
            if (list[i].index == q) return list[i].weight;
        return -1.0f;
    };
    auto sel_weight = [&](int h, int q, int k) -> float {  // < 0: not known (past the kept queries)
        if (sel_query) return cc.row(tr, h, sel.index)[static_cast<size_t>(k)];
        return key_weight(h, q);
    };
    // Mean over visible heads, used to tint the other column's tokens for the selection.
    auto mean_weight = [&](int q, int k) {
        if (n_visible == 0) return 0.0f;
        float sum = 0.0f;
        for (int h : visible) sum += std::max(sel_weight(h, q, k), 0.0f);
        return sum / static_cast<float>(n_visible);
    };
    const ImVec4 tint = n_visible == 1 ? head_color(st.theme, visible[0]) : head_color(st.theme, 0);
    char number[32];
    auto draw_numbers = [&](float x, float y, int q, int k) {
        const bool masked = tr.allowed(q, k) == 0;
        const float ny = y - numbers->FontSize * 0.5f;
        if (masked) {
            dl->AddText(small, small->FontSize, ImVec2(x, y - small->FontSize * 0.5f), pal.text_muted, attn::tr(st.lang, Str::Masked));
            return;
        }
        if (sel_key && !keys_ready) return;
        if (n_visible > 4 || n_visible == 0) {
            bool known = false;
            for (int h : visible) known = known || sel_weight(h, q, k) >= 0.0f;
            if (!known) return;
            std::snprintf(number, sizeof number, "%.2f", mean_weight(q, k));
            dl->AddText(numbers, numbers->FontSize, ImVec2(x, ny), pal.text, number);
            return;
        }
        for (int vi = 0; vi < n_visible; ++vi) {
            const float w = sel_weight(visible[vi], q, k);
            if (w < 0.0f) continue;
            std::snprintf(number, sizeof number, "%.2f", w);
            dl->AddText(numbers, numbers->FontSize, ImVec2(x + vi * num_w, ny),
                        ImGui::GetColorU32(head_color(st.theme, visible[vi])), number);
        }
    };
    auto draw_box = [&](const ImVec4& r, const std::string& text, bool is_sel, bool pinned, float tint_t) {
        ImU32 fill = is_sel ? (pinned ? pal.token_pinned : pal.token_hover) : mix_color(pal.token_fill, tint, tint_t * 0.75f);
        dl->AddRectFilled(ImVec2(r.x, r.y), ImVec2(r.z, r.w), fill, 4.0f * s);
        if (pinned) dl->AddRect(ImVec2(r.x, r.y), ImVec2(r.z, r.w), ImGui::GetColorU32(tint), 4.0f * s, 0, 1.5f * s);
        float ty = (r.y + r.w) * 0.5f - fs * 0.5f;
        ImU32 text_color = tint_t > 0.55f && st.theme == Theme::Light ? IM_COL32(255, 255, 255, 255) : pal.text;
        dl->AddText(font, fs, ImVec2(r.x + pad, ty), text_color, token_label(text));
    };
    // Summed attention of the set, per visible head: Σ over the set's rows (1×T_k each).
    std::vector<RowVector> sums;
    if (summing) {
        const std::vector<RowVector>& all = cc.summed(tr, st.query_set);
        for (int h : visible) sums.push_back(all[static_cast<size_t>(h)]);
    }
    auto draw_sums = [&](float x, float y, int k) {
        const float ny = y - numbers->FontSize * 0.5f;
        if (n_visible > 4) {
            float total = 0.0f;
            for (const RowVector& r : sums) total += r(k);
            std::snprintf(number, sizeof number, "%.2f", total / static_cast<float>(n_visible));
            dl->AddText(numbers, numbers->FontSize, ImVec2(x, ny), pal.text, number);
            return;
        }
        for (int vi = 0; vi < n_visible; ++vi) {
            std::snprintf(number, sizeof number, "%.2f", sums[vi](k));
            dl->AddText(numbers, numbers->FontSize, ImVec2(x + vi * num_w, ny), ImGui::GetColorU32(head_color(st.theme, visible[vi])), number);
        }
    };
    auto sum_tint = [&](int k) {
        float total = 0.0f;
        for (const RowVector& r : sums) total += r(k);
        return sums.empty() ? 0.0f : std::min(total / static_cast<float>(sums.size()), 1.0f);
    };
    if (summing) {
        char note[64];
        std::snprintf(note, sizeof note, attn::tr(st.lang, Str::SumOfQueries), st.query_set.size());
        const float w = small->CalcTextSizeA(small->FontSize, FLT_MAX, 0.0f, note).x;
        dl->AddText(small, small->FontSize, ImVec2((min.x + max.x - w) * 0.5f, min.y + 8.0f * s), pal.text_muted, note);
    }
    const float q_numbers_x = xq_right - rail_w - maxw_q - 2.0f * pad - weights_w + 4.0f * s - (compact ? 3.0f * s : 0.0f);
    const float k_numbers_x = xk_left + rail_w + maxw_k + 2.0f * pad + 8.0f * s + (compact ? 3.0f * s : 0.0f);
    auto draw_query = [&](int q) {
        ImVec4 r = query_box(q);
        bool is_sel = (sel_query && sel.index == q) || (summing && in_set(q));
        float t = sel_key ? mean_weight(q, sel.index) : 0.0f;
        draw_box(r, tr.queries[q], is_sel, is_sel && (st.pinned.valid() || summing), t);
        if (sel_key) draw_numbers(q_numbers_x, yq(q), q, sel.index);
    };
    auto draw_key = [&](int k) {
        ImVec4 r = key_box(k);
        bool is_sel = sel_key && sel.index == k;
        float t = summing ? sum_tint(k) : sel_query ? mean_weight(sel.index, k) : 0.0f;
        draw_box(r, tr.keys[k], is_sel, is_sel && st.pinned.valid(), t);
        if (summing) draw_sums(k_numbers_x, yk(k), k);
        else if (sel_query) draw_numbers(k_numbers_x, yk(k), sel.index, k);
    };
    if (!compact) {
        for (int q = 0; q < T_q; ++q) {
            draw_query(q);
            ImVec4 r = query_box(q);
            st.query_rects[q] = {r.x, r.y, r.z - r.x, r.w - r.y};
        }
        for (int k = 0; k < T_k; ++k) {
            draw_key(k);
            ImVec4 r = key_box(k);
            st.key_rects[k] = {r.x, r.y, r.z - r.x, r.w - r.y};
        }
    } else {
        // The rails: a strip per column, the selection's weights as a heat strip on the other one.
        const float xq0 = xq_right - rail_w, xk1 = xk_left + rail_w;
        dl->AddRectFilled(ImVec2(xq0, top_q), ImVec2(xq_right, top_q + T_q * row_q), pal.token_fill);
        dl->AddRectFilled(ImVec2(xk_left, top_k), ImVec2(xk1, top_k + T_k * row_k), pal.token_fill);
        for (int q = 0; q < T_q; ++q) st.query_rects[q] = {xq0, top_q + q * row_q, rail_w, row_q};
        for (int k = 0; k < T_k; ++k) st.key_rects[k] = {xk_left, top_k + k * row_k, rail_w, row_k};
        // Partners of the selection: the strongest by mean weight over the visible heads.
        std::vector<std::pair<float, int>> partners;
        if (sel_query) {
            for (int k = 0; k < T_k; ++k) {
                const float w = mean_weight(sel.index, k);
                if (w > 0.0f) partners.push_back({w, k});
            }
        } else if (sel_key && keys_ready) {
            std::vector<int> qs;
            for (int h : visible) {
                int n = 0;
                const TopEntry* list = cc.top[static_cast<size_t>(h)].key_top(sel.index, &n);
                for (int i = 0; i < n; ++i) qs.push_back(list[i].index);
            }
            std::sort(qs.begin(), qs.end());
            qs.erase(std::unique(qs.begin(), qs.end()), qs.end());
            for (int q : qs) partners.push_back({mean_weight(q, sel.index), q});
        } else if (summing) {
            for (int k = 0; k < T_k; ++k)
                if (sum_tint(k) > 0.0f) partners.push_back({sum_tint(k), k});
        }
        std::sort(partners.begin(), partners.end(), [](auto& a, auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
        // Heat strip of the weights on the partner side (bounded: at most one rect per token).
        const bool partners_are_keys = sel_query || summing;
        for (const auto& [w, i] : partners) {
            const float y0 = partners_are_keys ? top_k + i * row_k : top_q + i * row_q;
            const float h = std::max(partners_are_keys ? row_k : row_q, 1.0f);
            const float xa = partners_are_keys ? xk_left : xq0, xb = partners_are_keys ? xk1 : xq_right;
            dl->AddRectFilled(ImVec2(xa, y0), ImVec2(xb, y0 + h), mix_color(pal.token_fill, tint, std::min(1.0f, 0.25f + w)));
        }
        // Labels of the strongest partners that do not overlap a stronger one (or the selection).
        {
            std::vector<float> taken;
            if (sel_query) taken.push_back(yq(sel.index));
            if (sel_key) taken.push_back(yk(sel.index));
            std::vector<std::pair<float, int>> shown;
            for (const auto& p : partners) {
                if (static_cast<int>(shown.size()) == kPartnerLabels) break;
                const float y = partners_are_keys ? yk(p.second) : yq(p.second);
                const bool same_side = (partners_are_keys && sel_key) || (!partners_are_keys && sel_query);
                bool clear = true;
                for (size_t i = same_side ? 0 : (sel.valid() ? 1 : 0); i < taken.size(); ++i)
                    clear = clear && std::abs(taken[i] - y) >= box_h + 1.0f * s;
                if (!clear) continue;
                taken.push_back(y);
                shown.push_back(p);
            }
            partners = std::move(shown);
        }
        // Labels: every n-th token where they fit (n a round number), the emphasized ones on top.
        auto stride_for = [&](float row) {
            const int need = static_cast<int>(std::ceil((box_h + 2.0f * s) / row));
            for (int n : {1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000, 10000})
                if (n >= need) return n;
            return need;
        };
        std::vector<int> emph_q, emph_k;
        if (sel_query) emph_q.push_back(sel.index);
        if (sel_key) emph_k.push_back(sel.index);
        for (int q : st.query_set) emph_q.push_back(q);
        for (const auto& [w, i] : partners) (partners_are_keys ? emph_k : emph_q).push_back(i);
        auto near_emph = [&](const std::vector<int>& emph, float y, auto ypos) {
            for (int e : emph)
                if (std::abs(ypos(e) - y) < box_h + 1.0f * s) return true;
            return false;
        };
        const ImU32 tick = pal.text_muted;
        const int stride_q = stride_for(row_q), stride_k = stride_for(row_k);
        for (int q = 0; q < T_q; q += stride_q) {
            dl->AddLine(ImVec2(xq0 - 3.0f * s, yq(q)), ImVec2(xq0, yq(q)), tick, 1.0f * s);
            if (near_emph(emph_q, yq(q), yq)) continue;
            ImVec4 r = query_box(q);
            dl->AddText(font, fs, ImVec2(r.x + pad, yq(q) - fs * 0.5f), pal.text_muted, token_label(tr.queries[q]));
        }
        for (int k = 0; k < T_k; k += stride_k) {
            dl->AddLine(ImVec2(xk1, yk(k)), ImVec2(xk1 + 3.0f * s, yk(k)), tick, 1.0f * s);
            if (near_emph(emph_k, yk(k), yk)) continue;
            ImVec4 r = key_box(k);
            dl->AddText(font, fs, ImVec2(r.x + pad, yk(k) - fs * 0.5f), pal.text_muted, token_label(tr.keys[k]));
        }
        // Emphasized: weakest first so the strongest (and the selection) end on top.
        for (auto it = emph_q.rbegin(); it != emph_q.rend(); ++it) draw_query(*it);
        for (auto it = emph_k.rbegin(); it != emph_k.rend(); ++it) draw_key(*it);
        if (sel_query) draw_query(sel.index);
        if (sel_key) draw_key(sel.index);
    }

    // Heads legend inside the figure when there is no toolbar (PNG export).
    if (export_legend) {
        ImFont* lf = ctx.fonts.body;
        const float lfs = compact ? lf->FontSize : fs;
        if (!compact) lf = font;
        float x = min.x + 12.0f * s, y = max.y - lfs - 10.0f * s;
        for (int h : visible) {
            dl->AddRectFilled(ImVec2(x, y + 3.0f * s), ImVec2(x + lfs - 6.0f * s, y + lfs - 3.0f * s),
                              ImGui::GetColorU32(head_color(st.theme, h)), 2.0f * s);
            std::snprintf(number, sizeof number, "head %d", h + 1);
            dl->AddText(lf, lfs, ImVec2(x + lfs, y), pal.text, number);
            x += lfs + lf->CalcTextSizeA(lfs, FLT_MAX, 0.0f, number).x + 14.0f * s;
        }
    }
}

}  // namespace attn
