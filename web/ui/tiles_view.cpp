// tiles_view.cpp: the Steps view's tiles mode: one head computed the FlashAttention way, a step
// at a time (core/figure/flash_layout.hpp lays it out: the map of tiles with each query's running
// m and ℓ, the pseudocode with the current line marked, the current step's matrices). This file
// keeps the trace of the head and its tiles between frames, the scrolling child window, the hover,
// the pin, the keyboard's number and the tooltip that writes a number's arithmetic out.
//
// [SECTION] Cache
// [SECTION] Words
// [SECTION] Draw
#include "view.hpp"
#include "controls.hpp"

#include "flash_layout.hpp"

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstdio>

namespace attn {

// [SECTION] Cache ------------------------------------------------------------------------------

// The head's tiles (every S, P and O kept), its steps and colour range, and the check's number:
// computed again only when the figure, the head or the tile sizes change.
struct TilesView::Cache {
    const Trace* trace = nullptr;
    int revision = INT_MIN, head = -1;
    TileSize tile;
    FlashTrace flash;
    std::vector<FlashStep> steps;
    float s_lo = 0.0f, s_hi = 1.0f, max_diff = 0.0f, output_size = 0.0f;
    LabelWidth labels;  // the widest query label (the rows are queries)

    void update(const AppState& st, int h, TileSize t) {
        const Trace& tr = st.figure.trace();
        if (trace == &tr && revision == st.revision && head == h && tile == t) return;
        trace = &tr, revision = st.revision, head = h, tile = t;
        labels.clear();
        flash = flash_of_head(tr, h, t);
        steps = flash_steps(flash);
        flash_score_range(flash, s_lo, s_hi);
        max_diff = flash_max_difference(tr, h, flash);
        output_size = flash_output_size(tr, h);
    }
};
TilesView::TilesView() : cache_(std::make_unique<Cache>()) {}
TilesView::~TilesView() = default;

namespace {

// Stable names of the blocks for the test hook (AppState::step_rects: "tile.s", "tile.o", …).
const char* part_name(FlashPart p) {
    switch (p) {
        case FlashPart::S: return "tile.s";
        case FlashPart::M: return "tile.m";
        case FlashPart::P: return "tile.p";
        case FlashPart::Alpha: return "tile.alpha";
        case FlashPart::L: return "tile.l";
        case FlashPart::O: return "tile.o";
        case FlashPart::Unnormalized: return "tile.o_unnormalized";
        case FlashPart::Sum: return "tile.l_final";
        case FlashPart::Oi: return "tile.o_i";
        case FlashPart::Tiles: return "tile.o_tiles";
        case FlashPart::Direct: return "tile.o_direct";
        case FlashPart::Diff: return "tile.diff";
    }
    return "tile.?";
}

// [SECTION] Words ------------------------------------------------------------------------------

std::string tiles_caption(const FlashBlock& b, Lang lang) {
    switch (b.part) {
        case FlashPart::S: return tr(lang, b.line == FlashLine::Skip ? Str::CapTileSkip : Str::CapTileS);
        case FlashPart::M: return tr(lang, Str::CapTileM);
        case FlashPart::P: return tr(lang, Str::CapTileP);
        case FlashPart::Alpha: return tr(lang, Str::CapTileAlpha);
        case FlashPart::L: return tr(lang, Str::CapTileL);
        case FlashPart::O: return tr(lang, Str::CapTileO);
        case FlashPart::Unnormalized: return tr(lang, Str::CapTileUnnormalized);
        case FlashPart::Sum: return tr(lang, Str::CapTileSum);
        case FlashPart::Oi: return tr(lang, Str::CapTileOi);
        case FlashPart::Tiles: return tr(lang, Str::CapTileTiles);
        case FlashPart::Direct: return tr(lang, Str::CapTileDirect);
        case FlashPart::Diff: return tr(lang, Str::CapTileDiff);
    }
    return "";
}

// The step in a sentence: which tile, its queries and keys (from 1), or what the step does.
std::string tiles_heading(const AppState& st, const FlashTrace& f, const std::vector<FlashStep>& steps, int index) {
    const FlashStep& step = steps[static_cast<size_t>(index)];
    std::string out = printf_string(tr(st.lang, Str::TilesStepOf), index + 1, static_cast<int>(steps.size())) + "  \xc2\xb7  ";
    if (step.kind == FlashStep::Tile) {
        const FlashTile& t = f.at(step.i, step.j);
        out += printf_string(tr(st.lang, t.skipped ? Str::TilesHeadSkip : Str::TilesHeadTile), flash_tile_order(f, step.i, step.j),
                             f.row_tiles * f.col_tiles, step.i + 1, t.r0 + 1, t.r1, step.j + 1, t.c0 + 1, t.c1);
    } else if (step.kind == FlashStep::Normalize) {
        const FlashTile& t = f.at(step.i, 0);
        out += printf_string(tr(st.lang, Str::TilesHeadNormalize), step.i + 1, t.r0 + 1, t.r1);
    } else {
        out += tr(st.lang, Str::TilesHeadCheck);
    }
    if (st.steps.tile.rows <= 0 && st.figure.live) {  // auto for a live model: where the sizes come from
        const Trace& trace = st.figure.trace();
        out += (st.lang == Lang::Zh ? "" : " ") + printf_string(tr(st.lang, Str::TilesAutoSize), f.tile.rows, f.tile.cols, kFlashSramFloats,
                                                                trace.d_k);
    }
    return out;
}

}  // namespace

// [SECTION] Draw -------------------------------------------------------------------------------

void TilesView::draw(ViewContext& ctx, ImVec2 min, ImVec2 max) {
    AppState& st = ctx.state;
    const Trace& trace = st.figure.trace();
    const float s = ctx.scale;
    if (trace.queries.empty() || trace.keys.empty()) return;
    const int head = std::clamp(st.steps.head, 0, trace.heads - 1);
    const TileSize tile = st.steps_tile();
    st.step_rects.clear();
    st.steps_said.clear();
    st.steps_why.clear();
    const long count = flash_tile_count(trace.T_q(), trace.T_k(), tile);
    if (count > kFlashMaxTiles || flash_trace_floats(trace.T_q(), trace.T_k(), trace.d_k, tile) > kFlashMaxFloats) {
        // Too many tiles to keep: say so where the figure would be.
        const std::string note = printf_string(tr(st.lang, Str::TilesTooMany), trace.T_q(), trace.T_k(), tile.rows, tile.cols, count, kFlashMaxTiles);
        ImFont* font = ctx.fonts.body;
        const float wrap = std::min(max.x - min.x - 40.0f * s, 640.0f * s);
        const ImVec2 size = font->CalcTextSizeA(font->FontSize, FLT_MAX, wrap, note.c_str());
        ImGui::GetWindowDrawList()->AddText(font, font->FontSize, ImVec2((min.x + max.x - size.x) * 0.5f, min.y + 24.0f * s),
                                            palette(st.theme).text, note.c_str(), nullptr, wrap);
        st.steps_said = note;
        return;
    }
    Cache& cache = *cache_;
    cache.update(st, head, tile);
    const FlashTrace& flash = cache.flash;
    const int index = std::min(st.tiles_step(), static_cast<int>(cache.steps.size()) - 1);

    ImGui::SetCursorScreenPos(min);
    ImGui::BeginChild("##tiles", ImVec2(max.x - min.x, max.y - min.y), false, ImGuiWindowFlags_HorizontalScrollbar);
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    const FontsMeasure measure(ctx.fonts);

    FlashInput in;
    in.trace = &trace, in.head = head, in.flash = &flash, in.step = cache.steps[static_cast<size_t>(index)];
    in.x0 = origin.x, in.y0 = origin.y;
    in.avail_w = std::max(max.x - min.x - 2.0f * ImGui::GetStyle().ScrollbarSize, 200.0f * s);
    in.scale = s, in.dark = st.theme == Theme::Dark, in.colormap = st.heatmap.colormap;
    in.label_w = cache.labels.of(ctx.fonts.small, trace, false);
    in.s_lo = cache.s_lo, in.s_hi = cache.s_hi;
    in.heading = tiles_heading(st, flash, cache.steps, index);
    in.overview_title = printf_string(tr(st.lang, Str::TilesOverview), flash.tile.rows, flash.tile.cols);
    in.code_title = tr(st.lang, Str::TilesCode);
    in.first_shown = tr(st.lang, Str::FirstShown);
    if (in.step.kind == FlashStep::Check) {
        char diff[32], size[32];
        std::snprintf(diff, sizeof diff, "%.3g", static_cast<double>(cache.max_diff));
        std::snprintf(size, sizeof size, "%.3g", static_cast<double>(cache.output_size));
        in.verdict = flash_same_output(cache.max_diff, cache.output_size)
                         ? printf_string(tr(st.lang, Str::TilesVerdictSame), diff, size, trace.T_q(), trace.T_k())
                         : printf_string(tr(st.lang, Str::TilesVerdictOff), diff, size);
    }
    const std::vector<FlashBlock> blocks = flash_blocks(in);
    for (const FlashBlock& b : blocks) in.captions.push_back(tiles_caption(b, st.lang));
    const FlashLayout layout = lay_out_flash(in, blocks, measure);
    ImGui::Dummy(ImVec2(layout.content_w, layout.content_h));

    // The number under the pointer, else the keyboard's (its column counted across the blocks,
    // access.cpp), else the pinned one.
    const ImGuiIO& io = ImGui::GetIO();
    FlashLayout::Hit hover;
    if (ctx.interactive && ImGui::IsWindowHovered()) hover = layout.hit(io.MousePos.x, io.MousePos.y, in);
    if (ctx.interactive && hover.block >= 0 && ImGui::IsMouseReleased(ImGuiMouseButton_Left) && tap(s))
        pick_cell(st, {hover.block, hover.row, hover.col});
    AppState::KeyCursor& kc = st.cursor;
    bool at_cell = false;
    if (ctx.interactive && hover.block == -1 && !blocks.empty()) {
        if (kc.on) {
            int total = 0;
            for (const FlashBlockBox& b : layout.boxes) total += b.cols;
            kc.k = std::min(kc.k, total - 1);
            int k = kc.k, b = 0;
            while (k >= layout.boxes[static_cast<size_t>(b)].cols) k -= layout.boxes[static_cast<size_t>(b++)].cols;
            kc.q = std::min(kc.q, layout.boxes[static_cast<size_t>(b)].rows - 1);
            hover = {b, kc.q, k}, at_cell = true;
        } else if (st.pinned_step[0] >= 0 && st.pinned_step[0] < static_cast<int>(blocks.size())) {
            const FlashBlockBox& b = layout.boxes[static_cast<size_t>(st.pinned_step[0])];
            hover = {st.pinned_step[0], std::min(st.pinned_step[1], b.rows - 1), std::min(st.pinned_step[2], b.cols - 1)}, at_cell = true;
        }
    }
    if (at_cell) {  // its tooltip beside it, scrolled into view
        const FlashBlockBox& b = layout.boxes[static_cast<size_t>(hover.block)];
        show_cell(kc.on, b.grid_x + hover.col * layout.cell_w, b.grid_y + hover.row * layout.cell_h, layout.cell_w, layout.cell_h, s);
    }

    // The test hook: the map, the pseudocode and each block's grid.
    st.step_rects["tiles.map"] = {layout.map_x, layout.map_y, layout.cell * flash.T_k, layout.cell * flash.T_q};
    st.step_rects["tiles.code"] = {layout.code_x, layout.code_y, layout.code_w, layout.code_line_h * static_cast<float>(FlashLine::Count)};
    for (size_t i = 0; i < blocks.size(); ++i) {
        const FlashBlockBox& b = layout.boxes[i];
        st.step_rects[part_name(blocks[i].part)] = {b.grid_x, b.grid_y, layout.cell_w * b.cols, layout.cell_h * b.rows};
    }
    const StepsItems items = flash_items(layout, in, blocks, hover, measure);
    draw_items(dl, items.items, items.clips, measure, palette(st.theme), s, [](const Item&) {});
    probe_captions(st, items.items, measure);

    // The twin reads the step, and the number shown with its arithmetic's first line.
    st.steps_said = in.heading + (in.verdict.empty() ? "" : " " + in.verdict);
    const std::string arithmetic = hover.block != -1 ? explain_flash(in, blocks, hover) : std::string();
    if (!arithmetic.empty()) st.steps_said += " " + arithmetic.substr(0, arithmetic.find('\n')) + ".";

    if (!arithmetic.empty()) {
        ImGui::BeginTooltip();
        const float wrap = ImGui::GetIO().DisplaySize.x - 4.0f * ImGui::GetStyle().WindowPadding.x;
        ImGui::PushTextWrapPos(wrap);
        if (hover.block >= 0) {
            const FlashBlock& b = blocks[static_cast<size_t>(hover.block)];
            ImGui::Text("%s  [%d, %d] = %s", b.label.c_str(), b.row0 + hover.row + 1, b.col0 + hover.col + 1,  // the map's row and column, from 1
                        format_number(b.values(hover.row, hover.col)).c_str());
            ImGui::TextDisabled("%s", pseudocode_line(b.line).text);
            ImGui::Separator();
        }
        arithmetic_text(arithmetic, wrap - ImGui::GetStyle().WindowPadding.x);
        const bool masked_score = hover.block >= 0 && blocks[static_cast<size_t>(hover.block)].masked.size() != 0 &&
                                  blocks[static_cast<size_t>(hover.block)].masked(hover.row, hover.col);
        if (masked_score) ImGui::TextUnformatted(tr(st.lang, Str::TipMasked));
        ImGui::PopTextWrapPos();
        ImGui::EndTooltip();
    }
    if (st.touch) drag_scroll(ctx.panels.drag_scrolling, ctx.scale, true);
    ImGui::EndChild();
}

// [SECTION] Toolbar -----------------------------------------------------------------------------

// The Steps view's tiles mode: on or off, B_r × B_c (or auto), and the step with ◀ ▶ (as Page
// Up / Page Down). Probed "steps.tiles", "tiles.rows", "tiles.cols", "tiles.auto", "tiles.prev",
// "tiles.next".
void TilesView::toolbar(ViewContext& ctx) {
    AppState& st = ctx.state;
    const float s = ctx.scale;
    const Trace& tr = st.figure.trace();
    const char* label = attn::tr(st.lang, Str::Tiles);
    same_line_if_fits(ImGui::GetFrameHeight() + ImGui::CalcTextSize(label).x + 8.0f * s);
    ImGui::Checkbox(label, &st.steps.tiles);
    if (ImGui::IsItemHovered()) {
        ImGui::BeginTooltip();
        ImGui::PushTextWrapPos(ImGui::GetFontSize() * 24.0f);
        ImGui::TextUnformatted(attn::tr(st.lang, Str::TilesTip));
        ImGui::PopTextWrapPos();
        ImGui::EndTooltip();
    }
    probe(st, "steps.tiles");
    if (!st.steps.tiles) return;
    const TileSize now = st.steps_tile();
    auto size_input = [&](const char* name, const char* id, int value, int limit, int& out) {
        same_line_if_fits(ImGui::CalcTextSize(name).x + 100.0f * s);
        ImGui::AlignTextToFramePadding();
        ImGui::TextUnformatted(name);
        ImGui::SameLine();
        ImGui::SetNextItemWidth(88.0f * s);
        if (ImGui::InputInt(id, &value, 1, 8)) {
            st.steps.tile = now;  // from auto: the sizes shown become the reader's
            out = std::clamp(value, 1, std::max(limit, 1));
            st.steps.tile_step = 0;
        }
        probe(st, id + 2);
    };
    size_input("B_r", "##tiles.rows", now.rows, tr.T_q(), st.steps.tile.rows);
    size_input("B_c", "##tiles.cols", now.cols, tr.T_k(), st.steps.tile.cols);
    const bool is_auto = st.steps.tile.rows <= 0;
    same_line_if_fits(ImGui::CalcTextSize(attn::tr(st.lang, Str::TilesAuto)).x + 16.0f * s);
    if (is_auto) ImGui::PushStyleColor(ImGuiCol_Button, ImGui::GetStyleColorVec4(ImGuiCol_ButtonActive));
    if (ImGui::Button(attn::tr(st.lang, Str::TilesAuto))) st.steps.tile = {0, 0}, st.steps.tile_step = 0;
    if (is_auto) ImGui::PopStyleColor();
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", attn::tr(st.lang, Str::TilesAutoTip));
    probe(st, "tiles.auto");
    // The steps: each query tile's key tiles and its division by ℓ, then the check.
    const int count = static_cast<int>(std::min<long>(flash_step_count(tr.T_q(), tr.T_k(), now), INT_MAX));
    const int step = st.tiles_step();
    const std::string of = printf_string(attn::tr(st.lang, Str::TilesStepOf), step + 1, count);
    same_line_if_fits(2.0f * ImGui::GetFrameHeight() + ImGui::CalcTextSize(of.c_str()).x + 24.0f * s);
    if (ImGui::ArrowButton("##tiles.prev", ImGuiDir_Left)) st.steps.tile_step = std::max(step - 1, 0);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", attn::tr(st.lang, Str::TilesPrev));
    probe(st, "tiles.prev");
    ImGui::SameLine();
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted(of.c_str());
    ImGui::SameLine();
    if (ImGui::ArrowButton("##tiles.next", ImGuiDir_Right)) st.steps.tile_step = std::min(step + 1, count - 1);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", attn::tr(st.lang, Str::TilesNext));
    probe(st, "tiles.next");
}

}  // namespace attn
