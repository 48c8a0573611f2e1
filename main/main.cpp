// main.cpp: the one main of both targets (after ImGui's example_glfw_opengl3): the command
// line, the window, the frame loop. The only __EMSCRIPTEN__ branches are the main loop, the
// canvas callbacks and the ini file; everything else that differs lives in platform.hpp.
#include "app.hpp"
#include "cli.hpp"
#include "platform.hpp"
#include "render_command.hpp"

#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <string>

#ifdef __EMSCRIPTEN__
#include <emscripten.h>
#include <emscripten/html5.h>
#endif

namespace {

GLFWwindow* g_window = nullptr;
attn::App g_app;
GLFWkeyfun g_imgui_key = nullptr;  // ImGui's GLFW callbacks, fed from g_app.input each frame
GLFWcharfun g_imgui_char = nullptr;
float g_ime_x = 0.0f, g_ime_y = 0.0f;

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
void hand_input_to_imgui() {
    for (const attn::InputEvent& e : g_app.input.take_frame()) {
        if (!e.is_text())
            g_imgui_key(g_window, e.key, e.scancode, e.action, e.mods);
        else if (e.codepoint != 0)
            g_imgui_char(g_window, e.codepoint);
        else
            ImGui::GetIO().AddInputCharactersUTF8(e.text.c_str());
    }
}

void frame() {
    glfwPollEvents();
    hand_input_to_imgui();
#ifdef __EMSCRIPTEN__
    fit_canvas();
#endif
    g_app.before_frame(attn::platform::ui_scale(g_window));
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    ImGui::NewFrame();
    g_app.build_ui();
    ImGui::Render();

    g_app.before_render();
    // Nothing changed since the last drawn frame (browser only): draw nothing, and the browser
    // keeps showing it (a WebGL canvas is composited anew only when drawn to). The desktop
    // draws every frame: its swap is what paces the loop.
    if (!g_app.frame_unchanged()) {
        int width = 0, height = 0;
        glfwGetFramebufferSize(g_window, &width, &height);
        glViewport(0, 0, width, height);
        glClearColor(0.1f, 0.1f, 0.12f, 1.0f);
        glClear(GL_COLOR_BUFFER_BIT);
        ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
        g_app.after_render();
    }
    attn::platform::set_text_input(ImGui::GetIO().WantTextInput, g_ime_x, g_ime_y);
    attn::platform::set_cursor(ImGui::GetMouseCursor());
    glfwSwapBuffers(g_window);
#ifdef __EMSCRIPTEN__
    if (g_app.frame_count == 1) EM_ASM({ if (Module.onFirstFrame) Module.onFirstFrame(); });
#endif
}

}  // namespace

int main(int argc, char** argv) {
    int code = attn::run_cli(argc, argv);
    if (code != attn::kNotACommand) return code;
    if (argc > 1 && std::strcmp(argv[1], "render") == 0) return attn::run_render(argc, argv);

    std::optional<attn::Scene> scene;
    attn::ImportView imported;  // `attnviz MODEL.json`: attention exported from a model
    if (argc > 1 && std::strcmp(argv[1], "-") != 0) {
        std::string text;
        if (attn::read_file(argv[1], text) && attn::file_kind(text) == attn::FileKind::Import) {
            attn::AppState reader;
            if (!attn::import_attention(reader, text, argv[1])) {
                std::fprintf(stderr, "%s\n", reader.error.c_str());
                return attn::kExitBadInput;
            }
            imported = std::move(reader.imported);
        }
    }
    if (argc > 1 && !imported.active()) {
        attn::Scene loaded;
        std::string error;
        if (!attn::load_scene_file(argv[1], std::cin, loaded, error)) {
            std::fprintf(stderr, "%s\n", error.c_str());
            return attn::kExitBadInput;
        }
        scene = std::move(loaded);
    }

    glfwSetErrorCallback([](int, const char* description) { std::fprintf(stderr, "glfw: %s\n", description); });
    if (!glfwInit()) return 1;
    attn::platform::hint_gl33_core();
    g_window = glfwCreateWindow(1280, 800, "attnviz", nullptr, nullptr);
    if (!g_window) {
        std::fprintf(stderr, "attnviz: could not open an OpenGL 3.3 window\n");
        glfwTerminate();
        return 1;
    }
    glfwMakeContextCurrent(g_window);
    glfwSwapInterval(1);

    IMGUI_CHECKVERSION();
    ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    // The ini file: the layout is fixed and rebuilt every frame, so neither target keeps one.
    io.IniFilename = nullptr;
    io.ImeSetInputScreenPosFn = [](int x, int y) {
        g_ime_x = static_cast<float>(x);
        g_ime_y = static_cast<float>(y);
    };
    if (!attn::platform::kGlfwCursors) io.ConfigFlags |= ImGuiConfigFlags_NoMouseCursorChange;
    ImGui_ImplGlfw_InitForOpenGL(g_window, true);
    g_imgui_key = glfwSetKeyCallback(g_window, [](GLFWwindow*, int key, int scancode, int action, int mods) {
        g_app.input.push({key, scancode, action, mods, {}, 0});
    });
    g_imgui_char = glfwSetCharCallback(g_window, [](GLFWwindow*, unsigned int c) { g_app.input.push({-1, 0, 0, 0, {}, c}); });
    attn::platform::install_file_drop(g_window, [](const char* path) { attn::open_file_path(g_app.state, path); });
    attn::platform::install_clipboard();
    ImGui_ImplOpenGL3_Init(attn::platform::kImGuiGlslVersion);

    attn::set_current_app(&g_app);
    if (scene) g_app.state.load_scene(*scene);
    std::string error;
    if (!g_app.init(error)) {
        std::fprintf(stderr, "attnviz: %s\n", error.c_str());
        return 1;
    }
    if (imported.active()) {
        g_app.state.imported = std::move(imported);
        g_app.state.view = attn::View::Model;
        attn::select_import_map(g_app.state, 0, 0);
    }

#ifdef __EMSCRIPTEN__
    emscripten_set_main_loop(frame, 0, true);
#else
    while (!glfwWindowShouldClose(g_window)) frame();
    g_app.shutdown();
    ImGui_ImplOpenGL3_Shutdown();
    ImGui_ImplGlfw_Shutdown();
    ImGui::DestroyContext();
    glfwDestroyWindow(g_window);
    glfwTerminate();
#endif
    return 0;
}
