// steps_view.cpp: attention as a pipeline of matrices (core/steps.hpp), one head at a time,
// drawn from core/figure/steps_layout.hpp: X → Q, K, V → QKᵀ → ÷√d_k → + mask → softmax → ·V →
// concat → ·W_o, with the q/k norm, RoPE's angles and turned Q and K, and the soft cap of the
// live models that have them. Every matrix is labelled with its shape and numbers, coloured by the shared
// colormap (ImGui rectangles: these are small; the big heatmap keeps its one-quad texture).
// This file keeps the scrolling child window, the hover and the tooltip that writes the
// arithmetic out, and, under the figure of a live model's induction head, the words that say
// why its query looks where it does (core/figure/induction.hpp).
//
// [SECTION] Cache
// [SECTION] Why this key
// [SECTION] Layout and hover
// [SECTION] Tooltip
#include "view.hpp"
#include "controls.hpp"

#include "induction.hpp"
#include "model_state.hpp"
#include "panels.hpp"
#include "steps_layout.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <climits>
#include <cstdio>

namespace attn {
namespace {

// Stable names for the test hook (AppState::step_rects).
const char* step_name(StepKind k) {
    switch (k) {
        case StepKind::Patches: return "patches";
        case StepKind::Embedded: return "embedded";
        case StepKind::Input: return "x";
        case StepKind::InputKv: return "x_kv";
        case StepKind::Q: return "q";
        case StepKind::QNormed: return "q_normed";
        case StepKind::Angles: return "angles";
        case StepKind::QRotated: return "q_rotated";
        case StepKind::K: return "k";
        case StepKind::KNormed: return "k_normed";
        case StepKind::KRotated: return "k_rotated";
        case StepKind::V: return "v";
        case StepKind::Scores: return "scores";
        case StepKind::Scaled: return "scaled";
        case StepKind::Capped: return "capped";
        case StepKind::Masked: return "masked";
        case StepKind::Weights: return "weights";
        case StepKind::Output: return "output";
        case StepKind::Concat: return "concat";
        case StepKind::Final: return "final";
    }
    return "?";
}

// "K, V: head 2 of 3, shared by query heads 4–6." for the K/V head that serves query head
// `head`; "" without grouped-query attention.
std::string kv_shared(Lang lang, const FamilyTrace& f, int head) {
    if (!f.grouped()) return "";
    const int g = f.kv_head_of(head);
    return printf_string(tr(lang, Str::CapKvShared), g + 1, f.kv_heads, g * f.group + 1, (g + 1) * f.group);
}

// What a step does and why, in a line or two under its matrix (the seeds' words), with the
// numbers of today's families where they differ (a shared K/V head, a partial rotation, Gemma's
// scale, a soft cap, a sliding window). A live model's block reads hidden states, not
// embeddings (`live`).
std::string caption(StepKind k, const Trace& trace, int head, bool live, Lang lang) {
    const bool cross = trace.kind == AttentionKind::Cross;
    const FamilyTrace& f = trace.family;
    const std::string sep = lang == Lang::Zh ? "" : " ";
    auto t = [&](Str s) { return std::string(tr(lang, s)); };
    auto rotated = [&](Str s) {
        if (f.rope_dim >= trace.d_k) return t(s);
        return t(s) + sep + printf_string(t(Str::CapRotatedPartial), f.rope_dim, trace.d_k, trace.d_k - f.rope_dim);
    };
    switch (k) {
        case StepKind::Patches: return printf_string(t(Str::CapPatches), f.patch_channels, f.patch_size, f.patch_size);
        case StepKind::Embedded: return t(Str::CapEmbedded);
        case StepKind::Input: return t(live ? Str::CapXModel : cross ? Str::CapXCross : Str::CapX);
        case StepKind::InputKv: return t(Str::CapXKv);
        case StepKind::Q: return t(trace.attention.x_q.size() == 0 ? Str::CapQKept : cross ? Str::CapQCross : Str::CapQ);
        case StepKind::QNormed: return t(Str::CapQNorm);
        case StepKind::Angles: return printf_string(t(Str::CapAngles), f.rope_dim / 2);
        case StepKind::QRotated: return rotated(Str::CapQRotated);
        case StepKind::K:
        case StepKind::V: {
            const std::string shared = kv_shared(lang, f, head);
            const std::string what = k == StepKind::K ? t(cross ? Str::CapKCross : Str::CapK) : t(cross ? Str::CapVCross : Str::CapV);
            return shared.empty() ? what : shared + sep + what;
        }
        case StepKind::KNormed: return t(Str::CapKNorm);
        case StepKind::KRotated: return rotated(Str::CapKRotated);
        case StepKind::Scores: return t(Str::CapScores);
        case StepKind::Scaled:
            if (f.query_pre_attn_scalar > 0)
                return printf_string(t(Str::CapScaledQueryScalar), format_general(f.query_pre_attn_scalar, 4).c_str(), trace.d_k);
            return t(trace.scale.kind == ScaleKind::InvSqrtDk ? Str::CapScaled
                     : trace.scale.kind == ScaleKind::None    ? Str::CapUnscaled
                                                              : Str::CapTemperature);
        case StepKind::Capped: {
            const std::string cap = format_general(f.softcap, 4);
            return printf_string(t(Str::CapSoftcap), cap.c_str(), cap.c_str());
        }
        case StepKind::Masked:
            if (trace.window > 0) return printf_string(t(Str::CapMaskWindow), trace.window, trace.window);
            return t(trace.kind == AttentionKind::Masked ? Str::CapMask : Str::CapMaskGiven);
        case StepKind::Weights: return t(Str::CapSoftmax);
        case StepKind::Output: return t(Str::CapOutput);
        case StepKind::Concat: return t(Str::CapConcat);
        case StepKind::Final: return t(Str::CapFinal);
    }
    return t(Str::CapX);
}

// [SECTION] Cache --------------------------------------------------------------------------

// What a frame would otherwise redo over whole matrices and every token (pipeline_steps copies
// T×T matrices; the colour ranges and the label width scan them all): kept per trace and head.
struct StepsCache {
    const Trace* trace = nullptr;
    int revision = INT_MIN, head = -1;
    bool positional = false;
    std::vector<Step> steps;
    std::vector<std::pair<float, float>> range;  // per step: colour range lo, hi
    LabelWidth labels;                           // the widest token label (queries and keys)

