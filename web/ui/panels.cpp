// panels.cpp: the layout and every control.
//
// [SECTION] Helpers
// [SECTION] Controls panel
// [SECTION] Figure window
// [SECTION] Layout
#include "panels.hpp"
#include "why.hpp"

#include "colormaps.hpp"
#include "controls.hpp"
#include "link_panel.hpp"
#include "live_panel.hpp"
#include "display_menu.hpp"
#include "export.hpp"
#include "flash_layout.hpp"
#include "model_view.hpp"
#include "live_scenes.hpp"
#include "presets.hpp"

#include <imgui_internal.h>
#include <misc/cpp/imgui_stdlib.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <functional>

namespace attn {

// [SECTION] Helpers ------------------------------------------------------------------------

void mark_text_box(AppState& st) {
    const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
    st.text_boxes.push_back({a.x, a.y, b.x - a.x, b.y - a.y});
}

void probe(AppState& st, const char* name) {
    ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
    st.probe[name] = {a.x, a.y, b.x - a.x, b.y - a.y};
}

void section(const char* title) {
    ImGui::Spacing();
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ImGui::TextUnformatted(title);
    ImGui::PopStyleColor();
    ImGui::Separator();
}

// Tokens as small chips that wrap, so the user sees how the text was split.
ChipHit token_chips(Lang lang, const std::vector<std::string>& tokens, const Palette& pal, float s, const TokenChips& chips) {
    ImDrawList* dl = ImGui::GetWindowDrawList();
    ImFont* font = ImGui::GetFont();
    const float fs = ImGui::GetFontSize();
    const float pad = 5.0f * s, gap = 4.0f * s, h = fs + 4.0f * s;
    const float x0 = ImGui::GetCursorScreenPos().x, right = x0 + ImGui::GetContentRegionAvail().x;
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    const bool hovered_window = (chips.hidden || chips.shade) && ImGui::IsWindowHovered();
    float x = x0, y = ImGui::GetCursorScreenPos().y;
    ChipHit hit;
    constexpr int kMostChips = 64;
    if (chips.rects) chips.rects->clear();
    std::size_t i = 0;
    for (int drawn = 0; i < tokens.size() && drawn < kMostChips; ++i, ++drawn) {
        const auto is_collapsed = [&](std::size_t k) { return chips.collapsed && k < chips.collapsed->size() && (*chips.collapsed)[k]; };
        if (is_collapsed(i)) {  // a run of them: one chip
            std::size_t end = i;
            while (end < tokens.size() && is_collapsed(end) && tokens[end] == tokens[i]) ++end;
            const std::string label = token_text(tokens[i]) + " ×" + std::to_string(end - i);
            const float w = font->CalcTextSizeA(fs, FLT_MAX, 0.0f, label.c_str()).x + 2.0f * pad;
            if (x + w > right && x > x0) x = x0, y += h + gap;
            dl->AddRectFilled(ImVec2(x, y), ImVec2(x + w, y + h), pal.background, 3.0f * s);
            dl->AddRect(ImVec2(x, y), ImVec2(x + w, y + h), pal.token_outline, 3.0f * s);
            dl->AddText(font, fs, ImVec2(x + pad, y + 2.0f * s), pal.text_muted, label.c_str());
            for (std::size_t k = i; chips.rects && k < end; ++k) chips.rects->push_back({x, y, w, h});  // one place for the run's tokens
            x += w + gap;
            i = end - 1;
            continue;
        }
        const std::string label = token_text(tokens[i]);
        const char* t = label.c_str();
        float w = font->CalcTextSizeA(fs, FLT_MAX, 0.0f, t).x + 2.0f * pad;
        if (x + w > right && x > x0) x = x0, y += h + gap;
        const bool off = chips.hidden && i < chips.hidden->size() && (*chips.hidden)[i];
        const bool over = hovered_window && mouse.x >= x && mouse.x < x + w && mouse.y >= y && mouse.y < y + h;
        const float k = chips.shade && i < chips.shade->size() && std::isfinite((*chips.shade)[i]) ? std::clamp((*chips.shade)[i], 0.0f, 1.0f) : -1.0f;
        const ImU32 fill = off ? pal.background : k >= 0.0f ? mix_color(pal.token_fill, chips.shade_colour, k) : over ? pal.token_hover : pal.token_fill;
        dl->AddRectFilled(ImVec2(x, y), ImVec2(x + w, y + h), fill, 3.0f * s);
        dl->AddRect(ImVec2(x, y), ImVec2(x + w, y + h), over ? pal.token_pinned : pal.token_outline, 3.0f * s, 0, over ? 2.0f * s : 1.0f);
        dl->AddText(font, fs, ImVec2(x + pad, y + 2.0f * s), off ? pal.text_muted : k > 0.55f ? IM_COL32_WHITE : pal.text, t);
        if (off) dl->AddLine(ImVec2(x + pad * 0.5f, y + h * 0.5f), ImVec2(x + w - pad * 0.5f, y + h * 0.5f), pal.text, 1.5f * s);
        if (chips.rects) chips.rects->push_back({x, y, w, h});
        if (over) {
            hit.hovered = static_cast<int>(i);
            if (chips.hidden) ImGui::SetMouseCursor(ImGuiMouseCursor_Hand);
            if (chips.hidden && ImGui::IsMouseClicked(ImGuiMouseButton_Left)) hit.clicked = static_cast<int>(i);
        }
        x += w + gap;
    }
    if (tokens.size() > i) {
        char more[32];
        std::snprintf(more, sizeof more, tr(lang, Str::MoreTokens), tokens.size() - i);
        dl->AddText(font, fs, ImVec2(x, y + 2.0f * s), pal.text_muted, more);
    }
    ImGui::Dummy(ImVec2(right - x0, y + h - ImGui::GetCursorScreenPos().y));
    return hit;
}

namespace {

const char* scale_label(Lang lang, const Trace& tr, char* buf, size_t n) {
    switch (tr.scale.kind) {
        case ScaleKind::InvSqrtDk: std::snprintf(buf, n, attn::tr(lang, Str::ScoresOverSqrt), tr.d_k); break;
        case ScaleKind::None: std::snprintf(buf, n, "%s", attn::tr(lang, Str::UnscaledScores)); break;
        case ScaleKind::Divisor: std::snprintf(buf, n, attn::tr(lang, Str::ScoresOverDivisor), tr.scale.divisor); break;
    }
    return buf;
}

// [SECTION] Controls panel ------------------------------------------------------------------

void embeddings_editor(ViewContext& ctx, bool source) {
    AppState& st = ctx.state;
    const float s = ctx.scale;
    const auto& tokens = source ? st.draft.source_tokens : st.draft.tokens;
    const int T = static_cast<int>(tokens.size()), d = st.draft.d_model;
    if (T == 0) return;
    if (T > 16 || d > 8) {
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
        ImGui::TextWrapped(tr(st.lang, Str::EmbeddingsTooLarge), T, d);
        ImGui::PopStyleColor();
        return;
    }
    Matrix shown = st.current_embeddings(source);
    // T×d_model cells of a fixed width; the table scrolls sideways (token column frozen) when
    // d_model is too wide for the panel.
    const float cell_w = 50.0f * s;
    ImGuiTableFlags flags = ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV;
    const bool wide = ImGui::CalcTextSize("good").x + d * (cell_w + 2.0f * ImGui::GetStyle().CellPadding.x) >
                      ImGui::GetContentRegionAvail().x;
    ImVec2 outer(0.0f, 0.0f);
    if (wide) {
        flags |= ImGuiTableFlags_ScrollX;
        outer.y = T * (ImGui::GetFrameHeight() + 2.0f * ImGui::GetStyle().CellPadding.y) + ImGui::GetStyle().ScrollbarSize + 4.0f * s;
    }
    if (!ImGui::BeginTable(source ? "source_embeddings" : "embeddings", d + 1, flags, outer)) return;
    if (wide) ImGui::TableSetupScrollFreeze(1, 0);
    ImGui::TableSetupColumn("token", ImGuiTableColumnFlags_WidthFixed);
    for (int j = 0; j < d; ++j) ImGui::TableSetupColumn("", ImGuiTableColumnFlags_WidthFixed, cell_w);
    bool changed = false;
    for (int i = 0; i < T; ++i) {
        ImGui::TableNextRow();
        ImGui::TableSetColumnIndex(0);
        ImGui::AlignTextToFramePadding();
        ImGui::TextUnformatted(token_text(tokens[i]).c_str());
        for (int j = 0; j < d; ++j) {
            ImGui::TableSetColumnIndex(j + 1);
            ImGui::PushID(i * 1024 + j + (source ? 1 << 20 : 0));
            ImGui::SetNextItemWidth(-FLT_MIN);
            float v = shown(i, j);
            if (ImGui::DragFloat("##e", &v, 0.02f, -100.0f, 100.0f, "%.2f")) {
                st.editable_embeddings(source)(i, j) = v;
                changed = true;
            }
            if (!source) probe(st, ("emb." + std::to_string(i) + "." + std::to_string(j)).c_str());
            ImGui::PopID();
        }
    }
    ImGui::EndTable();
    if (changed) st.apply();  // same frame: the figure below is built after the controls
}

// A scene file pasted or edited in place (SPEC.md §1). A bad one leaves the figure as it was
// and says what is wrong, here and above the figure.
void scene_json_popup(ViewContext& ctx) {
    AppState& st = ctx.state;
    const float s = ctx.scale;
    const ImGuiIO& io = ImGui::GetIO();
    ImGui::SetNextWindowPos(ImVec2(io.DisplaySize.x * 0.5f, io.DisplaySize.y * 0.5f), ImGuiCond_Always, ImVec2(0.5f, 0.5f));
    ImGui::SetNextWindowSize(ImVec2(std::min(620.0f * s, io.DisplaySize.x - 40.0f * s), 0.0f));
    if (!ImGui::BeginPopupModal("Scene JSON", nullptr, ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoMove)) return;
    ImGui::TextWrapped("%s", tr(st.lang, Str::JsonHelp));
    ImGui::InputTextMultiline("##json", &st.scene_json, ImVec2(-FLT_MIN, std::min(300.0f * s, io.DisplaySize.y * 0.5f)));
    mark_text_box(st);
    probe(st, "json.text");
    bool& failed = ctx.panels.json_failed;
    if (ImGui::Button(tr(st.lang, Str::JsonLoad))) {
        st.apply_scene_json();
        failed = !st.error.empty();
        if (!failed) ImGui::CloseCurrentPopup();
    }
    probe(st, "json.load");
    ImGui::SameLine();
    if (ImGui::Button(tr(st.lang, Str::JsonCurrent))) {
        st.scene_json = write_scene(st.scene);
        failed = false;
    }
    ImGui::SameLine();
    if (ImGui::Button(tr(st.lang, Str::JsonClose)) || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape))) {
        if (failed) st.apply();  // the error was about the pasted text: back to the inputs' own state
        failed = false;
        ImGui::CloseCurrentPopup();
    }
    probe(st, "json.close");
    if (failed && !st.error.empty()) {
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(palette(st.theme).error));
        ImGui::TextWrapped("%s", st.error.c_str());
        ImGui::PopStyleColor();
    }
    ImGui::EndPopup();
}

