// controls.cpp: the shared controls of the toolbars and the panels (controls.hpp).
#include "controls.hpp"

#include "colormaps.hpp"
#include "sink.hpp"

#include <cstdio>

namespace attn {

void same_line_if_fits(float w) {
    const float x = ImGui::GetItemRectMax().x - ImGui::GetWindowPos().x + ImGui::GetStyle().ItemSpacing.x;
    if (x + w <= ImGui::GetWindowContentRegionMax().x) ImGui::SameLine();
}

// A group of width w that starts where the cursor stands (after a SameLine): on the next line
// when it would pass the right edge.
void wrap_unless_fits(float w) {
    const float x = ImGui::GetCursorPosX();
    if (x > ImGui::GetCursorStartPos().x + 1.0f && x + w > ImGui::GetWindowContentRegionMax().x) ImGui::NewLine();
}

// "Head 1 2 3": st.steps.head's buttons (the Steps and Explain views), probed "<view>.head.N".
void head_buttons(AppState& st, int heads, const char* view) {
    const ImGuiStyle& style = ImGui::GetStyle();
    wrap_unless_fits(ImGui::CalcTextSize(attn::tr(st.lang, Str::Head)).x + heads * (ImGui::GetFrameHeight() * 1.2f + style.ItemSpacing.x));
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted(attn::tr(st.lang, Str::Head));
    for (int h = 0; h < heads; ++h) {
        char label[48];
        std::snprintf(label, sizeof label, "%d##%s_head", h + 1, view);
        ImGui::SameLine();
        const bool on = st.steps.head == h;
        if (on) ImGui::PushStyleColor(ImGuiCol_Button, ImGui::GetStyleColorVec4(ImGuiCol_ButtonActive));
        if (ImGui::Button(label, ImVec2(ImGui::GetFrameHeight() * 1.2f, 0))) st.steps.head = h;
        if (on) ImGui::PopStyleColor();
        std::snprintf(label, sizeof label, "%s.head.%d", view, h + 1);
        probe(st, label);
    }
}

bool layer_combo(AppState& st, float s, const char* view, int head) {
    if (!st.figure.has(Detail::Layers) || st.imported.show != ImportShow::Head) return false;
    const AttentionStack& stack = st.figure.stack(st.imported.import_stack);
    wrap_unless_fits(ImGui::CalcTextSize(attn::tr(st.lang, Str::Layer)).x + ImGui::GetStyle().ItemSpacing.x + 110.0f * s);
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted(attn::tr(st.lang, Str::Layer));
    ImGui::SameLine();
    ImGui::SetNextItemWidth(110.0f * s);
    char current[32];
    std::snprintf(current, sizeof current, attn::tr(st.lang, Str::HeadOf), st.imported.import_layer + 1, stack.layers);
    const std::string id = std::string("##") + view + ".layer";
    if (ImGui::BeginCombo(id.c_str(), current)) {
        for (int l = 0; l < stack.layers; ++l) {
            char label[32];
            std::snprintf(label, sizeof label, attn::tr(st.lang, Str::HeadOf), l + 1, stack.layers);
            if (ImGui::Selectable(label, l == st.imported.import_layer)) select_import_map(st, l, head);
        }
        ImGui::EndCombo();
    }
    probe(st, id.c_str() + 2);
    return true;
}

void wrapped_tooltip(const char* text) {
    ImGui::BeginTooltip();
    ImGui::PushTextWrapPos(ImGui::GetFontSize() * 28.0f);
    ImGui::TextUnformatted(text);
    ImGui::PopTextWrapPos();
    ImGui::EndTooltip();
}

// The shared colormap of the heatmap and the Steps view.
void toolbar_colormap(ViewContext& ctx) {
    same_line_if_fits(110.0f * ctx.scale);
    ImGui::SetNextItemWidth(110.0f * ctx.scale);
    colormap_combo(ctx);
}

void colormap_combo(ViewContext& ctx) {
    AppState& st = ctx.state;
    const float s = ctx.scale;
    auto maps = colormaps();
    if (ImGui::BeginCombo("##colormap", maps[st.heatmap.colormap].name.data())) {
        for (int i = 0; i < static_cast<int>(maps.size()); ++i) {
            ImGui::Image(ctx.renderer.lut_texture(i), ImVec2(48.0f * s, ImGui::GetFontSize()));
            ImGui::SameLine();
            if (ImGui::Selectable(maps[i].name.data(), i == st.heatmap.colormap)) st.heatmap.colormap = i;
        }
        ImGui::EndCombo();
    }
    probe(st, "colormap");
}

// How QKᵀ is scaled; recomputes the figure. Shared by the controls panel and the Steps view.
bool scale_combo(AppState& st) {
    const char* scale_names[] = {tr(st.lang, Str::ScaleInvSqrtDk), tr(st.lang, Str::ScaleNone), tr(st.lang, Str::ScaleTemperature)};
    int scale_mode = static_cast<int>(st.scale_mode);
    if (!ImGui::Combo("##scale", &scale_mode, scale_names, 3)) return false;
    st.scale_mode = static_cast<ScaleMode>(scale_mode);
    st.apply();
    return true;
}

bool temperature_slider(AppState& st) {
    if (!ImGui::SliderFloat("##temperature", &st.temperature, 0.05f, 20.0f, "%.2f", ImGuiSliderFlags_Logarithmic))
        return false;
    st.temperature = std::max(st.temperature, 0.01f);
    st.apply();
    return true;
}

// The attention-sink option (AppState::sink_hidden), as the lines and the heatmap offer it: a
// checkbox whose tooltip says what it does; disabled for a map not held whole (a long trace).
void sink_checkbox(ViewContext& ctx) {
    AppState& st = ctx.state;
    const float s = ctx.scale;
    const char* label = attn::tr(st.lang, Str::SinkOption);
    same_line_if_fits(ImGui::GetFrameHeight() + ImGui::CalcTextSize(label).x + 8.0f * s);
    const bool can = sink_hideable(st.figure.trace());
    ImGui::BeginDisabled(!can);
    ImGui::Checkbox((std::string(label) + "###sink").c_str(), &st.sink_hidden);
    ImGui::EndDisabled();
    probe(st, "sink");
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) {
        ImGui::BeginTooltip();
        ImGui::PushTextWrapPos(ImGui::GetFontSize() * 24.0f);
        ImGui::TextUnformatted(attn::tr(st.lang, Str::SinkOptionTip));
        if (!can) ImGui::TextDisabled("%s", attn::tr(st.lang, Str::SinkOptionLong));
        ImGui::PopTextWrapPos();
        ImGui::EndTooltip();
    }
}

// [SECTION] Cells of the views ------------------------------------------------------------------

bool tap(float s) { return ImGui::GetIO().MouseDragMaxDistanceSqr[0] < 36.0f * s * s; }

void pick_cell(AppState& st, std::array<int, 3> at) {
    st.pinned_step = st.pinned_step == at ? std::array<int, 3>{-1, -1, -1} : at;
}

void show_cell(bool scroll, float x0, float y0, float cell_w, float cell_h, float s) {
    const ImVec2 wmin = ImGui::GetWindowPos(), wsize = ImGui::GetWindowSize();
    if (scroll && (y0 < wmin.y || y0 + cell_h > wmin.y + wsize.y)) ImGui::SetScrollY(ImGui::GetScrollY() + (y0 - wmin.y) - wsize.y * 0.4f);
    if (scroll && (x0 < wmin.x || x0 + cell_w > wmin.x + wsize.x)) ImGui::SetScrollX(ImGui::GetScrollX() + (x0 - wmin.x) - wsize.x * 0.4f);
    ImGui::SetNextWindowPos(ImVec2(x0 + cell_w + 8.0f * s, y0 + cell_h + 4.0f * s));
}

}  // namespace attn
