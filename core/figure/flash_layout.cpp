// flash_layout.cpp: the Steps view's tiles mode (see flash_layout.hpp). s is the UI scale.
//
// [SECTION] Steps and pseudocode
// [SECTION] The trace of a head
// [SECTION] Blocks
// [SECTION] Geometry
// [SECTION] Items
// [SECTION] Arithmetic
#include "flash_layout.hpp"

#include "colormaps.hpp"
#include "steps_layout.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attn {

// [SECTION] Steps and pseudocode ---------------------------------------------------------------

std::vector<FlashStep> flash_steps(const FlashTrace& t) {
    std::vector<FlashStep> steps;
    steps.reserve(static_cast<size_t>(t.row_tiles) * static_cast<size_t>(t.col_tiles + 1) + 1);
    for (int i = 0; i < t.row_tiles; ++i) {
        for (int j = 0; j < t.col_tiles; ++j) steps.push_back({FlashStep::Tile, i, j});
        steps.push_back({FlashStep::Normalize, i, 0});
    }
    steps.push_back({FlashStep::Check, 0, 0});
    return steps;
}

long flash_step_count(int T_q, int T_k, TileSize tile) {
    const long br = std::max(tile.rows, 1), bc = std::max(tile.cols, 1);
    return ((T_q + br - 1) / br) * ((T_k + bc - 1) / bc + 1) + 1;
}

const PseudocodeLine& pseudocode_line(FlashLine line) {
    static constexpr PseudocodeLine kPseudocode[] = {
        {0, "for i = 1 \xe2\x80\xa6 T_r:"},
        {1, "m \xe2\x86\x90 \xe2\x88\x92\xe2\x88\x9e,  \xe2\x84\x93 \xe2\x86\x90 0,  O \xe2\x86\x90 0"},
        {1, "for j = 1 \xe2\x80\xa6 T_c:"},
        {2, "if M_ij is all \xe2\x88\x92\xe2\x88\x9e: skip the tile"},
        {2, "S \xe2\x86\x90 Q_i K_j\xe1\xb5\x80 \xc2\xb7 scale + M_ij"},
        {2, "m\xe2\x80\xb2 \xe2\x86\x90 max(m, rowmax(S))"},
        {2, "P \xe2\x86\x90 e^(S \xe2\x88\x92 m\xe2\x80\xb2)"},
        {2, "\xce\xb1 \xe2\x86\x90 e^(m \xe2\x88\x92 m\xe2\x80\xb2)"},
        {2, "\xe2\x84\x93 \xe2\x86\x90 \xce\xb1\xc2\xb7\xe2\x84\x93 + rowsum(P)"},
        {2, "O \xe2\x86\x90 diag(\xce\xb1)\xc2\xb7O + P\xc2\xb7V_j"},
        {2, "m \xe2\x86\x90 m\xe2\x80\xb2"},
        {1, "O_i \xe2\x86\x90 diag(\xe2\x84\x93)\xe2\x81\xbb\xc2\xb9\xc2\xb7O"},
        {0, "return O"},
    };
    static_assert(sizeof kPseudocode / sizeof kPseudocode[0] == static_cast<size_t>(FlashLine::Count));
    return kPseudocode[static_cast<int>(line)];
}

std::vector<FlashLine> step_lines(const FlashTrace& t, FlashStep step) {
    if (step.kind == FlashStep::Normalize) return {FlashLine::Normalize};
    if (step.kind == FlashStep::Check) return {FlashLine::Return};
    std::vector<FlashLine> lines;
    if (step.j == 0) lines.push_back(FlashLine::Init);  // a query tile starts
    if (t.at(step.i, step.j).skipped) {
        lines.push_back(FlashLine::Skip);
        return lines;
    }
    for (FlashLine l : {FlashLine::S, FlashLine::M, FlashLine::P, FlashLine::Alpha, FlashLine::L, FlashLine::O, FlashLine::Keep})
        lines.push_back(l);
    return lines;
}

long flash_tile_count(int T_q, int T_k, TileSize tile) {
    const long br = std::max(tile.rows, 1), bc = std::max(tile.cols, 1);
    return ((T_q + br - 1) / br) * ((T_k + bc - 1) / bc);
}

long flash_trace_floats(int T_q, int T_k, int d_v, TileSize tile) {
    const long br = std::min(std::max(tile.rows, 1), std::max(T_q, 1)), bc = std::min(std::max(tile.cols, 1), std::max(T_k, 1));
    return flash_tile_count(T_q, T_k, tile) * br * (2 * bc + d_v + 5);  // S, P, O and the five row vectors
}

// [SECTION] The trace of a head ----------------------------------------------------------------

FlashTrace flash_of_head(const Trace& tr, int head, TileSize tile) {
    const HeadTrace& h = tr.attention.heads.at(static_cast<size_t>(head));
    return flash_attention(head_queries(tr, head), head_keys(tr, head), h.v, tr.scale.factor(tr.d_k), tr.allowed, tile, tr.family.softcap);
}

void flash_score_range(const FlashTrace& flash, float& lo, float& hi) {
    lo = INFINITY, hi = -INFINITY;
    for (const FlashTile& f : flash.tiles)
        for (Eigen::Index k = 0; k < f.s.size(); ++k)
            if (std::isfinite(f.s.data()[k])) lo = std::min(lo, f.s.data()[k]), hi = std::max(hi, f.s.data()[k]);
    if (!std::isfinite(lo)) lo = 0.0f, hi = 1.0f;
}

