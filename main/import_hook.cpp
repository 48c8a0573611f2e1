// import_hook.cpp: C entry points through which the page hands files to the app (web build only).
// index.html calls them for a file dropped on the canvas, chosen in the
// hidden file dialog, or named by ?import= in the page's address.
//   attnviz_import_progress(name, done, total)  bytes read so far (total 0: unknown)
//   attnviz_import_bytes(name, bytes, size)      the whole file; copied, parsed on a later frame
//   attnviz_import_failed(name, message)         the file could not be read or fetched
#include "page_app.hpp"

#include <string>

extern "C" {

void attnviz_import_progress(const char* name, double done, double total) {
    if (attn::App* app = attn::page_app())
        attn::import_progress(app->state, name ? name : "", static_cast<long long>(done), static_cast<long long>(total));
}

void attnviz_import_bytes(const char* name, const char* bytes, int size) {
    if (attn::App* app = attn::page_app())
        attn::import_bytes(app->state, name ? name : "", std::string(bytes, bytes && size > 0 ? static_cast<size_t>(size) : 0));
}

void attnviz_import_failed(const char* name, const char* message) {
    if (attn::App* app = attn::page_app()) attn::import_failed(app->state, name ? name : "", message ? message : "");
}

}  // extern "C"
