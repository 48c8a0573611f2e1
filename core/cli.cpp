// cli.cpp: `attnviz compute`, and reading a scene file with one-line errors.
#include "cli.hpp"

#include <cctype>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string_view>

namespace attn {

bool load_scene_file(const std::string& path, std::istream& in, Scene& scene, std::string& error) {
    const std::string shown = path == "-" ? "<stdin>" : path;
    std::string text;
    if (path == "-") {
        text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    } else {
        std::ifstream file(path, std::ios::binary);
        if (!file) {
            error = shown + ": cannot open the file";
            return false;
        }
        text.assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
    }
    try {
        scene = read_scene(text);
    } catch (const SceneError& e) {
        // "PATH:LINE:COLUMN: malformed JSON ..." or "PATH: FIELD: expected ..."
        const bool position = !e.where().empty() && std::isdigit(static_cast<unsigned char>(e.where()[0]));
        error = shown + (position ? ":" : ": ") + e.what();
        return false;
    }
    return true;
}

int run_compute(const std::string& path, std::istream& in, std::ostream& out, std::ostream& err) {
    Scene scene;
    std::string error;
    if (!load_scene_file(path, in, scene, error)) {
        err << error << "\n";
        return kExitBadInput;
    }
    try {
        out << write_trace(compute(scene)) << "\n";
    } catch (const std::exception& e) {  // not bad input: a bug or out of memory
        err << (path == "-" ? "<stdin>" : path) << ": cannot compute: " << e.what() << "\n";
        return 1;
    }
    return 0;
}

int run_cli(int argc, char** argv) {
    if (argc < 2 || std::string_view(argv[1]) != "compute") return kNotACommand;
    if (argc != 3) {
        std::cerr << "attnviz compute: expected one scene file (or - for stdin): attnviz compute SCENE.json\n";
        return kExitBadInput;
    }
    return run_compute(argv[2], std::cin, std::cout, std::cerr);
}

}  // namespace attn
