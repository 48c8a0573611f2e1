// Imported attention (SPEC.md §3): every accepted layout, the exact field of every kind of bad
// input, and the derived maps (aggregates, rollout, summed rows, merged words) against plain
// loops and hand-worked numbers.
#include "import.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <string>

using namespace attn;

namespace {

#ifndef ATTN_TEST_DATA
#define ATTN_TEST_DATA "tests/data"
#endif

std::string data_file(const std::string& name) {
    const std::string path = std::string(ATTN_TEST_DATA) + "/" + name;
    std::ifstream in(path, std::ios::binary);
    REQUIRE_MESSAGE(in, "cannot open " << path);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct Failure {
    std::string where, message;
};

// The SceneError for text, or empty strings when it reads fine.
Failure failure_of(const std::string& text) {
    try {
        read_import(text);
    } catch (const SceneError& e) {
        const std::string message = e.what();
        CHECK(message.find('\n') == std::string::npos);  // one line
        return {e.where(), message};
    }
    return {};
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A random softmax map, T_q×T_k, optionally causal.
Matrix random_map(std::mt19937& rng, int T_q, int T_k, bool causal = false) {
    std::normal_distribution<float> normal(0.0f, 1.5f);
    Matrix m(T_q, T_k);
    for (int i = 0; i < T_q; ++i) {
        float sum = 0;
        for (int j = 0; j < T_k; ++j) sum += m(i, j) = (causal && j > i) ? 0.0f : std::exp(normal(rng));
        m.row(i) /= sum;
    }
    return m;
}

AttentionStack random_stack(std::mt19937& rng, int layers, int heads, int T, bool causal = false) {
    AttentionStack s;
    s.name = "attention";
    s.layers = layers, s.heads = heads;
    for (int t = 0; t < T; ++t) s.queries.push_back("t" + std::to_string(t));
    s.keys = s.queries;
    for (int i = 0; i < layers * heads; ++i) s.maps.push_back(random_map(rng, T, T, causal));
    return s;
}

double max_abs_diff(const Matrix& a, const Matrix& b) {
    REQUIRE(a.rows() == b.rows());
    REQUIRE(a.cols() == b.cols());
    return a.size() == 0 ? 0.0 : static_cast<double>((a - b).cwiseAbs().maxCoeff());
}

void check_rows_sum_to_one(const Matrix& m, double tolerance = 1e-5) {
    for (Eigen::Index i = 0; i < m.rows(); ++i) CHECK(m.row(i).sum() == doctest::Approx(1.0).epsilon(tolerance));
}

}  // namespace

// [SECTION] Good files ------------------------------------------------------------------------

TEST_CASE("a decoder-only file: one stack, tokens on both sides, the numbers as written") {
    const ImportedAttention a = read_import(data_file("import_decoder.json"));
    CHECK(a.model == "tiny-gpt (test data)");
    REQUIRE(a.stacks.size() == 1);
    const AttentionStack& s = a.stacks[0];
    CHECK(s.name == "attention");
    CHECK(s.is_self());
    CHECK(s.layers == 2);
    CHECK(s.heads == 2);
    CHECK(s.queries == std::vector<std::string>{"The", "Ġcat", "Ġsat", "Ġdown", "."});
    CHECK(s.keys == s.queries);
    REQUIRE(s.maps.size() == 4);
    CHECK(s.map(0, 0)(1, 0) == doctest::Approx(0.1711));
    CHECK(s.map(0, 0)(1, 1) == doctest::Approx(0.8289));
    CHECK(s.map(1, 1)(4, 4) == doctest::Approx(0.0108));
    for (const Matrix& m : s.maps) {
        CHECK(m.rows() == 5);
        CHECK(m.cols() == 5);
        check_rows_sum_to_one(m, 1e-4);
    }
}

TEST_CASE("an encoder-only file reads the same way") {
    const ImportedAttention a = read_import(data_file("import_encoder.json"));
    REQUIRE(a.stacks.size() == 1);
    CHECK(a.model.empty());
    CHECK(a.stacks[0].layers == 2);
    CHECK(a.stacks[0].heads == 3);
    CHECK(a.stacks[0].queries.front() == "[CLS]");
    CHECK(a.stacks[0].map(1, 2).rows() == 5);
}

TEST_CASE("an encoder-decoder file: encoder, decoder and cross stacks in that order") {
    const ImportedAttention a = read_import(data_file("import_encdec.json"));
    REQUIRE(a.stacks.size() == 3);
    CHECK(a.stacks[0].name == "encoder_attention");
    CHECK(a.stacks[1].name == "decoder_attention");
    CHECK(a.stacks[2].name == "cross_attention");
    CHECK(a.stacks[0].is_self());
    CHECK(a.stacks[1].is_self());
    CHECK(!a.stacks[2].is_self());
    CHECK(a.stacks[0].queries == std::vector<std::string>{"▁Das", "▁Haus", "</s>"});
    CHECK(a.stacks[1].queries == std::vector<std::string>{"<pad>", "▁The", "▁house"});
    CHECK(a.stacks[2].queries == a.stacks[1].queries);  // decoder tokens ask
    CHECK(a.stacks[2].keys == a.stacks[0].queries);     // encoder tokens answer
    // Only some of the stacks: a decoder with cross attention, as a generation step gives.
    const ImportedAttention part = read_import(R"({"encoder_tokens": ["x", "y"], "decoder_tokens": ["a"],
        "cross_attention": [[[[0.25, 0.75]]]]})");
    REQUIRE(part.stacks.size() == 1);
    CHECK(part.stacks[0].name == "cross_attention");
    CHECK(part.stacks[0].map(0, 0)(0, 1) == doctest::Approx(0.75));
}

TEST_CASE("Hugging Face's batch of one on each layer is read through") {
    const ImportedAttention a = read_import(data_file("import_batch.json"));
    REQUIRE(a.stacks.size() == 1);
    CHECK(a.stacks[0].layers == 2);
    CHECK(a.stacks[0].heads == 2);
    CHECK(a.stacks[0].map(0, 1).rows() == 4);
    // The same numbers without the batch dimension read the same.
    const ImportedAttention b = read_import(R"({"tokens": ["a", "b"], "attention": [[[[1, 0], [0.5, 0.5]]]]})");
    const ImportedAttention c = read_import(R"({"tokens": ["a", "b"], "attention": [[[[[1, 0], [0.5, 0.5]]]]]})");
    CHECK(b.stacks[0].maps[0] == c.stacks[0].maps[0]);
    CHECK(c.stacks[0].heads == 1);
}

TEST_CASE("BertViz exports: \"All\" is the model's attention; sentence slices add nothing") {
    const ImportedAttention a = read_import(data_file("import_bertviz.json"));
    REQUIRE(a.stacks.size() == 1);
    CHECK(a.stacks[0].name == "attention");
    CHECK(a.stacks[0].layers == 2);
    CHECK(a.stacks[0].heads == 2);
    CHECK(a.stacks[0].queries == std::vector<std::string>{"[CLS]", "hi", "[SEP]", "yo"});
    // A model without sentence B: the one entry has name null.
    const ImportedAttention b = read_import(R"({"attention": [{"name": null, "attn": [[[[1, 0], [0.5, 0.5]]]],
        "left_text": ["a", "b"], "right_text": ["a", "b"]}], "include_layers": [0], "total_heads": 1})");
    REQUIRE(b.stacks.size() == 1);
    CHECK(b.stacks[0].map(0, 0)(1, 1) == doctest::Approx(0.5));

    const ImportedAttention e = read_import(data_file("import_bertviz_encdec.json"));
    REQUIRE(e.stacks.size() == 3);
    CHECK(e.stacks[0].name == "encoder_attention");
    CHECK(e.stacks[1].name == "decoder_attention");
    CHECK(e.stacks[2].name == "cross_attention");
    CHECK(e.stacks[2].queries == std::vector<std::string>{"<pad>", "▁The"});
    CHECK(e.stacks[2].keys.size() == 3);
}

