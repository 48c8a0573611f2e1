// Imported attention as .safetensors (core/model/attention_file.hpp): what attnviz.show() sends
// from a notebook. The maps read back as written (F32 exactly, F16 and BF16 to their rounding),
// the stacks of an encoder-decoder model, and every kind of bad file named by its field.
#include "attention_file.hpp"
#include "files.hpp"
#include "model_checkpoint.hpp"

#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <random>
#include <string>

using namespace attn;
using checkpoint::Tensor;

namespace {

// layers × heads random softmax maps, T_q × T_k, flattened [layers, heads, T_q, T_k].
std::vector<float> softmax_maps(std::mt19937& rng, int layers, int heads, int T_q, int T_k, bool causal) {
    std::normal_distribution<float> normal(0.0f, 2.0f);
    std::vector<float> v;
    for (int m = 0; m < layers * heads; ++m)
        for (int i = 0; i < T_q; ++i) {
            std::vector<float> row(static_cast<size_t>(T_k));
            float sum = 0;
            for (int j = 0; j < T_k; ++j) sum += row[static_cast<size_t>(j)] = causal && j > i ? 0.0f : std::exp(normal(rng));
            for (float x : row) v.push_back(x / sum);
        }
    return v;
}

Tensor maps(const char* name, std::vector<std::int64_t> shape, std::vector<float> values, const char* dtype = "F32") {
    return {name, std::move(shape), std::move(values), dtype, {}};
}

std::string bytes_of(const std::vector<Tensor>& tensors, const std::string& metadata) {
    const auto b = checkpoint::safetensors(tensors, metadata);
    return {b.begin(), b.end()};
}

std::string metadata_tokens(const char* key, int n) {
    std::string list;
    for (int i = 0; i < n; ++i) list += std::string(i ? ", " : "") + "\\\"t" + std::to_string(i) + "\\\"";
    return std::string("\"") + key + "\":\"[" + list + "]\"";
}

// The field and message of the error reading `bytes` throws, or "" when it reads.
std::string failure(const std::string& bytes) {
    try {
        read_import_safetensors(bytes, "fig.safetensors");
    } catch (const SceneError& e) {
        return e.what();  // "WHERE: MESSAGE"
    } catch (const ModelError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("safetensors import: the maps read back as written, in F32, F16 and BF16, over many shapes") {
    std::mt19937 rng(7);
    for (const char* dtype : {"F32", "F16", "BF16"})
        for (const std::array<int, 3>& shape : std::array<std::array<int, 3>, 4>{{{1, 1, 1}, {2, 3, 5}, {4, 2, 17}, {1, 12, 64}}}) {
            const int layers = shape[0], heads = shape[1], T = shape[2];  // not a structured binding: clang 14's CAPTURE
            CAPTURE(dtype);
            CAPTURE(layers);
            CAPTURE(heads);
            CAPTURE(T);
            const auto v = softmax_maps(rng, layers, heads, T, T, T % 2 == 1);
            const std::string bytes = bytes_of({maps("attention", {layers, heads, T, T}, v, dtype)},
                                               metadata_tokens("tokens", T) + ",\"model\":\"gpt2\"");
            CHECK(is_safetensors(bytes));
            CHECK(file_kind(bytes) == FileKind::Import);
            const ImportedAttention a = read_import_file(bytes, "fig.safetensors");
            CHECK(a.model == "gpt2");
            REQUIRE(a.stacks.size() == 1);
            const AttentionStack& s = a.stacks[0];
            CHECK(s.name == "attention");
            CHECK(s.layers == layers);
            CHECK(s.heads == heads);
            CHECK(s.queries.size() == static_cast<size_t>(T));
            CHECK(s.queries.back() == "t" + std::to_string(T - 1));
            // F32 exactly; F16 within half its spacing below 1 (2^-12), BF16 within 2^-9.
            const float tolerance = std::string(dtype) == "F32" ? 0.0f : std::string(dtype) == "F16" ? 2.5e-4f : 2e-3f;
            float worst = 0;
            for (int m = 0; m < layers * heads; ++m)
                for (int i = 0; i < T; ++i)
                    for (int j = 0; j < T; ++j)
                        worst = std::max(worst, std::fabs(s.map(m / heads, m % heads)(i, j) -
                                                          v[static_cast<size_t>((m * T + i) * T + j)]));
            CHECK(worst <= tolerance);
        }
}

TEST_CASE("safetensors import: an encoder-decoder model's stacks, encoder, decoder and cross, in that order") {
    std::mt19937 rng(3);
    const std::string meta = metadata_tokens("encoder_tokens", 4) + "," + metadata_tokens("decoder_tokens", 3);
    // Written cross first: the order read is the SPEC's, not the file's.
    const std::string bytes = bytes_of({maps("cross_attention", {2, 2, 3, 4}, softmax_maps(rng, 2, 2, 3, 4, false), "F16"),
                                        maps("encoder_attention", {2, 2, 4, 4}, softmax_maps(rng, 2, 2, 4, 4, false), "F16"),
                                        maps("decoder_attention", {2, 2, 3, 3}, softmax_maps(rng, 2, 2, 3, 3, true), "F16")},
                                       meta);
    const ImportedAttention a = read_import_file(bytes, "t5.safetensors");
    REQUIRE(a.stacks.size() == 3);
    CHECK(a.stacks[0].name == "encoder_attention");
    CHECK(a.stacks[1].name == "decoder_attention");
    CHECK(a.stacks[2].name == "cross_attention");
    CHECK(a.stacks[2].queries.size() == 3);  // decoder tokens ask
    CHECK(a.stacks[2].keys.size() == 4);     // encoder tokens answer
    CHECK(a.stacks[1].map(1, 1)(0, 2) == 0.0f);  // causal zeros stay zeros
    // Cross attention alone needs both token lists.
    CHECK(failure(bytes_of({maps("cross_attention", {1, 1, 3, 4}, softmax_maps(rng, 1, 1, 3, 4, false))},
                           metadata_tokens("encoder_tokens", 4))) ==
          "decoder_tokens: missing from the metadata (cross_attention needs it)");
}

TEST_CASE("safetensors import: bad files name the tensor or field") {
    std::mt19937 rng(5);
    const auto ok = softmax_maps(rng, 1, 2, 3, 3, false);
    const std::string tokens = metadata_tokens("tokens", 3);
    CHECK(failure(bytes_of({maps("attention", {1, 2, 3, 3}, ok)}, tokens)).empty());
    CHECK(failure(bytes_of({maps("attention", {1, 2, 3, 3}, ok)}, metadata_tokens("tokens", 4))) ==
          "attention: expected shape [layers, heads, 4, 4] (the tokens), got [1, 2, 3, 3]");
    CHECK(failure(bytes_of({maps("attention", {2, 3, 3}, ok)}, tokens)) ==
          "attention: expected shape [layers, heads, 3, 3] (the tokens), got [2, 3, 3]");
    CHECK(failure(bytes_of({maps("attention", {1, 2, 3, 3}, ok)}, "\"model\":\"x\"")) ==
          "tokens: missing from the metadata (attention needs it)");
    CHECK(failure(bytes_of({maps("attention", {1, 2, 3, 3}, ok)}, "\"tokens\":\"[1, 2, 3]\"")) == "tokens[0]: expected a string");
    CHECK(failure(bytes_of({maps("attentions", {1, 2, 3, 3}, ok)}, tokens)).starts_with("attentions: unknown tensor"));
    CHECK(failure(bytes_of({maps("attention", {1, 2, 3, 3}, ok), maps("cross_attention", {1, 2, 3, 3}, ok)}, tokens))
              .starts_with("attention: not allowed with the encoder-decoder tensors"));
    Tensor ints{"attention", {1, 1, 1, 1}, {}, "I32", {1, 0, 0, 0}};
    CHECK(failure(bytes_of({ints}, metadata_tokens("tokens", 1))) == "attention: expected F16, BF16 or F32 weights, got I32");
    // Scores, not weights: the row is named as the JSON reader names it.
    auto scores = ok;
    scores[4] = 3.5f;
    CHECK(failure(bytes_of({maps("attention", {1, 2, 3, 3}, scores)}, tokens)) ==
          "attention[0][0][1][1]: expected an attention weight in [0, 1], got 3.5");
    auto nan = ok;
    nan[12] = std::nanf("");
    CHECK(failure(bytes_of({maps("attention", {1, 2, 3, 3}, nan)}, tokens)).starts_with("attention[0][1][1][0]: expected an attention weight"));
    auto half = ok;
    for (int j = 0; j < 3; ++j) half[static_cast<size_t>(j)] *= 0.5f;
    CHECK(failure(bytes_of({maps("attention", {1, 2, 3, 3}, half)}, tokens)) ==
          "attention[0][0][0]: expected a row that sums to 1 (softmax output; 0 if fully masked), got a sum of 0.5");
    // A fully masked row (zeros) is fine.
    auto masked = ok;
    for (int j = 0; j < 3; ++j) masked[static_cast<size_t>(j)] = 0.0f;
    CHECK(failure(bytes_of({maps("attention", {1, 2, 3, 3}, masked)}, tokens)).empty());
    // A header cut short is the safetensors reader's error, naming the file.
    std::string cut = bytes_of({maps("attention", {1, 2, 3, 3}, ok)}, tokens);
    cut.resize(cut.size() - 5);
    CHECK(failure(cut).starts_with("fig.safetensors: attention: data_offsets"));
}
