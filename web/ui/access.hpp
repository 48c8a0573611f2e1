// access.hpp: the figure for keyboards and screen readers (issue "Phones, touch and assistive
// technology" §2).
//
// [SECTION] Keyboard: with the figure focused (Tab reaches the canvas), the arrow keys move a
//   cursor over the tokens (Lines: up and down a column, left and right between the columns) or
//   the cells (Heatmap); Enter pins what it is on, and a pin follows the cursor; Escape lets go.
// [SECTION] Twin: the figure's description (core/figure/describe.hpp) handed to the page
//   (platform::show_twin) whenever it changes: a live summary and the shown map as a table, and
//   the live panel's results (token probabilities, attribution, lens, patching) as tables.
#pragma once

#include "app_state.hpp"

#include <string>

namespace attn {

// Before the views: the keys of this frame, when the figure has the keyboard (focus ≥ 1).
void figure_keys(AppState& st, int focus);
// After the views: the focus ring (focus 2: around the figure and the cursor's token).
void draw_focus(const AppState& st, int focus, float scale);

// What the twin showed last, so that it is written only when it changes.
struct TwinState {
    std::string key;          // the description's inputs
    std::string table_key;    // the table's
    std::string extra_key;    // the live panel's tables' (why_tables)
    std::string unselected;   // the summary without a selection (the table's strongest weight)
    std::string summary;      // for the tests' state
};
void update_twin(const AppState& st, TwinState& twin);

}  // namespace attn