    void update(const AppState& st, int h) {
        const Trace& tr = st.figure.trace();
        const bool pos = st.figure.has(Detail::Scene) && st.figure.scene->positional == Positional::Sinusoidal;
        if (trace == &tr && revision == st.revision && head == h && positional == pos) return;
        *this = StepsCache{};
        trace = &tr, revision = st.revision, head = h, positional = pos;
        steps = pipeline_steps(tr, h, pos);
        // Weights on the fixed 0..1 scale, everything else its own finite min..max.
        for (const Step& step : steps) {
            float lo = 0.0f, hi = 1.0f;
            if (!step.probabilities) {
                lo = INFINITY, hi = -INFINITY;
                for (Eigen::Index k = 0; k < step.values.size(); ++k) {
                    const float v = step.values.data()[k];
                    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
                }
                if (!std::isfinite(lo)) lo = 0.0f, hi = 1.0f;
            }
            range.push_back({lo, hi});
        }
    }
};

// A figure with only the weights (a model's file has no Q, K or V): a note that says so above
// the weights of the Steps view's head, drawn by the heatmap view.
void draw_weights_only(ViewContext& ctx, ImVec2 min, ImVec2 max) {
    AppState& st = ctx.state;
    const float sc = ctx.scale;
    const Palette& pal = palette(st.theme);
    ImFont* font = ctx.fonts.body;
    const float wrap = std::min(max.x - min.x - 40.0f * sc, 720.0f * sc);
    const char* note = attn::tr(st.lang, Str::StepsNoQkv);
    const ImVec2 size = font->CalcTextSizeA(font->FontSize, FLT_MAX, wrap, note);
    const ImVec2 p((min.x + max.x - size.x) * 0.5f, min.y + 16.0f * sc);
    ImDrawList* dl = ImGui::GetWindowDrawList();
    dl->AddRectFilled(ImVec2(p.x - 12.0f * sc, p.y - 8.0f * sc), ImVec2(p.x + size.x + 12.0f * sc, p.y + size.y + 8.0f * sc),
                      pal.token_fill, 6.0f * sc);
    dl->AddText(font, font->FontSize, p, pal.text, note, nullptr, wrap);
    st.probe["steps.note"] = {p.x, p.y, size.x, size.y};
    const int head = st.heatmap.head;
    st.heatmap.head = st.steps.head;
    ctx.views.heatmap.draw(ctx, ImVec2(min.x, p.y + size.y + 8.0f * sc), max);
    st.heatmap.head = head;
}

// [SECTION] Why this key -------------------------------------------------------------------

// The shown map of a live run when it is an induction head (its score on the model's probe
// clears heads.hpp's threshold) of a causal self-attention stack with an earlier layer: the
// stack, its layer and the run's ids; else stack == nullptr.
struct InductionHead {
    const AttentionStack* stack = nullptr;
    const std::vector<int>* ids = nullptr;
    int layer = 0;
    HeadRef tagged{0, -1, -1};  // the earlier layers' head the model grid tags previous-token (highest score; −1: none)
    float tagged_score = 0.0f;
};
InductionHead induction_head(const AppState& st, int head) {
    const LiveRun* live = st.figure.live.get();
    if (!live || !live->model || !live->model->heads || !st.figure.has(Detail::Layers)) return {};
    const int stack = st.imported.import_stack, layer = st.imported.import_layer;
    const HeadScores& hs = *live->model->heads;
    if (stack != 0 || st.figure.causal.empty() || !st.figure.causal[0] || layer < 1 || layer >= hs.layers || head >= hs.heads) return {};
    const size_t kind = static_cast<size_t>(HeadKind::Induction);
    if (hs.at(HeadKind::Induction, layer, head) < kHeadThresholds[kind]) return {};
    const AttentionStack& s = st.figure.layers->stacks[0];
    if (s.queries.size() != live->input.ids.size() || s.queries.size() > 1024) return {};
    InductionHead ih{&s, &live->input.ids, layer};
    for (int l = 0; l < layer; ++l)
        for (int h = 0; h < hs.heads; ++h)
            if (const float v = hs.at(HeadKind::Prev, l, h); v >= kHeadThresholds[static_cast<size_t>(HeadKind::Prev)] && v > ih.tagged_score)
                ih.tagged = {0, l, h}, ih.tagged_score = v;
    return ih;
}

// The words for `why` (the shown head's tokens as the figure labels them), in the UI's language.
// `ih` names the head the model grid tags previous-token: when another head wrote this key, the
// words say both (layer 1's heads share that work in tiny-circuits).
std::string why_words(const AppState& st, const Trace& trace, const InductionWhy& why, const InductionHead& ih, bool writer_knocked) {
    const Lang lang = st.lang;
    auto tok = [&](int i) { return quoted_token(trace.keys[static_cast<size_t>(i)]); };
    auto num = [](float v) { return printf_string("%.2f", v); };  // prose: two decimals (the tooltips keep four)
    const std::string q = tok(why.query);
    std::string out;
    if (why.earlier < 0) {
        out = printf_string(tr(lang, Str::WhyNew), q.c_str(), why.query + 1);
    } else if (why.matched() && why.writer_layer >= 0 && !writer_knocked) {
        out = printf_string(tr(lang, Str::WhyMatched), q.c_str(), why.query + 1, tok(why.top).c_str(), why.top + 1,
                            num(why.top_weight).c_str(), why.writer_layer + 1, why.writer_head + 1, num(why.writer_weight).c_str(),
                            why.earlier + 1);
        if (ih.tagged.layer == why.writer_layer && ih.tagged.head != why.writer_head)
            out += (lang == Lang::Zh ? "" : " ") +
                   printf_string(tr(lang, Str::WhyShared), ih.tagged.layer + 1, ih.tagged.head + 1, num(ih.tagged_score).c_str(),
                                 why.writer_head + 1, num(why.writer_weight).c_str(),
                                 num(ih.stack->map(ih.tagged.layer, ih.tagged.head)(why.earlier + 1, why.earlier)).c_str());
    } else {
        out = printf_string(tr(lang, Str::WhyNoMatch), q.c_str(), why.query + 1, why.earlier + 1, tok(why.earlier + 1).c_str(),
                            why.earlier + 2, num(why.after_weight).c_str(), tok(why.top).c_str(), why.top + 1, num(why.top_weight).c_str());
    }
    if (writer_knocked) out += (lang == Lang::Zh ? "" : " ") + printf_string(tr(lang, Str::WhyKnocked), why.writer_layer + 1, why.writer_head + 1);
    return out;
}

// The query the words are about when the reader has chosen none, and the row the reader last
// pointed at (−1: none): kept while the text, layer and head stay, so that a rerun with a head
// knocked out speaks of the same query.
struct WhyCache {
    std::vector<int> ids;
    int layer = -1, head = -1, example = -1, row = -1;
};

// Under the figure of a live induction head: why the query (the row last pointed at, else the
// example) looks where it does, and a button that knocks out the head that wrote its key's
// previous token, or restores it. Returns the height it took from the bottom of [min, max].
float draw_why(ViewContext& ctx, WhyCache& c, int head, ImVec2 min, ImVec2 max) {
    AppState& st = ctx.state;
    st.steps_why.clear();
    const InductionHead ih = induction_head(st, head);
    if (!ih.stack) return 0.0f;
    if (c.ids != *ih.ids || c.layer != ih.layer || c.head != head) {
        c.ids = *ih.ids, c.layer = ih.layer, c.head = head, c.row = -1;
        c.example = induction_example_query(*ih.stack, *ih.ids, ih.layer, head);
        // The rows the words speak of in sight: the example query and the key it looks at.
        if (const auto why = induction_why(*ih.stack, *ih.ids, ih.layer, head, c.example)) {
            const int last = std::max(0, static_cast<int>(ih.ids->size()) - kStepsMaxShown), half = kStepsMaxShown / 2;
            st.steps.first_query = std::clamp(why->query - half, 0, last);
            st.steps.first_key = std::clamp(why->top - half, 0, last);
        }
    }
    const std::optional<InductionWhy> why = induction_why(*ih.stack, *ih.ids, ih.layer, head, c.row >= 0 ? c.row : c.example);
    if (!why) return 0.0f;
    const std::vector<HeadRef> knocked = knocked_heads(st);
    const HeadRef writer{0, why->writer_layer, why->writer_head};
    const bool has_writer = why->writer_layer >= 0;
    const bool writer_knocked = has_writer && std::find(knocked.begin(), knocked.end(), writer) != knocked.end();
    st.steps_why = why_words(st, st.figure.trace(), *why, ih, writer_knocked);

    const float sc = ctx.scale, pad = 10.0f * sc, w = max.x - min.x;
    ImFont* body = ctx.fonts.body;
    const float wrap = w - 2.0f * pad - ImGui::GetStyle().ScrollbarSize;
    auto height = [&](const char* text) { return body->CalcTextSizeA(body->FontSize, FLT_MAX, wrap, text).y; };
    const float want = height(st.steps_why.c_str()) + height(attn::tr(st.lang, Str::WhyHover)) + height(attn::tr(st.lang, Str::WhyTitle)) +
                       ImGui::GetFrameHeightWithSpacing() + 3.0f * ImGui::GetStyle().ItemSpacing.y + 2.0f * pad;
    const float band = std::min(want, 0.45f * (max.y - min.y));
    const ImVec2 at(min.x, max.y - band);
    ImGui::SetCursorScreenPos(at);
    ImGui::PushStyleColor(ImGuiCol_ChildBg, palette(st.theme).token_fill);
    ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, ImVec2(pad, pad));
    ImGui::BeginChild("##why", ImVec2(w, band), false, ImGuiWindowFlags_AlwaysUseWindowPadding);
    ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + wrap);
    ImGui::PushFont(ctx.fonts.title);
    ImGui::TextUnformatted(attn::tr(st.lang, Str::WhyTitle));
    ImGui::PopFont();
    ImGui::TextUnformatted(st.steps_why.c_str());
    ImGui::TextDisabled("%s", attn::tr(st.lang, Str::WhyHover));
    ImGui::PopTextWrapPos();
    if (has_writer && st.model.model == st.figure.live->model && !st.model.busy()) {
        const std::string label =
            printf_string(attn::tr(st.lang, writer_knocked ? Str::WhyRestore : Str::WhyKnock), writer.layer + 1, writer.head + 1);
        if (ImGui::Button(label.c_str())) toggle_knockout(st, writer);
        const ImVec2 b = ImGui::GetItemRectMin(), bs = ImGui::GetItemRectSize();
        st.probe["steps.why.button"] = {b.x, b.y, bs.x, bs.y};
    }
    ImGui::EndChild();
    ImGui::PopStyleVar();
    ImGui::PopStyleColor();
    st.probe["steps.why"] = {at.x, at.y, w, band};
    return band;
}

}  // namespace

