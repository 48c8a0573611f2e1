// Imported attention (SPEC.md §3): every accepted layout, the exact field of every kind of bad
// input, and the derived maps (aggregates, rollout, summed rows, merged words) against plain
// loops and hand-worked numbers.
#include "import.hpp"

#include "test_util.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <string>

using namespace attn;
using attn::test::contains;

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
    for (int t = 0; t < T; ++t) s.queries.push_back(std::to_string(t));
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
        {"import_bad_syntax.json", "3:1: malformed JSON: unexpected end of input; expected ',' or '}'"},
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
         "1:49: malformed JSON: -Infinity is not a JSON number"},
        {R"({"tokens": ["a"], "attention": [[[[1e999]]]]})", "1:36: malformed JSON: number overflow"},
        // tokens and layout
        {R"({"attention": [[[[1]]]]})", "tokens: missing"},
        {R"({"tokens": [], "attention": [[[[1]]]]})", "tokens: expected a non-empty array of token strings, got an array of 0"},
        {R"({"tokens": ["a", 3], "attention": [[[[1]]]]})", "tokens[1]: expected a string, got 3"},
        {R"({"tokens": "a b", "attention": [[[[1]]]]})", "tokens: expected a non-empty array of token strings, got \"a b\""},
        {R"({"tokens": ["a"], "attention": [[[[1]]]], "cross_attention": [[[[1]]]]})", "cross_attention: not allowed with"},
        {R"({"tokens": ["a"], "attentions": [[[[1]]]]})", "attentions: unknown field"},
        {R"({"tokens": ["a"], "atention": [[[[1]]]]})", "(top level): expected \"tokens\" and \"attention\", or encoder_/decoder_/cross_attention (SPEC.md §3), or a BertViz export; got fields tokens, atention"},
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

