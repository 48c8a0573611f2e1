// The numbers the Steps view shows (core/figure/steps.hpp), as strings, against the seeds' printouts;
// and the steps today's families add (RoPE, q/k norm, soft caps, shared K/V heads) on
// random-weight checkpoints, against the PyTorch reference and their own arithmetic.
//
// [SECTION] The seeds' scenes
// [SECTION] Today's families: a live model's block
// [SECTION] The tiles mode (FlashAttention a step at a time)
#include "figure.hpp"
#include "flash_layout.hpp"
#include "presets.hpp"
#include "steps.hpp"
#include "steps_layout.hpp"

#include "test_util.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

using namespace attn;
using attn::test::matrix_of;
using attn::test::same_bits;
using attn::test::preset_trace;

namespace {

const Step& find_step(const std::vector<Step>& steps, StepKind kind) {
    for (const Step& s : steps)
        if (s.kind == kind) return s;
    FAIL("no such step");
    return steps.front();
}

}  // namespace

// [SECTION] The seeds' scenes --------------------------------------------------------------------

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
    CHECK(explain_score(t, 0, 0, 1) == "q\xc2\xb7k = 1.0000\xc3\x97" "1.0000 + 3.0000\xc3\x97" "1.0000 + 2.0000\xc3\x97" "3.0000 = 10.0000");
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

// [SECTION] Today's families: a live model's block ------------------------------------------------
// The random-weight checkpoints of tests/model/make_models.py (build/model-refs), run on their
// expected.json's ids as the page runs them, one layer's block as the Steps view gets it.

#ifdef ATTN_MODEL_REFS
namespace {

struct LiveLayer {
    Trace trace;
    nlohmann::json expected;
};

LiveLayer live_layer(const char* name, int layer) {
    const ModelFiles files = ModelFiles::from_folder((std::filesystem::path(ATTN_MODEL_REFS) / name).string());
    auto run = std::make_shared<LiveRun>();
    run->model = std::make_shared<const LoadedModel>(load_model(files));
    LiveLayer out;
    out.expected = nlohmann::json::parse(files.need("expected.json").text());
    run->input.ids = out.expected.at("ids").get<std::vector<int>>();
    kernels::Context ctx;
    run->result = forward(ctx, run->model->model, run->input);
    const Figure figure = live_figure(run);
    out.trace = live_layer_trace(figure, 0, layer, figure.stack(0).queries, figure.stack(0).keys);
    return out;
}

std::vector<StepKind> kinds_of(const std::vector<Step>& steps) {
    std::vector<StepKind> kinds;
    for (const Step& s : steps) kinds.push_back(s.kind);
    return kinds;
}

double max_diff(const Matrix& a, const Matrix& b) {
    REQUIRE(a.rows() == b.rows());
    REQUIRE(a.cols() == b.cols());
    return static_cast<double>((a - b).cwiseAbs().maxCoeff());
}

using Measure = attn::test::ByteMeasure;

// The Steps view's layout of `steps` at a width (the input points at its own ranges: not copied).
struct Laid {
    std::vector<std::pair<float, float>> ranges;
    StepsInput in;
    StepsLayout layout;
    Laid(const Trace& tr, const std::vector<Step>& steps, const TextMeasure& m, float width = 1280.0f) {
        ranges.assign(steps.size(), {-1.0f, 1.0f});
        in.trace = &tr, in.steps = &steps, in.ranges = &ranges;
        in.avail_w = width;
        for (const Step& s : steps) in.captions.push_back("caption of " + s.label);
        layout = lay_out_steps(in, m);
    }
    Laid(const Laid&) = delete;
};

}  // namespace

