// hub_fetch.hpp: a model by its Hub id (SPEC.md §6), fetched into huggingface_hub's cache, or
// found there. Natively hub_fetch_curl.cpp speaks HTTP with libcurl; the wasm build (its test
// suite) links hub_fetch_none.cpp, which reads the cache only.
#pragma once

#include "files.hpp"
#include "hub.hpp"

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

namespace attn {

// How far a fetch has come: the file being written and the bytes of all the files to fetch.
struct FetchProgress {
    std::string file;                         // "model.safetensors"
    std::uint64_t file_done = 0, file_size = 0;  // its bytes (size 0: not known)
    std::uint64_t done = 0, total = 0;           // all the files still to fetch
};

struct FetchOptions {
    hub::Environment env = hub::environment();
    // Called as bytes arrive; false cancels the fetch (a ModelError "cancelled"; the blob being
    // written stays .incomplete, to be resumed).
    std::function<bool(const FetchProgress&)> progress;
    std::ostream* note = nullptr;  // one-line notes (the cache serves: the Hub cannot be reached)
    std::uint64_t memory = 0;      // the bytes a model's weights may take; 0: this machine's memory
    std::string quant;             // a GGUF repo's or folder's file: --quant (files.hpp's gguf_file_for)
};

// The snapshot folder of `id` in the cache, its files fetched first unless HF_HUB_OFFLINE is set
// or the Hub cannot be reached (the cached snapshot then serves, with a note). Throws ModelError(
// id.shown(), …) for every error of §6: gated or private, no such repo or revision, no safetensors
// weights, a checksum mismatch, offline and not cached, too big for memory, a broken transfer.
std::string hub_snapshot(const hub::RepoId& id, const FetchOptions& options);

// `attnviz run MODEL` (SPEC.md §6, in this order): ollama:NAME[:TAG], an existing folder or .gguf
// file, a built-in model's name, or a Hub id ORG/NAME[@REVISION] (hub_snapshot); of a folder that
// holds several .gguf files, the one options.quant names. Throws ModelError when it is none of them.
ModelFiles open_model(const std::string& model, const FetchOptions& options);

}  // namespace attn