TEST_CASE("numbers read as the C library reads them (within one float ulp), in every form an exporter writes") {
    // Rows [x, 1 - x] over 256 heads: each x written in one of the forms below.
    std::mt19937 rng(11);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    const char* formats[] = {"%.6g", "%.9g", "%.17g", "%.3e", "%.8E", "%.1f", "%.20f"};
    int checked = 0;
    float worst_ulps = 0;
    for (const char* format : formats) {
        std::string text = R"({"tokens": ["a", "b"], "attention": [[)";
        std::vector<std::string> literals;
        for (int h = 0; h < kMaxImportHeads; ++h) {
            // Some tiny weights (1e-7 … 1e-40) as an fp32 softmax gives for far-away tokens.
            double x = h % 4 == 0 ? std::pow(10.0, -7.0 - 33.0 * unit(rng)) : unit(rng);
            char a[64], b[64];
            std::snprintf(a, sizeof a, format, x);
            std::snprintf(b, sizeof b, format, 1.0 - std::strtod(a, nullptr));
            literals.push_back(a);
            text += std::string(h ? ", " : "") + "[[" + a + ", " + b + "], [" + b + ", " + a + "]]";
        }
        text += "]]}";
        const ImportedAttention imported = read_import(text);
        for (int h = 0; h < kMaxImportHeads; ++h) {
            const float got = imported.stacks[0].map(0, h)(0, 0);
            const float want = std::strtof(literals[static_cast<size_t>(h)].c_str(), nullptr);
            const float ulp = std::nextafter(std::fabs(want), INFINITY) - std::fabs(want);
            const float ulps = std::fabs(got - want) / ulp;
            worst_ulps = std::max(worst_ulps, ulps);
            CHECK_MESSAGE(ulps <= 1.0f, literals[static_cast<size_t>(h)] << " read as " << got);
            ++checked;
        }
    }
    MESSAGE("numbers: " << checked << " checked against strtof, worst " << worst_ulps << " ulp");
    // The JSON grammar's edges.
    const ImportedAttention a = read_import(R"({"tokens": ["a", "b"], "attention": [[[[0, 1E+0], [-0.0, 1.0e0]],
        [[5e-1, 50E-2], [0.25000000000000000000001, 0.75]], [[1e-400, 1], [0.1, 0.9]]]]})");
    CHECK(a.stacks[0].map(0, 0)(0, 1) == 1.0f);
    CHECK(a.stacks[0].map(0, 1)(0, 1) == 0.5f);
    CHECK(a.stacks[0].map(0, 1)(1, 0) == 0.25f);
    CHECK(a.stacks[0].map(0, 2)(0, 0) == 0.0f);
    CHECK(a.stacks[0].map(0, 2)(1, 0) == 0.1f);
    const std::pair<const char*, const char*> bad[] = {
        {R"({"tokens": ["a"], "attention": [[[[01]]]]})", "1:37: malformed JSON: unexpected '1'; expected ',' or ']'"},
        {R"({"tokens": ["a"], "attention": [[[[1.]]]]})", "1:38: malformed JSON: unexpected ']'; expected a digit after '.'"},
        {R"({"tokens": ["a"], "attention": [[[[.5]]]]})", "1:36: malformed JSON: unexpected '.'; expected a value"},
        {R"({"tokens": ["a"], "attention": [[[[1e]]]]})", "1:38: malformed JSON: unexpected ']'; expected a digit in the exponent"},
        {R"({"tokens": ["a"], "attention": [[[[+1]]]]})", "1:36: malformed JSON: unexpected '+'; expected a value"},
        {R"({"tokens": ["a"], "attention": [[[[1,]]]]})", "1:38: malformed JSON: unexpected ']'; expected a value"},
        {R"({"tokens": ["a\q"], "attention": [[[[1]]]]})",
         "1:16: malformed JSON: invalid string: forbidden character after backslash"},
        {R"({"tokens": ["a], "attention": [[[[1]]]]})", "1:19: malformed JSON: unexpected 'a'; expected ',' or ']'"},
        {R"({"tokens": ["a"], "attention": [[[[1]]]], "model": "x)", "1:52: malformed JSON: a string that never ends"},
        {R"({"tokens": ["a"], "attention": [[[[1]]]]} x)", "1:43: malformed JSON: unexpected 'x' after the JSON value"},
        {R"({"tokens": ["a"] "attention": [[[[1]]]]})", "1:18: malformed JSON: unexpected '\"'; expected ',' or '}'"},
        {R"({tokens: ["a"]})", "1:2: malformed JSON: unexpected 't'; expected a string key"},
        {"{\"tokens\": [\"\xff\"]}", "1:14: malformed JSON: invalid string: ill-formed UTF-8 byte"},
    };
    for (const auto& [text, message] : bad) {
        const std::string input = text;
        CAPTURE(input);
        const Failure f = failure_of(text);
        CAPTURE(f.message);
        CHECK(f.message.rfind(message, 0) == 0);
    }
    // Deep nesting is refused, not a stack overflow.
    CHECK(contains(failure_of(std::string(100000, '[')).message, "nested deeper than 64 levels"));
    // Escapes in tokens are decoded.
    CHECK(read_import(R"({"tokens": ["\u00e9\n\"", "\ud83d\ude00"], "attention": [[[[1, 0], [0, 1]]]]})").stacks[0].queries ==
          std::vector<std::string>{"é\n\"", "😀"});
}

// [SECTION] Aggregation -----------------------------------------------------------------------