TEST_CASE("steps: qwen3 (q/k norm, RoPE, GQA): Q as projected, normed, the angles, Q turned; a turned number written out") {
    const LiveLayer live = live_layer("qwen3_l2_h4kv2_d24_f32_qknorm", 1);  // layer 2: full attention
    const Trace& tr = live.trace;
    const FamilyTrace& f = tr.family;
    REQUIRE(f.rotary());
    REQUIRE(f.qk_norm());
    CHECK(tr.d_k == 16);  // head_dim, not d_model / heads
    CHECK((f.kv_heads == 2 && f.group == 2 && f.kv_head_of(2) == 1 && f.rope_dim == 16));
    const int head = 2;  // head 3
    const std::vector<Step> steps = pipeline_steps(tr, head, false);
    CHECK(kinds_of(steps) == std::vector<StepKind>{StepKind::Input, StepKind::Q, StepKind::QNormed, StepKind::Angles,
                                                   StepKind::QRotated, StepKind::K, StepKind::KNormed, StepKind::KRotated,
                                                   StepKind::V, StepKind::Scores, StepKind::Scaled, StepKind::Masked,
                                                   StepKind::Weights, StepKind::Output, StepKind::Concat, StepKind::Final});
    const Step& q = find_step(steps, StepKind::Q);
    const Step& q_normed = find_step(steps, StepKind::QNormed);
    const Step& q_rotated = find_step(steps, StepKind::QRotated);
    const Step& angles = find_step(steps, StepKind::Angles);
    CHECK(q.label == "Q = X·W_q");
    CHECK(q_normed.label == "RMSNorm(Q)");
    CHECK(q_rotated.label == "Q′ = RoPE(Q)");
    CHECK(q_rotated.formula == "R(p·θ_i)·(q_i, q_i+8)");
    CHECK(angles.label == "p·θ_i");
    CHECK(angles.shape == "T×d_rot/2 = 12×8");
    CHECK(angles.formula == "θ_i = 1e+06^(−2i/16)");
    CHECK(find_step(steps, StepKind::K).label == "K = X·W_k");
    CHECK(find_step(steps, StepKind::Scaled).label == "÷ √d_k");
    CHECK(find_step(steps, StepKind::Scaled).formula == "× 0.2500");

    // The PyTorch reference's Q of layer 2 head 3, before and after the rotation; what the scores read.
    const double d_rot = max_diff(q_rotated.values, matrix_of(live.expected["q"]["attention"][1][head]));
    const double d_un = max_diff(q_normed.values, matrix_of(live.expected["q_unrotated"]["attention"][1][head]));
    MESSAGE("qwen3 layer 2 head 3: Q′ within " << d_rot << " of the reference, Q before the rotation within " << d_un);
    CHECK(d_rot < 1e-4);
    CHECK(d_un < 1e-4);
    CHECK(same_bits(q_rotated.values, tr.attention.heads[head].q));
    CHECK(same_bits(q.values, f.q_projected[head]));
    // K and its stages are those of K/V head 2, which serves query heads 3 and 4.
    CHECK(same_bits(find_step(steps, StepKind::K).values, f.k_projected[1]));
    CHECK(same_bits(find_step(steps, StepKind::KRotated).values, tr.attention.heads[head].k));

    // A number of Q′ in the first half of its pair, then one in the second half.
    const int p = 3;
    for (int c : {2, 10}) {
        const int i = c % 8, pair = c < 8 ? c + 8 : c - 8;
        const float cos = f.rope_cos(p, i), sin = f.rope_sin(p, i);
        const float x = q_normed.values(p, c), x_pair = q_normed.values(p, pair);
        CHECK(q_rotated.values(p, c) == (c < 8 ? x * cos - x_pair * sin : x * cos + x_pair * sin));
        const std::string said = explain_rotation(f, q_normed.values, q_rotated.values, p, c, "q");
        const std::string want = "pair (3, 11), p = 3 (token 4)\np·θ_i = 3 × 0.0316228 = 0.0948683\ncos = " + format_number(cos) +
                                 ", sin = " + format_number(sin) + "\nq′ = q·cos " + (c < 8 ? "−" : "+") +
                                 " q_pair·sin\n   = " + factor_text(x) + "×" + factor_text(cos) + (c < 8 ? " − " : " + ") +
                                 factor_text(x_pair) + "×" + factor_text(sin) + "\n   = " + format_number(q_rotated.values(p, c));
        CHECK(said == want);
    }
    CHECK(std::abs(f.rope_angle(p, 2) - 3.0 * std::pow(1e6, -4.0 / 16.0)) < 1e-6);
    CHECK(explain_angle(f, p, 2).starts_with("θ_i = 1e+06^(−2·2/16) = 0.0316228\npair (3, 11), p = 3 (token 4)\np·θ_i = 3 × 0.0316228 = 0.0948683\n"));
    {  // M-RoPE's streams (qwen2_5_vl: block_trace fills them): the pair's stream gives p, the token's three are named
        Trace m = tr;
        m.family.rope_streams = {0, 0, 1, 1, 1, 2, 2, 2};
        m.family.rope_positions.assign(3, std::vector<int>(12));
        for (int t = 0; t < 12; ++t) m.family.rope_positions[0][t] = t, m.family.rope_positions[1][t] = 20 + t, m.family.rope_positions[2][t] = 40 + t;
        CHECK(find_step(pipeline_steps(m, head, false), StepKind::Angles).formula == "θ_i = 1e+06^(−2i/16); p by pairs: t 1–2, h 3–5, w 6–8");
        CHECK(explain_angle(m.family, p, 2).starts_with("θ_i = 1e+06^(−2·2/16) = 0.0316228\npair (3, 11), p = h = 23 (token 4: t 3, h 23, w 43)\n"
                                                         "p·θ_i = 23 × 0.0316228 = 0.727324\n"));
        CHECK(explain_angle(m.family, p, 7).starts_with("θ_i = 1e+06^(−2·7/16) = 5.62341e-06\npair (8, 16), p = w = 43 (token 4: t 3, h 23, w 43)\n"));
    }

    // RMSNorm(Q): the row's root mean square and the gain, ending in the number shown.
    const std::string norm = explain_norm(q.values, q_normed.values, f.q_norm_gain, f.norm_eps, p, 5, "q");
    double squares = 0;
    for (int j = 0; j < 16; ++j) squares += static_cast<double>(q.values(p, j)) * q.values(p, j);
    const float rms = static_cast<float>(std::sqrt(squares / 16 + f.norm_eps));
    CHECK(norm.starts_with("rms(q) = √(Σq²/16 + ε)\n   = √(" + format_number(static_cast<float>(squares / 16)) + " + 1e-06) = " + format_number(rms)));
    CHECK(norm.ends_with("q / rms(q) · g\n   = " + format_number(q.values(p, 5)) + " / " + format_number(rms) + " × " +
                         factor_text(f.q_norm_gain(5)) + " = " + format_number(q_normed.values(p, 5))));
    CHECK(std::abs(q.values(p, 5) / rms * f.q_norm_gain(5) - q_normed.values(p, 5)) < 1e-5f);

    // The layout: a block per step; hovering Q′(3, 2) outlines the two numbers it turns and their angle.
    const Measure m;
    const Laid l(tr, steps, m);
    REQUIRE(l.layout.blocks.size() == steps.size());
    const size_t qr = static_cast<size_t>(std::find_if(steps.begin(), steps.end(), [](const Step& s) { return s.kind == StepKind::QRotated; }) - steps.begin());
    const StepBlock& b = l.layout.blocks[qr];
    CHECK((b.rows == 12 && b.cols == 16 && b.passes_from == -1));
    const StepsLayout::Hit hit = l.layout.hit(b.grid_x + 2.5f * l.layout.cell_w, b.grid_y + 3.5f * l.layout.cell_h);
    CHECK((hit.step == static_cast<int>(qr) && hit.row == 3 && hit.col == 2));
    const std::vector<StepMark> marks = steps_marks(tr, StepKind::QRotated, 3, 2);
    REQUIRE(marks.size() == 3);
    CHECK((marks[0].kind == StepKind::QNormed && marks[0].row == 3 && marks[0].col == 2));
    CHECK((marks[1].kind == StepKind::QNormed && marks[1].row == 3 && marks[1].col == 10));
    CHECK((marks[2].kind == StepKind::Angles && marks[2].row == 3 && marks[2].col == 2));
    const StepsItems items = steps_items(l.layout, l.in, hit, m);
    CHECK(std::count_if(items.items.begin(), items.items.end(), [](const Item& it) { return it.role == ItemRole::Selection; }) == 3);
    // The angles' columns are headed by the pair each turns.
    CHECK(std::count_if(items.items.begin(), items.items.end(), [](const Item& it) { return it.role == ItemRole::ColLabel && it.text == "(3, 11)"; }) == 1);
    // On a phone's width a block stays as wide as its numbers, its caption wraps where the view ends.
    const Laid phone(tr, steps, m, 360.0f);
    for (const StepBlock& block : phone.layout.blocks) CHECK((block.caption_w <= 360.0f - 28.0f && block.caption_w >= 240.0f));
    // A score reads Q and K as turned.
    const std::vector<StepMark> score = steps_marks(tr, StepKind::Scores, 4, 1);
    CHECK((score[0].kind == StepKind::QRotated && score[1].kind == StepKind::KRotated));
}

