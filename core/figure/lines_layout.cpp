// lines_layout.cpp: the lines view's layout (see lines_layout.hpp). The numbers are the ones
// web/ui/lines_view.cpp computed inline before it drew from this: s is the UI scale.
//
// [SECTION] Weights
// [SECTION] Geometry
// [SECTION] Lines
// [SECTION] Items
#include "lines_layout.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

namespace attn {
namespace {

std::string weight_text(float w) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.2f", w);
    return buffer;
}

}  // namespace

LabelWidths label_widths(const Trace& trace, FontRole font, const TextMeasure& measure) {
    LabelWidths w;
    for (const auto& t : trace.queries) w.q = std::max(w.q, measure.width(token_text(t), font));
    for (const auto& t : trace.keys) w.k = std::max(w.k, measure.width(token_text(t), font));
    return w;
}

// [SECTION] Weights ----------------------------------------------------------------------------

LinesWeights::LinesWeights(const Trace& trace)
    : trace_(&trace), T_q_(trace.T_q()), T_k_(trace.T_k()), heads_(trace.heads) {
    for (int h = 0; h < heads_; ++h) top_.emplace_back(trace, h, top_keys_capacity(T_k_), top_keys_capacity(T_q_));
}

bool LinesWeights::all_done() const {
    return std::all_of(top_.begin(), top_.end(), [](const TopKeys& t) { return t.done(); });
}

void LinesWeights::advance(const std::vector<int>& visible, double budget_seconds) {
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    const double budget_ms = 1000.0 * budget_seconds;  // at least one block of rows
    std::vector<int> order = visible;
    for (int h = 0; h < heads_; ++h)
        if (std::find(order.begin(), order.end(), h) == order.end()) order.push_back(h);
    for (int h : order) {
        TopKeys& k = top_[static_cast<size_t>(h)];
        while (!k.done()) {
            k.advance(*trace_, 256 * 1024);
            const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
            if (budget_seconds > 0.0 && ms > budget_ms) return;
        }
    }
}

float LinesWeights::progress(const std::vector<int>& visible) const {
    if (visible.empty()) return 1.0f;
    float p = 0.0f;
    for (int h : visible) p += top_[static_cast<size_t>(h)].progress();
    return p / static_cast<float>(visible.size());
}

const std::vector<float>& LinesWeights::row(int head, int q) {
    if (row_query_ != q) {
        rows_.assign(static_cast<size_t>(heads_), {});
        row_query_ = q;
    }
    std::vector<float>& r = rows_[static_cast<size_t>(head)];
    if (r.empty()) {
        r.resize(static_cast<size_t>(T_k_));
        attention_rows(*trace_, head, q, q + 1, r.data());
    }
    return r;
}

const std::vector<RowVector>& LinesWeights::summed(const std::vector<int>& set) {
    if (set != sum_set_ || sums_.empty()) {
        sum_set_ = set;
        sums_.clear();
        for (int h = 0; h < heads_; ++h) sums_.push_back(summed_rows(*trace_, h, set));
    }
    return sums_;
}

// [SECTION] Geometry ---------------------------------------------------------------------------
// Short sequences get the larger font and taller rows; long ones shrink to fit. Past a readable
// row per token (12 px at scale 1) both columns fill the height as rails.

namespace {

// The header's lines above the tokens (a narrow box, a phone, needs more than one): the two
// columns' titles side by side, or the keys' under the queries'; and the note ("showing the
// strongest … lines", "sum of …") centred between them, or on a line of its own when the
// longest note would not fit between the titles.
struct HeaderLines {
    bool titles_stacked = false;
    int note_line = 0;  // 0: with the titles
    int lines = 1;
};
HeaderLines header_lines(const LinesInput& in, const TextMeasure& m) {
    const bool cross = in.trace->kind == AttentionKind::Cross;
    const float s = in.scale;
    const float titles = m.width(cross ? in.words.target_queries : in.words.queries, FontRole::Small) +
                         m.width(cross ? in.words.source_keys : in.words.keys, FontRole::Small);
    HeaderLines h;
    h.titles_stacked = titles + 24.0f * s > in.box.w();
    const float note = m.width(printf_string(in.words.strongest, 32768, 1000), FontRole::Small);
    if (h.titles_stacked || titles + note + 48.0f * s > in.box.w()) h.note_line = h.titles_stacked ? 2 : 1;
    h.lines = 1 + std::max(h.note_line, h.titles_stacked ? 1 : 0);
    return h;
}

float header_height(const LinesInput& in, const TextMeasure& m) {
    const float line = m.size(FontRole::Small);
    return line + 18.0f * in.scale + static_cast<float>(header_lines(in, m).lines - 1) * (line + 4.0f * in.scale);
}

bool is_compact(const LinesInput& in, const TextMeasure& m) {
    const int T_max = std::max(in.trace->T_q(), in.trace->T_k());
    const float avail_guess = std::max(in.box.h() - header_height(in, m) - 12.0f * in.scale, 10.0f);
    return avail_guess / static_cast<float>(T_max) < 12.0f * in.scale;
}

}  // namespace

