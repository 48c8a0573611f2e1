// app.hpp: one running visualizer: state, renderer, fonts, the views and the panels' memory,
// and the frame around them. main.cpp drives it; an export draws its views off screen.
#pragma once

#include "access.hpp"
#include "app_state.hpp"
#include "fonts.hpp"
#include "frame_overlay.hpp"
#include "input_queue.hpp"
#include "panels.hpp"
#include "link_state.hpp"
#include "renderer.hpp"
#include "platform.hpp"
#include "view.hpp"

#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <string>
#include <vector>

namespace attn {

class App {
public:
    AppState state;
    Renderer renderer;
    Fonts fonts;
    Views views;
    PanelState panels;
    int frame_count = 0;
    FrameTimes frame_times;    // of the window's frames (not of PNG exports)
    InputQueue input;          // keys and text on their way to ImGui (main.cpp)
    std::string page_reply;    // the last string a page hook returned (main/test_hook.cpp): lives until the next
    TwinState twin;             // what the page's accessible twin of the figure shows (access.hpp)
    LinkSceneCache link_cache;  // the scene's part of the address bar's link and the embed dialog's

    // Needs a current GL context and ImGui's GL backend initialised.
    bool init(std::string& error);
    void shutdown();
    // Before ImGui::NewFrame: bakes missing glyphs, applies theme and scale.
    void before_frame(float ui_scale);
    // Between ImGui::NewFrame and ImGui::Render.
    void build_ui();
    // After ImGui::Render, before ImGui_ImplOpenGL3_RenderDrawData.
    void before_render();
    // After ImGui_ImplOpenGL3_RenderDrawData (the window's frames): the GPU-time diagnostic.
    void after_render();
    // Whether this frame would draw exactly what the last drawn one did (the same draw lists,
    // the same figure content): then the browser can keep showing it (main.cpp), and an idle
    // figure costs no rasterization at all. Set by before_render.
    bool frame_unchanged() const { return unchanged_; }
    float ui_scale() const { return ui_scale_; }
    // The state the browser tests read (JSON): figure_state_json and the app's own.
    std::string state_json() const;
    // The link (link_state.hpp): a hash the page opened or changed to. A bad one keeps the
    // figure, shows the error line and stays in the address bar until the state changes.
    void open_link_hash(const std::string& hash);
    // A message from the parent page (link_state.hpp handle_message); "" = no reply.
    std::string handle_page_message(const std::string& message_json);
    // Browser: the window of a model's checkpoint that the weights waited for is in
    // (main/model_hook.cpp): they load on at once, within a frame's budget, and ask the page for
    // the next, so that loading goes at the speed of reading the file, not one window a frame.
    void model_window_filled();

private:
    // Keeps the address bar's hash in step with the state, at most four times a second.
    void sync_link();
    // Browser: passes the window the weights wait for (ModelSession::slice_request) to the page.
    void ask_for_model_window();
    void send_served_requests();
    // Starts the fetch of a Hub id the reader asked for (ModelSession::hub_request), carries its
    // progress into ModelSession::fetching and its end into the state (hub_fetch_done, _failed).
    void follow_hub_fetch();
    std::unique_ptr<platform::HubFetch> hub_fetch_;
    // Sets typing_, once a frame (build_ui): whether the reader is typing into a live model's
    // text, its last edit less than kTypingPauseSeconds old. The twin and the link then wait for
    // the pause, so a keystroke's frame rebuilds neither the twin's table (and the page's layout
    // of it) nor the address bar's history entry, and a screen reader hears the figure once,
    // when typing stops.
    void note_typing();
    bool typing_ = false;  // this frame's (the tests' state: "typing")
    std::string shown_hash_;
    double link_checked_at_ = -1.0;
    int typed_revision_ = 0;
    double typed_at_ = -1e9;

    float ui_scale_ = 1.0f;
    std::uint64_t last_signature_ = 0;
    bool unchanged_ = false;
    float styled_scale_ = 0.0f;
    Theme styled_theme_ = Theme::Dark;
    bool styled_touch_ = false;
    std::vector<float> text_boxes_;  // as the page last got them (platform::set_text_boxes)
};

// What the views drew of the figure: tokens, rectangles, the heatmap's and the import's state
// (the browser tests, and `attnviz render --layout`).
nlohmann::json figure_state_json(const AppState& st);

}  // namespace attn
