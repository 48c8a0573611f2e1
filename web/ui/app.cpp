// app.cpp: the frame around the panels, and the JSON the browser tests read.
#include "app.hpp"

#include "builtin.hpp"
#include "link_panel.hpp"
#include "link_state.hpp"
#include "live_scenes.hpp"
#include "export.hpp"
#include "kernels.hpp"
#include "panels.hpp"
#include "platform.hpp"
#include "presets.hpp"
#include "theme.hpp"

#include <imgui.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

namespace attn {

bool App::init(std::string& error) {
    if (!renderer.init(error)) return false;
    if (state.scene.tokens.empty() && state.figure.empty()) {
        if (find_preset("i-am-good")) state.load_preset("i-am-good");
        else if (!presets().empty()) state.load_preset(presets().front().name);
    }
    const std::string hash = platform::start_link();
    if (hash.size() > 1) open_link_hash(hash);
    return true;
}

void App::open_link_hash(const std::string& hash) {
    const bool ok = open_link(state, hash);
    // A bad link stays in the address bar, next to its error line, until the state changes.
    if (!ok) shown_hash_ = encode_link(link_from_app(state), &link_cache);
}

std::string App::handle_page_message(const std::string& message_json) {
    return handle_message(state, message_json);
}

void App::note_typing() {
    constexpr double kTypingPauseSeconds = 0.4;
    const double now = ImGui::GetTime();
    if (state.model.input_revision != typed_revision_) typed_revision_ = state.model.input_revision, typed_at_ = now;
    typing_ = now - typed_at_ < kTypingPauseSeconds;
}

void App::sync_link() {
    const double now = ImGui::GetTime();
    if (state.figure.empty() || now - link_checked_at_ < 0.25 || typing_) return;
    link_checked_at_ = now;
    std::string hash = encode_link(link_from_app(state), &link_cache);
    if (hash == shown_hash_) return;
    shown_hash_ = std::move(hash);
    platform::show_link(shown_hash_);
}

void App::shutdown() { renderer.shutdown(); }

void App::before_frame(float ui_scale) {
    frame_times.begin_frame();
    run_pending_export(*this);  // between frames, outside ImGui's frame
    if (state.theme_auto) state.theme = platform::prefers_dark() ? Theme::Dark : Theme::Light;
    state.text_scale = std::clamp(state.text_scale, kMinTextScale, kMaxTextScale);
    const float css_px = ui_scale;  // display px per CSS px
    ui_scale *= state.text_scale;
    ui_scale_ = ui_scale;
    // A phone: narrower than kNarrowWidth CSS px at this text size (a larger text narrows sooner).
    state.narrow = ImGui::GetIO().DisplaySize.x < kNarrowWidth * ui_scale;
    state.touch = state.narrow || platform::coarse_pointer();
    ImGui::GetIO().ConfigInputTextCursorBlink = !platform::reduced_motion();
    collect_text(state, panels, fonts);
    fonts.update(ui_scale);
    if (styled_scale_ != ui_scale || styled_theme_ != state.theme || styled_touch_ != state.touch) {
        apply_theme(state.theme, ui_scale, state.touch ? kTouchTarget * css_px : 0.0f, fonts.body ? fonts.body->FontSize : 15.0f * ui_scale);
        styled_scale_ = ui_scale;
        styled_theme_ = state.theme;
        styled_touch_ = state.touch;
    }
}

void App::build_ui() {
    renderer.begin_frame();
    advance_import_load(state);  // a file whose bytes are all in is parsed here
    follow_sink_view(state);
    if (!state.model.builtin_request.empty()) {  // browser: the page fetches a built-in model's files
        const BuiltinModel* m = find_builtin(state.model.builtin_request);
        std::string files;
        for (const char* f : m->files) files += std::string(files.empty() ? "" : "\n") + f;
        platform::fetch_builtin_model(m->name, files.c_str());
        state.model.builtin_fetching = std::move(state.model.builtin_request);
        state.model.builtin_request.clear();
    }
    follow_hub_fetch();
    send_served_requests();
    state.probe.clear();
    state.text_boxes.clear();
    ViewContext ctx{state, renderer, fonts, views, panels, ui_scale_, true, &link_cache};
    // The keyboard is the figure's unless the drawer covers it (access.hpp).
    const int focus = panels.drawer_open ? 0 : platform::figure_focus();
    figure_keys(state, focus);
    if (!state.show_panels) draw_figure_only(ctx);
    else draw_app(ctx, false);
    ask_for_model_window();
    draw_focus(state, focus, ui_scale_);
    // The twin waits while the shown view still builds (the lines' top-k lists, the heatmap's
    // display map): its one-off table would lengthen a frame and so the next frame's budget.
    // It waits while the reader types, too (note_typing).
    note_typing();
    const bool building = (state.view == View::Lines && state.lines_ready < 1.0f) ||
                          (state.view == View::Heatmap && state.heatmap_probe.progress < 1.0);
    if (!building && !typing_) update_twin(state, twin);
    std::vector<float> boxes;  // handed to the page when they move (a tap on one focuses its text field)
    for (const ProbeRect& r : state.text_boxes) boxes.insert(boxes.end(), r.begin(), r.end());
    if (boxes != text_boxes_) platform::set_text_boxes(text_boxes_ = boxes);
    draw_frame_overlay(ctx, frame_times);
    // Only the Steps view scrolls; a figure-only Lines or heatmap leaves the wheel to the page.
    platform::pass_wheel_to_page(!state.show_panels && state.view != View::Steps);
    platform::wheel_zoom(state.view == View::Heatmap, state.grid_rect.data());
    sync_link();
    ++frame_count;
}

void App::follow_hub_fetch() {
    ModelSession& ms = state.model;
    if (!ms.hub_request.empty()) {
        hub_fetch_.reset();  // the last fetch stops first (a page has one fetch at a time)
        ms.fetching.emplace();
        ms.fetching->id = std::exchange(ms.hub_request, {});
        hub_fetch_ = platform::HubFetch::start(ms.fetching->id);
    }
    if (!hub_fetch_) return;
    if (!ms.fetching) {  // it ended through the page's hooks (model_hook.cpp)
        hub_fetch_.reset();
        return;
    }
    if (ms.fetching->cancel) hub_fetch_->cancel();
    const platform::HubFetch::Status s = hub_fetch_->status();
    if (!platform::kBrowser) hub_fetch_progress(state, s.file, s.file_done, s.file_size, s.done, s.total);
    if (!s.finished) return;
    hub_fetch_.reset();
    if (s.error.empty()) hub_fetch_done(state, s.snapshot);
    else hub_fetch_failed(state, s.error);
}

// A served model's requests (served_state.hpp) to the page, which answers through
// main/served_hook.cpp; a lost server is asked again when its time comes.
void App::send_served_requests() {
    ServedSession& s = state.served;
    advance_served(state, ImGui::GetTime());
    for (ServedRequest& r : std::exchange(s.outbox, {}))
        if (!platform::served_request(r.id, s.server.c_str(), s.key.c_str(), r.path.c_str(), r.body.c_str()))
            served_reply(state, r.id, 0, "the desktop app connects to no server: open the address attnviz.serve() printed in a browser");
}

void App::ask_for_model_window() {
    if (const std::optional<FileRange> r = state.model.slice_request) {
        platform::read_model_slice(r->file.c_str(), static_cast<double>(r->begin), static_cast<double>(r->end));
        state.model.slice_request.reset();
    }
}

void App::model_window_filled() {
    if (!attn::model_window_filled(state)) return;
    advance_loading(state, kModelFrameSeconds);
    ask_for_model_window();
}

void App::before_render() {
    renderer.upload_frame();
    // What the frame draws: every draw list's bytes and commands, the display, the font atlas
    // and what the renderer's callbacks draw (hashed 8 bytes at a time: ~1 ms for 3 MB).
    std::uint64_t h = 0x84222325cbf29ce4ull;
    auto mix = [&h](std::uint64_t v) { h = (h ^ v) * 0x9E3779B97F4A7C15ull, h ^= h >> 29; };
    auto mix_bytes = [&](const void* p, size_t n) {
        const auto* b = static_cast<const unsigned char*>(p);
        std::uint64_t w;
        for (; n >= 8; n -= 8, b += 8) std::memcpy(&w, b, 8), mix(w);
        w = 0;
        std::memcpy(&w, b, n), mix(w ^ n);
    };
    if (const ImDrawData* data = ImGui::GetDrawData()) {
        mix_bytes(&data->DisplayPos, sizeof data->DisplayPos), mix_bytes(&data->DisplaySize, sizeof data->DisplaySize);
        mix_bytes(&data->FramebufferScale, sizeof data->FramebufferScale);
        for (int i = 0; i < data->CmdListsCount; ++i) {
            const ImDrawList* list = data->CmdLists[i];
            mix_bytes(list->VtxBuffer.Data, static_cast<size_t>(list->VtxBuffer.Size) * sizeof(ImDrawVert));
            mix_bytes(list->IdxBuffer.Data, static_cast<size_t>(list->IdxBuffer.Size) * sizeof(ImDrawIdx));
            for (const ImDrawCmd& c : list->CmdBuffer) {
                mix_bytes(&c.ClipRect, sizeof c.ClipRect);
                mix(reinterpret_cast<std::uintptr_t>(c.TextureId)), mix(c.VtxOffset), mix(c.IdxOffset), mix(c.ElemCount);
                mix(reinterpret_cast<std::uintptr_t>(c.UserCallback)), mix(reinterpret_cast<std::uintptr_t>(c.UserCallbackData));
            }
        }
    }
    mix(reinterpret_cast<std::uintptr_t>(ImGui::GetIO().Fonts->TexID));
    h = renderer.signature(h);
    // Only the browser skips (main.cpp); the GPU-time diagnostic draws every frame: it measures
    // what drawing this figure costs.
    unchanged_ = platform::kBrowser && frame_count > 2 && h == last_signature_ && !frame_times.gpu_sync;
    last_signature_ = h;
    frame_times.end_cpu(!unchanged_);
    const ImDrawData* data = ImGui::GetDrawData();
    frame_times.set_geometry(data ? data->TotalVtxCount : 0, data ? data->TotalIdxCount : 0, renderer.line_instances());
    frame_times.begin_gpu();
}

void App::after_render() {
    if (!frame_times.gpu_sync) return;
    unsigned char pixel[4];
    glReadPixels(0, 0, 1, 1, GL_RGBA, GL_UNSIGNED_BYTE, pixel);  // returns once the GPU has drawn the frame
    frame_times.end_gpu();
}

nlohmann::json figure_state_json(const AppState& st) {
    using nlohmann::json;
    const Trace& trace = st.figure.trace();
    auto rect = [](const ProbeRect& r) { return json::array({r[0], r[1], r[2], r[3]}); };
    auto ref = [](const TokenRef& r) -> json {
        if (!r.valid()) return nullptr;
        return {{"side", r.side == TokenRef::Query ? "query" : "key"}, {"index", r.index}};
    };
    json widgets = json::object();
    for (const auto& [name, r] : st.probe) widgets[name] = rect(r);
    json queries = json::array(), keys = json::array();
    for (const auto& r : st.query_rects) queries.push_back(rect(r));
    for (const auto& r : st.key_rects) keys.push_back(rect(r));
    json steps = json::object();
    for (const auto& [name, r] : st.step_rects) steps[name] = rect(r);
    json scene_list = json::array();
    for (const Scene& p : presets()) scene_list.push_back(p.name);
    for (const LiveScene& l : live_scenes()) scene_list.push_back(l.name);
    // The mask cell by cell for small figures only: at thousands of tokens it would be megabytes a call.
    json allowed = json::array();
    const bool small_mask = trace.allowed.size() <= 65536;
    for (Eigen::Index i = 0; small_mask && i < trace.allowed.rows(); ++i) {
        json row = json::array();
        for (Eigen::Index j = 0; j < trace.allowed.cols(); ++j) row.push_back(static_cast<int>(trace.allowed(i, j)));
        allowed.push_back(row);
    }
    const HeatmapProbe& hp = st.heatmap_probe;
    json j = {
        {"view", view_name(st.view)},
        {"theme", st.theme == Theme::Dark ? "dark" : "light"},
        {"panels", st.show_panels},
        {"heatmap_head", st.heatmap.head},
        {"heatmap", {{"zoom", st.heatmap.zoom}, {"view_x", st.heatmap.view_x}, {"view_y", st.heatmap.view_y},
                     {"max_zoom", hp.max_zoom}, {"cell", hp.cell}, {"level", hp.level},
                     {"rows", {hp.row0, hp.row1}}, {"cols", {hp.col0, hp.col1}},
                     {"labels_q", hp.labels_q}, {"labels_k", hp.labels_k}, {"numbers", hp.numbers},
                     {"progress", hp.progress}, {"display_bytes", hp.display_bytes}, {"trace_bytes", hp.trace_bytes},
                     {"gpu_bytes", hp.gpu_bytes}, {"tiles", hp.tiles}, {"window_legend", hp.window_legend},
                     {"sink_legend", hp.sink_legend}}},
        {"window", trace.window},
        {"sink_hidden", st.sink_hidden},
        {"steps_head", st.steps.head},
        {"steps_window", {st.steps.first_query, st.steps.first_key}},  // the 16 queries and keys shown past 16 tokens (0-based)
        {"steps_why", st.steps_why},
        {"steps_said", st.steps_said},
        {"tiles", {{"on", st.steps.tiles}, {"step", st.steps.tile_step}, {"rows", st.steps_tile().rows}, {"cols", st.steps_tile().cols}}},
        {"theme_auto", st.theme_auto},
        {"text_scale", st.text_scale},
        {"lang", st.lang == Lang::Zh ? "zh" : "en"},
        {"showing_preset", st.showing_preset()},
        {"scenes", scene_list},  // every built-in scene's name, the live ones after the presets
        {"preset", st.preset_name},
        {"figure_name", st.figure.name},
        {"kind", kind_name(trace.kind)},
        {"queries", trace.queries},
        {"keys", trace.keys},
        {"heads", trace.heads},
        {"allowed", allowed},
        {"error", st.error},
        {"hint", view_hint(st)},  // the status bar's
        {"hover", ref(st.hover)},
        {"pinned", ref(st.pinned)},
        {"lines_drawn", st.lines_drawn},
        {"lines_ready", st.lines_ready},
        {"top_k", st.lines.top_k},
        {"figure", rect(st.figure_rect)},
        {"grid", rect(st.grid_rect)},
        {"query_rects", queries},
        {"key_rects", keys},
        {"widgets", widgets},
        {"steps", steps},
    };
    add_import_json(st, j);
    add_served_json(st, j);
    add_model_json(st, j);
    return j;
}

std::string App::state_json() const {
    using nlohmann::json;
    json j = figure_state_json(state);
    const ExportRecord& last = panels.exports.last;
    j.update({
        {"frame", frame_count},
        {"isa", kernels::isa_name(kernels::best_isa())},  // which build the page loaded
        {"threads", state.model.threads_used()},  // a live model's runs
        {"most_threads", kernels::Pool::threads_for(state.model.most_threads)},  // what the Threads setting allows
        {"ui_scale", ui_scale_},
        {"link", shown_hash_},
        {"twin", twin.summary},
        {"typing", typing_},  // the twin and the link wait for the pause
        {"cursor", {{"on", state.cursor.on}, {"q", state.cursor.q}, {"k", state.cursor.k}, {"step", state.cursor.step}}},
        {"pinned_step", state.pinned_step},
        {"pinned_cell", {state.pinned_q, state.pinned_k}},
        {"copied", panels.share.copied},
        {"export", {{"count", last.count}, {"file", last.file}, {"width", last.width}, {"height", last.height}, {"error", last.error}}},
        {"frame_time", frame_times_json(state, frame_times)},
        {"fonts", {{"glyphs", fonts.glyph_count()}, {"missing", fonts.missing_count()}, {"px", fonts.body ? fonts.body->FontSize : 0.0f},
                   {"rebuilds", fonts.rebuild_count()}, {"font_pending", fonts.font_pending()}}},
    });
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace attn