namespace {

// Plain loops: the mean or max over the chosen (layer, head) pairs.
Matrix naive_aggregate(const AttentionStack& s, const std::vector<int>& layers, const std::vector<int>& heads,
                       HeadReduce reduce) {
    const int T_q = static_cast<int>(s.queries.size()), T_k = static_cast<int>(s.keys.size());
    Matrix out(T_q, T_k);
    for (int i = 0; i < T_q; ++i)
        for (int j = 0; j < T_k; ++j) {
            double acc = reduce == HeadReduce::Mean ? 0.0 : -1.0;
            int n = 0;
            for (int l : layers)
                for (int h : heads) {
                    const double x = s.map(l, h)(i, j);
                    acc = reduce == HeadReduce::Mean ? acc + x : std::max(acc, x);
                    ++n;
                }
            out(i, j) = static_cast<float>(reduce == HeadReduce::Mean ? acc / n : acc);
        }
    return out;
}

// Plain loops in double: rollout as Abnar & Zuidema write it.
std::vector<std::vector<std::vector<double>>> naive_rollout(const AttentionStack& s, HeadReduce reduce) {
    const int T = static_cast<int>(s.queries.size());
    std::vector<int> all_heads;
    for (int h = 0; h < s.heads; ++h) all_heads.push_back(h);
    std::vector<std::vector<std::vector<double>>> out;
    std::vector<std::vector<double>> r;
    for (int l = 0; l < s.layers; ++l) {
        const Matrix a = naive_aggregate(s, {l}, all_heads, reduce);
        std::vector<std::vector<double>> t(T, std::vector<double>(T));
        for (int i = 0; i < T; ++i) {
            double sum = 0;
            for (int j = 0; j < T; ++j) sum += t[i][j] = 0.5 * a(i, j) + (i == j ? 0.5 : 0.0);
            for (int j = 0; j < T; ++j) t[i][j] /= sum;
        }
        if (l == 0) {
            r = t;
        } else {
            std::vector<std::vector<double>> next(T, std::vector<double>(T, 0.0));
            for (int i = 0; i < T; ++i)
                for (int j = 0; j < T; ++j)
                    for (int k = 0; k < T; ++k) next[i][j] += t[i][k] * r[k][j];
            r = next;
        }
        out.push_back(r);
    }
    return out;
}

}  // namespace

TEST_CASE("read_file: the whole file, byte for byte; false for a missing file or a folder, without throwing") {
    std::string text;
    REQUIRE(read_file(std::string(ATTN_TEST_DATA) + "/import_encdec.json", text));
    CHECK(text == data_file("import_encdec.json"));
    CHECK_FALSE(read_file(std::string(ATTN_TEST_DATA) + "/no-such-file.json", text));
    CHECK_FALSE(read_file(ATTN_TEST_DATA, text));
}

// [file_kind] ---------------------------------------------------------------------------------

namespace {

constexpr const char* kImportNames[] = {"attention", "encoder_attention", "decoder_attention", "cross_attention"};

// The oracle: the whole text parsed by nlohmann, its top-level keys looked up; text that does not
// parse as an object is an import when one of the names appears in quotes anywhere.
FileKind file_kind_by_parsing(std::string_view text) {
    const auto j = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
    bool import = false;
    if (j.is_discarded() || !j.is_object()) {
        for (const char* name : kImportNames) import = import || contains(std::string(text), "\"" + std::string(name) + "\"");
    } else {
        for (const char* name : kImportNames) import = import || j.contains(name);
    }
    return import ? FileKind::Import : FileKind::Scene;
}

// Random JSON with import names as keys at any depth, as string values, with escapes in keys
// and strings, every kind of number and literal, and random white space between tokens.
class RandomJson {
public:
    explicit RandomJson(unsigned seed) : rng_(seed) {}

    std::string document() {
        std::string s = pick(8) == 0 ? "\xEF\xBB\xBF" : "";
        space(s);
        if (pick(10) == 0) value(s, 0);  // now and then not an object at the top
        else object(s, 0);
        space(s);
        return s;
    }

private:
    std::mt19937 rng_;
    int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
    void space(std::string& s) {
        static constexpr const char* kSpace[] = {"", "", " ", "\n", "\t", "\r\n  "};
        s += kSpace[pick(6)];
    }
    void key(std::string& s) {
        static constexpr const char* kKeys[] = {
            "attention", "encoder_attention", "decoder_attention", "cross_attention",   // import keys
            "\\u0061ttention", "cross\\u005Fattention", "decoder_attentio\\u006e",          // the same, escaped
            "tokens", "kind", "d_model", "attentions", "Attention", "attention ", "xattention",
            "encoder_attention_weights", "attention\\n", "\\\"attention\\\"", "atten\\/tion", ""};
        s += "\"" + std::string(kKeys[pick(static_cast<int>(std::size(kKeys)))]) + "\"";
    }
    void value(std::string& s, int depth) {
        static constexpr const char* kScalars[] = {
            "0", "-1", "0.25", "1e-3", "-2.5E+7", "12345678901234567890", "true", "false", "null",
            "\"attention\"", "\"a \\\"quoted\\\" [bracket] {brace}\"", "\"back\\\\slash\\\\\"", "\"\\u00e9\\ud83d\\ude00\"",
            "\"cross_attention\"", "\"\""};
        const int kind = depth >= 4 ? 0 : pick(4);
        if (kind == 0) s += kScalars[pick(static_cast<int>(std::size(kScalars)))];
        else if (kind == 1) object(s, depth + 1);
        else array(s, depth + 1);
    }
    void object(std::string& s, int depth) {
        s += '{';
        const int n = pick(5);
        for (int i = 0; i < n; ++i) {
            if (i) s += ',';
            space(s);
            key(s);
            space(s);
            s += ':';
            space(s);
            value(s, depth);
            space(s);
        }
        s += '}';
    }
    void array(std::string& s, int depth) {
        s += '[';
        const int n = pick(4);
        for (int i = 0; i < n; ++i) {
            if (i) s += ',';
            space(s);
            value(s, depth);
            space(s);
        }
        s += ']';
    }
};

}  // namespace

