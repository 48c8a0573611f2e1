// cli.hpp: the parts of the attnviz command that need no window (SPEC.md §2).
#pragma once

#include "scene.hpp"

#include <iosfwd>
#include <string>

namespace attn {

inline constexpr int kNotACommand = -1;  // run_cli: argv names no window-less command
inline constexpr int kExitBadInput = 2;

// Handles `attnviz compute SCENE|-`. Returns the exit code, or kNotACommand when argv holds
// something else (no arguments, a scene to open, `render`), for the caller to handle.
int run_cli(int argc, char** argv);

// The same with explicit streams, for tests.
int run_compute(const std::string& path, std::istream& in, std::ostream& out, std::ostream& err);

// Reads a scene from a file or `-` (stdin). On failure returns false and sets `error` to one
// line: "PATH: FIELD: expected ..." or "PATH:LINE:COLUMN: ...".
bool load_scene_file(const std::string& path, std::istream& in, Scene& scene, std::string& error);

}  // namespace attn
