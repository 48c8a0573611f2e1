// flash_layout.hpp: the Steps view's tiles mode (issue 34 §2) laid out without GL or ImGui: one
// head's attention computed the FlashAttention way (core/math/flash.hpp) and shown a step at a
// time. A step is one visit of a query tile i and a key tile j (lines 4–10 of the pseudocode, or
// the skip of line 4), the normalization O_i = O / ℓ after a query tile's last key tile, and last
// the check that the tiles' O equals softmax(QKᵀ·scale)V as the Steps view computes it.
//
// The figure, top to bottom: a heading; the T_q×T_k map of tiles (scores of the tiles done,
// skipped tiles hatched, the current one outlined, each tile's place in the order), with every
// query row's running m and ℓ beside it; the pseudocode with the current line marked; the
// matrices of the current step (S, m → m′, P, α, ℓ → ℓ′, O), each a grid of numbers coloured
// by the colormap, as the pipeline's blocks (steps_layout.hpp). web/ui/flash_view.cpp draws it.
//
//   1. flash_steps(trace)                           the order of the steps
//   2. flash_blocks(input)                          the current step's matrices
//   3. lay_out_flash(input, blocks, measure)        where everything goes; the caller scrolls and hit-tests
//   4. flash_items(layout, input, hover, measure)   everything drawn, in order
//   5. explain_flash(input, block, row, col)        a number's arithmetic with its own numbers
//
// [SECTION] Steps and pseudocode
// [SECTION] Inputs
// [SECTION] Blocks
// [SECTION] Geometry
// [SECTION] Items and arithmetic
#pragma once

#include "figure_layout.hpp"
#include "flash.hpp"
#include "steps_layout.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace attn {

// [SECTION] Steps and pseudocode ---------------------------------------------------------------

struct FlashStep {
    enum Kind { Tile, Normalize, Check } kind = Tile;
    int i = 0, j = 0;  // Tile: query tile i, key tile j; Normalize: query tile i
    friend bool operator==(const FlashStep&, const FlashStep&) = default;
};

// For each query tile i: its key tiles j in order, then its normalization; last the check.
// row_tiles × (col_tiles + 1) + 1 steps: flash_step_count, without making the trace.
std::vector<FlashStep> flash_steps(const FlashTrace& trace);
long flash_step_count(int T_q, int T_k, TileSize tile);

// The forward pass as the figure prints it, a line per entry; symbols only (no words to translate).
enum class FlashLine { ForI, Init, ForJ, Skip, S, M, P, Alpha, L, O, Keep, Normalize, Return, Count };
struct PseudocodeLine {
    int indent;        // levels of the loops
    const char* text;  // UTF-8
};
const PseudocodeLine& pseudocode_line(FlashLine line);

// The lines a step runs: a tile's S … m ← m′ (or its skip), a normalization, the return.
std::vector<FlashLine> step_lines(const FlashTrace& trace, FlashStep step);

// Limits: a trace of more tile visits than this is not kept (each holds its S, P and O); the
// view asks for bigger tiles.
inline constexpr long kFlashMaxTiles = 4096;
inline constexpr long kFlashMaxFloats = 8L << 20;  // S, P and O of every tile together
// Floats a trace of these sizes would hold, to check against the limits before computing it.
long flash_trace_floats(int T_q, int T_k, int d_v, TileSize tile);
long flash_tile_count(int T_q, int T_k, TileSize tile);

// On-chip memory the tile sizes are derived from when the reader sets none for a live model:
// an A100's 192 KB of shared memory per SM, in floats (FlashAttention's M).
inline constexpr long kFlashSramFloats = 192L * 1024 / 4;

// [SECTION] Inputs ---------------------------------------------------------------------------------

struct FlashInput {
    const Trace* trace = nullptr;
    int head = 0;
    const FlashTrace* flash = nullptr;  // flash_attention of that head (flash_of_head)
    FlashStep step;
    float x0 = 0.0f, y0 = 0.0f;         // the content's top-left (it scrolls)
    float avail_w = 0.0f;
    float scale = 1.0f;
    bool dark = true;
    int colormap = 0;
    float label_w = 0.0f;               // the widest token label in the small font
    float s_lo = 0.0f, s_hi = 1.0f;     // the colour range of every tile's scores (flash_score_range)
    // Words in the UI's language: the heading, a caption per block (flash_blocks' order), the
    // overview's and the pseudocode's titles, "first 16 shown", the check's verdict.
    std::string heading, overview_title, code_title, first_shown, verdict;
    std::vector<std::string> captions;
};

// The trace of one head of `trace` in tiles of `tile` (scores as the pipeline scales and caps
// them, the pipeline's mask); a long trace's every query (head_queries).
FlashTrace flash_of_head(const Trace& trace, int head, TileSize tile);
// The finite range of every computed tile's S: the colours of S and m in every step.
void flash_score_range(const FlashTrace& flash, float& lo, float& hi);
// max |O_tiles − O| over the rows the trace holds (a long trace: its first rows), and the largest
// |O| there: float rounding leaves differences of about 1e-7 of it (an ulp).
float flash_max_difference(const Trace& trace, int head, const FlashTrace& flash);
float flash_output_size(const Trace& trace, int head);
// The tiles' O is the direct one up to float rounding: max difference ≤ 1e-6 · max(1, max |O|).
inline bool flash_same_output(float max_difference, float output_size) {
    return max_difference <= 1e-6f * std::max(1.0f, output_size);
}

