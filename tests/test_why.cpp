// The why views (why.hpp) on every decoder-only case of tests/model/make_models.py: what a run
// records changes none of its numbers; a run started at a layer from its own stream, or with a
// head patched by its own output, is the whole run bit for bit; the lens's LM head against a
// naive one in double; attribution's parts sum to the logit; patching's exact shares (1 at the
// last row of the last stream, 0 where nothing changes); the errors. The numbers themselves are
// checked against PyTorch by tests/model/test_why.py.
#include "test_util.hpp"
#include "family.hpp"
#include "reference_cases.hpp"
#include "model.hpp"
#include "why.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>

using namespace attn;

namespace {

// The LM head on one row of a stream, in double: the final norm, then each token's column.
std::vector<double> naive_logits(const Model& m, const RowVector& x) {
    const ModelConfig& c = m.config;
    const ModelWeights& w = *m.weights;
    const int d = c.d_model;
    Eigen::RowVectorXd y = x.cast<double>();
    if (w.final_norm.present()) {
        double mean = 0, squares = 0;
        if (c.norm != NormKind::RmsNorm) mean = y.mean();
        for (int i = 0; i < d; ++i) squares += (y[i] - mean) * (y[i] - mean);
        const double inv = 1.0 / std::sqrt(squares / d + c.layer_norm_eps);
        for (int i = 0; i < d; ++i)
            y[i] = (y[i] - mean) * inv * w.final_norm.g[i] + (w.final_norm.b ? w.final_norm.b[i] : 0.0f);
    }
    std::vector<double> z(static_cast<std::size_t>(c.vocab_size));
    RowVector col(d);
    for (int j = 0; j < c.vocab_size; ++j) {
        kernels::column(w.lm_head.w, j, col.data());
        double v = (y.dot(col.cast<double>()) + (w.lm_head.b ? w.lm_head.b[j] : 0.0f)) * c.logit_scale;
        if (c.final_softcap > 0) v = c.final_softcap * std::tanh(v / c.final_softcap);
        z[static_cast<std::size_t>(j)] = v;
    }
    return z;
}

bool reads_stream(const ModelConfig& c) { return c.decoder_only() && c.residual != Residual::PostNorm; }

}  // namespace