float flash_max_difference(const Trace& tr, int head, const FlashTrace& flash) {
    const Matrix& o = tr.attention.heads.at(static_cast<size_t>(head)).output;
    const Eigen::Index rows = std::min<Eigen::Index>(o.rows(), flash.output.rows());
    if (rows == 0 || o.cols() != flash.output.cols()) return 0.0f;
    return (flash.output.topRows(rows) - o.topRows(rows)).cwiseAbs().maxCoeff();
}

float flash_output_size(const Trace& tr, int head) {
    const Matrix& o = tr.attention.heads.at(static_cast<size_t>(head)).output;
    return o.size() == 0 ? 0.0f : o.cwiseAbs().maxCoeff();
}

int flash_tile_order(const FlashTrace& t, int i, int j) { return i * t.col_tiles + j + 1; }

// [SECTION] Blocks -----------------------------------------------------------------------------

namespace {

void finite_range(const Matrix& m, float& lo, float& hi) {
    lo = INFINITY, hi = -INFINITY;
    for (Eigen::Index k = 0; k < m.size(); ++k)
        if (std::isfinite(m.data()[k])) lo = std::min(lo, m.data()[k]), hi = std::max(hi, m.data()[k]);
    if (!std::isfinite(lo)) lo = 0.0f, hi = 1.0f;
}

// Two row vectors side by side: n×2.
Matrix side_by_side(const RowVector& a, const RowVector& b) {
    Matrix m(a.size(), 2);
    m.col(0) = a.transpose(), m.col(1) = b.transpose();
    return m;
}

}  // namespace

std::vector<FlashBlock> flash_blocks(const FlashInput& in) {
    const Trace& tr = *in.trace;
    const FlashTrace& t = *in.flash;
    std::vector<FlashBlock> blocks;
    auto add = [&](FlashPart part, FlashLine line, std::string label, std::string shape, Matrix values, int row0) -> FlashBlock& {
        FlashBlock& b = blocks.emplace_back();
        b.part = part, b.line = line, b.label = std::move(label), b.shape = std::move(shape);
        b.rows = static_cast<int>(values.rows());
        b.values = std::move(values), b.row0 = row0;
        finite_range(b.values, b.lo, b.hi);
        return b;
    };
    auto keys = [&](int c0, int c1) {
        std::vector<std::string> heads;
        for (int c = c0; c < c1; ++c) heads.emplace_back(token_text(tr.keys.at(static_cast<size_t>(c))));
        return heads;
    };
    if (in.step.kind == FlashStep::Tile) {
        const FlashTile& f = t.at(in.step.i, in.step.j);
        const int n = f.r1 - f.r0, w = f.c1 - f.c0;
        const std::string capped = tr.family.softcap > 0 ? "cap\xc2\xb7tanh(Q_i K_j\xe1\xb5\x80\xc2\xb7scale / cap)" : "Q_i K_j\xe1\xb5\x80\xc2\xb7scale";
        MaskMatrix masked(n, w);
        for (int r = 0; r < n; ++r)
            for (int c = 0; c < w; ++c) masked(r, c) = tr.allowed.size() != 0 && !tr.allowed(f.r0 + r, f.c0 + c);
        if (f.skipped) {
            FlashBlock& b = add(FlashPart::S, FlashLine::Skip, "M_ij = \xe2\x88\x92\xe2\x88\x9e", shape_text("B_r", "B_c", n, w),
                                Matrix::Constant(n, w, -INFINITY), f.r0);
            b.col_heads = keys(f.c0, f.c1), b.col0 = f.c0, b.hatch_inf = true, b.masked = masked;
            return blocks;
        }
        FlashBlock& s = add(FlashPart::S, FlashLine::S, "S = " + capped, shape_text("B_r", "B_c", n, w), f.s, f.r0);
        s.col_heads = keys(f.c0, f.c1), s.col0 = f.c0, s.hatch_inf = true, s.masked = masked, s.lo = in.s_lo, s.hi = in.s_hi;
        FlashBlock& m = add(FlashPart::M, FlashLine::M, "m \xe2\x86\x92 m\xe2\x80\xb2", shape_text("B_r", "2", n, 2),
                            side_by_side(f.m_old, f.m_new), f.r0);
        m.col_heads = {"m", "m\xe2\x80\xb2"}, m.lo = in.s_lo, m.hi = in.s_hi;
        FlashBlock& p = add(FlashPart::P, FlashLine::P, "P = e^(S \xe2\x88\x92 m\xe2\x80\xb2)", shape_text("B_r", "B_c", n, w), f.p, f.r0);
        p.col_heads = keys(f.c0, f.c1), p.col0 = f.c0, p.hatch_inf = true, p.masked = masked, p.lo = 0.0f, p.hi = 1.0f;
        FlashBlock& a = add(FlashPart::Alpha, FlashLine::Alpha, "\xce\xb1 = e^(m \xe2\x88\x92 m\xe2\x80\xb2)", shape_text("B_r", "1", n, 1),
                            Matrix(f.alpha.transpose()), f.r0);
        a.col_heads = {"\xce\xb1"}, a.lo = 0.0f, a.hi = 1.0f;
        FlashBlock& l = add(FlashPart::L, FlashLine::L, "\xe2\x84\x93 \xe2\x86\x92 \xe2\x84\x93\xe2\x80\xb2", shape_text("B_r", "2", n, 2),
                            side_by_side(f.l_old, f.l_new), f.r0);
        l.col_heads = {"\xe2\x84\x93", "\xe2\x84\x93\xe2\x80\xb2"}, l.lo = 0.0f;
        add(FlashPart::O, FlashLine::O, "O \xe2\x86\x90 diag(\xce\xb1)\xc2\xb7O + P\xc2\xb7V_j", shape_text("B_r", "d_v", n, t.d_v), f.o, f.r0);
    } else if (in.step.kind == FlashStep::Normalize) {
        const FlashTile& f = t.at(in.step.i, t.col_tiles - 1);  // after the row's last tile (a skipped one carries O, ℓ)
        const int n = f.r1 - f.r0;
        add(FlashPart::Unnormalized, FlashLine::O, "O", shape_text("B_r", "d_v", n, t.d_v), f.o, f.r0);
        FlashBlock& l = add(FlashPart::Sum, FlashLine::L, "\xe2\x84\x93", shape_text("B_r", "1", n, 1), Matrix(f.l_new.transpose()), f.r0);
        l.col_heads = {"\xe2\x84\x93"}, l.lo = 0.0f;
        add(FlashPart::Oi, FlashLine::Normalize, "O_i = diag(\xe2\x84\x93)\xe2\x81\xbb\xc2\xb9\xc2\xb7O", shape_text("B_r", "d_v", n, t.d_v),
            t.output.middleRows(f.r0, n), f.r0);
    } else {
        const Matrix& direct = tr.attention.heads.at(static_cast<size_t>(in.head)).output;
        const Eigen::Index rows = std::min<Eigen::Index>(direct.rows(), t.output.rows());
        add(FlashPart::Tiles, FlashLine::Return, "O (tiles)", shape_text("T_q", "d_v", t.T_q, t.d_v), t.output.topRows(rows), 0).rows = t.T_q;
        add(FlashPart::Direct, FlashLine::Return, "softmax(QK\xe1\xb5\x80\xc2\xb7scale)\xc2\xb7V", shape_text("T_q", "d_v", t.T_q, t.d_v),
            direct.topRows(rows), 0).rows = t.T_q;
        FlashBlock& d = add(FlashPart::Diff, FlashLine::Return, "|O (tiles) \xe2\x88\x92 O|", shape_text("T_q", "d_v", t.T_q, t.d_v),
                            (t.output.topRows(rows) - direct.topRows(rows)).cwiseAbs(), 0);
        d.rows = t.T_q, d.lo = 0.0f, d.scientific = true;
    }
    return blocks;
}

