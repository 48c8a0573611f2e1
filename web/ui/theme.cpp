// theme.cpp: two ImGui styles built on ImGui's own, and the figure colours of
// core/figure/palette.hpp converted to ImGui's.
#include "theme.hpp"

#include <algorithm>
#include <cmath>

namespace attn {
namespace {

ImVec4 rgb(unsigned hex, float a = 1.0f) {
    return ImVec4(((hex >> 16) & 0xff) / 255.0f, ((hex >> 8) & 0xff) / 255.0f, (hex & 0xff) / 255.0f, a);
}

ImVec4 vec4(const Color& c) { return ImVec4(c.r, c.g, c.b, c.a); }

}  // namespace

ImU32 im_color(const Color& c) {
    return IM_COL32(channel_byte(c.r), channel_byte(c.g), channel_byte(c.b), channel_byte(c.a));
}

ImU32 mix_color(ImU32 a, ImU32 b, float t) {
    const ImVec4 x = ImGui::ColorConvertU32ToFloat4(a), y = ImGui::ColorConvertU32ToFloat4(b);
    return ImGui::ColorConvertFloat4ToU32(ImVec4(x.x + (y.x - x.x) * t, x.y + (y.y - x.y) * t, x.z + (y.z - x.z) * t, 1.0f));
}

ImVec4 head_color(Theme theme, int head) {
    const Color c = head_color(theme == Theme::Dark, head);  // core/figure/palette.hpp: shared with the SVG
    return ImVec4(c.r, c.g, c.b, c.a);
}

namespace {

// ImGui's colours of the figure palette (core/figure/palette.hpp holds the numbers).
Palette converted(const FigurePalette& f) {
    auto floats = [](const Color& c) { return std::array<float, 4>{c.r, c.g, c.b, c.a}; };
    return {im_color(f.background), im_color(f.text),         im_color(f.text_muted), im_color(f.token_fill),
            im_color(f.token_hover), im_color(f.token_pinned), im_color(f.token_outline), im_color(f.error),
            floats(f.hatch_a),       floats(f.hatch_b),        floats(f.grid),         im_color(f.masked_text),
            floats(f.window_a),      floats(f.window_b)};
}

}  // namespace

const Palette& palette(Theme theme) {
    static const Palette kDark = converted(figure_palette(true));
    static const Palette kLight = converted(figure_palette(false));
    return theme == Theme::Dark ? kDark : kLight;
}

void apply_theme(Theme theme, float ui_scale, float min_frame_h, float font_px) {
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
        c[ImGuiCol_ButtonActive] = vec4(figure_palette(true).accent);
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
        c[ImGuiCol_TextDisabled] = rgb(0x959ea8);  // 4.9:1 on FrameBg, 5.9:1 on WindowBg (WCAG AA)
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
        c[ImGuiCol_ButtonActive] = vec4(figure_palette(false).accent);
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
        c[ImGuiCol_TextDisabled] = rgb(0x5f6871);  // 5.2:1 on WindowBg (WCAG AA)
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
    if (min_frame_h > 0.0f) {
        style.FramePadding.y = std::max(style.FramePadding.y, std::ceil((min_frame_h - font_px) * 0.5f));
        style.ItemSpacing.y = std::max(style.ItemSpacing.y, 8.0f * ui_scale);
        style.ScrollbarSize = std::max(style.ScrollbarSize, 18.0f * ui_scale);
        style.GrabMinSize = std::max(style.GrabMinSize, 24.0f * ui_scale);
    }
    ImGui::GetStyle() = style;
}

}  // namespace attn
