// platform.hpp: everything that differs between the browser (Emscripten, WebGL2) and the
// desktop (GLFW + OpenGL 3.3 core). Every other file of the front end is the same for both;
// main.cpp keeps only the main loop, the canvas callbacks and the ini file apart.
#pragma once

#include <string>

#ifdef __EMSCRIPTEN__
#include <GLES3/gl3.h>
#else
#ifndef GL_GLEXT_PROTOTYPES
#define GL_GLEXT_PROTOTYPES 1
#endif
#include <GL/gl.h>
#include <GL/glext.h>
#endif

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

struct GLFWwindow;

namespace attn::platform {

#ifdef __EMSCRIPTEN__
inline constexpr bool kBrowser = true;
// Files dropped on the window come through GLFW (desktop); the page handles drops on the
// canvas itself (browser), so big files can show their progress.
inline constexpr bool kGlfwFileDrop = false;
// Emscripten's GLFW has no cursor shapes, and its cursor modes ask for pointer lock: the page
// sets the canvas's CSS cursor instead (set_cursor).
inline constexpr bool kGlfwCursors = false;
// First string given to glShaderSource; the bodies in shaders/ carry no #version.
inline constexpr const char* kShaderPrelude =
    "#version 300 es\nprecision highp float;\nprecision highp int;\n";
inline constexpr const char* kImGuiGlslVersion = "#version 300 es";
// Fonts: small subsets packaged with the page; the full CJK font is fetched on demand.
inline constexpr const char* kUiFont = "/fonts/ui.ttf";
inline constexpr const char* kCjkFont = "/fonts/cjk-seeds.ttf";  // the presets' characters
// Fetched in this order when characters are missing, from fonts/NAME next to the page, into
// /fonts/NAME: GB2312's 6763 hanzi + kana + CJK punctuation (~1 MB), then the whole font (~4 MB).
inline constexpr const char* kCjkLazyFonts[] = {"cjk-common.ttf", "cjk-full.ttf", nullptr};
inline constexpr const char* kFontDir = "/fonts/";
#else
inline constexpr bool kBrowser = false;
inline constexpr bool kGlfwFileDrop = true;
inline constexpr bool kGlfwCursors = true;
inline constexpr const char* kShaderPrelude = "#version 330 core\n";
inline constexpr const char* kImGuiGlslVersion = "#version 330";
// Fonts straight from the Debian packages (fonts-dejavu-core, fonts-droid-fallback).
inline constexpr const char* kUiFont = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
inline constexpr const char* kCjkFont = "/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf";
inline constexpr const char* kCjkLazyFonts[] = {nullptr};  // the full font is already local
inline constexpr const char* kFontDir = "";
#endif

// UI scale: the device pixel ratio in the browser, the monitor's content scale on the desktop.
// The window / canvas works in framebuffer pixels and ImGui is scaled by this (fonts + style).
float ui_scale(GLFWwindow* window);

// Browser only (no-op on the desktop): start fetching fonts/NAME; it lands at kFontDir + NAME
// and attnviz_font_loaded() is called (also on failure, so the next font can be tried).
void request_font(const char* name);
// Browser only: focus the hidden text field that receives IME / pasted text while an ImGui
// text box is active, and place it where the caret is so the IME window appears there.
void set_text_input(bool active, float x, float y);
// Browser only: copying from ImGui goes to the system clipboard; pasting arrives through the
// page's text field (so ImGui's own paste is turned off there). Call after the GLFW backend.
void install_clipboard();
// Browser only: the canvas's CSS cursor for an ImGuiMouseCursor value.
void set_cursor(int imgui_cursor);
// Browser only: opens the page's file dialog (a hidden <input type=file>); the file's bytes
// arrive through attnviz_import_bytes (main/import_hook.cpp), with progress on the way.
void open_file_picker();
// Browser: the page's hidden folder dialog (a model's files); desktop: nothing (a path field).
void open_folder_picker();
// Browser: asks the page for a built-in model's files (`files`: names, one a line), which
// arrive through attnviz_model_begin … end (main/model_hook.cpp) from models/NAME/ next to the
// page, or from inside the single-file build. Desktop: nothing (the files are compiled in).
void fetch_builtin_model(const char* name, const char* files);
// A model fetched by its Hub id (SPEC.md §6) away from the frame loop. Desktop
// (main/desktop_hub.cpp): a thread runs hub_snapshot (main/hub_fetch.hpp) into huggingface_hub's
// cache, and status() tells how far it is. Browser: web/platform/model_files.js fetches into the browser's storage and reports
// through main/model_hook.cpp's hooks into the state; status() says nothing.
class HubFetch {
public:
    struct Status {
        std::string file;                     // the file being written
        double file_done = 0, file_size = 0;  // its bytes
        double done = 0, total = 0;           // bytes of all the files to fetch
        bool finished = false;
        std::string snapshot, error;  // once finished: the snapshot folder, or the one-line error
    };
    static std::unique_ptr<HubFetch> start(const std::string& id);
    virtual ~HubFetch() = default;  // a fetch still running is cancelled and waited for
    virtual Status status() const = 0;
    virtual void cancel() = 0;      // the transfer stops (its .incomplete blob stays, to be resumed)
};
// The Hub dialog. Browser: the page looks up the sizes of `ids` (one a line) in their listings,
// and lists the models it stored (main/model_hook.cpp attnviz_hub_size, attnviz_hub_stored);
// remove_stored_hub deletes one (then lists again); the Hub's address is kept in the browser
// (localStorage). Desktop: nothing (the dialog reads the cache itself); the address is
// $HF_ENDPOINT's.
void hub_dialog_opened(const char* ids);
// Browser: request `id` of a served model (web/state/served_state.hpp) to `server` ("." = the
// page's own address): a POST of `body` when it has one, else a GET of `path`, the key in
// X-Attnviz-Token; the answer comes back through attnviz_served_reply (main/served_hook.cpp).
// Desktop: false (it connects to no server).
bool served_request(int id, const char* server, const char* key, const char* path, const char* body);
void remove_stored_hub(const char* id, const char* commit);
std::string hub_endpoint();
void set_hub_endpoint(const char* url);
// Browser: asks the page for bytes [begin, end) of a model's checkpoint file (the window its
// weights wait for, web/state/model_state.hpp), which the page reads from the file it was given
// and writes through attnviz_model_window, then attnviz_model_filled (main/model_hook.cpp).
// Desktop: nothing (the files are memory-mapped: every window is there).
void read_model_slice(const char* file, double begin, double end);
// Browser: makes `app` the one the page's hooks (main/test_hook.cpp, main/import_hook.cpp)
// talk to, as Module.attnvizApp of this module instance. Desktop: nothing.
void publish_app(void* app);
// Browser: WebGL answers getParameter for the scissor box and the blend state by waiting for
// the GPU process to catch up (a pipeline stall; on SwiftShader ~50 ms), and ImGui's GL backend
// reads them every frame to restore them after drawing. This keeps them in JavaScript instead,
// from the context's setters (WebGL best practices: no blocking calls in the frame loop). Call
// once the context is current. Desktop: nothing.
void cache_gl_state();
// Desktop: the GLFW hints for an OpenGL 3.3 core context, before glfwCreateWindow (the window
// and attnviz render). Browser: nothing (WebGL2 comes from the link flags, MIN_WEBGL_VERSION=2).
void hint_gl33_core();

// The link (link_state.hpp). Browser: the hash the page opened with (or, for a figure of the
// script-tag embed, the hash its element gives), and from now on a change of the page's hash
// calls attnviz_open_link. Desktop: "" (the desktop opens scene files instead).
std::string start_link();
// Browser: puts the hash in the address bar without a history entry (not for script-tag
// figures: the page's address belongs to the page). Desktop: nothing.
void show_link(const std::string& hash);
// The address a copied link starts with: the page without its hash. Desktop: "index.html",
// to be put after the address where the web build is hosted.
std::string page_url();
// Browser: opens url in a new tab. Desktop: nothing (no browser to hand it to).
void open_url(const std::string& url);
// Browser: let the mouse wheel scroll the page around the canvas instead of the app (a figure
// that does not scroll, embedded in a blog post, must not trap the reader's scrolling).
// Desktop: nothing.
void pass_wheel_to_page(bool pass);
// GLFW's scroll offsets as ImGui wants them (notches, positive up). Browser: Emscripten 3.1.6's
// GLFW hands over the event's raw deltaY (pixels, positive down: 100 a notch in Chromium), so
// the panel scrolled the wrong way by a page a notch; this scales it by the last wheel event's
// deltaMode. Desktop: unchanged.
void wheel_to_imgui(double& x, double& y);
// The heatmap's zoom. Browser: while `active` (the heatmap is shown), wheel events that reach the
// app are counted for take_zoom, and ctrl/⌘ + wheel (what Chromium sends for a trackpad pinch)
// reaches the app even while the plain wheel is passed to the page; two fingers that touch down
// on `grid` (x, y, w, h in display units) pinch and pan the map, their events kept from the
// page (and from GLFW, which would press the mouse button). Inactive, touches are the page's:
// a figure-only embed keeps its scrolling. Desktop: nothing.
void wheel_zoom(bool active, const float grid[4]);
// What the wheel, a trackpad pinch and a touch pinch asked of the zoom since the last call.
struct ZoomGesture {
    float log = 0.0f;             // natural log of the zoom (> 0 zooms in): a wheel notch is
                                  // ×1.25, a pinch follows the fingers
    bool anchored = false;        // a touch pinch: about (x, y), the fingers' centre; else about the mouse
    float x = 0.0f, y = 0.0f;     // display units
    float pan_x = 0.0f, pan_y = 0.0f;  // how far the fingers' centre moved (display units)
};
// Browser: the canvas joins the page's Tab order (tabindex 0), and Tab goes to the browser
// (Emscripten's GLFW prevents its default, a keyboard trap); the arrow keys, Enter and Escape
// on the canvas do not scroll the page. Call before glfwInit, whose listeners come after.
// Desktop: nothing.
void install_keyboard();
// Whether the figure has the keyboard: 0 no, 1 yes, 2 yes and the page shows it (the canvas
// reached by Tab: :focus-visible). Desktop: 1 (the window's keys are the figure's).
int figure_focus();
// Browser: the figure's accessible twin, off screen next to the canvas (web/ui/access.cpp
// writes the JSON): a live summary and the map as a table, in the UI's language; the canvas
// gets its label. Desktop: nothing.
void show_twin(const std::string& json);
// Browser: the text boxes on screen (x, y, w, h in display units, 4 floats each): a tap that
// ends on one focuses the page's hidden text field inside the tap's own event, or a phone
// would not open its keyboard for it. Desktop: nothing.
void set_text_boxes(const std::vector<float>& rects);
// Browser: one finger on the canvas as ImGui's mouse. Emscripten 3.1.6's GLFW gives touches no
// position (only SDL's events carry one), so a drag never moved and a tap pressed where the last
// tap was. While the last pointer was a finger, this gives its place (display units) and
// whether it is down, a press or a release at most once a frame (a quick tap lasts two
// frames); call it after the GLFW backend's NewFrame. A figure-only embed that passes the
// wheel to the page leaves touches to the page too (its reader scrolls past it). Desktop: false.
bool take_touch(float xy[2], bool& down);
// Desktop: from ImGui's wheel value, given.
ZoomGesture take_zoom(float imgui_wheel);
// Exported files (web/ui/export.cpp). The browser downloads them (a Blob and an <a download>);
// the desktop writes them into the working folder, never over an existing file. Both return
// where the file went (its name in the browser, the full path on the desktop), or "" with
// `error` set.
std::string save_file(const std::string& name, const std::string& mime, const std::string& bytes, std::string& error);
// RGBA (top row first) as PNG: encoded by the browser's canvas (keeps a deflate out of the
// wasm download), by core/formats/png.cpp (stb_image_write) on the desktop.
std::string save_png(const std::string& name, const std::vector<std::uint8_t>& rgba, int width, int height,
                     std::string& error);
// The theme "auto" follows: prefers-color-scheme in the browser (read every frame, so it
// changes live with the system setting); the desktop has no such setting to follow: dark.
bool prefers_dark();
// Browser: the primary pointer is a finger (the media query "(pointer: coarse)"); the UI then
// gets touch-sized controls. Desktop: false.
bool coarse_pointer();
// Browser: the reader asked for less motion ("(prefers-reduced-motion: reduce)"): nothing
// blinks or moves by itself. Desktop: false.
bool reduced_motion();
// Browser: the threads the page asks a live model's runs to use (attnviz-page.js: half the
// cores, at most 8, or its ?threads=N; 0 where the module has none). Desktop: 0 (--threads).
int page_threads();
// Browser: the most the panel's setting may ask for, the Web Workers the page started for them
// (attnviz-page.js: the cores, at most 8, and at least page_threads()). Desktop: 0.
int page_most_threads();

}  // namespace attn::platform