FontRole lines_token_font(const LinesInput& in, const TextMeasure& m) {
    const float s = in.scale;
    const int T_max = std::max(in.trace->T_q(), in.trace->T_k());
    const float avail_rows_h = in.box.h() - 60.0f * s;
    return is_compact(in, m) ? FontRole::Small : avail_rows_h / T_max >= 46.0f * s ? FontRole::Title : FontRole::Body;
}

LinesLayout lay_out_lines(const LinesInput& in, const TextMeasure& m, const LabelWidths& widths) {
    LinesLayout L;
    const Trace& tr = *in.trace;
    const float s = in.scale;
    L.trace = &tr;
    L.T_q = tr.T_q(), L.T_k = tr.T_k();
    L.visible = in.visible;
    L.s = s;
    L.box = in.box;
    L.words = in.words;
    L.dark = in.dark;
    L.ready = in.ready;
    if (L.T_q == 0 || L.T_k == 0) return L;
    const int T_q = L.T_q, T_k = L.T_k, T_max = std::max(T_q, T_k);
    const int n_visible = static_cast<int>(in.visible.size());
    L.header_h = header_height(in, m);
    const HeaderLines header = header_lines(in, m);
    L.titles_stacked = header.titles_stacked;
    L.note_line = header.note_line;
    L.legend = in.legend && tr.heads > 1;
    L.compact = is_compact(in, m);
    const bool compact = L.compact;
    L.font = lines_token_font(in, m);
    L.fs = m.size(L.font);
    const float fs = L.fs;
    L.pad = compact ? 4.0f * s : 7.0f * s;
    // Compact labels are few and short-lived: cap their column so the lines keep the room.
    L.maxw_q = compact ? std::min(widths.q, 160.0f * s) : widths.q;
    L.maxw_k = compact ? std::min(widths.k, 160.0f * s) : widths.k;
    const int n_numbers = n_visible > 4 ? 1 : std::max(n_visible, 1);  // > 4 heads: their mean
    L.number_font = compact ? FontRole::Small : FontRole::Body;      // the weights beside the other column
    L.num_w = m.width("0.00", L.number_font) + 10.0f * s;
    L.weights_w = n_numbers * L.num_w + 8.0f * s;
    const float width = in.box.w();
    L.rail_w = compact ? 6.0f * s : 0.0f;  // the compact column: a strip, a row per token
    // A figure drawn alone has the heads legend along the bottom edge: keep that strip free.
    const float legend_h = L.legend ? (compact ? m.size(FontRole::Body) : fs) + 16.0f * s : 0.0f;
    L.avail_h = std::max(in.box.h() - L.header_h - 12.0f * s - legend_h, 10.0f);
    const float row_h = compact ? 0.0f : std::clamp(L.avail_h / static_cast<float>(T_max), 12.0f * s, 52.0f * s);
    L.row_q = compact ? L.avail_h / static_cast<float>(T_q) : row_h;
    L.row_k = compact ? L.avail_h / static_cast<float>(T_k) : row_h;
    L.box_h = compact ? fs + 4.0f * s : std::min(row_h - 3.0f * s, fs + 9.0f * s);
    if (!compact && in.crops.any()) {
        L.crops = in.crops, L.crop_w = L.box_h;
        L.maxw_q += L.crop_w, L.maxw_k += L.crop_w;
    }
    const float fixed_w = 2.0f * L.weights_w + L.maxw_q + L.maxw_k + 4.0f * L.pad + 2.0f * L.rail_w;
    // The lines' span: up to 480 (640 compact), at least 110, less on a narrow box (a phone) so
    // that both columns stay inside it while 40 are left for the lines.
    const float min_span = std::clamp(width - fixed_w - 16.0f * s, 40.0f * s, 110.0f * s);
    const float span = std::clamp(width - fixed_w - 48.0f * s, min_span, compact ? 640.0f * s : 480.0f * s);
    const float total_w = fixed_w + span;
    const float x0 = in.box.x0 + std::max((width - total_w) * 0.5f, 8.0f * s);
    L.xq_right = x0 + L.weights_w + L.maxw_q + 2.0f * L.pad + L.rail_w;
    L.xk_left = L.xq_right + span;
    const float top = in.box.y0 + L.header_h;
    L.top_q = top + std::max((L.avail_h - T_q * L.row_q) * 0.5f, 0.0f);
    L.top_k = top + std::max((L.avail_h - T_k * L.row_k) * 0.5f, 0.0f);
    L.q_numbers_x = L.xq_right - L.rail_w - L.maxw_q - 2.0f * L.pad - L.weights_w + 4.0f * s - (compact ? 3.0f * s : 0.0f);
    L.k_numbers_x = L.xk_left + L.rail_w + L.maxw_k + 2.0f * L.pad + 8.0f * s + (compact ? 3.0f * s : 0.0f);
    L.head_step = n_visible > 1 ? std::min(2.5f * s, std::max(L.box_h, 4.0f * s) * 0.5f / n_visible) : 0.0f;
    const int cap = top_keys_capacity(T_k);
    const bool user_k = in.top_k > 0;
    L.overview_k = user_k ? std::min(in.top_k, cap) : lines_auto_top_k(tr);
    L.focus_k = user_k ? std::min(in.top_k, cap) : cap;
    return L;
}

