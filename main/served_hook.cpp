// served_hook.cpp: the C entry point through which the page hands the app a served model's
// answers (web build only; web/platform/platform_web.cpp attnviz_served_request fetches them).
//   attnviz_served_buffer(size)          where to write an answer's body of `size` bytes (0: no app)
//   attnviz_served_reply(id, status)     request id's HTTP status (0: no answer) and that body
// The body is written where the app keeps it (ServedSession::inbox): a layer's Q and K are 25 MB
// at 8 192 tokens, copied once, not twice.
#include "page_app.hpp"

#include <cstdint>
#include <string>
#include <utility>

extern "C" {

std::uintptr_t attnviz_served_buffer(double size) {
    attn::App* app = attn::page_app();
    if (!app || !(size >= 0)) return 0;
    std::string& inbox = app->state.served.inbox;
    inbox.resize(static_cast<std::size_t>(size));
    return reinterpret_cast<std::uintptr_t>(inbox.data());
}

void attnviz_served_reply(int id, int status) {
    if (attn::App* app = attn::page_app())
        attn::served_reply(app->state, id, status, std::exchange(app->state.served.inbox, std::string()));
}

}  // extern "C"
