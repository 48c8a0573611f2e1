// explain_rows.cpp: see explain_rows.hpp.
#include "explain_rows.hpp"

#include "attention_maps.hpp"
#include "colormaps.hpp"
#include "display_map.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

namespace attn {

// [SECTION] Rows of a run's maps ---------------------------------------------------------------

RowSource run_rows(std::shared_ptr<const LiveRun> run, int stack) {
    RowSource src;
    const StackRun& s = run->result.stacks[static_cast<size_t>(stack)];
    if (s.layers.empty()) return src;
    const bool kept = run->input.keep_maps;
    const BlockRun& first = s.layers.front();
    src.layers = static_cast<int>(s.layers.size()), src.heads = s.heads;
    src.T_q = kept ? static_cast<int>(first.weights.front().rows()) : first.kept.T_q;
    src.T_k = kept ? static_cast<int>(first.weights.front().cols()) : first.kept.T_k;
    src.causal = s.causal && run->result.both_ways.empty();  // (gemma3: a picture's tokens see later ones)
    if (s.cross) src.no_rollout = "cross";
    src.rows = [weak = std::weak_ptr<const LiveRun>(run), stack, kept](kernels::Context& ctx, int layer, int head, int r0, int r1,
                                                                       int c1) -> Matrix {
        const std::shared_ptr<const LiveRun> run = weak.lock();
        if (!run) return {};
        const BlockRun& b = run->result.stacks[static_cast<size_t>(stack)].layers[static_cast<size_t>(layer)];
        if (kept) return b.weights[static_cast<size_t>(head)].block(r0, 0, r1 - r0, c1);
        return map_region(ctx, b.kept, head, {r0, r1, 0, c1});
    };
    return src;
}

RowSource figure_rows(const Figure& figure, int stack) {
    if (figure.live) return run_rows(figure.live, stack);
    RowSource src;
    if (figure.remote) {
        src.no_rollout = "served";
        return src;
    }
    if (figure.has(Detail::Layers)) {  // an import: its maps
        const AttentionStack& s = figure.stack(stack);
        src.layers = s.layers, src.heads = s.heads;
        src.T_q = static_cast<int>(s.queries.size()), src.T_k = static_cast<int>(s.keys.size());
        src.causal = figure.causal[static_cast<size_t>(stack)];
        if (!s.is_self()) src.no_rollout = "cross";
        src.rows = [weak = std::weak_ptr<const ImportedAttention>(figure.layers), stack](kernels::Context&, int layer, int head, int r0,
                                                                                         int r1, int c1) -> Matrix {
            const std::shared_ptr<const ImportedAttention> layers = weak.lock();
            if (!layers) return {};
            return layers->stacks[static_cast<size_t>(stack)].map(layer, head).block(r0, 0, r1 - r0, c1);
        };
        return src;
    }
    const std::shared_ptr<const Trace> t = figure.shown;  // a scene: its one layer
    if (!t) return src;
    src.layers = 1, src.heads = t->heads, src.T_q = t->T_q(), src.T_k = t->T_k();
    src.causal = t->kind == AttentionKind::Masked;
    if (t->kind == AttentionKind::Cross) src.no_rollout = "cross";
    src.rows = [weak = std::weak_ptr<const Trace>(t)](kernels::Context&, int, int head, int r0, int r1, int c1) -> Matrix {
        const std::shared_ptr<const Trace> t = weak.lock();
        if (!t) return {};
        Matrix m(r1 - r0, t->T_k());
        attention_rows(*t, head, r0, r1, m.data());
        return m.leftCols(c1);
    };
    return src;
}

RowVector shown_value_norms(const Figure& figure, int stack, int layer, int head) {
    const Trace& t = figure.trace();
    if (figure.empty() || head < 0 || head >= t.heads) return {};
    const HeadTrace& h = t.attention.heads[static_cast<size_t>(head)];
    if (figure.has(Detail::Projections) && t.w_o.rows() == t.d_model && h.v.rows() == t.T_k())
        return value_norms(h.v, t.w_o.middleRows(static_cast<Eigen::Index>(head) * t.d_k, t.d_k));
    // maps on demand, or a served layer: the norms its run kept or the server sent
    if (figure.has(Detail::Projections) || (figure.live && figure.live->input.keep_maps)) return {};
    const std::shared_ptr<const KeptHeads> k = figure.kept_layer(stack, layer);
    if (k && head < k->value_norms.rows() && k->value_norms.cols() == t.T_k()) return k->value_norms.row(head);
    return {};
}

RowVector shown_row(const Trace& trace, int head, int q) {
    RowVector row(trace.T_k());
    attention_rows(trace, head, q, q + 1, row.data());
    return row;
}

// [SECTION] Rollout of one row ---------------------------------------------------------------

void RolloutRow::start(RowSource source, int layer, int query, int block_rows, kernels::Pool* pool) {
    src_ = std::move(source);
    ctx_.pool = pool;
    const int T = src_.T_k;
    const bool usable = src_.rows && src_.no_rollout.empty() && src_.T_q == T && layer >= 0 && layer < src_.layers &&
                        query >= 0 && query < T && src_.heads > 0;
    layer_ = usable ? layer : -1;
    block_ = block_rows > 0 ? block_rows : std::clamp(1048576 / std::max(1, T * std::max(src_.heads, 1)), 1, std::max(T, 1));
    r_ = RowVector::Zero(std::max(T, 0)), next_.setZero(std::max(T, 0));
    if (!usable) return;
    r_(query) = 1.0f;  // e_i
    lo_ = query, hi_ = query + 1, at_ = lo_;
    done_rows_ = 0, total_rows_ = 1.0 + static_cast<double>(layer) * (src_.causal ? query + 1 : T);
}

double RolloutRow::progress() const { return done() ? 1.0 : std::min(done_rows_ / total_rows_, 1.0); }

bool RolloutRow::step(double budget_seconds) {
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    while (!done()) {
        do_unit();
        if (std::chrono::duration<double>(clock::now() - t0).count() >= budget_seconds) break;
    }
    return done();
}

// Rows [r0, r1) of Ã_m, each times r's entry: next += Σ_k r_k·Ã_m(k, :), with
// Ã_m(k, :) = (½·mean_h A_m(k, :) + ½·e_k) / its sum, the operations attention_rollout makes
// (a causal stack's rows over the keys they see: the rest are 0 there too).
void RolloutRow::do_unit() {
    const int r0 = at_, r1 = std::min(at_ + block_, hi_), c1 = src_.causal ? r1 : src_.T_k;
    at_ = r1, done_rows_ += r1 - r0;
    if (r_.segment(r0, r1 - r0).cwiseAbs().maxCoeff() > 0.0f) {
        // every head's rows, a head a part (about 64 multiply-adds a weight: a head's d_k), then
        // their sum in head order
        std::vector<Matrix> heads(static_cast<std::size_t>(src_.heads));
        kernels::for_parts(ctx_, src_.heads, 64.0 * src_.heads * (r1 - r0) * c1, [&](int h, kernels::Context& c) {
            heads[static_cast<std::size_t>(h)] = src_.rows(c, layer_, h, r0, r1, c1);
        });
        Matrix a = std::move(heads[0]);
        for (int h = 1; h < src_.heads && a.size() > 0; ++h) {
            const Matrix& b = heads[static_cast<std::size_t>(h)];
            if (b.size() == 0) a.resize(0, 0);
            else a += b;
        }
        if (a.size() == 0) {  // the source is gone (its run was let go): the row stops, all 0
            r_.setZero(), layer_ = -1;
            return;
        }
        a /= static_cast<float>(src_.heads);
        for (int i = 0; i < r1 - r0; ++i) {
            const int k = r0 + i;
            RowVector row = 0.5f * a.row(i);
            row(k) += 0.5f;
            row /= row.sum();
            next_.head(c1) += static_cast<double>(r_(k)) * row.cast<double>();
        }
    }
    if (at_ >= hi_) next_layer();
}

void RolloutRow::next_layer() {
    r_ = next_.cast<float>();
    next_.setZero();
    if (--layer_ < 0) return;
    // The rows r reaches now: its first and last entry that is not 0.
    const int T = static_cast<int>(r_.size());
    lo_ = 0, hi_ = T;
    while (lo_ < T && r_(lo_) == 0.0f) ++lo_;
    while (hi_ > lo_ && r_(hi_ - 1) == 0.0f) --hi_;
    at_ = lo_;
    if (lo_ >= hi_) layer_ = -1;  // nothing reached (a row of zeros): the rollout stays 0
}

// [SECTION] Layout -----------------------------------------------------------------------------

std::vector<int> strongest_keys(const RowVector& row, int count, bool by_magnitude) {
    std::vector<int> keys;
    for (Eigen::Index j = 0; j < row.size(); ++j)
        if (row(j) != 0.0f && std::isfinite(row(j))) keys.push_back(static_cast<int>(j));
    const auto value = [&](int j) { return by_magnitude ? std::abs(row(j)) : row(j); };
    const size_t n = std::min(keys.size(), static_cast<size_t>(std::max(count, 0)));
    std::partial_sort(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(n), keys.end(),
                      [&](int a, int b) { return value(a) != value(b) ? value(a) > value(b) : a < b; });
    keys.resize(n);
    return keys;
}

RowsLayout::Hit RowsLayout::hit(float x, float y) const {
    for (int k = 0; k < kExplainKinds; ++k) {
        const Box& b = strips[static_cast<size_t>(k)];
        const std::vector<int>& e = columns[static_cast<size_t>(k)];
        if (b.w() <= 0.0f || !b.contains(x, y) || e.size() < 2) continue;
        const int C = static_cast<int>(e.size()) - 1;
        const int c = std::clamp(static_cast<int>((x - b.x0) / b.w() * static_cast<float>(C)), 0, C - 1);
        return {k, e[static_cast<size_t>(c)], e[static_cast<size_t>(c) + 1]};
    }
    return {};
}

namespace {

// A token for a one-line label: its display text cut to about `max_bytes` at a character's start.
std::string rows_token(const std::string& token, size_t max_bytes = 24) {
    std::string t = token_text(token);
    if (t.size() <= max_bytes) return t;
    size_t cut = max_bytes;
    while (cut > 0 && (static_cast<unsigned char>(t[cut]) & 0xC0) == 0x80) --cut;
    return t.substr(0, cut) + "\xe2\x80\xa6";  // …
}

std::string rows_number(float v, bool sign) {
    char buf[32];
    std::snprintf(buf, sizeof buf, sign ? "%+.3g" : "%.3g", static_cast<double>(v));
    return buf;
}

}  // namespace

RowsLayout lay_out_rows(const RowsInput& in, const TextMeasure& m) {
    RowsLayout L;
    const float s = in.scale, ss = m.size(FontRole::Small), bs = m.size(FontRole::Body);
    const FigurePalette& pal = figure_palette(in.dark);
    const Colormap& cmap = colormaps()[static_cast<size_t>(std::clamp(in.colormap, 0, static_cast<int>(colormaps().size()) - 1))];
    auto text = [&](ItemRole role, float x, float y, FontRole f, Color c, const std::string& t, int index = -1, float wrap = 0.0f,
                    Item::Align align = Item::Left) {
        L.items.push_back(text_item(role, x, y, f, c, t, m.width(t, f), align, index));
        L.items.back().wrap = wrap;
    };
    const float pad = 12.0f * s, x0 = in.box.x0 + pad, W = std::max(in.box.w() - 2.0f * pad, 40.0f * s);
    const float strip_h = 64.0f * s, min_col = 2.0f * s;
    float y = in.box.y0 + pad;
    text(ItemRole::Title, x0, y, FontRole::Body, pal.text, in.heading, -1, W);
    y += m.wrapped_height(in.heading, FontRole::Body, W) + 12.0f * s;
    for (int k = 0; k < kExplainKinds; ++k) {
        const size_t i = static_cast<size_t>(k);
        const RowPanel& p = in.panels[i];
        if (p.title.empty()) continue;
        text(ItemRole::Heading, x0, y, FontRole::Body, pal.text, p.title, k);
        const float title_y = y;  // the bars' scale goes at its right end
        y += bs + 4.0f * s;
        text(ItemRole::Caption, x0, y, FontRole::Small, pal.text_muted, p.caption, k, W);
        y += m.wrapped_height(p.caption, FontRole::Small, W) + 6.0f * s;
        if (!p.row || !p.keys) {
            text(ItemRole::Note, x0, y, FontRole::Small, pal.text_muted, p.missing, k, W);
            y += m.wrapped_height(p.missing, FontRole::Small, W) + 4.0f * s;
            if (p.progress < 1.0) {  // what is being computed, how far
                const Box bar{x0, y, x0 + std::min(W, 240.0f * s), y + 6.0f * s};
                L.items.push_back(rect_item(ItemRole::Other, {bar.x0, bar.y0, bar.x0 + bar.w() * static_cast<float>(std::clamp(p.progress, 0.0, 1.0)), bar.y1},
                                            pal.accent, 0.0f, k));
                L.items.push_back(outline_item(ItemRole::Other, bar, pal.text_muted, 1.0f, 0.0f, k));
                y += 6.0f * s;
            }
            y += 16.0f * s;
            continue;
        }
        const RowVector& row = *p.row;
        const int T = static_cast<int>(std::min<Eigen::Index>(row.size(), static_cast<Eigen::Index>(p.keys->size())));
        if (T <= 0) continue;
        // Columns: a key each while they are min_col wide, else about W / min_col of them.
        const int C = std::max(1, std::min(T, static_cast<int>(W / min_col)));
        std::vector<int>& e = L.columns[i];
        e.resize(static_cast<size_t>(C) + 1);
        for (int c = 0; c <= C; ++c) e[static_cast<size_t>(c)] = static_cast<int>(static_cast<long long>(c) * T / C);
        const Box strip{x0, y, x0 + W, y + strip_h};
        L.strips[i] = strip;
        float top = 0.0f;
        for (int j = 0; j < T; ++j)
            if (j != p.unscaled) top = std::max(top, p.diverging ? std::abs(row(j)) : row(j));
        if (!(top > 0.0f)) top = 1.0f;
        const float col_w = W / static_cast<float>(C), mid = strip.y0 + strip_h * 0.5f;
        L.items.push_back(rect_item(ItemRole::Other, strip, pal.background, 0.0f, k));
        const int masked_from = p.masked_from >= 0 && p.masked_from < T ? p.masked_from : T;
        if (masked_from < T) {  // the keys the query may not see, hatched from the first column they fill
            int c = 0;
            while (c < C && e[static_cast<size_t>(c)] < masked_from) ++c;
            if (c < C) {
                Item h;
                h.kind = Item::Hatch, h.role = ItemRole::Other, h.box = {strip.x0 + c * col_w, strip.y0, strip.x1, strip.y1}, h.index = k;
                L.items.push_back(h);
            }
        }
        for (int c = 0; c < C; ++c) {
            // the column's value: its largest (signed: of the largest magnitude)
            float v = 0.0f;
            for (int j = e[static_cast<size_t>(c)]; j < e[static_cast<size_t>(c) + 1]; ++j)
                if (p.diverging ? std::abs(row(j)) > std::abs(v) : row(j) > v) v = row(j);
            if (v == 0.0f || !std::isfinite(v)) continue;
            const float share = std::clamp(std::abs(v) / top, 0.0f, 1.0f);
            const float t = std::copysign(in.log ? colormap_position(share, 0.0f, 1.0f, true) : share, v);
            if (t == 0.0f) continue;  // below the log scale's floor
            const std::array<float, 3> rgb = p.diverging ? colormap_sample(diverging_colormap(), 0.5f + 0.5f * t) : colormap_sample(cmap, t);
            const float bx0 = strip.x0 + c * col_w, bx1 = std::max(bx0 + 1.0f, strip.x0 + (c + 1) * col_w - (col_w >= 4.0f * s ? 1.0f * s : 0.0f));
            const float h = std::max(1.0f, (p.diverging ? strip_h * 0.5f : strip_h) * std::abs(t));
            const Box bar = p.diverging ? (t > 0 ? Box{bx0, mid - h, bx1, mid} : Box{bx0, mid, bx1, mid + h}) : Box{bx0, strip.y1 - h, bx1, strip.y1};
            L.items.push_back(rect_item(ItemRole::Strip, bar, {rgb[0], rgb[1], rgb[2], 1.0f}, 0.0f, c));
        }
        if (p.diverging) L.items.push_back(segment_item(ItemRole::Other, strip.x0, mid, strip.x1, mid, pal.text_muted, 1.0f, k));
        L.items.push_back(outline_item(ItemRole::Other, strip, pal.text_muted, 1.0f, 0.0f, k));
        // the largest value, the scale of the bars (and the one key clipped above it)
        std::string scale = (p.diverging ? "\xc2\xb1" : in.max_label + " ") + rows_number(top, false) + (in.log ? " \xc2\xb7 " + in.log_label : "");
        if (p.unscaled >= 0 && p.unscaled < T && std::abs(row(p.unscaled)) > top)
            scale += "  (#" + std::to_string(p.unscaled) + " " + rows_number(row(p.unscaled), p.diverging) + " \xe2\x86\x91)";  // ↑ clipped
        text(ItemRole::LegendLabel, strip.x1, title_y + (bs - ss), FontRole::Small, pal.text_muted, scale, k, 0.0f, Item::Right);
        L.items.back().x -= L.items.back().text_w;
        // key positions under the strip: the first, the last, the query's
        y = strip.y1 + 3.0f * s;
        const auto column_x = [&](int key) {
            int c = 0;
            while (c + 1 < C && e[static_cast<size_t>(c) + 1] <= key) ++c;
            return strip.x0 + (c + 0.5f) * col_w;
        };
        const std::string last = std::to_string(T - 1);
        const float last_w = m.width(last, FontRole::Small);
        float first_x1 = strip.x0 + m.width("0", FontRole::Small) + 8.0f * s, last_x0 = strip.x1 - last_w - 8.0f * s;
        if (p.query >= 0 && p.query < T) {
            const float qx = column_x(p.query);
            L.items.push_back(segment_item(ItemRole::Selection, qx, strip.y0, qx, strip.y1 + 2.0f * s, pal.accent, 2.0f * s, p.query));
            const std::string q = "\xe2\x96\xb2 " + std::to_string(p.query);  // ▲ the query's place
            const float qw = m.width(q, FontRole::Small), lx = std::clamp(qx - qw * 0.5f, strip.x0, strip.x1 - qw);
            text(ItemRole::Tick, lx, y, FontRole::Small, pal.accent, q, p.query);
            if (lx < first_x1) first_x1 = -1.0f;  // the query's label stands where the end's would: it says enough
            if (lx + qw > last_x0) last_x0 = -1.0f;
        }
        if (first_x1 > 0.0f) text(ItemRole::Tick, strip.x0, y, FontRole::Small, pal.text_muted, "0", k);
        if (last_x0 > 0.0f) text(ItemRole::Tick, strip.x1 - last_w, y, FontRole::Small, pal.text_muted, last, k);
        y += ss + 6.0f * s;
        // the strongest keys, named: "token" #position value
        const std::vector<int> best = strongest_keys(row.head(T), in.top, p.diverging);
        float x = x0;
        if (!best.empty()) {
            const std::string label = in.top_label + ":";
            text(ItemRole::Caption, x, y, FontRole::Small, pal.text_muted, label, k);
            x += m.width(label, FontRole::Small) + 8.0f * s;
        }
        for (int j : best) {
            const std::string chip = "\xe2\x80\x9c" + rows_token((*p.keys)[static_cast<size_t>(j)]) + "\xe2\x80\x9d #" + std::to_string(j) + " " +
                                     rows_number(row(j), p.diverging);
            const float w = m.width(chip, FontRole::Small);
            if (x + w > x0 + W && x > x0 + 1.0f) x = x0 + 16.0f * s, y += ss + 6.0f * s;
            text(ItemRole::Number, x, y, FontRole::Small, pal.text, chip, j);
            x += w + 14.0f * s;
        }
        y += ss + 20.0f * s;
    }
    L.content_h = y + pad - in.box.y0;
    return L;
}

}  // namespace attn
