// steps_view.cpp: attention as a pipeline of matrices (core/figure/steps.hpp), one head at a time:
// X → Q, K, V → QKᵀ → ÷√d_k → + mask → softmax → ·V → concat → ·W_o. Every matrix is labelled
// with its shape and numbers, coloured by the shared colormap (ImGui rectangles: these are
// small; the big heatmap keeps its one-quad texture). Hovering a number highlights the rows
// and columns it comes from and writes the arithmetic out in a tooltip.
//
// [SECTION] Layout
// [SECTION] Hover
// [SECTION] Matrices
// [SECTION] Tooltip
#include "view.hpp"

#include "colormaps.hpp"
#include "steps.hpp"

#include <algorithm>
#include <cmath>
#include <climits>
#include <cstdio>

namespace attn {
namespace {

constexpr int kMaxShown = 16;  // rows / columns drawn per matrix; the shape gives the full size
constexpr float kCaptionMinW = 240.0f;  // a block is at least this wide, so its caption wraps into ~2 lines

// Stable names for the test hook (AppState::step_rects).
const char* step_name(StepKind k) {
    switch (k) {
        case StepKind::Input: return "x";
        case StepKind::InputKv: return "x_kv";
        case StepKind::Q: return "q";
        case StepKind::K: return "k";
        case StepKind::V: return "v";
        case StepKind::Scores: return "scores";
        case StepKind::Scaled: return "scaled";
        case StepKind::Masked: return "masked";
        case StepKind::Weights: return "weights";
        case StepKind::Output: return "output";
        case StepKind::Concat: return "concat";
        case StepKind::Final: return "final";
    }
    return "?";
}

// What a step does and why, in a line or two under its matrix (the seeds' words).
Str caption(StepKind k, const Trace& trace) {
    const bool cross = trace.kind == AttentionKind::Cross;
    switch (k) {
        case StepKind::Input: return cross ? Str::CapXCross : Str::CapX;
        case StepKind::InputKv: return Str::CapXKv;
        case StepKind::Q: return cross ? Str::CapQCross : Str::CapQ;
        case StepKind::K: return cross ? Str::CapKCross : Str::CapK;
        case StepKind::V: return cross ? Str::CapVCross : Str::CapV;
        case StepKind::Scores: return Str::CapScores;
        case StepKind::Scaled:
            return trace.scale.kind == ScaleKind::InvSqrtDk ? Str::CapScaled
                   : trace.scale.kind == ScaleKind::None    ? Str::CapUnscaled
                                                            : Str::CapTemperature;
        case StepKind::Masked: return trace.kind == AttentionKind::Masked ? Str::CapMask : Str::CapMaskGiven;
        case StepKind::Weights: return Str::CapSoftmax;
        case StepKind::Output: return Str::CapOutput;
        case StepKind::Concat: return Str::CapConcat;
        case StepKind::Final: return Str::CapFinal;
    }
    return Str::CapX;
}

// Where one matrix is drawn: its grid's top-left corner and the cells shown.
struct Block {
    ImVec2 pos;           // top-left of the block (title)
    ImVec2 grid;          // top-left of the first cell
    int rows = 0, cols = 0;
    float w = 0.0f, h = 0.0f;
    float caption_y = 0.0f;   // top of the caption, below the grid and its "first 16" note
    bool key_header = false;  // columns are keys: their tokens above the grid
    bool entropy = false;     // a column of row entropies to the right
};

// Rows of this step are keys (K, V, X_kv) rather than queries.
bool rows_are_keys(StepKind k) { return k == StepKind::K || k == StepKind::V || k == StepKind::InputKv; }
bool cols_are_keys(StepKind k) {
    return k == StepKind::Scores || k == StepKind::Scaled || k == StepKind::Masked || k == StepKind::Weights;
}

// What a frame would otherwise redo over whole matrices and every token (pipeline_steps copies
// T×T matrices; the colour ranges and the label width scan them all): kept per trace and head.
struct StepsCache {
    const Trace* trace = nullptr;
    int revision = INT_MIN, head = -1;
    bool positional = false;
    std::vector<Step> steps;
    std::vector<std::pair<float, float>> range;  // per step: colour range lo, hi
    const ImFont* font = nullptr;
    float size = 0.0f, label_w = 0.0f;           // widest token label in `font` at `size`

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
    float label_width(ImFont* small) {
        if (font != small || size != small->FontSize) {
            font = small, size = small->FontSize, label_w = 0.0f;
            auto w = [&](const std::string& t) { return small->CalcTextSizeA(size, FLT_MAX, 0.0f, token_label(t)).x; };
            for (auto& t : trace->queries) label_w = std::max(label_w, w(t));
            for (auto& t : trace->keys) label_w = std::max(label_w, w(t));
        }
        return label_w;
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

}  // namespace

struct StepsView::Cache {
    StepsCache steps;
};
StepsView::StepsView() : cache_(std::make_unique<Cache>()) {}
StepsView::~StepsView() = default;

void StepsView::draw(ViewContext& ctx, ImVec2 min, ImVec2 max) {
    if (!ctx.state.figure.has(Detail::Projections)) return draw_weights_only(ctx, min, max);
    AppState& st = ctx.state;
    const Trace& tr = st.figure.trace();
    const float s = ctx.scale;
    const Palette& pal = palette(st.theme);
    ImFont* font = ctx.fonts.body;
    ImFont* small = ctx.fonts.small;
    const float fs = font->FontSize, ss = small->FontSize;
    if (tr.queries.empty() || tr.keys.empty()) return;
    const int head = std::clamp(st.steps.head, 0, tr.heads - 1);
    const HeadTrace& h = tr.attention.heads[head];
    StepsCache& cache = cache_->steps;
    cache.update(st, head);
    const std::vector<Step>& steps = cache.steps;
    const Colormap& map = colormaps()[std::clamp(st.heatmap.colormap, 0, static_cast<int>(colormaps().size()) - 1)];

    ImGui::SetCursorScreenPos(min);
    ImGui::BeginChild("##steps", ImVec2(max.x - min.x, max.y - min.y), false, ImGuiWindowFlags_HorizontalScrollbar);
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const ImVec2 origin = ImGui::GetCursorScreenPos();  // moves with the scroll
    const float avail_w = std::max(max.x - min.x - 2.0f * ImGui::GetStyle().ScrollbarSize, 200.0f * s);

    // [SECTION] Layout -----------------------------------------------------------------------
    auto small_w = [&](const char* t) { return small->CalcTextSizeA(ss, FLT_MAX, 0.0f, t).x; };
    const float cell_w = small_w("-00.0000") + 8.0f * s, cell_h = ss + 6.0f * s;
    const float label_w = std::min(cache.label_width(small), 70.0f * s) + 6.0f * s;  // token labels left of the rows
    const float margin = 14.0f * s, gap = 34.0f * s, title_h = fs + 2.0f * ss + 10.0f * s;
    std::vector<Block> blocks(steps.size());
    float x = margin, y = margin, row_h = 0.0f, content_w = 0.0f;
    for (size_t i = 0; i < steps.size(); ++i) {
        const Step& step = steps[i];
        Block& b = blocks[i];
        b.rows = static_cast<int>(std::min<Eigen::Index>(step.values.rows(), kMaxShown));
        b.cols = static_cast<int>(std::min<Eigen::Index>(step.values.cols(), kMaxShown));
        b.key_header = cols_are_keys(step.kind);
        b.entropy = step.kind == StepKind::Weights;
        const float header = b.key_header ? ss + 4.0f * s : 0.0f;
        const float grid_w = label_w + cell_w * (b.cols + (b.entropy ? 1 : 0));
        b.w = std::max({grid_w, font->CalcTextSizeA(fs, FLT_MAX, 0.0f, step.label.c_str()).x,
                        small_w(step.shape.c_str()), small_w(step.formula.c_str()), kCaptionMinW * s});
        b.caption_y = title_h + header + cell_h * b.rows + (b.rows < step.rows ? ss : 0.0f) + 4.0f * s;
        const float caption_h = small->CalcTextSizeA(ss, FLT_MAX, b.w, attn::tr(st.lang, caption(step.kind, tr))).y;
        b.h = b.caption_y + caption_h;
        if (x > margin && x + b.w > avail_w) {  // next line of the pipeline
            x = margin;
            y += row_h + gap;
            row_h = 0.0f;
        }
        b.pos = ImVec2(origin.x + x, origin.y + y);
        b.grid = ImVec2(b.pos.x + label_w, b.pos.y + title_h + header);
        x += b.w + gap;
        row_h = std::max(row_h, b.h);
        content_w = std::max(content_w, x);
    }
    ImGui::Dummy(ImVec2(content_w, y + row_h + margin));  // the scrolled extent

    // [SECTION] Hover ------------------------------------------------------------------------
    int hs = -1, hr = -1, hc = -1;  // hovered step, row, column
    if (ctx.interactive && ImGui::IsWindowHovered()) {
        const ImVec2 m = ImGui::GetIO().MousePos;
        for (size_t i = 0; i < blocks.size(); ++i) {
            const Block& b = blocks[i];
            if (m.x >= b.grid.x && m.x < b.grid.x + cell_w * b.cols && m.y >= b.grid.y && m.y < b.grid.y + cell_h * b.rows) {
                hs = static_cast<int>(i);
                hr = std::min(static_cast<int>((m.y - b.grid.y) / cell_h), b.rows - 1);
                hc = std::min(static_cast<int>((m.x - b.grid.x) / cell_w), b.cols - 1);
            }
        }
    }
    const StepKind hk = hs >= 0 ? steps[hs].kind : StepKind::Input;
    // What the hovered number is made of: rows (r) and columns (c) of other steps to outline.
    struct Mark { StepKind kind; int row, col; };
    std::vector<Mark> marks;
    if (hs >= 0) {
        if (hk == StepKind::Scores || hk == StepKind::Scaled || hk == StepKind::Masked) {
            marks.push_back({StepKind::Q, hr, -1});  // row of Q
            marks.push_back({StepKind::K, hc, -1});  // row of K = column of Kᵀ
        } else if (hk == StepKind::Weights) {
            marks.push_back({StepKind::Masked, hr, -1});  // the row the softmax normalises
            marks.push_back({StepKind::Scaled, hr, -1});
        } else if (hk == StepKind::Output) {
            marks.push_back({StepKind::Weights, hr, -1});
            marks.push_back({StepKind::V, -1, hc});
        } else if (hk == StepKind::Final) {
            marks.push_back({StepKind::Concat, hr, -1});
        } else if (hk == StepKind::Q || hk == StepKind::K || hk == StepKind::V) {
            marks.push_back({hk == StepKind::Q ? StepKind::Input : tr.kind == AttentionKind::Cross ? StepKind::InputKv : StepKind::Input, hr, -1});
        }
    }
    const ImU32 outline = st.theme == Theme::Dark ? IM_COL32(255, 255, 255, 235) : IM_COL32(20, 20, 24, 235);

    // [SECTION] Matrices ---------------------------------------------------------------------
    st.step_rects.clear();
    for (size_t i = 0; i < steps.size(); ++i) {
        const Step& step = steps[i];
        const Block& b = blocks[i];
        st.step_rects[step_name(step.kind)] = {b.grid.x, b.grid.y, cell_w * b.cols, cell_h * b.rows};
        // Title, shape, where it comes from; an arrow from the previous block on the same line.
        dl->AddText(font, fs, b.pos, pal.text, step.label.c_str());
        dl->AddText(small, ss, ImVec2(b.pos.x, b.pos.y + fs + 2.0f * s), pal.text_muted, step.shape.c_str());
        dl->AddText(small, ss, ImVec2(b.pos.x, b.pos.y + fs + ss + 4.0f * s), pal.text_muted, step.formula.c_str());
        if (i > 0 && std::fabs(blocks[i - 1].pos.y - b.pos.y) < 1.0f)
            dl->AddText(font, fs, ImVec2(b.pos.x - gap * 0.5f - fs * 0.35f, b.grid.y + cell_h * 0.5f - fs * 0.5f), pal.text_muted,
                        "\xe2\x86\x92");

        const auto [lo, hi] = cache.range[i];
        const float span = hi - lo;
        const bool masks = step.kind == StepKind::Masked || step.kind == StepKind::Weights;
        const bool key_rows = rows_are_keys(step.kind);
        for (int r = 0; r < b.rows; ++r) {
            const auto& tokens = key_rows ? tr.keys : tr.queries;
            dl->AddText(small, ss, ImVec2(b.pos.x, b.grid.y + r * cell_h + 3.0f * s), pal.text, token_label(tokens[r]));
        }
        if (b.key_header)
            for (int c = 0; c < b.cols; ++c) {
                const char* t = token_label(tr.keys[c]);
                const float w = std::min(small_w(t), cell_w - 2.0f * s);
                dl->PushClipRect(ImVec2(b.grid.x + c * cell_w, b.grid.y - ss - 4.0f * s), ImVec2(b.grid.x + (c + 1) * cell_w, b.grid.y), true);
                dl->AddText(small, ss, ImVec2(b.grid.x + (c + 0.5f) * cell_w - w * 0.5f, b.grid.y - ss - 3.0f * s), pal.text, t);
                dl->PopClipRect();
            }
        for (int r = 0; r < b.rows; ++r)
            for (int c = 0; c < b.cols; ++c) {
                const ImVec2 a(b.grid.x + c * cell_w, b.grid.y + r * cell_h), z(a.x + cell_w, a.y + cell_h);
                const float v = step.values(r, c);
                if (masks && !tr.allowed(r, c)) {
                    hatch_rect(dl, a, z, pal, s);
                    if (step.kind == StepKind::Masked) {
                        const std::string t = format_number(v);
                        const float w = small_w(t.c_str());
                        dl->AddText(small, ss, ImVec2((a.x + z.x - w) * 0.5f, a.y + 3.0f * s), pal.masked_text, t.c_str());
                    }
                    continue;
                }
                const auto rgb = colormap_sample(map, span > 0.0f ? (v - lo) / span : 0.5f);
                dl->AddRectFilled(a, z, ImGui::GetColorU32(ImVec4(rgb[0], rgb[1], rgb[2], 1.0f)));
                std::string t = format_number(v);
                if (small_w(t.c_str()) > cell_w - 4.0f * s) t = format_number(v, 1);
                const float w = small_w(t.c_str());
                dl->AddText(small, ss, ImVec2((a.x + z.x - w) * 0.5f, a.y + 3.0f * s), ink_on(rgb), t.c_str());
            }
        // Thin grid lines between cells.
        const ImU32 grid = ImGui::GetColorU32(ImVec4(pal.grid[0], pal.grid[1], pal.grid[2], pal.grid[3]));
        dl->AddRect(b.grid, ImVec2(b.grid.x + cell_w * b.cols, b.grid.y + cell_h * b.rows), grid);
        if (b.rows < step.rows || b.cols < step.values.cols())
            dl->AddText(small, ss, ImVec2(b.grid.x, b.grid.y + cell_h * b.rows + 1.0f * s), pal.text_muted, attn::tr(st.lang, Str::FirstShown));
        dl->AddText(small, ss, ImVec2(b.pos.x, b.pos.y + b.caption_y), pal.text_muted, attn::tr(st.lang, caption(step.kind, tr)), nullptr, b.w);
        if (b.entropy) {  // H of each row: 0 = one-hot, ln T_k = uniform; seed 002's saturation
            const float ex = b.grid.x + cell_w * b.cols + 4.0f * s;
            const float h_max = std::log(static_cast<float>(tr.keys.size()));
            dl->AddText(small, ss, ImVec2(ex, b.grid.y - ss - 3.0f * s), pal.text_muted, attn::tr(st.lang, Str::Entropy));
            for (int r = 0; r < b.rows; ++r) {
                const float H = row_entropy(step.values, r);
                const float yy = b.grid.y + r * cell_h;
                const float frac = h_max > 0.0f ? std::clamp(H / h_max, 0.0f, 1.0f) : 0.0f;
                dl->AddRectFilled(ImVec2(ex, yy + 2.0f * s), ImVec2(ex + (cell_w - 6.0f * s) * frac, yy + cell_h - 2.0f * s), pal.token_hover);
                dl->AddText(small, ss, ImVec2(ex + 2.0f * s, yy + 3.0f * s), pal.text, format_number(H).c_str());
            }
        }
    }
    // Outlines: what the hovered number is made of, then the number itself.
    auto block_of = [&](StepKind k) -> int {
        for (size_t i = 0; i < steps.size(); ++i)
            if (steps[i].kind == k) return static_cast<int>(i);
        return -1;
    };
    for (const Mark& m : marks) {
        const int i = block_of(m.kind);
        if (i < 0) continue;
        const Block& b = blocks[i];
        if (m.row >= 0 && m.row < b.rows)
            dl->AddRect(ImVec2(b.grid.x, b.grid.y + m.row * cell_h), ImVec2(b.grid.x + b.cols * cell_w, b.grid.y + (m.row + 1) * cell_h),
                        outline, 0.0f, 0, 2.0f * s);
        if (m.col >= 0 && m.col < b.cols)
            dl->AddRect(ImVec2(b.grid.x + m.col * cell_w, b.grid.y), ImVec2(b.grid.x + (m.col + 1) * cell_w, b.grid.y + b.rows * cell_h),
                        outline, 0.0f, 0, 2.0f * s);
    }
    if (hs >= 0) {
        const Block& b = blocks[hs];
        dl->AddRect(ImVec2(b.grid.x + hc * cell_w, b.grid.y + hr * cell_h), ImVec2(b.grid.x + (hc + 1) * cell_w, b.grid.y + (hr + 1) * cell_h),
                    outline, 0.0f, 0, 2.5f * s);
    }

    // [SECTION] Tooltip ----------------------------------------------------------------------
    if (hs >= 0) {
        const Step& step = steps[hs];
        ImGui::BeginTooltip();
        ImGui::Text("%s  [%d, %d] = %s", step.label.c_str(), hr + 1, hc + 1, format_number(step.values(hr, hc)).c_str());
        if (cols_are_keys(hk))
            ImGui::TextDisabled(attn::tr(st.lang, Str::TipTokens), token_label(tr.queries[hr]), token_label(tr.keys[hc]), head + 1);
        ImGui::Separator();
        switch (hk) {
            case StepKind::Scores: ImGui::TextUnformatted(explain_score(h, hr, hc).c_str()); break;
            case StepKind::Scaled:
            case StepKind::Masked:
                ImGui::TextUnformatted(explain_score(h, hr, hc).c_str());
                if (!tr.allowed(hr, hc)) ImGui::TextUnformatted(attn::tr(st.lang, Str::TipMasked));
                else ImGui::Text("\xc3\x97 %s = %s", format_number(tr.scale.factor(tr.d_k)).c_str(), format_number(step.values(hr, hc)).c_str());
                break;
            case StepKind::Weights:
                ImGui::TextUnformatted(explain_weight(h, tr.allowed, hr, hc).c_str());
                ImGui::TextDisabled(attn::tr(st.lang, Str::TipEntropy), format_number(row_entropy(h.weights, hr)).c_str(),
                                    tr.keys.size(), format_number(std::log(static_cast<float>(tr.keys.size()))).c_str());
                break;
            case StepKind::Output: ImGui::TextUnformatted(explain_output(h, hr, hc).c_str()); break;
            case StepKind::Concat: ImGui::Text(attn::tr(st.lang, Str::TipConcat), hc / tr.d_k + 1, hc % tr.d_k + 1); break;
            case StepKind::Final: ImGui::TextUnformatted(attn::tr(st.lang, Str::TipFinal)); break;
            default:
                if (!step.formula.empty()) ImGui::TextDisabled("%s", step.formula.c_str());
                break;
        }
        ImGui::EndTooltip();
    }
    ImGui::EndChild();
}

}  // namespace attn
