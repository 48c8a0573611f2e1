// theme.cpp: two ImGui styles built on ImGui's own, plus figure colours.
#include "theme.hpp"

#include "colormaps.hpp"

namespace attn {
namespace {

ImVec4 rgb(unsigned hex, float a = 1.0f) {
    return ImVec4(((hex >> 16) & 0xff) / 255.0f, ((hex >> 8) & 0xff) / 255.0f, (hex & 0xff) / 255.0f, a);
}

ImU32 col(unsigned hex) { return IM_COL32((hex >> 16) & 0xff, (hex >> 8) & 0xff, hex & 0xff, 0xff); }

}  // namespace

ImVec4 head_color(Theme theme, int head) {
    return rgb(head_color_hex(theme == Theme::Dark, head));  // core/figure/colormaps.cpp: shared with the SVG export
}

const Palette& palette(Theme theme) {
    static const Palette dark{
        col((0x16181d)), col((0xe9ecef)),
        col((0x9aa3ad)), col((0x2a2e36)),
        col((0x3b4352)), col((0x4a5a7a)),
        col((0x5c6470)), col((0xff6b6b)),
        {0.30f, 0.31f, 0.34f, 1.0f}, {0.21f, 0.22f, 0.245f, 1.0f}, {0.086f, 0.094f, 0.114f, 0.9f},
        col((0xb8bec6))};
    static const Palette light{
        col((0xffffff)), col((0x1f2328)),
        col((0x5c6670)), col((0xeef1f4)),
        col((0xdbe4f0)), col((0xc5d5f0)),
        col((0xaeb6bf)), col((0xc92a2a)),
        {0.86f, 0.87f, 0.89f, 1.0f}, {0.74f, 0.75f, 0.78f, 1.0f}, {1.0f, 1.0f, 1.0f, 0.9f},
        col((0x4a4f55))};
    return theme == Theme::Dark ? dark : light;
}

void apply_theme(Theme theme, float ui_scale) {
    ImGuiStyle style;
    if (theme == Theme::Dark) {
        ImGui::StyleColorsDark(&style);
        ImVec4* c = style.Colors;
        c[ImGuiCol_WindowBg] = rgb(0x1e2127);
        c[ImGuiCol_ChildBg] = rgb(0x16181d);
        c[ImGuiCol_PopupBg] = rgb(0x23272e, 0.98f);
        c[ImGuiCol_Border] = rgb(0x343a44);
        c[ImGuiCol_FrameBg] = rgb(0x2a2f38);
        c[ImGuiCol_FrameBgHovered] = rgb(0x343b47);
        c[ImGuiCol_FrameBgActive] = rgb(0x3d4656);
        c[ImGuiCol_Button] = rgb(0x2f3642);
        c[ImGuiCol_ButtonHovered] = rgb(0x3b4657);
        c[ImGuiCol_ButtonActive] = rgb(0x2f6fb3);
        c[ImGuiCol_Header] = rgb(0x2f3642);
        c[ImGuiCol_HeaderHovered] = rgb(0x3b4657);
        c[ImGuiCol_HeaderActive] = rgb(0x2f6fb3);
        c[ImGuiCol_CheckMark] = rgb(0x4dabf7);
        c[ImGuiCol_SliderGrab] = rgb(0x4dabf7);
        c[ImGuiCol_SliderGrabActive] = rgb(0x74c0fc);
        c[ImGuiCol_Tab] = rgb(0x2a2f38);
        c[ImGuiCol_TabHovered] = rgb(0x3b4657);
        c[ImGuiCol_TabActive] = rgb(0x2f6fb3);
        c[ImGuiCol_Text] = rgb(0xe9ecef);
        c[ImGuiCol_TextDisabled] = rgb(0x8a939e);
        c[ImGuiCol_Separator] = rgb(0x343a44);
    } else {
        ImGui::StyleColorsLight(&style);
        ImVec4* c = style.Colors;
        c[ImGuiCol_WindowBg] = rgb(0xf4f5f7);
        c[ImGuiCol_ChildBg] = rgb(0xffffff);
        c[ImGuiCol_PopupBg] = rgb(0xffffff, 0.98f);
        c[ImGuiCol_Border] = rgb(0xd0d5db);
        c[ImGuiCol_FrameBg] = rgb(0xffffff);
        c[ImGuiCol_FrameBgHovered] = rgb(0xe7eef8);
        c[ImGuiCol_FrameBgActive] = rgb(0xd6e4f5);
        c[ImGuiCol_Button] = rgb(0xe4e8ed);
        c[ImGuiCol_ButtonHovered] = rgb(0xd3dde9);
        c[ImGuiCol_ButtonActive] = rgb(0x1f77b4);
        c[ImGuiCol_Header] = rgb(0xe4e8ed);
        c[ImGuiCol_HeaderHovered] = rgb(0xd3dde9);
        c[ImGuiCol_HeaderActive] = rgb(0xbcd0ea);
        c[ImGuiCol_CheckMark] = rgb(0x1f77b4);
        c[ImGuiCol_SliderGrab] = rgb(0x1f77b4);
        c[ImGuiCol_SliderGrabActive] = rgb(0x155a8a);
        c[ImGuiCol_Tab] = rgb(0xe4e8ed);
        c[ImGuiCol_TabHovered] = rgb(0xd3dde9);
        c[ImGuiCol_TabActive] = rgb(0x1f77b4);
        c[ImGuiCol_Text] = rgb(0x1f2328);
        c[ImGuiCol_TextDisabled] = rgb(0x6c757d);
        c[ImGuiCol_Separator] = rgb(0xd0d5db);
    }
    style.WindowRounding = 0.0f;
    style.ChildRounding = 4.0f;
    style.FrameRounding = 4.0f;
    style.PopupRounding = 4.0f;
    style.GrabRounding = 3.0f;
    style.TabRounding = 4.0f;
    style.WindowBorderSize = 0.0f;
    style.FrameBorderSize = theme == Theme::Light ? 1.0f : 0.0f;
    style.WindowPadding = ImVec2(12, 12);
    style.FramePadding = ImVec2(8, 4);
    style.ItemSpacing = ImVec2(8, 6);
    style.ScaleAllSizes(ui_scale);
    ImGui::GetStyle() = style;
}

}  // namespace attn
