// hub_fetch_none.cpp: the wasm build's hub_snapshot (hub_fetch.hpp): the cache only. The page
// fetches with the browser; this build runs the test suite under node.
#include "hub_fetch.hpp"

namespace attn {

std::string hub_snapshot(const hub::RepoId& id, const FetchOptions& options) {
    if (std::optional<std::string> cached = hub::cached_snapshot(options.env, id)) return *cached;
    throw ModelError(id.repo, "", "not in the cache (" + hub::repo_folder(options.env, id) + "), and this build does not fetch from the Hub");
}

}  // namespace attn
