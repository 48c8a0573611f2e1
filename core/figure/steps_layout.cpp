// steps_layout.cpp: the Steps view's layout (see steps_layout.hpp). The numbers are the ones
// web/ui/steps_view.cpp computed inline before it drew from this: s is the UI scale.
//
// [SECTION] Geometry
// [SECTION] Items
#include "steps_layout.hpp"

#include "colormaps.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace attn {

// [SECTION] Geometry -----------------------------------------------------------------------------

namespace {
constexpr float kCaptionMinW = 240.0f;  // a block is at least this wide, so its caption wraps into ~2 lines
}

StepsLayout lay_out_steps(const StepsInput& in, const TextMeasure& m) {
    StepsLayout L;
    const float s = in.scale;
    const std::vector<Step>& steps = *in.steps;
    const float fs = m.size(FontRole::Body), ss = m.size(FontRole::Small);
    L.s = s;
    L.cell_w = m.width("-00.0000", FontRole::Small) + 8.0f * s, L.cell_h = ss + 6.0f * s;
    L.label_w = std::min(in.label_w, 70.0f * s) + 6.0f * s;
    const float margin = 14.0f * s;
    L.gap = 34.0f * s, L.title_h = fs + 2.0f * ss + 10.0f * s;
    L.blocks.resize(steps.size());
    BlockFlow flow(margin, in.avail_w, L.gap, margin);
    for (size_t i = 0; i < steps.size(); ++i) {
        const Step& step = steps[i];
        StepBlock& b = L.blocks[i];
        b.rows = static_cast<int>(std::min<Eigen::Index>(step.values.rows(), kStepsMaxShown));
        b.cols = static_cast<int>(std::min<Eigen::Index>(step.values.cols(), kStepsMaxShown));
        b.key_header = step_cols_are_keys(step.kind);
        const auto window = [](int first, Eigen::Index size) { return std::clamp(first, 0, std::max(0, static_cast<int>(size) - kStepsMaxShown)); };
        b.row0 = window(step_rows_are_keys(step.kind) ? in.first_key : in.first_query, step.values.rows());
        b.col0 = b.key_header ? window(in.first_key, step.values.cols()) : 0;
        b.entropy = step.kind == StepKind::Weights;
        b.pair_header = step.kind == StepKind::Angles;
        const int rope_dim = in.trace->family.rope_dim;
        if ((step.kind == StepKind::QRotated || step.kind == StepKind::KRotated) && rope_dim < b.cols) b.passes_from = rope_dim;
        const float header = b.key_header || b.pair_header || b.passes_from >= 0 ? ss + 4.0f * s : 0.0f;
        const float grid_w = L.label_w + L.cell_w * (b.cols + (b.entropy ? 1 : 0));
        b.w = std::max({grid_w, m.width(step.label, FontRole::Body), m.width(step.shape, FontRole::Small),
                        m.width(step.formula, FontRole::Small), kCaptionMinW * s});
        const bool cut = b.rows < step.rows || b.cols < step.values.cols();  // the rows shown, said under the grid
        b.caption_y = L.title_h + header + L.cell_h * b.rows + (cut ? ss : 0.0f) + 4.0f * s;
        const std::string& caption = i < in.captions.size() ? in.captions[i] : std::string();
        // A block wider than the view (a phone's) wraps its caption where the view ends.
        b.caption_w = std::max(std::min(b.w, in.avail_w - 2.0f * margin), kCaptionMinW * s);
        b.h = b.caption_y + m.wrapped_height(caption, FontRole::Small, b.caption_w);
        const auto [x, y] = flow.place(b.w, b.h);
        b.x = in.x0 + x, b.y = in.y0 + y;
        b.grid_x = b.x + L.label_w, b.grid_y = b.y + L.title_h + header;
    }
    L.content_w = flow.content_w, L.content_h = flow.bottom() + margin;
    return L;
}

StepsLayout::Hit StepsLayout::hit(float x, float y) const {
    Hit found;
    for (size_t i = 0; i < blocks.size(); ++i) {
        const StepBlock& b = blocks[i];
        if (x >= b.grid_x && x < b.grid_x + cell_w * b.cols && y >= b.grid_y && y < b.grid_y + cell_h * b.rows) {
            found.step = static_cast<int>(i);
            found.row = b.row0 + std::min(static_cast<int>((y - b.grid_y) / cell_h), b.rows - 1);
            found.col = b.col0 + std::min(static_cast<int>((x - b.grid_x) / cell_w), b.cols - 1);
        }
    }
    return found;
}

