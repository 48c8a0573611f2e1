// The built-in models (builtin.hpp) and the head scores (heads.hpp): every listed model is
// compiled in with exactly its files and loads; a folder wins over a built-in name; the probe is
// the same every time and as heads.hpp defines it; the scores of maps built to be a previous-
// token, induction, first-token and uniform head against their definitions, the labels with
// them; and the shipped tiny-lm's scores equal those training/heads.py recorded in training.json.
#include "builtin.hpp"
#include "heads.hpp"
#include "model.hpp"
#include "model_error.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

using namespace attn;
using attn::testing::error_of;

TEST_CASE("every built-in model is compiled in with exactly its files, and loads as its type says") {
#ifdef __EMSCRIPTEN__
    CHECK(builtin_model_files().empty());  // the page holds them
    for (const BuiltinModel& m : builtin_models()) CHECK_FALSE(builtin_files(m.name));
#else
    REQUIRE(builtin_models().size() >= 2);
    for (const BuiltinModel& m : builtin_models()) {
        CAPTURE(m.name);
        const std::optional<ModelFiles> files = builtin_files(m.name);
        REQUIRE(files);
        std::vector<std::string> names, listed(m.files.begin(), m.files.end());
        for (const auto& [name, bytes] : files->files) names.push_back(name);
        std::sort(listed.begin(), listed.end());
        CHECK(names == listed);
        const LoadedModel loaded = load_model(*files);
        CHECK(loaded.config().model_type == m.model_type);
        CHECK(find_builtin(m.name) == &m);
    }
    CHECK(find_builtin("gpt2") == nullptr);
    CHECK_FALSE(builtin_files("gpt2"));
    // A folder of that name wins; no folder and no such model: one line.
    const std::filesystem::path dir = std::filesystem::temp_directory_path() / "attn-builtin-test" / "tiny-lm";
    std::filesystem::create_directories(dir);
    const std::string folder = dir.string();
    CHECK(error_of([&] { load_model(folder_or_builtin(folder)); }) == folder + "/config.json: missing");
    CHECK(folder_or_builtin("tiny-lm").folder == "tiny-lm");
    CHECK(error_of([&] { folder_or_builtin("no-such-model"); }) ==
          "no-such-model: no such folder, nor a built-in model (attnviz run --list names them), nor a Hub id (ORG/NAME[@REVISION])");
    std::filesystem::remove_all(dir.parent_path());
#endif
}

namespace {

// A stack of one layer whose heads are the given T×T maps.
StackRun stack_of(std::vector<Matrix> maps) {
    StackRun s;
    s.name = "attention", s.causal = true, s.heads = static_cast<int>(maps.size());
    s.layers.push_back(BlockRun{Matrix(), std::move(maps), {}});
    return s;
}

}  // namespace