TEST_CASE("why: recording, resuming and patching a run change none of its numbers; every decoder-only case") {
#ifdef ATTN_MODEL_REFS
    const std::filesystem::path root = ATTN_MODEL_REFS;
    int cases = 0;
    double lens_worst = 0, sum_worst = 0, total_worst = 0, rows_worst = 0;
    for (const std::string& name : test::reference_case_names(root)) {
        const test::ReferenceCase rc = test::load_reference_case(root, name);
        if (!reads_stream(rc.config)) continue;
        CAPTURE(name);
        const Model& model = rc.model;
        const ModelConfig& c = rc.config;
        kernels::Context ctx;
        const RunResult plain = forward(ctx, model, rc.input);
        RunInput recorded = rc.input;
        recorded.record = true;
        const RunResult run = forward(ctx, model, recorded);
        const Inside& in = run.inside;
        const int L = c.n_layers, T = static_cast<int>(rc.input.ids.size()), hd = c.d_head();
        // 1. recording changes nothing; it holds L + 1 streams, the last the final norm's input
        CHECK(run.logits == plain.logits);
        CHECK(same_bits(run.hidden, plain.hidden));
        REQUIRE(in.streams.size() == static_cast<std::size_t>(L + 1));
        REQUIRE(in.concat.size() == static_cast<std::size_t>(L));
        // 2. a run from any layer on its own stream, or with a head patched by its own output: the run's logits
        for (int l = 0; l <= L; ++l) {
            RunInput from = rc.input;
            from.from = l, from.stream = in.streams[static_cast<std::size_t>(l)];
            CHECK_MESSAGE(forward(ctx, model, from).logits == run.logits, "from layer ", l);
        }
        // and from a row on, over the run's own keys and values before it (the KV cache's way): its logits
        for (int l = 0; l <= L; ++l)
            for (int first : {1, T / 2, T - 1}) {
                if (first <= 0 || first >= T) continue;
                RunInput rows = rc.input;
                rows.from = l, rows.first_row = first, rows.prefix = &in;
                rows.stream = in.streams[static_cast<std::size_t>(l)].bottomRows(T - first);
                const std::vector<float> got = forward(ctx, model, rows).logits;
                float worst = 0, scale = 1;
                for (std::size_t i = 0; i < got.size(); ++i)
                    worst = std::max(worst, std::abs(got[i] - run.logits[i])), scale = std::max(scale, std::abs(run.logits[i]));
                rows_worst = std::max(rows_worst, static_cast<double>(worst / scale));
            }
        for (int l = 0; l < L; ++l) {
            RunInput patched = rc.input;
            patched.patched = {kFirstStack, l, c.n_heads - 1};
            patched.patch = in.concat[static_cast<std::size_t>(l)].middleCols((c.n_heads - 1) * hd, hd);
            CHECK_MESSAGE(forward(ctx, model, patched).logits == run.logits, "head ", l, ":", c.n_heads - 1);
            // a patch of zeros is a zero knockout
            patched.patch.setZero();
            RunInput knocked = rc.input;
            knocked.edits.knockout = {{kFirstStack, l, c.n_heads - 1}};
            CHECK_MESSAGE(forward(ctx, model, patched).logits == forward(ctx, model, knocked).logits, "zeros at ", l);
        }
        // 3. the lens: the LM head on every stream's rows against the naive one; its last row is the run's prediction
        const Lens lens = logit_lens(ctx, model, run, 3);
        REQUIRE(lens.layers == L + 1);
        REQUIRE(lens.positions == T);
        for (int l = 0; l <= L; ++l)
            for (int t = 0; t < T; t += std::max(1, T / 3)) {
                const std::vector<double> z = naive_logits(model, in.streams[static_cast<std::size_t>(l)].row(t));
                const double max = *std::max_element(z.begin(), z.end());
                double sum = 0;
                for (double v : z) sum += std::exp(v - max);
                for (const TokenP& k : lens.at(l, t).top)
                    lens_worst = std::max(lens_worst, std::abs(k.p - std::exp(z[static_cast<std::size_t>(k.id)] - max) / sum));
                CHECK(lens.at(l, t).top.size() == 3);
                CHECK(lens.at(l, t).target == lens.at(L, t).target);
            }
        const auto argmax = static_cast<int>(std::max_element(run.logits.begin(), run.logits.end()) - run.logits.begin());
        CHECK(lens.at(L, T - 1).target == argmax);
        CHECK(lens.at(L, T - 1).target_rank == 1);
        // 4. attribution: the parts sum to the total, the logit (before a final soft-cap)
        const int target = lens.at(L, T - 1).target, contrast = lens.at(L, T - 1).top[1].id;
        const Attribution a = attribute(ctx, model, run, target, contrast);
        double sum = a.embed + a.bias;
        for (double v : a.head) sum += v;
        for (double v : a.mlp) sum += v;
        sum_worst = std::max(sum_worst, std::abs(sum - a.total) / std::max(1.0, std::abs(a.total)));
        if (c.final_softcap <= 0)
            total_worst = std::max(total_worst, std::abs(a.total - (static_cast<double>(run.logits[static_cast<std::size_t>(target)]) -
                                                                    run.logits[static_cast<std::size_t>(contrast)])) /
                                                    std::max(1.0, std::abs(a.total)));
        for (int l = 0; l < L; ++l)
            for (int h = 0; h < c.n_heads; ++h) {
                double split = 0;
                for (int j = 0; j < T; ++j) split += a.source(l, h, j);
                CHECK(std::abs(split - a.at(l, h)) <= 1e-4 * std::max(1.0, std::abs(a.at(l, h))));
            }
        // 5. patching the run on other ids with this one: 1 at the last row of the last stream, 0 where nothing changes
        RunInput other = rc.input;
        other.ids.back() = (other.ids.back() + 1) % c.vocab_size;
        other.ids[1 % T] = (other.ids[1 % T] + 2) % c.vocab_size;
        const Patching p = patching(ctx, model, rc.input, other, target, contrast, "test");
        CHECK(p.resid_at(L, T - 1) == 1.0);
        for (int t = 0; t + 1 < T; ++t) CHECK(p.resid_at(L, t) == 0.0);
        if (T > 1) CHECK(p.resid_at(0, 0) == 0.0);  // the first token is the same in both
        CHECK(p.clean == doctest::Approx(static_cast<double>(run.logits[static_cast<std::size_t>(target)]) - run.logits[static_cast<std::size_t>(contrast)]));
        // and with no contrast given: the corrupted run's prediction (else the clean run's likeliest
        // other than the target), the same numbers as when that contrast is given
        const std::vector<float> other_logits = forward(ctx, model, other).logits;
        const Patching q = patching(ctx, model, rc.input, other, target, -1, "test");
        const auto other_top = static_cast<int>(std::max_element(other_logits.begin(), other_logits.end()) - other_logits.begin());
        int clean_other = target == 0 ? 1 : 0;
        for (int i = 0; i < c.vocab_size; ++i)
            if (i != target && run.logits[static_cast<std::size_t>(i)] > run.logits[static_cast<std::size_t>(clean_other)]) clean_other = i;
        CHECK(q.contrast_chosen);
        CHECK(q.same_prediction == (other_top == target));
        CHECK(q.contrast == (other_top == target ? clean_other : other_top));
        if (q.contrast != target && q.clean != q.corrupted) {
            const Patching given = patching(ctx, model, rc.input, other, target, q.contrast, "test");
            CHECK(q.clean == given.clean);
            CHECK(q.corrupted == given.corrupted);
            CHECK(q.head == given.head);
            CHECK(q.resid == given.resid);
        }
        ++cases;
    }
    MESSAGE(cases, " cases; runs from a row on against whole runs ", rows_worst, "; lens against the naive head ", lens_worst, "; attribution's parts against its total ", sum_worst,
            ", its total against the logits ", total_worst, " (relative)");
    CHECK(cases >= 10);
    CHECK(rows_worst < 1e-5);
    CHECK(lens_worst < 1e-5);
    CHECK(sum_worst < 1e-4);
    CHECK(total_worst < 1e-4);
#else
    FAIL("built without ATTN_MODEL_REFS: the PyTorch references (tests/model/make_models.py) were not made");
#endif
}

