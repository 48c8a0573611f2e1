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
    } else {
        text_box(Str::LiveText, "model.text", &ms.text, true);
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
            ImGui::Text("%-7s \"%s\"", pct, token_text(display_token(t.token)).c_str());
            probe(st, ("model.top." + std::to_string(i)).c_str());
            if (t.id == picked) {
                ImGui::SameLine();
                ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(pal.token_pinned), "\xe2\x97\x80 %s", tr(st.lang, Str::GenPicked));
            }
        }
    }
    if (m.config().decoder_only()) draw_generation(ctx);
    draw_experiments(ctx);
}

// [SECTION] Experiments ----------------------------------------------------------------------

namespace {

// A number per head as a layers × heads grid of cells on a diverging scale centred on 0 (red
// below, blue above), with the value in cells wide enough; a NaN cell is crossed out (a head the
// experiment knocked out). Rows are labelled from `first` (L1 …; the stream's rows: L0 …).
// Returns the cell under the mouse, row·columns + column (its tooltip the caller's), or −1.
// Probes: PREFIX.ROW.COLUMN, as labelled, columns from 1.
int head_grid(AppState& st, const std::vector<float>& values, int layers, int heads, const char* caption, const char* prefix, float sc,
              int first = 1) {
    int hovered = -1;
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ImGui::TextWrapped("%s", caption);
    ImGui::PopStyleColor();
    float extent = 1e-6f;
    for (float v : values)
        if (std::isfinite(v)) extent = std::max(extent, std::fabs(v));
    const float label_w = ImGui::CalcTextSize("L00").x + 6.0f * sc;
    const float cell = std::clamp((ImGui::GetContentRegionAvail().x - label_w) / static_cast<float>(heads), 10.0f * sc, 44.0f * sc);
    const ImVec2 p = ImGui::GetCursorScreenPos();
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const Palette& pal = palette(st.theme);
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    const float fs = ImGui::GetFontSize();
    for (int l = 0; l < layers; ++l) {
        char row[16];
        std::snprintf(row, sizeof row, "L%d", l + first);
        dl->AddText(ImVec2(p.x, p.y + l * cell + (cell - fs) * 0.5f), pal.text_muted, row);
        for (int h = 0; h < heads; ++h) {
            const float v = values[static_cast<std::size_t>(l * heads + h)];
            const ImVec2 a(p.x + label_w + h * cell, p.y + l * cell), b(a.x + cell - 2.0f * sc, a.y + cell - 2.0f * sc);
            const float t = std::isfinite(v) ? std::clamp(v / extent, -1.0f, 1.0f) : 0.0f;
            const float k = std::fabs(t);
            dl->AddRectFilled(a, b, mix_color(pal.background, t < 0 ? kNegativeColor : kPositiveColor, k));
            dl->AddRect(a, b, pal.token_outline);
            if (!std::isfinite(v)) {  // knocked out by the experiment itself
                dl->AddLine(a, b, pal.text_muted, 1.5f * sc);
                dl->AddLine(ImVec2(b.x, a.y), ImVec2(a.x, b.y), pal.text_muted, 1.5f * sc);
            } else if (cell >= fs * 2.2f) {
                char value[16];
                std::snprintf(value, sizeof value, "%+.2f", static_cast<double>(v));
                const float w = ImGui::CalcTextSize(value).x;
                dl->AddText(ImVec2(a.x + (b.x - a.x - w) * 0.5f, a.y + (b.y - a.y - fs) * 0.5f), k > 0.55f ? IM_COL32_WHITE : pal.text, value);
            }
            char name[64];
            std::snprintf(name, sizeof name, "%s.%d.%d", prefix, l + first, h + 1);
            st.probe[name] = {a.x, a.y, b.x - a.x, b.y - a.y};
            if (ImGui::IsWindowHovered() && mouse.x >= a.x && mouse.x < b.x && mouse.y >= a.y && mouse.y < b.y && std::isfinite(v))
                hovered = l * heads + h;
        }
    }
    ImGui::Dummy(ImVec2(label_w + heads * cell, layers * cell));
    return hovered;
}

// Δ log p of every head (red: knocking the head out lowers the prediction's probability: it helped).
void importance_grid(AppState& st, const HeadImportance& hi, const LoadedModel& m, float sc) {
    char caption[160];
    std::snprintf(caption, sizeof caption, tr(st.lang, Str::ImportanceCaption), token_text(display_token(m.decoder_tokenizer().token(hi.token))).c_str());
    if (const int c = head_grid(st, hi.delta, hi.layers, hi.heads, caption, "model.importance", sc); c >= 0)
        ImGui::SetTooltip(tr(st.lang, Str::ImportanceCell), c / hi.heads + 1, c % hi.heads + 1, static_cast<double>(hi.delta[static_cast<std::size_t>(c)]));
}

// Each head's direct logit attribution to the prediction (blue: it raised the logit), and on
// hover the source position it wrote most from.
void attribution_grid(AppState& st, const Attribution& a, const LiveRun& live, float sc) {
    const Tokenizer& t = live.model->decoder_tokenizer();
    char caption[320];
    double heads = 0, mlps = 0;
    for (double v : a.head) heads += v;
    for (double v : a.mlp) mlps += v;
    if (a.contrast >= 0)
        std::snprintf(caption, sizeof caption, tr(st.lang, Str::AttributionCaptionContrast), token_text(display_token(t.token(a.target))).c_str(),
                      token_text(display_token(t.token(a.contrast))).c_str(), a.total, heads, mlps, a.embed + a.bias);
    else
        std::snprintf(caption, sizeof caption, tr(st.lang, Str::AttributionCaption), token_text(display_token(t.token(a.target))).c_str(), a.total,
                      heads, mlps, a.embed + a.bias);
    const std::vector<float> values(a.head.begin(), a.head.end());
    const int c = head_grid(st, values, a.layers, a.heads, caption, "model.attribution", sc);
    if (c < 0) return;
    const int l = c / a.heads, h = c % a.heads;
    int most = 0;
    for (int j = 1; j < a.positions; ++j)
        if (std::fabs(a.source(l, h, j)) > std::fabs(a.source(l, h, most))) most = j;
    ImGui::SetTooltip(tr(st.lang, Str::AttributionCell), l + 1, h + 1, a.at(l, h), token_text(display_token(t.token(a.target))).c_str(),
                      a.source(l, h, most), most + 1, token_text(display_token(t.token(live.input.ids[static_cast<std::size_t>(most)]))).c_str());
}

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

// Activation patching from the text into the Compare text: the share of the logit difference each
// head's output, then each stream row (after each layer, row 0 the embeddings, at each position),
// brings back.
void patching_grids(AppState& st, const Patching& p, const LiveRun& live, float sc) {
    const Tokenizer& t = live.model->decoder_tokenizer();
    const std::vector<float> heads(p.head.begin(), p.head.end()), rows(p.resid.begin(), p.resid.end());
    char caption[320];
    std::snprintf(caption, sizeof caption, tr(st.lang, Str::PatchingCaption), p.clean, p.corrupted);
    if (const int c = head_grid(st, heads, p.layers, p.heads, caption, "model.patching.head", sc); c >= 0)
        ImGui::SetTooltip(tr(st.lang, Str::PatchingHeadCell), c / p.heads + 1, c % p.heads + 1, 100.0 * p.head[static_cast<std::size_t>(c)]);
    const int c = head_grid(st, rows, p.layers + 1, p.positions, tr(st.lang, Str::PatchingStreamCaption), "model.patching.resid", sc, 0);
    if (c >= 0)
        ImGui::SetTooltip(tr(st.lang, Str::PatchingStreamCell), c / p.positions, c % p.positions + 1,
                          token_text(display_token(t.token(live.input.ids[static_cast<std::size_t>(c % p.positions)]))).c_str(),
                          100.0 * p.resid[static_cast<std::size_t>(c)]);
}

// `text` cut (at a character) to fit `width`, with "…" where it was cut.
std::string fitted(std::string text, float width) {
    if (ImGui::CalcTextSize(text.c_str()).x <= width) return text;
    while (!text.empty() && ImGui::CalcTextSize((text + "\xe2\x80\xa6").c_str()).x > width) {
        text.pop_back();
        while (!text.empty() && (static_cast<unsigned char>(text.back()) & 0xC0) == 0x80) text.pop_back();  // a whole character
    }
    return text + "\xe2\x80\xa6";
}

// The logit lens: a row per layer (the embeddings first), a column per token; each cell the top
// token of that layer's stream at that position, shaded by its probability (the figure's
// colormap); hovered, its top 5 and the final prediction's rank there; clicked, that layer's map
// with the position's query pinned. Wider than the panel: it scrolls sideways.
void lens_grid(AppState& st, const Lens& lens, const LiveRun& live, float sc) {
    const Tokenizer& t = live.model->decoder_tokenizer();
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ImGui::TextWrapped("%s", tr(st.lang, Str::LensCaption));
    ImGui::PopStyleColor();
    const float fs = ImGui::GetFontSize(), cell_w = 46.0f * sc, cell_h = fs + 8.0f * sc;
    const float label_w = ImGui::CalcTextSize("L00").x + 6.0f * sc;
    const float width = label_w + lens.positions * cell_w, height = (lens.layers + 1) * cell_h;
    ImGui::BeginChild("##lens", ImVec2(-FLT_MIN, height + ImGui::GetStyle().ScrollbarSize + 4.0f * sc), false,
                      ImGuiWindowFlags_HorizontalScrollbar);
    const ImVec2 p = ImGui::GetCursorScreenPos(), mouse = ImGui::GetIO().MousePos;
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const Palette& pal = palette(st.theme);
    const Colormap& cmap = colormaps()[static_cast<std::size_t>(st.heatmap.colormap)];
    const auto text_in = [&](ImVec2 a, float w, const std::string& s, ImU32 colour) {
        const std::string f = fitted(s, w - 4.0f * sc);
        dl->AddText(ImVec2(a.x + (w - ImGui::CalcTextSize(f.c_str()).x) * 0.5f, a.y + (cell_h - fs) * 0.5f), colour, f.c_str());
    };
    for (int c = 0; c < lens.positions; ++c)  // the tokens
        text_in(ImVec2(p.x + label_w + c * cell_w, p.y), cell_w, token_text(display_token(t.token(live.input.ids[static_cast<std::size_t>(c)]))), pal.text_muted);
    for (int l = 0; l < lens.layers; ++l) {
        char row[16];
        std::snprintf(row, sizeof row, l == 0 ? "emb" : "L%d", l);
        const float y = p.y + (l + 1) * cell_h;
        dl->AddText(ImVec2(p.x, y + (cell_h - fs) * 0.5f), pal.text_muted, row);
        for (int c = 0; c < lens.positions; ++c) {
            const LensCell& cell = lens.at(l, c);
            const ImVec2 a(p.x + label_w + c * cell_w, y), b(a.x + cell_w - 2.0f * sc, y + cell_h - 2.0f * sc);
            const std::array<float, 3> rgb = colormap_sample(cmap, cell.top.front().p);
            dl->AddRectFilled(a, b, ImGui::ColorConvertFloat4ToU32(ImVec4(rgb[0], rgb[1], rgb[2], 1.0f)));
            const bool light = 0.299f * rgb[0] + 0.587f * rgb[1] + 0.114f * rgb[2] > 0.55f;
            text_in(a, b.x - a.x, token_text(display_token(t.token(cell.top.front().id))), light ? IM_COL32(0, 0, 0, 255) : IM_COL32_WHITE);
            char name[48];
            std::snprintf(name, sizeof name, "model.lens.%d.%d", l, c + 1);
            st.probe[name] = {a.x, a.y, b.x - a.x, b.y - a.y};
            if (!ImGui::IsWindowHovered() || mouse.x < a.x || mouse.x >= b.x || mouse.y < a.y || mouse.y >= b.y) continue;
            std::string tip;
            char line[200];
            for (const TokenP& k : cell.top) {
                std::snprintf(line, sizeof line, "%5.1f%%  \"%s\"\n", 100.0 * k.p, token_text(display_token(t.token(k.id))).c_str());
                tip += line;
            }
            std::snprintf(line, sizeof line, tr(st.lang, Str::LensCell), token_text(display_token(t.token(cell.target))).c_str(), cell.target_rank,
                          100.0 * cell.target_p);
            ImGui::SetTooltip("%s%s", tip.c_str(), line);
            if (l > 0 && ImGui::IsMouseClicked(ImGuiMouseButton_Left)) {  // that layer's map, the position's row
                select_import_map(st, l - 1, st.imported.import_head);
                st.view = View::Lines;
                st.pinned = {TokenRef::Query, c};
            }
        }
    }
    ImGui::Dummy(ImVec2(width, height));
    ImGui::EndChild();
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
    const std::vector<HeadRef> heads = knocked_heads(st);
    if (heads.empty()) {
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
        ImGui::TextWrapped("%s", tr(st.lang, Str::KnockedNone));
        ImGui::PopStyleColor();
    } else {
        char line[256];
        std::snprintf(line, sizeof line, tr(st.lang, Str::KnockedOut), ex.knockout.c_str());
        ImGui::TextWrapped("%s", line);
        probe(st, "model.knocked");
        if (small_button(st, tr(st.lang, Str::RestoreAll))) {
            ex.knockout.clear();
            model_input_changed(st);
        }
        probe(st, "model.restore");
    }
    ImGui::Checkbox(tr(st.lang, Str::ClickKnocks), &ctx.panels.click_knocks_out);
    probe(st, "model.click_knocks");
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
    ImGui::TextWrapped("%s", tr(st.lang, Str::HideTokensHint));
    ImGui::PopStyleColor();
    const bool has_head = m.config().family != Family::Bert;
    ImGui::BeginDisabled(!has_head);
    if (ImGui::Checkbox(tr(st.lang, Str::HeadImportanceToggle), &ex.importance)) model_input_changed(st);
    ImGui::EndDisabled();
    probe(st, "model.importance");
    tooltip(tr(st.lang, has_head ? Str::HeadImportanceTip : Str::ImportanceNoHead));
    if (ex.importance && st.figure.importance) importance_grid(st, *st.figure.importance, m, ctx.scale);
    const bool stream = has_stream(m.config());
    ImGui::BeginDisabled(!stream);
    if (ImGui::Checkbox(tr(st.lang, Str::AttributionToggle), &ex.attribution)) model_input_changed(st);
    ImGui::EndDisabled();
    probe(st, "model.attribution");
    tooltip(tr(st.lang, stream ? Str::AttributionTip : Str::AttributionNoStream));
    if (stream && ex.attribution) why_token_inputs(st, false);
    if (ex.attribution && st.figure.attribution && st.figure.live) attribution_grid(st, *st.figure.attribution, *st.figure.live, ctx.scale);
    ImGui::BeginDisabled(!stream);
    if (ImGui::Checkbox(tr(st.lang, Str::LensToggle), &ex.lens)) model_input_changed(st);
    ImGui::EndDisabled();
    probe(st, "model.lens");
    tooltip(tr(st.lang, stream ? Str::LensTip : Str::AttributionNoStream));
    if (ex.lens && st.figure.lens && st.figure.live) lens_grid(st, *st.figure.lens, *st.figure.live, ctx.scale);
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
        patching_grids(st, *st.figure.patching, *live, ctx.scale);
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
