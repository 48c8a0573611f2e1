// Scene files: round trips, defaults, and a clear one-line error for every kind of bad input.
#include "scene.hpp"
#include "text.hpp"

#include "scene_cases.hpp"

#include "test_util.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

using namespace attn;
using attn::test::contains;

namespace {

// The SceneError message for text, or "" when it reads fine.
std::string scene_error(const std::string& text) {
    try {
        read_scene(text);
    } catch (const SceneError& e) {
        const std::string message = e.what();
        CHECK(message.find('\n') == std::string::npos);  // one line
        return message;
    }
    return "";
}


std::string many_tokens(int n) {
    std::string s = "[";
    for (int i = 0; i < n; ++i) s += (i ? ",\"w" : "\"w") + std::to_string(i) + "\"";
    return s + "]";
}

}  // namespace

TEST_CASE("a minimal scene gets the documented defaults") {
    const Scene s = read_scene(R"({"tokens": "I am good"})");
    CHECK(s.kind == AttentionKind::Self);
    CHECK(s.tokens == std::vector<std::string>{"I", "am", "good"});
    CHECK(s.d_model == 8);
    CHECK(s.heads == 1);
    CHECK(std::holds_alternative<IdentityWeights>(s.weights));
    CHECK(s.scale.kind == ScaleKind::InvSqrtDk);
    CHECK(s.positional == Positional::None);
    CHECK(!s.embeddings);
    CHECK(read_scene(R"({"tokens": ["a"], "heads": 4})").d_model == 32);
    CHECK(read_scene(R"({"tokens": ["a"], "embeddings": [[1, 2, 3]]})").d_model == 3);
}

TEST_CASE("writing then reading gives the same scene") {
    const char* scenes[] = {
        R"({"kind": "cross", "tokens": ["It", "rained"], "source_tokens": "那天雨很大", "d_model": 6, "heads": 3,
            "weights": {"seed": 18446744073709551615}, "scale": 0.37, "positional": "sinusoidal"})",
        R"({"kind": "self", "tokens": ["a", "b", "c"], "embeddings": [[0.1, -2.5], [3e-7, 1e6], [0, 1]],
            "weights": {"w_q": [[1, 2], [3, 4]], "w_k": [[0.5, 0], [0, 0.5]], "w_v": [[1, 0], [0, 1]],
                        "w_o": [[0.1, 0.2], [0.3, 0.4]], "b_q": [1, -1], "b_o": [0.25, 0]},
            "mask": [[1, 0, 1], [1, 1, 0], [0, 0, 0]], "key_padding": [1, 1, 0], "scale": "none",
            "name": "n", "description": "d"})",
        R"({"kind": "masked", "tokens": ["x", "y"], "mask": "causal", "heads": 2, "d_model": 4,
            "source_embeddings": null})",
    };
    int n = 0;
    for (const char* text : scenes) {
        CAPTURE(text);
        std::string error = scene_error(text);
        if (n == 2) {  // null is not a matrix
            CHECK(contains(error, "source_embeddings"));
            break;
        }
        REQUIRE(error.empty());
        const Scene s = read_scene(text);
        const std::string written = write_scene(s);
        const Scene back = read_scene(written);
        CHECK(back == s);
        CHECK(write_scene(back) == written);
        ++n;
    }
    const Scene s = read_scene(scenes[1]);
    CHECK(s.mask_matrix->row(2).isZero());
    CHECK(std::get<ExplicitWeights>(s.weights).b_k.size() == 0);
    // The shortest decimal that reads back: 0.1 stays "0.1".
    CHECK(contains(write_scene(s), "0.1,"));
}