TEST_CASE("steps: gemma2 scales by query_pre_attn_scalar^−½ and soft-caps the scores before the mask") {
    const LiveLayer live = live_layer("gemma2_l3_h4kv2_d32_f32_softcap", 0);  // layer 1: a window of 4
    const Trace& tr = live.trace;
    const FamilyTrace& f = tr.family;
    CHECK((f.softcap == 1.5f && tr.window == 4 && !f.qk_norm() && f.rotary()));
    const std::vector<Step> steps = pipeline_steps(tr, 1, false);
    CHECK(kinds_of(steps) == std::vector<StepKind>{StepKind::Input, StepKind::Q, StepKind::Angles, StepKind::QRotated,
                                                   StepKind::K, StepKind::KRotated, StepKind::V, StepKind::Scores,
                                                   StepKind::Scaled, StepKind::Capped, StepKind::Masked, StepKind::Weights,
                                                   StepKind::Output, StepKind::Concat, StepKind::Final});
    const Step& scaled = find_step(steps, StepKind::Scaled);
    const Step& capped = find_step(steps, StepKind::Capped);
    CHECK(scaled.label == "÷ √query_pre_attn_scalar");
    CHECK(scaled.formula == "× 12^(−½) = 0.2887");
    CHECK(tr.scale.factor(tr.d_k) == doctest::Approx(1.0 / std::sqrt(12.0)));
    CHECK(capped.label == "cap·tanh(s/cap)");
    CHECK(capped.formula == "cap = 1.5");
    // Every score capped into (−1.5, 1.5), the allowed ones exactly as the softmax read them.
    const HeadTrace& h = tr.attention.heads[1];
    float biggest = 0.0f, uncapped = 0.0f;
    for (int q = 0; q < tr.T_q(); ++q)
        for (int k = 0; k < tr.T_k(); ++k) {
            biggest = std::max(biggest, std::abs(capped.values(q, k)));
            uncapped = std::max(uncapped, std::abs(scaled.values(q, k)));
            if (tr.allowed(q, k)) CHECK(capped.values(q, k) == h.scaled(q, k));
            CHECK(std::abs(capped.values(q, k) - 1.5f * std::tanh(scaled.values(q, k) / 1.5f)) < 1e-5f);
        }
    MESSAGE("gemma2 head 2: scaled scores up to " << uncapped << ", capped up to " << biggest);
    CHECK(biggest < 1.5f);
    CHECK(uncapped > 1.5f);  // the cap bites
    CHECK(!tr.allowed(6, 1));  // outside the window of 4
    const std::string said = explain_softcap(1.5f, scaled.values(6, 5), capped.values(6, 5));
    CHECK(said == "cap·tanh(s/cap) = 1.5 × tanh(" + format_number(scaled.values(6, 5)) + "/1.5)\n   = 1.5 × " +
                       format_number(std::tanh(scaled.values(6, 5) / 1.5f)) + " = " + format_number(capped.values(6, 5)));
    const std::vector<StepMark> marks = steps_marks(tr, StepKind::Capped, 6, 5);
    REQUIRE(marks.size() == 1);
    CHECK((marks[0].kind == StepKind::Scaled && marks[0].row == 6 && marks[0].col == 5));
}