// [SECTION] Geometry ---------------------------------------------------------------------------

namespace {
constexpr float kFlashCaptionMinW = 200.0f;  // a block at least this wide, so its caption wraps into ~2 lines
constexpr float kFlashIndent = 18.0f;        // the pseudocode's indent per loop
}  // namespace

float flash_state(const FlashInput& in, int q, bool sum) {
    const FlashTrace& t = *in.flash;
    const int i = q / t.tile.rows;
    const bool done = in.step.kind == FlashStep::Check || i < in.step.i || (i == in.step.i && in.step.kind == FlashStep::Normalize);
    if (done) return sum ? t.l(q) : t.m(q);
    if (i > in.step.i) return sum ? 0.0f : -INFINITY;  // not started
    const FlashTile& f = t.at(i, in.step.j);
    return sum ? f.l_new(q - f.r0) : f.m_new(q - f.r0);
}

FlashLayout lay_out_flash(const FlashInput& in, const std::vector<FlashBlock>& blocks, const TextMeasure& m) {
    FlashLayout L;
    const FlashTrace& t = *in.flash;
    const float s = in.scale, fs = m.size(FontRole::Body), ss = m.size(FontRole::Small);
    L.s = s;
    L.cell_w = m.width("-00.0000", FontRole::Small) + 8.0f * s, L.cell_h = ss + 6.0f * s;
    L.label_w = std::min(in.label_w, 70.0f * s) + 6.0f * s;
    L.gap = 34.0f * s, L.title_h = fs + 2.0f * ss + 10.0f * s;
    const float margin = 14.0f * s, inner_w = std::max(in.avail_w - 2.0f * margin, 120.0f * s);
    float y = margin;
    L.heading_y = in.y0 + y;
    y += m.wrapped_height(in.heading, FontRole::Body, inner_w) + 10.0f * s;
    L.verdict_y = in.y0 + y;  // the check's verdict (the largest difference), above the map that may pass the fold
    if (!in.verdict.empty()) y += m.wrapped_height(in.verdict, FontRole::Body, inner_w) + 10.0f * s;

    // The map of tiles under its title: cells a little taller than a number's row while they
    // fit, smaller past that (no labels nor running state once a row is shorter than the text).
    const float state_w = 2.0f * L.cell_w + 8.0f * s;
    const float tall = std::max(t.T_q, t.T_k) <= 8 ? 1.5f : 1.0f;  // a few tokens: bigger cells
    float cell = std::min(tall * L.cell_h, (inner_w - L.label_w - state_w) / std::max(t.T_k, 1));
    cell = std::min(cell, 420.0f * s / std::max(t.T_q, 1));
    L.map_labels = L.has_state = cell >= ss;
    if (!L.map_labels) cell = std::min(inner_w / std::max(t.T_k, 1), 420.0f * s / std::max(t.T_q, 1));
    L.cell = std::max(cell, 1.0f * s);
    const float map_w = (L.map_labels ? L.label_w : 0.0f) + L.cell * t.T_k + (L.has_state ? state_w : 0.0f);
    L.overview_w = std::min(std::max(map_w, 300.0f * s), inner_w);
    L.overview_y = in.y0 + y;
    y += m.wrapped_height(in.overview_title, FontRole::Small, L.overview_w) + 6.0f * s;
    L.map_x = in.x0 + margin + (L.map_labels ? L.label_w : 0.0f);
    L.map_y = in.y0 + y + (L.has_state ? ss + 4.0f * s : 0.0f);  // the state's headings above the rows
    L.state_x = L.map_x + L.cell * t.T_k + 8.0f * s;
    const float map_right = in.x0 + margin + std::max(map_w, L.overview_w);
    const float map_bottom = L.map_y + L.cell * t.T_q;

    // The pseudocode: right of the map when it fits, else under it.
    float code_text_w = 0.0f;
    for (int l = 0; l < static_cast<int>(FlashLine::Count); ++l) {
        const PseudocodeLine& line = pseudocode_line(static_cast<FlashLine>(l));
        code_text_w = std::max(code_text_w, line.indent * kFlashIndent * s + m.width(line.text, FontRole::Body));
    }
    const float pad = 10.0f * s;
    L.code_line_h = fs + 6.0f * s;
    L.code_w = code_text_w + m.width("  j = 00 / 00", FontRole::Small) + 2.0f * pad;
    const float code_h = L.code_line_h * static_cast<float>(FlashLine::Count) + 2.0f * pad + ss + 4.0f * s;
    float bottom = map_bottom;
    if (map_right + L.gap + L.code_w <= in.x0 + margin + inner_w) {
        L.code_x = map_right + L.gap, L.code_y = L.overview_y;
        bottom = std::max(bottom, L.code_y + code_h);
    } else {
        L.code_x = in.x0 + margin, L.code_y = map_bottom + 14.0f * s;
        bottom = L.code_y + code_h;
    }
    float content_w = std::max(map_right, L.code_x + L.code_w) - in.x0 + margin;
    y = bottom - in.y0 + L.gap * 0.75f;

    // The current step's matrices, left to right, wrapping as the pipeline's.
    BlockFlow flow(margin, in.avail_w, L.gap, y);
    L.boxes.resize(blocks.size());
    for (size_t i = 0; i < blocks.size(); ++i) {
        const FlashBlock& b = blocks[i];
        FlashBlockBox& box = L.boxes[i];
        box.rows = static_cast<int>(std::min<Eigen::Index>(b.values.rows(), kStepsMaxShown));
        box.cols = static_cast<int>(std::min<Eigen::Index>(b.values.cols(), kStepsMaxShown));
        const float header = b.col_heads.empty() ? 0.0f : ss + 4.0f * s;
        const float grid_w = L.label_w + L.cell_w * box.cols;
        box.w = std::max({grid_w, m.width(b.label, FontRole::Body), m.width(b.shape, FontRole::Small), kFlashCaptionMinW * s});
        const bool cut = box.rows < b.rows || box.cols < b.values.cols();
        box.caption_y = L.title_h + header + L.cell_h * box.rows + (cut ? ss : 0.0f) + 4.0f * s;
        box.caption_w = std::max(std::min(box.w, inner_w), kFlashCaptionMinW * s);
        const std::string& caption = i < in.captions.size() ? in.captions[i] : std::string();
        box.h = box.caption_y + m.wrapped_height(caption, FontRole::Small, box.caption_w);
        const auto [x, by] = flow.place(box.w, box.h);
        box.x = in.x0 + x, box.y = in.y0 + by;
        box.grid_x = box.x + L.label_w, box.grid_y = box.y + L.title_h + header;
    }
    y = flow.bottom();
    content_w = std::max(content_w, flow.content_w);
    L.content_w = content_w, L.content_h = y + margin;
    return L;
}

