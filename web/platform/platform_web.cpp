// platform_web.cpp: the browser side of platform.hpp (Emscripten).
#include "platform.hpp"

#include <imgui.h>

#include <algorithm>
#include <cstdlib>

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
    // The single-file build (base64: scripts/single_file.py) and a notebook's output (bytes:
    // attnviz-notebook.js) carry their fonts inline: what is not there is not fetched. A
    // script-tag figure finds them next to attnviz.js (locateFile).
    var inline = Module['inlineFonts'] && Module['inlineFonts'][name];
    if (Module['inlineFonts'] && !inline) {
        setTimeout(function() { done(false); }, 0);
        return;
    }
    if (inline) {
        var bytes = inline;
        if (typeof inline === 'string') {
            var raw = atob(inline);
            bytes = new Uint8Array(raw.length);
            for (var i = 0; i < raw.length; ++i) bytes[i] = raw.charCodeAt(i);
        }
        FS.writeFile('/fonts/' + name, bytes);
        setTimeout(function() { done(true); }, 0);
        return;
    }
    var url = Module['locateFile'] ? Module['locateFile']('fonts/' + name, "") : 'fonts/' + name;
    fetch(url).then(function(r) {
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
    var field = Module['textField'] || document.getElementById('attnviz-text');
    var canvas = Module['canvas'];
    if (!field || !canvas) return;
    if (active) {
        var rect = canvas.getBoundingClientRect();
        var k = rect.width / Math.max(canvas.width, 1);
        field.style.left = (rect.left + x * k) + 'px';
        field.style.top = (rect.top + y * k) + 'px';
        if (document.activeElement !== field) field.focus({preventScroll: true});
    } else if (document.activeElement === field && !(Module['attnvizTapFocus'] > 0 && Module['attnvizTapFocus']--)) {
        field.blur();  // (not in the frames right after a tap focused it: its text box is about to take it)
    }
});