TEST_CASE("steps: phi3's partial rotation turns the first 4 of 8 dimensions, the rest pass through") {
    const LiveLayer live = live_layer("phi3_l2_h4kv2_d32_f16_longrope_partial", 0);
    const Trace& tr = live.trace;
    const FamilyTrace& f = tr.family;
    REQUIRE((f.rope_dim == 4 && tr.d_k == 8 && f.rope_scaling == "longrope"));
    const std::vector<Step> steps = pipeline_steps(tr, 0, false);
    const Step& q = find_step(steps, StepKind::Q);
    const Step& q_rotated = find_step(steps, StepKind::QRotated);
    CHECK(q_rotated.formula == "R(p·θ_i)·(q_i, q_i+2)");
    CHECK(find_step(steps, StepKind::Angles).formula == "θ_i: 10000, longrope");
    CHECK(same_bits(Matrix(q.values.rightCols(4)), Matrix(q_rotated.values.rightCols(4))));
    CHECK(!same_bits(Matrix(q.values.leftCols(4)), Matrix(q_rotated.values.leftCols(4))));
    CHECK(explain_rotation(f, q.values, q_rotated.values, 5, 6, "q") == "q′ = q = " + format_number(q.values(5, 6)));
    // longrope past its original 16 positions: cos and sin times √(1 + ln 4 / ln 16).
    CHECK(f.rope_attention_factor == doctest::Approx(std::sqrt(1.5)));
    const std::string turned = explain_rotation(f, q.values, q_rotated.values, 5, 1, "q");
    CHECK(turned.find("cos = a·cos(p·θ_i) = " + format_number(f.rope_cos(5, 1)) + "\nsin = a·sin(p·θ_i) = " +
                      format_number(f.rope_sin(5, 1)) + ", a = 1.2247\n") != std::string::npos);
    // The layout heads the turned and the unchanged columns.
    const Measure m;
    Laid l(tr, steps, m);
    l.in.turned = "TURNED", l.in.unchanged = "UNCHANGED";
    const size_t qr = static_cast<size_t>(std::find_if(steps.begin(), steps.end(), [](const Step& s) { return s.kind == StepKind::QRotated; }) - steps.begin());
    CHECK(l.layout.blocks[qr].passes_from == 4);
    const StepsItems items = steps_items(l.layout, l.in, {}, m);
    for (const char* word : {"TURNED", "UNCHANGED"})
        CHECK(std::count_if(items.items.begin(), items.items.end(), [&](const Item& it) { return it.text == word; }) == 2);  // Q′ and K′
}

