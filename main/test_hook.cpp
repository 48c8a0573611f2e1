// test_hook.cpp: C entry points the page calls (web build only). Each reaches the app of its own
// module instance, which main() published as Module.attnvizApp (platform::publish_app): several
// figures on one page (the script-tag embed) are several instances, each with its own app.
//   attnviz_state()          JSON of the app state for the browser tests
//   attnviz_text_input(s)    text from the page's hidden text field (IME, paste, insertText)
//   attnviz_font_loaded()    the full CJK font has been written to the virtual file system
//   attnviz_open_link(h)     the page's hash changed (link_state.hpp)
//   attnviz_message(json)    a message from the parent page; returns the reply JSON or ""
//   attnviz_gpu_sync(on)     frame-time diagnostic: wait for the GPU each frame (frame_overlay.hpp)
#include "page_app.hpp"

extern "C" {

const char* attnviz_state() {
    attn::App* app = attn::page_app();
    if (!app) return "{}";
    app->page_reply = app->state_json();
    return app->page_reply.c_str();
}

void attnviz_text_input(const char* utf8) {
    if (attn::App* app = attn::page_app(); app && utf8 && *utf8) app->input.push({-1, 0, 0, 0, utf8, 0});
}

void attnviz_font_loaded() {
    if (attn::App* app = attn::page_app()) app->fonts.font_arrived();
}

void attnviz_open_link(const char* hash) {
    if (attn::App* app = attn::page_app(); app && hash) app->open_link_hash(hash);
}

const char* attnviz_message(const char* json) {
    attn::App* app = attn::page_app();
    if (!app) return "";
    app->page_reply = json ? app->handle_page_message(json) : "";
    return app->page_reply.c_str();
}

void attnviz_gpu_sync(int on) {
    if (attn::App* app = attn::page_app()) app->frame_times.gpu_sync = on != 0;
}

}  // extern "C"