FlashLayout::Hit FlashLayout::hit(float x, float y, const FlashInput& in) const {
    const FlashTrace& t = *in.flash;
    for (size_t i = 0; i < boxes.size(); ++i) {
        const FlashBlockBox& b = boxes[i];
        if (x >= b.grid_x && x < b.grid_x + cell_w * b.cols && y >= b.grid_y && y < b.grid_y + cell_h * b.rows)
            return {static_cast<int>(i), std::min(static_cast<int>((y - b.grid_y) / cell_h), b.rows - 1),
                    std::min(static_cast<int>((x - b.grid_x) / cell_w), b.cols - 1)};
    }
    if (x >= map_x && x < map_x + cell * t.T_k && y >= map_y && y < map_y + cell * t.T_q)
        return {kMap, std::min(static_cast<int>((y - map_y) / cell), t.T_q - 1), std::min(static_cast<int>((x - map_x) / cell), t.T_k - 1)};
    if (has_state && x >= state_x && x < state_x + 2.0f * cell_w && y >= map_y && y < map_y + cell * t.T_q)
        return {kState, std::min(static_cast<int>((y - map_y) / cell), t.T_q - 1), x < state_x + cell_w ? 0 : 1};
    return {};
}

// [SECTION] Items ------------------------------------------------------------------------------

