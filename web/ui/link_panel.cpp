// link_panel.cpp: Copy link, the embed dialog, and the figure-only layout of embeds.
//
// [SECTION] Helpers
// [SECTION] Share buttons and the embed dialog
// [SECTION] Figure only
#include "link_panel.hpp"

#include "controls.hpp"

#include "link_state.hpp"
#include "platform.hpp"

#include <algorithm>
#include <cstdio>

namespace attn {
namespace {

// [SECTION] Helpers ----------------------------------------------------------------------------

void copy(SharePanel& share, const std::string& text) {
    ImGui::SetClipboardText(text.c_str());
    share.copied = text;
    share.copied_at = ImGui::GetTime();
}

bool just_copied(const SharePanel& share) { return ImGui::GetTime() - share.copied_at < 1.6; }

std::string link_url(const AppState& st, bool panels) {
    LinkState l = link_from_app(st);
    l.panels = panels;
    return platform::page_url() + "#" + encode_link(l);
}

// A small button that is drawn "on" (the active colour).
bool toggle_button(const char* label, bool on, ImVec2 size = ImVec2(0, 0)) {
    if (on) ImGui::PushStyleColor(ImGuiCol_Button, ImGui::GetStyleColorVec4(ImGuiCol_ButtonActive));
    if (on) ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1, 1, 1, 1));
    const bool clicked = ImGui::Button(label, size);
    if (on) ImGui::PopStyleColor(2);
    return clicked;
}

}  // namespace

// [SECTION] Share buttons and the embed dialog --------------------------------------------------

void draw_share_buttons(ViewContext& ctx, SharePanel& share) {
    AppState& st = ctx.state;
    const float s = ctx.scale;
    EmbedOptions& options = share.embed;
    if (small_button(st, tr(st.lang, just_copied(share) && share.copied_link ? Str::Copied : Str::CopyLink))) {
        copy(share, link_url(st, st.show_panels));
        share.copied_link = true;
    }
    probe(st, "share.link");
    ImGui::SameLine();
    if (small_button(st, tr(st.lang, Str::EmbedCode))) ImGui::OpenPopup("Embed");
    probe(st, "share.embed");

    const ImGuiIO& io = ImGui::GetIO();
    ImGui::SetNextWindowPos(ImVec2(io.DisplaySize.x * 0.5f, io.DisplaySize.y * 0.5f), ImGuiCond_Always, ImVec2(0.5f, 0.5f));
    ImGui::SetNextWindowSize(ImVec2(std::min(560.0f * s, io.DisplaySize.x - 40.0f * s), 0.0f));
    if (!ImGui::BeginPopupModal("Embed", nullptr, ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoMove)) return;
    ImGui::TextWrapped("%s", tr(st.lang, Str::EmbedHelp));
    ImGui::Spacing();
    const float field_w = 90.0f * s;
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted(tr(st.lang, Str::EmbedWidth));
    ImGui::SameLine();
    ImGui::SetNextItemWidth(field_w);
    if (ImGui::InputInt("##embed_w", &options.width, 20, 100)) options.width = std::clamp(options.width, 160, 4000);
    probe(st, "embed.width");
    ImGui::SameLine();
    ImGui::TextUnformatted(tr(st.lang, Str::EmbedHeight));
    ImGui::SameLine();
    ImGui::SetNextItemWidth(field_w);
    if (ImGui::InputInt("##embed_h", &options.height, 20, 100)) options.height = std::clamp(options.height, 120, 4000);
    probe(st, "embed.height");
    bool figure_only = !options.panels;
    if (ImGui::Checkbox(tr(st.lang, Str::EmbedFigureOnly), &figure_only)) options.panels = !figure_only;
    probe(st, "embed.figure_only");

    // Shown wrapped (a link is one long word); the button copies it.
    const std::string snippet = embed_snippet(platform::page_url(), link_from_app(st), options, ctx.link_cache);
    ImGui::PushStyleColor(ImGuiCol_ChildBg, ImGui::GetStyleColorVec4(ImGuiCol_FrameBg));
    ImGui::BeginChild("##snippet", ImVec2(-FLT_MIN, ImGui::GetTextLineHeightWithSpacing() * 6.0f), true);
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextUnformatted(snippet.c_str());
    ImGui::PopTextWrapPos();
    ImGui::EndChild();
    ImGui::PopStyleColor();
    probe(st, "embed.snippet");
    if (ImGui::Button(tr(st.lang, just_copied(share) && !share.copied_link ? Str::Copied : Str::EmbedCopy))) {
        copy(share, snippet);
        share.copied_link = false;
    }
    probe(st, "embed.copy");
    ImGui::SameLine();
    if (ImGui::Button(tr(st.lang, Str::JsonClose)) || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape)))
        ImGui::CloseCurrentPopup();
    probe(st, "embed.close");
    ImGui::EndPopup();
}

