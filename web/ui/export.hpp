// export.hpp: what is on screen, as files: PNG at 1×, 2× or 4× (the figure drawn again off
// screen, in a framebuffer object, at that scale), SVG of the lines and heatmap views
// (core/svg/svg.hpp), and the scene JSON. The browser downloads them (a Blob through the page);
// the desktop writes them to the working folder and says where.
//
// The PNG is drawn by a second ImGui context (its own font atlas, at the export scale) with
// the app's own renderer and view objects, between two frames of the app on screen; `attnviz
// render` uses the same path with a renderer and views of its own.
#pragma once

#include "app_state.hpp"
#include "svg.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace attn {

class App;
class Fonts;
class Renderer;
struct Views;

struct FigureImage {
    int width = 0, height = 0;
    std::vector<std::uint8_t> rgba;  // top row first, opaque
    std::string layout_json;         // App::state_json() of the figure drawn (tests)
};

// What draws the figure: a renderer and view objects (the app's own, so the export shares their
// GL objects and caches), and fonts whose downloaded CJK files the export may use too.
struct FigureDrawer {
    Renderer& renderer;
    Views& views;
    const Fonts* downloads = nullptr;
};

// Draws the figure of `source` alone (title + view, no controls) at width×height pixels and
// UI scale `scale` into an FBO. Needs a current GL context; creates and destroys its own ImGui
// context and restores the one that was current. false with `error` set on failure.
bool render_figure(const AppState& source, FigureDrawer drawer, int width, int height, float scale, FigureImage& out,
                   std::string& error);

// The SVG of what render_figure draws at width × height and scale: the same frame, layout and
// fonts (an atlas of its own, baked on the CPU: no GL needed). `downloads`: the app's fonts
// whose downloaded CJK files it may use; `lines_weights`: the lines view's lists for this
// figure, if at hand (else built). "" with `error` set when the view has no SVG or it is too big.
struct SvgPicture {
    int width = 1200, height = 800;
    float scale = 1.0f;  // times the state's text size, as render_figure
    const Fonts* downloads = nullptr;
    LinesWeights* lines_weights = nullptr;
};
std::string figure_svg(const AppState& st, SvgPicture picture, std::string& error);

// The SVG options for what `st` shows: view, theme, heads, threshold / top-k, selection,
// heatmap head / colormap / values / zoom, the UI language's words and the figure's title
// (the picture's size, scale and text measure are figure_svg's).
SvgOptions svg_options(const AppState& st);
// The figure's title, as the PNG export draws it ("i-am-good · self attention").
std::string figure_title(const AppState& st);
// A file name without extension: "attnviz-i-am-good-heatmap".
std::string export_basename(const AppState& st);

enum class ExportKind { Png1, Png2, Png4, Svg, SceneJson };

// What the last export wrote: shown under the figure, reported to the browser tests.
struct ExportRecord {
    int count = 0;
    std::string file;   // file name (browser) or full path (desktop)
    int width = 0, height = 0;
    std::string error;  // "" when it worked
    double time = 0.0;  // ImGui::GetTime() when it ran
};
// An export asked for by the menu, and the last one done (PanelState, panels.hpp).
struct ExportQueue {
    std::optional<ExportKind> pending;
    ExportRecord last;
};

// The toolbar's Export menu (PNG 1×/2×/4×, SVG, scene JSON). Choosing an item queues it; the
// export runs before the next frame (run_pending_export), outside any ImGui frame.
void export_menu(AppState& st, ExportQueue& exports, float ui_scale);
// Runs a queued export of the app on screen. Call between frames (App::before_frame).
void run_pending_export(App& app);
// "Saved attnviz-….png" (or the failure) for a few seconds after an export, else "": the
// status line under the figure shows it in place of the hint.
std::string export_note(Lang lang, const ExportQueue& exports);

}  // namespace attn