namespace {

// Where tile (i, j) stands in the current step: 0 to come, 1 current, 2 done.
int tile_state(const FlashInput& in, int i, int j) {
    const FlashStep& st = in.step;
    if (st.kind == FlashStep::Check || i < st.i) return 2;
    if (i > st.i) return 0;
    if (st.kind == FlashStep::Normalize) return 2;
    return j < st.j ? 2 : j == st.j ? 1 : 0;
}

}  // namespace

StepsItems flash_items(const FlashLayout& L, const FlashInput& in, const std::vector<FlashBlock>& blocks, const FlashLayout::Hit& hover,
                       const TextMeasure& m) {
    StepsItems out;
    std::vector<Item>& items = out.items;
    const Trace& tr = *in.trace;
    const FlashTrace& t = *in.flash;
    const float s = L.s, fs = m.size(FontRole::Body), ss = m.size(FontRole::Small);
    const FigurePalette& pal = figure_palette(in.dark);
    const Colormap& map = colormaps()[std::clamp(in.colormap, 0, static_cast<int>(colormaps().size()) - 1)];
    const float margin = 14.0f * s, inner_w = std::max(in.avail_w - 2.0f * margin, 120.0f * s);
    auto text = [&](ItemRole role, float x, float y, FontRole font, Color c, std::string str, int index = -1) {
        const float w = m.width(str, font);
        items.push_back(text_item(role, x, y, font, c, std::move(str), w, Item::Left, index));
    };
    auto colour = [&](float v, float lo, float hi) {
        const float span = hi - lo;
        return colormap_sample(map, span > 0.0f ? std::clamp((v - lo) / span, 0.0f, 1.0f) : 0.5f);
    };
    auto hatch = [&](Box box) {
        Item h;
        h.kind = Item::Hatch, h.role = ItemRole::NumberMasked, h.box = box;
        items.push_back(h);
    };
    Color outline = pal.outline;
    outline.a = 235.0f / 255.0f;

    items.push_back(text_item(ItemRole::Heading, in.x0 + margin, L.heading_y, FontRole::Body, pal.text, in.heading,
                              m.width(in.heading, FontRole::Body)));
    items.back().wrap = inner_w;

    // The map of tiles.
    text(ItemRole::Caption, in.x0 + margin, L.overview_y, FontRole::Small, pal.text_muted, in.overview_title);
    items.back().wrap = L.overview_w;
    const float c = L.cell;
    if (L.map_labels)
        for (int q = 0; q < t.T_q; ++q)
            text(ItemRole::RowLabel, in.x0 + margin, L.map_y + q * c + (c - ss) * 0.5f, FontRole::Small, pal.text,
                 token_text(tr.queries[static_cast<size_t>(q)]), q);
    for (const FlashTile& f : t.tiles) {
        const Box box{L.map_x + f.c0 * c, L.map_y + f.r0 * c, L.map_x + f.c1 * c, L.map_y + f.r1 * c};
        const int state = tile_state(in, f.i, f.j);
        if (state == 0) {
            items.push_back(rect_item(ItemRole::Other, box, pal.token_fill));
        } else if (f.skipped) {
            hatch(box);
        } else {
            for (int r = 0; r < f.r1 - f.r0; ++r)
                for (int k = 0; k < f.c1 - f.c0; ++k) {
                    const Box cell{box.x0 + k * c, box.y0 + r * c, box.x0 + (k + 1) * c, box.y0 + (r + 1) * c};
                    const float v = f.s(r, k);
                    if (!std::isfinite(v)) {
                        hatch(cell);
                        continue;
                    }
                    const auto rgb = colour(v, in.s_lo, in.s_hi);
                    items.push_back(rect_item(ItemRole::Other, cell, Color{rgb[0], rgb[1], rgb[2], 1.0f}));
                }
        }
        items.push_back(outline_item(ItemRole::Other, box, pal.grid, 1.0f * s));
        // Its place in the order, where the tile has room for the number.
        const std::string order = std::to_string(flash_tile_order(t, f.i, f.j));
        const float ow = m.width(order, FontRole::Small);
        if (box.w() >= ow + 4.0f * s && box.h() >= ss + 2.0f * s) {
            Color ink = state == 0 ? pal.text_muted : pal.text;
            if (state != 0 && !f.skipped && std::isfinite(f.s(0, 0))) ink = ink_on_color(colour(f.s(0, 0), in.s_lo, in.s_hi));
            items.push_back(text_item(ItemRole::Note, box.x0 + 2.0f * s, box.y0 + 1.0f * s, FontRole::Small, ink, order, ow));
        }
    }
    // The current tile, or the current query tile's band (its normalization).
    if (in.step.kind == FlashStep::Tile) {
        const FlashTile& f = t.at(in.step.i, in.step.j);
        items.push_back(outline_item(ItemRole::Selection, {L.map_x + f.c0 * c, L.map_y + f.r0 * c, L.map_x + f.c1 * c, L.map_y + f.r1 * c},
                                     pal.accent, 3.0f * s));
    } else if (in.step.kind == FlashStep::Normalize) {
        const FlashTile& f = t.at(in.step.i, 0);
        items.push_back(outline_item(ItemRole::Selection, {L.map_x, L.map_y + f.r0 * c, L.map_x + t.T_k * c, L.map_y + f.r1 * c},
                                     pal.accent, 3.0f * s));
    }
    if (L.has_state) {  // every query's running m and ℓ after this step
        const char* heads[2] = {"m", "\xe2\x84\x93"};
        for (int k = 0; k < 2; ++k) {
            const float x = L.state_x + k * L.cell_w;
            text(ItemRole::Heading, x + (L.cell_w - m.width(heads[k], FontRole::Small)) * 0.5f, L.map_y - ss - 3.0f * s, FontRole::Small,
                 pal.text_muted, heads[k]);
            for (int q = 0; q < t.T_q; ++q) {
                const float v = flash_state(in, q, k == 1);
                const std::string str = format_number(v);
                const float w = m.width(str, FontRole::Small);
                text(ItemRole::Number, x + (L.cell_w - w) * 0.5f, L.map_y + q * c + (c - ss) * 0.5f, FontRole::Small,
                     std::isfinite(v) ? pal.text : pal.text_muted, str, q);
            }
        }
        items.push_back(outline_item(ItemRole::Other, {L.state_x, L.map_y, L.state_x + 2.0f * L.cell_w, L.map_y + t.T_q * c}, pal.grid, 1.0f * s));
    }

    // The pseudocode, the current step's lines marked, the hovered number's line outlined.
    const float pad = 10.0f * s;
    const float code_top = L.code_y + ss + 4.0f * s;
    text(ItemRole::Caption, L.code_x, L.code_y, FontRole::Small, pal.text_muted, in.code_title);
    items.push_back(rect_item(ItemRole::Other,
                              {L.code_x, code_top, L.code_x + L.code_w, code_top + L.code_line_h * static_cast<float>(FlashLine::Count) + 2.0f * pad},
                              pal.token_fill, 4.0f * s));
    const std::vector<FlashLine> current = step_lines(t, in.step);
    FlashLine hovered = FlashLine::Count;
    if (hover.block >= 0 && hover.block < static_cast<int>(blocks.size())) hovered = blocks[static_cast<size_t>(hover.block)].line;
    for (int l = 0; l < static_cast<int>(FlashLine::Count); ++l) {
        const FlashLine line = static_cast<FlashLine>(l);
        const PseudocodeLine& pl = pseudocode_line(line);
        const float ly = code_top + pad + l * L.code_line_h;
        const Box band{L.code_x + 3.0f * s, ly - 2.0f * s, L.code_x + L.code_w - 3.0f * s, ly + L.code_line_h - 2.0f * s};
        const bool now = std::find(current.begin(), current.end(), line) != current.end();
        if (now) {
            items.push_back(rect_item(ItemRole::LabelMark, band, pal.token_hover, 3.0f * s, l));
            items.push_back(rect_item(ItemRole::LabelMark, {band.x0, band.y0, band.x0 + 3.0f * s, band.y1}, pal.accent, 0.0f, l));
        }
        if (line == hovered) items.push_back(outline_item(ItemRole::Hover, band, outline, 2.0f * s, 3.0f * s, l));
        text(ItemRole::Other, L.code_x + pad + pl.indent * kFlashIndent * s, ly, FontRole::Body, now ? pal.text : pal.text_muted, pl.text, l);
        // The loops' counters where they stand.
        std::string counter;
        if (line == FlashLine::ForI && in.step.kind != FlashStep::Check)
            counter = "i = " + std::to_string(in.step.i + 1) + " / " + std::to_string(t.row_tiles);
        if (line == FlashLine::ForJ && in.step.kind == FlashStep::Tile)
            counter = "j = " + std::to_string(in.step.j + 1) + " / " + std::to_string(t.col_tiles);
        if (!counter.empty())
            text(ItemRole::Note, L.code_x + L.code_w - pad - m.width(counter, FontRole::Small), ly + (fs - ss) * 0.5f, FontRole::Small,
                 pal.text_muted, counter);
    }

    // The current step's matrices.
    for (size_t i = 0; i < blocks.size(); ++i) {
        const FlashBlock& b = blocks[i];
        const FlashBlockBox& box = L.boxes[i];
        items.push_back(text_item(ItemRole::Heading, box.x, box.y, FontRole::Body, pal.text, b.label, m.width(b.label, FontRole::Body)));
        text(ItemRole::Caption, box.x, box.y + fs + 2.0f * s, FontRole::Small, pal.text_muted, b.shape);
        if (i > 0 && std::fabs(L.boxes[i - 1].y - box.y) < 1.0f)
            items.push_back(text_item(ItemRole::Other, box.x - L.gap * 0.5f - fs * 0.35f, box.grid_y + L.cell_h * 0.5f - fs * 0.5f,
                                      FontRole::Body, pal.text_muted, "\xe2\x86\x92", m.width("\xe2\x86\x92", FontRole::Body)));
        for (int r = 0; r < box.rows; ++r)
            text(ItemRole::RowLabel, box.x, box.grid_y + r * L.cell_h + 3.0f * s, FontRole::Small, pal.text,
                 std::string(token_text(tr.queries.at(static_cast<size_t>(b.row0 + r)))), b.row0 + r);
        for (int k = 0; k < box.cols && k < static_cast<int>(b.col_heads.size()); ++k) {
            const std::string& h = b.col_heads[static_cast<size_t>(k)];
            const float w = std::min(m.width(h, FontRole::Small), L.cell_w - 2.0f * s);
            out.clips.push_back({box.grid_x + k * L.cell_w, box.grid_y - ss - 4.0f * s, box.grid_x + (k + 1) * L.cell_w, box.grid_y});
            text(ItemRole::ColLabel, box.grid_x + (k + 0.5f) * L.cell_w - w * 0.5f, box.grid_y - ss - 3.0f * s, FontRole::Small, pal.text, h, k);
            items.back().clip = static_cast<int>(out.clips.size()) - 1;
        }
        for (int r = 0; r < box.rows; ++r)
            for (int k = 0; k < box.cols; ++k) {
                const Box cell{box.grid_x + k * L.cell_w, box.grid_y + r * L.cell_h, box.grid_x + (k + 1) * L.cell_w,
                               box.grid_y + (r + 1) * L.cell_h};
                if (b.hatch_inf && b.masked.size() != 0 && b.masked(r, k)) {
                    const float v = b.values(r, k);
                    masked_cell_items(items, cell, &v, m, pal, s);
                    continue;
                }
                number_cell_items(items, cell, b.values(r, k), map, b.lo, b.hi, b.scientific, m, pal, s);
            }
        items.push_back(outline_item(ItemRole::Other, {box.grid_x, box.grid_y, box.grid_x + L.cell_w * box.cols, box.grid_y + L.cell_h * box.rows},
                                     pal.grid, 1.0f));
        if (box.rows < b.rows || box.cols < b.values.cols())
            text(ItemRole::Note, box.grid_x, box.grid_y + L.cell_h * box.rows + 1.0f * s, FontRole::Small, pal.text_muted, in.first_shown);
        if (i < in.captions.size()) {
            text(ItemRole::Caption, box.x, box.y + box.caption_y, FontRole::Small, pal.text_muted, in.captions[i]);
            items.back().wrap = box.caption_w;
        }
    }
    if (!in.verdict.empty()) {
        items.push_back(text_item(ItemRole::Note, in.x0 + margin, L.verdict_y, FontRole::Body, pal.text, in.verdict,
                                  m.width(in.verdict, FontRole::Body)));
        items.back().wrap = inner_w;
    }

    // The hovered number, and in the map the cell it stands for.
    if (hover.block >= 0 && hover.block < static_cast<int>(blocks.size())) {
        const FlashBlockBox& box = L.boxes[static_cast<size_t>(hover.block)];
        items.push_back(outline_item(ItemRole::Hover, {box.grid_x + hover.col * L.cell_w, box.grid_y + hover.row * L.cell_h,
                                                       box.grid_x + (hover.col + 1) * L.cell_w, box.grid_y + (hover.row + 1) * L.cell_h},
                                     outline, 2.5f * s));
        const FlashBlock& b = blocks[static_cast<size_t>(hover.block)];
        const int q = b.row0 + hover.row;
        if (b.part == FlashPart::S || b.part == FlashPart::P) {
            const int k = t.at(in.step.i, in.step.j).c0 + hover.col;
            items.push_back(outline_item(ItemRole::Selection, {L.map_x + k * c, L.map_y + q * c, L.map_x + (k + 1) * c, L.map_y + (q + 1) * c},
                                         outline, 2.0f * s));
        } else {
            items.push_back(outline_item(ItemRole::Selection, {L.map_x, L.map_y + q * c, L.map_x + t.T_k * c, L.map_y + (q + 1) * c}, outline,
                                         1.5f * s));
        }
    } else if (hover.block == FlashLayout::kMap) {
        items.push_back(outline_item(ItemRole::Hover, {L.map_x + hover.col * c, L.map_y + hover.row * c, L.map_x + (hover.col + 1) * c,
                                                       L.map_y + (hover.row + 1) * c}, outline, 2.0f * s));
    } else if (hover.block == FlashLayout::kState) {
        const float x = L.state_x + hover.col * L.cell_w;
        items.push_back(outline_item(ItemRole::Hover, {x, L.map_y + hover.row * c, x + L.cell_w, L.map_y + (hover.row + 1) * c}, outline, 2.0f * s));
    }
    return out;
}

