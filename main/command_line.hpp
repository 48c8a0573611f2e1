// command_line.hpp: what the desktop app's command line asks for (SPEC.md §2, §5). The browser
// build has no command line (its link says what to open: link_state.hpp), so this is compiled
// natively only and the page's download carries none of it (docs/BENCHMARKS-HISTORY.md, the budget).
#pragma once

#include "figure.hpp"
#include "live_scenes.hpp"
#include "model_state.hpp"
#include "scene.hpp"

#include <optional>
#include <string>

namespace attn {

// What to open in the window.
struct Launch {
    std::optional<Scene> scene;        // `attnviz SCENE.json`
    Figure imported;                   // `attnviz MODEL.json`: attention exported from a model
    std::string model_folder;          // `attnviz FOLDER`, `attnviz FILE.gguf` or `attnviz ORG/NAME`: a model to run live (model_state.hpp)
    const LiveScene* live_scene = nullptr;  // `attnviz induction`, when no file has that name
    std::string builtin;               // `attnviz tiny-lm`
    // A live model's options, as `attnviz run` takes them (only when given: a link's stay).
    bool model_options = false;
    std::optional<std::string> text, compare;
    std::string image;  // --image FILE: a vision model's picture (read and decoded as the window opens)
    ModelExperiment experiment;
    ModelGeneration generation;
    int threads = 0;  // --threads N: the live model's threads (0: ModelSession's default, every core)
};

// Runs the commands that need no window (cli.hpp: compute, import, run; render) and returns
// their exit code; returns 2 after printing one line for bad arguments; otherwise fills `launch`
// and returns nothing.
std::optional<int> read_command_line(int argc, char** argv, Launch& launch);

}  // namespace attn