TEST_CASE("steps: llama with 2 K/V heads: K of the head's group; gpt2 run live keeps the pipeline it had") {
    const LiveLayer llama = live_layer("llama_l2_h4kv2_d32_f32", 1);
    const FamilyTrace& f = llama.trace.family;
    CHECK((f.grouped() && f.kv_heads == 2 && f.kv_head_of(3) == 1 && f.kv_head_of(1) == 0 && !f.qk_norm()));
    const std::vector<Step> steps = pipeline_steps(llama.trace, 3, false);
    CHECK(same_bits(find_step(steps, StepKind::K).values, f.k_unrotated[1]));
    CHECK(same_bits(find_step(steps, StepKind::Q).values, f.q_unrotated[3]));
    CHECK(max_diff(find_step(steps, StepKind::QRotated).values, matrix_of(llama.expected["q"]["attention"][1][3])) < 1e-4);

    const LiveLayer gpt2 = live_layer("gpt2_l2_h2_d16_f32", 1);
    const FamilyTrace& none = gpt2.trace.family;
    CHECK((!none.rotary() && !none.qk_norm() && !none.grouped() && none.softcap == 0.0f && none.query_pre_attn_scalar == 0.0f));
    const std::vector<Step> plain = pipeline_steps(gpt2.trace, 1, false);
    CHECK(kinds_of(plain) == std::vector<StepKind>{StepKind::Input, StepKind::Q, StepKind::K, StepKind::V, StepKind::Scores,
                                                   StepKind::Scaled, StepKind::Masked, StepKind::Weights, StepKind::Output,
                                                   StepKind::Concat, StepKind::Final});
    CHECK(find_step(plain, StepKind::Scaled).label == "÷ √d_k");
    CHECK(same_bits(find_step(plain, StepKind::Q).values, gpt2.trace.attention.heads[1].q));
}
#endif

