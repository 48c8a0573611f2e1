// app.cpp: the frame around the panels, and the JSON the browser tests read.
#include "app.hpp"

#include "link_panel.hpp"
#include "link_state.hpp"
#include "export.hpp"
#include "panels.hpp"
#include "platform.hpp"
#include "presets.hpp"
#include "theme.hpp"

#include <imgui.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace attn {
namespace {
App* g_app = nullptr;
}

App* current_app() { return g_app; }
void set_current_app(App* app) { g_app = app; }

bool App::init(std::string& error) {
    if (!renderer.init(error)) return false;
    if (state.scene.tokens.empty() && state.figure.empty()) {
        if (find_preset("i-am-good")) state.load_preset("i-am-good");
        else if (!presets().empty()) state.load_preset(presets().front().name);
    }
    if (!figure_only) {
        const std::string hash = platform::start_link();
        if (hash.size() > 1) open_link_hash(hash);
    }
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

void App::sync_link() {
    const double now = ImGui::GetTime();
    if (figure_only || state.figure.empty() || now - link_checked_at_ < 0.25) return;
    link_checked_at_ = now;
    std::string hash = encode_link(link_from_app(state), &link_cache);
    if (hash == shown_hash_) return;
    shown_hash_ = std::move(hash);
    platform::show_link(shown_hash_);
}

void App::shutdown() { renderer.shutdown(); }

void App::before_frame(float ui_scale) {
    if (!figure_only) frame_times.begin_frame();
    if (!figure_only) run_pending_export(*this);  // between frames, outside ImGui's frame
    if (state.theme_auto) state.theme = platform::prefers_dark() ? Theme::Dark : Theme::Light;
    state.text_scale = std::clamp(state.text_scale, kMinTextScale, kMaxTextScale);
    ui_scale *= state.text_scale;
    ui_scale_ = ui_scale;
    collect_text(state, fonts);
    fonts.update(ui_scale);
    if (styled_scale_ != ui_scale || styled_theme_ != state.theme) {
        apply_theme(state.theme, ui_scale);
        styled_scale_ = ui_scale;
        styled_theme_ = state.theme;
    }
}

void App::build_ui() {
    renderer.begin_frame();
    advance_import_load(state);  // a file whose bytes are all in is parsed here
    set_ui_language(state.lang);
    state.probe.clear();
    ViewContext ctx{state, renderer, fonts, ui_scale_, !figure_only, &link_cache};
    if (!figure_only && !state.show_panels) draw_figure_only(ctx);
    else draw_app(ctx, figure_only);
    if (!figure_only) draw_frame_overlay(ctx, frame_times);
    // Only the Steps view scrolls; a figure-only Lines or heatmap leaves the wheel to the page.
    if (!figure_only) platform::pass_wheel_to_page(!state.show_panels && state.view != View::Steps);
    if (!figure_only) platform::wheel_zoom(state.view == View::Heatmap, state.grid_rect.data());
    sync_link();
    ++frame_count;
}

void App::before_render() {
    renderer.upload_frame();
    if (figure_only) return;
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
    if (figure_only || !frame_times.gpu_sync) return;
    unsigned char pixel[4];
    glReadPixels(0, 0, 1, 1, GL_RGBA, GL_UNSIGNED_BYTE, pixel);  // returns once the GPU has drawn the frame
    frame_times.end_gpu();
}

std::string App::state_json() const {
    using nlohmann::json;
    const AppState& st = state;
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
    // The mask cell by cell for small figures only: at thousands of tokens it would be megabytes a call.
    json allowed = json::array();
    const bool small_mask = st.figure.trace().allowed.size() <= 65536;
    for (Eigen::Index i = 0; small_mask && i < st.figure.trace().allowed.rows(); ++i) {
        json row = json::array();
        for (Eigen::Index j = 0; j < st.figure.trace().allowed.cols(); ++j) row.push_back(static_cast<int>(st.figure.trace().allowed(i, j)));
        allowed.push_back(row);
    }
    json j = {
        {"frame", frame_count},
        {"ui_scale", ui_scale_},
        {"view", view_name(st.view)},
        {"theme", st.theme == Theme::Dark ? "dark" : "light"},
        {"panels", st.show_panels},
        {"link", shown_hash_},
        {"copied", last_copied()},
        {"heatmap_head", st.heatmap.head},
        {"heatmap", {{"zoom", st.heatmap.zoom}, {"view_x", st.heatmap.view_x}, {"view_y", st.heatmap.view_y},
                     {"max_zoom", st.heatmap_probe.max_zoom}, {"cell", st.heatmap_probe.cell},
                     {"level", st.heatmap_probe.level},
                     {"rows", {st.heatmap_probe.row0, st.heatmap_probe.row1}},
                     {"cols", {st.heatmap_probe.col0, st.heatmap_probe.col1}},
                     {"labels_q", st.heatmap_probe.labels_q}, {"labels_k", st.heatmap_probe.labels_k},
                     {"numbers", st.heatmap_probe.numbers}, {"progress", st.heatmap_probe.progress},
                     {"display_bytes", st.heatmap_probe.display_bytes}, {"trace_bytes", st.heatmap_probe.trace_bytes},
                     {"gpu_bytes", st.heatmap_probe.gpu_bytes}, {"tiles", st.heatmap_probe.tiles}}},
        {"steps_head", st.steps.head},
        {"theme_auto", st.theme_auto},
        {"text_scale", st.text_scale},
        {"export", {{"count", last_export().count}, {"file", last_export().file}, {"width", last_export().width},
                    {"height", last_export().height}, {"error", last_export().error}}},
        {"lang", st.lang == Lang::Zh ? "zh" : "en"},
        {"showing_preset", st.showing_preset()},
        {"preset", st.preset_name},
        {"kind", kind_name(st.figure.trace().kind)},
        {"queries", st.figure.trace().queries},
        {"keys", st.figure.trace().keys},
        {"heads", st.figure.trace().heads},
        {"allowed", allowed},
        {"error", st.error},
        {"hover", ref(st.hover)},
        {"pinned", ref(st.pinned)},
        {"lines_drawn", st.lines_drawn},
        {"lines_ready", st.lines_ready},
        {"top_k", st.lines.top_k},
        {"frame_time", frame_times_json(st, frame_times)},
        {"figure", rect(st.figure_rect)},
        {"grid", rect(st.grid_rect)},
        {"query_rects", queries},
        {"key_rects", keys},
        {"widgets", widgets},
        {"steps", steps},
        {"fonts", {{"glyphs", fonts.glyph_count()}, {"missing", fonts.missing_count()}, {"px", fonts.body ? fonts.body->FontSize : 0.0f}, {"rebuilds", fonts.rebuild_count()},
                   {"font_pending", fonts.font_pending()}}},
    };
    add_import_json(st, j);
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace attn