// Compact: labels end at the rail; a query's label box sits left of it, a key's right of it.
Box LinesLayout::query_box(int i, float text_w) const {
    const float w = text_w + 2.0f * pad;
    const float right = xq_right - rail_w - (compact ? 3.0f * s : 0.0f);
    return {right - w, yq(i) - box_h * 0.5f, right, yq(i) + box_h * 0.5f};
}

Box LinesLayout::key_box(int j, float text_w) const {
    const float w = text_w + 2.0f * pad;
    const float left = xk_left + rail_w + (compact ? 3.0f * s : 0.0f);
    return {left, yk(j) - box_h * 0.5f, left + w, yk(j) + box_h * 0.5f};
}

LinesLayout::Hit LinesLayout::hit(float x, float y) const {
    Hit found;
    if (T_q == 0 || T_k == 0) return found;
    if (x >= xq_right - maxw_q - 2.0f * pad - rail_w && x <= xq_right && y >= top_q && y < top_q + T_q * row_q)
        found = {1, std::min(static_cast<int>((y - top_q) / row_q), T_q - 1)};
    if (x >= xk_left && x <= xk_left + maxw_k + 2.0f * pad + rail_w && y >= top_k && y < top_k + T_k * row_k)
        found = {2, std::min(static_cast<int>((y - top_k) / row_k), T_k - 1)};
    return found;
}

// [SECTION] Lines ------------------------------------------------------------------------------

