// The numbers the Steps view shows (core/figure/steps.hpp), as strings, against the seeds' printouts.
#include "presets.hpp"
#include "steps.hpp"

#include <doctest/doctest.h>

#include <cmath>

using namespace attn;

namespace {

Trace preset_trace(const char* name) {
    const Scene* scene = find_preset(name);
    REQUIRE(scene != nullptr);
    return compute(*scene);
}

const Step& find_step(const std::vector<Step>& steps, StepKind kind) {
    for (const Step& s : steps)
        if (s.kind == kind) return s;
    FAIL("no such step");
    return steps.front();
}

}  // namespace

TEST_CASE("format_number: 4 decimals, no negative zero, −∞ for masked scores") {
    CHECK(format_number(0.29758f) == "0.2976");
    CHECK(format_number(-0.00001f) == "0.0000");
    CHECK(format_number(-1.5f) == "-1.5000");
    CHECK(format_number(-INFINITY) == "\xe2\x88\x92\xe2\x88\x9e");
    CHECK(format_number(2.0e6f) == "2.000e+06");
}

TEST_CASE("steps: five-tokens (seed 001) shows the printed scores and softmax rows") {
    const Trace t = preset_trace("five-tokens");
    const auto steps = pipeline_steps(t, 0, false);
    const Step& scaled = find_step(steps, StepKind::Scaled);
    const Step& weights = find_step(steps, StepKind::Weights);
    CHECK(format_row(scaled.values, 0) == "1.0000 0.0000 0.5000 0.5000 0.7500");
    CHECK(format_row(weights.values, 0) == "0.2976 0.1095 0.1805 0.1805 0.2318");
    CHECK(format_row(weights.values, 2) == "0.1805 0.1805 0.2976 0.1095 0.2318");
    // Order of the pipeline, self attention without a mask: no "+ mask" step.
    std::vector<StepKind> kinds;
    for (const Step& s : steps) kinds.push_back(s.kind);
    CHECK(kinds == std::vector<StepKind>{StepKind::Input, StepKind::Q, StepKind::K, StepKind::V, StepKind::Scores,
                                         StepKind::Scaled, StepKind::Weights, StepKind::Output, StepKind::Concat,
                                         StepKind::Final});
    // The weight breakdown ends in the value the cell shows.
    const std::string w = explain_weight(t.attention.heads[0], t.allowed, 0, 0);
    CHECK(w.substr(w.size() - 9) == " = 0.2976");
}

TEST_CASE("steps: i-am-good (seed 002) output rows and the score breakdown") {
    const Trace t = preset_trace("i-am-good");
    const auto steps = pipeline_steps(t, 0, false);
    const Step& final_output = find_step(steps, StepKind::Final);
    CHECK(format_row(final_output.values, 0) == "1.0000 2.9577 2.0113");
    CHECK(find_step(steps, StepKind::Scaled).label == "\xc3\xb7 1");  // scale "none"
    CHECK(find_step(steps, StepKind::Scaled).formula == "\xc3\x97 1.0000");
    // X = [[1,3,2],[1,1,3],[1,2,1]], identity weights: score(I, am) = 1·1 + 3·1 + 2·3 = 10.
    CHECK(explain_score(t.attention.heads[0], 0, 1) == "q\xc2\xb7k = 1.0000\xc3\x97" "1.0000 + 3.0000\xc3\x97" "1.0000 + 2.0000\xc3\x97" "3.0000 = 10.0000");
    const std::string o = explain_output(t.attention.heads[0], 0, 1);
    CHECK(o.substr(o.size() - 9) == " = 2.9577");
    CHECK(row_entropy(t.attention.heads[0].weights, 0) < 0.2f);  // unscaled: nearly one-hot
}

TEST_CASE("steps: masked and cross pipelines: -inf cells, shapes, and Q from X, K and V from X_kv") {
    Scene s;
    s.kind = AttentionKind::Masked;
    s.tokens = {"a", "b", "c"};
    s.d_model = 4;
    s.heads = 2;
    Trace t = compute(s);
    auto steps = pipeline_steps(t, 1, false);
    const Step& masked = find_step(steps, StepKind::Masked);
    CHECK(format_number(masked.values(0, 2)) == "\xe2\x88\x92\xe2\x88\x9e");
    CHECK(find_step(steps, StepKind::Q).shape == "T_q\xc3\x97" "d_k = 3\xc3\x97" "2");
    CHECK(find_step(steps, StepKind::Concat).values.cols() == 4);
    CHECK(explain_weight(t.attention.heads[1], t.allowed, 0, 2) == "e^(\xe2\x88\x92\xe2\x88\x9e) = 0");

    // A long trace keeps the first rows; the shapes still name the whole matrices.
    s.tokens.assign(40, "w");
    t = compute(s, 0);
    REQUIRE(t.is_long());
    steps = pipeline_steps(t, 1, false);
    CHECK(find_step(steps, StepKind::Weights).shape == "T_q\xc3\x97T_k = 40\xc3\x97" "40");
    CHECK(find_step(steps, StepKind::Weights).values.rows() == kLongTraceRows);
    CHECK(find_step(steps, StepKind::Weights).rows == 40);
    CHECK(find_step(steps, StepKind::K).rows == 40);

    s.kind = AttentionKind::Cross;
    s.tokens = {"a", "b", "c"};
    s.source_tokens = {"x", "y"};
    t = compute(s);
    steps = pipeline_steps(t, 0, true);
    CHECK(find_step(steps, StepKind::Q).label == "Q = X\xc2\xb7W_q");
    CHECK(find_step(steps, StepKind::K).label == "K = X_kv\xc2\xb7W_k");
    CHECK(find_step(steps, StepKind::V).label == "V = X_kv\xc2\xb7W_v");
    CHECK(find_step(steps, StepKind::InputKv).values.rows() == 2);
    CHECK(find_step(steps, StepKind::InputKv).label == "X_kv + PE");
    CHECK(find_step(steps, StepKind::Input).label == "X + PE");
}
