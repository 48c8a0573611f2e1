// render_command.hpp: `attnviz render SCENE.json --view heatmap|lines --png OUT.png
// [--width W --height H] [--theme dark|light] [--scale S] [--layout OUT.json]` (SPEC.md §2):
// draws the figure off screen (hidden window, framebuffer object) and writes it as PNG;
// --layout also writes where tokens and cells were drawn (tests). Desktop only.
#pragma once

namespace attn {

// argv[1] is "render". Returns the exit code: 0, 2 on bad input, 1 when no GL context.
int run_render(int argc, char** argv);

}  // namespace attn