// The title line: attnviz, the tagline when it fits, and at the right the language switch (it
// names the other language), the theme button and the display menu (display_menu.cpp).
void title_line(ViewContext& ctx) {
    AppState& st = ctx.state;
    ImGui::PushFont(ctx.fonts.title);
    ImGui::TextUnformatted("attnviz");
    ImGui::PopFont();
    ImGui::SameLine();
    const char* lang = tr(st.lang, Str::LanguageSwitch);
    const char* theme = tr(st.lang, st.theme == Theme::Dark ? Str::ThemeLight : Str::ThemeDark);
    const float pad = ImGui::GetStyle().FramePadding.x * 2, gap = ImGui::GetStyle().ItemSpacing.x;
    const float w = ImGui::CalcTextSize(lang).x + pad + gap + ImGui::CalcTextSize(theme).x + pad + gap +
                    ImGui::CalcTextSize(tr(st.lang, Str::Display)).x + pad;
    const float right = ImGui::GetWindowContentRegionMax().x - w;
    if (ImGui::GetCursorPosX() + ImGui::CalcTextSize(tr(st.lang, Str::Tagline)).x + gap <= right) {
        ImGui::TextDisabled("%s", tr(st.lang, Str::Tagline));
        ImGui::SameLine();
    }
    ImGui::SameLine(std::max(right, ImGui::GetCursorPosX()));
    if (small_button(st, lang)) st.lang = st.lang == Lang::En ? Lang::Zh : Lang::En;
    probe(st, "lang");
    ImGui::SameLine();
    if (small_button(st, theme)) {
        st.theme = st.theme == Theme::Dark ? Theme::Light : Theme::Dark;
        st.theme_auto = false;
    }
    probe(st, "theme");
    ImGui::SameLine();
    display_menu(st, ctx.scale);
}

