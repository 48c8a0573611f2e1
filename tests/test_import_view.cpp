// test_import_view.cpp: imported attention as the front end shows it (web/state/import_state.cpp):
// the Trace built from a stack / layer / head or an aggregate, the causal mask inferred from an
// exactly-zero upper triangle, a bad file keeping the figure, and leaving import mode.
#include "app_state.hpp"

#include <doctest/doctest.h>

#include <string>

namespace {

// 2 layers × 2 heads over 3 tokens; decoder-like (upper triangle exactly 0) when causal.
std::string model_json(bool causal) {
    const char* lower = "[[1, 0, 0], [0.25, 0.75, 0], [0.2, 0.3, 0.5]]";
    const char* full = "[[0.5, 0.25, 0.25], [0.25, 0.5, 0.25], [0.1, 0.2, 0.7]]";
    const char* other = causal ? "[[1, 0, 0], [0.5, 0.5, 0], [0.6, 0.2, 0.2]]" : "[[0.2, 0.2, 0.6], [0.3, 0.3, 0.4], [0.1, 0.8, 0.1]]";
    const std::string a = causal ? lower : full;
    std::string json = R"({"model": "tiny", "tokens": ["The", "\u0120cat", "\u0120sat"], "attention": [)";
    json.append("[").append(a).append(", ").append(other).append("], [").append(other).append(", ").append(a).append("]]}");
    return json;
}

attn::AppState with_preset() {
    attn::AppState st;
    st.load_preset("i-am-good");
    REQUIRE(!st.figure.empty());
    return st;
}

}  // namespace

TEST_CASE("an import becomes the figure: one layer's heads, weights only, causal mask inferred") {
    attn::AppState st = with_preset();
    REQUIRE(attn::import_attention(st, model_json(true), "tiny.json"));
    CHECK(st.figure.has(attn::Detail::Layers));
    CHECK(st.view == attn::View::Model);
    CHECK(st.error.empty());
    CHECK(st.figure.trace().kind == attn::AttentionKind::Masked);
    CHECK(st.figure.trace().heads == 2);
    REQUIRE(st.figure.trace().queries.size() == 3);
    CHECK(st.figure.trace().queries[1].find("\xc4\xa0") == std::string::npos);  // no "Ġ" left
    CHECK(st.figure.trace().allowed(0, 1) == 0);
    CHECK(st.figure.trace().allowed(2, 0) == 1);
    CHECK(st.figure.trace().attention.heads[0].weights(1, 1) == doctest::Approx(0.75f));
    CHECK(st.figure.trace().attention.heads[0].scores.size() == 0);  // the file has no scores
    CHECK_FALSE(st.showing_preset());

    attn::select_import_map(st, 1, 1);  // layer 2, head 2 = the lower map again
    CHECK(st.heatmap.head == 1);
    CHECK(st.lines.head_visible == std::vector<bool>{false, true});
    CHECK(st.figure.trace().attention.heads[1].weights(2, 2) == doctest::Approx(0.5f));
}

TEST_CASE("the figure says what its source has: a scene everything but layers, an import layers and weights") {
    attn::AppState st = with_preset();
    using attn::Detail;
    CHECK(st.figure.name == "i-am-good");
    CHECK(st.figure.file.empty());
    for (Detail d : {Detail::Scores, Detail::Projections, Detail::Input, Detail::Output, Detail::Scene})
        CHECK(st.figure.has(d));
    CHECK_FALSE(st.figure.has(Detail::Layers));
    REQUIRE(attn::import_attention(st, model_json(true), "tiny.json"));
    CHECK(st.figure.name == "tiny");  // the file's "model" field names it, not the scene shown before
    CHECK(st.figure.file == "tiny.json");
    for (Detail d : {Detail::Scores, Detail::Projections, Detail::Input, Detail::Output, Detail::Scene})
        CHECK_FALSE(st.figure.has(d));
    CHECK(st.figure.has(Detail::Layers));
    CHECK(st.figure.stack_count() == 1);
    CHECK(st.figure.causal == std::vector<bool>{true});
    // Without a "model" field the file's name names it.
    REQUIRE(attn::import_attention(st, R"({"tokens": ["a", "b"], "attention": [[[[0.5, 0.5], [0.5, 0.5]]]]})", "plain.json"));
    CHECK(st.figure.name == "plain.json");
    attn::close_import(st);
    CHECK(st.figure.has(Detail::Scene));
    CHECK(st.figure.name == "i-am-good");
}

TEST_CASE("an encoder's import is plain self-attention: nothing masked") {
    attn::AppState st = with_preset();
    REQUIRE(attn::import_attention(st, model_json(false), "enc.json"));
    CHECK(st.figure.trace().kind == attn::AttentionKind::Self);
    CHECK(!st.figure.trace().allowed.any_masked());
}

