// controls.hpp: the controls the toolbars and the panels share: the row that wraps, segmented
// buttons, head buttons, the colormap, the scale of QKᵀ, the attention-sink switch. Each view's
// own toolbar (View::toolbar, view.hpp) is built from these.
#pragma once

#include "view.hpp"

#include <imgui.h>

#include <algorithm>
#include <array>
#include <string>
#include <vector>

namespace attn {

// Continues a row of controls on this line when an item of width w still fits, else on the next.
void same_line_if_fits(float w);

// One button of segmented(): its value, its label (in the UI language) and its probe name.
template <typename T>
struct Segment {
    T value;
    Str label;
    const char* probe;
};

// A row of buttons where exactly one is on, total_w wide (0: the rest of the line). Buttons
// too narrow for their words take their own widths and wrap instead; those from `enabled` on are
// drawn disabled. Returns true when the choice changed.
template <typename T>
bool segmented(AppState& st, const char* id, T* value, const std::vector<Segment<T>>& options,
               const char* probe_prefix, float total_w = 0.0f, int enabled = 1 << 30) {
    bool changed = false;
    ImGui::PushID(id);
    total_w = std::min(total_w <= 0.0f ? ImGui::GetContentRegionAvail().x : total_w, ImGui::GetContentRegionAvail().x);
    const ImGuiStyle& style = ImGui::GetStyle();
    const float w = (total_w - style.ItemSpacing.x * static_cast<float>(options.size() - 1)) / static_cast<float>(options.size());
    float widest = 0.0f;
    for (const Segment<T>& o : options) widest = std::max(widest, ImGui::CalcTextSize(tr(st.lang, o.label)).x);
    const bool wrap = w < widest + 2.0f * style.FramePadding.x;
    int i = 0;
    for (const Segment<T>& o : options) {
        const T v = o.value;
        const char* label = tr(st.lang, o.label);
        ImGui::PushID(o.probe);
        if (i++ > 0) {
            if (wrap) same_line_if_fits(ImGui::CalcTextSize(label).x + 2.0f * style.FramePadding.x);
            else ImGui::SameLine();
        }
        const bool on = *value == v;
        ImGui::BeginDisabled(i > enabled);
        if (on) ImGui::PushStyleColor(ImGuiCol_Button, ImGui::GetStyleColorVec4(ImGuiCol_ButtonActive));
        if (on) ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1, 1, 1, 1));
        if (ImGui::Button(label, ImVec2(wrap ? 0.0f : w, 0)) && !on) {
            *value = v;
            changed = true;
        }
        if (on) ImGui::PopStyleColor(2);
        ImGui::EndDisabled();
        probe(st, (std::string(probe_prefix) + "." + o.probe).c_str());
        ImGui::PopID();
    }
    ImGui::PopID();
    return changed;
}

// "Head 1 2 3": st.steps.head's buttons (the Steps, Q–K and Explain views), probed "<view>.head.N".
// A tooltip of `text` wrapped at 28 ems.
void wrapped_tooltip(const char* text);
void head_buttons(AppState& st, int heads, const char* view);
// A model's figure showing one layer's heads: which layer ("Layer 2 of 4"), probed as VIEW.layer;
// choosing one shows that layer with `head` selected. False (nothing drawn) for other figures.
bool layer_combo(AppState& st, float s, const char* view, int head);
// The colormap of the heatmap, the Steps view and the model view.
void colormap_combo(ViewContext& ctx);
// The same, 110 px wide, on the toolbar's line when it fits there (the views' toolbars).
void toolbar_colormap(ViewContext& ctx);
// How QKᵀ is scaled, and the temperature when it is one; each recomputes the figure.
bool scale_combo(AppState& st);
bool temperature_slider(AppState& st);
// The attention-sink option (AppState::sink_hidden) of the lines and the heatmap.
void sink_checkbox(ViewContext& ctx);

// [SECTION] Cells of the views
// A click or tap that did not drag (under 6 px at UI scale `s`) since the mouse went down: what
// pins a cell in the heatmap, the Steps view and its tiles (a drag pans or scrolls instead).
bool tap(float s);
// A tap on the number `at` (a step or tile block, its row, its column) pins it, or lets it go
// when it is the pinned one (AppState::pinned_step).
void pick_cell(AppState& st, std::array<int, 3> at);
// The shown number's cell at (x0, y0), cell_w × cell_h, in the current scrolling window: scrolled
// into view when the keyboard moved to it (`scroll`), its tooltip (the next window) beside it.
void show_cell(bool scroll, float x0, float y0, float cell_w, float cell_h, float s);

}  // namespace attn
