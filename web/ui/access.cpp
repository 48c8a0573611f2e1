// access.cpp: see access.hpp.
#include "access.hpp"

#include "describe.hpp"
#include "why.hpp"
#include "platform.hpp"
#include "theme.hpp"
#include "view.hpp"

#include <imgui.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>

namespace attn {
namespace {

bool pressed(ImGuiKey key) { return ImGui::IsKeyPressed(ImGui::GetKeyIndex(key)); }

// The head the view shows (−1: the heads' mean), as the twin describes it.
int shown_head(const AppState& st) {
    const int heads = st.figure.trace().heads;
    if (st.view == View::Lines) {  // one visible head is that head; several, their mean
        int only = -1, n = 0;
        for (int h = 0; h < heads && h < static_cast<int>(st.lines.head_visible.size()); ++h)
            if (st.lines.head_visible[static_cast<size_t>(h)]) only = h, ++n;
        return n == 1 ? only : heads > 1 ? -1 : 0;
    }
    if (st.view == View::Steps || st.view == View::Explain || st.view == View::Qk) return std::clamp(st.steps.head, 0, heads - 1);
    return std::min(st.heatmap.head, heads - 1);
}

}  // namespace

// [SECTION] Keyboard ---------------------------------------------------------------------------

void figure_keys(AppState& st, int focus) {
    const Trace& tr = st.figure.trace();
    const int T_q = tr.T_q(), T_k = tr.T_k();
    AppState::KeyCursor& c = st.cursor;
    if (st.pinned_q >= T_q || st.pinned_k >= T_k) st.pinned_q = st.pinned_k = -1;  // a new figure
    if (focus == 0 || ImGui::GetIO().WantTextInput || ImGui::IsPopupOpen("", ImGuiPopupFlags_AnyPopupId) || T_q == 0 || T_k == 0 ||
        (st.view != View::Lines && st.view != View::Heatmap && st.view != View::Steps && st.view != View::Model && st.view != View::Qk))
        return;
    const int down = pressed(ImGuiKey_DownArrow) - pressed(ImGuiKey_UpArrow);
    const int right = pressed(ImGuiKey_RightArrow) - pressed(ImGuiKey_LeftArrow);
    int next = st.view == View::Steps ? pressed(ImGuiKey_PageDown) - pressed(ImGuiKey_PageUp) : 0;
    std::array<int, 3>& sp = st.pinned_step;
    if (st.view == View::Steps && st.steps.tiles && next != 0) {  // the tiles mode: Page Up/Down step through the tiles
        st.steps.tile_step = std::max(st.tiles_step() + next, 0);  // past the last: tiles_step() clamps
        next = 0;
    }
    if (down != 0 || right != 0 || next != 0) {
        const bool first = !c.on;
        c.on = true;
        if (st.view == View::Steps || st.view == View::Model) {  // the view clamps them to what it shows
            if (first && st.view == View::Steps && sp[0] >= 0) c.step = sp[0], c.q = sp[1], c.k = sp[2];
            else if (!first) c.q += down, c.k += right, c.step += next;
            c.q = std::max(c.q, 0), c.k = std::max(c.k, 0), c.step = std::max(c.step, 0);
            if (st.view == View::Steps && sp[0] >= 0) sp = {c.step, c.q, c.k};
        } else if (st.view == View::Lines || st.view == View::Qk) {
            TokenRef& t = c.token;
            if (first || !t.valid()) t = st.pinned.valid() ? st.pinned : TokenRef{TokenRef::Query, 0};
            else if (right < 0) t = {TokenRef::Query, t.index};
            else if (right > 0) t = {TokenRef::Key, t.index};
            else t.index += down;
            t.index = std::clamp(t.index, 0, (t.side == TokenRef::Query ? T_q : T_k) - 1);
            if (st.pinned.valid()) st.pinned = t;  // a pin follows the cursor
        } else {
            if (first && st.pinned_q >= 0) c.q = st.pinned_q, c.k = st.pinned_k;
            else if (!first) c.q += down, c.k += right;
            c.q = std::clamp(c.q, 0, T_q - 1), c.k = std::clamp(c.k, 0, T_k - 1);
            if (st.pinned_q >= 0) st.pinned_q = c.q, st.pinned_k = c.k;
        }
    }
    if (c.on && (pressed(ImGuiKey_Enter) || pressed(ImGuiKey_KeyPadEnter))) {
        if (st.view == View::Model) {
            c.action = 1;  // the model view opens the map, as a click does
        } else if (st.view == View::Steps) {
            const bool same = sp == std::array<int, 3>{c.step, c.q, c.k};
            sp = same ? std::array<int, 3>{-1, -1, -1} : std::array<int, 3>{c.step, c.q, c.k};
        } else if (st.view == View::Lines || st.view == View::Qk) {
            st.query_set.clear();
            st.pinned = st.pinned == c.token ? TokenRef{} : c.token;
        } else {
            const bool same = st.pinned_q == c.q && st.pinned_k == c.k;
            st.pinned_q = same ? -1 : c.q, st.pinned_k = same ? -1 : c.k;
        }
    }
    if (c.on && st.view == View::Model && pressed(ImGuiKey_Space)) c.action = 2;
    if (pressed(ImGuiKey_Escape)) {
        st.pinned = {};
        st.query_set.clear();
        st.pinned_q = st.pinned_k = -1;
        sp = {-1, -1, -1};
        c.on = false;
    }
}

void draw_focus(const AppState& st, int focus, float s) {
    if (focus < 2) return;
    ImDrawList* dl = ImGui::GetForegroundDrawList();
    const ImU32 ring = im_color(figure_palette(st.theme == Theme::Dark).accent);
    const ProbeRect& f = st.figure_rect;
    dl->AddRect(ImVec2(f[0] + 1.5f * s, f[1] + 1.5f * s), ImVec2(f[0] + f[2] - 1.5f * s, f[1] + f[3] - 1.5f * s), ring, 4.0f * s, 0, 3.0f * s);
    const TokenRef& t = st.cursor.token;
    if (st.view != View::Lines || !st.cursor.on || !t.valid()) return;
    const std::vector<ProbeRect>& rects = t.side == TokenRef::Query ? st.query_rects : st.key_rects;
    if (t.index >= static_cast<int>(rects.size())) return;
    const ProbeRect& r = rects[static_cast<size_t>(t.index)];
    dl->AddRect(ImVec2(r[0] - 3.0f * s, r[1] - 3.0f * s), ImVec2(r[0] + r[2] + 3.0f * s, r[1] + r[3] + 3.0f * s), ring, 5.0f * s, 0, 2.5f * s);
}

// [SECTION] Twin -------------------------------------------------------------------------------

namespace {

// The live panel's results as tables (what the canvas draws there, for a screen reader): the
// tokens' probabilities, attribution, the lens, patching's two grids; cells as text.
nlohmann::json why_tables(const AppState& st) {
    using nlohmann::json;
    json tables = json::array();
    const LiveRun* live = st.figure.live.get();
    if (!live || !live->model->config().decoder_only()) return tables;
    const Lang lang = st.lang;
    const Tokenizer& tok = live->model->decoder_tokenizer();
    const auto word = [&](int id) { return token_text(display_token(tok.token(id))); };
    std::vector<std::string> tokens;
    for (int id : live->input.ids) tokens.push_back(word(id));
    const auto number = [](double v, const char* format) {
        char s[32];
        std::snprintf(s, sizeof s, format, v);
        return std::string(s);
    };
    const auto numbered = [](const char* prefix, int n, int first) {
        std::vector<std::string> out;
        for (int i = 0; i < n; ++i) out.push_back(prefix + std::to_string(i + first));
        return out;
    };
    const auto grid = [&](std::string caption, const char* corner, std::vector<std::string> rows, std::vector<std::string> cols, json cells) {
        tables.push_back({{"caption", std::move(caption)}, {"corner", corner}, {"masked", ""}, {"rows", std::move(rows)}, {"cols", std::move(cols)},
                          {"cells", std::move(cells)}});
    };
    const auto signed_cells = [&](const std::vector<double>& v) {
        json cells = json::array();
        for (double x : v) cells.push_back(number(x, "%+.3f"));
        return cells;
    };
    if (const TokenProbs* probs = st.figure.probs.get(); probs && probs->positions() == static_cast<int>(tokens.size())) {
        json cells = json::array();
        for (int t = 0; t < probs->positions(); ++t) {
            const LensCell& c = probs->at[static_cast<std::size_t>(t)];
            if (t == 0) {
                cells.insert(cells.end(), {"", "", "", ""});
                continue;
            }
            std::string likeliest;
            for (std::size_t i = 0; i < std::min<std::size_t>(c.top.size(), 3); ++i)
                likeliest += (i ? ", " : "") + word(c.top[i].id) + " " + number(100.0 * static_cast<double>(c.top[i].p), "%.1f%%");
            cells.insert(cells.end(), {number(100.0 * static_cast<double>(c.target_p), "%.2f%%"), number(surprisal_bits(c.target_p), "%.2f"), std::to_string(c.target_rank), likeliest});
        }
        std::vector<std::string> cols;
        for (std::string_view rest = tr(lang, Str::TwinProbsCols); !rest.empty();) {
            const std::size_t bar = rest.find('|');
            cols.emplace_back(rest.substr(0, bar));
            rest = bar == std::string_view::npos ? std::string_view() : rest.substr(bar + 1);
        }
        grid(tr(lang, Str::TwinProbs), tr(lang, Str::TwinCorner), tokens, cols, std::move(cells));
    }
    if (const Attribution* a = st.figure.attribution.get()) {
        char caption[256];
        std::snprintf(caption, sizeof caption, tr(lang, Str::TwinAttribution),
                      (a->contrast >= 0 ? word(a->target) + " − " + word(a->contrast) : word(a->target)).c_str());
        grid(caption, tr(lang, Str::TwinLayerHead), numbered("L", a->layers, 1), numbered("H", a->heads, 1), signed_cells(a->head));
    }
    if (const Lens* lens = st.figure.lens.get(); lens && lens->positions == static_cast<int>(tokens.size())) {
        json cells = json::array();
        for (const LensCell& c : lens->cells) cells.push_back(word(c.top.front().id) + " " + number(100.0 * static_cast<double>(c.top.front().p), "%.1f%%"));
        grid(tr(lang, Str::TwinLens), tr(lang, Str::TwinCorner), numbered("L", lens->layers, 0), tokens, std::move(cells));
    }
    if (const Patching* p = st.figure.patching.get(); p && p->positions == static_cast<int>(tokens.size())) {
        grid(tr(lang, Str::TwinPatchingHeads), tr(lang, Str::TwinLayerHead), numbered("L", p->layers, 1), numbered("H", p->heads, 1), signed_cells(p->head));
        grid(tr(lang, Str::TwinPatchingStream), tr(lang, Str::TwinCorner), numbered("L", p->layers + 1, 0), tokens, signed_cells(p->resid));
    }
    return tables;
}

}  // namespace

void update_twin(const AppState& st, TwinState& twin) {
    const Lang lang = st.lang;
    // The live panel's tables, when what they show changed.
    char extra_key[160];
    std::snprintf(extra_key, sizeof extra_key, "%p %p %p %p %d", static_cast<const void*>(st.figure.probs.get()),
                  static_cast<const void*>(st.figure.attribution.get()), static_cast<const void*>(st.figure.lens.get()),
                  static_cast<const void*>(st.figure.patching.get()), static_cast<int>(lang));
    const bool new_extra = twin.extra_key != extra_key;
    if (st.figure.empty()) {
        if (twin.key == "empty") return;
        twin.key = "empty", twin.table_key.clear(), twin.extra_key.clear();
        twin.summary = tr(lang, Str::TwinNothing);
        platform::show_twin(nlohmann::json{{"lang", lang == Lang::Zh ? "zh" : "en"}, {"label", tr(lang, Str::TwinLabel)},
                                           {"summary", twin.summary}, {"table", nullptr}, {"extra", nlohmann::json::array()}}.dump());
        return;
    }
    const Trace& t = st.figure.trace();
    DescribeInput in;
    in.trace = &t;
    in.head = shown_head(st);
    // The selection: the keyboard's cell or a pinned one (Heatmap), else a token.
    if (st.view == View::Heatmap && st.cursor.on) in.query = st.cursor.q, in.key = st.cursor.k;
    else if (st.view == View::Heatmap && st.pinned_q >= 0) in.query = st.pinned_q, in.key = st.pinned_k;
    else if (const TokenRef sel = st.selected(); sel.valid()) (sel.side == TokenRef::Query ? in.query : in.key) = sel.index;
    else if (st.view == View::Image) in.query = picture_query(st);  // the [CLS] the picture shows
    // Steps: the number shown and the words under an induction head; the Q–K space: the plane;
    // Explain and Compare past 128 × 128 tokens: each reading's strongest keys
    const bool says = st.view == View::Steps || st.view == View::Qk || st.view == View::Explain || st.view == View::Compare;
    std::string step = says ? st.steps_said : std::string();
    if (st.view == View::Steps && !st.steps_why.empty()) step += (step.empty() ? "" : lang == Lang::Zh ? "" : " ") + st.steps_why;
    char key[160];
    std::snprintf(key, sizeof key, "%d %p %d %d %d %d %d %d %d %zu", st.revision, static_cast<const void*>(&t), in.head, in.query, in.key,
                  static_cast<int>(lang), t.T_q(), t.T_k(), t.heads, std::hash<std::string>{}(step));
    if (twin.key == key && !new_extra) return;
    twin.key = key;
    DescribeWords& w = in.words;
    w.head_of = tr(lang, Str::TwinHeadOf), w.mean_of = tr(lang, Str::TwinMeanOf), w.attends = tr(lang, Str::TwinAttends);
    w.then = tr(lang, Str::TwinThen), w.attended = tr(lang, Str::TwinAttended), w.strongest = tr(lang, Str::TwinStrongest);
    w.cell = tr(lang, Str::TwinCell), w.cell_masked = tr(lang, Str::TwinCellMasked), w.caption = tr(lang, Str::TwinCaption);
    w.truncated = tr(lang, Str::TwinTruncated), w.kind = ui_kind_name(lang, t.kind), w.head = tr(lang, Str::TwinHead);
    w.mean = tr(lang, Str::TwinMean), w.sep = lang == Lang::Zh ? "" : " ";
    // The table only when the map changed: a moved selection (every hover) reads its one row.
    std::snprintf(key, sizeof key, "%d %p %d %d", st.revision, static_cast<const void*>(&t), in.head, static_cast<int>(lang));
    const bool new_table = twin.table_key != key;
    in.table = new_table;
    const FigureDescription d = describe_figure(in);
    if (new_table) {  // what the summary says without a selection: the table's strongest weight
        DescribeInput plain = in;
        plain.query = plain.key = -1;
        twin.unselected = in.query < 0 && in.key < 0 ? d.summary : describe_figure(plain).summary;
    }
    const std::string& said = in.query < 0 && in.key < 0 ? twin.unselected : d.summary;
    twin.summary = said + (step.empty() ? "" : w.sep + step);  // Steps: the number shown
    nlohmann::json j = {{"lang", lang == Lang::Zh ? "zh" : "en"}, {"label", tr(lang, Str::TwinLabel)}, {"summary", twin.summary}, {"table", nullptr}};
    if (new_extra) {
        twin.extra_key = extra_key;
        j["extra"] = why_tables(st);
    }
    if (new_table) {
        twin.table_key = key;
        nlohmann::json cells = nlohmann::json::array();
        for (float v : d.cells) cells.push_back(std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(std::round(v * 1e4) / 1e4));
        j["table"] = {{"caption", d.caption}, {"corner", tr(lang, Str::TwinCorner)}, {"masked", tr(lang, Str::Masked)},
                      {"rows", d.rows}, {"cols", d.cols}, {"cells", cells}};
    }
    platform::show_twin(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace attn
