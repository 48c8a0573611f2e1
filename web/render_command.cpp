// render_command.cpp: the figure without a window (see render_command.hpp).
#include "render_command.hpp"

#include "app.hpp"
#include "cli.hpp"
#include "platform.hpp"
#include "png.hpp"

#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <GLFW/glfw3.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>

namespace attn {
namespace {

// The context the figure is drawn in; the picture goes to a framebuffer object either way.
struct HeadlessGl {
    EGLDisplay display = EGL_NO_DISPLAY;
    EGLContext context = EGL_NO_CONTEXT;
    GLFWwindow* window = nullptr;
    std::string why;

    bool open() { return open_egl() || open_glfw(); }

    bool open_egl() {
        auto get_platform_display =
            reinterpret_cast<PFNEGLGETPLATFORMDISPLAYEXTPROC>(eglGetProcAddress("eglGetPlatformDisplayEXT"));
        if (get_platform_display)
            display = get_platform_display(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, nullptr);
        if (display == EGL_NO_DISPLAY) display = eglGetDisplay(EGL_DEFAULT_DISPLAY);
        if (display == EGL_NO_DISPLAY || !eglInitialize(display, nullptr, nullptr)) {
            why = "no display";
            display = EGL_NO_DISPLAY;
            return false;
        }
        if (!eglBindAPI(EGL_OPENGL_API)) return fail_egl("no desktop OpenGL");
        const EGLint config_attributes[] = {EGL_RENDERABLE_TYPE, EGL_OPENGL_BIT, EGL_NONE};
        EGLConfig config = nullptr;
        EGLint configs = 0;
        if (!eglChooseConfig(display, config_attributes, &config, 1, &configs) || configs < 1)
            config = nullptr;  // EGL_KHR_no_config_context: fine for framebuffer objects
        const EGLint context_attributes[] = {EGL_CONTEXT_MAJOR_VERSION, 3, EGL_CONTEXT_MINOR_VERSION, 3,
                                             EGL_CONTEXT_OPENGL_PROFILE_MASK, EGL_CONTEXT_OPENGL_CORE_PROFILE_BIT,
                                             EGL_NONE};
        context = eglCreateContext(display, config, EGL_NO_CONTEXT, context_attributes);
        if (context == EGL_NO_CONTEXT) return fail_egl("no 3.3 core context");
        if (!eglMakeCurrent(display, EGL_NO_SURFACE, EGL_NO_SURFACE, context)) return fail_egl("surfaceless context refused");
        return true;
    }

    bool fail_egl(const char* reason) {
        why = reason;
        if (context != EGL_NO_CONTEXT) eglDestroyContext(display, context);
        eglTerminate(display);
        display = EGL_NO_DISPLAY;
        context = EGL_NO_CONTEXT;
        return false;
    }

    bool open_glfw() {
        glfwSetErrorCallback([](int, const char*) {});
        if (!glfwInit()) return false;
        glfwWindowHint(GLFW_VISIBLE, GLFW_FALSE);
        glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
        glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
        glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
        glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
        window = glfwCreateWindow(64, 64, "attnviz render", nullptr, nullptr);
        if (!window) {
            glfwTerminate();
            return false;
        }
        glfwMakeContextCurrent(window);
        return true;
    }

