// live_panel.cpp: see live_panel.hpp.
//
// [SECTION] Opening a model
// [SECTION] The model's section
// [SECTION] Experiments
// [SECTION] Progress
#include "live_panel.hpp"
#include "text.hpp"

#include "hub.hpp"
#include "model_view.hpp"
#include "panels.hpp"
#include "platform.hpp"
#include "colormaps.hpp"
#include "controls.hpp"
#include "import_state.hpp"
#include "why.hpp"

#include <imgui.h>
#include <misc/cpp/imgui_stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

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

void draw_experiments(ViewContext& ctx);
void draw_generation(ViewContext& ctx);

// Chat: the switch (a model without a template: off, and why), and when on the conversation's
// turns in place of the text (a role and its content each; add, remove), then the text the
// template wrote. Every edit runs the model again.
void draw_chat(ViewContext& ctx) {
    AppState& st = ctx.state;
    ModelSession& ms = st.model;
    const LoadedModel& m = *ms.model;
    const float s = ctx.scale;
    bool on = ms.chat.on && m.chat.has_value(), changed = false;
    ImGui::BeginDisabled(!m.chat);
    if (ImGui::Checkbox(tr(st.lang, Str::ChatToggle), &on)) {
        ms.chat.on = on;
        if (on && ms.chat.turns.empty()) ms.chat.turns = {{"user", ms.text}};
        changed = true;
    }
    ImGui::EndDisabled();
    probe(st, "model.chat");
    char tip[512];
    if (m.chat) std::snprintf(tip, sizeof tip, tr(st.lang, Str::ChatToggleTip), m.chat->file.c_str());
    else std::snprintf(tip, sizeof tip, "%s", m.chat_problem.empty() ? tr(st.lang, Str::ChatNone) : m.chat_problem.c_str());
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) {
        ImGui::BeginTooltip();
        ImGui::PushTextWrapPos(ImGui::GetFontSize() * 26.0f);
        ImGui::TextUnformatted(tip);
        ImGui::PopTextWrapPos();
        ImGui::EndTooltip();
    }
    if (on) {
        constexpr const char* kRoles[] = {"system", "user", "assistant"};
        std::vector<ChatTurn>& turns = ms.chat.turns;
        int remove = -1;
        for (std::size_t i = 0; i < turns.size(); ++i) {
            ImGui::PushID(static_cast<int>(i));
            const std::string id = "model.chat." + std::to_string(i);
            ImGui::SetNextItemWidth(120.0f * s);
            if (ImGui::BeginCombo("##role", turns[i].role.c_str())) {
                for (const char* r : kRoles)
                    if (ImGui::Selectable(r, turns[i].role == r)) turns[i].role = r, changed = true;
                ImGui::EndCombo();
            }
            probe(st, (id + ".role").c_str());
            ImGui::SameLine();
            if (small_button(st, "\xc3\x97")) remove = static_cast<int>(i);  // ×
            probe(st, (id + ".remove").c_str());
            tooltip(tr(st.lang, Str::ChatRemove));
            if (ImGui::InputTextMultiline("##content", &turns[i].content, ImVec2(-FLT_MIN, ImGui::GetTextLineHeight() * 3.4f))) changed = true;
            mark_text_box(st);
            probe(st, (id + ".content").c_str());
            ImGui::PopID();
        }
        if (remove >= 0) turns.erase(turns.begin() + remove), changed = true;
        if (small_button(st, tr(st.lang, Str::ChatAddTurn))) {
            turns.push_back({!turns.empty() && turns.back().role == "user" ? "assistant" : "user", ""});
            changed = true;
        }
        probe(st, "model.chat.add");
        if (!ms.chat.prompt.empty() && ImGui::TreeNode(tr(st.lang, Str::ChatPrompt))) {
            ImGui::PushTextWrapPos(0.0f);
            ImGui::TextDisabled("%s", ms.chat.prompt.c_str());
            ImGui::PopTextWrapPos();
            ImGui::TreePop();
        }
        probe(st, "model.chat.prompt");
    }
    if (changed) {
        clear_generation(st);  // another conversation: the generated tokens no longer follow it
        model_input_changed(st);
    }
}

}  // namespace

// [SECTION] Opening a model ------------------------------------------------------------------

void open_live_model_control(ViewContext& ctx) {
    open_control(ctx, {.popup = "Open a model", .button = Str::OpenLiveModel, .tip = Str::OpenLiveModelTip, .field = Str::FolderPath,
                       .probe = "model", .path = &ctx.panels.model_folder, .browser_pick = platform::open_folder_picker,
                       .open = open_model_folder});
    const ImGuiStyle& style = ImGui::GetStyle();
    const float hub_w = ImGui::CalcTextSize(tr(ctx.state.lang, Str::OpenHub)).x + 2.0f * style.FramePadding.x;
    if (ImGui::GetContentRegionAvail().x - ImGui::GetItemRectSize().x - style.ItemSpacing.x >= hub_w) ImGui::SameLine();
    open_hub_control(ctx);
}

