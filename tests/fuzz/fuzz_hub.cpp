// fuzz_hub.cpp: libFuzzer target for what the Hub answers and what a user types (hub.hpp). The
// first byte picks the reader, the rest is its input:
//   0: the repo listing      a ModelError naming the repo, or a 40-hex commit and its files
//   1: a HEAD's headers      never throws; an etag of letters, digits, - and _ only (a file name
//                            under blobs/), or none and the refused value; sha256 etags are 64 hex
//   2: a shards index        a ModelError, or sorted, distinct names inside the repo
//   3: a Hub id              none, or one whose shown form reads back the same, and whose cache
//                            folder is one path segment
#include "files.hpp"
#include "hub.hpp"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace {

void require(bool ok) {
    if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
    using namespace attn::hub;
    switch (data[0] % 4) {
    case 0:
        try {
            const Listing l = parse_listing(text, "o/n");
            require(l.commit.size() == 40);
        } catch (const attn::ModelError& e) {
            require(std::string_view(e.what()).starts_with("o/n: listing: "));
        }
        break;
    case 1: {
        const FileHead h = parse_head(text);
        require(std::all_of(h.etag.begin(), h.etag.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; }));
        require(h.etag.size() <= 128 && (h.etag.empty() || h.refused_etag.empty()));
        if (is_sha256(h.etag)) require(h.etag.size() == 64);
        break;
    }
    case 2:
        try {
            const std::vector<std::string> shards = shard_files(text, "o/n/i.json");
            require(std::is_sorted(shards.begin(), shards.end()) && std::adjacent_find(shards.begin(), shards.end()) == shards.end());
            for (const std::string& s : shards) require(!s.empty() && s.front() != '/' && s.find("..") == std::string::npos);
        } catch (const attn::ModelError& e) {
            require(std::string_view(e.what()).starts_with("o/n/i.json: weight_map"));
        }
        break;
    default:
        if (const std::optional<RepoId> id = parse_repo_id(text)) {
            const std::optional<RepoId> again = parse_repo_id(id->shown());
            require(again && again->repo == id->repo && again->revision == id->revision);
            require(id->folder_name().rfind("models--", 0) == 0 && id->folder_name().find('/') == std::string::npos);
        }
    }
    return 0;
}
