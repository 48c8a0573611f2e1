// lines_view.cpp: the head view. Queries in the left column, keys in the right one (for cross
// attention the target / decoder tokens on the left and the source / encoder tokens on the
// right), one line per query-key pair and visible head: opacity and width from the weight.
// Hover a token to show only its lines with the weights beside the other column; click pins.
//
// [SECTION] Layout
// [SECTION] Pointer
// [SECTION] Lines (GPU, instanced)
// [SECTION] Tokens and weights (ImGui)
#include "view.hpp"

#include "import.hpp"  // summed_attention

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace attn {

const char* token_label(const std::string& token) { return token.empty() ? "\xe2\x88\x85" : token.c_str(); }

namespace {

ImU32 mix_color(ImU32 a, ImVec4 b, float t) {
    ImVec4 av = ImGui::ColorConvertU32ToFloat4(a);
    t = std::clamp(t, 0.0f, 1.0f);
    return ImGui::GetColorU32(ImVec4(av.x + (b.x - av.x) * t, av.y + (b.y - av.y) * t,
                                     av.z + (b.z - av.z) * t, 1.0f));
}

}  // namespace

void draw_lines_view(ViewContext& ctx, ImVec2 min, ImVec2 max) {
    AppState& st = ctx.state;
    const Trace& tr = st.trace;
    const float s = ctx.scale;
    const Palette& pal = palette(st.theme);
    ImDrawList* dl = ImGui::GetWindowDrawList();
    ImFont* small = ctx.fonts.small;
    const int T_q = static_cast<int>(tr.queries.size());
    const int T_k = static_cast<int>(tr.keys.size());
    const bool cross = tr.kind == AttentionKind::Cross;
    st.query_rects.assign(T_q, ProbeRect{});
    st.key_rects.assign(T_k, ProbeRect{});
    st.lines_drawn = 0;
    if (T_q == 0 || T_k == 0) return;

    std::vector<int> visible;
    for (int h = 0; h < tr.heads; ++h)
        if (h < static_cast<int>(st.lines.head_visible.size()) && st.lines.head_visible[h]) visible.push_back(h);
    const int n_visible = static_cast<int>(visible.size());
    // weight(h, q, k): T_q×T_k per head
    auto weight = [&](int h, int q, int k) { return tr.attention.heads[h].weights(q, k); };

    // [SECTION] Layout ---------------------------------------------------------------------
    // Short sequences get the larger font and taller rows; long ones shrink to fit.
    const float avail_rows_h = max.y - min.y - 60.0f * s;
    ImFont* font = avail_rows_h / std::max(T_q, T_k) >= 46.0f * s ? ctx.fonts.title : ctx.fonts.body;
    const float fs = font->FontSize;
    const float pad = 7.0f * s;
    auto text_w = [&](const std::string& t) { return font->CalcTextSizeA(fs, FLT_MAX, 0.0f, token_label(t)).x; };
    float maxw_q = 0.0f, maxw_k = 0.0f;
    for (auto& t : tr.queries) maxw_q = std::max(maxw_q, text_w(t));
    for (auto& t : tr.keys) maxw_k = std::max(maxw_k, text_w(t));
    const int n_numbers = n_visible > 4 ? 1 : std::max(n_visible, 1);  // > 4 heads: their mean
    ImFont* numbers = ctx.fonts.body;  // the weights written beside the other column
    const float num_w = numbers->CalcTextSizeA(numbers->FontSize, FLT_MAX, 0.0f, "0.00").x + 10.0f * s;
    const float weights_w = n_numbers * num_w + 8.0f * s;
    const float header_h = small->FontSize + 18.0f * s;
    const float width = max.x - min.x;
    // The PNG export draws the heads legend along the bottom edge: keep that strip free.
    const float legend_h = !ctx.interactive && tr.heads > 1 ? fs + 16.0f * s : 0.0f;
    const float avail_h = std::max(max.y - min.y - header_h - 12.0f * s - legend_h, 10.0f);
    const float row_h = std::clamp(avail_h / static_cast<float>(std::max(T_q, T_k)), 12.0f * s, 52.0f * s);
    const float box_h = std::min(row_h - 3.0f * s, fs + 9.0f * s);
    const float fixed_w = 2.0f * weights_w + maxw_q + maxw_k + 4.0f * pad;
    const float span = std::clamp(width - fixed_w - 48.0f * s, 110.0f * s, 480.0f * s);
    const float total_w = fixed_w + span;
    const float x0 = min.x + std::max((width - total_w) * 0.5f, 8.0f * s);
    const float xq_right = x0 + weights_w + maxw_q + 2.0f * pad;  // right edge of query boxes
    const float xk_left = xq_right + span;                         // left edge of key boxes
    const float top = min.y + header_h;
    const float top_q = top + std::max((avail_h - T_q * row_h) * 0.5f, 0.0f);
    const float top_k = top + std::max((avail_h - T_k * row_h) * 0.5f, 0.0f);
    auto yq = [&](int i) { return top_q + (static_cast<float>(i) + 0.5f) * row_h; };
    auto yk = [&](int j) { return top_k + (static_cast<float>(j) + 0.5f) * row_h; };

    // Column headings.
    const char* left_title = attn::tr(cross ? Str::AxisTargetQueries : Str::AxisQueries);
    const char* right_title = attn::tr(cross ? Str::AxisSourceKeys : Str::AxisKeys);
    const float lt_w = small->CalcTextSizeA(small->FontSize, FLT_MAX, 0.0f, left_title).x;
    const float rt_w = small->CalcTextSizeA(small->FontSize, FLT_MAX, 0.0f, right_title).x;
    dl->AddText(small, small->FontSize, ImVec2(std::max(xq_right - lt_w, min.x + 6.0f * s), min.y + 8.0f * s),
                pal.text_muted, left_title);
    dl->AddText(small, small->FontSize, ImVec2(std::min(xk_left, max.x - rt_w - 6.0f * s), min.y + 8.0f * s),
                pal.text_muted, right_title);

    // [SECTION] Pointer --------------------------------------------------------------------
    auto query_box = [&](int i) {
        float w = text_w(tr.queries[i]) + 2.0f * pad;
        return ImVec4(xq_right - w, yq(i) - box_h * 0.5f, xq_right, yq(i) + box_h * 0.5f);
    };
    auto key_box = [&](int j) {
        float w = text_w(tr.keys[j]) + 2.0f * pad;
        return ImVec4(xk_left, yk(j) - box_h * 0.5f, xk_left + w, yk(j) + box_h * 0.5f);
    };
    if (ctx.interactive && ImGui::IsWindowHovered()) {
        ImVec2 m = ImGui::GetIO().MousePos;
        TokenRef found;
        // The whole row of a column is the target, not just the text, so short tokens are easy to hit.
        if (m.x >= xq_right - maxw_q - 2.0f * pad && m.x <= xq_right && m.y >= top_q && m.y < top_q + T_q * row_h)
            found = {TokenRef::Query, std::min(static_cast<int>((m.y - top_q) / row_h), T_q - 1)};
        if (m.x >= xk_left && m.x <= xk_left + maxw_k + 2.0f * pad && m.y >= top_k && m.y < top_k + T_k * row_h)
            found = {TokenRef::Key, std::min(static_cast<int>((m.y - top_k) / row_h), T_k - 1)};
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
    const bool summing = !st.query_set.empty();
    auto in_set = [&](int q) { return std::find(st.query_set.begin(), st.query_set.end(), q) != st.query_set.end(); };
    const TokenRef sel = summing ? TokenRef{} : st.selected();

    // [SECTION] Lines (GPU, instanced) -----------------------------------------------------
    // Past kMaxLines the figure is a solid fill and the GPU work grows with T²: keep each
    // query's strongest keys only (and say so), unless the user chose a tighter top-k.
    constexpr long long kMaxLines = 200000;
    const long long all_lines = static_cast<long long>(n_visible) * T_q * T_k;
    int keys_per_query = st.lines.top_k;  // 0 = all
    bool capped = false;
    if (all_lines > kMaxLines && sel.side == TokenRef::None && !summing) {
        int cap = std::max(1, static_cast<int>(kMaxLines / std::max<long long>(1, static_cast<long long>(n_visible) * T_q)));
        if (keys_per_query == 0 || keys_per_query > cap) {
            keys_per_query = cap;
            capped = true;
        }
    }
    std::vector<LineInstance> lines;
    lines.reserve(static_cast<size_t>(std::min(all_lines, kMaxLines)));
    const float head_step = n_visible > 1 ? std::min(2.5f * s, box_h * 0.5f / n_visible) : 0.0f;
    std::vector<int> order(T_k);
    for (int vi = 0; vi < n_visible; ++vi) {
        const int h = visible[vi];
        const ImVec4 c = head_color(st.theme, h);
        const float dy = (static_cast<float>(vi) - 0.5f * static_cast<float>(n_visible - 1)) * head_step;
        for (int q = 0; q < T_q; ++q) {
            if (sel.side == TokenRef::Query && sel.index != q) continue;
            if (summing && !in_set(q)) continue;
            std::iota(order.begin(), order.end(), 0);
            int keep = T_k;
            if (keys_per_query > 0 && keys_per_query < T_k && sel.side != TokenRef::Key) {
                keep = keys_per_query;
                std::partial_sort(order.begin(), order.begin() + keep, order.end(),
                                  [&](int a, int b) { return weight(h, q, a) > weight(h, q, b); });
            }
            for (int n = 0; n < keep; ++n) {
                const int k = order[n];
                if (sel.side == TokenRef::Key && sel.index != k) continue;
                const float w = weight(h, q, k);
                if (!(w > 0.0f) || w < st.lines.threshold) continue;
                // Opacity grows a little faster than the weight so that 0.1-0.3 stays visible.
                const float alpha = sel.valid() || summing ? 0.3f + 0.7f * std::pow(w, 0.7f) : 0.95f * std::pow(w, 0.7f);
                lines.push_back({xq_right + 3.0f * s, yq(q) + dy, xk_left - 3.0f * s, yk(k) + dy,
                                 c.x, c.y, c.z, std::min(alpha, 1.0f), (0.8f + 4.0f * w) * s});
            }
        }
    }
    ctx.renderer.add_lines(dl, lines);
    st.lines_drawn = static_cast<int>(lines.size());
    if (capped) {
        char note[160];
        std::snprintf(note, sizeof note, attn::tr(Str::LinesTopK), keys_per_query, all_lines);
        const float w = small->CalcTextSizeA(small->FontSize, FLT_MAX, 0.0f, note).x;
        dl->AddText(small, small->FontSize, ImVec2((min.x + max.x - w) * 0.5f, min.y + 8.0f * s), pal.text_muted, note);
    }

    // [SECTION] Tokens and weights (ImGui) -------------------------------------------------
    // Mean over visible heads, used to tint the other column's tokens for the selection.
    auto mean_weight = [&](int q, int k) {
        if (n_visible == 0) return 0.0f;
        float sum = 0.0f;
        for (int h : visible) sum += weight(h, q, k);
        return sum / static_cast<float>(n_visible);
    };
    const ImVec4 tint = n_visible == 1 ? head_color(st.theme, visible[0]) : head_color(st.theme, 0);
    char number[32];
    auto draw_numbers = [&](float x, float y, int q, int k) {
        const bool masked = tr.allowed(q, k) == 0;
        const float ny = y - numbers->FontSize * 0.5f;
        if (masked) {
            dl->AddText(small, small->FontSize, ImVec2(x, y - small->FontSize * 0.5f), pal.text_muted, attn::tr(Str::Masked));
            return;
        }
        if (n_visible > 4 || n_visible == 0) {
            std::snprintf(number, sizeof number, "%.2f", mean_weight(q, k));
            dl->AddText(numbers, numbers->FontSize, ImVec2(x, ny), pal.text, number);
            return;
        }
        for (int vi = 0; vi < n_visible; ++vi) {
            std::snprintf(number, sizeof number, "%.2f", weight(visible[vi], q, k));
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
    if (summing)
        for (int h : visible) sums.push_back(summed_attention(tr.attention.heads[h].weights, st.query_set));
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
        std::snprintf(note, sizeof note, attn::tr(Str::SumOfQueries), st.query_set.size());
        const float w = small->CalcTextSizeA(small->FontSize, FLT_MAX, 0.0f, note).x;
        dl->AddText(small, small->FontSize, ImVec2((min.x + max.x - w) * 0.5f, min.y + 8.0f * s), pal.text_muted, note);
    }
    for (int q = 0; q < T_q; ++q) {
        ImVec4 r = query_box(q);
        bool is_sel = (sel.side == TokenRef::Query && sel.index == q) || (summing && in_set(q));
        float t = sel.side == TokenRef::Key ? mean_weight(q, sel.index) : 0.0f;
        draw_box(r, tr.queries[q], is_sel, is_sel && (st.pinned.valid() || summing), t);
        st.query_rects[q] = {r.x, r.y, r.z - r.x, r.w - r.y};
        if (sel.side == TokenRef::Key)
            draw_numbers(xq_right - maxw_q - 2.0f * pad - weights_w + 4.0f * s, yq(q), q, sel.index);
    }
    for (int k = 0; k < T_k; ++k) {
        ImVec4 r = key_box(k);
        bool is_sel = sel.side == TokenRef::Key && sel.index == k;
        float t = summing ? sum_tint(k) : sel.side == TokenRef::Query ? mean_weight(sel.index, k) : 0.0f;
        draw_box(r, tr.keys[k], is_sel, is_sel && st.pinned.valid(), t);
        st.key_rects[k] = {r.x, r.y, r.z - r.x, r.w - r.y};
        if (summing) draw_sums(xk_left + maxw_k + 2.0f * pad + 8.0f * s, yk(k), k);
        else if (sel.side == TokenRef::Query)
            draw_numbers(xk_left + maxw_k + 2.0f * pad + 8.0f * s, yk(k), sel.index, k);
    }

    // Heads legend inside the figure when there is no toolbar (PNG export).
    if (!ctx.interactive && tr.heads > 1) {
        float x = min.x + 12.0f * s, y = max.y - fs - 10.0f * s;
        for (int h : visible) {
            dl->AddRectFilled(ImVec2(x, y + 3.0f * s), ImVec2(x + fs - 6.0f * s, y + fs - 3.0f * s),
                              ImGui::GetColorU32(head_color(st.theme, h)), 2.0f * s);
            std::snprintf(number, sizeof number, "head %d", h + 1);
            dl->AddText(font, fs, ImVec2(x + fs, y), pal.text, number);
            x += fs + font->CalcTextSizeA(fs, FLT_MAX, 0.0f, number).x + 14.0f * s;
        }
    }
}

}  // namespace attn
