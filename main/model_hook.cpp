// model_hook.cpp: C entry points through which the page hands a model's files to the app (web
// build only; web/site/attnviz-page.js calls them for a folder chosen in the folder dialog, files
// chosen or dropped together, or ?model=PATH). The page reads each file straight into a buffer
// the app owns, so a checkpoint is held once:
//   attnviz_model_begin(folder, total, weights)  the files' total bytes and the size of the
//                                            checkpoint's tensors in memory (F32 4 bytes a number,
//                                            16-bit 2); 0 = refused (too big: st.error)
//   attnviz_model_buffer(name, size)         where to write a file's bytes (0: failed)
//   attnviz_model_progress(done)             bytes written so far
//   attnviz_model_end()                      every file is in: the weights start loading
//   attnviz_model_failed(message)            a file could not be read or fetched
#include "page_app.hpp"

#include <cstdint>

extern "C" {

int attnviz_model_begin(const char* folder, double total, double weights) {
    attn::App* app = attn::page_app();
    return app && attn::model_files_begin(app->state, folder ? folder : "model", total, weights) ? 1 : 0;
}

std::uintptr_t attnviz_model_buffer(const char* name, double size) {
    attn::App* app = attn::page_app();
    return app ? reinterpret_cast<std::uintptr_t>(attn::model_file_buffer(app->state, name ? name : "", size)) : 0;
}

void attnviz_model_progress(double done) {
    if (attn::App* app = attn::page_app()) attn::model_files_progress(app->state, done);
}

void attnviz_model_end() {
    if (attn::App* app = attn::page_app()) attn::model_files_end(app->state);
}

void attnviz_model_failed(const char* message) {
    if (attn::App* app = attn::page_app()) attn::model_files_failed(app->state, message ? message : "");
}

}  // extern "C"