long long choose_lines(const LinesLayout& L, const LinesSelection& sel, const LinesWeights& weights, float threshold,
                       std::vector<LineSeg>& lines, std::vector<LineRef>* refs) {
    lines.clear();
    if (refs) refs->clear();
    if (L.T_q == 0 || L.T_k == 0) return 0;
    const float s = L.s;
    const int T_q = L.T_q, T_k = L.T_k;
    const int n_visible = static_cast<int>(L.visible.size());
    const bool summing = !sel.set.empty();
    const bool sel_query = !summing && sel.query >= 0 && sel.query < T_q;
    const bool sel_key = !summing && !sel_query && sel.key >= 0 && sel.key < T_k;
    const bool focus = sel_query || sel_key || summing;
    std::vector<TopEntry> kept;
    const float width_scale = L.compact ? 0.4f : 1.0f;  // thousands of strands: thinner
    // Compact: thousands of overlapping strands; fainter in proportion to their density (lines
    // per pixel of column) so that the figure shows where attention gathers, not a solid fill.
    const float density = L.compact ? static_cast<float>(std::min<long long>(
                                          static_cast<long long>(L.overview_k) * T_q * n_visible, kMaxOverviewLines)) /
                                          std::max(L.avail_h, 1.0f)
                                    : 0.0f;
    const float alpha_scale = L.compact && !focus ? std::clamp(6.0f / std::max(density, 1e-3f), 0.08f, 1.0f) : 1.0f;
    auto push = [&](int vi, int q, int k, float w, float alpha) {
        const int h = L.visible[static_cast<size_t>(vi)];
        const Color c = head_color(L.dark, h);
        const float dy = (static_cast<float>(vi) - 0.5f * static_cast<float>(n_visible - 1)) * L.head_step;
        lines.push_back({L.xq_right + 3.0f * s, L.yq(q) + dy, L.xk_left - 3.0f * s, L.yk(k) + dy, c.r, c.g, c.b,
                         std::min(alpha, 1.0f), (0.8f + 4.0f * w) * s * width_scale});
        if (refs) refs->push_back({h, q, k, w});
    };
    struct Candidate {
        float w;
        int order, q, k, vi;
    };
    std::vector<Candidate> candidates;  // overview only
    for (int vi = 0; vi < n_visible; ++vi) {
        const TopKeys& top = weights.top(L.visible[static_cast<size_t>(vi)]);
        auto add = [&](int q, int k, float w) {
            if (!(w > 0.0f) || w < threshold) return;
            // Opacity grows a little faster than the weight so that 0.1-0.3 stays visible.
            const float alpha = focus ? 0.3f + 0.7f * std::pow(w, 0.7f) : 0.95f * std::pow(w, 0.7f) * alpha_scale;
            push(vi, q, k, w, alpha);
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
            const TopEntry* list = top.key_top(sel.key, &n);
            kept.assign(list, list + n);
            std::sort(kept.begin(), kept.end(), [](const TopEntry& a, const TopEntry& b) { return a.index < b.index; });
            for (const TopEntry& e : kept) add(e.index, sel.key, e.weight);
        } else if (sel_query) {
            from_query(sel.query, L.focus_k);
        } else if (summing) {
            for (int q : sel.set) from_query(q, L.focus_k);
        } else {
            for (int q = 0; q < T_q; ++q) {
                int n = 0;
                const TopEntry* list = top.query_top(q, &n);
                for (int i = 0; i < std::min(n, L.overview_k); ++i)
                    if (list[i].weight > 0.0f && list[i].weight >= threshold)
                        candidates.push_back({list[i].weight, static_cast<int>(candidates.size()), q, list[i].index, vi});
            }
        }
    }
    const long long overview = static_cast<long long>(candidates.size());
    if (!candidates.empty()) {
        // Past the budget the strongest lines stay (ties by order), drawn in their order.
        if (static_cast<int>(candidates.size()) > kMaxOverviewLines) {
            auto stronger = [](const Candidate& a, const Candidate& b) { return a.w > b.w || (a.w == b.w && a.order < b.order); };
            std::nth_element(candidates.begin(), candidates.begin() + kMaxOverviewLines, candidates.end(), stronger);
            candidates.resize(kMaxOverviewLines);
            std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) { return a.order < b.order; });
        }
        const bool all_keys = L.overview_k >= T_k;
        for (size_t i = 0; i < candidates.size();) {
            // One query of one head at a time: all keys in key order (as a full figure draws).
            size_t j = i;
            while (j < candidates.size() && candidates[j].q == candidates[i].q && candidates[j].vi == candidates[i].vi) ++j;
            if (all_keys) std::sort(candidates.begin() + i, candidates.begin() + j, [](const Candidate& a, const Candidate& b) { return a.k < b.k; });
            for (size_t n = i; n < j; ++n) {
                const Candidate& c = candidates[n];
                push(c.vi, c.q, c.k, c.w, 0.95f * std::pow(c.w, 0.7f) * alpha_scale);
            }
            i = j;
        }
    }
    return overview;
}