// SCENE: the presets and the live scenes, the scene's description, the JSON dialog's button, the
// model files' controls.
void scene_section(ViewContext& ctx) {
    AppState& st = ctx.state;
    section(tr(st.lang, Str::SectionScene));
    ImGui::SetNextItemWidth(-FLT_MIN);
    const bool showing_preset = st.showing_preset();
    const LiveScene* live = st.model.active() ? shown_live_scene(st) : nullptr;
    if (ImGui::BeginCombo("##preset", live ? live->name : showing_preset ? st.preset_name.c_str() : tr(st.lang, Str::CustomScene),
                          ImGuiComboFlags_HeightLargest)) {  // every scene in sight, the live ones too
        for (const Scene& p : presets()) {
            if (ImGui::Selectable(p.name.c_str(), p.name == st.preset_name)) st.load_preset(p.name);
            probe(st, ("preset." + p.name).c_str());
            if (ImGui::IsItemHovered() && !p.description.empty()) wrapped_tooltip(p.description.c_str());
        }
        ImGui::Separator();
        ImGui::TextDisabled("%s", tr(st.lang, Str::TrainedModels));
        for (const LiveScene& s : live_scenes()) {  // a built-in model on a chosen text
            if (ImGui::Selectable(s.name, &s == live)) open_live_scene(st, s);
            probe(st, (std::string("preset.live.") + s.name).c_str());  // apart from the seeds' scenes
            if (ImGui::IsItemHovered()) wrapped_tooltip(s.about);
        }
        ImGui::EndCombo();
    }
    probe(st, "preset");
    if (const Scene* p = showing_preset ? find_preset(st.preset_name) : nullptr; p && !p->description.empty()) {
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
        ImGui::TextWrapped("%s", p->description.c_str());
        ImGui::PopStyleColor();
    }
    if (small_button(st, tr(st.lang, Str::PasteScene))) {
        if (st.scene_json.empty()) st.scene_json = write_scene(st.scene);
        ImGui::OpenPopup("Scene JSON");
    }
    probe(st, "json.open");
    // Beside it when it fits (in Chinese, or a wider panel), else on the next line.
    const ImGuiStyle& style = ImGui::GetStyle();
    const float open_w = ImGui::CalcTextSize(tr(st.lang, Str::OpenModel)).x + 2.0f * style.FramePadding.x;
    if (ImGui::GetContentRegionAvail().x - ImGui::GetItemRectSize().x - style.ItemSpacing.x >= open_w)
        ImGui::SameLine();
    open_model_control(ctx);
    open_live_model_control(ctx);

}