    void close() {
        if (context != EGL_NO_CONTEXT) {
            eglMakeCurrent(display, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
            eglDestroyContext(display, context);
            eglTerminate(display);
        }
        if (window) {
            glfwDestroyWindow(window);
            glfwTerminate();
        }
    }
};

int usage(const std::string& message) {
    std::fprintf(stderr, "attnviz render: %s\n", message.c_str());
    std::fprintf(stderr,
                 "usage: attnviz render SCENE.json|MODEL.json --view heatmap|lines|steps|model --png OUT.png "
                 "[--width W --height H] [--theme dark|light] [--scale S]\n");
    return kExitBadInput;
}

bool parse_int(const char* text, int lo, int hi, int& out) {
    char* end = nullptr;
    long v = std::strtol(text, &end, 10);
    if (!end || *end || v < lo || v > hi) return false;
    out = static_cast<int>(v);
    return true;
}

}  // namespace

int run_render(int argc, char** argv) {
    std::string scene_path, view = "heatmap", png, theme = "light", layout;
    int width = 1200, height = 800;
    float scale = 1.0f;
    for (int i = 2; i < argc; ++i) {
        std::string arg = argv[i];
        auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
        if (arg == "--view" || arg == "--png" || arg == "--width" || arg == "--height" || arg == "--theme" ||
            arg == "--scale" || arg == "--layout") {
            const char* v = value();
            if (!v) return usage(arg + ": expected a value");
            if (arg == "--view") view = v;
            if (arg == "--png") png = v;
            if (arg == "--theme") theme = v;
            if (arg == "--layout") layout = v;
            if (arg == "--width" && !parse_int(v, 16, 8192, width)) return usage("--width: expected 16..8192");
            if (arg == "--height" && !parse_int(v, 16, 8192, height)) return usage("--height: expected 16..8192");
            if (arg == "--scale") {
                scale = std::strtof(v, nullptr);
                if (!(scale >= 0.5f && scale <= 4.0f)) return usage("--scale: expected 0.5..4");
            }
        } else if (scene_path.empty() && (arg == "-" || arg[0] != '-')) {
            scene_path = arg;
        } else {
            return usage("unknown argument " + arg);
        }
    }
    if (scene_path.empty()) return usage("expected a scene file (or - for stdin)");
    if (png.empty()) return usage("--png: expected an output file");
    if (view != "heatmap" && view != "lines" && view != "steps" && view != "model")
        return usage("--view: expected heatmap, lines, steps or model");
    if (theme != "dark" && theme != "light") return usage("--theme: expected dark or light");

    Scene scene;
    std::string error;
    // A model's attention (SPEC.md §3) or a scene (§1).
    AppState imported;
    if (scene_path != "-") {
        std::ifstream file(scene_path, std::ios::binary);
        std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
        if (file && looks_like_import(text) && !import_attention(imported, text, scene_path)) {
            std::fprintf(stderr, "%s\n", imported.error.c_str());
            return kExitBadInput;
        }
    }
    if (!imported.imported.active() && !load_scene_file(scene_path, std::cin, scene, error)) {
        std::fprintf(stderr, "%s\n", error.c_str());
        return kExitBadInput;
    }
    if (!imported.imported.active() && view == "model") return usage("--view model: expected an import file");

    // An OpenGL 3.3 context without a window: EGL first (no display needed: Mesa's surfaceless
    // platform), else a hidden GLFW window (needs X, e.g. xvfb-run).
    HeadlessGl gl;
    if (!gl.open()) {
        std::fprintf(stderr, "attnviz render: no OpenGL 3.3 context (EGL: %s; GLFW: no display?)\n", gl.why.c_str());
        return 1;
    }

    ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;
    ImGui_ImplOpenGL3_Init(platform::kImGuiGlslVersion);

    int code = 0;
    {
        App app;
        set_current_app(&app);
        app.figure_only = true;
        app.state.theme = theme == "dark" ? Theme::Dark : Theme::Light;
        if (imported.imported.active()) {
            app.state.imported = std::move(imported.imported);
            select_import_map(app.state, 0, 0);
        } else {
            app.state.load_scene(scene);
        }
        app.state.view = view == "lines" ? View::Lines : view == "steps" ? View::Steps : view == "model" ? View::Model : View::Heatmap;
        if (!app.state.has_trace) {
            std::fprintf(stderr, "%s: %s\n", scene_path.c_str(), app.state.error.c_str());
            code = kExitBadInput;
        } else if (!app.init(error)) {
            std::fprintf(stderr, "attnviz render: %s\n", error.c_str());
            code = 1;
        }
        if (code == 0) {
            GLuint fbo = 0, color = 0;
            glGenFramebuffers(1, &fbo);
            glGenRenderbuffers(1, &color);
            glBindRenderbuffer(GL_RENDERBUFFER, color);
            glRenderbufferStorage(GL_RENDERBUFFER, GL_RGBA8, width, height);
            glBindFramebuffer(GL_FRAMEBUFFER, fbo);
            glFramebufferRenderbuffer(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_RENDERBUFFER, color);
            // A few frames so that ImGui's layout (auto-sized items, fonts) has settled.
            for (int frame = 0; frame < 3; ++frame) {
                app.before_frame(scale);
                io.DisplaySize = ImVec2(static_cast<float>(width), static_cast<float>(height));
                io.DisplayFramebufferScale = ImVec2(1.0f, 1.0f);
                io.DeltaTime = 1.0f / 60.0f;
                io.MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
                ImGui_ImplOpenGL3_NewFrame();
                ImGui::NewFrame();
                app.build_ui();
                ImGui::Render();
                glBindFramebuffer(GL_FRAMEBUFFER, fbo);
                glViewport(0, 0, width, height);
                glClearColor(1, 1, 1, 1);
                glClear(GL_COLOR_BUFFER_BIT);
                app.before_render();
                ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
            }
            std::vector<std::uint8_t> pixels(static_cast<size_t>(width) * height * 4);
            glPixelStorei(GL_PACK_ALIGNMENT, 1);
            glReadPixels(0, 0, width, height, GL_RGBA, GL_UNSIGNED_BYTE, pixels.data());
            // GL rows run bottom to top; PNG rows top to bottom. Force opaque alpha.
            std::vector<std::uint8_t> flipped(pixels.size());
            const size_t stride = static_cast<size_t>(width) * 4;
            for (int y = 0; y < height; ++y)
                std::copy_n(pixels.data() + (height - 1 - y) * stride, stride, flipped.data() + y * stride);
            for (size_t i = 3; i < flipped.size(); i += 4) flipped[i] = 255;
            if (!write_png(png, flipped, width, height, error)) {
                std::fprintf(stderr, "attnviz render: %s\n", error.c_str());
                code = 1;
            }
            if (!layout.empty()) {  // where everything was drawn (the same JSON the browser tests read)
                std::FILE* f = std::fopen(layout.c_str(), "wb");
                std::string json = app.state_json();
                if (!f || std::fwrite(json.data(), 1, json.size(), f) != json.size()) code = 1;
                if (f) std::fclose(f);
            }
            glBindFramebuffer(GL_FRAMEBUFFER, 0);
            glDeleteRenderbuffers(1, &color);
            glDeleteFramebuffers(1, &fbo);
        }
        app.shutdown();
        set_current_app(nullptr);
    }
    ImGui_ImplOpenGL3_Shutdown();
    ImGui::DestroyContext();
    gl.close();
    return code;
}

}  // namespace attn