TEST_CASE("why: token probabilities are the naive softmax of the row before, read at the token that came; in bands or whole the same") {
#ifdef ATTN_MODEL_REFS
    const std::filesystem::path root = ATTN_MODEL_REFS;
    int cases = 0;
    double worst = 0;
    for (const std::string& name : test::reference_case_names(root)) {
        const test::ReferenceCase rc = test::load_reference_case(root, name);
        if (!reads_stream(rc.config)) continue;
        CAPTURE(name);
        kernels::Context ctx;
        RunInput recorded = rc.input;
        recorded.record = true;
        const RunResult run = forward(ctx, rc.model, recorded);
        const std::vector<int>& ids = rc.input.ids;
        const int T = static_cast<int>(ids.size()), L = rc.config.n_layers;
        const TokenProbs probs = token_probs(ctx, rc.model, run, ids, 4);
        REQUIRE(probs.positions() == T);
        CHECK(probs.at[0].target == -1);  // the first token: no prediction
        CHECK(probs.at[0].top.empty());
        // a row a band: the same numbers, bit for bit
        TokenProbsRun banded(rc.model, run, ids, 4, 1);
        float last = banded.progress();
        for (int steps = 0; !banded.done(); ++steps) {
            banded.step(ctx);
            CHECK(banded.progress() >= last);
            last = banded.progress();
            REQUIRE(steps < T);
        }
        CHECK(last == 1.0f);
        const TokenProbs rows = banded.take();
        for (int t = 1; t < T; ++t) {
            CAPTURE(t);
            const LensCell& cell = probs.at[static_cast<std::size_t>(t)];
            CHECK(rows.at[static_cast<std::size_t>(t)].target_p == cell.target_p);
            CHECK(rows.at[static_cast<std::size_t>(t)].target_rank == cell.target_rank);
            const std::vector<double> z = naive_logits(rc.model, run.inside.streams[static_cast<std::size_t>(L)].row(t - 1));
            const double max = *std::max_element(z.begin(), z.end());
            double sum = 0;
            for (double v : z) sum += std::exp(v - max);
            const auto p = [&](int id) { return std::exp(z[static_cast<std::size_t>(id)] - max) / sum; };
            const int id = ids[static_cast<std::size_t>(t)];
            CHECK(cell.target == id);
            worst = std::max(worst, std::abs(cell.target_p - p(id)));
            REQUIRE(cell.top.size() == 4);
            for (const TokenP& k : cell.top) worst = std::max(worst, std::abs(k.p - p(k.id)));
            // the rank: 1 + the tokens likelier (within float's reach of a tie, either way)
            const double zt = z[static_cast<std::size_t>(id)];
            const int above = static_cast<int>(std::count_if(z.begin(), z.end(), [&](double v) { return v > zt + 1e-4; }));
            const int level = static_cast<int>(std::count_if(z.begin(), z.end(), [&](double v) { return v > zt - 1e-4; }));
            CHECK(cell.target_rank >= 1 + above);
            CHECK(cell.target_rank <= level);
            CHECK((cell.target_rank == 1) == (cell.top[0].id == id));
        }
        ++cases;
    }
    MESSAGE(cases, " cases; token probabilities against the naive head ", worst);
    CHECK(cases >= 10);
    CHECK(worst < 1e-5);
#else
    FAIL("built without ATTN_MODEL_REFS: the PyTorch references (tests/model/make_models.py) were not made");
#endif
}

