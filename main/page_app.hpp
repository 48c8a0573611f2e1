// page_app.hpp: the app the page's hooks talk to (web build only): the one main() published as
// Module.attnvizApp of this module instance (platform::publish_app), or null before that.
#pragma once

#include "app.hpp"

#include <emscripten.h>

namespace attn {

inline App* page_app() {
    return reinterpret_cast<App*>(static_cast<std::uintptr_t>(EM_ASM_INT({ return Module['attnvizApp'] || 0; })));
}

}  // namespace attn
