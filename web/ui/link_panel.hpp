// link_panel.hpp: sharing the figure. "Copy link" and "Embed…" (with the <iframe> snippet) in the
// controls panel, and the figure-only layout a link with panels=0 opens: the figure under one
// small strip of controls (view, head), sized for a blog column.
#pragma once

#include "link_state.hpp"
#include "view.hpp"

#include <string>

namespace attn {

// What Copy link and the embed dialog keep between frames (PanelState, panels.hpp).
struct SharePanel {
    std::string copied;         // the text the last copy put on the clipboard (the tests read it)
    double copied_at = -10.0;   // ImGui time of that copy: "Copied" shows for a moment
    bool copied_link = false;   // the last copy was the link (else the embed snippet)
    EmbedOptions embed;
};

// Two small buttons and the embed dialog; in the controls panel, under the title.
void draw_share_buttons(ViewContext& ctx, SharePanel& share);

// The whole display: the control strip and the figure (AppState::show_panels == false).
void draw_figure_only(ViewContext& ctx);

}  // namespace attn