// platform.hpp cache_gl_state: the state ImGui's backend reads back each frame, kept beside
// the context (Emscripten's GLctx) and updated by the setters that change it.
EM_JS(void, attnviz_cache_gl_state, (), {
    var gl = GLctx;
    if (!gl || gl.attnvizCached) return;
    gl.attnvizCached = true;
    var read = gl.getParameter.bind(gl), cache = {};
    [gl.SCISSOR_BOX, gl.BLEND_SRC_RGB, gl.BLEND_DST_RGB, gl.BLEND_SRC_ALPHA, gl.BLEND_DST_ALPHA,
     gl.BLEND_EQUATION_RGB, gl.BLEND_EQUATION_ALPHA].forEach(function(p) { cache[p] = read(p); });
    gl.getParameter = function(p) { return p in cache ? cache[p] : read(p); };
    var after = function(name, update) {
        var set = gl[name].bind(gl);
        gl[name] = function() { set.apply(null, arguments); update.apply(null, arguments); };
    };
    var blend = function(sr, dr, sa, da) {
        cache[gl.BLEND_SRC_RGB] = sr, cache[gl.BLEND_DST_RGB] = dr, cache[gl.BLEND_SRC_ALPHA] = sa, cache[gl.BLEND_DST_ALPHA] = da;
    };
    var equation = function(rgb, alpha) { cache[gl.BLEND_EQUATION_RGB] = rgb, cache[gl.BLEND_EQUATION_ALPHA] = alpha; };
    after('scissor', function(x, y, w, h) { cache[gl.SCISSOR_BOX] = new Int32Array([x, y, w, h]); });
    after('blendFunc', function(s, d) { blend(s, d, s, d); });
    after('blendFuncSeparate', blend);
    after('blendEquation', function(m) { equation(m, m); });
    after('blendEquationSeparate', equation);
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

// The link: a figure of the script-tag embed carries its own hash (Module.attnvizHash) and
// leaves the page's address alone; the page itself (index.html) owns location.hash.
EM_JS(char*, attnviz_start_link, (), {
    var hash = Module['attnvizHash'];
    if (typeof hash !== 'string') {
        hash = location.hash;
        // The event's own URL: a debounced replaceState may already have run since the change.
        window.addEventListener('hashchange', function(e) {
            var h = e.newURL ? new URL(e.newURL).hash : location.hash;
            var n = lengthBytesUTF8(h) + 1, p = _malloc(n);
            stringToUTF8(h, p, n);
            _attnviz_open_link(p);
            _free(p);
        });
    }
    var size = lengthBytesUTF8(hash) + 1, out = _malloc(size);
    stringToUTF8(hash, out, size);
    return out;
});

EM_JS(void, attnviz_show_link, (const char* hash_utf8), {
    var hash = '#' + UTF8ToString(hash_utf8);
    if (typeof Module['attnvizHash'] === 'string') {
        Module['attnvizHash'] = hash;
    } else if (location.hash !== hash) {
        try { history.replaceState(history.state, "", hash); } catch (e) { /* sandboxed frames may refuse */ }
    }
    if (Module['onLinkChange']) Module['onLinkChange'](hash);
});

EM_JS(char*, attnviz_page_url, (), {
    var url = Module['attnvizPageUrl'] || location.href.slice(0, location.href.length - location.hash.length);
    var size = lengthBytesUTF8(url) + 1, out = _malloc(size);
    stringToUTF8(url, out, size);
    return out;
});

// A notebook's output has no page to open: it opens itself whole (Module.attnvizOpenFull).
EM_JS(void, attnviz_open_url, (const char* url_utf8), {
    var url = UTF8ToString(url_utf8);
    if (Module['attnvizOpenFull']) Module['attnvizOpenFull'](url);
    else window.open(url, '_blank', 'noopener');
});

// GLFW's wheel listeners on the canvas always prevent the default (no page scroll). A capturing
// listener on the canvas's parent runs first and, while the app passes the wheel on, keeps the
// event from GLFW so the browser scrolls the page (chaining out of an iframe to the blog).
EM_JS(void, attnviz_pass_wheel, (int pass), {
    var canvas = Module['canvas'];
    if (!canvas || !canvas.parentNode) return;
    if (!Module['attnvizWheelHook']) {
        Module['attnvizWheelHook'] = true;
        var pass = function(e) {
            if (e.target !== canvas) return;
            // What one unit of GLFW's raw offsets is in ImGui's notches (wheel_to_imgui).
            Module['attnvizWheelUnit'] = e.type !== 'wheel' ? 1 / 120 : e.deltaMode === 1 ? 1 / 3 : e.deltaMode === 2 ? 4 : 1 / 100;
            var pinch = e.ctrlKey || e.metaKey;
            if (Module['attnvizWheelToPage'] && !(pinch && Module['attnvizWheelZoom'])) {
                e.stopPropagation();
                return;
            }
            // The heatmap's zoom (take_zoom): 100 px of wheel is a notch, ×1.25; a pinch
            // (ctrl + wheel) gives about 100·ln(scale), so it follows the fingers.
            if (e.type !== 'wheel' || !Module['attnvizWheelZoom']) return;
            var dy = e.deltaY * (e.deltaMode === 1 ? 33 : e.deltaMode === 2 ? 400 : 1);
            Module['attnvizWheelLog'] = (Module['attnvizWheelLog'] || 0) - dy / 100 * (pinch ? 1 : Math.log(1.25));
        };
        // GLFW listens to the legacy names too; the browser fires both when a wheel is not prevented.
        canvas.parentNode.addEventListener('wheel', pass, true);
        canvas.parentNode.addEventListener('mousewheel', pass, true);
        canvas.parentNode.addEventListener('DOMMouseScroll', pass, true);
    }
    Module['attnvizWheelToPage'] = !!pass;
});

// Two-finger touches (Emscripten's GLFW knows one pointer): while the heatmap zooms, a pair that
// touches down on its grid is a gesture until a finger lifts. Its moves add ln(distance ratio)
// to the wheel's zoom log, so one zoom serves wheel, trackpad pinch and touch pinch, and the
// centre's travel to the pan; the centre anchors the zoom. Capturing listeners on the canvas's
// parent run before GLFW's: a gesture's events stop there and their default (the browser's own
// pinch and scroll) is prevented; every other touch goes on as before.
EM_JS(void, attnviz_wheel_zoom, (int active, float gx, float gy, float gw, float gh), {
    Module['attnvizWheelZoom'] = !!active;
    Module['attnvizZoomGrid'] = active ? [gx, gy, gw, gh] : null;
    if (!active) Module['attnvizWheelLog'] = 0, Module['attnvizPinch'] = null, Module['attnvizTouch'] = null;
    var canvas = Module['canvas'];
    if (!canvas || !canvas.parentNode || Module['attnvizTouchHook']) return;
    Module['attnvizTouchHook'] = true;
    var centre = function(e) {  // of the first two touches, in display units (canvas pixels)
        var r = canvas.getBoundingClientRect(), a = e.touches[0], b = e.touches[1];
        var sx = canvas.width / r.width, sy = canvas.height / r.height;
        var ax = (a.clientX - r.left) * sx, ay = (a.clientY - r.top) * sy;
        var bx = (b.clientX - r.left) * sx, by = (b.clientY - r.top) * sy;
        return {x: (ax + bx) / 2, y: (ay + by) / 2, d: Math.hypot(ax - bx, ay - by)};
    };
    var touch = function(e) {
        var grid = Module['attnvizZoomGrid'];
        if (e.type === 'touchstart' && e.touches.length === 2 && grid && !Module['attnvizPinch']) {
            var c = centre(e);
            if (c.x >= grid[0] && c.x <= grid[0] + grid[2] && c.y >= grid[1] && c.y <= grid[1] + grid[3]) Module['attnvizPinch'] = c;
        }
        var last = Module['attnvizPinch'];
        if (!last) return;
        if (!grid || e.touches.length < 2) {  // a finger lifted: the gesture is over
            Module['attnvizPinch'] = null;
            return;
        }
        e.preventDefault();
        e.stopPropagation();
        if (e.type !== 'touchmove') return;
        var now = centre(e);
        var t = Module['attnvizTouch'] || (Module['attnvizTouch'] = {dx: 0, dy: 0});
        if (last.d > 0 && now.d > 0) Module['attnvizWheelLog'] = (Module['attnvizWheelLog'] || 0) + Math.log(now.d / last.d);
        t.dx += now.x - last.x, t.dy += now.y - last.y, t.x = now.x, t.y = now.y;
        Module['attnvizPinch'] = now;
    };
    ['touchstart', 'touchmove', 'touchend', 'touchcancel'].forEach(function(name) {
        canvas.parentNode.addEventListener(name, touch, {capture: true, passive: false});
    });
});

EM_JS(void, attnviz_install_keyboard, (), {
    var canvas = Module['canvas'];
    if (!canvas) return;
    canvas.tabIndex = 0;
    var tab = function(e) { if (e.key === 'Tab') e.stopImmediatePropagation(); };
    window.addEventListener('keydown', tab, true);
    window.addEventListener('keyup', tab, true);
    canvas.addEventListener('keydown', function(e) {
        if (/^(Arrow(Up|Down|Left|Right)|Enter|Escape| )$/.test(e.key)) e.preventDefault();
    });
});

EM_JS(void, attnviz_set_text_boxes, (const float* rects, int n), {
    Module['attnvizTextBoxes'] = Array.from(HEAPF32.subarray(rects >> 2, (rects >> 2) + n));
});

EM_JS(int, attnviz_figure_focus, (), {
    var canvas = Module['canvas'];
    if (!canvas || document.activeElement !== canvas) return 0;
    var visible = false;
    try { visible = canvas.matches(':focus-visible'); } catch (e) {}
    return visible ? 2 : 1;
});

// The twin: a <div class="attnviz-twin"> after the canvas, clipped to nothing (read by screen
// readers, not seen): a <p aria-live="polite"> summary, a <table> (the shown map) and a <div> of
// the live panel's tables (its experiments' results: "extra", cells as text). The canvas is its
// "application" (it takes the arrow keys), labelled, and described by the summary.
EM_JS(void, attnviz_show_twin, (const char* json_utf8), {
    var canvas = Module['canvas'];
    if (!canvas || !canvas.parentNode) return;
    var d = JSON.parse(UTF8ToString(json_utf8));
    var twin = Module['attnvizTwin'];
    if (!twin) {
        twin = Module['attnvizTwin'] = document.createElement('div');
        twin.className = 'attnviz-twin';
        var hide = {position: 'absolute', width: '1px', height: '1px', margin: '-1px', padding: '0', border: '0',
                    overflow: 'hidden', clip: 'rect(0 0 0 0)', 'clip-path': 'inset(50%)', 'white-space': 'nowrap'};
        for (var k in hide) twin.style.setProperty(k, hide[k]);
        var id = 'attnviz-twin-' + Math.random().toString(36).slice(2);
        var summary = document.createElement('p');
        summary.id = id;
        summary.setAttribute('aria-live', 'polite');
        twin.appendChild(summary);
        twin.appendChild(document.createElement('table'));
        twin.appendChild(document.createElement('div'));
        canvas.parentNode.insertBefore(twin, canvas.nextSibling);
        canvas.setAttribute('role', 'application');
        canvas.setAttribute('aria-describedby', id);
    }
    twin.lang = d.lang;
    canvas.setAttribute('aria-label', d.label);
    var summary = twin.firstChild;
    if (summary.textContent !== d.summary) summary.textContent = d.summary;
    // A table: caption, corner, column and row headers, cells row by row (a number: 2 decimals).
    function build(t) {
        var table = document.createElement('table');
        table.createCaption().textContent = t.caption;
        var head = table.createTHead().insertRow();
        var corner = document.createElement('th');
        corner.textContent = t.corner;
        corner.scope = 'col';
        head.appendChild(corner);
        t.cols.forEach(function(c) { var th = document.createElement('th'); th.scope = 'col'; th.textContent = c; head.appendChild(th); });
        var body = table.createTBody();
        t.rows.forEach(function(r, i) {
            var tr = body.insertRow(), th = document.createElement('th');
            th.scope = 'row';
            th.textContent = r;
            tr.appendChild(th);
            for (var j = 0; j < t.cols.length; ++j) {
                var v = t.cells[i * t.cols.length + j];
                tr.insertCell().textContent = v === null ? t.masked : typeof v === 'number' ? v.toFixed(2) : v;
            }
        });
        return table;
    }
    if (d.table) twin.replaceChild(build(d.table), twin.children[1]);
    if (d.extra) {
        var extra = document.createElement('div');
        d.extra.forEach(function(t) { extra.appendChild(build(t)); });
        twin.replaceChild(extra, twin.children[2]);
    }
});

// One finger (platform.hpp, take_touch). Its listeners capture on the canvas's parent, so GLFW
// (on the canvas) never sees the touch; its default (the compatibility mouse events, which
// would press a second time) is prevented. A second finger lets the pointer go (or drops a
// press not yet handed over): the pinch above takes the pair. Events queue; each call takes the moves up to and including the next
// press or release. Returns 0 (no finger), 1 (up) or 3 (down), the place in out[0..1].
EM_JS(int, attnviz_take_touch, (float* out), {
    var canvas = Module['canvas'];
    var T = Module['attnvizFinger'];
    if (!T) {
        if (!canvas || !canvas.parentNode) return 0;
        T = Module['attnvizFinger'] = {queue: [], active: false, x: 0, y: 0, down: false, id: null};
        var at = function(t) {
            var r = canvas.getBoundingClientRect();
            return [(t.clientX - r.left) * canvas.width / r.width, (t.clientY - r.top) * canvas.height / r.height];
        };
        var finger = function(e) {
            if (Module['attnvizWheelToPage']) return;  // a figure-only embed: the page scrolls
            var t = e.changedTouches[0];
            if (e.touches.length > 1) {
                if (T.id !== null) {  // a press not yet handed over is dropped: a pinch is no tap
                    var last = T.queue.length ? T.queue[T.queue.length - 1] : null;
                    if (last && last[0] === 1) T.queue.pop();
                    else T.queue.push([2, T.x, T.y]);
                    T.id = null;
                }
                return;
            }
            if (e.type === 'touchstart') T.id = t.identifier;
            else if (T.id === null || t.identifier !== T.id) return;
            e.preventDefault();
            e.stopPropagation();
            var p = at(t);
            T.active = true;
            T.queue.push([e.type === 'touchstart' ? 1 : e.type === 'touchmove' ? 0 : 2, p[0], p[1]]);
            if (e.type === 'touchend' || e.type === 'touchcancel') T.id = null;
            // A tap that ends on a text box (set_text_boxes): the hidden text field takes the
            // focus now, inside the tap, or a phone would not open its keyboard for it; the
            // app's next frames keep it or let it go (attnviz_text_field).
            var boxes = Module['attnvizTextBoxes'] || [];
            for (var i = 0; e.type === 'touchend' && i + 3 < boxes.length; i += 4) {
                if (p[0] < boxes[i] || p[1] < boxes[i + 1] || p[0] > boxes[i] + boxes[i + 2] || p[1] > boxes[i + 1] + boxes[i + 3]) continue;
                var field = Module['textField'] || document.getElementById('attnviz-text');
                if (field && document.activeElement !== field) field.focus({preventScroll: true});
                Module['attnvizTapFocus'] = 4;  // frames the app leaves it focused before its text box is active
                break;
            }
        };
        ['touchstart', 'touchmove', 'touchend', 'touchcancel'].forEach(function(name) {
            canvas.parentNode.addEventListener(name, finger, {capture: true, passive: false});
        });
        canvas.addEventListener('mousemove', function() { T.active = false; });  // a mouse again
    }
    if (!T.active) return 0;
    while (T.queue.length) {
        var ev = T.queue[0];
        // A finger lands elsewhere: first the pointer moves there, a frame later it presses (else
        // the jump would count as a drag: a pan of the heatmap by the whole way).
        if (ev[0] === 1 && (ev[1] !== T.x || ev[2] !== T.y)) {
            T.x = ev[1], T.y = ev[2];
            break;
        }
        T.queue.shift();
        T.x = ev[1], T.y = ev[2];
        if (ev[0] !== 0) {
            T.down = ev[0] === 1;
            break;
        }
    }
    HEAPF32[out >> 2] = T.x;
    HEAPF32[(out >> 2) + 1] = T.y;
    return T.down ? 3 : 1;
});

// Writes the zoom log, then (anchored, x, y, pan x, pan y) of a touch gesture; clears both.
EM_JS(void, attnviz_take_zoom, (float* out), {
    var t = Module['attnvizTouch'];
    var v = [Module['attnvizWheelLog'] || 0, t ? 1 : 0, t ? t.x : 0, t ? t.y : 0, t ? t.dx : 0, t ? t.dy : 0];
    for (var i = 0; i < 6; ++i) HEAPF32[(out >> 2) + i] = v[i];
    Module['attnvizWheelLog'] = 0;
    Module['attnvizTouch'] = null;
});

namespace {

std::string take_js_string(char* s) {
    std::string out = s ? s : "";
    std::free(s);
    return out;
}

}  // namespace

// Exports: a Blob, downloaded through a temporary <a download>; Module.onExport (if the page
// or a test set it) hears of every file. png_width > 0: data is RGBA pixels, encoded to PNG
// through a canvas (the browser's own encoder: no deflate in the wasm); else data is the file.
EM_JS(int, attnviz_download, (const char* name_utf8, const char* mime_utf8, const unsigned char* data, int size,
                              int png_width, int png_height), {
    var name = UTF8ToString(name_utf8);
    function save(blob) {
        var url = URL.createObjectURL(blob);
        var a = document.createElement('a');
        a.href = url;
        a.download = name;
        document.body.appendChild(a);
        a.click();
        a.remove();
        setTimeout(function() { URL.revokeObjectURL(url); }, 30000);
        if (Module.onExport) Module.onExport(name, blob);
    }
    if (png_width <= 0) {
        save(new Blob([HEAPU8.slice(data, data + size)], {type: UTF8ToString(mime_utf8)}));
        return 1;
    }
    var canvas = document.createElement('canvas');
    canvas.width = png_width;
    canvas.height = png_height;
    var context = canvas.getContext('2d');
    if (!context) return 0;
    var pixels = new Uint8ClampedArray(HEAPU8.slice(data, data + size).buffer);
    context.putImageData(new ImageData(pixels, png_width, png_height), 0, 0);
    canvas.toBlob(function(blob) {
        if (blob) save(blob);
        else console.error('attnviz: PNG encoding failed for ' + name);
    }, 'image/png');
    return 1;
});

// prefers-color-scheme, kept by a listener so that "auto" follows the system as it changes.
EM_JS(int, attnviz_prefers_dark, (), {
    if (!window.matchMedia) return 1;
    if (!Module.colorScheme) {
        Module.colorScheme = window.matchMedia('(prefers-color-scheme: dark)');
    }
    return Module.colorScheme.matches ? 1 : 0;
});

// A media query of the page's, kept as a MediaQueryList (read each frame, so it follows changes).
EM_JS(int, attnviz_page_threads, (), { return Module['attnvizThreads'] | 0; });
EM_JS(int, attnviz_page_most_threads, (), { return Module['attnvizMostThreads'] | 0; });

EM_JS(int, attnviz_media_matches, (const char* query), {
    if (!window.matchMedia) return 0;
    var q = UTF8ToString(query);
    Module.attnvizMedia = Module.attnvizMedia || {};
    if (!Module.attnvizMedia[q]) Module.attnvizMedia[q] = window.matchMedia(q);
    return Module.attnvizMedia[q].matches ? 1 : 0;
});

// The page's hidden <input type=file id="attnviz-file"> (index.html reads the chosen file).
// Called in the frame after a click: browsers still count that as the user's gesture.
EM_JS(void, attnviz_pick_file, (), {
    var input = document.getElementById('attnviz-file');
    if (input) input.click();
});

// The page's hidden <input type=file webkitdirectory id="attnviz-folder">: a model's folder.
EM_JS(void, attnviz_pick_folder, (), {
    var input = document.getElementById('attnviz-folder');
    if (input) input.click();
});

// A window of a model's checkpoint file: the page that was given the file reads it
// (web/platform/model_files.js, Module.attnvizReadSlice).
EM_JS(void, attnviz_read_slice, (const char* file, double begin, double end), {
    var name = UTF8ToString(file);
    if (Module['attnvizReadSlice']) Module['attnvizReadSlice'](name, begin, end);
    else Module.ccall('attnviz_model_failed', null, ['string'], ['cannot read ' + name + ': this page has no file']);
});

// A built-in model's files: from Module.attnvizInlineModels (the single-file build: base64 by
// model and file name), else fetched from models/NAME/ beside the page (Module.locateFile where
// the page set it: script-tag embeds). A missing file that the model does not need is skipped
// by the app's reader, which names what is missing.
EM_JS(void, attnviz_fetch_builtin, (const char* name_ptr, const char* files_ptr), {
    var name = UTF8ToString(name_ptr), names = UTF8ToString(files_ptr).split('\n');
    var inline = Module['attnvizInlineModels'] && Module['attnvizInlineModels'][name];
    function bytesOf(file) {
        if (inline) {
            if (!inline[file]) return Promise.reject(new Error('not in this file'));
            var raw = atob(inline[file]), bytes = new Uint8Array(raw.length);
            for (var i = 0; i < raw.length; ++i) bytes[i] = raw.charCodeAt(i);
            return Promise.resolve(bytes);
        }
        var path = 'models/' + name + '/' + file;
        var url = Module['locateFile'] ? Module['locateFile'](path, "") : path;
        return fetch(url).then(function (r) {
            if (!r.ok) throw new Error('HTTP ' + r.status);
            return r.arrayBuffer();
        }).then(function (b) { return new Uint8Array(b); });
    }
    Promise.all(names.map(function (f) {
        return bytesOf(f).catch(function (e) { throw new Error('cannot fetch models/' + name + '/' + f + ': ' + (e.message || e)); });
    })).then(function (all) {
        var total = all.reduce(function (a, b) { return a + b.length; }, 0), done = 0;
        if (!Module.ccall('attnviz_model_begin', 'number', ['string', 'number', 'number'], [name, total, 0])) return;
        for (var k = 0; k < names.length; ++k) {
            var ptr = Module.ccall('attnviz_model_buffer', 'number', ['string', 'number'], [names[k], all[k].length]) >>> 0;
            if (!ptr) return;
            HEAPU8.set(all[k], ptr);
            done += all[k].length;
            Module.ccall('attnviz_model_progress', null, ['number'], [done]);
        }
        Module.ccall('attnviz_model_end', null, [], []);
    }).catch(function (e) {
        Module.ccall('attnviz_model_failed', null, ['string'], [String(e.message || e)]);
    });
});

// Models by name (SPEC.md §6): the fetch of web/platform/model_files.js, started and stopped.
EM_JS(void, attnviz_hub_fetch, (const char* id_utf8), {
    Module['attnvizHubFetch'](UTF8ToString(id_utf8));
});
// A served model's request (platform.hpp served_request): fetch, then the bytes where the app
// keeps them and the status to attnviz_served_reply (main/served_hook.cpp); status 0 and the
// reason when nothing answered.
EM_JS(void, attnviz_served_request, (int id, const char* server_utf8, const char* key_utf8, const char* path_utf8, const char* body_utf8), {
    var server = UTF8ToString(server_utf8), key = UTF8ToString(key_utf8), path = UTF8ToString(path_utf8), body = UTF8ToString(body_utf8);
    var reply = function (status, bytes) {
        var ptr = Module.ccall('attnviz_served_buffer', 'number', ['number'], [bytes.length]) >>> 0;
        if (!ptr) return;
        HEAPU8.set(bytes, ptr);
        Module.ccall('attnviz_served_reply', null, ['number', 'number'], [id, status]);
    };
    var url;
    try {
        url = new URL(path, new URL(server === '.' ? './' : server.endsWith('/') ? server : server + '/', location.href));
    } catch (e) {
        reply(0, new TextEncoder().encode('server: not an address: ' + server));
        return;
    }
    var init = { method: body ? 'POST' : 'GET', headers: { 'X-Attnviz-Token': key }, cache: 'no-store' };
    if (body) { init.body = body; init.headers['Content-Type'] = 'application/json'; }
    fetch(url, init).then(function (r) {
        return r.arrayBuffer().then(function (b) { reply(r.status, new Uint8Array(b)); });
    }).catch(function (e) { reply(0, new TextEncoder().encode('no answer (' + (e.message || e) + ')')); });
});
EM_JS(void, attnviz_hub_cancel, (), {
    Module['attnvizHubCancel']();
});
EM_JS(void, attnviz_hub_dialog, (const char* ids_utf8), {
    Module['attnvizHubDialog'](UTF8ToString(ids_utf8).split('\n'));
});
EM_JS(void, attnviz_hub_remove, (const char* id_utf8, const char* commit_utf8), {
    Module['attnvizHubRemove'](UTF8ToString(id_utf8), UTF8ToString(commit_utf8));
});
EM_JS(char*, attnviz_hub_endpoint, (), {
    var url = Module['attnvizHubEndpoint']();
    var size = lengthBytesUTF8(url) + 1, out = _malloc(size);
    stringToUTF8(url, out, size);
    return out;
});
EM_JS(void, attnviz_set_hub_endpoint, (const char* url_utf8), {
    Module['attnvizSetHubEndpoint'](UTF8ToString(url_utf8));
});

namespace attn::platform {

// The page fetches (web/platform/model_files.js, Module.attnvizHubFetch): its progress and its end come back
// through main/model_hook.cpp's hooks into the state (hub_fetch_progress, _failed, and the files
// as a folder's); this object only starts and stops it.
class PageHubFetch final : public HubFetch {
public:
    explicit PageHubFetch(const std::string& id) { attnviz_hub_fetch(id.c_str()); }
    ~PageHubFetch() override { cancel(); }
    Status status() const override { return {}; }
    void cancel() override { attnviz_hub_cancel(); }
};

std::unique_ptr<HubFetch> HubFetch::start(const std::string& id) { return std::make_unique<PageHubFetch>(id); }
void hub_dialog_opened(const char* ids) { attnviz_hub_dialog(ids); }
void remove_stored_hub(const char* id, const char* commit) { attnviz_hub_remove(id, commit); }
std::string hub_endpoint() {
    char* url = attnviz_hub_endpoint();
    std::string out = url;
    std::free(url);
    return out;
}
void set_hub_endpoint(const char* url) { attnviz_set_hub_endpoint(url); }

float ui_scale(GLFWwindow*) {
    double ratio = emscripten_get_device_pixel_ratio();
    return ratio > 0.5 ? static_cast<float>(ratio) : 1.0f;
}

void request_font(const char* name) { attnviz_fetch_font(name); }

void set_text_input(bool active, float x, float y) { attnviz_text_field(active ? 1 : 0, x, y); }

void set_cursor(int imgui_cursor) { attnviz_css_cursor(imgui_cursor); }

std::string start_link() { return take_js_string(attnviz_start_link()); }
void show_link(const std::string& hash) { attnviz_show_link(hash.c_str()); }
std::string page_url() { return take_js_string(attnviz_page_url()); }
void open_url(const std::string& url) { attnviz_open_url(url.c_str()); }
void pass_wheel_to_page(bool pass) { attnviz_pass_wheel(pass ? 1 : 0); }
EM_JS(double, attnviz_wheel_unit, (), { return Module['attnvizWheelUnit'] || 0.01; });
void wheel_to_imgui(double& x, double& y) {
    // 'mousewheel' (legacy) gives wheelDelta, positive up, 120 a notch; 'wheel' gives deltaY,
    // positive down. GLFW passes either as it came: the legacy one keeps its sign.
    const double unit = attnviz_wheel_unit();
    const double sign = unit == 1.0 / 120 ? 1.0 : -1.0;
    x *= sign * unit, y *= sign * unit;
}
void wheel_zoom(bool active, const float grid[4]) { attnviz_wheel_zoom(active ? 1 : 0, grid[0], grid[1], grid[2], grid[3]); }
ZoomGesture take_zoom(float) {
    float v[6] = {};
    attnviz_take_zoom(v);
    return {v[0], v[1] != 0.0f, v[2], v[3], v[4], v[5]};
}
bool prefers_dark() { return attnviz_prefers_dark() != 0; }
bool coarse_pointer() { return attnviz_media_matches("(pointer: coarse)") != 0; }
int page_threads() { return attnviz_page_threads(); }
int page_most_threads() { return std::max(attnviz_page_most_threads(), attnviz_page_threads()); }
void install_keyboard() { attnviz_install_keyboard(); }
void set_text_boxes(const std::vector<float>& rects) { attnviz_set_text_boxes(rects.data(), static_cast<int>(rects.size())); }
int figure_focus() { return attnviz_figure_focus(); }
void show_twin(const std::string& json) { attnviz_show_twin(json.c_str()); }
bool take_touch(float xy[2], bool& down) {
    const int r = attnviz_take_touch(xy);
    down = r == 3;
    return r != 0;
}
bool reduced_motion() { return attnviz_media_matches("(prefers-reduced-motion: reduce)") != 0; }

std::string save_file(const std::string& name, const std::string& mime, const std::string& bytes, std::string&) {
    attnviz_download(name.c_str(), mime.c_str(), reinterpret_cast<const unsigned char*>(bytes.data()),
                     static_cast<int>(bytes.size()), 0, 0);
    return name;
}

std::string save_png(const std::string& name, const std::vector<std::uint8_t>& rgba, int width, int height,
                     std::string& error) {
    if (!attnviz_download(name.c_str(), "image/png", rgba.data(), static_cast<int>(rgba.size()), width, height)) {
        error = "the browser has no 2D canvas to encode the PNG";
        return "";
    }
    return name;
}
void open_file_picker() { attnviz_pick_file(); }
void open_folder_picker() { attnviz_pick_folder(); }
void fetch_builtin_model(const char* name, const char* files) { attnviz_fetch_builtin(name, files); }
bool served_request(int id, const char* server, const char* key, const char* path, const char* body) {
    attnviz_served_request(id, server, key, path, body);
    return true;
}
void read_model_slice(const char* file, double begin, double end) { attnviz_read_slice(file, begin, end); }
void hint_gl33_core() {}  // the WebGL version comes from the link flags
void cache_gl_state() { attnviz_cache_gl_state(); }

void publish_app(void* app) { EM_ASM({ Module['attnvizApp'] = $0; }, app); }

void install_clipboard() {
    ImGuiIO& io = ImGui::GetIO();
    io.SetClipboardTextFn = [](void*, const char* text) { attnviz_copy_text(text); };
    io.GetClipboardTextFn = [](void*) -> const char* { return ""; };
}

}  // namespace attn::platform