TEST_CASE("tolerance: fp16-rounded rows and fully masked rows are accepted") {
    // Row sums 1.009 and 0.991 (inside 1e-2), a fully masked row of zeros, integers.
    const ImportedAttention a = read_import(R"({"tokens": ["a", "b", "c"], "attention": [[[
        [0.509, 0.5, 0], [0, 0, 0], [0.331, 0.33, 0.33]]]], "source": "metadata is ignored",
        "attention_mask": [1, 1, 0]})");
    CHECK(a.stacks[0].map(0, 0)(1, 2) == 0.0f);
    CHECK(failure_of(R"({"tokens": ["a"], "attention": [[[[1.011]]]]})").where == "attention[0][0][0][0]");
}

// [SECTION] Bad files: the exact field --------------------------------------------------------

TEST_CASE("bad files name the field, or the line and column, on one line") {
    const std::pair<const char*, const char*> files[] = {
        {"import_bad_shape.json", "attention[0][1]: expected 3 rows (one per token), got 2"},
        {"import_bad_ragged.json", "attention[1]: expected 2 heads like layer 0, got 1"},
        {"import_bad_rowsum.json",
         "attention[1][0][2]: expected a row that sums to 1 (softmax output; 0 if fully masked), got a sum of 0.8"},
        {"import_bad_nonfinite.json", "2:32: malformed JSON: NaN is not a JSON number"},
        {"import_bad_syntax.json", "3:1: malformed JSON: syntax error"},
        {"import_bad_layout.json", "(top level): expected \"tokens\" and \"attention\""},
    };
    for (const auto& [file, message] : files) {
        const std::string name = file;
        CAPTURE(name);
        const Failure f = failure_of(data_file(file));
        CAPTURE(f.message);
        CHECK(f.message.rfind(message, 0) == 0);
    }
    CHECK(failure_of(data_file("import_bad_shape.json")).where == "attention[0][1]");
    CHECK(failure_of(data_file("import_bad_ragged.json")).where == "attention[1]");
    CHECK(failure_of(data_file("import_bad_rowsum.json")).where == "attention[1][0][2]");
    CHECK(failure_of(data_file("import_bad_nonfinite.json")).where == "2:32");
    CHECK(failure_of(data_file("import_bad_syntax.json")).where == "3:1");
    CHECK(failure_of(data_file("import_bad_layout.json")).where == "(top level)");
}