TEST_CASE("head scores: maps built to do one thing score as heads.hpp defines, and get its label") {
    HeadProbe p;
    p.n = 8;
    const int T = 16, n = 8;
    for (int j = 0; j < T; ++j) {
        p.ids.push_back(10 + j % n);
        p.delimiter.push_back(j % n % 4 == 3);
    }
    Matrix prev = Matrix::Zero(T, T), induction = Matrix::Zero(T, T), sink = Matrix::Zero(T, T), uniform = Matrix::Zero(T, T);
    for (int i = 0; i < T; ++i) {
        prev(i, std::max(i - 1, 0)) = 1;
        if (i >= n) induction(i, i - n + 1) = 1;
        else induction(i, i) = 1;
        sink(i, 0) = 1;
        for (int j = 0; j <= i; ++j) uniform(i, j) = 1.0f / static_cast<float>(i + 1);
    }
    const HeadScores s = head_scores(p, stack_of({prev, induction, sink, uniform}));
    REQUIRE(s.layers == 1);
    REQUIRE(s.heads == 4);
    CHECK(s.at(HeadKind::Prev, 0, 0) == doctest::Approx(1.0));
    CHECK(s.at(HeadKind::Induction, 0, 1) == doctest::Approx(1.0));
    CHECK(s.at(HeadKind::Sink, 0, 2) == doctest::Approx(1.0));
    // The uniform head by the definitions' sums, as plain loops.
    double prev_u = 0, sink_u = 0, delim_u = 0, ind_u = 0;
    for (int i = 1; i < T; ++i) {
        prev_u += 1.0 / (i + 1), sink_u += 1.0 / (i + 1);
        for (int j = 0; j <= i; ++j) delim_u += p.delimiter[static_cast<size_t>(j)] ? 1.0 / (i + 1) : 0.0;
    }
    for (int i = n; i < T; ++i) ind_u += 1.0 / (i + 1);
    CHECK(s.at(HeadKind::Prev, 0, 3) == doctest::Approx(prev_u / (T - 1)));
    CHECK(s.at(HeadKind::Sink, 0, 3) == doctest::Approx(sink_u / (T - 1)));
    CHECK(s.at(HeadKind::Delimiter, 0, 3) == doctest::Approx(delim_u / (T - 1)));
    CHECK(s.at(HeadKind::Induction, 0, 3) == doctest::Approx(ind_u / n));
    double dup_u = 0;  // the duplicate-token score: the earlier copy, n back
    for (int i = n; i < T; ++i) dup_u += 1.0 / (i + 1);
    CHECK(s.at(HeadKind::Duplicate, 0, 3) == doctest::Approx(dup_u / n));
    CHECK(s.at(HeadKind::Duplicate, 0, 1) == doctest::Approx(0.0));  // the induction head looks one past the copy
    // Labels: the kind that clears its threshold by the highest score; the uniform head none.
    CHECK(head_label(s, 0, 0)->kind == HeadKind::Prev);
    CHECK(head_label(s, 0, 1)->kind == HeadKind::Induction);
    CHECK(head_label(s, 0, 2)->kind == HeadKind::Sink);
    CHECK_FALSE(head_label(s, 0, 3));
    // The prev head also puts weight 1 on position 0 from query 1 (sink 1/15): still a prev head.
    CHECK(s.at(HeadKind::Sink, 0, 0) == doctest::Approx(1.0 / (T - 1)));
}

TEST_CASE("head scores on a probe with special tokens around it: rows are the drawn tokens, position 0 the BOS") {
    // [BOS] r r [EOS]: n = 4, the drawn tokens at 1 … 8.
    HeadProbe p;
    p.n = 4;
    p.first = 1;
    const int T = 10, n = 4, first = 1, end = 9;
    p.ids = {1, 10, 11, 12, 13, 10, 11, 12, 13, 2};
    p.delimiter = {false, false, false, false, true, false, false, false, true, false};
    Matrix sink = Matrix::Zero(T, T), induction = Matrix::Zero(T, T), uniform = Matrix::Zero(T, T);
    for (int i = 0; i < T; ++i) {
        sink(i, 0) = 1;
        induction(i, i >= first + n ? i - n + 1 : 0) = 1;
        for (int j = 0; j <= i; ++j) uniform(i, j) = 1.0f / static_cast<float>(i + 1);
    }
    const HeadScores s = head_scores(p, stack_of({sink, induction, uniform}));
    CHECK(s.at(HeadKind::Sink, 0, 0) == doctest::Approx(1.0));
    CHECK(s.at(HeadKind::Induction, 0, 1) == doctest::Approx(1.0));
    CHECK(s.at(HeadKind::Duplicate, 0, 1) == doctest::Approx(0.0));
    double prev_u = 0, sink_u = 0, delim_u = 0, ind_u = 0;  // rows 1 … 8; the [EOS] row is not one
    for (int i = first; i < end; ++i) {
        prev_u += 1.0 / (i + 1), sink_u += 1.0 / (i + 1);
        delim_u += (i >= 4) * 1.0 / (i + 1) + (i >= 8) * 1.0 / (i + 1);
    }
    for (int i = first + n; i < end; ++i) ind_u += 1.0 / (i + 1);
    CHECK(s.at(HeadKind::Prev, 0, 2) == doctest::Approx(prev_u / 8));
    CHECK(s.at(HeadKind::Sink, 0, 2) == doctest::Approx(sink_u / 8));
    CHECK(s.at(HeadKind::Delimiter, 0, 2) == doctest::Approx(delim_u / 8));
    CHECK(s.at(HeadKind::Induction, 0, 2) == doctest::Approx(ind_u / n));
}