TEST_CASE("file_kind: only top-level keys count, escapes decoded, white space and a BOM skipped") {
    CHECK(file_kind(R"({"tokens": ["a"], "attention": [[[[1]]]]})") == FileKind::Import);
    CHECK(file_kind(R"({"encoder_tokens": [], "cross_attention": []})") == FileKind::Import);
    CHECK(file_kind(R"({"attention": [{"name": "All", "attn": []}]})") == FileKind::Import);  // BertViz
    CHECK(file_kind(R"({"kind": "self", "tokens": "I am good"})") == FileKind::Scene);
    // "attention" deeper down or as a string is not a top-level key.
    CHECK(file_kind(R"({"kind": "self", "weights": {"attention": [1], "x": [{"cross_attention": 2}]}})") == FileKind::Scene);
    CHECK(file_kind(R"({"name": "attention", "tokens": "the attention \"attention\": [", "kind": "self"})") == FileKind::Scene);
    CHECK(file_kind(R"({"description": "{\"attention\": []}", "kind": "self"})") == FileKind::Scene);
    // Names that are not those keys.
    CHECK(file_kind(R"({"attentions": [], "Attention": [], "attention ": [], "encoder_attention_weights": []})") == FileKind::Scene);
    // Escapes are decoded as a JSON reader decodes them.
    CHECK(file_kind(R"({"\u0061ttention": []})") == FileKind::Import);
    CHECK(file_kind(R"({"cross\u005Fattention": []})") == FileKind::Import);
    CHECK(file_kind(R"({"attention\n": [], "\"attention\"": [], "atten\/tion": []})") == FileKind::Scene);
    // The key after values that hold brackets, quotes and backslashes inside strings.
    CHECK(file_kind(R"({"tokens": ["]", "}", "\"", "\\", "[{"], "x": {"y": [[1, 2], {"z": "]]"}]}, "attention": []})") ==
          FileKind::Import);
    // White space around everything; a UTF-8 BOM first, as the readers accept it.
    CHECK(file_kind(" \n\t{ \r\n \"kind\" \n: \"self\" ,\t\"attention\"\n : [] } \n") == FileKind::Import);
    CHECK(file_kind("\xEF\xBB\xBF{\"attention\": []}") == FileKind::Import);
    CHECK(file_kind("\xEF\xBB\xBF{\"kind\": \"self\", \"tokens\": \"a b\"}") == FileKind::Scene);
    CHECK_NOTHROW(read_scene("\xEF\xBB\xBF{\"kind\": \"self\", \"tokens\": \"a b\", \"d_model\": 4}"));
    CHECK(read_import("\xEF\xBB\xBF{\"tokens\": [\"a\"], \"attention\": [[[[1]]]]}").stacks.size() == 1);
    // Numbers are not read: not even ones no reader accepts.
    CHECK(file_kind(R"({"tokens": ["a"], "x": [NaN, 01, 1e999999, -], "attention": []})") == FileKind::Import);
    CHECK(file_kind(R"({"kind": "self", "d_model": 1e999999})") == FileKind::Scene);
}

