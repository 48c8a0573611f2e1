// render_command.cpp: the figure without a window (see render_command.hpp).
#include "render_command.hpp"

#include "app_state.hpp"
#include "cli.hpp"
#include "export.hpp"
#include "view.hpp"
#include "import_state.hpp"
#include "options.hpp"
#include "platform.hpp"
#include "png.hpp"
#include "presets.hpp"
#include "svg.hpp"

#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <GLFW/glfw3.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
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
        platform::hint_gl33_core();
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
    std::fprintf(stderr, "attnviz render: %s (attnviz render --help lists the options)\n", message.c_str());
    return kExitBadInput;
}

bool write_text_file(const std::string& path, const std::string& text, std::string& error) {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) {
        error = path + ": cannot open for writing";
        return false;
    }
    bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    ok = std::fclose(f) == 0 && ok;
    if (!ok) error = path + ": write failed";
    return ok;
}

}  // namespace

int run_render(int argc, char** argv) {
    RenderOptions o;
    std::vector<std::string> operands;
    if (const std::optional<int> code =
            start_command(render_command(), std::vector<std::string>(argv + 2, argv + argc), o, operands, std::cout, std::cerr))
        return *code;
    if (operands.size() > 1) return usage("one scene file at a time, got " + operands[0] + " and " + operands[1]);
    const std::string scene_path = operands.empty() ? "" : operands[0];
    const std::string &view = o.view, &png = o.png, &svg = o.svg, &layout = o.layout, &preset = o.preset;
    const int width = o.width, height = o.height;
    const float scale = o.scale;
    if (scene_path.empty() == preset.empty()) return usage("expected a scene file (or - for stdin) or --preset NAME");
    if (png.empty() && svg.empty()) return usage("expected --png OUT.png or --svg OUT.svg (or both)");
    if (!svg.empty() && (view == "steps" || view == "model" || view == "explain"))
        return usage("--svg: lines, heatmap or qk only (the " + view + " view: --png)");

    AppState state;
    state.theme = o.theme == "dark" ? Theme::Dark : Theme::Light;
    state.lang = o.lang == "zh" ? Lang::Zh : Lang::En;
    std::string error;
    // A built-in scene, a model's attention (SPEC.md §3) or a scene (§1).
    if (!preset.empty()) {
        if (!find_preset(preset)) return usage("--preset: no preset named \"" + preset + "\"");
        state.load_preset(preset);
        if (view == "model") return usage("--view model: expected an import file");
    } else if (scene_path != "-") {
        std::string text;
        if (read_file(scene_path, text) && file_kind(text) == FileKind::Import) {
            if (!import_attention(state, text, scene_path)) {
                std::fprintf(stderr, "%s\n", state.error.c_str());
                return kExitBadInput;
            }
            select_import_map(state, 0, 0);
        }
    }
    if (preset.empty() && !state.figure.has(Detail::Layers)) {
        if (view == "model") return usage("--view model: expected an import file");
        Scene scene;
        if (!load_scene_file(scene_path, std::cin, scene, error)) {
            std::fprintf(stderr, "%s\n", error.c_str());
            return kExitBadInput;
        }
        state.load_scene(scene);
    }
    state.view = view == "lines"     ? View::Lines
                 : view == "steps"   ? View::Steps
                 : view == "model"   ? View::Model
                 : view == "explain" ? View::Explain
                 : view == "qk"      ? View::Qk
                                     : View::Heatmap;
    if (state.figure.empty()) {
        std::fprintf(stderr, "%s: %s\n", scene_path.c_str(), state.error.c_str());
        return kExitBadInput;
    }

    // SVG: strings only, no GL context needed (the fonts are baked on the CPU to measure text).
    // The same picture as the PNG at this width, height and scale.
    if (!svg.empty()) {
        const std::string document = figure_svg(state, {width, height, scale}, error);
        if (!error.empty()) {
            std::fprintf(stderr, "attnviz render: %s\n", error.c_str());
            return kExitBadInput;
        }
        if (!write_text_file(svg, document, error)) {
            std::fprintf(stderr, "attnviz render: %s\n", error.c_str());
            return 1;
        }
    }
    if (png.empty() && layout.empty()) return 0;

    // An OpenGL 3.3 context without a window: EGL first (no display needed: Mesa's surfaceless
    // platform), else a hidden GLFW window (needs X, e.g. xvfb-run).
    HeadlessGl gl;
    if (!gl.open()) {
        std::fprintf(stderr, "attnviz render: no OpenGL 3.3 context (EGL: %s; GLFW: no display?)\n", gl.why.c_str());
        return 1;
    }
    int code = 0;
    FigureImage image;
    Renderer renderer;
    Views views;
    if (!renderer.init(error) || !render_figure(state, {renderer, views}, width, height, scale, image, error)) {
        std::fprintf(stderr, "attnviz render: %s\n", error.c_str());
        code = 1;
    } else {
        if (!png.empty() && !write_png(png, image.rgba, image.width, image.height, error)) {
            std::fprintf(stderr, "attnviz render: %s\n", error.c_str());
            code = 1;
        }
        // --layout: where everything was drawn (the same JSON the browser tests read).
        if (!layout.empty() && !write_text_file(layout, image.layout_json, error)) {
            std::fprintf(stderr, "attnviz render: %s\n", error.c_str());
            code = 1;
        }
    }
    renderer.shutdown();
    gl.close();
    return code;
}

}  // namespace attn