TEST_CASE("every other kind of bad input: where and what") {
    const std::pair<const char*, const char*> cases[] = {
        // shapes
        {R"({"tokens": ["a", "b"], "attention": [[[[1, 0], [1]]]]})",
         "attention[0][0][1]: expected 2 numbers (one per token), got 1"},
        {R"({"tokens": ["a", "b"], "attention": [[[[1, 0], 7]]]})",
         "attention[0][0][1]: expected an array of 2 numbers (one per token), got 7"},
        {R"({"tokens": ["a"], "attention": []})", "attention: expected a non-empty array of layers"},
        {R"({"tokens": ["a"], "attention": [[]]})", "attention[0]: expected a non-empty array of heads"},
        {R"({"tokens": ["a"], "attention": [[[[[1]]], [[[1]]]]]})",
         "attention[0]: expected a batch of one sequence [1][head][query][key], got a batch of 2"},
        {R"({"encoder_tokens": ["x", "y"], "decoder_tokens": ["a"], "cross_attention": [[[[0.5, 0.5], [0.5, 0.5]]]]})",
         "cross_attention[0][0]: expected 1 rows (one per decoder token), got 2"},
        {R"({"encoder_tokens": ["x", "y"], "decoder_tokens": ["a"], "cross_attention": [[[[1]]]]})",
         "cross_attention[0][0][0]: expected 2 numbers (one per encoder token), got 1"},
        // values
        {R"({"tokens": ["a", "b"], "attention": [[[[1, 0], [0.5, null]]]]})",
         "attention[0][0][1][1]: expected a number, got null"},
        {R"({"tokens": ["a", "b"], "attention": [[[[1, 0], [1.5, -0.5]]]]})",
         "attention[0][0][1][0]: expected an attention weight in [0, 1], got 1.5"},
        {R"({"tokens": ["a", "b"], "attention": [[[[1, 0], [-Infinity, 1]]]]})",
         "1:49: malformed JSON: Infinity is not a JSON number"},
        {R"({"tokens": ["a"], "attention": [[[[1e999]]]]})", "1:36: malformed JSON: number overflow"},
        // tokens and layout
        {R"({"attention": [[[[1]]]]})", "tokens: missing"},
        {R"({"tokens": [], "attention": [[[[1]]]]})", "tokens: expected a non-empty array of token strings, got an array of 0"},
        {R"({"tokens": ["a", 3], "attention": [[[[1]]]]})", "tokens[1]: expected a string, got 3"},
        {R"({"tokens": "a b", "attention": [[[[1]]]]})", "tokens: expected a non-empty array of token strings, got \"a b\""},
        {R"({"tokens": ["a"], "attention": [[[[1]]]], "cross_attention": [[[[1]]]]})", "cross_attention: not allowed with"},
        {R"({"tokens": ["a"], "attentions": [[[[1]]]]})", "attentions: unknown field"},
        {R"({"tokens": ["a"], "atention": [[[[1]]]]})", "(top level): expected \"tokens\" and \"attention\", or encoder_/decoder_/cross_attention (SPEC.md §3), or a BertViz export; got fields atention, tokens"},
        {R"({"encoder_tokens": ["a"], "encoder_attention": [[[[1]]]], "decoder_attentions": []})",
         "decoder_attentions: unknown field"},
        {R"({"encoder_tokens": ["a"], "cross_attention": [[[[1]]]]})", "decoder_tokens: missing (cross_attention needs it)"},
        {R"({"model": 3, "tokens": ["a"], "attention": [[[[1]]]]})", "model: expected a string, got 3"},
        {R"([1, 2])", "(top level): expected a JSON object"},
        {R"({})", "(top level): expected \"tokens\" and \"attention\""},
        {"", "1:1: malformed JSON"},
        // BertViz
        {R"({"attention": [{"name": "Sideways", "attn": [], "left_text": [], "right_text": []}]})",
         "attention[0].name: expected \"All\", \"Encoder\", \"Decoder\", \"Cross\" or null (BertViz), got \"Sideways\""},
        {R"({"attention": [{"name": "All", "attn": [[[[1]]]], "left_text": ["a"]}]})", "attention[0].right_text: missing"},
        {R"({"attention": [{"name": "All", "attn": [[[[1, 0]]]], "left_text": ["a"], "right_text": ["a"]}]})",
         "attention[0].attn[0][0][0]: expected 1 numbers (one per token), got 2"},
        {R"({"attention": [{"name": "All", "attn": [[[[1]]]], "left_text": ["a"], "right_text": ["a"]}], "colour": 1})",
         "colour: unknown field in a BertViz export"},
    };
    for (const auto& [text, message] : cases) {
        const std::string input = text;
        CAPTURE(input);
        const Failure f = failure_of(text);
        CAPTURE(f.message);
        CHECK(f.message.rfind(message, 0) == 0);
    }
}