// The Hub dialog (SPEC.md §6): an id typed or picked among small models (their sizes from their
// repos' listings, in the page), the Hub's address (the page's setting; desktop: $HF_ENDPOINT),
// and the models already downloaded (the page's storage, with Remove; desktop: the cache).
void open_hub_control(ViewContext& ctx) {
    AppState& st = ctx.state;
    ModelSession& ms = st.model;
    PanelState& panels = ctx.panels;
    const float sc = ctx.scale;
    const char* popup = "Open from Hugging Face";
    if (small_button(st, tr(st.lang, Str::OpenHub))) {
        std::string ids;
        for (const char* id : kHubSuggestions) ids += std::string(ids.empty() ? "" : "\n") + id;
        ms.hub_sizes.clear();  // asked again: a size from before (online then) is not this answer
        platform::hub_dialog_opened(ids.c_str());
        if (!platform::kBrowser) {  // desktop: what the cache holds (huggingface_hub's, shared with transformers)
            ms.hub_stored.clear();
            for (const hub::CachedModel& m : hub::cached_models(hub::environment()))
                ms.hub_stored.push_back({m.id.shown(), "", static_cast<double>(m.bytes)});
        }
        panels.hub_address = platform::hub_endpoint();
        ImGui::OpenPopup(popup);
    }
    probe(st, "hub.open");
    const ImGuiIO& io = ImGui::GetIO();
    ImGui::SetNextWindowPos(ImVec2(io.DisplaySize.x * 0.5f, io.DisplaySize.y * 0.45f), ImGuiCond_Always, ImVec2(0.5f, 0.5f));
    ImGui::SetNextWindowSize(ImVec2(std::min(600.0f * sc, io.DisplaySize.x - 20.0f * sc), 0.0f));
    if (!ImGui::BeginPopupModal(popup, nullptr, ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoMove)) return;
    ImGui::TextWrapped("%s", tr(st.lang, platform::kBrowser ? Str::HubIntroPage : Str::HubIntroDesktop));
    ImGui::TextUnformatted(tr(st.lang, Str::HubId));
    ImGui::SetNextItemWidth(-FLT_MIN);
    if (ImGui::IsWindowAppearing()) ImGui::SetKeyboardFocusHere();
    bool open = ImGui::InputText("##hub-id", &panels.hub_id, ImGuiInputTextFlags_EnterReturnsTrue);
    mark_text_box(st);
    probe(st, "hub.id");
    const std::optional<hub::RepoId> id = hub::parse_repo_id(panels.hub_id);
    ImGui::BeginDisabled(!id);
    open |= ImGui::Button(tr(st.lang, Str::OpenFile));
    ImGui::EndDisabled();
    probe(st, "hub.id.open");
    ImGui::SameLine();
    const bool close = ImGui::Button(tr(st.lang, Str::JsonClose)) || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape));
    probe(st, "hub.close");
    if (!panels.hub_id.empty() && !id) {
        ImGui::SameLine();
        ImGui::TextDisabled("%s", tr(st.lang, Str::HubBadId));
    }

    section(tr(st.lang, Str::HubSuggested));
    const bool offline = std::any_of(ms.hub_sizes.begin(), ms.hub_sizes.end(), [](const auto& s) { return s.second == -2.0; });
    if (offline) {  // once, rather than a "?" on every line
        ImGui::TextDisabled("%s", tr(st.lang, Str::HubOffline));
        probe(st, "hub.offline");
    }
    const float size_x = ImGui::GetContentRegionAvail().x - ImGui::CalcTextSize("0000.0 MB").x;
    for (const char* suggestion : kHubSuggestions) {
        if (ImGui::Selectable(suggestion, panels.hub_id == suggestion, ImGuiSelectableFlags_AllowDoubleClick | ImGuiSelectableFlags_DontClosePopups)) {
            panels.hub_id = suggestion;
            open |= ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left);
        }
        probe(st, ("hub.suggestion." + std::string(suggestion)).c_str());
        if (auto it = ms.hub_sizes.find(suggestion); it != ms.hub_sizes.end() && it->second != -2.0) {
            ImGui::SameLine(size_x);
            ImGui::TextDisabled("%s", it->second >= 0 ? byte_size(it->second).c_str() : tr(st.lang, Str::HubNoSize));
        }
    }

    section(tr(st.lang, Str::HubAddress));
    ImGui::SetNextItemWidth(-FLT_MIN);
    ImGui::BeginDisabled(!platform::kBrowser);
    if (ImGui::InputText("##hub-address", &panels.hub_address)) platform::set_hub_endpoint(panels.hub_address.c_str());
    ImGui::EndDisabled();
    mark_text_box(st);
    probe(st, "hub.address");

    section(tr(st.lang, Str::HubStored));
    if (ms.hub_stored.empty()) ImGui::TextDisabled("%s", tr(st.lang, Str::HubNoneStored));
    for (const ModelSession::StoredHubModel& m : ms.hub_stored) {
        ImGui::PushID(static_cast<int>(&m - ms.hub_stored.data()));
        const std::string label = m.id + (m.commit.empty() ? "" : " @" + m.commit.substr(0, 7));
        const float size_at = size_x - (platform::kBrowser ? ImGui::CalcTextSize(tr(st.lang, Str::HubRemove)).x + 16.0f * sc : 0.0f);
        // (as wide as its column: the Remove button beside it takes its own clicks)
        if (ImGui::Selectable(label.c_str(), false, ImGuiSelectableFlags_DontClosePopups, ImVec2(size_at - ImGui::GetCursorPosX() - 8.0f * sc, 0.0f)))
            panels.hub_id = m.id;
        ImGui::SameLine(size_at);
        ImGui::TextDisabled("%s", byte_size(m.bytes).c_str());
        if (platform::kBrowser) {
            ImGui::SameLine();
            if (small_button(st, tr(st.lang, Str::HubRemove))) platform::remove_stored_hub(m.id.c_str(), m.commit.c_str());
            probe(st, ("hub.remove." + m.id).c_str());
        }
        ImGui::PopID();
    }
    if (open && id) {
        open_hub_model(st, panels.hub_id);
        ImGui::CloseCurrentPopup();
    } else if (close) {
        ImGui::CloseCurrentPopup();
    }
    ImGui::EndPopup();
}

// [SECTION] The model's section --------------------------------------------------------------

