// app.hpp: one running visualizer: state, renderer and fonts, and the frame around them.
// main.cpp (window) and render_command.cpp (PNG) both drive it.
#pragma once

#include "app_state.hpp"
#include "fonts.hpp"
#include "frame_overlay.hpp"
#include "input_queue.hpp"
#include "link_state.hpp"
#include "renderer.hpp"

#include <string>

namespace attn {

class App {
public:
    AppState state;
    Renderer renderer;
    Fonts fonts;
    bool figure_only = false;  // PNG export: the figure alone
    int frame_count = 0;
    FrameTimes frame_times;    // of the window's frames (not of PNG exports)
    InputQueue input;          // keys and text on their way to ImGui (main.cpp)
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
    // The state the browser tests read (JSON).
    std::string state_json() const;
    // The link (link_state.hpp): a hash the page opened or changed to. A bad one keeps the
    // figure, shows the error line and stays in the address bar until the state changes.
    void open_link_hash(const std::string& hash);
    // A message from the parent page (link_state.hpp handle_message); "" = no reply.
    std::string handle_page_message(const std::string& message_json);

private:
    // Keeps the address bar's hash in step with the state, at most four times a second.
    void sync_link();
    std::string shown_hash_;
    double link_checked_at_ = -1.0;

    float ui_scale_ = 1.0f;
    std::uint64_t last_signature_ = 0;
    bool unchanged_ = false;
    float styled_scale_ = 0.0f;
    Theme styled_theme_ = Theme::Dark;
};

// The app the JS test hook and the browser callbacks talk to.
App* current_app();
void set_current_app(App* app);

}  // namespace attn
