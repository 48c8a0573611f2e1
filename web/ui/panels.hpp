// panels.hpp: the window layout. The controls panel on the left (scene, model, embeddings,
// scene JSON), the figure on the right with its toolbar (view, heads, threshold, colormap).
#pragma once

#include "view.hpp"

namespace attn {

// Builds the whole UI for one frame, filling the display. figure_only: just the figure with a
// title line (PNG export).
void draw_app(ViewContext& ctx, bool figure_only);

// Helpers of the controls panel, shared with the import panel (web/model_view.cpp).
// Registers the last item's rectangle under `name` for the browser tests.
void probe(AppState& st, const char* name);
// A muted heading with a rule under it.
void section(const char* title);
// The colormap of the heatmap, the Steps view and the model view.
void colormap_combo(ViewContext& ctx);
// Tokens as small chips that wrap.
void token_chips(const std::vector<std::string>& tokens, const Palette& pal, float s);

// Every string the UI may show this frame, for the font atlas (fonts.hpp).
void collect_text(const AppState& state, Fonts& fonts);

}  // namespace attn
