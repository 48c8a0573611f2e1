// command_line.cpp: the desktop app's command line (command_line.hpp).
#include "command_line.hpp"

#include "app_state.hpp"
#include "builtin.hpp"
#include "cli.hpp"
#include "hub.hpp"
#include "import_state.hpp"
#include "options.hpp"
#include "render_command.hpp"
#include "text.hpp"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string_view>

namespace attn {

std::optional<int> read_command_line(int argc, char** argv, Launch& launch) {
    if (int code = run_cli(argc, argv); code != kNotACommand) return code;
    if (argc > 1 && std::strcmp(argv[1], "render") == 0) return run_render(argc, argv);
    if (argc < 2) return std::nullopt;

    std::error_code not_a_folder;
    if (!std::filesystem::exists(argv[1], not_a_folder)) {  // a live scene or a built-in model, when no file has that name
        launch.live_scene = find_live_scene(argv[1]);
        if (find_builtin(argv[1])) launch.builtin = argv[1];
    }
    const bool named = launch.live_scene || !launch.builtin.empty();
    // `attnviz ORG/NAME[@REVISION][:QUANT]`: a Hub id, fetched in the window (SPEC.md §6). Only with its
    // slash and not a .json name: a bare word or a missing file is a scene file's error.
    const std::string_view arg = argv[1];
    const bool hub_id = !named && arg.find('/') != std::string_view::npos && !arg.ends_with(".json") &&
                        !std::filesystem::exists(argv[1], not_a_folder) && hub::parse_repo_id(arg);
    if (!named && (hub_id || std::filesystem::is_directory(argv[1], not_a_folder) || arg.ends_with(".gguf"))) {
        launch.model_folder = argv[1];
    } else if (!named && std::strcmp(argv[1], "-") != 0) {
        std::string text;
        if (read_file(argv[1], text) && file_kind(text) == FileKind::Import) {
            AppState reader;
            if (!import_attention(reader, text, argv[1])) {
                std::fprintf(stderr, "%s\n", reader.error.c_str());
                return kExitBadInput;
            }
            launch.imported = std::move(reader.figure);
        }
    }
    if (launch.model_folder.empty() && !launch.imported.has(Detail::Layers) && !named) {
        Scene loaded;
        std::string error;
        if (!load_scene_file(argv[1], std::cin, loaded, error)) {
            std::fprintf(stderr, "%s\n", error.c_str());
            return kExitBadInput;
        }
        launch.scene = std::move(loaded);
    }

    //   attnviz tiny-lm --text "…" --knockout 2:3,1:1 --knockout-mode mean --hide-token 3 --importance
    //   attnviz tiny-lm --text "…" --generate 20 --temperature 0.8 --top-k 40 --seed 7 --threads 2
    ModelOptions o;
    std::vector<std::string> operands;
    const std::vector<std::string> args(argv + 2, argv + argc);
    if (const std::string why = read_options(window_command(), args, o, operands); !why.empty() || !operands.empty()) {
        std::fprintf(stderr, "%s\n", why.empty() ? ("attnviz: " + operands.front() + ": one thing to open at a time; after it, the options of " +
                                                    usage_line(window_command())).c_str()
                                                  : why.c_str());
        return kExitBadInput;
    }
    launch.text = o.text;
    launch.compare = o.compare;
    launch.image = o.image.value_or("");
    if (o.knockout) launch.experiment.knockout = *o.knockout;
    if (o.ablation) launch.experiment.ablation = *o.ablation;
    if (o.hidden) launch.experiment.hidden = *o.hidden;
    launch.experiment.importance = o.importance;
    if (o.generate) launch.generation.tokens = *o.generate, launch.generation.requested = true;
    if (o.temperature) launch.generation.sampling.temperature = *o.temperature;
    if (o.top_k) launch.generation.sampling.top_k = *o.top_k;
    if (o.seed) launch.generation.sampling.seed = *o.seed;
    launch.threads = o.threads.value_or(0);
    const int model_options = static_cast<int>(args.size()) - (o.threads ? 2 : 0);  // --threads alone asks for no run
    launch.model_options = model_options > 0;
    if (launch.model_options && !launch.live_scene && launch.builtin.empty() && launch.model_folder.empty()) {
        std::fprintf(stderr, "attnviz: --text and the experiment options need a model: attnviz tiny-lm --text \"…\" --knockout 2:3\n");
        return kExitBadInput;
    }
    return std::nullopt;
}

}  // namespace attn