namespace {

constexpr double kSurprisalScale = 16.0;  // bits at which the shading is full

// Each token's shade, 0 … 1: its probability, or its surprisal over kSurprisalScale; NaN for the
// first token (no prediction).
std::vector<float> token_shades(const TokenProbs& probs, TokenShade how) {
    std::vector<float> shade(static_cast<std::size_t>(probs.positions()), std::numeric_limits<float>::quiet_NaN());
    for (int t = 1; t < probs.positions(); ++t) {
        const float p = probs.at[static_cast<std::size_t>(t)].target_p;
        shade[static_cast<std::size_t>(t)] =
            how == TokenShade::Probability ? p : static_cast<float>(std::min(surprisal_bits(p) / kSurprisalScale, 1.0));
    }
    return shade;
}

// Colour tokens by: nothing, probability, surprisal (a rerun computes them).
void probs_choice(AppState& st) {
    ImGui::TextUnformatted(tr(st.lang, Str::ProbsLabel));
    tooltip(tr(st.lang, Str::ProbsTip));
    int choice = static_cast<int>(st.model.experiment.probs);
    const Str names[] = {Str::ProbsOff, Str::ProbsP, Str::ProbsSurprisal};
    const char* probes[] = {"model.probs.off", "model.probs.p", "model.probs.surprisal"};
    const ImGuiStyle& style = ImGui::GetStyle();
    for (int i = 0; i < 3; ++i) {
        same_line_if_fits(ImGui::GetFrameHeight() + style.ItemInnerSpacing.x + ImGui::CalcTextSize(tr(st.lang, names[i])).x);
        if (ImGui::RadioButton(tr(st.lang, names[i]), &choice, i)) {
            st.model.experiment.probs = static_cast<TokenShade>(choice);
            model_input_changed(st);
        }
        probe(st, probes[i]);
        tooltip(tr(st.lang, Str::ProbsTip));
    }
}

// Under the chips: the shading's scale, from the token colour to the full one.
void probs_legend(AppState& st, TokenShade how, ImU32 full, float sc) {
    const Palette& pal = palette(st.theme);
    const float h = ImGui::GetTextLineHeight(), w = 72.0f * sc;
    const ImVec2 p = ImGui::GetCursorScreenPos();
    ImDrawList* dl = ImGui::GetWindowDrawList();
    dl->AddRectFilledMultiColor(ImVec2(p.x, p.y + h * 0.25f), ImVec2(p.x + w, p.y + h * 0.75f), pal.token_fill, full, full, pal.token_fill);
    dl->AddRect(ImVec2(p.x, p.y + h * 0.25f), ImVec2(p.x + w, p.y + h * 0.75f), pal.token_outline);
    ImGui::Dummy(ImVec2(w, h));
    probe(st, "model.probs.legend");
    ImGui::SameLine();
    ImGui::TextDisabled("%s", tr(st.lang, how == TokenShade::Probability ? Str::ProbsLegendP : Str::ProbsLegendSurprisal));
}

// A token's probability, surprisal and rank, and the likeliest tokens there (bars).
void probs_tooltip(const AppState& st, const TokenProbs& probs, int t, const std::vector<std::string>& tokens, const Tokenizer& tok) {
    ImGui::BeginTooltip();
    ImGui::PushTextWrapPos(ImGui::GetFontSize() * 26.0f);
    if (t == 0) {
        ImGui::TextUnformatted(tr(st.lang, Str::ProbsFirst));
    } else {
        const LensCell& c = probs.at[static_cast<std::size_t>(t)];
        ImGui::Text(tr(st.lang, Str::ProbsToken), token_text(tokens[static_cast<std::size_t>(t)]).c_str(), t + 1,
                    100.0 * static_cast<double>(c.target_p), surprisal_bits(c.target_p), c.target_rank);
        ImGui::TextDisabled("%s", tr(st.lang, Str::ProbsLikeliest));
        const float bar_w = ImGui::GetFontSize() * 6.0f, h = ImGui::GetTextLineHeight();
        for (const TokenP& k : c.top) {
            const ImVec2 p = ImGui::GetCursorScreenPos();
            ImGui::GetWindowDrawList()->AddRectFilled(ImVec2(p.x, p.y + 2.0f), ImVec2(p.x + bar_w * std::clamp(k.p, 0.0f, 1.0f), p.y + h - 2.0f),
                                                      ImGui::GetColorU32(ImGuiCol_PlotHistogram));
            ImGui::SetCursorScreenPos(ImVec2(p.x + bar_w + 6.0f, p.y));
            ImGui::Text("%6.2f%%  \"%s\"%s", 100.0 * static_cast<double>(k.p), token_text(display_token(tok.token(k.id))).c_str(),
                        k.id == c.target ? "  \xe2\x97\x80" : "");
        }
    }
    ImGui::PopTextWrapPos();
    ImGui::EndTooltip();
}

}  // namespace

// The likeliest next tokens as bars with their probabilities; `picked` (an id, or -1) marked as
// the generation's choice.
static void next_token_bars(AppState& st, const std::vector<NextToken>& top, int picked, float sc) {
    const Palette& pal = palette(st.theme);
    const float w = ImGui::GetContentRegionAvail().x, bar_w = w * 0.45f;
    for (size_t i = 0; i < top.size(); ++i) {
        const NextToken& t = top[i];
        const ImVec2 p = ImGui::GetCursorScreenPos();
        const float h = ImGui::GetTextLineHeight();
        ImDrawList* dl = ImGui::GetWindowDrawList();
        dl->AddRectFilled(ImVec2(p.x, p.y + 2.0f * sc), ImVec2(p.x + bar_w * std::clamp(t.p, 0.0f, 1.0f), p.y + h - 2.0f * sc),
                          ImGui::GetColorU32(ImGuiCol_PlotHistogram));
        char pct[16];
        std::snprintf(pct, sizeof pct, "%.1f%%", static_cast<double>(t.p) * 100.0);
        ImGui::SetCursorScreenPos(ImVec2(p.x + bar_w + 6.0f * sc, p.y));
        ImGui::Text("%-7s \"%s\"", pct, token_text(display_token(t.token)).c_str());
        probe(st, ("model.top." + std::to_string(i)).c_str());
        if (t.id == picked) {
            ImGui::SameLine();
            ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(pal.token_pinned), "\xe2\x97\x80 %s", tr(st.lang, Str::GenPicked));
        }
    }
}

