// display_menu.hpp: the "Aa" button beside the theme switch: theme (auto / light / dark) and
// the UI text size, and the frame-time overlay. Plain fields of AppState (theme_auto, theme,
// text_scale, show_frame_time).
#pragma once

#include "app_state.hpp"

namespace attn {

void display_menu(AppState& st, float ui_scale);

}  // namespace attn