// The kind of attention and the sentences (a cross scene's two), each with its tokens.
void text_section(ViewContext& ctx) {
    AppState& st = ctx.state;
    const float s = ctx.scale;
    const Palette& pal = palette(st.theme);
    ImGui::Spacing();
    AttentionKind kind = st.draft.kind;
    if (segmented<AttentionKind>(st, "kind", &kind,
                                 {{AttentionKind::Self, Str::KindSelf, "self"}, {AttentionKind::Masked, Str::KindMasked, "masked"},
                                  {AttentionKind::Cross, Str::KindCross, "cross"}},
                                 "kind")) {
        st.draft.kind = kind;
        if (kind == AttentionKind::Cross && st.source_text.empty()) st.source_text = st.target_text;
        st.apply();
    }
    const bool cross = st.draft.kind == AttentionKind::Cross;
    ImGui::Spacing();
    ImGui::TextUnformatted(tr(st.lang, cross ? Str::TargetSentence : Str::Sentence));
    ImGui::SetNextItemWidth(-FLT_MIN);
    if (ImGui::InputText("##target", &st.target_text)) st.apply();
    mark_text_box(st);
    probe(st, "input.target");
    token_chips(st.lang, st.draft.tokens, pal, s);
    if (cross) {
        ImGui::TextUnformatted(tr(st.lang, Str::SourceSentence));
        ImGui::SetNextItemWidth(-FLT_MIN);
        if (ImGui::InputText("##source", &st.source_text)) st.apply();
        mark_text_box(st);
        probe(st, "input.source");
        token_chips(st.lang, st.draft.source_tokens, pal, s);
    }

}

// MODEL: d_model, heads, the scale of QKᵀ, the weights (and their seed), positions.
void model_section(ViewContext& ctx) {
    AppState& st = ctx.state;
    const float s = ctx.scale;
    section(tr(st.lang, Str::SectionModel));
    const float label_x = 92.0f * s;
    auto row = [&](const char* label) {
        ImGui::AlignTextToFramePadding();
        ImGui::TextUnformatted(label);
        ImGui::SameLine(label_x);
        ImGui::SetNextItemWidth(-FLT_MIN);
    };
    row("d_model");
    int d_model = st.draft.d_model;
    if (ImGui::InputInt("##d_model", &d_model, 1, 4)) {
        d_model = std::clamp(d_model, 1, 512);
        if (d_model != st.draft.d_model) {
            st.draft.d_model = d_model;
            // Keep the head count valid: the largest divisor of d_model not above it.
            int h = std::min(st.draft.heads, d_model);
            while (d_model % h != 0) --h;
            st.draft.heads = h;
            st.apply();
        }
    }
    row(tr(st.lang, Str::Heads));
    char heads_label[32];
    std::snprintf(heads_label, sizeof heads_label, "%d  (d_k = %d)", st.draft.heads, st.draft.d_model / std::max(st.draft.heads, 1));
    if (ImGui::BeginCombo("##heads", heads_label)) {
        for (int h = 1; h <= std::min(st.draft.d_model, kMaxHeads); ++h) {
            if (st.draft.d_model % h != 0) continue;
            char label[32];
            std::snprintf(label, sizeof label, "%d  (d_k = %d)", h, st.draft.d_model / h);
            if (ImGui::Selectable(label, h == st.draft.heads)) {
                st.draft.heads = h;
                st.lines.head_visible.assign(static_cast<size_t>(h), true);
                st.apply();
            }
        }
        ImGui::EndCombo();
    }
    probe(st, "heads");
    row(tr(st.lang, Str::Scale));
    scale_combo(st);
    if (st.scale_mode == ScaleMode::Temperature) {
        row(tr(st.lang, Str::DivideBy));
        temperature_slider(st);
    }
    row(tr(st.lang, Str::Weights));
    const bool has_explicit = std::holds_alternative<ExplicitWeights>(st.draft.weights);
    const char* weight_names[] = {tr(st.lang, Str::WeightsIdentity), tr(st.lang, Str::WeightsRandom), tr(st.lang, Str::WeightsExplicit)};
    int weights_mode = static_cast<int>(st.weights_mode);
    if (ImGui::Combo("##weights", &weights_mode, weight_names, has_explicit ? 3 : 2)) {
        st.weights_mode = static_cast<WeightsMode>(weights_mode);
        st.apply();
    }
    if (st.weights_mode == WeightsMode::Random) {
        row(tr(st.lang, Str::Seed));
        if (ImGui::InputInt("##seed", &st.seed)) {
            st.seed = std::max(st.seed, 0);
            st.apply();
        }
    }
    bool positional = st.draft.positional == Positional::Sinusoidal;
    if (ImGui::Checkbox(tr(st.lang, Str::Positional), &positional)) {
        st.draft.positional = positional ? Positional::Sinusoidal : Positional::None;
        st.apply();
    }

}

