// main.cpp: the one main of both targets (after ImGui's example_glfw_opengl3): the command
// line, the window, the frame loop. The only __EMSCRIPTEN__ branches are the main loop, the
// canvas callbacks and the ini file; everything else that differs lives in platform.hpp.
#include "app.hpp"
#include "builtin.hpp"
#include "cli.hpp"
#include "live_scenes.hpp"
#include "model_state.hpp"
#include "platform.hpp"
#include "render_command.hpp"

#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
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
    int code = attn::run_cli(argc, argv);
    if (code != attn::kNotACommand) return code;
    if (argc > 1 && std::strcmp(argv[1], "render") == 0) return attn::run_render(argc, argv);

    std::optional<attn::Scene> scene;
    attn::Figure imported;  // `attnviz MODEL.json`: attention exported from a model
    std::string model_folder;  // `attnviz FOLDER`: a model to run live (model_state.hpp)
    std::error_code not_a_folder;
    // `attnviz induction` / `attnviz tiny-lm`: a live scene or a built-in model, when no file has that name.
    const attn::LiveScene* live_scene = nullptr;
    std::string builtin;
    if (argc > 1 && !std::filesystem::exists(argv[1], not_a_folder)) {
        live_scene = attn::find_live_scene(argv[1]);
        if (attn::find_builtin(argv[1])) builtin = argv[1];
    }
    const bool named = live_scene || !builtin.empty();
    if (!named && argc > 1 && std::filesystem::is_directory(argv[1], not_a_folder)) {
        model_folder = argv[1];
    } else if (!named && argc > 1 && std::strcmp(argv[1], "-") != 0) {
        std::string text;
        if (attn::read_file(argv[1], text) && attn::file_kind(text) == attn::FileKind::Import) {
            attn::AppState reader;
            if (!attn::import_attention(reader, text, argv[1])) {
                std::fprintf(stderr, "%s\n", reader.error.c_str());
                return attn::kExitBadInput;
            }
            imported = std::move(reader.figure);
        }
    }
    if (argc > 1 && model_folder.empty() && !imported.has(attn::Detail::Layers) && !named) {
        attn::Scene loaded;
        std::string error;
        if (!attn::load_scene_file(argv[1], std::cin, loaded, error)) {
            std::fprintf(stderr, "%s\n", error.c_str());
            return attn::kExitBadInput;
        }
        scene = std::move(loaded);
    }

    // A live model's text, experiment and generation, as `attnviz run` takes them (SPEC.md §5):
    //   attnviz tiny-lm --text "…" --knockout 2:3,1:1 --knockout-mode mean --hide-token 3 --importance
    //   attnviz tiny-lm --text "…" --generate 20 --temperature 0.8 --top-k 40 --seed 7
    //   attnviz tiny-lm --text "…" --compare "…"   (the Compare view's second text)
    std::optional<std::string> live_text, compare;
    attn::ModelExperiment experiment;
    attn::ModelGeneration generation;
    const auto number = [](const char* text, double lo, double hi, double& out) {
        char* end = nullptr;
        out = std::strtod(text, &end);
        return *text && *end == '\0' && out >= lo && out <= hi;
    };
    for (int i = 2; i < argc; ++i) {
        const std::string a = argv[i];
        const bool value = i + 1 < argc;
        double v = 0;
        try {
            if (a == "--text" && value) live_text = argv[++i];
            else if (a == "--compare" && value) compare = argv[++i];
            else if (a == "--generate" && value && number(argv[i + 1], 1, 64, v) && v == std::floor(v))
                generation.tokens = static_cast<int>(v), generation.requested = true, ++i;
            else if (a == "--temperature" && value && number(argv[i + 1], 0, 100, v)) generation.sampling.temperature = static_cast<float>(v), ++i;
            else if (a == "--top-k" && value && number(argv[i + 1], 0, 100000, v) && v == std::floor(v)) generation.sampling.top_k = static_cast<int>(v), ++i;
            else if (a == "--seed" && value && number(argv[i + 1], 0, 2147483647.0, v) && v == std::floor(v))
                generation.sampling.seed = static_cast<std::uint64_t>(v), ++i;
            else if (a == "--knockout" && value && attn::parse_head_items(argv[i + 1])) experiment.knockout = argv[++i];
            else if (a == "--knockout-mode" && value && (std::strcmp(argv[i + 1], "zero") == 0 || std::strcmp(argv[i + 1], "mean") == 0))
                experiment.ablation = std::strcmp(argv[++i], "mean") == 0 ? attn::Ablation::Mean : attn::Ablation::Zero;
            else if (a == "--hide-token" && value) experiment.hidden = attn::parse_positions(argv[++i], "--hide-token");
            else if (a == "--importance") experiment.importance = true;
            else throw attn::ModelError("", a, "expected --text \"…\", --compare \"…\", --knockout L:H,…, --knockout-mode zero|mean, "
                                                  "--hide-token N,…, --importance, --generate 1…64, --temperature T, --top-k K or --seed S after a model");
        } catch (const attn::ModelError& e) {
            std::fprintf(stderr, "attnviz: %s\n", e.what());
            return attn::kExitBadInput;
        }
    }
    if (argc > 2 && !live_scene && builtin.empty() && model_folder.empty()) {
        std::fprintf(stderr, "attnviz: --text and the experiment options need a model: attnviz tiny-lm --text \"…\" --knockout 2:3\n");
        return attn::kExitBadInput;
    }

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
    if (scene) app.state.load_scene(*scene);
    std::string error;
    if (!app.init(error)) {
        std::fprintf(stderr, "attnviz: %s\n", error.c_str());
        return 1;
    }
    if (!model_folder.empty() && !attn::open_model_folder(app.state, model_folder)) {
        std::fprintf(stderr, "%s\n", app.state.error.c_str());
        return attn::kExitBadInput;
    }
    if (live_scene) attn::open_live_scene(app.state, *live_scene);
    if (!builtin.empty()) attn::open_builtin_model(app.state, builtin);
    if (argc > 2) {  // the options above (a link's experiment, in the page, stays)
        if (live_text) app.state.model.text = *live_text;
        if (compare) app.state.model.compare = *compare;
        app.state.model.experiment = experiment;
        app.state.model.generation = generation;
    }
    if (imported.has(attn::Detail::Layers)) {
        app.state.figure = std::move(imported);
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