// [SECTION] Figure only ---------------------------------------------------------------------------

void draw_figure_only(ViewContext& ctx) {
    AppState& st = ctx.state;
    const float s = ctx.scale;
    const Palette& pal = palette(st.theme);
    const ImGuiIO& io = ImGui::GetIO();
    st.hover = {};
    advance_model(st, kModelFrameSeconds);  // no controls: the model's work for this frame first
    ImGui::SetNextWindowPos(ImVec2(0, 0));
    ImGui::SetNextWindowSize(io.DisplaySize);
    ImGui::PushStyleColor(ImGuiCol_WindowBg, ImGui::ColorConvertU32ToFloat4(pal.background));
    ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, ImVec2(6.0f * s, 6.0f * s));
    ImGui::Begin("Figure", nullptr,
                 ImGuiWindowFlags_NoTitleBar | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoMove |
                     ImGuiWindowFlags_NoCollapse | ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoScrollbar |
                     ImGuiWindowFlags_NoBringToFrontOnFocus);
    ImGui::PopStyleVar();
    ImGui::PopStyleColor();

    // The strip: view, head, and a way out to the full app. Compact frames so it stays one line
    // in a 640 px column.
    ImGui::PushStyleVar(ImGuiStyleVar_FramePadding, ImVec2(6.0f * s, 2.0f * s));
    ImGui::PushStyleVar(ImGuiStyleVar_ItemSpacing, ImVec2(4.0f * s, 4.0f * s));
    const struct {
        View view;
        Str label;
        const char* probe;
    } views[] = {{View::Image, Str::ViewImage, "strip.view.image"},  // a vision model's run only
                 {View::Lines, Str::ViewLines, "strip.view.lines"},
                 {View::Heatmap, Str::ViewHeatmap, "strip.view.heatmap"},
                 {View::Steps, Str::ViewSteps, "strip.view.steps"}};
    const bool picture = st.figure.live && st.figure.live->picture;
    for (const auto& v : views) {
        if (v.view == View::Image && !picture) continue;
        if (v.view != (picture ? View::Image : View::Lines)) ImGui::SameLine();
        if (toggle_button(tr(st.lang, v.label), st.view == v.view)) st.view = v.view;
        probe(st, v.probe);
    }
    if (st.figure.has(Detail::Layers) && st.imported.show == ImportShow::Head) {  // a model's map: which layer, then which head
        ImGui::SameLine(0.0f, 12.0f * s);
        layer_combo(st, s, "strip", st.imported.import_head);
    }
    const int heads = st.figure.trace().heads;
    if (!st.figure.empty() && heads > 1) {
        ImGui::SameLine(0.0f, 12.0f * s);
        ImGui::AlignTextToFramePadding();
        ImGui::TextUnformatted(tr(st.lang, Str::Head));
        ImGui::SameLine();
        char current[48];
        if (st.view == View::Lines) {
            int only = -1, shown = 0;
            for (int h = 0; h < heads && h < static_cast<int>(st.lines.head_visible.size()); ++h)
                if (st.lines.head_visible[h]) only = h, ++shown;
            if (shown == 1) std::snprintf(current, sizeof current, tr(st.lang, Str::HeadOf), only + 1, heads);
            else std::snprintf(current, sizeof current, "%s", tr(st.lang, Str::AllHeads));
            ImGui::SetNextItemWidth(ImGui::CalcTextSize(current).x + ImGui::GetFrameHeight() + 14.0f * s);
            if (ImGui::BeginCombo("##strip_head", current)) {
                if (ImGui::Selectable(tr(st.lang, Str::AllHeads), shown != 1)) st.lines.head_visible.assign(static_cast<size_t>(heads), true);
                for (int h = 0; h < heads; ++h) {
                    char label[32];
                    std::snprintf(label, sizeof label, tr(st.lang, Str::HeadOf), h + 1, heads);
                    if (ImGui::Selectable(label, shown == 1 && only == h)) {
                        st.lines.head_visible.assign(static_cast<size_t>(heads), false);
                        st.lines.head_visible[static_cast<size_t>(h)] = true;
                    }
                }
                ImGui::EndCombo();
            }
        } else {
            int& head = st.view == View::Steps ? st.steps.head : st.heatmap.head;
            if (head < 0) std::snprintf(current, sizeof current, "%s", tr(st.lang, Str::Mean));
            else std::snprintf(current, sizeof current, tr(st.lang, Str::HeadOf), head + 1, heads);
            ImGui::SetNextItemWidth(ImGui::CalcTextSize(current).x + ImGui::GetFrameHeight() + 14.0f * s);
            if (ImGui::BeginCombo("##strip_head", current)) {
                if (st.view == View::Heatmap && ImGui::Selectable(tr(st.lang, Str::Mean), head < 0)) head = -1;
                for (int h = 0; h < heads; ++h) {
                    char label[32];
                    std::snprintf(label, sizeof label, tr(st.lang, Str::HeadOf), h + 1, heads);
                    if (ImGui::Selectable(label, h == head)) head = h;
                }
                ImGui::EndCombo();
            }
        }
        probe(st, "strip.head");
    }
    if (platform::kBrowser) {
        // Right-aligned when it fits, else left out: the figure matters more than the way out.
        const char* open = tr(st.lang, Str::OpenFull);
        const float w = ImGui::CalcTextSize(open).x + 2.0f * ImGui::GetStyle().FramePadding.x;
        const float x = ImGui::GetWindowContentRegionMax().x - w;
        if (x > ImGui::GetItemRectMax().x - ImGui::GetWindowPos().x + 12.0f * s) {
            ImGui::SameLine(x);
            ImGui::PushStyleColor(ImGuiCol_Button, ImVec4(0, 0, 0, 0));
            ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(pal.text_muted));
            if (ImGui::Button(open)) platform::open_url(link_url(st, true));
            ImGui::PopStyleColor(2);
            probe(st, "strip.open");
        }
    }
    ImGui::PopStyleVar(2);
    if (!st.error.empty()) {
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(pal.error));
        ImGui::TextWrapped("\xe2\x9a\xa0 %s%s", st.error.c_str(), !st.figure.empty() ? tr(st.lang, Str::ShowingLastGood) : "");
        ImGui::PopStyleColor();
        probe(st, "error");
    }

    ImVec2 size = ImGui::GetContentRegionAvail();
    ImGui::PushStyleColor(ImGuiCol_ChildBg, ImGui::ColorConvertU32ToFloat4(pal.background));
    ImGui::BeginChild("##canvas", size, false, ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse);
    ImVec2 a = ImGui::GetWindowPos(), b(a.x + ImGui::GetWindowSize().x, a.y + ImGui::GetWindowSize().y);
    st.figure_rect = {a.x, a.y, b.x - a.x, b.y - a.y};
    if (!st.figure.empty()) {
        ctx.views.draw(ctx, st.view, a, b);
    }
    ImGui::EndChild();
    ImGui::PopStyleColor();
    ImGui::End();
}

}  // namespace attn
