// Models by name (hub.hpp, SPEC.md §6), without the network: Hub ids as huggingface_hub accepts
// them, the environment in its order, the URLs, the Hub's answers (the listing, a HEAD's headers
// across redirects), which files a model needs, and the cache read as huggingface_hub writes it.
// The fetch itself runs against a stand-in of the Hub in tests/hub/test_hub.py.
#include "hub.hpp"
#include "hub_fetch.hpp"
#include "model_error.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>

using namespace attn;
using attn::testing::error_of;
namespace fs = std::filesystem;

namespace {

hub::Environment environment_of(std::map<std::string, std::string> vars) {
    return hub::environment([&](const char* name) -> std::optional<std::string> {
        auto it = vars.find(name);
        return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
    });
}

void write(const fs::path& path, const std::string& text) {
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << text;
}

}  // namespace

TEST_CASE("Hub ids: ORG/NAME, a bare legacy name, @REVISION, :QUANT; what huggingface_hub refuses is no id") {
    const std::optional<hub::RepoId> id = hub::parse_repo_id("HuggingFaceTB/SmolLM2-135M");
    REQUIRE(id);
    CHECK(id->repo == "HuggingFaceTB/SmolLM2-135M");
    CHECK(id->revision == "main");
    CHECK_FALSE(id->pinned());
    CHECK(id->folder_name() == "models--HuggingFaceTB--SmolLM2-135M");
    CHECK(id->shown() == "HuggingFaceTB/SmolLM2-135M");
    const std::optional<hub::RepoId> pinned = hub::parse_repo_id("Qwen/Qwen2.5-0.5B@7ae557604adf67be50417f59c2c2f167def9a775");
    REQUIRE(pinned);
    CHECK(pinned->pinned());
    CHECK(pinned->shown() == "Qwen/Qwen2.5-0.5B@7ae557604adf67be50417f59c2c2f167def9a775");
    CHECK(hub::parse_repo_id("gpt2")->folder_name() == "models--gpt2");
    CHECK(hub::parse_repo_id("org/name@refs/pr/1")->revision == "refs/pr/1");
    CHECK_FALSE(hub::parse_repo_id("org/name@v1.0")->pinned());
    CHECK_FALSE(hub::parse_repo_id("org/name@7AE557604ADF67BE50417F59C2C2F167DEF9A775")->pinned());  // lower-case hex only
    // a GGUF repo's file, as llama.cpp's -hf names it: the quant after the last colon, the cache folder the repo's
    const std::optional<hub::RepoId> gguf = hub::parse_repo_id("bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M");
    REQUIRE(gguf);
    CHECK(gguf->repo == "bartowski/Llama-3.2-1B-Instruct-GGUF");
    CHECK(gguf->quant == "Q4_K_M");
    CHECK(gguf->revision == "main");
    CHECK(gguf->folder_name() == "models--bartowski--Llama-3.2-1B-Instruct-GGUF");
    CHECK(gguf->shown() == "bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M");
    const std::optional<hub::RepoId> both = hub::parse_repo_id("org/name-GGUF@v1.0:q8_0");
    REQUIRE(both);
    CHECK((both->revision == "v1.0" && both->quant == "q8_0" && both->shown() == "org/name-GGUF@v1.0:q8_0"));
    CHECK(hub::parse_repo_id("org/name")->quant.empty());
    for (const char* bad : {"", "/name", "org/", "a/b/c", "org/na me", "org--x/name", "org/na..me", "org/name.git", "-org/name",
                            "org/name-", "./models/x", "/abs/path", "org/name@", "org/name@a b", "org/name@..", "org/näme",
                            "org/name:", "org/name:Q4 K", "org/name:a/b", "ollama:llama3:8b", "org/name:Q4:K"})
        CHECK_MESSAGE(!hub::parse_repo_id(bad), bad);
    CHECK_FALSE(hub::parse_repo_id(std::string(97, 'a')));
    CHECK(hub::parse_repo_id(std::string(96, 'a')));
}