// [SECTION] The tiles mode (FlashAttention a step at a time) --------------------------------------

namespace {

// The tiles mode's input at one step of a head (the trace and flash outlive it).
FlashInput tiles_input(const Trace& tr, int head, const FlashTrace& flash, FlashStep step, float width = 1280.0f) {
    FlashInput in;
    in.trace = &tr, in.head = head, in.flash = &flash, in.step = step, in.avail_w = width;
    flash_score_range(flash, in.s_lo, in.s_hi);
    in.heading = "heading", in.overview_title = "tiles", in.code_title = "code";
    return in;
}

bool overlap(const FlashBlockBox& a, const FlashBlockBox& b) {
    return a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
}

}  // namespace

TEST_CASE("tiles: every scene and head, many tile sizes: the tiles' O equals the Steps view's output; the steps in order") {
    int traces = 0;
    double worst = 0.0;
    for (const Scene& scene : presets()) {
        const Trace tr = compute(scene);
        for (int head = 0; head < tr.heads; ++head)
            for (TileSize tile : {TileSize{1, 1}, TileSize{2, 2}, TileSize{2, 3}, TileSize{3, 2}, TileSize{4, 4}, TileSize{64, 64}}) {
                CAPTURE(scene.name);
                if (flash_tile_count(tr.T_q(), tr.T_k(), tile) > kFlashMaxTiles) continue;  // the view asks for bigger tiles
                const FlashTrace f = flash_of_head(tr, head, tile);
                const float d = flash_max_difference(tr, head, f), size = flash_output_size(tr, head);
                CHECK(flash_same_output(d, size));
                worst = std::max(worst, static_cast<double>(d / std::max(1.0f, size)));
                ++traces;
                const std::vector<FlashStep> steps = flash_steps(f);
                REQUIRE(steps.size() == static_cast<size_t>(f.row_tiles * (f.col_tiles + 1) + 1));
                CHECK(steps.front() == FlashStep{FlashStep::Tile, 0, 0});
                CHECK(steps[static_cast<size_t>(f.col_tiles)] == FlashStep{FlashStep::Normalize, 0, 0});
                CHECK(steps.back().kind == FlashStep::Check);
                // A skipped tile runs the skip line only; a computed one the body, in order.
                for (const FlashStep& st : steps) {
                    if (st.kind != FlashStep::Tile) continue;
                    const std::vector<FlashLine> lines = step_lines(f, st);
                    const bool skipped = f.at(st.i, st.j).skipped;
                    CHECK(std::count(lines.begin(), lines.end(), FlashLine::Skip) == (skipped ? 1 : 0));
                    CHECK(std::count(lines.begin(), lines.end(), FlashLine::O) == (skipped ? 0 : 1));
                    CHECK((lines.front() == FlashLine::Init) == (st.j == 0));
                }
            }
    }
    MESSAGE(traces << " scene heads × tile sizes; the largest |O_tiles − O| / max(1, max |O|): " << worst);
    CHECK(traces > 50);
}