// [SECTION] Items --------------------------------------------------------------------------------

std::vector<StepMark> steps_marks(const Trace& tr, StepKind k, int row, int col) {
    std::vector<StepMark> marks;
    const FamilyTrace& f = tr.family;
    if (k == StepKind::Scores || k == StepKind::Scaled || k == StepKind::Masked) {
        marks.push_back({scored_q(f), row, -1});  // row of Q (as the scores read it)
        marks.push_back({scored_k(f), col, -1});  // row of K = column of Kᵀ
    } else if (k == StepKind::Capped) {
        marks.push_back({StepKind::Scaled, row, col});
    } else if (k == StepKind::Weights) {
        marks.push_back({StepKind::Masked, row, -1});  // the row the softmax normalises
        marks.push_back({StepKind::Capped, row, -1});
        marks.push_back({StepKind::Scaled, row, -1});
    } else if (k == StepKind::QNormed || k == StepKind::KNormed) {
        marks.push_back({k == StepKind::QNormed ? StepKind::Q : StepKind::K, row, -1});  // the norm reads the whole head
    } else if (k == StepKind::QRotated || k == StepKind::KRotated) {
        const StepKind before = unrotated_of(k, f);
        const int half = f.rope_dim / 2;
        marks.push_back({before, row, col});
        if (col < f.rope_dim && half > 0) {  // its pair, and the angle that turns them
            marks.push_back({before, row, col < half ? col + half : col - half});
            marks.push_back({StepKind::Angles, row, col % half});
        }
    } else if (k == StepKind::Output) {
        marks.push_back({StepKind::Weights, row, -1});
        marks.push_back({StepKind::V, -1, col});
    } else if (k == StepKind::Embedded) {
        marks.push_back({StepKind::Patches, row, -1});  // the patch's pixels: the product reads the whole row
    } else if (k == StepKind::Final) {
        marks.push_back({StepKind::Concat, row, -1});
    } else if (k == StepKind::Q || k == StepKind::K || k == StepKind::V) {
        marks.push_back({k == StepKind::Q ? StepKind::Input : tr.kind == AttentionKind::Cross ? StepKind::InputKv : StepKind::Input, row, -1});
    }
    return marks;
}

void number_cell_items(std::vector<Item>& items, Box cell, float v, const Colormap& map, float lo, float hi, bool scientific,
                       const TextMeasure& m, const FigurePalette& pal, float s) {
    std::string str = format_number(v);
    if (scientific) {
        char e[32];
        std::snprintf(e, sizeof e, "%.1e", static_cast<double>(v));
        str = v == 0.0f ? "0" : e;
    }
    if (m.width(str, FontRole::Small) > cell.w() - 4.0f * s) str = format_number(v, 1);
    const float w = m.width(str, FontRole::Small);
    Color ink = pal.masked_text;
    if (std::isfinite(v)) {
        const float span = hi - lo;
        const auto rgb = colormap_sample(map, span > 0.0f ? std::clamp((v - lo) / span, 0.0f, 1.0f) : 0.5f);
        items.push_back(rect_item(ItemRole::Other, cell, Color{rgb[0], rgb[1], rgb[2], 1.0f}));
        ink = ink_on_color(rgb);
    }
    items.push_back(text_item(ItemRole::Number, (cell.x0 + cell.x1 - w) * 0.5f, cell.y0 + 3.0f * s, FontRole::Small, ink, str, w, Item::Center));
}

void masked_cell_items(std::vector<Item>& items, Box cell, const float* v, const TextMeasure& m, const FigurePalette& pal, float s) {
    Item hatch;
    hatch.kind = Item::Hatch, hatch.role = ItemRole::NumberMasked, hatch.box = cell;
    items.push_back(hatch);
    if (!v) return;
    const std::string t = format_number(*v);
    const float w = m.width(t, FontRole::Small);
    items.push_back(text_item(ItemRole::NumberMasked, (cell.x0 + cell.x1 - w) * 0.5f, cell.y0 + 3.0f * s, FontRole::Small, pal.masked_text, t, w,
                              Item::Center));
}

