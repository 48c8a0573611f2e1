// cli.hpp: the parts of the attnviz command that need no window (SPEC.md §2).
#pragma once

#include "import.hpp"
#include "scene.hpp"

#include <iosfwd>
#include <string>
#include <vector>

namespace attn {

inline constexpr int kNotACommand = -1;  // run_cli: argv names no window-less command
inline constexpr int kExitBadInput = 2;

// Handles `attnviz compute SCENE|-`, `attnviz import FILE|- [...]` and `attnviz run MODEL …`. Returns the exit code, or kNotACommand when argv holds
// something else (no arguments, a scene to open, `render`), for the caller to handle.
int run_cli(int argc, char** argv);

// The same with explicit streams, for tests.
int run_compute(const std::string& path, std::istream& in, std::ostream& out, std::ostream& err);

// `attnviz import FILE|-`: checks an attention file (SPEC.md §3) and prints one paragraph
// about it; with `--layer L --head H --json [--stack NAME]` prints that one map as JSON:
// {"stack", "layer", "head", "queries", "keys", "weights": [[...]]}. `args` follows "import".
int run_import(const std::vector<std::string>& args, std::istream& in, std::ostream& out, std::ostream& err);

// `attnviz run MODEL …` (SPEC.md §5): runs a model folder on text or ids and prints a summary,
// or with --json the import format plus ids, hidden states, logits and the top next tokens.
// Encoder-decoder models without --text translate greedily (--max-new, default 32). `args`
// follows "run".
int run_model(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// Reads an import file or `-` (stdin), with the same one-line errors as load_scene_file.
bool load_import_file(const std::string& path, std::istream& in, ImportedAttention& imported, std::string& error);

// Reads a scene from a file or `-` (stdin). On failure returns false and sets `error` to one
// line: "PATH: FIELD: expected ..." or "PATH:LINE:COLUMN: ...".
bool load_scene_file(const std::string& path, std::istream& in, Scene& scene, std::string& error);

}  // namespace attn