TEST_CASE("the environment as huggingface_hub reads it: HF_HUB_CACHE, HF_HOME, XDG_CACHE_HOME, ~; tokens; offline") {
    CHECK(environment_of({{"HOME", "/home/u"}}).cache == "/home/u/.cache/huggingface/hub");
    CHECK(environment_of({{"HOME", "/home/u"}, {"XDG_CACHE_HOME", "/x"}}).cache == "/x/huggingface/hub");
    CHECK(environment_of({{"HOME", "/home/u"}, {"XDG_CACHE_HOME", "/x"}, {"HF_HOME", "/hf"}}).cache == "/hf/hub");
    CHECK(environment_of({{"HF_HOME", "/hf"}, {"HF_HUB_CACHE", "/c"}}).cache == "/c");
    CHECK(environment_of({{"HF_HOME", "/hf"}, {"HF_HUB_CACHE", ""}}).cache == "/hf/hub");  // empty: unset
    CHECK(environment_of({}).endpoint == "https://huggingface.co");
    CHECK(environment_of({{"HF_ENDPOINT", "https://hf-mirror.com/"}}).endpoint == "https://hf-mirror.com");
    for (const char* on : {"1", "ON", "yes", "True"}) CHECK(environment_of({{"HF_HUB_OFFLINE", on}}).offline);
    for (const char* off : {"0", "", "no", "false"}) CHECK_FALSE(environment_of({{"HF_HUB_OFFLINE", off}}).offline);
    const fs::path home = fs::temp_directory_path() / "attnviz-test-hub-env";
    fs::remove_all(home);
    write(home / "token", "hf_from_file\n");
    CHECK(environment_of({{"HF_HOME", home.string()}}).token == "hf_from_file");
    CHECK(environment_of({{"HF_HOME", home.string()}, {"HF_TOKEN", " hf_env "}}).token == "hf_env");
    write(home / "other", "hf_path");
    CHECK(environment_of({{"HF_HOME", home.string()}, {"HF_TOKEN_PATH", (home / "other").string()}}).token == "hf_path");
    CHECK(environment_of({{"HF_HOME", (home / "none").string()}}).token.empty());
    fs::remove_all(home);
}

TEST_CASE("the Hub's URLs: the listing and resolve, the revision one segment") {
    hub::Environment env;
    env.endpoint = "http://127.0.0.1:8000";
    const hub::RepoId id = *hub::parse_repo_id("org/name@refs/pr/1");
    CHECK(hub::listing_url(env, id) == "http://127.0.0.1:8000/api/models/org/name/revision/refs%2Fpr%2F1");
    CHECK(hub::resolve_url(env, id, id.revision, "sub dir/model.safetensors") ==
          "http://127.0.0.1:8000/org/name/resolve/refs%2Fpr%2F1/sub%20dir/model.safetensors");
}

TEST_CASE("the listing: its commit and files; anything else is one error naming the repo") {
    const hub::Listing l = hub::parse_listing(
        R"({"id":"o/n","sha":"0123456789abcdef0123456789abcdef01234567","siblings":[{"rfilename":"config.json"},{"rfilename":"model.safetensors"}]})", "o/n");
    CHECK(l.commit == "0123456789abcdef0123456789abcdef01234567");
    CHECK(l.files == std::vector<std::string>{"config.json", "model.safetensors"});
    CHECK(error_of([] { hub::parse_listing("<html>", "o/n"); }) == "o/n: listing: the Hub's answer is not a JSON object");
    CHECK(error_of([] { hub::parse_listing(R"({"sha":"abc","siblings":[]})", "o/n"); }) ==
          "o/n: listing: sha: expected the commit (40 hex digits)");
    CHECK(error_of([] { hub::parse_listing(R"({"sha":"0123456789abcdef0123456789abcdef01234567","siblings":[{"name":1}]})", "o/n"); }) ==
          "o/n: listing: siblings: expected {\"rfilename\": …} for every file");
}

TEST_CASE("a HEAD's headers: X-Linked-* before ETag and Content-Length; the last answer after redirects wins") {
    const hub::FileHead lfs = hub::parse_head(
        "HTTP/1.1 302 Found\r\nx-repo-commit: 0123456789abcdef0123456789abcdef01234567\r\nETag: \"pointer\"\r\n"
        "X-Linked-ETag: \"7a3fc1e6d0e7c4a5b3c9f0e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8\"\r\nX-Linked-Size: 497774208\r\n"
        "Content-Length: 1115\r\nLocation: https://cdn-lfs.hf.co/x\r\n\r\n");
    CHECK(lfs.commit == "0123456789abcdef0123456789abcdef01234567");
    CHECK(lfs.etag == "7a3fc1e6d0e7c4a5b3c9f0e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8");
    CHECK(hub::is_sha256(lfs.etag));
    CHECK(lfs.size == 497774208u);
    CHECK(lfs.location == "https://cdn-lfs.hf.co/x");
    const hub::FileHead plain = hub::parse_head(
        "HTTP/1.1 307 Temporary Redirect\nLocation: /new/name/resolve/main/config.json\nX-Linked-Size: 5\n\n"
        "HTTP/1.1 200 OK\nETag: W/\"abc123\"\nContent-Length: 665\nX-Error-Code: \n");
    CHECK(plain.etag == "abc123");
    CHECK_FALSE(hub::is_sha256(plain.etag));
    CHECK(plain.size == 665u);
    CHECK(plain.location.empty());
    CHECK(hub::parse_head("HTTP/1.1 401\r\nX-Error-Code: GatedRepo\r\n").error_code == "GatedRepo");
    CHECK_FALSE(hub::parse_head("Content-Length: 12x\n").size);
    CHECK(hub::normalized_etag(" W/\"x\" ") == "x");
    // Only what the Hub sends: a quoted token. The rest is refused by name (fuzz_hub found `W/"": W/""`).
    const hub::FileHead odd = hub::parse_head("HTTP/1.1 200 OK\r\nETag: W/\"\": W/\"\"\r\nContent-Length: 12\r\n");
    CHECK(odd.etag.empty());
    CHECK(odd.refused_etag == "W/\"\": W/\"\"");
    for (const char* bad : {"abc", "\"\"", "\"a/b\"", "\"../x\"", "\"a.b\"", "\"a b\"", "W/abc"}) CHECK(hub::normalized_etag(bad).empty());
    CHECK(hub::normalized_etag("\"" + std::string(128, 'f') + "\"").size() == 128);
    CHECK(hub::normalized_etag("\"" + std::string(129, 'f') + "\"").empty());
}

