// hub.hpp: models by name (SPEC.md §6). A Hub id, huggingface_hub's cache folder and its layout,
// the Hub's answers (the repo listing, a file's headers), and which of a repo's files a model
// needs. No network here: main/hub_fetch.cpp speaks HTTP (libcurl) natively; the page fetches
// with the browser.
//
// The cache, as huggingface_hub writes it (its cache guide, manage-cache.md):
//   CACHE/models--ORG--NAME/refs/REVISION          the commit REVISION points to (40 hex)
//   CACHE/models--ORG--NAME/blobs/ETAG             a file's bytes, named by its etag
//   CACHE/models--ORG--NAME/snapshots/COMMIT/FILE  a relative link ../../blobs/ETAG
//   CACHE/.locks/models--ORG--NAME/ETAG.lock       taken while a blob is written
//
// [SECTION] Ids
// [SECTION] The environment
// [SECTION] The cache
// [SECTION] The Hub's answers
// [SECTION] Which files
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attn::hub {

// [SECTION] Ids ------------------------------------------------------------------------------

// "ORG/NAME[@REVISION][:QUANT]", or a bare legacy id such as "gpt2". QUANT names one .gguf file of
// a GGUF repo, as llama.cpp's `-hf ORG/NAME:QUANT` and ollama's `hf.co/ORG/NAME:QUANT` do
// (gguf_file_for: a part of the file's name, "Q4_K_M").
struct RepoId {
    std::string repo;               // "HuggingFaceTB/SmolLM2-135M"
    std::string revision = "main";  // a branch, a tag or a commit (40 hex)
    std::string quant;              // "" or "Q4_K_M"

    bool pinned() const;              // the revision is a commit: no ref to read or write
    std::string folder_name() const;  // "models--HuggingFaceTB--SmolLM2-135M"
    std::string shown() const;        // "ORG/NAME", with "@REVISION" unless it is main, then ":QUANT"
};

// The id `s` names, or nullopt when it is not one (huggingface_hub's rules: names of letters,
// digits, "-", "_" and ".", at most 96 characters, no "--" nor "..", not ending in ".git"; a
// revision without spaces nor ".." (nor ":", which git refs never hold); a quant of letters,
// digits, "_", "-" and ".").
std::optional<RepoId> parse_repo_id(std::string_view s);

// [SECTION] The environment ------------------------------------------------------------------

// Where the cache is, which Hub to ask and as whom, read from the variables huggingface_hub
// reads (constants.py), in its order.
struct Environment {
    std::string cache;                               // the hub cache folder
    std::string endpoint = "https://huggingface.co";  // no trailing "/"
    std::string token;                               // "" when there is none
    bool offline = false;                            // HF_HUB_OFFLINE: never connect
    std::string ollama;    // ollama's models: $OLLAMA_MODELS, else ~/.ollama/models
    std::string lmstudio;  // LM Studio's: ~/.lmstudio/models (ORG/REPO/*.gguf)
};

// cache: $HF_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
// ~/.cache/huggingface/hub. token: $HF_TOKEN, else the file $HF_TOKEN_PATH, else $HF_HOME/token.
// offline: HF_HUB_OFFLINE is 1, ON, YES or TRUE (any case). `get` reads one variable (nullopt:
// unset); the token's file is read from disk.
Environment environment(const std::function<std::optional<std::string>(const char*)>& get);
Environment environment();  // from this process's variables

// [SECTION] Models of local runtimes: ollama, LM Studio -------------------------------------

// ollama:NAME[:TAG] (`spec`: NAME[:TAG]) -> the model's GGUF file as ollama keeps it: the manifest
// OLLAMA/manifests/registry.ollama.ai/library/NAME/TAG (TAG "latest" when not given; NAME
// "NS/NAME": that namespace; "HOST/NS/NAME": that registry), its layer of mediaType
// application/vnd.ollama.image.model, the blob OLLAMA/blobs/sha256-HEX. Throws
// ModelError("ollama:SPEC", "", …) naming what is missing.
std::string ollama_blob(const Environment& env, std::string_view spec);

// A GGUF model of a local runtime, for `attnviz run --list`: LM Studio's LMSTUDIO/ORG/REPO/*.gguf
// (name: the file's path) and ollama's manifests (name: ollama:NAME:TAG).
struct LocalModel {
    std::string name, path, runtime;  // runtime: "LM Studio" or "ollama"
    std::uint64_t bytes = 0;
};
std::vector<LocalModel> local_models(const Environment& env);

// [SECTION] The cache ------------------------------------------------------------------------

std::string repo_folder(const Environment& env, const RepoId& id);  // CACHE/models--ORG--NAME
// The commit `id`'s revision points to in the cache: the revision itself when pinned, else
// refs/REVISION's content; nullopt when there is no such ref.
std::optional<std::string> cached_commit(const Environment& env, const RepoId& id);
// CACHE/models--ORG--NAME/snapshots/COMMIT when it holds config.json or a .gguf; else nullopt.
std::optional<std::string> cached_snapshot(const Environment& env, const RepoId& id);

// A model in the cache the runtime can open (config.json names a family it runs, and there are
// safetensors weights), for `attnviz run --list`.
struct CachedModel {
    RepoId id;              // revision: the ref's name, or the commit a snapshot has no ref for
    std::string model_type;
    std::uint64_t bytes = 0;  // the snapshot's files
};
std::vector<CachedModel> cached_models(const Environment& env);

// [SECTION] The Hub's answers ----------------------------------------------------------------

// ENDPOINT/api/models/ORG/NAME/revision/REVISION, and ENDPOINT/ORG/NAME/resolve/REVISION/FILE
// (the revision percent-encoded: "refs/pr/1" is one path segment).
std::string listing_url(const Environment& env, const RepoId& id);
std::string resolve_url(const Environment& env, const RepoId& id, const std::string& revision, const std::string& file);

// The listing's commit ("sha") and file names ("siblings"[].rfilename). Throws
// ModelError(repo, "listing", …) when it is not such JSON.
struct Listing {
    std::string commit;
    std::vector<std::string> files;
};
Listing parse_listing(std::string_view json, const std::string& repo);

// What a HEAD of a resolve URL tells (huggingface_hub's get_hf_file_metadata).
struct FileHead {
    std::string commit;                  // X-Repo-Commit
    std::string etag;                    // X-Linked-Etag, else ETag; quotes and "W/" removed; "" when
                                         //   refused (what a blob's file name can be: valid_etag)
    std::string refused_etag;            // that header's value as sent, when refused
    std::optional<std::uint64_t> size;   // X-Linked-Size, else Content-Length
    std::string location;                // Location (a redirect's target), else ""
    std::string error_code;              // X-Error-Code ("GatedRepo", "RepoNotFound", …)
};
// From an answer's header lines ("Name: value", any case, CRLF or LF). Repeated headers (an
// answer after redirects): the last wins.
FileHead parse_head(std::string_view headers);
// An etag as the Hub sends it: optionally W/, then a quoted token of 1 to 128 letters, digits, - and
// _ (a git sha1, an LFS sha256, a xet hash): the token ("W/\"abc\"" → "abc"), or "" for anything else
// (it names a file under blobs/: no quotes, colons, slashes or dots).
std::string normalized_etag(std::string_view raw);
bool is_sha256(std::string_view etag);              // 64 hex digits: an LFS file's sha256

// [SECTION] Which files ----------------------------------------------------------------------

// Of the files a repo lists, those a model needs (SPEC.md §6): config.json, the tokenizer files
// it has, generation_config.json, and model.safetensors or model.safetensors.index.json. Shards
// come from the index (shard_files). Nothing else. A GGUF repo (no safetensors weights, or
// `quant` given): the one .gguf file gguf_file_for picks (files.hpp; it throws naming them).
std::vector<std::string> model_files(const std::vector<std::string>& listed, const std::string& quant = "",
                                     const std::string& repo = "");
bool has_weights(const std::vector<std::string>& files);  // model.safetensors, the index, or a .gguf
// The shards an index's weight_map names, each once, sorted. Throws ModelError(shown, "weight_map", …).
std::vector<std::string> shard_files(std::string_view index_json, const std::string& shown);

}  // namespace attn::hub