namespace {

// The heads knocked out (a live model's experiment, or a served model's), Restore all, and
// whether a click in the model view knocks one out.
void knocked_out_line(ViewContext& ctx) {
    AppState& st = ctx.state;
    const bool served = st.served.active();
    std::string& knockout = served ? st.served.knockout : st.model.experiment.knockout;
    if (knocked_heads(st).empty()) {
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
        ImGui::TextWrapped("%s", tr(st.lang, Str::KnockedNone));
        ImGui::PopStyleColor();
    } else {
        char line[256];
        std::snprintf(line, sizeof line, tr(st.lang, Str::KnockedOut), knockout.c_str());
        ImGui::TextWrapped("%s", line);
        probe(st, "model.knocked");
        if (small_button(st, tr(st.lang, Str::RestoreAll))) {
            knockout.clear();
            if (served) served_input_changed(st);
            else model_input_changed(st);
        }
        probe(st, "model.restore");
    }
    ImGui::Checkbox(tr(st.lang, Str::ClickKnocks), &ctx.panels.click_knocks_out);
    probe(st, "model.click_knocks");
}

}  // namespace

// A model PyTorch runs elsewhere (served_state.hpp): what and where, its text, the next tokens.
void draw_served_controls(ViewContext& ctx) {
    AppState& st = ctx.state;
    ServedSession& s = st.served;
    const Palette& pal = palette(st.theme);
    section(tr(st.lang, Str::SectionServed));
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ImGui::TextWrapped("%s", served_summary(st).c_str());
    ImGui::PopStyleColor();
    probe(st, "served.summary");
    if (!s.error.empty()) {
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(pal.error));
        ImGui::TextWrapped("\xe2\x9a\xa0 %s", s.error.c_str());
        ImGui::PopStyleColor();
        probe(st, "served.error");
    }
    ImGui::TextUnformatted(tr(st.lang, Str::LiveText));
    if (ImGui::InputTextMultiline("##served.text", &s.text, ImVec2(-FLT_MIN, ImGui::GetTextLineHeight() * 4.4f))) served_input_changed(st);
    mark_text_box(st);
    probe(st, "served.text");
    if (s.run > 0) {
        ImGui::TextDisabled(tr(st.lang, Str::ServedRun), s.tokens, s.run);
        if (s.waiting != 0 && s.asked != ServedAsk::Thumbnails && s.asked != ServedAsk::Layer) {
            ImGui::SameLine();
            ImGui::TextDisabled("%s", tr(st.lang, Str::ServedBusy));
        }
    }
    // A long text's maps on their way (layers counted from 1, as the views name them).
    if (s.asked == ServedAsk::Thumbnails && s.heads > 0) {
        const int done = static_cast<int>(s.thumbnails.size()) / s.heads;
        ImGui::TextDisabled(tr(st.lang, Str::ServedThumbnails), done + 1, s.layers);
        ImGui::ProgressBar(static_cast<float>(done) / static_cast<float>(std::max(s.layers, 1)), ImVec2(-FLT_MIN, 0), "");
    } else if (s.asked == ServedAsk::Layer || s.reading) {
        ImGui::TextDisabled(tr(st.lang, Str::ServedLayer), s.asked_layer + 1);
        if (s.reading) ImGui::ProgressBar(served_reading_progress(s), ImVec2(-FLT_MIN, 0), "");  // into the block
    }
    if (!s.top.empty()) {
        section(tr(st.lang, Str::NextTokens));
        next_token_bars(st, s.top, -1, ctx.scale);
    }
    // Generate: the server continues the text (greedy), which then runs as typed text does.
    section(tr(st.lang, Str::SectionGenerate));
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted(tr(st.lang, Str::GenTokens));
    ImGui::SameLine();
    ImGui::SetNextItemWidth(-FLT_MIN);
    ImGui::SliderInt("##served.gen.tokens", &s.generate_tokens, 1, 64);
    probe(st, "served.gen.tokens");
    ImGui::BeginDisabled(!s.connected() || s.waiting != 0);
    if (ImGui::Button(tr(st.lang, Str::GenButton))) served_generate(st);
    ImGui::EndDisabled();
    probe(st, "served.generate");
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ImGui::TextWrapped("%s", tr(st.lang, Str::ServedGreedy));  // a phone's panel is narrow: its own line
    ImGui::PopStyleColor();
    section(tr(st.lang, Str::SectionExperiments));
    knocked_out_line(ctx);
}

