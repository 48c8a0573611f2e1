// main.cpp: the one main of both targets (after ImGui's example_glfw_opengl3): the command
// line (command_line.hpp), the window, the frame loop. The only __EMSCRIPTEN__ branches are the
// command line (the desktop's only), the main loop, the canvas callbacks and the ini file;
// everything else that differs lives in platform.hpp.
#include "app.hpp"
#include "cli.hpp"
#include "command_line.hpp"
#include "import.hpp"
#include "live_scenes.hpp"
#include "model_state.hpp"
#include "pool.hpp"
#include "platform.hpp"

#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>

#ifdef __EMSCRIPTEN__
#include <emscripten.h>
#include <emscripten/html5.h>
#endif

namespace {

// The window and the app in it. Reached from GLFW's callbacks through the window's user
// pointer, from ImGui's IME callback through io.UserData and from the page's hooks through
// Module.attnvizApp (main/test_hook.cpp): nothing global.
struct Window {
    GLFWwindow* window = nullptr;
    attn::App app;
    GLFWkeyfun imgui_key = nullptr;  // ImGui's GLFW callbacks, fed from app.input each frame
    GLFWcharfun imgui_char = nullptr;
    float ime_x = 0.0f, ime_y = 0.0f;
};
Window& window_of(GLFWwindow* w) { return *static_cast<Window*>(glfwGetWindowUserPointer(w)); }

#ifdef __EMSCRIPTEN__
// Canvas callback: keep the framebuffer at the canvas's CSS size × devicePixelRatio, so the
// canvas follows its container and stays crisp on high-DPI screens. Browser.setCanvasSize
// tells GLFW the new size (glfwSetWindowSize would ask for fullscreen whenever the size
// equals the screen's).
EM_JS(void, fit_canvas, (), {
    var canvas = Module['canvas'];
    var rect = canvas.getBoundingClientRect();
    var ratio = window.devicePixelRatio || 1;
    var w = Math.round(rect.width * ratio), h = Math.round(rect.height * ratio);
    if (w > 0 && h > 0 && (canvas.width !== w || canvas.height !== h)) Browser.setCanvasSize(w, h);
});
#endif

// Key and text events since the last frame, as many as ImGui can tell apart (input_queue.hpp).
void hand_input_to_imgui(Window& w) {
    for (const attn::InputEvent& e : w.app.input.take_frame()) {
        if (!e.is_text())
            w.imgui_key(w.window, e.key, e.scancode, e.action, e.mods);
        else if (e.codepoint != 0)
            w.imgui_char(w.window, e.codepoint);
        else
            ImGui::GetIO().AddInputCharactersUTF8(e.text.c_str());
    }
}

void frame(void* arg) {
    Window& w = *static_cast<Window*>(arg);
    attn::App& app = w.app;
    glfwPollEvents();
    hand_input_to_imgui(w);
#ifdef __EMSCRIPTEN__
    fit_canvas();
#endif
    app.before_frame(attn::platform::ui_scale(w.window));
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    float finger[2];
    bool finger_down = false;
    if (attn::platform::take_touch(finger, finger_down)) {  // browser: a finger is the pointer
        ImGui::GetIO().MousePos = ImVec2(finger[0], finger[1]);
        ImGui::GetIO().MouseDown[0] = finger_down;
    }
    ImGui::NewFrame();
    app.build_ui();
    ImGui::Render();

    app.before_render();
    // Nothing changed since the last drawn frame (browser only): draw nothing, and the browser
    // keeps showing it (a WebGL canvas is composited anew only when drawn to). The desktop
    // draws every frame: its swap is what paces the loop.
    if (!app.frame_unchanged()) {
        int width = 0, height = 0;
        glfwGetFramebufferSize(w.window, &width, &height);
        glViewport(0, 0, width, height);
        glClearColor(0.1f, 0.1f, 0.12f, 1.0f);
        glClear(GL_COLOR_BUFFER_BIT);
        ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
        app.after_render();
    }
    attn::platform::set_text_input(ImGui::GetIO().WantTextInput, w.ime_x, w.ime_y);
    attn::platform::set_cursor(ImGui::GetMouseCursor());
    glfwSwapBuffers(w.window);
#ifdef __EMSCRIPTEN__
    if (app.frame_count == 1) EM_ASM({ if (Module.onFirstFrame) Module.onFirstFrame(); });
#endif
}

}  // namespace