TEST_CASE("tiles: a causal scene's step, laid out: S, m → m′, P, α, ℓ → ℓ′, O; the map, the state, the arithmetic") {
    const Trace tr = preset_trace("masked-apple");
    REQUIRE(tr.kind == AttentionKind::Masked);
    const FlashTrace f = flash_of_head(tr, 0, {2, 2});
    REQUIRE(f.row_tiles >= 2);
    CHECK(f.at(0, 1).skipped);  // the first two queries see no key of the second tile
    const Measure m;
    // Tile (2, 1): queries 3–4 against keys 1–2, every key allowed.
    const FlashInput in = tiles_input(tr, 0, f, {FlashStep::Tile, 1, 0});
    const std::vector<FlashBlock> blocks = flash_blocks(in);
    std::vector<FlashPart> parts;
    for (const FlashBlock& b : blocks) parts.push_back(b.part);
    CHECK(parts == std::vector<FlashPart>{FlashPart::S, FlashPart::M, FlashPart::P, FlashPart::Alpha, FlashPart::L, FlashPart::O});
    const FlashTile& t = f.at(1, 0);
    CHECK(same_bits(blocks[0].values, t.s));
    CHECK(same_bits(blocks[2].values, t.p));
    CHECK(blocks[0].row0 == 2);
    CHECK(blocks[0].col_heads == std::vector<std::string>{tr.keys[0], tr.keys[1]});
    const FlashLayout L = lay_out_flash(in, blocks, m);
    REQUIRE(L.boxes.size() == blocks.size());
    for (size_t a = 0; a < L.boxes.size(); ++a)
        for (size_t b = a + 1; b < L.boxes.size(); ++b) CHECK(!overlap(L.boxes[a], L.boxes[b]));
    CHECK(L.has_state);
    // Every number's cell hits back, and its arithmetic ends with the number shown.
    for (size_t b = 0; b < blocks.size(); ++b) {
        const FlashBlockBox& box = L.boxes[b];
        for (int r = 0; r < box.rows; ++r)
            for (int c = 0; c < box.cols; ++c) {
                const FlashLayout::Hit h = L.hit(box.grid_x + (c + 0.5f) * L.cell_w, box.grid_y + (r + 0.5f) * L.cell_h, in);
                CHECK(h == FlashLayout::Hit{static_cast<int>(b), r, c});
                const std::string said = explain_flash(in, blocks, h);
                CHECK(said.size() >= format_number(blocks[b].values(r, c)).size());
                CHECK(said.substr(said.size() - format_number(blocks[b].values(r, c)).size()) == format_number(blocks[b].values(r, c)));
            }
    }
    // P's arithmetic with its own numbers; ℓ′ = α·ℓ + rowsum(P).
    CHECK(explain_flash(in, blocks, {2, 1, 0}) == "P = e^(S − m′) = e^(" + format_number(t.s(1, 0)) + " − " + factor_text(t.m_new(1)) +
                                                      ") = e^" + factor_text(t.s(1, 0) - t.m_new(1)) + " = " + format_number(t.p(1, 0)));
    CHECK(std::fabs(t.l_new(0) - (t.alpha(0) * t.l_old(0) + t.p.row(0).sum())) < 1e-6f);
    // The map: a cell of the current tile; the state: queries of the tile done so far, later ones not begun.
    const FlashLayout::Hit cell = L.hit(L.map_x + 0.5f * L.cell, L.map_y + 2.5f * L.cell, in);
    CHECK(cell == FlashLayout::Hit{FlashLayout::kMap, 2, 0});
    CHECK(test::contains(explain_flash(in, blocks, cell), "tile (2, 1), #" + std::to_string(f.col_tiles + 1)));
    CHECK(flash_state(in, 0, false) == f.m(0));
    CHECK(flash_state(in, 2, false) == t.m_new(0));
    CHECK(flash_state(in, 2, true) == t.l_new(0));
    if (f.row_tiles > 2) {
        CHECK(std::isinf(flash_state(in, 4, false)));
        CHECK(flash_state(in, 4, true) == 0.0f);
    }
    // Drawn: the current tile outlined, the pseudocode's current lines marked.
    const StepsItems items = flash_items(L, in, blocks, {}, m);
    int marked = 0;
    for (const Item& it : items.items) marked += it.role == ItemRole::LabelMark && it.fill.a > 0 && it.box.w() > 5.0f;
    CHECK(marked == 8);  // m, ℓ, O set to start (j = 1), then S … m ← m′
}