#ifndef __EMSCRIPTEN__
TEST_CASE("the built-in tiny-lm's probe and head scores are training/heads.py's, recorded in its training.json") {
    std::ifstream in(std::string(ATTN_TEST_DATA) + "/../../models/tiny-lm/training.json");
    REQUIRE_MESSAGE(in, "no models/tiny-lm/training.json");
    const nlohmann::json want = nlohmann::json::parse(in);
    ModelLoad load(*builtin_files("tiny-lm"), /*measure_heads=*/true);
    while (!load.done()) load.step();
    const LoadedModel m = load.take();
    const std::optional<HeadProbe> probe = model_head_probe(m.config(), m.tokenizer, m.folder);
    REQUIRE(probe);
    CHECK(probe->first == 0);  // GPT-2's texts get no special token
    CHECK(probe->ids == want["probe_ids"].get<std::vector<int>>());
    REQUIRE(m.heads);
    const HeadScores& s = *m.heads;
    double worst = 0;
    for (int k = 0; k < kHeadKinds; ++k)
        for (int l = 0; l < s.layers && want["head_scores"].contains(kHeadKindNames[static_cast<size_t>(k)]); ++l)
            for (int h = 0; h < s.heads; ++h) {
                const double d = std::abs(s.at(static_cast<HeadKind>(k), l, h) - want["head_scores"][kHeadKindNames[static_cast<size_t>(k)]][l][h].get<double>());
                worst = std::max(worst, d);
                CHECK(d < 1e-3);  // F32 here, float32 PyTorch there
            }
    MESSAGE("tiny-lm's head scores against training/heads.py: largest difference " << worst);
}

TEST_CASE("tiny-circuits' probe starts with its BOS, as its texts do, and its BOS-sinking heads are tagged") {
    ModelLoad load(*builtin_files("tiny-circuits"), /*measure_heads=*/true);
    while (!load.done()) load.step();
    const LoadedModel m = load.take();
    const std::optional<HeadProbe> probe = model_head_probe(m.config(), m.tokenizer, m.folder);
    REQUIRE(probe);
    CHECK(probe->first == 1);
    CHECK(m.tokenizer.token(probe->ids.front()) == "<|endoftext|>");
    CHECK(probe->ids.size() == static_cast<size_t>(1 + 2 * probe->n));
    REQUIRE(m.heads);
    const HeadScores& s = *m.heads;
    std::string tagged;
    for (int l = 0; l < s.layers; ++l)
        for (int h = 0; h < s.heads; ++h) {
            const std::vector<HeadKind> tags = head_tags(s, l, h);
            if (std::find(tags.begin(), tags.end(), HeadKind::Sink) != tags.end())
                tagged += std::to_string(l + 1) + ":" + std::to_string(h + 1) + " ";
        }
    MESSAGE("tiny-circuits' first-token heads: " << tagged);
    CHECK(!tagged.empty());
    // The textbook heads keep their tags: 1:1 the previous token, 2:1 induction (MODELS.md).
    CHECK(s.at(HeadKind::Prev, 0, 0) >= kHeadThresholds[static_cast<size_t>(HeadKind::Prev)]);
    CHECK(s.at(HeadKind::Induction, 1, 0) >= kHeadThresholds[static_cast<size_t>(HeadKind::Induction)]);
}
#endif
