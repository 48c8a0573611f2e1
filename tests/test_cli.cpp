// `attnviz compute` in-process: the trace of SPEC.md §2 and one-line errors with exit 2.
#include "cli.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <sstream>

using namespace attn;

namespace {

struct Run {
    int code;
    std::string out, err;
};

Run compute_stdin(const std::string& scene) {
    std::istringstream in(scene);
    std::ostringstream out, err;
    int code = run_compute("-", in, out, err);
    return {code, out.str(), err.str()};
}

}  // namespace

TEST_CASE("compute prints the trace: shapes, masked scores null, weights 0") {
    const Run r = compute_stdin(R"({"kind": "masked", "tokens": ["我", "爱", "你"], "embeddings": [[1], [2], [3]]})");
    REQUIRE(r.code == 0);
    CHECK(r.err.empty());
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["kind"] == "masked");
    CHECK(j["queries"] == nlohmann::json({"我", "爱", "你"}));
    CHECK(j["keys"] == j["queries"]);
    CHECK(j["heads"] == 1);
    CHECK(j["d_k"] == 1);
    const auto& h = j["per_head"][0];
    for (const char* key : {"q", "k", "v", "scores", "scaled", "weights", "output"}) CHECK(h.contains(key));
    CHECK(h["scores"][0] == nlohmann::json({1, 2, 3}));
    CHECK(h["scaled"][0][1].is_null());
    CHECK(h["scaled"][1][0] == 2);
    CHECK(h["weights"][0] == nlohmann::json({1, 0, 0}));
    CHECK(j["output"].size() == 3);
}

TEST_CASE("compute reproduces seed 002's R output") {
    const Run r = compute_stdin(R"({"tokens": ["I", "am", "good"], "embeddings": [[1,3,2],[1,1,3],[1,2,1]],
                                     "scale": "none"})");
    REQUIRE(r.code == 0);
    const auto out = nlohmann::json::parse(r.out)["output"];
    CHECK(out[0][1].get<double>() == doctest::Approx(2.957691).epsilon(1e-6));
    CHECK(out[1][2].get<double>() == doctest::Approx(2.722573).epsilon(1e-6));
    CHECK(out[2][1].get<double>() == doctest::Approx(2.864164).epsilon(1e-6));
}

TEST_CASE("bad input: exit 2, nothing on stdout, one line naming <stdin> and the field or position") {
    const std::pair<const char*, const char*> cases[] = {
        {"{\"tokens\": [1}", "<stdin>:1:14: malformed JSON: syntax error while parsing array - unexpected '}'; expected ']'"},
        {R"({"tokens": ["a"], "heads": 3, "d_model": 4})", "<stdin>: heads: expected a divisor of d_model (4), got 3"},
        {R"({"tokens": ["a"], "kind": "sideways"})", "<stdin>: kind: expected"},
    };
    for (const auto& c : cases) {
        const std::string scene = c.first, want = c.second;
        CAPTURE(scene);
        const Run r = compute_stdin(scene);
        CHECK(r.code == kExitBadInput);
        CHECK(r.out.empty());
        CHECK(r.err.rfind(want, 0) == 0);
        CHECK(r.err.find('\n') == r.err.size() - 1);
    }
    std::istringstream none;
    std::ostringstream out, err;
    CHECK(run_compute("/no/such/scene.json", none, out, err) == kExitBadInput);
    CHECK(err.str() == "/no/such/scene.json: cannot open the file\n");
}

namespace {

Run import_stdin(const std::string& text, std::vector<std::string> args = {"-"}) {
    std::istringstream in(text);
    std::ostringstream out, err;
    int code = run_import(args, in, out, err);
    return {code, out.str(), err.str()};
}

}  // namespace

TEST_CASE("import: a one-paragraph summary, one map as JSON, one-line errors with exit 2") {
    const std::string file = R"({"model": "m", "tokens": ["a", "b"], "attention": [[[[1, 0], [0.25, 0.75]]], [[[1, 0], [0.5, 0.5]]]]})";
    Run r = import_stdin(file);
    REQUIRE(r.code == 0);
    CHECK(r.err.empty());
    CHECK(r.out == "<stdin>: m: 1 stack of attention. attention: 2 layers × 1 head, 2 tokens (a b).\n");
    r = import_stdin(file, {"-", "--layer", "0", "--head", "0", "--json"});
    REQUIRE(r.code == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["weights"] == nlohmann::json::parse("[[1, 0], [0.25, 0.75]]"));
    CHECK(j["queries"] == nlohmann::json({"a", "b"}));
    r = import_stdin(file, {"-", "--layer", "1", "--head", "1", "--json"});
    CHECK(r.code == 2);
    CHECK(r.err == "<stdin>: --head: expected 0 to 0 (attention has 2 layers × 1 head), got 1\n");
    r = import_stdin(R"({"tokens": ["a", "b"], "attention": [[[[1, 0]]]]})");
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK(r.err == "<stdin>: attention[0][0]: expected 2 rows (one per token), got 1\n");
    r = import_stdin("{\n  \"tokens\": [\"a\"],\n  \"attention\": [[[[1]]]\n");
    CHECK(r.err == "<stdin>:4:1: malformed JSON: unexpected end of input; expected ',' or ']'\n");
    CHECK(import_stdin(file, {"-", "--json"}).code == 2);
    CHECK(import_stdin(file, {"-", "--layer", "x", "--head", "0", "--json"}).code == 2);
    CHECK(import_stdin(file, {}).code == 2);
}