void draw_live_controls(ViewContext& ctx) {
    AppState& st = ctx.state;
    ModelSession& ms = st.model;
    const float sc = ctx.scale;
    const Palette& pal = palette(st.theme);
    const LoadedModel& m = *ms.model;
    section(tr(st.lang, Str::SectionLive));
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    const LiveRun* live = st.figure.live.get();
    ImGui::TextWrapped("%s", m.summary(shown_tokens(st)).c_str());
    ImGui::PopStyleColor();
    probe(st, "model.summary");
    if (!ms.hub.empty() && ms.hub_unstored == ms.hub) {  // the page's storage was full
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(pal.error));
        ImGui::TextWrapped("%s", tr(st.lang, Str::HubStorageFull));
        ImGui::PopStyleColor();
        probe(st, "model.unstored");
    }
    if (small_button(st, tr(st.lang, Str::CloseModel))) {
        close_model(st);  // `m` is gone: nothing more of this section
        probe(st, "model.close");
        return;
    }
    probe(st, "model.close");
    // The threads a run uses, where the build has them (natively; the page's threaded module)
    if (kernels::Pool::threads_for(2) > 1 && ms.most_threads > 1) {
        int threads = ms.threads_used();
        ImGui::AlignTextToFramePadding();
        ImGui::TextUnformatted(tr(st.lang, Str::LiveThreads));
        ImGui::SameLine();
        // The count written plainly, − and + beside it (a slider's handle sat over its value); a new
        // count runs the model again, so "last run" is that count's time.
        ImGui::SetNextItemWidth(7.0f * ImGui::GetFontSize());
        if (ImGui::InputInt("##model.threads", &threads, 1, 1, ImGuiInputTextFlags_EnterReturnsTrue) &&
            std::clamp(threads, 1, ms.most_threads) != ms.threads_used()) {
            set_model_threads(ms, threads);
            model_input_changed(st);
        }
        probe(st, "model.threads");
        char tip[320];
        std::snprintf(tip, sizeof tip, tr(st.lang, Str::LiveThreadsTip), ms.most_threads);
        tooltip(tip);
        if (ms.last_run_ms > 0) {
            ImGui::SameLine();
            ImGui::TextDisabled(tr(st.lang, Str::LiveLastRun), ms.last_run_ms);
            probe(st, "model.last-run");
        }
    }

    auto tokens_of = [&](int stack) {
        std::vector<std::string> out;
        if (live && stack < st.figure.stack_count())
            for (const std::string& t : st.figure.stack(stack).queries) out.push_back(display_token(t));
        return out;
    };
    // The tokens hidden by the experiment can be: chips that hide and show them on a click. The
    // first stack's are shaded by their probabilities, once read (a decoder-only model).
    auto hideable_chips = [&](int stack) {
        const std::vector<std::string> tokens = tokens_of(stack);
        std::vector<bool> hidden(tokens.size(), false);
        for (int j : ms.experiment.hidden)
            if (j >= 0 && static_cast<size_t>(j) < hidden.size()) hidden[static_cast<size_t>(j)] = true;
        TokenChips chips{.hidden = &hidden};
        std::vector<bool> images;  // a vision-language model's image tokens: a chip per run
        if (m.config().vision_language() && live && live->model == ms.model) {
            for (int id : live->input.ids) images.push_back(id == m.config().image_token_id);
            if (images.size() == tokens.size()) chips.collapsed = &images;
        }
        const TokenProbs* probs = stack == 0 && ms.experiment.probs != TokenShade::Off ? st.figure.probs.get() : nullptr;
        std::vector<float> shade;
        std::vector<ProbeRect> rects;
        if (probs && probs->positions() == static_cast<int>(tokens.size())) {
            shade = token_shades(*probs, ms.experiment.probs);
            chips.shade = &shade, chips.rects = &rects;
            // the grids' colours, lighter on the dark theme (its chips are dark)
            chips.shade_colour = mix_color(ms.experiment.probs == TokenShade::Probability ? kPositiveColor : kNegativeColor, IM_COL32_WHITE,
                                           st.theme == Theme::Dark ? 0.2f : 0.0f);
        } else {
            probs = nullptr;
        }
        const ChipHit hit = token_chips(st.lang, tokens, pal, sc, chips);
        probe(st, "model.tokens");
        if (hit.clicked >= 0) toggle_hidden(st, hit.clicked);
        if (!probs) return;
        for (std::size_t i = 0; i < rects.size(); ++i) st.probe["model.token." + std::to_string(i)] = rects[i];
        probs_legend(st, ms.experiment.probs, chips.shade_colour, sc);
        if (hit.hovered >= 0) probs_tooltip(st, *probs, hit.hovered, tokens, m.decoder_tokenizer());
    };
    auto text_box = [&](Str label, const char* id, std::string* text, bool enabled) {
        ImGui::TextUnformatted(tr(st.lang, label));
        ImGui::SetNextItemWidth(-FLT_MIN);
        ImGui::BeginDisabled(!enabled);
        if (ImGui::InputText((std::string("##") + id).c_str(), text)) {
            clear_generation(st);  // an edited prompt: the generated tokens no longer follow it
            model_input_changed(st);
        }
        mark_text_box(st);
        ImGui::EndDisabled();
        probe(st, id);
    };
    // The picture a vision model runs on (or a vision-language model with its text): open one, the
    // model's examples, what it is and how the model sees it
    const auto picture_controls = [&] {
        ImGui::TextUnformatted(tr(st.lang, Str::LivePicture));
        open_control(ctx, {.popup = "Open a picture", .button = Str::OpenPicture, .tip = Str::OpenPictureTip, .field = Str::PicturePath,
                           .probe = "picture", .path = &ctx.panels.picture_path, .browser_pick = platform::open_file_picker,
                           .open = open_file_path});
        if (!ms.examples.empty()) {  // the model's own pictures (tiny-vit's example-D.png): a button each, named D
            ImGui::TextDisabled("%s", tr(st.lang, Str::PictureExamples));
            const float right = ImGui::GetCursorScreenPos().x + ImGui::GetContentRegionAvail().x;
            bool first = true;
            for (const auto& [file, bytes] : ms.examples) {
                const std::string label = file.substr(8, file.size() - 12);  // example-D.png → D
                const float w = ImGui::CalcTextSize(label.c_str()).x + 2 * ImGui::GetStyle().FramePadding.x;
                if (!first && ImGui::GetItemRectMax().x + ImGui::GetStyle().ItemSpacing.x + w <= right) ImGui::SameLine();
                first = false;
                const bool shown = ms.picture && ms.picture->name == file;
                if (shown) ImGui::PushStyleColor(ImGuiCol_Button, ImGui::GetStyleColorVec4(ImGuiCol_ButtonActive));
                if (ImGui::Button((label + "##" + file).c_str())) set_example_picture(st, file);
                if (shown) ImGui::PopStyleColor();
                tooltip(printf_string(tr(st.lang, Str::PictureExampleTip), file.c_str()).c_str());
                probe(st, ("picture." + file).c_str());
            }
        }
        if (!ms.picture) {
            ImGui::PushTextWrapPos(0.0f);
            ImGui::TextDisabled("%s", tr(st.lang, Str::PictureNone));
            ImGui::PopTextWrapPos();
        } else {
            ImGui::PushTextWrapPos(0.0f);  // a path typed on the desktop can be long
            ImGui::Text(tr(st.lang, Str::PictureShown), ms.picture->name.c_str(), ms.picture->image.width, ms.picture->image.height);
            if (live && live->picture && live->input.patch_rows > 0) {
                const int rows = live->input.patch_rows, cols = static_cast<int>(live->input.patches.rows()) / rows;
                ImGui::TextDisabled(tr(st.lang, Str::PictureSeen), live->picture->width, live->picture->height, rows, cols, m.config().patch_size);
            } else if (live && live->picture && m.config().vision_language()) {  // its views and their tokens in the text
                const int side = m.config().vision_tower->image_size, views = live->tile_rows * live->tile_cols + 1;
                if (live->global_picture) ImGui::TextDisabled(tr(st.lang, Str::PictureTiles), live->tile_rows, live->tile_cols, side, views,
                                                              views * m.config().image_seq_len());
                else if (m.config().connector == ModelConfig::Connector::Merge)  // qwen2_5_vl: the picture's own size
                    ImGui::TextDisabled(tr(st.lang, Str::PictureWhole), live->picture->width, live->picture->height,
                                        static_cast<int>(std::count(live->input.ids.begin(), live->input.ids.end(), m.config().image_token_id)));
                else ImGui::TextDisabled(tr(st.lang, Str::PictureWhole), side, side, m.config().image_seq_len());
            }
            ImGui::PopTextWrapPos();
        }
        probe(st, "model.picture");
    };
    if (m.config().encoder_decoder()) {
        text_box(Str::LiveSource, "model.source", &ms.source, true);
        hideable_chips(0);
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
    } else if (m.config().vision()) {  // a picture instead of a text
        picture_controls();
    } else {
        if (m.config().vision_language()) picture_controls();  // a picture and a text
        if (m.config().decoder_only()) draw_chat(ctx);
        if (!ms.chat.on || !m.chat) text_box(Str::LiveText, "model.text", &ms.text, true);
        if (m.config().decoder_only()) probs_choice(st);
        hideable_chips(0);
        ImGui::TextUnformatted(tr(st.lang, Str::CompareWith));
        tooltip(tr(st.lang, Str::CompareWithTip));
        ImGui::SetNextItemWidth(-FLT_MIN);
        if (ImGui::InputText("##model.compare", &ms.compare)) model_input_changed(st);
        mark_text_box(st);
        probe(st, "model.compare");
    }

    // Generating: the token the shown step picked (the scrubber's step, before the last).
    const ModelGeneration& g = ms.generation;
    const int picked = g.step < g.generated() ? g.ids[static_cast<size_t>(g.prompt + g.step)] : -1;
    if (live && !live->top.empty()) {  // the LM head's likeliest next tokens
        section(tr(st.lang, m.config().vision() ? Str::Labels : Str::NextTokens));
        next_token_bars(st, live->top, picked, sc);
    }
    if (m.config().decoder_only()) draw_generation(ctx);
    draw_experiments(ctx);
}