void arithmetic_text(const std::string& text, float width) {
    std::string out;
    for (size_t start = 0; start <= text.size();) {
        const size_t stop = std::min(text.find('\n', start), text.size());
        std::string line;  // text[start, stop), broken where it would pass `width`
        for (size_t i = start; i < stop;) {
            const size_t next = std::min(text.find(' ', i + 1), stop);
            const std::string word = text.substr(i, next - i);  // with the space before it
            const bool has_text = line.find_first_not_of(' ') != std::string::npos;
            if (has_text && ImGui::CalcTextSize((line + word).c_str()).x > width) {
                out += line + "\n   ";
                line = word[0] == ' ' ? word.substr(1) : word;
            } else {
                line += word;
            }
            i = next;
        }
        out += line;
        if (stop < text.size()) out += '\n';
        start = stop + 1;
    }
    ImGui::TextUnformatted(out.c_str());
}

struct StepsView::Cache {
    StepsCache steps;
    WhyCache why;
};
StepsView::StepsView() : cache_(std::make_unique<Cache>()) {}
StepsView::~StepsView() = default;

void StepsView::draw(ViewContext& ctx, ImVec2 min, ImVec2 max) {
    if (!ctx.state.figure.has(Detail::Projections) && !ctx.state.figure.has(Detail::Queries)) return draw_weights_only(ctx, min, max);
    AppState& st = ctx.state;
    const Trace& tr = st.figure.trace();
    const float s = ctx.scale;
    ImFont* small = ctx.fonts.small;
    if (tr.queries.empty() || tr.keys.empty()) return;
    const int head = std::clamp(st.steps.head, 0, tr.heads - 1);
    max.y -= draw_why(ctx, cache_->why, head, min, max);
    const HeadTrace& h = tr.attention.heads[head];
    StepsCache& cache = cache_->steps;
    cache.update(st, head);
    const std::vector<Step>& steps = cache.steps;

    ImGui::SetCursorScreenPos(min);
    ImGui::BeginChild("##steps", ImVec2(max.x - min.x, max.y - min.y), false, ImGuiWindowFlags_HorizontalScrollbar);
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const ImVec2 origin = ImGui::GetCursorScreenPos();  // moves with the scroll

    // [SECTION] Layout and hover -------------------------------------------------------------
    const FontsMeasure measure(ctx.fonts);
    StepsInput in;
    in.trace = &tr;
    in.steps = &steps;
    in.ranges = &cache.range;
    in.x0 = origin.x, in.y0 = origin.y;
    in.avail_w = std::max(max.x - min.x - 2.0f * ImGui::GetStyle().ScrollbarSize, 200.0f * s);
    in.scale = s;
    in.dark = st.theme == Theme::Dark;
    in.colormap = st.heatmap.colormap;
    in.label_w = cache.labels.of(small, tr, true);
    for (const Step& step : steps) in.captions.push_back(caption(step.kind, tr, head, st.figure.live != nullptr, st.lang));
    in.first_query = st.steps.first_query, in.first_key = st.steps.first_key;
    in.shown = attn::tr(st.lang, Str::StepsShown);
    in.entropy = attn::tr(st.lang, Str::Entropy);
    in.turned = attn::tr(st.lang, Str::StepsTurned), in.unchanged = attn::tr(st.lang, Str::StepsUnchanged);
    const StepsLayout layout = lay_out_steps(in, measure);
    ImGui::Dummy(ImVec2(layout.content_w, layout.content_h));  // the scrolled extent
    StepsLayout::Hit hover;
    const ImGuiIO& io = ImGui::GetIO();
    if (ctx.interactive && ImGui::IsWindowHovered()) hover = layout.hit(io.MousePos.x, io.MousePos.y);
    // A click or tap that did not drag pins the number under it, or lets it go.
    if (ctx.interactive && hover.step >= 0 && ImGui::IsMouseReleased(ImGuiMouseButton_Left) && tap(s))
        pick_cell(st, {hover.step, hover.row, hover.col});
    // Else the keyboard's number (clamped to what is shown), else the pinned one: its tooltip
    // beside it, scrolled into view (access.hpp).
    AppState::KeyCursor& kc = st.cursor;
    if (!layout.blocks.empty()) {
        kc.step = std::min(kc.step, static_cast<int>(layout.blocks.size()) - 1);
        const Step& step = steps[static_cast<size_t>(kc.step)];
        const StepBlock& b = layout.blocks[static_cast<size_t>(kc.step)];
        kc.q = std::clamp(kc.q, 0, static_cast<int>(step.values.rows()) - 1);
        kc.k = std::clamp(kc.k, 0, b.key_header ? static_cast<int>(step.values.cols()) - 1 : b.cols - 1);
        if (kc.on) {  // the window follows the keyboard's number (in sight from the next frame)
            const auto follow = [](int& first, int i) { first = i < first ? i : i >= first + kStepsMaxShown ? i - kStepsMaxShown + 1 : first; };
            follow(step_rows_are_keys(step.kind) ? st.steps.first_key : st.steps.first_query, kc.q);
            if (b.key_header) follow(st.steps.first_key, kc.k);
        }
    }
    bool at_cell = false;
    if (ctx.interactive && hover.step < 0 && kc.on && !layout.blocks.empty()) hover = {kc.step, kc.q, kc.k}, at_cell = true;
    else if (ctx.interactive && hover.step < 0 && st.pinned_step[0] >= 0 && st.pinned_step[0] < static_cast<int>(layout.blocks.size()))
        hover = {st.pinned_step[0], st.pinned_step[1], st.pinned_step[2]}, at_cell = true;
    if (at_cell) {
        const StepBlock& b = layout.blocks[static_cast<size_t>(hover.step)];
        if (b.shows(hover.row, hover.col))
            show_cell(kc.on, b.grid_x + (hover.col - b.col0) * layout.cell_w, b.grid_y + (hover.row - b.row0) * layout.cell_h,
                      layout.cell_w, layout.cell_h, s);
        else if (!kc.on)
            hover = {};  // a pin out of the window shows when the window comes back to it
    }
    const int hs = hover.step, hr = hover.row, hc = hover.col;
    if (hs >= 0 && step_cols_are_keys(steps[static_cast<size_t>(hs)].kind)) cache_->why.row = hr;  // the words follow the row
    st.steps_said.clear();
    if (hs >= 0) {  // as its tooltip's first line says it, with the tokens where the columns are keys
        const Step& step = steps[static_cast<size_t>(hs)];
        char said[256];
        std::snprintf(said, sizeof said, "%s [%d, %d] = %s.", step.label.c_str(), hr + 1, hc + 1, format_number(step.values(hr, hc)).c_str());
        st.steps_said = said;
        if (step_cols_are_keys(step.kind)) {
            std::snprintf(said, sizeof said, attn::tr(st.lang, Str::TipTokens), token_text(tr.queries[hr]).c_str(), token_text(tr.keys[hc]).c_str(), head + 1);
            st.steps_said += std::string(" ") + said;
        }
    }
    const StepKind hk = hs >= 0 ? steps[hs].kind : StepKind::Input;
    st.step_rects.clear();
    for (size_t i = 0; i < steps.size(); ++i) {
        const StepBlock& b = layout.blocks[i];
        st.step_rects[step_name(steps[i].kind)] = {b.grid_x, b.grid_y, layout.cell_w * b.cols, layout.cell_h * b.rows};
    }
    const StepsItems items = steps_items(layout, in, hover, measure);
    draw_items(dl, items.items, items.clips, measure, palette(st.theme), s, [](const Item&) {});

    // [SECTION] Tooltip ----------------------------------------------------------------------
    if (hs >= 0) {
        const Step& step = steps[hs];
        ImGui::BeginTooltip();
        // A phone's screen is narrower than the longest sums: they wrap at its width.
        const float wrap = ImGui::GetIO().DisplaySize.x - 4.0f * ImGui::GetStyle().WindowPadding.x;
        ImGui::PushTextWrapPos(wrap);
        auto say = [&](const std::string& arithmetic) { arithmetic_text(arithmetic, wrap - ImGui::GetStyle().WindowPadding.x); };
        ImGui::Text("%s  [%d, %d] = %s", step.label.c_str(), hr + 1, hc + 1, format_number(step.values(hr, hc)).c_str());
        if (step_cols_are_keys(hk))
            ImGui::TextDisabled(attn::tr(st.lang, Str::TipTokens), token_text(tr.queries[hr]).c_str(), token_text(tr.keys[hc]).c_str(), head + 1);
        ImGui::Separator();
        const FamilyTrace& f = tr.family;
        auto step_of = [&](StepKind k) -> const Step& {
            return *std::find_if(steps.begin(), steps.end(), [&](const Step& x) { return x.kind == k; });
        };
        switch (hk) {
            case StepKind::Scores: say(explain_score(tr, head, hr, hc)); break;
            case StepKind::Scaled:
            case StepKind::Capped:
            case StepKind::Masked: {
                say(explain_score(tr, head, hr, hc));
                if (!tr.allowed(hr, hc) && hk != StepKind::Capped) {  // the cap comes before the mask
                    ImGui::TextUnformatted(attn::tr(st.lang, Str::TipMasked));
                    break;
                }
                const float factor = tr.scale.factor(tr.d_k), scaled = h.scores(hr, hc) * factor;
                ImGui::Text("\xc3\x97 %s = %s", format_number(factor).c_str(), format_number(scaled).c_str());
                if (hk != StepKind::Scaled && f.softcap > 0) say(explain_softcap(f.softcap, scaled, step.values(hr, hc)));
                break;
            }
            case StepKind::QNormed:
            case StepKind::KNormed: {
                const bool q = hk == StepKind::QNormed;
                say(explain_norm(step_of(q ? StepKind::Q : StepKind::K).values, step.values, q ? f.q_norm_gain : f.k_norm_gain, f.norm_eps,
                                 hr, hc, q ? "q" : "k"));
                break;
            }
            case StepKind::Angles: say(explain_angle(f, hr, hc)); break;
            case StepKind::Embedded: say(explain_embedding(f, hr, hc)); break;
            case StepKind::QRotated:
            case StepKind::KRotated:
                say(explain_rotation(f, step_of(unrotated_of(hk, f)).values, step.values, hr, hc, hk == StepKind::QRotated ? "q" : "k"));
                if (hc >= f.rope_dim) ImGui::TextDisabled(attn::tr(st.lang, Str::TipPassThrough), f.rope_dim, tr.d_k);
                break;
            case StepKind::K:
            case StepKind::V:
                if (f.grouped()) ImGui::TextDisabled("%s", kv_shared(st.lang, f, head).c_str());
                break;
            case StepKind::Weights:
                say(explain_weight(h, tr.allowed, hr, hc, 4, f.sinks.empty() ? -INFINITY : f.sinks[static_cast<std::size_t>(head)]));
                ImGui::TextDisabled(attn::tr(st.lang, Str::TipEntropy), format_number(row_entropy(h.weights, hr)).c_str(),
                                    tr.keys.size(), format_number(std::log(static_cast<float>(tr.keys.size()))).c_str());
                break;
            case StepKind::Output: say(explain_output(h, hr, hc)); break;
            case StepKind::Concat: ImGui::Text(attn::tr(st.lang, Str::TipConcat), hc / tr.d_k + 1, hc % tr.d_k + 1); break;
            case StepKind::Final: ImGui::TextUnformatted(attn::tr(st.lang, Str::TipFinal)); break;
            default:
                if (!step.formula.empty()) ImGui::TextDisabled("%s", step.formula.c_str());
                break;
        }
        ImGui::PopTextWrapPos();
        ImGui::EndTooltip();
    }
    if (st.touch) drag_scroll(ctx.panels.drag_scrolling, ctx.scale, true);
    ImGui::EndChild();
}