// [SECTION] Arithmetic -------------------------------------------------------------------------

std::string explain_flash(const FlashInput& in, const std::vector<FlashBlock>& blocks, const FlashLayout::Hit& hit) {
    const Trace& tr = *in.trace;
    const FlashTrace& t = *in.flash;
    const HeadTrace& h = tr.attention.heads.at(static_cast<size_t>(in.head));
    const MatrixRef q_all = head_queries(tr, in.head), keys = head_keys(tr, in.head);
    const float factor = tr.scale.factor(tr.d_k), cap = tr.family.softcap;
    const std::string inf = "\xe2\x88\x92\xe2\x88\x9e", mp = "m\xe2\x80\xb2", ell = "\xe2\x84\x93";
    auto n = [](float v) { return factor_text(v); };
    // S of query q and key k: q·k written out, the scale (and the cap).
    auto score = [&](int q, int k, float s) {
        if (!std::isfinite(s)) return "S = " + inf + " (M)";
        std::string out = "q\xc2\xb7k = " + sum_of_products(q_all.row(q), keys.row(k)) + " = " + format_number(q_all.row(q).dot(keys.row(k)));
        out += "\nS = q\xc2\xb7k \xc3\x97 " + format_number(factor);
        if (cap > 0) out += ", cap\xc2\xb7tanh(\xc2\xb7/cap), cap = " + format_general(cap, 4);
        return out + " = " + format_number(s);
    };
    if (hit.block == FlashLayout::kMap) {
        const int i = hit.row / t.tile.rows, j = hit.col / t.tile.cols;
        const FlashTile& f = t.at(i, j);
        std::string out = "tile (" + std::to_string(i + 1) + ", " + std::to_string(j + 1) + "), #" + std::to_string(flash_tile_order(t, i, j));
        if (f.skipped) return out + "\nM_ij = " + inf;
        return out + "\n" + score(hit.row, hit.col, f.s(hit.row - f.r0, hit.col - f.c0));
    }
    if (hit.block == FlashLayout::kState) {
        const float v = flash_state(in, hit.row, hit.col == 1);
        return (hit.col == 1 ? ell : std::string("m")) + " = " + format_number(v);
    }
    if (hit.block < 0 || hit.block >= static_cast<int>(blocks.size())) return "";
    const FlashBlock& b = blocks[static_cast<size_t>(hit.block)];
    const int r = hit.row, c = hit.col, q = b.row0 + r;
    const float v = b.values(r, c);
    switch (b.part) {
        case FlashPart::S: {
            if (b.line == FlashLine::Skip) return "M_ij = " + inf;
            const FlashTile& f = t.at(in.step.i, in.step.j);
            return score(q, f.c0 + c, v);
        }
        case FlashPart::M: {
            const FlashTile& f = t.at(in.step.i, in.step.j);
            if (c == 0) return "m = " + format_number(v);
            const float row_max = f.s.row(r).maxCoeff();
            return mp + " = max(m, rowmax(S)) = max(" + format_number(f.m_old(r)) + ", " + format_number(row_max) + ") = " + format_number(v);
        }
        case FlashPart::P: {
            const FlashTile& f = t.at(in.step.i, in.step.j);
            if (!std::isfinite(f.s(r, c))) return "P = e^(" + inf + ") = 0";
            return "P = e^(S \xe2\x88\x92 " + mp + ") = e^(" + format_number(f.s(r, c)) + " \xe2\x88\x92 " + n(f.m_new(r)) + ") = e^" +
                   n(f.s(r, c) - f.m_new(r)) + " = " + format_number(v);
        }
        case FlashPart::Alpha: {
            const FlashTile& f = t.at(in.step.i, in.step.j);
            if (!std::isfinite(f.m_new(r))) return "\xce\xb1 = 1 (m = m\xe2\x80\xb2 = " + inf + ")";
            return "\xce\xb1 = e^(m \xe2\x88\x92 " + mp + ") = e^(" + format_number(f.m_old(r)) + " \xe2\x88\x92 " + n(f.m_new(r)) + ") = " +
                   format_number(v);
        }
        case FlashPart::L: {
            const FlashTile& f = t.at(in.step.i, in.step.j);
            if (c == 0) return ell + " = " + format_number(v);
            std::string terms;
            for (Eigen::Index k = 0; k < f.p.cols(); ++k) terms += (k ? " + " : "") + format_number(f.p(r, k));
            return ell + "\xe2\x80\xb2 = \xce\xb1\xc2\xb7" + ell + " + rowsum(P)\n   = " + format_number(f.alpha(r)) + "\xc3\x97" + n(f.l_old(r)) +
                   " + (" + terms + ")\n   = " + format_number(v);
        }
        case FlashPart::O: {
            const FlashTile& f = t.at(in.step.i, in.step.j);
            const float before = in.step.j > 0 ? t.at(in.step.i, in.step.j - 1).o(r, c) : 0.0f;
            return "O\xe2\x80\xb2 = \xce\xb1\xc2\xb7O + \xce\xa3 P\xc2\xb7v\n   = " + format_number(f.alpha(r)) + "\xc3\x97" + n(before) + " + " +
                   sum_of_products(f.p.row(r), h.v.col(c).segment(f.c0, f.c1 - f.c0).transpose()) + "\n   = " + format_number(v);
        }
        case FlashPart::Unnormalized: return "O = " + format_number(v);
        case FlashPart::Sum: return ell + " = " + format_number(v);
        case FlashPart::Oi: {
            const FlashTile& f = t.at(in.step.i, t.col_tiles - 1);
            if (f.l_new(r) <= 0.0f) return "O_i = 0 (" + ell + " = 0)";
            return "O_i = O / " + ell + " = " + format_number(f.o(r, c)) + " / " + format_number(f.l_new(r)) + " = " + format_number(v);
        }
        case FlashPart::Tiles:
        case FlashPart::Direct: return (b.part == FlashPart::Tiles ? "O (tiles) = " : "O = ") + format_number(v);
        case FlashPart::Diff: {
            char diff[32];
            std::snprintf(diff, sizeof diff, "%.3g", static_cast<double>(v));
            return "|" + format_number(t.output(q, c)) + " \xe2\x88\x92 " + n(h.output(q, c)) + "| = " + diff;
        }
    }
    return "";
}

}  // namespace attn
