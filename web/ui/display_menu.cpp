// display_menu.cpp: theme, text size and the frame-time overlay (display_menu.hpp).
#include "display_menu.hpp"

#include "view.hpp"

#include <imgui.h>

#include <algorithm>
#include <cmath>

namespace attn {
void display_menu(AppState& st, float s) {
    if (small_button(st, tr(st.lang, Str::Display))) ImGui::OpenPopup("##display");
    probe(st, "display");
    if (!ImGui::BeginPopup("##display")) return;
    // Theme: three buttons, the current one highlighted.
    struct Choice {
        Str label;
        bool is_auto;
        Theme theme;
        const char* probe;
    };
    const Choice choices[] = {{Str::ThemeAuto, true, Theme::Dark, "display.auto"},
                              {Str::ThemeLightShort, false, Theme::Light, "display.light"},
                              {Str::ThemeDarkShort, false, Theme::Dark, "display.dark"}};
    int i = 0;
    for (const Choice& c : choices) {
        if (i++ > 0) ImGui::SameLine();
        const bool on = c.is_auto ? st.theme_auto : !st.theme_auto && st.theme == c.theme;
        if (on) ImGui::PushStyleColor(ImGuiCol_Button, ImGui::GetStyleColorVec4(ImGuiCol_ButtonActive));
        if (ImGui::Button(tr(st.lang, c.label), ImVec2(80.0f * s, 0))) {
            st.theme_auto = c.is_auto;
            if (!c.is_auto) st.theme = c.theme;
        }
        if (on) ImGui::PopStyleColor();
        probe(st, c.probe);
    }
    ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + 260.0f * s);
    ImGui::TextDisabled("%s", tr(st.lang, Str::ThemeAutoNote));
    ImGui::PopTextWrapPos();
    ImGui::Separator();
    // Text size in steps of 12.5 %: − and + buttons around the value, a slider for the rest.
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted(tr(st.lang, Str::TextSize));
    ImGui::SameLine();
    if (ImGui::Button("A\xe2\x88\x92")) st.text_scale = std::max(kMinTextScale, std::round((st.text_scale - 0.125f) * 8.0f) / 8.0f);
    probe(st, "display.smaller");
    ImGui::SameLine();
    int percent = static_cast<int>(std::lround(st.text_scale * 100.0f));
    ImGui::SetNextItemWidth(110.0f * s);
    // Applied from the next frame on (App::before_frame): the fonts are baked between frames.
    if (ImGui::SliderInt("##text_size", &percent, 75, 200, "%d%%")) st.text_scale = static_cast<float>(percent) / 100.0f;
    probe(st, "display.text_size");
    ImGui::SameLine();
    if (ImGui::Button("A+")) st.text_scale = std::min(kMaxTextScale, std::round((st.text_scale + 0.125f) * 8.0f) / 8.0f);
    probe(st, "display.larger");
    ImGui::Separator();
    // Frame time (web/ui/frame_overlay.cpp): for checking that a long trace stays smooth.
    ImGui::Checkbox(tr(st.lang, Str::FrameTimeToggle), &st.show_frame_time);
    probe(st, "display.fps");
    ImGui::EndPopup();
}

}  // namespace attn