// [SECTION] Experiments ----------------------------------------------------------------------

namespace {

// Target [the prediction] against [none]: attribution's and patching's tokens (one token, or
// #ID), under the first of the two shown; an edit reruns the model.
void why_token_inputs(AppState& st, bool patching_only) {
    ModelExperiment& ex = st.model.experiment;
    const float label_w = std::max(ImGui::CalcTextSize(tr(st.lang, Str::WhyTarget)).x, ImGui::CalcTextSize(tr(st.lang, Str::WhyContrast)).x) +
                          ImGui::GetStyle().ItemSpacing.x;
    auto field = [&](Str label, const char* id, Str hint, std::string* text) {  // a row each: the hints whole
        const float x0 = ImGui::GetCursorPosX();
        ImGui::AlignTextToFramePadding();
        ImGui::TextUnformatted(tr(st.lang, label));
        ImGui::SameLine(x0 + label_w);
        ImGui::SetNextItemWidth(-FLT_MIN);
        if (ImGui::InputTextWithHint(id, tr(st.lang, hint), text)) model_input_changed(st);
        mark_text_box(st);
        probe(st, id + 2);
        tooltip(tr(st.lang, Str::WhyTokensTip));
    };
    field(Str::WhyTarget, "##model.target", Str::WhyPrediction, &ex.target);
    field(Str::WhyContrast, "##model.contrast", patching_only ? Str::WhyComparePrediction : Str::WhyNone, &ex.contrast);
}

void draw_generation(ViewContext& ctx) {
    AppState& st = ctx.state;
    ModelSession& ms = st.model;
    ModelGeneration& g = ms.generation;
    const float sc = ctx.scale;
    section(tr(st.lang, Str::SectionGenerate));
    float label_x = 0.0f;  // the widest label, then the fields
    for (Str label : {Str::GenTokens, Str::GenTemperature, Str::GenTopK, Str::GenSeed})
        label_x = std::max(label_x, ImGui::CalcTextSize(tr(st.lang, label)).x);
    label_x += ImGui::GetStyle().ItemSpacing.x + 8.0f * sc;
    auto row = [&](Str label, Str tip) {
        ImGui::AlignTextToFramePadding();
        ImGui::TextUnformatted(tr(st.lang, label));
        if (tip != Str::Count) tooltip(tr(st.lang, tip));
        ImGui::SameLine(label_x);
        ImGui::SetNextItemWidth(-FLT_MIN);
    };
    row(Str::GenTokens, Str::Count);
    ImGui::SliderInt("##gen.tokens", &g.tokens, 1, 64);
    probe(st, "model.gen.tokens");
    row(Str::GenTemperature, Str::GenTemperatureTip);
    ImGui::SliderFloat("##gen.temperature", &g.sampling.temperature, 0.0f, 2.0f, "%.2f");
    probe(st, "model.gen.temperature");
    row(Str::GenTopK, Str::GenTopKTip);
    ImGui::InputInt("##gen.topk", &g.sampling.top_k);
    g.sampling.top_k = std::clamp(g.sampling.top_k, 0, 100000);
    row(Str::GenSeed, Str::Count);
    int seed = static_cast<int>(g.sampling.seed & 0x7fffffff);
    if (ImGui::InputInt("##gen.seed", &seed)) g.sampling.seed = static_cast<std::uint64_t>(std::max(seed, 0));
    const bool mean = ms.experiment.ablation == Ablation::Mean && !knocked_heads(st).empty();
    ImGui::BeginDisabled(mean || ms.job != nullptr);
    if (ImGui::Button(tr(st.lang, Str::GenButton))) request_generation(st);
    ImGui::EndDisabled();
    probe(st, "model.gen.button");
    if (mean) tooltip(tr(st.lang, Str::GenMeanRefused));
    if (g.generated() > 0) {
        ImGui::SameLine();
        if (ImGui::Button(tr(st.lang, Str::GenClear))) clear_generation(st);
        probe(st, "model.gen.clear");
        // The scrubber: step s shows the prompt and s generated tokens.
        char format[64];
        std::snprintf(format, sizeof format, tr(st.lang, Str::GenStep), g.step, g.generated());
        int step = g.step;
        ImGui::SetNextItemWidth(-FLT_MIN);
        if (ImGui::SliderInt("##gen.step", &step, 0, g.generated(), format)) show_generation_step(st, step);
        probe(st, "model.gen.step");
        const int n = g.prompt + g.step;  // tokens shown; the newest is the query this step computed
        char caption[256];
        std::snprintf(caption, sizeof caption, tr(st.lang, Str::GenStepCaption),
                      token_text(display_token(ms.model->tokenizer.token(g.ids[static_cast<size_t>(n - 1)]))).c_str(), n - 1);
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
        ImGui::TextWrapped("%s", caption);
        // its probability, where the tokens are coloured by theirs (the run's: temperature 1)
        if (const TokenProbs* probs = st.figure.probs.get(); probs && g.step > 0 && probs->positions() == n) {
            const LensCell& c = probs->at[static_cast<std::size_t>(n - 1)];
            std::snprintf(caption, sizeof caption, tr(st.lang, Str::GenStepProb),
                          token_text(display_token(ms.model->tokenizer.token(c.target))).c_str(), 100.0 * static_cast<double>(c.target_p), c.target_rank);
            ImGui::TextWrapped("%s", caption);
            probe(st, "model.gen.prob");
        }
        ImGui::PopStyleColor();
    }
}

void draw_experiments(ViewContext& ctx) {
    AppState& st = ctx.state;
    ModelSession& ms = st.model;
    ModelExperiment& ex = ms.experiment;
    const LoadedModel& m = *ms.model;
    section(tr(st.lang, Str::SectionExperiments));
    knocked_out_line(ctx);
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted(tr(st.lang, Str::AblationLabel));
    tooltip(tr(st.lang, Str::AblationTip));
    ImGui::SameLine();
    int mode = ex.ablation == Ablation::Mean ? 1 : 0;
    bool changed = ImGui::RadioButton(tr(st.lang, Str::AblationZero), &mode, 0);
    probe(st, "model.ablation.zero");
    ImGui::SameLine();
    changed |= ImGui::RadioButton(tr(st.lang, Str::AblationMean), &mode, 1);
    probe(st, "model.ablation.mean");
    if (changed) {
        ex.ablation = mode == 1 ? Ablation::Mean : Ablation::Zero;
        model_input_changed(st);
    }
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    if (!m.config().vision()) ImGui::TextWrapped("%s", tr(st.lang, Str::HideTokensHint));  // a picture's patches have no chips to click
    ImGui::PopStyleColor();
    const bool has_head = m.config().family != Family::Bert;
    ImGui::BeginDisabled(!has_head);
    if (ImGui::Checkbox(tr(st.lang, Str::HeadImportanceToggle), &ex.importance)) model_input_changed(st);
    ImGui::EndDisabled();
    probe(st, "model.importance");
    tooltip(tr(st.lang, has_head ? Str::HeadImportanceTip : Str::ImportanceNoHead));
    panel_why_grid(ctx, WhyKind::Importance);
    const bool stream = has_stream(m.config());
    ImGui::BeginDisabled(!stream);
    if (ImGui::Checkbox(tr(st.lang, Str::AttributionToggle), &ex.attribution)) model_input_changed(st);
    ImGui::EndDisabled();
    probe(st, "model.attribution");
    tooltip(tr(st.lang, stream ? Str::AttributionTip : Str::AttributionNoStream));
    if (stream && ex.attribution) why_token_inputs(st, false);
    panel_why_grid(ctx, WhyKind::Attribution);
    ImGui::BeginDisabled(!stream);
    if (ImGui::Checkbox(tr(st.lang, Str::LensToggle), &ex.lens)) model_input_changed(st);
    ImGui::EndDisabled();
    probe(st, "model.lens");
    tooltip(tr(st.lang, stream ? Str::LensTip : Str::AttributionNoStream));
    panel_why_grid(ctx, WhyKind::Lens);
    ImGui::BeginDisabled(!stream);
    if (ImGui::Checkbox(tr(st.lang, Str::PatchingToggle), &ex.patching)) model_input_changed(st);
    ImGui::EndDisabled();
    probe(st, "model.patching");
    tooltip(tr(st.lang, stream ? Str::PatchingTip : Str::AttributionNoStream));
    if (stream && ex.patching) {
        if (!ex.attribution) why_token_inputs(st, true);
        ImGui::AlignTextToFramePadding();
        ImGui::TextUnformatted(tr(st.lang, Str::PatchingCorrupted));
        ImGui::SameLine();
        ImGui::SetNextItemWidth(-FLT_MIN);
        if (ImGui::InputTextWithHint("##model.corrupted", tr(st.lang, Str::PatchingCorruptedHint), &ex.corrupted)) model_input_changed(st);
        mark_text_box(st);
        probe(st, "model.corrupted");
        tooltip(tr(st.lang, Str::PatchingCorruptedTip));
    }
    const LiveRun *live = st.figure.live.get(), *other = st.figure.compare.get();
    if (stream && ex.patching && ex.corrupted.empty() && live && (!other || other->input.ids.size() != live->input.ids.size())) {
        char line[200];
        if (other)
            std::snprintf(line, sizeof line, tr(st.lang, Str::PatchingLengths), static_cast<int>(live->input.ids.size()), static_cast<int>(other->input.ids.size()));
        else
            std::snprintf(line, sizeof line, "%s", tr(st.lang, Str::PatchingNeedsText));
        ImGui::TextWrapped("%s", line);
    }
    if (ex.patching && st.model.patching_stopped) ImGui::TextDisabled("%s", tr(st.lang, Str::PatchingStopped));
    if (ex.patching && st.figure.patching && live) {
        const Patching& p = *st.figure.patching;
        const Tokenizer& t = live->model->decoder_tokenizer();
        char line[240];
        if (p.same_prediction) {  // the contrast is this text's next likeliest
            std::snprintf(line, sizeof line, tr(st.lang, Str::PatchingSameTop), token_text(display_token(t.token(p.target))).c_str(),
                          token_text(display_token(t.token(p.contrast))).c_str());
            ImGui::TextWrapped("%s", line);
        } else {  // the tokens whose logit difference it is
            std::snprintf(line, sizeof line, tr(st.lang, Str::PatchingTokens), token_text(display_token(t.token(p.target))).c_str(),
                          token_text(display_token(t.token(p.contrast))).c_str());
            ImGui::TextDisabled("%s", line);
        }
        panel_why_grid(ctx, WhyKind::PatchingHeads);
        panel_why_grid(ctx, WhyKind::PatchingStream);
    }
}

}  // namespace