// EMBEDDINGS (collapsible): each token's vector, given or generated from the tokens.
void embeddings_section(ViewContext& ctx) {
    AppState& st = ctx.state;
    const bool cross = st.draft.kind == AttentionKind::Cross;
    ImGui::TextDisabled("%s", tr(st.lang, st.draft.embeddings ? Str::EmbeddingsGiven : Str::EmbeddingsGenerated));
    if (cross) ImGui::TextUnformatted(tr(st.lang, Str::Target));
    embeddings_editor(ctx, false);
    if (cross) {
        ImGui::TextUnformatted(tr(st.lang, Str::Source));
        embeddings_editor(ctx, true);
    }
    if ((st.draft.embeddings || st.draft.source_embeddings) && small_button(st, tr(st.lang, Str::GenerateFromTokens))) {
        st.draft.embeddings.reset();
        st.draft.source_embeddings.reset();
        st.apply();
    }

}

// The controls panel: the title line, sharing, then a live model's, an import's or a scene's own.
void draw_controls(ViewContext& ctx) {
    AppState& st = ctx.state;
    title_line(ctx);
    draw_share_buttons(ctx, ctx.panels.share);
    if (st.model.active()) draw_live_controls(ctx);  // a model run live: its text and next tokens
    else if (st.served.active()) draw_served_controls(ctx);  // or run by PyTorch elsewhere
    if (st.figure.has(Detail::Layers)) {  // a model's layers × heads: choose what the views show
        draw_import_controls(ctx);
    } else if (!st.model.active() && !st.served.active()) {  // else its first run is on its way
        scene_section(ctx);
        text_section(ctx);
        model_section(ctx);
        ImGui::Spacing();
        if (ImGui::CollapsingHeader((std::string(tr(st.lang, Str::Embeddings)) + "###embeddings").c_str(), ImGuiTreeNodeFlags_DefaultOpen))
            embeddings_section(ctx);
    }
    scene_json_popup(ctx);
}

// [SECTION] Figure window --------------------------------------------------------------------

// The views a figure offers, in the toolbar's order.
std::vector<Segment<View>> view_choices(const AppState& st) {
    if (st.figure.live && st.figure.live->picture)  // a vision model's run: the picture first, no text views
        return {{View::Image, Str::ViewImage, "image"}, {View::Model, Str::ViewModel, "model"}, {View::Lines, Str::ViewLines, "lines"},
                {View::Heatmap, Str::ViewHeatmap, "heatmap"}, {View::Steps, Str::ViewSteps, "steps"},
                {View::Explain, Str::ViewExplain, "explain"}, {View::Qk, Str::ViewQk, "qk"}};
    if (st.figure.has(Detail::Layers))
        return {{View::Model, Str::ViewModel, "model"}, {View::Lines, Str::ViewLines, "lines"},
                {View::Heatmap, Str::ViewHeatmap, "heatmap"}, {View::Steps, Str::ViewSteps, "steps"},
                {View::Explain, Str::ViewExplain, "explain"}, {View::Compare, Str::ViewCompare, "compare"}, {View::Qk, Str::ViewQk, "qk"},
                {View::Why, Str::ViewWhy, "why"}};
    return {{View::Lines, Str::ViewLines, "lines"}, {View::Heatmap, Str::ViewHeatmap, "heatmap"},
            {View::Steps, Str::ViewSteps, "steps"}, {View::Explain, Str::ViewExplain, "explain"}, {View::Qk, Str::ViewQk, "qk"}};
}

void draw_toolbar(ViewContext& ctx) {
    AppState& st = ctx.state;
    const float s = ctx.scale;
    const ImGuiStyle& style = ImGui::GetStyle();
    const std::vector<Segment<View>> views = view_choices(st);
    View view = st.view;
    if (!st.narrow) {
        if (segmented<View>(st, "view", &view, views, "view", (views.size() > 4 ? 540.0f : 360.0f) * s)) st.view = view;
        ImGui::SameLine(0.0f, 20.0f * s);
        ImGui::Dummy(ImVec2(0, 0));  // so that same_line_if_fits measures from here
        ImGui::SameLine();
        ctx.views.toolbar(ctx, st.view);
    } else {
        // A phone: the drawer's button, the view as a menu, the view's options in a popup.
        if (ImGui::Button(attn::tr(st.lang, Str::Controls))) ctx.panels.drawer_open = ctx.panels.drawer_opened = true;
        probe(st, "drawer.open");
        char current[64];
        std::snprintf(current, sizeof current, attn::tr(st.lang, Str::ViewIs), attn::tr(st.lang, views.front().label));
        for (const Segment<View>& v : views)
            if (v.value == st.view) std::snprintf(current, sizeof current, attn::tr(st.lang, Str::ViewIs), attn::tr(st.lang, v.label));
        const float combo_w = ImGui::CalcTextSize(current).x + 2.0f * style.FramePadding.x + ImGui::GetFrameHeight();
        same_line_if_fits(combo_w);
        ImGui::SetNextItemWidth(combo_w);
        if (ImGui::BeginCombo("##view", current)) {
            for (const Segment<View>& v : views) {
                if (ImGui::Selectable(attn::tr(st.lang, v.label), v.value == st.view)) st.view = v.value;
                probe(st, (std::string("view.") + v.probe).c_str());
            }
            ImGui::EndCombo();
        }
        probe(st, "view.menu");
        same_line_if_fits(ImGui::CalcTextSize(attn::tr(st.lang, Str::ViewOptions)).x + 2.0f * style.FramePadding.x);
        if (ImGui::Button(attn::tr(st.lang, Str::ViewOptions))) ImGui::OpenPopup("##view_options");
        probe(st, "view.options");
        const ImGuiIO& io = ImGui::GetIO();
        ImGui::SetNextWindowSizeConstraints(ImVec2(0, 0), ImVec2(io.DisplaySize.x - 16.0f * s, io.DisplaySize.y * 0.8f));
        if (ImGui::BeginPopup("##view_options")) {
            ctx.views.toolbar(ctx, st.view);
            ImGui::EndPopup();
        }
    }
    same_line_if_fits(ImGui::CalcTextSize(attn::tr(st.lang, Str::Export)).x + 24.0f * s);
    export_menu(st, ctx.panels.exports, s);
}

