// command_line.cpp: the desktop app's command line (command_line.hpp).
#include "command_line.hpp"

#include "app_state.hpp"
#include "builtin.hpp"
#include "cli.hpp"
#include "hub.hpp"
#include "import_state.hpp"
#include "render_command.hpp"
#include "text.hpp"

#include <cmath>
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
    // `attnviz ORG/NAME[@REVISION]`: a Hub id, fetched in the window (SPEC.md §6). Only with its
    // slash and not a .json name: a bare word or a missing file is a scene file's error.
    const std::string_view arg = argv[1];
    const bool hub_id = !named && arg.find('/') != std::string_view::npos && !arg.ends_with(".json") &&
                        !std::filesystem::exists(argv[1], not_a_folder) && hub::parse_repo_id(arg);
    if (!named && (hub_id || std::filesystem::is_directory(argv[1], not_a_folder))) {
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
    //   attnviz tiny-lm --text "…" --generate 20 --temperature 0.8 --top-k 40 --seed 7
    //   attnviz tiny-lm --text "…" --compare "…"   (the Compare view's second text)
    //   attnviz tiny-lm --threads 2                  (the threads a run uses; default: every core)
    const auto number = [](const char* text, double lo, double hi, double& out) {
        char* end = nullptr;
        out = std::strtod(text, &end);
        return *text && *end == '\0' && out >= lo && out <= hi;
    };
    ModelExperiment& experiment = launch.experiment;
    ModelGeneration& generation = launch.generation;
    int model_options = 0;
    for (int i = 2; i < argc; ++i, ++model_options) {
        const std::string a = argv[i];
        const bool value = i + 1 < argc;
        double v = 0;
        try {
            if (a == "--threads" && value && number(argv[i + 1], 1, 1024, v) && v == std::floor(v))
                launch.threads = static_cast<int>(v), ++i, --model_options;
            else if (a == "--text" && value) launch.text = argv[++i];
            else if (a == "--compare" && value) launch.compare = argv[++i];
            else if (a == "--generate" && value && number(argv[i + 1], 1, 64, v) && v == std::floor(v))
                generation.tokens = static_cast<int>(v), generation.requested = true, ++i;
            else if (a == "--temperature" && value && number(argv[i + 1], 0, 100, v)) generation.sampling.temperature = static_cast<float>(v), ++i;
            else if (a == "--top-k" && value && number(argv[i + 1], 0, 100000, v) && v == std::floor(v)) generation.sampling.top_k = static_cast<int>(v), ++i;
            else if (a == "--seed" && value && number(argv[i + 1], 0, 2147483647.0, v) && v == std::floor(v))
                generation.sampling.seed = static_cast<std::uint64_t>(v), ++i;
            else if (a == "--knockout" && value && parse_head_items(argv[i + 1])) experiment.knockout = argv[++i];
            else if (a == "--knockout-mode" && value && (std::strcmp(argv[i + 1], "zero") == 0 || std::strcmp(argv[i + 1], "mean") == 0))
                experiment.ablation = std::strcmp(argv[++i], "mean") == 0 ? Ablation::Mean : Ablation::Zero;
            else if (a == "--hide-token" && value) experiment.hidden = parse_positions(argv[++i], "--hide-token");
            else if (a == "--importance") experiment.importance = true;
            else throw ModelError("", a, "expected --text \"…\", --compare \"…\", --knockout L:H,…, --knockout-mode zero|mean, "
                                          "--hide-token N,…, --importance, --generate 1…64, --temperature T, --top-k K, --seed S "
                                          "or --threads 1…1024 after a model");
        } catch (const ModelError& e) {
            std::fprintf(stderr, "attnviz: %s\n", e.what());
            return kExitBadInput;
        }
    }
    launch.model_options = model_options > 0;
    if (launch.model_options && !launch.live_scene && launch.builtin.empty() && launch.model_folder.empty()) {
        std::fprintf(stderr, "attnviz: --text and the experiment options need a model: attnviz tiny-lm --text \"…\" --knockout 2:3\n");
        return kExitBadInput;
    }
    return std::nullopt;
}

}  // namespace attn