// [SECTION] Progress -------------------------------------------------------------------------

// The bar takes the work's progress at most every kProgressSeconds (at once in a new phase, or
// when it was not drawn the frame before). A frame whose only change would be the bar is then not
// drawn again (App::frame_unchanged), so between two steps of the bar a long run's frames cost
// the model's slices only. In a software WebGL (SwiftShader) each drawn frame is rasterized on
// the CPU: with the bar redrawn every frame, GPT-2 small took 2.6 s from an edit to its figure
// (docs/BENCHMARKS-HISTORY.md).
constexpr double kProgressSeconds = 0.25;

void draw_live_progress(ViewContext& ctx) {
    AppState& st = ctx.state;
    const ModelSession& ms = st.model;
    char text[200];
    float fraction = 0.0f;
    const int phase = ms.reading ? 0 : ms.fetching ? 4 : ms.loading ? 1 : ms.job ? 2 : 3;
    if (ms.fetching) {  // desktop: a Hub id being fetched; the reader may stop it
        const ModelSession::Fetching& f = *ms.fetching;
        fraction = f.total > 0 ? static_cast<float>(f.done / f.total) : 0.0f;
        std::snprintf(text, sizeof text, tr(st.lang, Str::LiveFetching), f.id.c_str(), f.file.c_str(), byte_size(f.file_done).c_str(),
                      byte_size(f.file_size).c_str(), byte_size(f.done).c_str(), byte_size(f.total).c_str());
        if (small_button(st, tr(st.lang, Str::CancelFetch))) st.model.fetching->cancel = true;
        probe(st, "model.cancel-fetch");
        ImGui::SameLine();
    } else if (ms.reading) {
        fraction = ms.reading->total > 0 ? static_cast<float>(static_cast<double>(ms.reading->done) / static_cast<double>(ms.reading->total)) : 0.0f;
        std::snprintf(text, sizeof text, tr(st.lang, Str::LiveReading), ms.reading->folder.c_str(),
                      byte_size(static_cast<double>(ms.reading->done)).c_str(), byte_size(static_cast<double>(ms.reading->total)).c_str());
    } else if (ms.loading) {
        fraction = ms.loading->progress();
        std::snprintf(text, sizeof text, tr(st.lang, Str::LiveLoading), ms.loading_name.c_str(), static_cast<int>(fraction * 100.0f));
    } else if (ms.job) {  // the reader may stop it: the last figure stays
        fraction = ms.job_progress;
        std::snprintf(text, sizeof text, tr(st.lang, Str::LiveRunning), ms.model->name.c_str(), static_cast<int>(fraction * 100.0f));
        if (small_button(st, tr(st.lang, Str::CancelFetch))) cancel_model_run(st);
        probe(st, "model.cancel-run");
        ImGui::SameLine();
    } else if (ms.probs) {
        fraction = ms.probs->progress();
        std::snprintf(text, sizeof text, tr(st.lang, Str::ProbsRunning), static_cast<int>(fraction * 100.0f));
    } else if (ms.lens) {
        fraction = ms.lens->progress();
        std::snprintf(text, sizeof text, tr(st.lang, Str::LensRunning), static_cast<int>(fraction * 100.0f));
    } else if (ms.patching) {  // the reader may stop it: the grids stay empty until the next edit
        fraction = ms.patching->progress();
        std::snprintf(text, sizeof text, tr(st.lang, Str::PatchingRunning), static_cast<int>(fraction * 100.0f));
        if (small_button(st, tr(st.lang, Str::CancelPatching))) cancel_patching(st);
        probe(st, "model.cancel-patching");
        ImGui::SameLine();
    } else if (ms.importance) {
        fraction = ms.importance->progress();
        std::snprintf(text, sizeof text, tr(st.lang, Str::ImportanceRunning), static_cast<int>(fraction * 100.0f));
    } else {
        return;
    }
    PanelState::Progress& shown = ctx.panels.progress;
    const double now = ImGui::GetTime();
    const int frame = ImGui::GetFrameCount();
    if (shown.phase != phase || shown.frame != frame - 1 || now - shown.at >= kProgressSeconds)
        shown = {phase, fraction, text, now, frame};
    shown.frame = frame;
    ImGui::ProgressBar(shown.fraction, ImVec2(-FLT_MIN, 0.0f), shown.text.c_str());
    probe(st, "model.progress");
}

}  // namespace attn
