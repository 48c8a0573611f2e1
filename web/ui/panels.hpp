// panels.hpp: the window layout. The controls panel on the left (scene, model, embeddings,
// scene JSON), the figure on the right with its toolbar (view, heads, threshold, colormap).
#pragma once

#include "export.hpp"
#include "link_panel.hpp"
#include "view.hpp"

#include <cstddef>
#include <string>

namespace attn {

// What the panels keep between frames besides AppState (one per app, like the views).
struct PanelState {
    SharePanel share;              // Copy link / Embed… (link_panel.hpp)
    ExportQueue exports;           // the Export menu's queue and last export (export.hpp)
    bool json_failed = false;      // the scene JSON dialog's last Load failed
    std::size_t scanned_paste = 0; // hash of the paste box last scanned for glyphs
    bool scanned_fixed = false;    // the fixed words, presets and live scenes scanned (once: they never change)
    std::string model_path;        // desktop: the "Open model attention" path field
    std::string model_folder;      // desktop: the "Open a model" folder field
    std::string picture_path;      // desktop: the "Open a picture" file field
    std::string hub_id, hub_address;  // the Hub dialog's fields (live_panel.cpp)
    bool click_knocks_out = false; // a live model: a click in the model view knocks a head out (else right-click)
    bool drawer_open = false;      // a phone (AppState::narrow): the controls cover the figure
    bool drawer_opened = false;    // … since this frame (the drawer takes the focus)
    bool drag_scrolling = false;   // a touch screen: the finger down is scrolling the panel
    // The model's progress bar as last drawn: it moves a few times a second, not every frame
    // (live_panel.cpp draw_live_progress).
    struct Progress {
        int phase = -1;            // reading, loading, running, measuring heads
        float fraction = 0.0f;
        std::string text;
        double at = 0.0;           // ImGui::GetTime() when it was taken
        int frame = -1;            // ImGui's frame it was last drawn in
    } progress;
};

// Builds the whole UI for one frame, filling the display. figure_only: just the figure with a
// title line (PNG export).
void draw_app(ViewContext& ctx, bool figure_only);

// Helpers of the controls panel, shared with the import panel (web/ui/model_view.cpp).
// A muted heading with a rule under it.
void section(const char* title);
// Tokens as small chips that wrap (at most 64, then "+ N more").
//   hidden  one flag per token: the chips are buttons, a hidden one struck through
//   shade   one value per token, 0 … 1 (NaN: none): the chip filled from the token colour
//           toward `shade_colour` by it; the chips report the one under the pointer
//   rects   where the chips are drawn, one per chip shown (for the tests' probes)
struct TokenChips {
    const std::vector<bool>* hidden = nullptr;
    const std::vector<float>* shade = nullptr;
    ImU32 shade_colour = 0;
    std::vector<ProbeRect>* rects = nullptr;
    // Tokens drawn as one chip per run of them ("<image> ×64", not clickable): a
    // vision-language model's image tokens, hidden from the Picture view instead
    const std::vector<bool>* collapsed = nullptr;
};
struct ChipHit {
    int clicked = -1, hovered = -1;
};
ChipHit token_chips(Lang lang, const std::vector<std::string>& tokens, const Palette& pal, float s, const TokenChips& chips = {});

// Every string the UI may show this frame, for the font atlas (fonts.hpp).
void collect_text(const AppState& state, PanelState& panels, Fonts& fonts);

}  // namespace attn