// [SECTION] Blocks ---------------------------------------------------------------------------------

// What a block of the current step shows.
enum class FlashPart {
    S, M, P, Alpha, L, O,   // a tile: S, [m m′], P, α, [ℓ ℓ′], O after the tile
    Unnormalized, Sum, Oi,  // a normalization: O, ℓ, O_i = O / ℓ
    Tiles, Direct, Diff,    // the check: O of the tiles, softmax(QKᵀ·scale)V, |difference|
};

struct FlashBlock {
    FlashPart part = FlashPart::S;
    FlashLine line = FlashLine::S;  // the pseudocode line that computes it
    std::string label, shape;       // "S = Q_i K_jᵀ·scale", "B_r×B_c = 2×2"
    Matrix values;                  // masked scores −∞
    int row0 = 0;                   // the query of its first row
    int col0 = 0;                   // the key of its first column (S, P: the tile's first key; else 0)
    int rows = 0;                   // of the whole matrix (the grid shows at most kStepsMaxShown)
    std::vector<std::string> col_heads;  // over the columns: key tokens, "m" "m′", "ℓ" "ℓ′"; empty: none
    bool hatch_inf = false;         // −∞ and the 0 it gives hatched (S and P of a partly masked tile)
    MaskMatrix masked;              // hatch_inf: the tile's masked cells
    float lo = 0.0f, hi = 1.0f;     // colour range
    bool scientific = false;        // numbers as 1.2e-07 (the check's differences), 0 as 0
};

std::vector<FlashBlock> flash_blocks(const FlashInput& input);

// [SECTION] Geometry -------------------------------------------------------------------------------

struct FlashBlockBox {
    float x = 0.0f, y = 0.0f, grid_x = 0.0f, grid_y = 0.0f, w = 0.0f, h = 0.0f;
    float caption_y = 0.0f, caption_w = 0.0f;
    int rows = 0, cols = 0;  // shown
};

struct FlashLayout {
    float s = 1.0f;
    float cell_w = 0.0f, cell_h = 0.0f;  // a number's cell
    float label_w = 0.0f, gap = 0.0f, title_h = 0.0f;
    float heading_y = 0.0f;
    float verdict_y = 0.0f;              // the check's verdict: under the heading, in sight without scrolling
    // The map of tiles: cells of `cell` × `cell` from (map_x, map_y); the running m and ℓ in two
    // columns from state_x (only when a row is tall enough for a number: has_state).
    float map_x = 0.0f, map_y = 0.0f, cell = 0.0f, overview_y = 0.0f, overview_w = 0.0f;  // overview_w: its title's wrap
    bool map_labels = false, has_state = false;
    float state_x = 0.0f;
    // The pseudocode: a line of code_line_h from (code_x, code_y), code_w wide.
    float code_x = 0.0f, code_y = 0.0f, code_w = 0.0f, code_line_h = 0.0f;
    std::vector<FlashBlockBox> boxes;  // one per block
    float content_w = 0.0f, content_h = 0.0f;

    // What is under (x, y): a number of a block (block ≥ 0), a cell of the map (block kMap: row
    // a query, col a key), a query's m or ℓ (block kState: col 0 m, 1 ℓ); block −1: nothing.
    static constexpr int kMap = -2, kState = -3;
    struct Hit {
        int block = -1, row = -1, col = -1;
        friend bool operator==(const Hit&, const Hit&) = default;
    };
    Hit hit(float x, float y, const FlashInput& input) const;
};

FlashLayout lay_out_flash(const FlashInput& input, const std::vector<FlashBlock>& blocks, const TextMeasure& measure);

// The running m and ℓ of query `q` after the current step (−∞ and 0 before its tile starts).
float flash_state(const FlashInput& input, int q, bool sum);

// [SECTION] Items and arithmetic -------------------------------------------------------------------

StepsItems flash_items(const FlashLayout& layout, const FlashInput& input, const std::vector<FlashBlock>& blocks,
                       const FlashLayout::Hit& hover, const TextMeasure& measure);

// The arithmetic of the number at (row, col) of `block` (shown row and column), symbols and
// numbers only, lines split by '\n', e.g. for P: "P = e^(S − m′) = e^(0.4120 − 0.9000) = 0.6139".
// The map's cells and the running state: their score and tile, or m and ℓ.
std::string explain_flash(const FlashInput& input, const std::vector<FlashBlock>& blocks, const FlashLayout::Hit& hit);

// The tile a query and key fall in, and its place in the order (from 1).
int flash_tile_order(const FlashTrace& trace, int i, int j);

}  // namespace attn