// "cross attention · 3 queries × 3 keys · 1 head · d_k = 3 · unscaled"
std::string status_text(const AppState& st) {
    if (st.figure.has(Detail::Layers)) return import_status_text(st);  // a model's, live or imported
    const Trace& tr = st.figure.trace();
    char buf[64], heads[32], line[256];
    std::snprintf(heads, sizeof heads, attn::tr(st.lang, tr.heads == 1 ? Str::HeadsOne : Str::HeadsMany), tr.heads);
    std::snprintf(line, sizeof line, attn::tr(st.lang, Str::StatusLine), ui_kind_name(st.lang, tr.kind), tr.queries.size(),
                  tr.keys.size(), heads, tr.d_k, scale_label(st.lang, tr, buf, sizeof buf));
    return line;
}

// The status line's height: one line, or as many as it wraps to on a phone.
float status_height(const AppState& st, float s) {
    const float line = ImGui::GetTextLineHeightWithSpacing();
    if (!st.narrow) return line + 4.0f * s;
    const float h = ImGui::CalcTextSize(status_text(st).c_str(), nullptr, false, ImGui::GetContentRegionAvail().x).y;
    return h + ImGui::GetStyle().ItemSpacing.y + 4.0f * s;
}



void draw_status(ViewContext& ctx) {
    AppState& st = ctx.state;
    const std::string status = status_text(st);
    if (st.narrow) {  // wrapped, without the hint (a phone has no hover)
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
        ImGui::TextWrapped("%s", status.c_str());
        ImGui::PopStyleColor();
        return;
    }
    ImGui::TextDisabled("%s", status.c_str());
    if (ctx.fonts.font_pending()) {
        ImGui::SameLine();
        ImGui::TextDisabled("%s", attn::tr(st.lang, Str::LoadingGlyphs));
    }
    const std::string note = export_note(st.lang, ctx.panels.exports);  // where the last export went, for a few seconds
    const char* hint = !note.empty() ? note.c_str() : view_hint(st);
    const float w = ImGui::CalcTextSize(hint).x;
    const float used = ImGui::GetItemRectMax().x - ImGui::GetWindowPos().x;
    if (used + 24.0f * ctx.scale + w <= ImGui::GetWindowContentRegionMax().x) {
        ImGui::SameLine(ImGui::GetWindowContentRegionMax().x - w);
        ImGui::TextDisabled("%s", hint);
    }
}

// A served link before its first figure: the server's state, and its problem, mid-canvas.
void draw_served_waiting(ViewContext& ctx, ImVec2 a, ImVec2 b) {
    const AppState& st = ctx.state;
    const Palette& pal = palette(st.theme);
    const std::string summary = served_summary(st), problem = st.served.error.empty() ? "" : "\xe2\x9a\xa0 " + st.served.error;
    const float wrap = std::min(b.x - a.x - 40.0f * ctx.scale, 560.0f * ctx.scale);
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const ImVec2 s1 = ImGui::CalcTextSize(summary.c_str(), nullptr, false, wrap);
    const ImVec2 s2 = problem.empty() ? ImVec2() : ImGui::CalcTextSize(problem.c_str(), nullptr, false, wrap);
    const float gap = problem.empty() ? 0.0f : 8.0f * ctx.scale;
    ImVec2 p((a.x + b.x - s1.x) * 0.5f, (a.y + b.y - s1.y - gap - s2.y) * 0.5f);
    dl->AddText(ImGui::GetFont(), ImGui::GetFontSize(), p, pal.text_muted, summary.c_str(), nullptr, wrap);
    ctx.state.probe["served.waiting"] = {p.x, p.y, s1.x, s1.y};
    if (problem.empty()) return;
    p = ImVec2((a.x + b.x - s2.x) * 0.5f, p.y + s1.y + gap);
    dl->AddText(ImGui::GetFont(), ImGui::GetFontSize(), p, pal.error, problem.c_str(), nullptr, wrap);
}