TEST_CASE("tiles: a skipped tile, a normalization and the check: their blocks and the difference computed") {
    const Trace tr = preset_trace("masked-apple");
    const FlashTrace f = flash_of_head(tr, 0, {2, 2});
    const FlashInput skip = tiles_input(tr, 0, f, {FlashStep::Tile, 0, 1});
    const std::vector<FlashBlock> skipped = flash_blocks(skip);
    REQUIRE(skipped.size() == 1);
    CHECK(skipped[0].line == FlashLine::Skip);
    CHECK(std::isinf(skipped[0].values(0, 0)));
    const FlashInput norm = tiles_input(tr, 0, f, {FlashStep::Normalize, 1, 0});
    const std::vector<FlashBlock> n = flash_blocks(norm);
    REQUIRE(n.size() == 3);
    CHECK(same_bits(n[2].values, Matrix(f.output.middleRows(2, 2))));
    CHECK(explain_flash(norm, n, {2, 0, 1}) == "O_i = O / ℓ = " + format_number(f.at(1, f.col_tiles - 1).o(0, 1)) + " / " +
                                                    format_number(f.l(2)) + " = " + format_number(f.output(2, 1)));
    const FlashInput check = tiles_input(tr, 0, f, {FlashStep::Check, 0, 0});
    const std::vector<FlashBlock> c = flash_blocks(check);
    REQUIRE(c.size() == 3);
    CHECK(c[2].part == FlashPart::Diff);
    CHECK(static_cast<double>(c[2].values.maxCoeff()) == doctest::Approx(flash_max_difference(tr, 0, f)));
    CHECK(same_bits(c[1].values, tr.attention.heads[0].output));
}

TEST_CASE("tiles: gemma2's soft cap and window, qwen3's rotated Q and K: the tiles' O equals the live head's") {
    for (const char* name : {"gemma2_l3_h4kv2_d32_f32_softcap", "qwen3_l2_h4kv2_d24_f32_qknorm"}) {
        const LiveLayer live = live_layer(name, 0);
        const Trace& tr = live.trace;
        for (int head = 0; head < tr.heads; ++head)
            for (TileSize tile : {TileSize{2, 2}, TileSize{3, 5}, flash_tile_size(kFlashSramFloats, tr.d_k, tr.T_q(), tr.T_k())}) {
                CAPTURE(name);
                CAPTURE(head);
                const FlashTrace f = flash_of_head(tr, head, tile);
                CHECK(flash_same_output(flash_max_difference(tr, head, f), flash_output_size(tr, head)));
            }
    }
    // The formula's tiles for a head of 32 with 192 KB: B_c = ⌈49152 / 128⌉ = 384, B_r = 32; the text bounds both.
    CHECK(flash_tile_size(kFlashSramFloats, 32, 1000, 1000) == TileSize{32, 384});
    CHECK(flash_tile_size(kFlashSramFloats, 32, 7, 7) == TileSize{7, 7});
}

TEST_CASE("tiles: the limits are checked before a trace is made") {
    CHECK(flash_tile_count(7, 7, {2, 2}) == 16);
    CHECK(flash_tile_count(8192, 8192, {2, 2}) > kFlashMaxTiles);
    CHECK(flash_trace_floats(8192, 8192, 64, {64, 384}) > kFlashMaxFloats);
    CHECK(flash_trace_floats(64, 64, 16, {2, 2}) < kFlashMaxFloats);
}
