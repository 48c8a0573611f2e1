// render_command_web.cpp: `attnviz render` draws off screen through EGL, which the browser
// build has not; the page has its own Export menu.
#include "render_command.hpp"

#include <cstdio>

namespace attn {

int run_render(int, char**) {
    std::fprintf(stderr, "attnviz render: only in the desktop build\n");
    return 2;
}

}  // namespace attn