void draw_figure(ViewContext& ctx, bool figure_only) {
    AppState& st = ctx.state;
    const float s = ctx.scale;
    const Palette& pal = palette(st.theme);
    if (!figure_only) {
        draw_toolbar(ctx);
        if (!st.error.empty()) {
            ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(pal.error));
            ImGui::TextWrapped("\xe2\x9a\xa0 %s%s", st.error.c_str(), !st.figure.empty() ? tr(st.lang, Str::ShowingLastGood) : "");
            ImGui::PopStyleColor();
            probe(st, "error");
        }
        draw_import_progress(ctx);
        draw_live_progress(ctx);
    } else {
        ImGui::PushFont(ctx.fonts.title);
        const std::string title = figure_title(st);  // web/ui/export.cpp: the SVG has the same
        ImGui::TextUnformatted(title.c_str());
        ImGui::PopFont();
    }
    const bool waiting = awaiting_served_figure(st);  // no figure to say anything of
    const float status_h = figure_only || waiting ? 0.0f : status_height(st, s);
    ImVec2 size(ImGui::GetContentRegionAvail().x, ImGui::GetContentRegionAvail().y - status_h);
    ImGui::PushStyleColor(ImGuiCol_ChildBg, ImGui::ColorConvertU32ToFloat4(pal.background));
    ImGui::BeginChild("##canvas", size, !figure_only, ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse);
    ImVec2 a = ImGui::GetWindowPos(), b(a.x + ImGui::GetWindowSize().x, a.y + ImGui::GetWindowSize().y);
    st.figure_rect = {a.x, a.y, b.x - a.x, b.y - a.y};
    if (waiting) {
        draw_served_waiting(ctx, a, b);
    } else if (!st.figure.empty()) {
        ctx.views.draw(ctx, st.view, a, b);
    } else {
        const char* msg = tr(st.lang, Str::EmptyFigure);
        ImVec2 t = ImGui::CalcTextSize(msg);
        ImGui::GetWindowDrawList()->AddText(ImVec2((a.x + b.x - t.x) * 0.5f, (a.y + b.y - t.y) * 0.5f), pal.text_muted, msg);
    }
    ImGui::EndChild();
    ImGui::PopStyleColor();
    if (figure_only || waiting) return;
    if (st.figure.has(Detail::Layers) && !st.narrow) draw_import_status(ctx);
    else draw_status(ctx);  // on a phone: whichever status, wrapped
}

}  // namespace

// [SECTION] Layout -------------------------------------------------------------------------------

void collect_text(const AppState& st, PanelState& panels, Fonts& fonts) {
    fonts.need("\xe2\x9a\xa0");  // ⚠ of the error line; the rest of the UI's text is in the base ranges
    fonts.need(st.target_text);
    fonts.need(st.source_text);
    fonts.need(st.model.text);
    fonts.need(st.model.source);
    if (st.figure.live) {  // the live panel's chips and next tokens, whatever stack is shown
        for (const NextToken& t : st.figure.live->top) fonts.need(display_token(t.token));
        for (int i = 0; i < st.figure.stack_count(); ++i)
            for (const std::string& t : st.figure.stack(i).queries) fonts.need(display_token(t));
        if (const TokenProbs* probs = st.figure.probs.get())  // the chips' tooltips (64 chips at most): the likeliest tokens there
            for (int t = 0; t < std::min(probs->positions(), 64); ++t)
                for (const TokenP& k : probs->at[static_cast<std::size_t>(t)].top)
                    fonts.need(display_token(st.figure.live->model->decoder_tokenizer().token(k.id)));
    }
    fonts.need(st.error);
    fonts.need(st.scene.name);
    fonts.need(st.figure.name);
    fonts.need(st.figure.file);
    if (st.imported.load) fonts.need(st.imported.load->name);
    // Both languages' fixed words (so that switching the language does not rebake the atlas), the
    // presets and the live scenes: constant, so scanned once (Fonts keeps what it needed).
    if (!panels.scanned_fixed) {
        for (int k = 0; k < kStrCount; ++k) fonts.need(text(static_cast<Str>(k), Lang::Zh));
        for (const Scene& p : presets()) {
            fonts.need(p.name);
            fonts.need(p.description);
        }
        for (const LiveScene& s : live_scenes()) {
            fonts.need(s.about);
            fonts.need(s.text);
            fonts.need(s.source);
        }
        panels.scanned_fixed = true;
    }
    for (const auto& t : st.figure.trace().queries) fonts.need(t);
    for (const auto& t : st.figure.trace().keys) fonts.need(t);
    for (const auto& t : st.draft.tokens) fonts.need(t);
    for (const auto& t : st.draft.source_tokens) fonts.need(t);
    // The paste box can be long: scan it only when it changed.
    const size_t hash = std::hash<std::string>{}(st.scene_json);
    if (hash != panels.scanned_paste) {
        fonts.need(st.scene_json);
        panels.scanned_paste = hash;
    }
}