TEST_CASE("why: a knocked-out head attributes nothing; patching steps report progress to 1") {
#ifdef ATTN_MODEL_REFS
    const std::filesystem::path root = ATTN_MODEL_REFS;
    const test::ReferenceCase rc = test::load_reference_case(root, "gpt2_l3_h4_d32_f16");
    kernels::Context ctx;
    RunInput in = rc.input;
    in.record = true;
    in.edits.knockout = {{kFirstStack, 1, 2}};
    const RunResult run = forward(ctx, rc.model, in);
    const Attribution a = attribute(ctx, rc.model, run, 1, -1);
    CHECK(a.at(1, 2) == 0.0);
    CHECK(a.contrast == -1);
    CHECK(a.at(1, 1) != 0.0);
    RunInput other = rc.input;
    other.ids.front() = (other.ids.front() + 1) % rc.config.vocab_size;
    PatchingRun steps(rc.model, rc.input, other, 1, 2, "test");
    float last = 0;
    int n = 0;
    while (!steps.done()) {
        steps.step(ctx);
        CHECK(steps.progress() >= last);
        last = steps.progress();
        ++n;
    }
    CHECK(last == doctest::Approx(1.0f));
    CHECK(n > rc.config.n_layers * rc.config.n_heads);
    const Patching p = steps.take();
    // every row differs from the first token on: nothing was skipped, and the first row restores something
    CHECK(p.resid_at(0, 0) != 0.0);
    // under mean ablation (a mean over every row) patched runs run every row: the same shares
    RunInput mean_clean = rc.input, mean_other = other;
    for (RunInput* r : {&mean_clean, &mean_other}) r->edits.knockout = {{kFirstStack, 0, 1}}, r->edits.ablation = Ablation::Mean;
    const Patching m = patching(ctx, rc.model, mean_clean, mean_other, 1, 2, "test");
    CHECK(m.resid_at(rc.config.n_layers, static_cast<int>(other.ids.size()) - 1) == 1.0);
    CHECK(m.clean != p.clean);
#else
    FAIL("built without ATTN_MODEL_REFS");
#endif
}

TEST_CASE("why: bad input is one line naming the option") {
#ifdef ATTN_MODEL_REFS
    const std::filesystem::path root = ATTN_MODEL_REFS;
    const auto message = [](auto f) {
        try {
            f();
        } catch (const ModelError& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    const LoadedModel gpt2 = load_model(ModelFiles::from_folder((root / "gpt2_l3_h4_d32_f16").string()));
    const LoadedModel bert = load_model(ModelFiles::from_folder((root / "bert_l2_h2_d16_f32").string()));
    const LoadedModel marian = load_model(ModelFiles::from_folder((root / "marian_e2_d1_h2_d16_f32").string()));
    CHECK_MESSAGE(message([&] { check_why(bert, "--lens"); }).find("--lens: bert has no LM head") != std::string::npos,
                  message([&] { check_why(bert, "--lens"); }));
    CHECK(message([&] { check_why(marian, "--attribute"); }).find("--attribute: marian renormalizes") != std::string::npos);
    CHECK(message([&] { check_why(gpt2, "--lens"); }) == "no error");
    const std::vector<int> two = gpt2.tokenizer.encode(" the cat");
    REQUIRE(two.size() >= 2);
    const std::string many = message([&] { one_token(gpt2, " the cat", "--attribute"); });
    CHECK_MESSAGE(many.find("--attribute: \" the cat\" is " + std::to_string(two.size()) + " tokens (\"") != std::string::npos, many);
    CHECK(message([&] { one_token(gpt2, "", "--contrast"); }).find("--contrast: \"\" is no token") != std::string::npos);
    CHECK(message([&] { one_token(gpt2, "#99999", "--contrast"); }).find("--contrast: \"#99999\": expected #ID with an id from 0 to") != std::string::npos);
    CHECK(one_token(gpt2, "#3", "--contrast") == 3);
    CHECK(one_token(gpt2, gpt2.tokenizer.text(two[0]), "--attribute") == two[0]);
    // A text the tokenizer turns into nothing is the tokenizer's doing, said so (not config.json's).
    const std::string empty = message([&] { encode_text(gpt2, ""); });
    CHECK_MESSAGE((empty.find("tokenizer") != std::string::npos && empty.find("the text is empty") != std::string::npos &&
                   empty.find("config.json") == std::string::npos), empty);
    kernels::Context ctx;
    const std::vector<int> ids = encode_text(gpt2, " the cat sat");
    std::vector<int> shorter(ids.begin(), ids.end() - 1);
    RunInput clean, corrupted;
    clean.ids = ids, corrupted.ids = shorter;
    CHECK(message([&] { PatchingRun(gpt2.model, clean, corrupted, 1, 2, "--corrupted"); }).find("--corrupted: the corrupted text is") !=
          std::string::npos);
    CHECK(message([&] { patching(ctx, gpt2.model, clean, clean, 1, 2, "--corrupted"); })
              .find("--corrupted: the clean and the corrupted text give the same logit difference") != std::string::npos);
#else
    FAIL("built without ATTN_MODEL_REFS");
#endif
}