int main(int argc, char** argv) {
    attn::Launch launch;  // the browser has no command line: its link says what to open
#ifndef __EMSCRIPTEN__
    attn::kernels::keep_freed_memory();  // a model's run allocates block by block (pool.hpp)
    if (const std::optional<int> exit_code = attn::read_command_line(argc, argv, launch)) return *exit_code;
#else
    (void)argc, (void)argv;
#endif

    // Lives as long as the program: the browser's main loop outlives main().
    Window& w = *new Window;
    attn::App& app = w.app;
    glfwSetErrorCallback([](int, const char* description) { std::fprintf(stderr, "glfw: %s\n", description); });
    attn::platform::install_keyboard();  // before GLFW's listeners
    if (!glfwInit()) return 1;
    attn::platform::hint_gl33_core();
    w.window = glfwCreateWindow(1280, 800, "attnviz", nullptr, nullptr);
    if (!w.window) {
        std::fprintf(stderr, "attnviz: could not open an OpenGL 3.3 window\n");
        glfwTerminate();
        return 1;
    }
    glfwSetWindowUserPointer(w.window, &w);
    glfwMakeContextCurrent(w.window);
    attn::platform::cache_gl_state();
    glfwSwapInterval(1);

    IMGUI_CHECKVERSION();
    ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    // The ini file: the layout is fixed and rebuilt every frame, so neither target keeps one.
    io.IniFilename = nullptr;
    io.UserData = &w;
    io.ImeSetInputScreenPosFn = [](int x, int y) {
        Window& ime = *static_cast<Window*>(ImGui::GetIO().UserData);
        ime.ime_x = static_cast<float>(x);
        ime.ime_y = static_cast<float>(y);
    };
    if (!attn::platform::kGlfwCursors) io.ConfigFlags |= ImGuiConfigFlags_NoMouseCursorChange;
    ImGui_ImplGlfw_InitForOpenGL(w.window, true);
    glfwSetScrollCallback(w.window, [](GLFWwindow* win, double x, double y) {
        attn::platform::wheel_to_imgui(x, y);
        ImGui_ImplGlfw_ScrollCallback(win, x, y);
    });
    w.imgui_key = glfwSetKeyCallback(w.window, [](GLFWwindow* win, int key, int scancode, int action, int mods) {
        window_of(win).app.input.push({key, scancode, action, mods, {}, 0});
    });
    w.imgui_char = glfwSetCharCallback(w.window, [](GLFWwindow* win, unsigned int c) {
        window_of(win).app.input.push({-1, 0, 0, 0, {}, c});
    });
    if (attn::platform::kGlfwFileDrop)
        glfwSetDropCallback(w.window, [](GLFWwindow* win, int count, const char** paths) {
            if (count > 0) attn::open_file_path(window_of(win).app.state, paths[0]);
        });
    attn::platform::install_clipboard();
    ImGui_ImplOpenGL3_Init(attn::platform::kImGuiGlslVersion);

    attn::platform::publish_app(&app);
    // A live model's threads: the desktop's --threads (else every core; the panel's setting goes up
    // to the larger), the page's choice (else one) within the Workers it started.
    if (launch.threads > 0) app.state.model.most_threads = std::max(launch.threads, app.state.model.most_threads);
    else if (attn::platform::page_threads() > 0) app.state.model.most_threads = attn::platform::page_most_threads();
    if (const int threads = launch.threads > 0 ? launch.threads : attn::platform::page_threads(); threads > 0)
        attn::set_model_threads(app.state.model, threads);
    // A live model's runs on a thread of their own where the build has threads (natively; the
    // page's threaded module, attnviz-page.js), so frames never wait for one.
    app.state.model.background = attn::kernels::Pool::threads_for(2) > 1;
    if (launch.scene) app.state.load_scene(*launch.scene);
    std::string error;
    if (!app.init(error)) {
        std::fprintf(stderr, "attnviz: %s\n", error.c_str());
        return 1;
    }
    if (!launch.model_folder.empty() && !attn::open_model_folder(app.state, launch.model_folder)) {
        std::fprintf(stderr, "%s\n", app.state.error.c_str());
        return attn::kExitBadInput;
    }
    if (launch.live_scene) attn::open_live_scene(app.state, *launch.live_scene);
    if (!launch.builtin.empty()) attn::open_builtin_model(app.state, launch.builtin);
    if (launch.model_options) {  // the command line's (a link's experiment, in the page, stays)
        if (launch.text) app.state.model.text = *launch.text;
        if (launch.compare) app.state.model.compare = *launch.compare;
        app.state.model.experiment = launch.experiment;
        app.state.model.generation = launch.generation;
    }
    if (!launch.image.empty()) {  // a vision model's picture: a file that is none is one line, exit 2
        std::string bytes;
        if (!attn::read_file(launch.image, bytes)) {
            std::fprintf(stderr, "attnviz: %s: cannot read the picture\n", launch.image.c_str());
            return attn::kExitBadInput;
        }
        attn::set_model_picture(app.state, launch.image, bytes);
        if (!app.state.error.empty()) {
            std::fprintf(stderr, "%s\n", app.state.error.c_str());
            return attn::kExitBadInput;
        }
    }
    if (launch.imported.has(attn::Detail::Layers)) {
        app.state.figure = std::move(launch.imported);
        app.state.view = attn::View::Model;
        attn::select_import_map(app.state, 0, 0);
    }

#ifdef __EMSCRIPTEN__
    emscripten_set_main_loop_arg(frame, &w, 0, true);
#else
    while (!glfwWindowShouldClose(w.window)) frame(&w);
    app.shutdown();
    ImGui_ImplOpenGL3_Shutdown();
    ImGui_ImplGlfw_Shutdown();
    ImGui::DestroyContext();
    glfwDestroyWindow(w.window);
    glfwTerminate();
    delete &w;
#endif
    return 0;
}