TEST_CASE("file_kind: broken JSON is decided by the names, so a broken import gets the import reader's message") {
    CHECK(file_kind(R"({"tokens": ["a"], "attention": [[[[1, 0.)") == FileKind::Import);  // cut after the key
    CHECK(file_kind(R"({"tokens": ["a"], "attention")") == FileKind::Import);
    CHECK(file_kind(R"({"tokens": "a\q", "attention": []})") == FileKind::Import);          // bad escape first
    CHECK(file_kind(R"({"tokens": ["a", "attention": [[[1]]]})") == FileKind::Import);       // unbalanced
    CHECK(file_kind(R"([{"attention": []}])") == FileKind::Import);                          // not an object
    CHECK(file_kind(R"({"kind": "self"} "attention")") == FileKind::Import);                 // text after it
    CHECK(file_kind(R"({"kind": "self", "tokens": "a b)") == FileKind::Scene);               // a string never ends
    CHECK(file_kind(R"({"kind" "self"})") == FileKind::Scene);
    // nlohmann (the scene reader) stops at a NUL byte: what follows one is not read.
    const std::string_view after_nul("{\"kind\": 1}\0\"attention\"", 23), inside("{\"kind\": 1\0, \"attention\": 2}", 28);
    CHECK(file_kind(after_nul) == FileKind::Scene);
    CHECK(file_kind(after_nul) == file_kind_by_parsing(after_nul));
    CHECK(file_kind(inside) == FileKind::Import);
    CHECK(file_kind(inside) == file_kind_by_parsing(inside));
    CHECK(file_kind("{\"kind\x01\": 1, \"attention\": 2}") == FileKind::Import);              // raw control character
    for (const char* text : {"", " ", "{", "}", "\"", "\\", "not json", "[", "{\"", "{\"a\":", "{\"a\":}", "\xEF\xBB",
                             "{\"\\u12", "{\"\\u00zz\": 1}", "{\"a\": [}"})
        CHECK(file_kind(text) == file_kind_by_parsing(text));
    CHECK(file_kind(data_file("import_bad_syntax.json")) == FileKind::Import);  // the reader names line and column
}

TEST_CASE("file_kind agrees with parsing the whole file on random JSON, and never reads past the end") {
    RandomJson random(12);
    std::mt19937 mutation_rng(13);
    int imports = 0, scenes = 0, parsed = 0, mutated_objects = 0, mismatches = 0;
    for (int i = 0; i < 20000; ++i) {
        const std::string text = random.document();
        const FileKind want = file_kind_by_parsing(text);
        parsed += !nlohmann::json::parse(text, nullptr, false).is_discarded();
        (want == FileKind::Import ? imports : scenes) += 1;
        if (file_kind(text) != want && mismatches++ < 5) MESSAGE("differs from parsing: " << text);
        // Every prefix: no read past the end (ASan), and a verdict either way.
        if (i < 2000)
            for (size_t n = 0; n < text.size(); ++n) (void)file_kind(std::string_view(text).substr(0, n));
        // One byte dropped or replaced by a structural one: when that is still a JSON object,
        // the same verdict as parsing it.
        std::string mutated = text;
        const size_t at = std::uniform_int_distribution<size_t>(0, text.size() - 1)(mutation_rng);
        if (mutation_rng() % 2) mutated.erase(at, 1);
        else mutated[at] = "\"{}[],: \\u"[mutation_rng() % 10];
        const auto j = nlohmann::json::parse(mutated, nullptr, false);
        if (!j.is_discarded() && j.is_object()) {
            ++mutated_objects;
            if (file_kind(mutated) != file_kind_by_parsing(mutated) && mismatches++ < 5) MESSAGE("differs from parsing: " << mutated);
        }
    }
    MESSAGE(imports << " imports, " << scenes << " scenes, " << parsed << " parsed by nlohmann, " << mutated_objects
                    << " mutated ones still objects; " << mismatches << " mismatches");
    CHECK(imports > 1000);
    CHECK(scenes > 1000);
    CHECK(mismatches == 0);
}

TEST_CASE("aggregate: mean and max over chosen heads and layers match plain loops") {
    std::mt19937 rng(3);
    double worst = 0;
    for (int T : {1, 3, 8}) {
        const AttentionStack s = random_stack(rng, 3, 4, T, T == 8);
        const std::vector<std::pair<std::vector<int>, std::vector<int>>> picks = {
            {{}, {}}, {{0}, {2}}, {{1, 2}, {}}, {{}, {0, 3}}, {{2, 0}, {1, 1, 3}}};
        for (const auto& [layers, heads] : picks)
            for (HeadReduce reduce : {HeadReduce::Mean, HeadReduce::Max}) {
                std::vector<int> ls = layers, hs = heads;
                if (ls.empty()) ls = {0, 1, 2};
                if (hs.empty()) hs = {0, 1, 2, 3};
                const Matrix got = aggregate(s, layers, heads, reduce);
                const double diff = max_abs_diff(got, naive_aggregate(s, ls, hs, reduce));
                worst = std::max(worst, diff);
                CHECK(diff < 1e-6);
                if (reduce == HeadReduce::Mean) check_rows_sum_to_one(got);
            }
    }
    MESSAGE("aggregate: max |fast - loops| = " << worst);
    // One pair is that map itself.
    const AttentionStack s = random_stack(rng, 2, 2, 4);
    CHECK(aggregate(s, {1}, {0}, HeadReduce::Mean) == s.map(1, 0));
    CHECK(aggregate(s, {1}, {0}, HeadReduce::Max) == s.map(1, 0));
    CHECK_THROWS_AS(aggregate(s, {2}, {}, HeadReduce::Mean), std::out_of_range);
    CHECK_THROWS_AS(aggregate(s, {}, {-1}, HeadReduce::Mean), std::out_of_range);
}

TEST_CASE("attention rollout: a hand-worked 3-token example") {
    // One head per layer. Layer 0 attends uniformly; layer 1 is causal (row 0 on itself, row 1
    // half-half, row 2 all on token 0).
    AttentionStack s;
    s.name = "attention";
    s.queries = s.keys = {"a", "b", "c"};
    s.layers = 2, s.heads = 1;
    Matrix a0(3, 3), a1(3, 3);
    a0 << 1 / 3.f, 1 / 3.f, 1 / 3.f, 1 / 3.f, 1 / 3.f, 1 / 3.f, 1 / 3.f, 1 / 3.f, 1 / 3.f;
    a1 << 1, 0, 0, 0.5, 0.5, 0, 1, 0, 0;
    s.maps = {a0, a1};
    // Ã_0 = 0.5·A_0 + 0.5·I: 2/3 on the diagonal, 1/6 elsewhere.
    // Ã_1 = [[1, 0, 0], [1/4, 3/4, 0], [1/2, 0, 1/2]].
    // R_1 = Ã_1·Ã_0: row 0 = [2/3, 1/6, 1/6]
    //                row 1 = 1/4·[2/3, 1/6, 1/6] + 3/4·[1/6, 2/3, 1/6] = [7/24, 13/24, 4/24]
    //                row 2 = 1/2·[2/3, 1/6, 1/6] + 1/2·[1/6, 1/6, 2/3] = [5/12, 2/12, 5/12]
    const std::vector<Matrix> r = attention_rollout(s, HeadReduce::Mean);
    REQUIRE(r.size() == 2);
    Matrix want0(3, 3), want1(3, 3);
    want0 << 4 / 6.f, 1 / 6.f, 1 / 6.f, 1 / 6.f, 4 / 6.f, 1 / 6.f, 1 / 6.f, 1 / 6.f, 4 / 6.f;
    want1 << 16 / 24.f, 4 / 24.f, 4 / 24.f, 7 / 24.f, 13 / 24.f, 4 / 24.f, 10 / 24.f, 4 / 24.f, 10 / 24.f;
    CHECK(max_abs_diff(r[0], want0) < 1e-6);
    CHECK(max_abs_diff(r[1], want1) < 1e-6);
}

TEST_CASE("attention rollout matches plain loops, rows stay distributions, cross attention is refused") {
    std::mt19937 rng(5);
    double worst = 0;
    for (int T : {1, 2, 5, 9})
        for (HeadReduce reduce : {HeadReduce::Mean, HeadReduce::Max})
            for (bool causal : {false, true}) {
                const AttentionStack s = random_stack(rng, 4, 3, T, causal);
                const std::vector<Matrix> got = attention_rollout(s, reduce);
                const auto want = naive_rollout(s, reduce);
                REQUIRE(got.size() == 4);
                for (size_t l = 0; l < got.size(); ++l) {
                    check_rows_sum_to_one(got[l]);
                    for (int i = 0; i < T; ++i)
                        for (int j = 0; j < T; ++j) {
                            const double diff = std::fabs(got[l](i, j) - want[l][static_cast<size_t>(i)][static_cast<size_t>(j)]);
                            worst = std::max(worst, diff);
                            CHECK(diff < 1e-5);
                            // Causal attention and the residual never reach a later token.
                            if (causal && j > i) CHECK(got[l](i, j) == 0.0f);
                        }
                }
            }
    MESSAGE("rollout: max |fast - loops| = " << worst);
    // A fully masked row (all 0) still gives a distribution: the residual alone.
    AttentionStack masked = random_stack(rng, 1, 1, 3);
    masked.maps[0].row(1).setZero();
    const Matrix r = attention_rollout(masked, HeadReduce::Mean)[0];
    CHECK(r(1, 1) == doctest::Approx(1.0));
    CHECK(r(1, 0) == 0.0f);
    const ImportedAttention cross = read_import(data_file("import_encdec.json"));
    CHECK_THROWS_AS(attention_rollout(cross.stacks[2], HeadReduce::Mean), std::invalid_argument);
    CHECK(attention_rollout(cross.stacks[0], HeadReduce::Mean).size() == 2);
}

TEST_CASE("summed attention is the sum of the chosen rows") {
    std::mt19937 rng(8);
    const Matrix m = random_map(rng, 5, 7);
    const RowVector s = summed_attention(m, {0, 3, 4});
    REQUIRE(s.size() == 7);
    for (int j = 0; j < 7; ++j) CHECK(s(j) == doctest::Approx(m(0, j) + m(3, j) + m(4, j)));
    CHECK(s.sum() == doctest::Approx(3.0));
    CHECK(summed_attention(m, {}).isZero());
    CHECK_THROWS_AS(summed_attention(m, {5}), std::out_of_range);
}

// [SECTION] Subword tokens --------------------------------------------------------------------

TEST_CASE("display_token: markers become spaces, newlines and nothing") {
    CHECK(display_token("Ġthe") == " the");
    CHECK(display_token("▁the") == " the");
    CHECK(display_token("##ing") == "ing");
    CHECK(display_token("Ċ") == "↵");
    CHECK(display_token("ĊĊ") == "↵↵");
    CHECK(display_token("ĉx") == "\tx");
    CHECK(display_token("plain") == "plain");
    CHECK(display_token("[CLS]") == "[CLS]");
    CHECK(display_token("<|endoftext|>") == "<|endoftext|>");
    CHECK(display_token("##") == "##");  // the token "##" itself
    CHECK(display_token("") == "");
    // Byte-level BPE text beyond ASCII: GPT-2 writes "我" as "æĪĳ" and " 你好" as "Ġä½łå¥½".
    CHECK(display_token("æĪĳ") == "我");
    CHECK(display_token("Ġä½łå¥½") == " 你好");
    CHECK(display_token("ĠcafÃ©") == " café");
    CHECK(display_token("æĪ") == "æĪ");    // half a character: shown as it is
    CHECK(display_token("café") == "café");  // WordPiece / SentencePiece text: é is not a byte here
    CHECK(display_token("▁Haus") == " Haus");
}

TEST_CASE("merge_subwords: WordPiece, byte-level BPE and SentencePiece words") {
    auto texts = [](const std::vector<Word>& words) {
        std::vector<std::string> t;
        for (const Word& w : words) t.push_back(w.text + "@" + std::to_string(w.first) + "+" + std::to_string(w.count));
        return t;
    };
    CHECK(texts(merge_subwords({"[CLS]", "un", "##believ", "##able", "news", "[SEP]", "##x"})) ==
          std::vector<std::string>{"[CLS]@0+1", "unbelievable@1+3", "news@4+1", "[SEP]@5+1", "x@6+1"});
    CHECK(texts(merge_subwords({"The", "Ġun", "believ", "able", "Ġnews", ".", "Ċ", "Next", "<|endoftext|>"})) ==
          std::vector<std::string>{"The@0+1", "unbelievable@1+3", "news.@4+2", "↵@6+1", "Next@7+1", "<|endoftext|>@8+1"});
    // A character split between two byte-level tokens is whole in the word.
    CHECK(texts(merge_subwords({"Ġæ", "Īĳ", "Ġis"})) == std::vector<std::string>{"我@0+2", "is@2+1"});
    CHECK(texts(merge_subwords({"<s>", "▁Das", "▁Ha", "us", "</s>"})) ==
          std::vector<std::string>{"<s>@0+1", "Das@1+1", "Haus@2+2", "</s>@4+1"});
    // No markers at all: every token is a word.
    CHECK(merge_subwords({"I", "am", "good"}).size() == 3);
    CHECK(merge_subwords({}).empty());
}

TEST_CASE("merge_attention: rows are means of pieces, columns sums, rows still sum to 1") {
    std::mt19937 rng(9);
    const std::vector<std::string> tokens = {"[CLS]", "un", "##believ", "##able", "news", "[SEP]"};
    const std::vector<Word> words = merge_subwords(tokens);
    REQUIRE(words.size() == 4);
    const Matrix m = random_map(rng, 6, 6);
    const Matrix merged = merge_attention(m, words, words);
    REQUIRE(merged.rows() == 4);
    REQUIRE(merged.cols() == 4);
    check_rows_sum_to_one(merged);
    // Plain loops.
    double worst = 0;
    for (size_t qw = 0; qw < words.size(); ++qw)
        for (size_t kw = 0; kw < words.size(); ++kw) {
            double acc = 0;
            for (int q = words[qw].first; q < words[qw].first + words[qw].count; ++q)
                for (int k = words[kw].first; k < words[kw].first + words[kw].count; ++k) acc += m(q, k);
            acc /= words[qw].count;
            worst = std::max(worst, std::fabs(acc - merged(static_cast<Eigen::Index>(qw), static_cast<Eigen::Index>(kw))));
        }
    CHECK(worst < 1e-6);
    // Cross attention: different words on the two sides; a fully masked row stays 0.
    Matrix c = random_map(rng, 3, 6);
    c.row(2).setZero();
    const Matrix mc = merge_attention(c, {{"a", 0, 2}, {"b", 2, 1}}, words);
    CHECK(mc.rows() == 2);
    CHECK(mc.row(0).sum() == doctest::Approx(1.0));
    CHECK(mc.row(1).sum() == doctest::Approx(0.0));
    CHECK_THROWS_AS(merge_attention(m, {{"a", 0, 5}}, words), std::invalid_argument);
    CHECK_THROWS_AS(merge_attention(m, words, {{"a", 0, 3}, {"b", 4, 2}}), std::invalid_argument);
}

TEST_CASE("learned sinks (gpt-oss): \"sinks\" [layer][head][query] and rows that sum to 1 less each") {
    const std::string base = R"({"tokens":["a","b"],"attention":[[[[0.7,0],[0.2,0.3]]]],)";
    const ImportedAttention a = read_import(base + R"("sinks":[[[0.3,0.5]]]})");
    REQUIRE(a.stacks.size() == 1);
    CHECK(a.stacks[0].sinks);
    CHECK(a.stacks[0].map(0, 0)(1, 1) == doctest::Approx(0.3));
    CHECK(!read_import(R"({"tokens":["a"],"attention":[[[[1]]]]})").stacks[0].sinks);
    const auto where = [](const std::string& json) {
        try {
            read_import(json);
        } catch (const SceneError& e) {
            return std::string(e.what());  // "where: message"
        }
        return std::string();
    };
    // without its sinks, such a row is no softmax's; with the wrong sink, neither
    CHECK(where(R"({"tokens":["a","b"],"attention":[[[[0.7,0],[0.2,0.3]]]]})").starts_with("attention[0][0][0]: "));
    CHECK(where(base + R"("sinks":[[[0.3,0.1]]]})") ==
          "attention[0][0][1]: expected a row that sums to 1 less its sink's 0.1, got a sum of 0.5");
    CHECK(where(base + R"("sinks":[[[0.3]]]})") == "sinks[0][0]: expected 2 numbers");
    CHECK(where(base + R"("sinks":[[[0.3,1.5]]]})") == "sinks[0][0][1]: expected a weight in [0, 1], got 1.5");
    CHECK(where(base + R"("sinks":[]})") == "sinks[0][0][0]: missing (every row of \"attention\" needs its sink)");
}
