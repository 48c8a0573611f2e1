// served_hook.cpp: the C entry point through which the page hands the app a served model's
// answers (web build only; web/platform/platform_web.cpp attnviz_served_request fetches them).
//   attnviz_served_reply(id, status, bytes, size)   request id's HTTP status (0: no answer) and body
#include "page_app.hpp"

#include <string>

extern "C" {

void attnviz_served_reply(int id, int status, const char* bytes, int size) {
    if (attn::App* app = attn::page_app())
        attn::served_reply(app->state, id, status, std::string(bytes, bytes && size > 0 ? static_cast<size_t>(size) : 0));
}

}  // extern "C"
