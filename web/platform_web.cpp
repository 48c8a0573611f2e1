// platform_web.cpp: the browser side of platform.hpp (Emscripten).
#include "platform.hpp"

#include <imgui.h>

#include <emscripten.h>
#include <emscripten/html5.h>

// Fetches fonts/NAME next to the page, writes it into the virtual file system and tells the
// app (on failure too, with nothing written); the atlas is rebuilt before the next frame.
EM_JS(void, attnviz_fetch_font, (const char* name_utf8), {
    var name = UTF8ToString(name_utf8);
    var done = function(ok) {
        _attnviz_font_loaded();
        if (Module.onFontStatus) Module.onFontStatus(name, ok);
    };
    fetch('fonts/' + name).then(function(r) {
        if (!r.ok) throw new Error('HTTP ' + r.status);
        return r.arrayBuffer();
    }).then(function(bytes) {
        FS.writeFile('/fonts/' + name, new Uint8Array(bytes));
        done(true);
    }).catch(function(e) { console.warn('attnviz: font ' + name + ' unavailable: ' + e); done(false); });
});

// The page's hidden <textarea id="attnviz-text"> takes IME composition, paste and inserted
// text while an ImGui text box is active (index.html forwards it to attnviz_text_input).
EM_JS(void, attnviz_text_field, (int active, float x, float y), {
    var field = document.getElementById('attnviz-text');
    var canvas = Module['canvas'];
    if (!field || !canvas) return;
    if (active) {
        var rect = canvas.getBoundingClientRect();
        var k = rect.width / Math.max(canvas.width, 1);
        field.style.left = (rect.left + x * k) + 'px';
        field.style.top = (rect.top + y * k) + 'px';
        if (document.activeElement !== field) field.focus({preventScroll: true});
    } else if (document.activeElement === field) {
        field.blur();
    }
});

EM_JS(void, attnviz_css_cursor, (int cursor), {
    // ImGuiMouseCursor_: Arrow, TextInput, ResizeAll, ResizeNS, ResizeEW, ResizeNESW, ResizeNWSE, Hand, NotAllowed
    var names = ['default', 'text', 'move', 'ns-resize', 'ew-resize', 'nesw-resize', 'nwse-resize', 'pointer', 'not-allowed'];
    var canvas = Module['canvas'];
    var name = names[cursor] || (cursor < 0 ? 'none' : 'default');
    if (canvas && canvas.style.cursor !== name) canvas.style.cursor = name;
});

EM_JS(void, attnviz_copy_text, (const char* utf8), {
    var text = UTF8ToString(utf8);
    if (navigator.clipboard && navigator.clipboard.writeText)
        navigator.clipboard.writeText(text).catch(function() {});
});

// The page's hidden <input type=file id="attnviz-file"> (index.html reads the chosen file).
// Called in the frame after a click: browsers still count that as the user's gesture.
EM_JS(void, attnviz_pick_file, (), {
    var input = document.getElementById('attnviz-file');
    if (input) input.click();
});

namespace attn::platform {

float ui_scale(GLFWwindow*) {
    double ratio = emscripten_get_device_pixel_ratio();
    return ratio > 0.5 ? static_cast<float>(ratio) : 1.0f;
}

void request_font(const char* name) { attnviz_fetch_font(name); }

void set_text_input(bool active, float x, float y) { attnviz_text_field(active ? 1 : 0, x, y); }

void set_cursor(int imgui_cursor) { attnviz_css_cursor(imgui_cursor); }

void open_file_picker() { attnviz_pick_file(); }

void install_file_drop(GLFWwindow*, void (*)(const char*)) {}  // index.html handles drops

void install_clipboard() {
    ImGuiIO& io = ImGui::GetIO();
    io.SetClipboardTextFn = [](void*, const char* text) { attnviz_copy_text(text); };
    io.GetClipboardTextFn = [](void*) -> const char* { return ""; };
}

}  // namespace attn::platform

#include "render_command.hpp"

#include <cstdio>

namespace attn {

int run_render(int, char**) {
    std::fprintf(stderr, "attnviz render: only in the desktop build\n");
    return 2;
}

}  // namespace attn