TEST_CASE("aggregate and rollout views are one map each") {
    attn::AppState st = with_preset();
    REQUIRE(attn::import_attention(st, model_json(true), "tiny.json"));
    st.imported.show = attn::ImportShow::Aggregate;
    attn::show_import(st);
    REQUIRE(st.figure.trace().heads == 1);
    // Mean of the four maps at (1, 0): (0.25 + 0.5 + 0.5 + 0.25) / 4.
    CHECK(st.figure.trace().attention.heads[0].weights(1, 0) == doctest::Approx(0.375f));
    st.imported.heads_on = {true, false};
    st.imported.reduce = attn::HeadReduce::Max;
    attn::show_import(st);
    CHECK(st.figure.trace().attention.heads[0].weights(2, 0) == doctest::Approx(0.6f));  // max(0.2, 0.6)
    st.imported.show = attn::ImportShow::Rollout;
    st.imported.import_layer = 1;
    attn::show_import(st);
    REQUIRE(st.figure.trace().heads == 1);
    for (int q = 0; q < 3; ++q) CHECK(st.figure.trace().attention.heads[0].weights.row(q).sum() == doctest::Approx(1.0f));
    CHECK(st.figure.trace().attention.heads[0].weights(0, 2) == 0.0f);  // still causal
}

TEST_CASE("a bad import file names the file and the field, and keeps the figure") {
    attn::AppState st = with_preset();
    REQUIRE(attn::import_attention(st, model_json(true), "tiny.json"));
    const int revision = st.revision;
    const std::string bad = R"({"tokens": ["a", "b"], "attention": [[[[1, 0], [0.5]]]]})";
    CHECK_FALSE(attn::import_attention(st, bad, "bad.json"));
    CHECK(st.error.rfind("bad.json", 0) == 0);
    CHECK(st.error.find("attention") != std::string::npos);
    CHECK(st.figure.file == "tiny.json");
    CHECK(st.revision == revision);
    CHECK_FALSE(attn::import_attention(st, "{\"attention\": [", "cut.json"));
    CHECK(st.error.rfind("cut.json:", 0) == 0);
    CHECK(st.figure.file == "tiny.json");
}

TEST_CASE("files are told apart; a dropped scene file loads as a scene") {
    CHECK(attn::file_kind(model_json(true)) == attn::FileKind::Import);  // more in test_import.cpp
    CHECK(attn::file_kind(R"({"kind": "self", "tokens": "I am good"})") == attn::FileKind::Scene);
    attn::AppState st = with_preset();
    REQUIRE(attn::import_attention(st, model_json(true), "tiny.json"));
    CHECK(attn::open_file_text(st, R"({"kind": "masked", "tokens": "a b c", "d_model": 4})", "scene.json"));
    CHECK_FALSE(st.figure.has(attn::Detail::Layers));
    CHECK(st.figure.trace().kind == attn::AttentionKind::Masked);
    CHECK(st.view != attn::View::Model);
}

TEST_CASE("leaving import mode brings the scene back, as does any edit") {
    attn::AppState st = with_preset();
    REQUIRE(attn::import_attention(st, model_json(true), "tiny.json"));
    attn::close_import(st);
    CHECK_FALSE(st.figure.has(attn::Detail::Layers));
    CHECK(st.showing_preset());
    CHECK(st.figure.trace().queries == std::vector<std::string>{"I", "am", "good"});
    REQUIRE(attn::import_attention(st, model_json(true), "tiny.json"));
    st.target_text = "I am fine";
    st.apply();
    CHECK_FALSE(st.figure.has(attn::Detail::Layers));
    CHECK(st.figure.trace().queries.back() == "fine");
}

TEST_CASE("bytes in pieces: progress, then parsing one frame after it was shown") {
    attn::AppState st = with_preset();
    attn::import_progress(st, "m.json", 10, 100);
    REQUIRE(st.imported.load);
    CHECK(st.imported.load->done == 10);
    attn::import_bytes(st, "m.json", model_json(false));
    CHECK(st.imported.load->parsing);
    attn::advance_import_load(st);
    attn::advance_import_load(st);
    CHECK_FALSE(st.figure.has(attn::Detail::Layers));  // "parsing…" is on screen first
    attn::advance_import_load(st);
    CHECK(st.figure.has(attn::Detail::Layers));
    CHECK_FALSE(st.imported.load);
    attn::import_failed(st, "x.json", "HTTP 404");
    CHECK(st.error == "x.json: HTTP 404");
    CHECK(st.figure.has(attn::Detail::Layers));
}
