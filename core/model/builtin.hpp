// builtin.hpp: the models that ship with attnviz (models/NAME/, trained by training/ as
// docs/MODELS.md says), by name: `attnviz run NAME`, the scenes that run them, `model=NAME` in
// a link. Native programs carry their files compiled in; the page fetches them from
// models/NAME/ next to it, or finds them inside the single-file build.
//
// [SECTION] The list
// [SECTION] Their files
#pragma once

#include "files.hpp"

#include <optional>
#include <span>
#include <string_view>

namespace attn {

// [SECTION] The list -------------------------------------------------------------------------

struct BuiltinModel {
    const char* name;        // "tiny-lm": models/NAME/, `attnviz run NAME`, model=NAME
    const char* model_type;  // config.json's: "gpt2", "bert", "marian"
    const char* about;       // one line: what it is (`attnviz run --list`)
    std::span<const char* const> files;  // what the runtime reads of models/NAME/ (the page fetches these)
};
std::span<const BuiltinModel> builtin_models();
const BuiltinModel* find_builtin(std::string_view name);  // nullptr: no such model

// [SECTION] Their files ----------------------------------------------------------------------

// One file of a built-in model as compiled into the program (the generated builtin_files.cpp).
struct BuiltinFile {
    const char* model;  // "tiny-lm"
    const char* name;   // "config.json"
    const unsigned char* begin;
    const unsigned char* end;
};
// Every compiled-in file; empty in the browser build (the page holds them).
std::span<const BuiltinFile> builtin_model_files();

// The files of a built-in model compiled into this program, folder = its name; nullopt for an
// unknown name or in the browser build.
std::optional<ModelFiles> builtin_files(std::string_view name);
// `attnviz run MODEL`: the folder MODEL, or the built-in model of that name when there is no
// such folder. Throws ModelFiles::from_folder's ModelError when it is neither.
ModelFiles folder_or_builtin(const std::string& model);

}  // namespace attn
