// view.hpp: what every figure view gets to draw with.
#pragma once

#include "app_state.hpp"
#include "fonts.hpp"
#include "renderer.hpp"
#include "theme.hpp"

#include <imgui.h>

#include <algorithm>

namespace attn {

class LinkSceneCache;  // link_state.hpp

struct ViewContext {
    AppState& state;
    Renderer& renderer;
    Fonts& fonts;
    float scale = 1.0f;       // UI scale (device pixel ratio)
    bool interactive = true;  // false when rendering to a PNG: no hover, no tooltips
    LinkSceneCache* link_cache = nullptr;  // the app's (link_state.hpp), for the embed dialog
};

// Each view draws the current trace into the rectangle [min, max) of the current window.
void draw_lines_view(ViewContext& ctx, ImVec2 min, ImVec2 max);
void draw_heatmap_view(ViewContext& ctx, ImVec2 min, ImVec2 max);
void draw_steps_view(ViewContext& ctx, ImVec2 min, ImVec2 max);

// Seconds of on-demand work (a heatmap's display map, the lines' top-k lists) a frame may
// take while it builds: 12 ms, or three quarters of the last frame's time when frames are slow
// anyway (a software-rendered WebGL), at most 120 ms: the build then takes a fixed share of the
// time instead of crawling.
inline double build_budget_seconds() { return std::clamp(0.75 * ImGui::GetIO().DeltaTime, 0.012, 0.120); }

// Cell helpers shared by the heatmap and the Steps view.
// Masked cell: two neutral greys in diagonal stripes, so a masked key never reads as a zero.
void hatch_rect(ImDrawList* draw_list, ImVec2 a, ImVec2 b, const Palette& pal, float scale);
// Dark or light text, whichever reads on a cell of colour rgb (0..1).
ImU32 ink_on(const std::array<float, 3>& rgb);

// Text helpers shared by the views.
// Draws text rotated by -90° (reading upwards) with its start at `bottom_left`.
void add_text_upwards(ImDrawList* draw_list, ImFont* font, float size, ImVec2 bottom_left, ImU32 color,
                      const char* text);
// A short label for a token: the text, or "␣"-style names for blank ones.
const char* token_label(const std::string& token);
// The kind of attention in the UI language ("self" / "自注意力").
inline const char* ui_kind_name(AttentionKind kind) {
    return tr(kind == AttentionKind::Self ? Str::NameSelf : kind == AttentionKind::Masked ? Str::NameMasked : Str::NameCross);
}

}  // namespace attn
