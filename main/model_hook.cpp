// model_hook.cpp: C entry points through which the page hands a model's files to the app (web
// build only; web/platform/model_files.js calls them for a folder chosen in the folder dialog, files
// chosen or dropped together, or ?model=PATH). The page reads each small file straight into a
// buffer the app owns, and of each checkpoint file (.safetensors) its header only; the weights
// then ask for the rest a window at a time (platform::read_model_slice), so a checkpoint is
// never held whole:
//   attnviz_model_begin(folder, total, weights)  the bytes handed whole (every file but the
//                                            checkpoint's, and its headers) and the size of the
//                                            checkpoint's tensors in memory (F32 4 bytes a number,
//                                            16-bit 2); 0 = refused (too big: st.error)
//   attnviz_model_buffer(name, size)         where to write a file's bytes (0: failed)
//   attnviz_model_head(name, head, size)     a checkpoint file of `size` bytes: where to write
//                                            its first `head` (8 + the header's length)
//   attnviz_model_progress(done)             bytes written so far
//   attnviz_model_end()                      every file is in: the weights start loading
//   attnviz_model_window(name, begin, end)   where the window asked for goes (0: no longer wanted)
//   attnviz_model_filled()                   it is there
//   attnviz_model_failed(message)            a file or a window could not be read or fetched
// and for a model fetched by its Hub id (SPEC.md §6; platform.hpp HubFetch), before its files come
// in as above, named by the id:
//   attnviz_open_hub(id)                     the page's ?hf=ORG/NAME[@REVISION][:QUANT]: fetch it
//   attnviz_hub_files(id, listed)            the id's parts and, given its listing's file names
//                                            (JSON), the files the model needs (hub::model_files:
//                                            a GGUF repo's one .gguf): JSON {"repo", "revision",
//                                            "quant", "files"} or {"error"}
//   attnviz_hub_fits(total, weights)         the listing's sizes fit in the page (0: refused,
//                                            before any download)
//   attnviz_hub_progress(file, file_done, file_size, done, total)
//                                            bytes of the file being fetched, and of all, so far
//   attnviz_hub_unstored(id)                 the browser's storage is full: it opens from memory
//   attnviz_hub_failed(message)              it cannot be fetched nor found in storage
// and for the Hub dialog (platform::hub_dialog_opened):
//   attnviz_hub_size(id, bytes)              a suggested model's size, from its listing
//   attnviz_hub_stored(json)                 the models stored: [{"id", "commit", "bytes"}]
#include "files.hpp"
#include "hub.hpp"
#include "page_app.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <exception>

extern "C" {

int attnviz_model_begin(const char* folder, double total, double weights) {
    attn::App* app = attn::page_app();
    return app && attn::model_files_begin(app->state, folder ? folder : "model", total, weights) ? 1 : 0;
}

std::uintptr_t attnviz_model_buffer(const char* name, double size) {
    attn::App* app = attn::page_app();
    return app ? reinterpret_cast<std::uintptr_t>(attn::model_file_buffer(app->state, name ? name : "", size)) : 0;
}

std::uintptr_t attnviz_model_head(const char* name, double head, double size) {
    attn::App* app = attn::page_app();
    return app ? reinterpret_cast<std::uintptr_t>(attn::model_file_head(app->state, name ? name : "", head, size)) : 0;
}

std::uintptr_t attnviz_model_window(const char* name, double begin, double end) {
    attn::App* app = attn::page_app();
    if (!app || !name || begin < 0 || end < begin) return 0;
    const attn::FileRange range{name, static_cast<std::size_t>(begin), static_cast<std::size_t>(end)};
    return reinterpret_cast<std::uintptr_t>(attn::model_window(app->state, range));
}

void attnviz_model_filled() {
    if (attn::App* app = attn::page_app()) app->model_window_filled();
}

void attnviz_model_progress(double done) {
    if (attn::App* app = attn::page_app()) attn::model_files_progress(app->state, done);
}

void attnviz_model_end() {
    if (attn::App* app = attn::page_app()) attn::model_files_end(app->state);
}

void attnviz_open_hub(const char* id) {
    attn::App* app = attn::page_app();
    if (!app || !id) return;
    if (!attn::hub::parse_repo_id(id)) app->state.error = std::string("hf: expected a Hub id ORG/NAME[@REVISION][:QUANT], got \"") + id + "\"";
    else attn::open_hub_model(app->state, id);
}

const char* attnviz_hub_files(const char* id, const char* listed) {
    attn::App* app = attn::page_app();
    if (!app) return "{}";
    nlohmann::json out;
    const std::optional<attn::hub::RepoId> repo = attn::hub::parse_repo_id(id ? id : "");
    if (!repo) {
        out["error"] = std::string("expected a Hub id ORG/NAME[@REVISION][:QUANT], got \"") + (id ? id : "") + "\"";
    } else {
        out = {{"repo", repo->repo}, {"revision", repo->revision}, {"quant", repo->quant}};
        const nlohmann::json names = nlohmann::json::parse(listed ? listed : "", nullptr, false);
        if (names.is_array()) {
            try {
                out["files"] = attn::hub::model_files(names.get<std::vector<std::string>>(), repo->quant, repo->shown());
            } catch (const attn::ModelError& e) {  // which .gguf: the page names it in the id, not by --quant
                const std::string what = e.what(), said = e.file() + ": " + e.where() + ": ";
                out["error"] = e.where() == "--quant" && what.rfind(said, 0) == 0
                                   ? e.file() + ": " + what.substr(said.size()) + " (as " + repo->repo + ":QUANT, or ?quant=)"
                                   : what;
            } catch (const std::exception& e) {
                out["error"] = e.what();
            }
        }
    }
    app->page_reply = out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return app->page_reply.c_str();
}

void attnviz_hub_progress(const char* file, double file_done, double file_size, double done, double total) {
    if (attn::App* app = attn::page_app()) attn::hub_fetch_progress(app->state, file ? file : "", file_done, file_size, done, total);
}

int attnviz_hub_fits(double total, double weights) {
    attn::App* app = attn::page_app();
    return app && attn::hub_fetch_fits(app->state, total, weights) ? 1 : 0;
}

void attnviz_hub_size(const char* id, double bytes) {
    if (attn::App* app = attn::page_app(); app && id) attn::hub_model_size(app->state, id, bytes);
}

void attnviz_hub_stored(const char* json) {
    if (attn::App* app = attn::page_app(); app && json) attn::hub_stored_models(app->state, json);
}

void attnviz_hub_unstored(const char* id) {
    if (attn::App* app = attn::page_app(); app && id) attn::hub_fetch_unstored(app->state, id);
}

void attnviz_hub_failed(const char* message) {
    if (attn::App* app = attn::page_app()) attn::hub_fetch_failed(app->state, message ? message : "");
}

void attnviz_model_failed(const char* message) {
    if (attn::App* app = attn::page_app()) attn::model_files_failed(app->state, message ? message : "");
}

}  // extern "C"