TEST_CASE("bad input names the line:column or the field and what was expected") {
    struct Case {
        const char* text;
        const char* wants[2];
    };
    const std::string too_many = R"({"tokens": )" + many_tokens(kMaxTokens + 1) + "}";
    const Case cases[] = {
        {"{\n  \"tokens\": [\"a\",\n  }", {"3:3", "malformed JSON"}},
        {"", {"1:1", "malformed JSON"}},
        {"{\"tokens\": [\"a\"]} trailing", {"1:21", "malformed JSON"}},
        {"[1, 2]", {"top level", "a JSON object"}},
        {R"({"tokens": []})", {"tokens", "at least one token"}},
        {R"({"tokens": "   "})", {"tokens", "at least one token"}},
        {R"({"kind": "self"})", {"tokens", "missing"}},
        {R"({"tokens": ["a", 3]})", {"tokens[1]", "a string"}},
        {R"({"tokens": ["a", ""]})", {"tokens[1]", "non-empty"}},
        {R"({"tokens": ["a"], "kind": "selfish"})", {"kind", "\"self\", \"masked\" or \"cross\", got \"selfish\""}},
        {R"({"tokens": ["a"], "kind": "cross"})", {"source_tokens", "missing"}},
        {R"({"tokens": ["a"], "source_tokens": ["b"]})", {"source_tokens", "only allowed"}},
        {R"({"tokens": ["a"], "d_model": 6, "heads": 4})", {"heads", "divisor of d_model (6), got 4"}},
        {R"({"tokens": ["a"], "d_model": 0})", {"d_model", "integer from 1"}},
        {R"({"tokens": ["a"], "d_model": 2.5})", {"d_model", "integer"}},
        {R"({"tokens": ["a"], "heads": -1})", {"heads", "integer from 1"}},
        {R"({"tokens": ["a", "b"], "embeddings": [[1, 2]]})", {"embeddings", "2×2 matrix (tokens × d_model), got 1×2"}},
        {R"({"tokens": ["a", "b"], "embeddings": [[1, 2], [3]]})", {"embeddings[1]", "2 numbers like row 0, got 1"}},
        {R"({"tokens": ["a"], "embeddings": [[1, "x"]]})", {"embeddings[0][1]", "a number"}},
        {R"({"tokens": ["a"],
  "embeddings": [[1, 1e999]]})", {"2:22", "number overflow parsing '1e999'"}},
        {R"({"tokens": ["a"], "embeddings": [[1, NaN]]})", {"1:", "malformed JSON"}},
        {R"({"tokens": ["a"], "embeddings": [[1, 2e7]]})", {"embeddings[0][1]", "±1e6"}},
        {R"({"tokens": ["a"], "d_model": 3, "embeddings": [[1, 2]]})", {"embeddings", "1×3"}},
        {R"({"tokens": ["a"], "weights": "random"})", {"weights", "\"identity\""}},
        {R"({"tokens": ["a"], "weights": {"seed": -1}})", {"weights.seed", "non-negative integer"}},
        {R"({"tokens": ["a"], "d_model": 2, "weights": {"w_q": [[1, 0], [0, 1]]}})", {"weights.w_k", "missing"}},
        {R"({"tokens": ["a"], "d_model": 2, "weights": {"w_q": [[1]], "w_k": [[1]], "w_v": [[1]], "w_o": [[1]]}})",
         {"weights.w_q", "2×2 matrix"}},
        {R"({"tokens": ["a"], "weights": {"w_x": 1}})", {"weights.w_x", "unknown field"}},
        {R"({"tokens": ["a"], "scale": -2})", {"scale", "positive number"}},
        {R"({"tokens": ["a"], "scale": "sqrt"})", {"scale", "\"sqrt_dk\""}},
        {R"({"tokens": ["a", "b"], "mask": [[1, 0]]})", {"mask", "2×2 matrix"}},
        {R"({"tokens": ["a"], "mask": [[2]]})", {"mask[0][0]", "0 or 1"}},
        {R"({"tokens": ["a"], "mask": "upper"})", {"mask", "\"causal\""}},
        {R"({"tokens": ["a"], "key_padding": [1, 0]})", {"key_padding", "1 entries"}},
        {R"({"tokens": ["a"], "positional": "learned"})", {"positional", "\"sinusoidal\""}},
        {R"({"tokens": ["a"], "head": 2})", {"head", "unknown field"}},
        {too_many.c_str(), {"tokens", "at most 8192 tokens, got 8193"}},
    };
    for (const Case& c : cases) {
        CAPTURE(c.text);
        const std::string error = scene_error(c.text);
        CAPTURE(error);
        for (const char* want : c.wants)
            if (want) CHECK(contains(error, want));
    }
}

TEST_CASE("compute: given and generated embeddings, positional encoding, masks from the scene") {
    const Scene s = read_scene(R"({"tokens": ["a", "b", "a"], "d_model": 4, "positional": "sinusoidal",
                                   "kind": "masked", "key_padding": [1, 0, 1]})");
    const Trace t = compute(s);
    const Matrix x = generated_embeddings(s.tokens, 4) + sinusoidal_positions(3, 4);
    CHECK(t.attention.x_q == x);
    MaskMatrix want(3, 3);
    want << 1, 0, 0, 1, 0, 0, 1, 0, 1;
    CHECK(t.allowed == want);
    CHECK(t.attention.heads[0].weights(1, 0) == 1.0f);
    CHECK(t.d_k == 4);
}

TEST_CASE("long trace: first rows kept whole, every other row on demand equals the full trace") {
    // Shapes × masks: self, causal, cross with padding, an explicit mask with a fully masked row.
    const std::vector<std::string> scenes = cases::mask_scenes();
    for (const std::string& text : scenes) {
        CAPTURE(text.substr(0, 60));
        const Scene s = read_scene(text);
        const Trace full = compute(s);
        const Trace lng = compute(s, 0);
        REQUIRE_FALSE(full.is_long());
        REQUIRE(lng.is_long());
        const int rows = std::min(kLongTraceRows, full.T_q()), T_k = full.T_k();
        CHECK(lng.attention.output.rows() == rows);
        CHECK(lng.attention.output.isApprox(full.attention.output.topRows(rows), 1e-6f));
        CHECK(trace_bytes(lng) < trace_bytes(full));
        for (int h = 0; h < s.heads; ++h) {
            CHECK(lng.attention.heads[h].weights == full.attention.heads[h].weights.topRows(rows));
            // Rows in blocks that straddle the kept rows, and one at a time.
            std::vector<float> w(static_cast<size_t>(full.T_q()) * T_k), sc(w.size());
            for (int r0 = 0; r0 < full.T_q(); r0 += 7) {
                const int r1 = std::min(r0 + 7, full.T_q());
                attention_rows(lng, h, r0, r1, w.data() + static_cast<size_t>(r0) * T_k, sc.data() + static_cast<size_t>(r0) * T_k);
            }
            for (int q = 0; q < full.T_q(); ++q)
                for (int k = 0; k < T_k; ++k) {
                    const size_t i = static_cast<size_t>(q) * T_k + k;
                    CHECK(w[i] == doctest::Approx(full.attention.heads[h].weights(q, k)).epsilon(1e-6));
                    CHECK(sc[i] == full.attention.heads[h].scaled(q, k));
                }
            for (int q : {0, rows - 1, full.T_q() - 1}) {
                const int k = (q * 5 + 3) % T_k;
                const CellValues a = cell_values(lng, h, q, k), b = cell_values(full, h, q, k);
                CHECK(a.allowed == b.allowed);
                CHECK(a.weight == doctest::Approx(b.weight).epsilon(1e-6));
                CHECK(a.score == doctest::Approx(b.score).epsilon(1e-5));
                CHECK(a.scaled == b.scaled);
            }
        }
    }
}
