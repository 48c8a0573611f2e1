// panels.hpp: the window layout. The controls panel on the left (scene, model, embeddings,
// scene JSON), the figure on the right with its toolbar (view, heads, threshold, colormap).
#pragma once

#include "view.hpp"

namespace attn {

// Builds the whole UI for one frame, filling the display. figure_only: just the figure with a
// title line (PNG export).
void draw_app(ViewContext& ctx, bool figure_only);

// Every string the UI may show this frame, for the font atlas (fonts.hpp).
void collect_text(const AppState& state, Fonts& fonts);

}  // namespace attn
