// test_hook.cpp: C entry points the page calls (web build; harmless natively).
//   attnviz_state()          JSON of the app state for the browser tests
//   attnviz_text_input(s)    text from the page's hidden text field (IME, paste, insertText)
//   attnviz_font_loaded()    the full CJK font has been written to the virtual file system
#include "app.hpp"

#include <imgui.h>

#include <string>

extern "C" {

const char* attnviz_state() {
    static std::string json;
    attn::App* app = attn::current_app();
    json = app ? app->state_json() : "{}";
    return json.c_str();
}

void attnviz_text_input(const char* utf8) {
    if (utf8 && ImGui::GetCurrentContext()) ImGui::GetIO().AddInputCharactersUTF8(utf8);
}

void attnviz_font_loaded() {
    if (attn::App* app = attn::current_app()) app->fonts.font_arrived();
}

}  // extern "C"
