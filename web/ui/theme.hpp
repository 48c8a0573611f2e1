// theme.hpp: light and dark looks, for ImGui's widgets and for the figures.
#pragma once

#include "app_state.hpp"
#include "palette.hpp"

#include <imgui.h>

#include <array>

namespace attn {

// The figure palette (core/figure/palette.hpp) as ImGui colours.
struct Palette {
    ImU32 background;      // figure area
    ImU32 text, text_muted;
    ImU32 token_fill, token_hover, token_pinned, token_outline;
    ImU32 error;
    std::array<float, 4> hatch_a, hatch_b, grid;  // heatmap masked cells and cell borders
    ImU32 masked_text;
    std::array<float, 4> window_a, window_b;  // heatmap cells outside a sliding window
};

// Applies ImGui's style for the theme, scaled for the UI scale (device pixel ratio). With
// min_frame_h > 0 (display px: a touch screen), every frame (button, slider, combo, checkbox)
// is at least that tall for a font of font_px, and the scrollbars are wide enough for a finger.
void apply_theme(Theme theme, float ui_scale, float min_frame_h = 0.0f, float font_px = 0.0f);
const Palette& palette(Theme theme);
// One colour per head (cycles after ten), chosen to read on the theme's background.
ImVec4 head_color(Theme theme, int head);
// A core colour as ImGui's packed colour (each channel rounded to a byte, as ImGui rounds).
ImU32 im_color(const Color& c);
// From a (t = 0) to b (t = 1), channel by channel, opaque.
ImU32 mix_color(ImU32 a, ImU32 b, float t);
// The colours of signed cells (the why grids) and of token shading: blue up, red down.
inline constexpr ImU32 kPositiveColor = IM_COL32((kSignedPositiveRgb >> 16) & 0xff, (kSignedPositiveRgb >> 8) & 0xff, kSignedPositiveRgb & 0xff, 255);
inline constexpr ImU32 kNegativeColor = IM_COL32((kSignedNegativeRgb >> 16) & 0xff, (kSignedNegativeRgb >> 8) & 0xff, kSignedNegativeRgb & 0xff, 255);

}  // namespace attn