// [SECTION] Toolbar -----------------------------------------------------------------------------

namespace {

// Past kStepsMaxShown tokens: which 16 queries and which 16 keys the matrices show ("49–64 / 64").
void window_sliders(AppState& st, const Trace& tr, float s) {
    const auto slider = [&](Str name, const char* id, int& first, int tokens) {
        if (tokens <= kStepsMaxShown) return;
        const int last = tokens - kStepsMaxShown;
        first = std::clamp(first, 0, last);
        same_line_if_fits(ImGui::CalcTextSize(attn::tr(st.lang, name)).x + 130.0f * s);
        ImGui::TextUnformatted(attn::tr(st.lang, name));
        ImGui::SameLine();
        ImGui::SetNextItemWidth(120.0f * s);
        const std::string shown = "%d\u2013" + std::to_string(first + kStepsMaxShown) + " / " + std::to_string(tokens);
        int from = first + 1;
        if (ImGui::SliderInt(id, &from, 1, last + 1, shown.c_str(), ImGuiSliderFlags_AlwaysClamp)) first = from - 1;
        probe(st, id + 2);
    };
    // the rows at hand: a long trace's first 16 (X's, or a kept layer's Q's)
    const Eigen::Index rows = std::max(tr.attention.x_q.rows(), tr.attention.heads.empty() ? Eigen::Index{0} : tr.attention.heads[0].q.rows());
    slider(Str::AxisQueries, "##steps.queries", st.steps.first_query, static_cast<int>(rows));
    slider(Str::AxisKeys, "##steps.keys", st.steps.first_key, tr.T_k());
}

}  // namespace

