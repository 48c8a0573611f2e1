// live_panel.cpp: see live_panel.hpp.
//
// [SECTION] Opening a model
// [SECTION] The model's section
// [SECTION] Progress
#include "live_panel.hpp"

#include "model_view.hpp"
#include "panels.hpp"
#include "platform.hpp"

#include <imgui.h>
#include <misc/cpp/imgui_stdlib.h>

#include <algorithm>
#include <cstdio>

namespace attn {
namespace {

void tooltip(const char* text) {
    if (!ImGui::IsItemHovered()) return;
    ImGui::BeginTooltip();
    ImGui::PushTextWrapPos(ImGui::GetFontSize() * 26.0f);
    ImGui::TextUnformatted(text);
    ImGui::PopTextWrapPos();
    ImGui::EndTooltip();
}

std::string megabytes(double bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f MB", bytes / 1048576.0);
    return buf;
}

}  // namespace

// [SECTION] Opening a model ------------------------------------------------------------------

void open_live_model_control(ViewContext& ctx) {
    open_control(ctx, {.popup = "Open a model", .button = Str::OpenLiveModel, .tip = Str::OpenLiveModelTip, .field = Str::FolderPath,
                       .probe = "model", .path = &ctx.panels.model_folder, .browser_pick = platform::open_folder_picker,
                       .open = open_model_folder});
}

// [SECTION] The model's section --------------------------------------------------------------

void draw_live_controls(ViewContext& ctx) {
    AppState& st = ctx.state;
    ModelSession& ms = st.model;
    const float sc = ctx.scale;
    const Palette& pal = palette(st.theme);
    const LoadedModel& m = *ms.model;
    section(tr(st.lang, Str::SectionLive));
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ImGui::TextWrapped("%s", m.summary().c_str());
    ImGui::PopStyleColor();
    probe(st, "model.summary");

    const LiveRun* live = st.figure.live.get();
    auto tokens_of = [&](int stack) {
        std::vector<std::string> out;
        if (live && stack < st.figure.stack_count())
            for (const std::string& t : st.figure.stack(stack).queries) out.push_back(display_token(t));
        return out;
    };
    auto text_box = [&](Str label, const char* id, std::string* text, bool enabled) {
        ImGui::TextUnformatted(tr(st.lang, label));
        ImGui::SetNextItemWidth(-FLT_MIN);
        ImGui::BeginDisabled(!enabled);
        if (ImGui::InputText((std::string("##") + id).c_str(), text)) model_input_changed(st);
        ImGui::EndDisabled();
        probe(st, id);
    };
    if (m.config().family == Family::Marian) {
        text_box(Str::LiveSource, "model.source", &ms.source, true);
        token_chips(st.lang, tokens_of(0), pal, sc);
        // What the decoder wrote, as text: its tokens after the start, without </s>.
        std::string written;
        if (live)
            for (size_t i = 1; i < live->input.ids.size(); ++i)
                if (live->input.ids[i] != m.config().eos_id) written += display_token(m.decoder_tokenizer().token(live->input.ids[i]));
        written.erase(0, std::min(written.find_first_not_of(' '), written.size()));
        if (ImGui::Checkbox(tr(st.lang, Str::LiveTranslate), &ms.translate)) {
            if (!ms.translate && live) ms.text = written;  // edit what the decoder wrote
            model_input_changed(st);
        }
        probe(st, "model.translate");
        tooltip(tr(st.lang, Str::LiveTranslateTip));
        text_box(Str::LiveTarget, "model.text", ms.translate ? &written : &ms.text, !ms.translate);
        token_chips(st.lang, tokens_of(1), pal, sc);
    } else {
        text_box(Str::LiveText, "model.text", &ms.text, true);
        token_chips(st.lang, tokens_of(0), pal, sc);
    }

    if (live && !live->top.empty()) {  // the LM head's likeliest next tokens
        section(tr(st.lang, Str::NextTokens));
        const float w = ImGui::GetContentRegionAvail().x, bar_w = w * 0.45f;
        for (size_t i = 0; i < live->top.size(); ++i) {
            const NextToken& t = live->top[i];
            const ImVec2 p = ImGui::GetCursorScreenPos();
            const float h = ImGui::GetTextLineHeight();
            ImDrawList* dl = ImGui::GetWindowDrawList();
            dl->AddRectFilled(ImVec2(p.x, p.y + 2.0f * sc), ImVec2(p.x + bar_w * std::clamp(t.p, 0.0f, 1.0f), p.y + h - 2.0f * sc),
                              ImGui::GetColorU32(ImGuiCol_PlotHistogram));
            char pct[16];
            std::snprintf(pct, sizeof pct, "%.1f%%", static_cast<double>(t.p) * 100.0);
            ImGui::SetCursorScreenPos(ImVec2(p.x + bar_w + 6.0f * sc, p.y));
            ImGui::Text("%-7s \"%s\"", pct, display_token(t.token).c_str());
            probe(st, ("model.top." + std::to_string(i)).c_str());
        }
    }
}

// [SECTION] Progress -------------------------------------------------------------------------

void draw_live_progress(ViewContext& ctx) {
    AppState& st = ctx.state;
    const ModelSession& ms = st.model;
    char text[200];
    float fraction = 0.0f;
    if (ms.reading) {
        fraction = ms.reading->total > 0 ? static_cast<float>(static_cast<double>(ms.reading->done) / static_cast<double>(ms.reading->total)) : 0.0f;
        std::snprintf(text, sizeof text, tr(st.lang, Str::LiveReading), ms.reading->folder.c_str(),
                      megabytes(static_cast<double>(ms.reading->done)).c_str(), megabytes(static_cast<double>(ms.reading->total)).c_str());
    } else if (ms.loading) {
        fraction = ms.loading->progress();
        std::snprintf(text, sizeof text, tr(st.lang, Str::LiveLoading), ms.loading_name.c_str(), static_cast<int>(fraction * 100.0f));
    } else if (ms.job) {
        fraction = ms.job_progress;
        std::snprintf(text, sizeof text, tr(st.lang, Str::LiveRunning), ms.model->name.c_str(), static_cast<int>(fraction * 100.0f));
    } else {
        return;
    }
    ImGui::ProgressBar(fraction, ImVec2(-FLT_MIN, 0.0f), text);
    probe(st, "model.progress");
}

}  // namespace attn