void drag_scroll(bool& scrolling, float s, bool both_axes) {
    if (!ImGui::IsMouseDown(ImGuiMouseButton_Left)) {
        scrolling = false;
        return;
    }
    const ImVec2 delta = ImGui::GetIO().MouseDelta;
    if (!scrolling && ImGui::IsMouseDragging(ImGuiMouseButton_Left, 8.0f * s) &&
        ImGui::IsWindowHovered(ImGuiHoveredFlags_ChildWindows | ImGuiHoveredFlags_AllowWhenBlockedByActiveItem) &&
        !ImGui::IsPopupOpen("", ImGuiPopupFlags_AnyPopupId)) {
        const ImVec2 d = ImGui::GetMouseDragDelta(ImGuiMouseButton_Left);
        if (!both_axes && std::abs(d.y) <= 2.0f * std::abs(d.x)) return;
        scrolling = true;
        ImGui::ClearActiveID();
        ImGui::SetScrollY(ImGui::GetScrollY() - d.y);  // the way the finger went so far
        if (both_axes) ImGui::SetScrollX(ImGui::GetScrollX() - d.x);
        return;
    }
    if (!scrolling) return;
    ImGui::SetScrollY(ImGui::GetScrollY() - delta.y);
    if (both_axes) ImGui::SetScrollX(ImGui::GetScrollX() - delta.x);
}

void draw_app(ViewContext& ctx, bool figure_only) {
    AppState& st = ctx.state;
    const float s = ctx.scale;
    const ImGuiIO& io = ImGui::GetIO();
    st.hover = {};
    const ImGuiWindowFlags fixed = ImGuiWindowFlags_NoTitleBar | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoMove |
                                   ImGuiWindowFlags_NoCollapse | ImGuiWindowFlags_NoSavedSettings |
                                   ImGuiWindowFlags_NoBringToFrontOnFocus;
    // A phone: the figure takes the whole width; the controls open over it (the drawer).
    const bool side_panel = !figure_only && !st.narrow;
    float panel_w = side_panel ? std::min(std::round(350.0f * s), io.DisplaySize.x * 0.45f) : 0.0f;
    if (side_panel) {
        ImGui::SetNextWindowPos(ImVec2(0, 0));
        ImGui::SetNextWindowSize(ImVec2(panel_w, io.DisplaySize.y));
        ImGui::Begin("Controls", nullptr, fixed);
        draw_controls(ctx);
        if (st.touch) drag_scroll(ctx.panels.drag_scrolling, s, false);
        ImGui::End();
    }
    // The live model's work for this frame: after the controls, which may have just changed its
    // input (a key in the text box), before the figure, which then shows the run in the frame
    // that took the key. (That frame's work also starts with nothing of the previous frame left
    // to rasterize: in a software WebGL the two would share the cores.) On a phone the drawer
    // comes after the figure, and an edit there runs in the next frame.
    if (ctx.interactive) advance_model(st, kModelFrameSeconds);
    if (!st.narrow) ctx.panels.drawer_open = false;
    ImGui::SetNextWindowPos(ImVec2(panel_w, 0));
    ImGui::SetNextWindowSize(ImVec2(io.DisplaySize.x - panel_w, io.DisplaySize.y));
    ImGui::PushStyleColor(ImGuiCol_WindowBg, figure_only ? ImGui::ColorConvertU32ToFloat4(palette(st.theme).background)
                                                         : ImGui::GetStyleColorVec4(ImGuiCol_WindowBg));
    ImGui::Begin("Figure", nullptr, fixed | ImGuiWindowFlags_NoScrollbar);
    ImGui::PopStyleColor();
    draw_figure(ctx, figure_only);
    ImGui::End();
    if (!figure_only && ctx.panels.drawer_open) {
        // Made after the figure's window and focused: it lies on top of it.
        ImGui::SetNextWindowPos(ImVec2(0, 0));
        ImGui::SetNextWindowSize(io.DisplaySize);
        if (ctx.panels.drawer_opened) ImGui::SetNextWindowFocus();
        ctx.panels.drawer_opened = false;
        ImGui::Begin("Controls##drawer", nullptr, fixed & ~ImGuiWindowFlags_NoBringToFrontOnFocus);
        if (ImGui::Button(tr(st.lang, Str::CloseControls), ImVec2(-FLT_MIN, 0)) ||
            (!ImGui::GetIO().WantTextInput && !ImGui::IsPopupOpen("", ImGuiPopupFlags_AnyPopupId) &&
             ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape))))
            ctx.panels.drawer_open = false;
        probe(st, "drawer.close");
        draw_controls(ctx);
        drag_scroll(ctx.panels.drag_scrolling, s, false);
        ImGui::End();
    }
}

const char* view_hint(const AppState& st) {
    const Lang lang = st.lang;
    switch (st.view) {
        case View::Lines: return tr(lang, st.figure.has(Detail::Layers) ? Str::HintSum : Str::HintLines);
        case View::Heatmap: return tr(lang, st.figure.has(Detail::Scores) ? Str::HintHeatmap : Str::HintHeatmapWeight);
        case View::Steps: return tr(lang, Str::HintSteps);
        case View::Model: return tr(lang, Str::HintModel);
        case View::Explain: return tr(lang, !st.figure.empty() && reads_rows(st.figure.trace()) ? Str::HintRows : Str::HintExplain);
        case View::Compare:
            return tr(lang, !st.figure.empty() && (reads_rows(st.figure.trace()) || (st.figure.compare && !st.figure.compare->input.keep_maps))
                                ? Str::HintRows : Str::HintCompare);
        case View::Why: return tr(lang, Str::HintWhy);
        case View::Image: return tr(lang, Str::HintImage);
        case View::Qk: return tr(lang, st.qk == QkProjection::Heads ? Str::QkHeadsHint : Str::QkHint);
    }
    return "";
}

}  // namespace attn