// One head's pipeline at a time, the tiles mode (TilesView::toolbar), the scale of QKᵀ (a scene's:
// a file's weights cannot be rescaled; seed 002's argument: rows saturate), the colours.
void StepsView::toolbar(ViewContext& ctx) {
    AppState& st = ctx.state;
    const float s = ctx.scale;
    const Trace& tr = st.figure.trace();
    const bool rescalable = st.figure.has(Detail::Scene);
    if (layer_combo(st, s, "steps", st.steps.head)) ImGui::SameLine();
    head_buttons(st, tr.heads, "steps");
    if (!st.steps.tiles) window_sliders(st, tr, s);
    if (st.figure.has(Detail::Projections)) ctx.views.tiles.toolbar(ctx);
    if (rescalable) {
        same_line_if_fits(ImGui::CalcTextSize(attn::tr(st.lang, Str::Scale)).x + 190.0f * s);
        ImGui::TextUnformatted(attn::tr(st.lang, Str::Scale));
        ImGui::SameLine();
        ImGui::SetNextItemWidth(170.0f * s);
        scale_combo(st);
        probe(st, "steps.scale");
    }
    if (rescalable && st.scale_mode == ScaleMode::Temperature) {
        same_line_if_fits(130.0f * s);
        ImGui::SetNextItemWidth(120.0f * s);
        temperature_slider(st);
        probe(st, "steps.temperature");
    }
    toolbar_colormap(ctx);
}

}  // namespace attn