TEST_CASE("which files: the config, the tokenizer files, the weights; shards from the index") {
    const std::vector<std::string> listed = {"README.md", "config.json", "merges.txt", "model.safetensors", "onnx/model.onnx",
                                             "pytorch_model.bin", "tokenizer.json", "vocab.json", "model.safetensors.index.json"};
    CHECK(hub::model_files(listed) == std::vector<std::string>{"config.json", "tokenizer.json", "vocab.json", "merges.txt", "model.safetensors"});
    CHECK(hub::model_files({"config.json", "model.safetensors.index.json", "model-00001-of-00002.safetensors"}) ==
          std::vector<std::string>{"config.json", "model.safetensors.index.json"});
    CHECK_FALSE(hub::has_weights(hub::model_files({"config.json", "pytorch_model.bin"})));
    CHECK(hub::shard_files(R"({"metadata":{},"weight_map":{"a":"m-2.safetensors","b":"m-1.safetensors","c":"m-2.safetensors"}})", "i") ==
          std::vector<std::string>{"m-1.safetensors", "m-2.safetensors"});
    CHECK(error_of([] { hub::shard_files(R"({"weight_map":{"a":"../../etc/passwd"}})", "o/n/model.safetensors.index.json"); }) ==
          "o/n/model.safetensors.index.json: weight_map.a: \"../../etc/passwd\" is not a file of the repo");
    CHECK(error_of([] { hub::shard_files("[]", "i"); }) == "i: weight_map: expected an object naming each tensor's shard");
}

TEST_CASE("the cache as huggingface_hub writes it: refs, snapshots, a pinned commit; --list's models") {
    const fs::path cache = fs::temp_directory_path() / "attnviz-test-hub-cache";
    fs::remove_all(cache);
    hub::Environment env;
    env.cache = cache.string();
    const std::string commit = "0123456789abcdef0123456789abcdef01234567", other = "89abcdef0123456789abcdef0123456789abcdef";
    const fs::path repo = cache / "models--org--name";
    write(repo / "refs" / "main", commit + "\n");
    write(repo / "blobs" / "c0ffee", R"({"model_type": "llama"})");
    write(repo / "blobs" / "beef", std::string(1000, 'x'));
    fs::create_directories(repo / "snapshots" / commit);
    for (auto [blob, file] : {std::pair{"c0ffee", "config.json"}, std::pair{"beef", "model.safetensors"}}) {
        std::error_code ec;
        fs::create_symlink(std::string("../../blobs/") + blob, repo / "snapshots" / commit / file, ec);
        if (ec) fs::copy_file(repo / "blobs" / blob, repo / "snapshots" / commit / file);  // no links here
    }
    write(repo / "snapshots" / other / "config.json", R"({"model_type": "gpt2"})");  // no weights: not listed
    write(cache / "models--org--t5" / "snapshots" / commit / "config.json", R"({"model_type": "t5"})");  // not a family we run
    write(cache / "models--org--t5" / "snapshots" / commit / "model.safetensors", "x");
    write(cache / "datasets--org--data" / "refs" / "main", commit);

    const hub::RepoId id = *hub::parse_repo_id("org/name");
    CHECK(hub::repo_folder(env, id) == repo.string());
    CHECK(hub::cached_commit(env, id) == commit);
    CHECK(hub::cached_snapshot(env, id) == (repo / "snapshots" / commit).string());
    CHECK(hub::cached_snapshot(env, *hub::parse_repo_id("org/name@" + other)) == (repo / "snapshots" / other).string());
    CHECK_FALSE(hub::cached_snapshot(env, *hub::parse_repo_id("org/name@v2")));  // no such ref
    CHECK_FALSE(hub::cached_snapshot(env, *hub::parse_repo_id("org/none")));
    const std::vector<hub::CachedModel> models = hub::cached_models(env);
    REQUIRE(models.size() == 1);
    CHECK(models[0].id.shown() == "org/name");
    CHECK(models[0].model_type == "llama");
    CHECK(models[0].bytes == 1000 + 23);

    FetchOptions offline;
    offline.env = env;
    offline.env.offline = true;
    CHECK(hub_snapshot(id, offline) == (repo / "snapshots" / commit).string());
    CHECK(error_of([&] { hub_snapshot(*hub::parse_repo_id("org/none"), offline); }).find("org/none: ") == 0);
    fs::remove_all(cache);
}