StepsItems steps_items(const StepsLayout& L, const StepsInput& in, const StepsLayout::Hit& hover, const TextMeasure& m) {
    StepsItems out;
    std::vector<Item>& items = out.items;
    const Trace& tr = *in.trace;
    const std::vector<Step>& steps = *in.steps;
    const float s = L.s, fs = m.size(FontRole::Body), ss = m.size(FontRole::Small);
    const float cell_w = L.cell_w, cell_h = L.cell_h;
    const FigurePalette& pal = figure_palette(in.dark);
    const Colormap& map = colormaps()[std::clamp(in.colormap, 0, static_cast<int>(colormaps().size()) - 1)];
    auto small_text = [&](ItemRole role, float x, float y, Color c, std::string t, int index = -1) {
        const float w = m.width(t, FontRole::Small);
        items.push_back(text_item(role, x, y, FontRole::Small, c, std::move(t), w, Item::Left, index));
    };
    for (size_t i = 0; i < steps.size(); ++i) {
        const Step& step = steps[i];
        const StepBlock& b = L.blocks[i];
        // Title, shape, where it comes from; an arrow from the previous block on the same line.
        items.push_back(text_item(ItemRole::Heading, b.x, b.y, FontRole::Body, pal.text, step.label, m.width(step.label, FontRole::Body)));
        small_text(ItemRole::Caption, b.x, b.y + fs + 2.0f * s, pal.text_muted, step.shape);
        small_text(ItemRole::Caption, b.x, b.y + fs + ss + 4.0f * s, pal.text_muted, step.formula);
        if (i > 0 && std::fabs(L.blocks[i - 1].y - b.y) < 1.0f)
            items.push_back(text_item(ItemRole::Other, b.x - L.gap * 0.5f - fs * 0.35f, b.grid_y + cell_h * 0.5f - fs * 0.5f,
                                      FontRole::Body, pal.text_muted, "\xe2\x86\x92", m.width("\xe2\x86\x92", FontRole::Body)));

        const auto [lo, hi] = (*in.ranges)[i];
        const bool masks = step.kind == StepKind::Masked || step.kind == StepKind::Weights;
        const auto& row_tokens = step_rows_are_keys(step.kind) ? tr.keys : tr.queries;
        for (int r = 0; r < b.rows; ++r)
            small_text(ItemRole::RowLabel, b.x, b.grid_y + r * cell_h + 3.0f * s, pal.text, token_text(row_tokens[b.row0 + r]), b.row0 + r);
        if (b.key_header || b.pair_header)  // the keys' tokens, or the pair of dimensions an angle turns
            for (int c = 0; c < b.cols; ++c) {
                const int half = tr.family.rope_dim / 2;
                const std::string t = b.key_header ? token_text(tr.keys[b.col0 + c])
                                                   : printf_string("(%d, %d)", c + 1, c + 1 + half);
                const float w = std::min(m.width(t, FontRole::Small), cell_w - 2.0f * s);
                out.clips.push_back({b.grid_x + c * cell_w, b.grid_y - ss - 4.0f * s, b.grid_x + (c + 1) * cell_w, b.grid_y});
                small_text(ItemRole::ColLabel, b.grid_x + (c + 0.5f) * cell_w - w * 0.5f, b.grid_y - ss - 3.0f * s, pal.text, t, b.col0 + c);
                items.back().clip = static_cast<int>(out.clips.size()) - 1;
            }
        for (int r = 0; r < b.rows; ++r)
            for (int c = 0; c < b.cols; ++c) {
                const Box cell{b.grid_x + c * cell_w, b.grid_y + r * cell_h, b.grid_x + c * cell_w + cell_w, b.grid_y + r * cell_h + cell_h};
                const float v = step.values(b.row0 + r, b.col0 + c);
                if (masks && !tr.allowed(b.row0 + r, b.col0 + c)) {
                    masked_cell_items(items, cell, step.kind == StepKind::Masked ? &v : nullptr, m, pal, s);
                    continue;
                }
                number_cell_items(items, cell, v, map, lo, hi, false, m, pal, s);
            }
        // Thin grid lines between cells.
        items.push_back(outline_item(ItemRole::Other, {b.grid_x, b.grid_y, b.grid_x + cell_w * b.cols, b.grid_y + cell_h * b.rows}, pal.grid, 1.0f));
        if (b.passes_from >= 0) {  // a partial rotation: which columns turned, which passed through, a line between
            const float x_split = b.grid_x + cell_w * b.passes_from, y_head = b.grid_y - ss - 3.0f * s;
            auto heading = [&](const std::string& t, float x0, float x1) {
                const float w = m.width(t, FontRole::Small);
                small_text(ItemRole::Heading, std::max(x0, (x0 + x1 - w) * 0.5f), y_head, pal.text_muted, t);
            };
            heading(in.turned, b.grid_x, x_split);
            heading(in.unchanged, x_split, b.grid_x + cell_w * b.cols);
            items.push_back(segment_item(ItemRole::Other, x_split, y_head, x_split, b.grid_y + cell_h * b.rows, pal.text, 2.0f * s));
        }
        if (b.rows < step.rows || b.cols < step.values.cols()) {
            char note[160];
            std::snprintf(note, sizeof note, in.shown.c_str(), b.row0 + 1, b.row0 + b.rows, static_cast<int>(step.rows), b.col0 + 1,
                          b.col0 + b.cols, static_cast<int>(step.values.cols()));
            small_text(ItemRole::Note, b.grid_x, b.grid_y + cell_h * b.rows + 1.0f * s, pal.text_muted, note);
        }
        if (i < in.captions.size()) {
            small_text(ItemRole::Caption, b.x, b.y + b.caption_y, pal.text_muted, in.captions[i]);
            items.back().wrap = b.caption_w;
        }
        if (b.entropy) {  // H of each row: 0 = one-hot, ln T_k = uniform; seed 002's saturation
            const float ex = b.grid_x + cell_w * b.cols + 4.0f * s;
            const float h_max = std::log(static_cast<float>(tr.keys.size()));
            small_text(ItemRole::Heading, ex, b.grid_y - ss - 3.0f * s, pal.text_muted, in.entropy);
            for (int r = 0; r < b.rows; ++r) {
                const float H = row_entropy(step.values, b.row0 + r);
                const float yy = b.grid_y + r * cell_h;
                const float frac = h_max > 0.0f ? std::clamp(H / h_max, 0.0f, 1.0f) : 0.0f;
                items.push_back(rect_item(ItemRole::Strip, {ex, yy + 2.0f * s, ex + (cell_w - 6.0f * s) * frac, yy + cell_h - 2.0f * s}, pal.token_hover));
                small_text(ItemRole::Number, ex + 2.0f * s, yy + 3.0f * s, pal.text, format_number(H), b.row0 + r);
            }
        }
    }
    // Outlines: what the hovered number is made of, then the number itself.
    if (hover.step >= 0 && hover.step < static_cast<int>(steps.size())) {
        Color outline = pal.outline;
        outline.a = 235.0f / 255.0f;
        auto block_of = [&](StepKind k) -> int {
            for (size_t i = 0; i < steps.size(); ++i)
                if (steps[i].kind == k) return static_cast<int>(i);
            return -1;
        };
        for (const StepMark& mark : steps_marks(tr, steps[static_cast<size_t>(hover.step)].kind, hover.row, hover.col)) {
            const int i = block_of(mark.kind);
            if (i < 0) continue;
            const StepBlock& b = L.blocks[static_cast<size_t>(i)];
            const int r = mark.row - b.row0, c = mark.col - b.col0;  // in the window
            if (mark.row >= 0 && mark.col >= 0) {  // one cell
                if (b.shows(mark.row, mark.col))
                    items.push_back(outline_item(ItemRole::Selection, {b.grid_x + c * cell_w, b.grid_y + r * cell_h,
                                                                       b.grid_x + (c + 1) * cell_w, b.grid_y + (r + 1) * cell_h},
                                                 outline, 2.0f * s));
                continue;
            }
            if (mark.row >= 0 && r >= 0 && r < b.rows)
                items.push_back(outline_item(ItemRole::Selection, {b.grid_x, b.grid_y + r * cell_h, b.grid_x + b.cols * cell_w,
                                                                   b.grid_y + (r + 1) * cell_h}, outline, 2.0f * s));
            if (mark.col >= 0 && c >= 0 && c < b.cols)
                items.push_back(outline_item(ItemRole::Selection, {b.grid_x + c * cell_w, b.grid_y, b.grid_x + (c + 1) * cell_w,
                                                                   b.grid_y + b.rows * cell_h}, outline, 2.0f * s));
        }
        const StepBlock& b = L.blocks[static_cast<size_t>(hover.step)];
        if (b.shows(hover.row, hover.col)) {
            const int r = hover.row - b.row0, c = hover.col - b.col0;
            items.push_back(outline_item(ItemRole::Hover, {b.grid_x + c * cell_w, b.grid_y + r * cell_h, b.grid_x + (c + 1) * cell_w,
                                                           b.grid_y + (r + 1) * cell_h}, outline, 2.5f * s));
        }
    }
    return out;
}

}  // namespace attn