// [SECTION] Items ------------------------------------------------------------------------------

LinesItems lines_items(const LinesLayout& L, const LinesSelection& selection, LinesWeights& weights, const TextMeasure& m,
                       int lines_drawn, long long overview_lines) {
    LinesItems out;
    const int T_q = L.T_q, T_k = L.T_k;
    out.query_rects.assign(static_cast<size_t>(T_q), Box{});
    out.key_rects.assign(static_cast<size_t>(T_k), Box{});
    if (T_q == 0 || T_k == 0) return out;
    const Trace& tr = *L.trace;
    const float s = L.s, fs = L.fs, pad = L.pad;
    const FigurePalette& pal = figure_palette(L.dark);
    const std::vector<int>& visible = L.visible;
    const int n_visible = static_cast<int>(visible.size());
    std::vector<Item>& items = out.items;
    const float small = m.size(FontRole::Small);

    const bool summing = !selection.set.empty();
    const bool sel_query = !summing && selection.query >= 0 && selection.query < T_q;
    const bool sel_key = !summing && !sel_query && selection.key >= 0 && selection.key < T_k;
    const bool any_sel = sel_query || sel_key;
    const int sel_index = sel_query ? selection.query : sel_key ? selection.key : -1;
    const bool keys_ready = std::all_of(visible.begin(), visible.end(), [&](int h) { return weights.top(h).done(); });
    auto in_set = [&](int q) { return std::find(selection.set.begin(), selection.set.end(), q) != selection.set.end(); };

    // Column headings.
    const bool cross = tr.kind == AttentionKind::Cross;
    const std::string& left_title = cross ? L.words.target_queries : L.words.queries;
    const std::string& right_title = cross ? L.words.source_keys : L.words.keys;
    const float lt_w = m.width(left_title, FontRole::Small), rt_w = m.width(right_title, FontRole::Small);
    items.push_back(text_item(ItemRole::Heading, std::max(L.xq_right - lt_w, L.box.x0 + 6.0f * s), L.box.y0 + 8.0f * s,
                              FontRole::Small, pal.text_muted, left_title, lt_w));
    const float rt_y = L.box.y0 + 8.0f * s + (L.titles_stacked ? small + 4.0f * s : 0.0f);
    items.push_back(text_item(ItemRole::Heading, std::max(std::min(L.xk_left, L.box.x1 - rt_w - 6.0f * s), L.box.x0 + 6.0f * s),
                              rt_y, FontRole::Small, pal.text_muted, right_title, rt_w));
    {
        Item lines;
        lines.kind = Item::Lines;
        items.push_back(lines);
    }
    // The note above the lines: building, or how many lines are shown of how many.
    auto centred_note = [&](const std::string& note) {
        const float w = m.width(note, FontRole::Small);
        items.push_back(text_item(ItemRole::Note, (L.box.x0 + L.box.x1 - w) * 0.5f,
                                  L.box.y0 + 8.0f * s + static_cast<float>(L.note_line) * (small + 4.0f * s), FontRole::Small,
                                  pal.text_muted, note, w));
    };
    {
        std::string note;
        if (L.ready < 1.0f) note = printf_string(L.words.building, static_cast<int>(L.ready * 100.0f));
        else if (!any_sel && !summing && lines_drawn < overview_lines) note = printf_string(L.words.strongest, lines_drawn, L.overview_k);
        else if (L.overview_k < T_k && !any_sel && !summing)
            note = printf_string(L.words.top_k, L.overview_k, static_cast<long long>(n_visible) * T_q * T_k);
        if (!note.empty() && !summing) centred_note(note);
    }

    // The selection's weights, per visible head: a selected query's row on demand; a selected
    // key's strongest queries (every allowed query up to kTopAllUpTo).
    auto key_weight = [&](int h, int q) -> float {  // weight of query q on the selected key, −1 if not kept
        int n = 0;
        const TopEntry* list = weights.top(h).key_top(sel_index, &n);
        for (int i = 0; i < n; ++i)
            if (list[i].index == q) return list[i].weight;
        return -1.0f;
    };
    auto sel_weight = [&](int h, int q, int k) -> float {  // < 0: not known (past the kept queries)
        if (sel_query) return weights.row(h, sel_index)[static_cast<size_t>(k)];
        return key_weight(h, q);
    };
    // Mean over visible heads, used to tint the other column's tokens for the selection.
    auto mean_weight = [&](int q, int k) {
        if (n_visible == 0) return 0.0f;
        float sum = 0.0f;
        for (int h : visible) sum += std::max(sel_weight(h, q, k), 0.0f);
        return sum / static_cast<float>(n_visible);
    };
    const Color tint = head_color(L.dark, n_visible == 1 ? visible[0] : 0);
    const float number_size = m.size(L.number_font);
    auto number = [&](float x, float y, const std::string& text, Color color, int index) {
        items.push_back(text_item(ItemRole::Number, x, y, L.number_font, color, text, m.width(text, L.number_font), Item::Left, index));
    };
    auto numbers = [&](float x, float y, int q, int k, int index) {
        if (tr.allowed(q, k) == 0) {
            items.push_back(text_item(ItemRole::NumberMasked, x, y - small * 0.5f, FontRole::Small, pal.text_muted, L.words.masked,
                                      m.width(L.words.masked, FontRole::Small), Item::Left, index));
            return;
        }
        if (sel_key && !keys_ready) return;
        const float ny = y - number_size * 0.5f;
        if (n_visible > 4 || n_visible == 0) {
            bool known = false;
            for (int h : visible) known = known || sel_weight(h, q, k) >= 0.0f;
            if (known) number(x, ny, weight_text(mean_weight(q, k)), pal.text, index);
            return;
        }
        for (int vi = 0; vi < n_visible; ++vi) {
            const float w = sel_weight(visible[vi], q, k);
            if (w >= 0.0f) number(x + vi * L.num_w, ny, weight_text(w), head_color(L.dark, visible[vi]), index);
        }
    };
    // A token's box: the selection's fill (pinned: outlined in the tint), else tinted by its weight.
    auto token = [&](bool query, int i, const Box& r, float label_w, bool is_sel, bool pinned, float tint_t) {
        const Color fill = is_sel ? (pinned ? pal.token_pinned : pal.token_hover) : mix(pal.token_fill, tint, tint_t * 0.75f);
        items.push_back(rect_item(query ? ItemRole::TokenQuery : ItemRole::TokenKey, r, fill, 4.0f * s, i));
        if (pinned) items.push_back(outline_item(query ? ItemRole::TokenQuery : ItemRole::TokenKey, r, tint, 1.5f * s, 4.0f * s, i));
        const Color ink = tint_t > 0.55f && !L.dark ? pal.on_tint : pal.text;
        const std::string& t = query ? tr.queries[i] : tr.keys[i];
        Item crop;
        const float side = L.box_h - 4.0f * s;
        if (L.crops.item(i, {r.x0 + pad, r.y0 + 2.0f * s, r.x0 + pad + side, r.y0 + 2.0f * s + side}, crop)) items.push_back(crop);
        items.push_back(text_item(ItemRole::TokenLabel, r.x0 + pad + (L.crops.has(i) ? L.crop_w : 0.0f), (r.y0 + r.y1) * 0.5f - fs * 0.5f,
                                  L.font, ink, token_text(t), label_w, query ? Item::Right : Item::Left, i));
    };
    // Summed attention of the set, per visible head: Σ over the set's rows (1×T_k each).
    std::vector<RowVector> sums;
    if (summing) {
        const std::vector<RowVector>& all = weights.summed(selection.set);
        for (int h : visible) sums.push_back(all[static_cast<size_t>(h)]);
    }
    auto draw_sums = [&](float x, float y, int k) {
        const float ny = y - number_size * 0.5f;
        if (n_visible > 4) {
            float total = 0.0f;
            for (const RowVector& r : sums) total += r(k);
            number(x, ny, weight_text(total / static_cast<float>(n_visible)), pal.text, k);
            return;
        }
        for (int vi = 0; vi < n_visible; ++vi) number(x + vi * L.num_w, ny, weight_text(sums[vi](k)), head_color(L.dark, visible[vi]), k);
    };
    auto sum_tint = [&](int k) {
        float total = 0.0f;
        for (const RowVector& r : sums) total += r(k);
        return sums.empty() ? 0.0f : std::min(total / static_cast<float>(sums.size()), 1.0f);
    };
    if (summing) centred_note(printf_string(L.words.sum_of, selection.set.size()));
    auto draw_query = [&](int q) {
        const float w = m.width(token_text(tr.queries[q]), L.font);
        const Box r = L.query_box(q, w + (L.crops.has(q) ? L.crop_w : 0.0f));
        const bool is_sel = (sel_query && sel_index == q) || (summing && in_set(q));
        const float t = sel_key ? mean_weight(q, sel_index) : 0.0f;
        token(true, q, r, w, is_sel, is_sel && (selection.pinned || summing), t);
        if (sel_key) numbers(L.q_numbers_x, L.yq(q), q, sel_index, q);
        return r;
    };
    auto draw_key = [&](int k) {
        const float w = m.width(token_text(tr.keys[k]), L.font);
        const Box r = L.key_box(k, w + (L.crops.has(k) ? L.crop_w : 0.0f));
        const bool is_sel = sel_key && sel_index == k;
        const float t = summing ? sum_tint(k) : sel_query ? mean_weight(sel_index, k) : 0.0f;
        token(false, k, r, w, is_sel, is_sel && selection.pinned, t);
        if (summing) draw_sums(L.k_numbers_x, L.yk(k), k);
        else if (sel_query) numbers(L.k_numbers_x, L.yk(k), sel_index, k, k);
        return r;
    };

    if (!L.compact) {
        for (int q = 0; q < T_q; ++q) out.query_rects[static_cast<size_t>(q)] = draw_query(q);
        for (int k = 0; k < T_k; ++k) out.key_rects[static_cast<size_t>(k)] = draw_key(k);
    } else {
        // The rails: a strip per column, the selection's weights as a heat strip on the other one.
        const float xq0 = L.xq_right - L.rail_w, xk1 = L.xk_left + L.rail_w;
        const float row_q = L.row_q, row_k = L.row_k, top_q = L.top_q, top_k = L.top_k;
        items.push_back(rect_item(ItemRole::Rail, {xq0, top_q, L.xq_right, top_q + T_q * row_q}, pal.token_fill));
        items.push_back(rect_item(ItemRole::Rail, {L.xk_left, top_k, xk1, top_k + T_k * row_k}, pal.token_fill));
        for (int q = 0; q < T_q; ++q) out.query_rects[static_cast<size_t>(q)] = {xq0, top_q + q * row_q, xq0 + L.rail_w, top_q + q * row_q + row_q};
        for (int k = 0; k < T_k; ++k) out.key_rects[static_cast<size_t>(k)] = {L.xk_left, top_k + k * row_k, L.xk_left + L.rail_w, top_k + k * row_k + row_k};
        // Partners of the selection: the strongest by mean weight over the visible heads.
        std::vector<std::pair<float, int>> partners;
        if (sel_query) {
            for (int k = 0; k < T_k; ++k) {
                const float w = mean_weight(sel_index, k);
                if (w > 0.0f) partners.push_back({w, k});
            }
        } else if (sel_key && keys_ready) {
            std::vector<int> qs;
            for (int h : visible) {
                int n = 0;
                const TopEntry* list = weights.top(h).key_top(sel_index, &n);
                for (int i = 0; i < n; ++i) qs.push_back(list[i].index);
            }
            std::sort(qs.begin(), qs.end());
            qs.erase(std::unique(qs.begin(), qs.end()), qs.end());
            for (int q : qs) partners.push_back({mean_weight(q, sel_index), q});
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
            const float xa = partners_are_keys ? L.xk_left : xq0, xb = partners_are_keys ? xk1 : L.xq_right;
            items.push_back(rect_item(ItemRole::Strip, {xa, y0, xb, y0 + h}, mix(pal.token_fill, tint, std::min(1.0f, 0.25f + w)), 0.0f, i));
        }
        // Labels of the strongest partners that do not overlap a stronger one (or the selection).
        {
            std::vector<float> taken;
            if (sel_query) taken.push_back(L.yq(sel_index));
            if (sel_key) taken.push_back(L.yk(sel_index));
            std::vector<std::pair<float, int>> shown;
            for (const auto& p : partners) {
                if (static_cast<int>(shown.size()) == kPartnerLabels) break;
                const float y = partners_are_keys ? L.yk(p.second) : L.yq(p.second);
                const bool same_side = (partners_are_keys && sel_key) || (!partners_are_keys && sel_query);
                bool clear = true;
                for (size_t i = same_side ? 0 : (any_sel ? 1 : 0); i < taken.size(); ++i)
                    clear = clear && std::abs(taken[i] - y) >= L.box_h + 1.0f * s;
                if (!clear) continue;
                taken.push_back(y);
                shown.push_back(p);
            }
            partners = std::move(shown);
        }
        // Labels: every n-th token where they fit (n a round number), the emphasized ones on top.
        auto stride_for = [&](float row) {
            const int need = static_cast<int>(std::ceil((L.box_h + 2.0f * s) / row));
            for (int n : {1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000, 10000})
                if (n >= need) return n;
            return need;
        };
        std::vector<int> emph_q, emph_k;
        if (sel_query) emph_q.push_back(sel_index);
        if (sel_key) emph_k.push_back(sel_index);
        for (int q : selection.set) emph_q.push_back(q);
        for (const auto& [w, i] : partners) (partners_are_keys ? emph_k : emph_q).push_back(i);
        auto near_emph = [&](const std::vector<int>& emph, float y, auto ypos) {
            for (int e : emph)
                if (std::abs(ypos(e) - y) < L.box_h + 1.0f * s) return true;
            return false;
        };
        auto yq = [&](int i) { return L.yq(i); };
        auto yk = [&](int i) { return L.yk(i); };
        const int stride_q = stride_for(row_q), stride_k = stride_for(row_k);
        for (int q = 0; q < T_q; q += stride_q) {
            items.push_back(segment_item(ItemRole::Tick, xq0 - 3.0f * s, L.yq(q), xq0, L.yq(q), pal.text_muted, 1.0f * s, q));
            if (near_emph(emph_q, L.yq(q), yq)) continue;
            const std::string t = token_text(tr.queries[q]);
            const float w = m.width(t, L.font);
            const Box r = L.query_box(q, w);
            items.push_back(text_item(ItemRole::RailLabel, r.x0 + pad, L.yq(q) - fs * 0.5f, L.font, pal.text_muted, std::string(t), w,
                                      Item::Right, q));
        }
        for (int k = 0; k < T_k; k += stride_k) {
            items.push_back(segment_item(ItemRole::Tick, xk1, L.yk(k), xk1 + 3.0f * s, L.yk(k), pal.text_muted, 1.0f * s, k));
            if (near_emph(emph_k, L.yk(k), yk)) continue;
            const std::string t = token_text(tr.keys[k]);
            const float w = m.width(t, L.font);
            const Box r = L.key_box(k, w);
            items.push_back(text_item(ItemRole::RailLabel, r.x0 + pad, L.yk(k) - fs * 0.5f, L.font, pal.text_muted, std::string(t), w,
                                      Item::Left, k));
        }
        // Emphasized: weakest first so the strongest (and the selection) end on top.
        for (auto it = emph_q.rbegin(); it != emph_q.rend(); ++it) draw_query(*it);
        for (auto it = emph_k.rbegin(); it != emph_k.rend(); ++it) draw_key(*it);
        if (sel_query) draw_query(sel_index);
        if (sel_key) draw_key(sel_index);
    }

    // The heads legend of a figure drawn alone (on screen the toolbar has the head checkboxes).
    if (L.legend) {
        const FontRole lf = L.compact ? FontRole::Body : L.font;
        const float lfs = m.size(lf);
        float x = L.box.x0 + 12.0f * s;
        const float y = L.box.y1 - lfs - 10.0f * s;
        for (int h : visible) {
            items.push_back(rect_item(ItemRole::HeadSwatch, {x, y + 3.0f * s, x + lfs - 6.0f * s, y + lfs - 3.0f * s},
                                      head_color(L.dark, h), 2.0f * s, h));
            const std::string label = printf_string(L.words.head, h + 1);
            const float w = m.width(label, lf);
            items.push_back(text_item(ItemRole::HeadLabel, x + lfs, y, lf, pal.text, label, w, Item::Left, h));
            x += lfs + w + 14.0f * s;
        }
    }
    return out;
}

}  // namespace attn
