// platform_desktop.cpp: the desktop side of platform.hpp.
#include "platform.hpp"

#include "png.hpp"

#include <GLFW/glfw3.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

namespace attn::platform {

float ui_scale(GLFWwindow* window) {
    // ImGui works in window coordinates. Where those are pixels (X11) the content scale is the
    // UI scale; where the framebuffer is already larger than the window (macOS, Wayland) the
    // system scales for us, so only what is left over is applied.
    float x = 1.0f, y = 1.0f;
    int window_w = 0, window_h = 0, fb_w = 0, fb_h = 0;
    if (!window) return 1.0f;
    glfwGetWindowContentScale(window, &x, &y);
    glfwGetWindowSize(window, &window_w, &window_h);
    glfwGetFramebufferSize(window, &fb_w, &fb_h);
    float system = window_w > 0 && fb_w > 0 ? static_cast<float>(fb_w) / static_cast<float>(window_w) : 1.0f;
    float scale = x / std::max(system, 1.0f);
    return scale > 0.5f ? scale : 1.0f;
}

void request_font(const char*) {}  // the desktop reads the full font from the Debian package
void set_text_input(bool, float, float) {}  // GLFW delivers IME text as characters
void install_clipboard() {}                 // ImGui's GLFW backend uses GLFW's clipboard
void set_cursor(int) {}                     // ImGui's GLFW backend sets the cursor
bool prefers_dark() { return true; }        // GLFW exposes no system colour scheme
bool coarse_pointer() { return false; }
int page_threads() { return 0; }
int page_most_threads() { return 0; }
bool take_touch(float*, bool&) { return false; }
void install_keyboard() {}
void cache_gl_state() {}  // a desktop driver answers glGet from its own copy
void set_text_boxes(const std::vector<float>&) {}
int figure_focus() { return 1; }
void show_twin(const std::string&) {}
bool reduced_motion() { return false; }

namespace {
// name, or name-2, name-3 … before the extension: the first that does not exist yet.
std::filesystem::path fresh_path(const std::string& name) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::path base = fs::absolute(name, ec);
    if (ec) base = name;
    fs::path path = base;
    for (int n = 2; fs::exists(path, ec) && n < 10000; ++n)
        path = base.parent_path() / (base.stem().string() + "-" + std::to_string(n) + base.extension().string());
    return path;
}
}  // namespace

std::string save_file(const std::string& name, const std::string&, const std::string& bytes, std::string& error) {
    const std::filesystem::path path = fresh_path(name);
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) {
        error = path.string() + ": cannot open for writing";
        return "";
    }
    bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    ok = std::fclose(f) == 0 && ok;
    if (!ok) {
        error = path.string() + ": write failed";
        return "";
    }
    return path.string();
}

std::string save_png(const std::string& name, const std::vector<std::uint8_t>& rgba, int width, int height,
                     std::string& error) {
    const std::filesystem::path path = fresh_path(name);
    return write_png(path.string(), rgba, width, height, error) ? path.string() : "";
}

std::string start_link() { return ""; }
void show_link(const std::string&) {}
std::string page_url() { return "index.html"; }
void open_url(const std::string&) {}
void pass_wheel_to_page(bool) {}
void wheel_to_imgui(double&, double&) {}
void wheel_zoom(bool, const float*) {}
ZoomGesture take_zoom(float imgui_wheel) {
    ZoomGesture g;
    g.log = imgui_wheel * 0.22314355f;  // ln 1.25 a notch
    return g;
}
void hint_gl33_core() {
    glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
    glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
    glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
}

void open_file_picker() {}                  // the desktop asks for a path (web/ui/model_view.cpp)
void fetch_builtin_model(const char*, const char*) {}
bool served_request(int, const char*, const char*, const char*, const char*) { return false; }  // compiled in (core/model/builtin.hpp)
void read_model_slice(const char*, double, double) {}  // mapped files hold every window
void open_folder_picker() {}                // and for a folder (web/ui/live_panel.cpp)

void publish_app(void*) {}

// Models by name (HubFetch::start, hub_dialog_opened, remove_stored_hub, hub_endpoint,
// set_hub_endpoint): main/desktop_hub.cpp, which can reach the fetch (main/hub_fetch.hpp).


}  // namespace attn::platform