TEST_CASE("limits: too many tokens, heads, layers or numbers in all are refused before reading them") {
    auto tokens = [](int n) {
        std::string s = "[";
        for (int i = 0; i < n; ++i) s += (i ? ",\"w\"" : "\"w\"");
        return s + "]";
    };
    CHECK(failure_of(R"({"tokens": )" + tokens(kMaxImportTokens + 1) + R"(, "attention": [[[[1]]]]})").message ==
          "tokens: expected at most 4096 tokens, got 4097");
    std::string heads = "[";
    for (int h = 0; h <= kMaxImportHeads; ++h) heads += (h ? ",[[1]]" : "[[1]]");
    heads += "]";
    CHECK(failure_of(R"({"tokens": ["a"], "attention": [)" + heads + "]}").message ==
          "attention[0]: expected at most 256 heads, got 257");
    std::string layers = "[";
    for (int l = 0; l <= kMaxImportLayers; ++l) layers += (l ? ",[[[1]]]" : "[[[1]]]");
    layers += "]";
    CHECK(failure_of(R"({"tokens": ["a"], "attention": )" + layers + "}").message ==
          "attention: expected at most 256 layers, got 257");
    // 16 layers × 1 head × 4096 × 4096 = 2^28 numbers: refused from the shape alone (the
    // rows are never looked at, so the file can be tiny).
    std::string big = "[";
    for (int l = 0; l < 16; ++l) big += (l ? ",[[]]" : "[[]]");
    big += "]";
    const Failure f = failure_of(R"({"tokens": )" + tokens(4096) + R"(, "attention": )" + big + "}");
    CHECK(f.where == "attention");
    CHECK(contains(f.message, "is more than the 67108864 numbers"));
}
