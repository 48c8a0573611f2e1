// model_view.hpp: the parts of the UI for figures with layers (web/ui/model_view.cpp).
#pragma once

#include "view.hpp"

#include <string>

namespace attn {

// The model view (ModelView, view.hpp): layers × heads of small heatmaps; hover for a larger
// one, click to open it.

// Controls panel: the import section (stack, what to show, aggregation, subwords).
void draw_import_controls(ViewContext& ctx);
// A button that opens something: in the browser the page's dialog, on the desktop a modal with
// a path field. Probes: PROBE.open, PROBE.path, PROBE.path.open.
struct OpenControl {
    const char* popup = "";                     // the desktop modal's ImGui id
    Str button{}, tip{}, field{};               // its words
    const char* probe = "";
    std::string* path = nullptr;                // the desktop's field (PanelState)
    void (*browser_pick)() = nullptr;           // the page's dialog (platform.hpp)
    bool (*open)(AppState&, const std::string&) = nullptr;  // what the desktop's path opens
};
void open_control(ViewContext& ctx, const OpenControl& control);
// The "Open model attention…" control (an import file).
void open_model_control(ViewContext& ctx);
// A progress bar while a file is read or parsed; nothing otherwise.
void draw_import_progress(ViewContext& ctx);
// What the figure shows, in words: "layer 2, head 3", "mean of 12 heads × 4 layers", ….
std::string import_description(const AppState& st);
// The status line under the figure in import mode: "live · tiny-lm · masked attention · 9 queries
// × 9 keys · layer 1, head 1" (an import: "imported · …"), and the view's hint beside it.
std::string import_status_text(const AppState& st);
void draw_import_status(ViewContext& ctx);

}  // namespace attn
