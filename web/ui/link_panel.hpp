// link_panel.hpp: sharing the figure. "Copy link" and "Embed…" (with the <iframe> snippet) in the
// controls panel, and the figure-only layout a link with panels=0 opens: the figure under one
// small strip of controls (view, head), sized for a blog column.
#pragma once

#include "view.hpp"

#include <string>

namespace attn {

// Two small buttons and the embed dialog; in the controls panel, under the title.
void draw_share_buttons(ViewContext& ctx);

// The whole display: the control strip and the figure (AppState::show_panels == false).
void draw_figure_only(ViewContext& ctx);

// The text the last copy put on the clipboard (the browser tests read it through the state).
const std::string& last_copied();

}  // namespace attn
