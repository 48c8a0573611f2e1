// render_command.hpp: `attnviz render SCENE.json --view heatmap|lines|steps [--png OUT.png]
// [--svg OUT.svg] [--width W --height H] [--theme dark|light] [--scale S] [--lang en|zh]
// [--layout OUT.json]` (SPEC.md §2): draws the figure off screen (framebuffer object, through
// web/ui/export.cpp) and writes it as PNG, and/or writes the lines or heatmap as SVG (core/svg/svg.hpp,
// no GL needed); --layout also writes where tokens and cells were drawn (tests). Desktop only.
#pragma once

namespace attn {

// argv[1] is "render". Returns the exit code: 0, 2 on bad input, 1 when no GL context.
int run_render(int argc, char** argv);

}  // namespace attn
