// import.hpp: attention exported from a real model (SPEC.md §3), and what can be derived from
// it: head / layer aggregates, attention rollout, subword tokens merged into words.
//
// [SECTION] Limits
// [SECTION] Imported attention
// [SECTION] Reading
// [SECTION] Aggregation
// [SECTION] Subword tokens
#pragma once

#include "attention.hpp"
#include "scene.hpp"  // SceneError: bad input names the field, as for scenes

#include <string>
#include <string_view>
#include <vector>

namespace attn {

// [SECTION] Limits ---------------------------------------------------------------------------
// The reader rejects anything larger with a message naming the field.
inline constexpr int kMaxImportTokens = 4096;           // per sequence
inline constexpr int kMaxImportLayers = 256;
inline constexpr int kMaxImportHeads = 256;
inline constexpr long long kMaxImportValues = 1LL << 26;  // all maps together: 256 MB of floats

// [SECTION] Imported attention ---------------------------------------------------------------

// One kind of attention of a model ("attention", "encoder_attention", "decoder_attention",
// "cross_attention"): layers × heads maps, each T_q×T_k with rows that are softmax outputs.
struct AttentionStack {
    std::string name;                       // the key it was read from, as in SPEC.md §3
    std::vector<std::string> queries, keys; // T_q and T_k tokens
    int layers = 0, heads = 0;
    std::vector<Matrix> maps;               // layers·heads entries, index layer·heads + head
    bool sinks = false;                     // gpt-oss's learned sinks: a row's weight on no token is
                                            // 1 − its sum (the rows sum to less than 1)

    const Matrix& map(int layer, int head) const { return maps[static_cast<size_t>(layer * heads + head)]; }
    bool is_self() const { return name != "cross_attention"; }  // queries and keys are one sequence
};

// The key a map of learned sinks gets after its tokens, its column the rows' weight on no token.
inline constexpr const char* kSinkKey = "(sink)";

// Everything one import file holds. Decoder-only or encoder-only models give one stack
// ("attention"); encoder-decoder models give encoder, decoder and cross stacks, in that order.
struct ImportedAttention {
    std::string model;                  // optional "model" field (a name for the UI)
    std::vector<AttentionStack> stacks; // at least one
};

// [SECTION] Reading --------------------------------------------------------------------------

// Parses SPEC.md §3 and BertViz-style exports (and a leading batch dimension of 1 on each
// layer, as Hugging Face returns it). Checks shapes against the token lists, finite values in
// [0, 1] within tolerance, and the limits above. Throws SceneError whose where() is the field
// path ("attention[2][1][5]", "tokens") or "line:column" of malformed JSON.
ImportedAttention read_import(std::string_view json_text);

// The check read_import makes of every row, for readers of the same data in other encodings
// (core/model/attention_file.hpp): each weight in [0, 1] and the row summing to 1 (1 − sink with
// a learned sink's weight), or to 0 when fully masked, within 1e-2. Throws SceneError naming
// `field` (the row) or `field[c]`.
void check_import_row(const std::string& field, const float* row, size_t n, float sink = 0);

// What a JSON file holds: attention exported from a model (a top-level "attention",
// "encoder_attention", "decoder_attention" or "cross_attention" key: SPEC.md §3 and BertViz) or
// else a scene (SPEC.md §1). Decided from the top-level keys alone, in one pass over the bytes
// up to the first such key that parses no number and allocates nothing (a leading UTF-8 BOM is
// skipped). When the structure breaks before that key (not an object, a string that never
// ends, a bad escape, brackets that do not balance, text after the object), the file is an
// import if one of those names appears in quotes anywhere, so that a broken import file still
// gets the import reader's message.
// A .safetensors file (is_safetensors) is an import too: core/model/attention_file.hpp reads it.
enum class FileKind { Scene, Import };
FileKind file_kind(std::string_view json_text);

// Bytes 4…7 are zero (a header under 4 GB) and byte 8 opens the header's JSON object: never so
// in JSON text, which holds no NUL.
bool is_safetensors(std::string_view bytes);

// The whole of a file into text, read at its size in one go (a stream iterator copies byte by
// byte: 0.25 s for a 117 MB import). False when it cannot be opened or read whole (a folder).
bool read_file(const std::string& path, std::string& text);

// [SECTION] Aggregation ----------------------------------------------------------------------

enum class HeadReduce { Mean, Max };

// Reduces the chosen heads of the chosen layers (indices into the stack; empty = all) to one
// T_q×T_k map: the mean or the elementwise max over every (layer, head) pair chosen.
Matrix aggregate(const AttentionStack& stack, const std::vector<int>& layers,
                 const std::vector<int>& heads, HeadReduce reduce);

// Attention rollout (Abnar & Zuidema 2020) for a self-attention stack: per layer the heads
// are reduced, the residual is added (0.5·A + 0.5·I) and rows renormalised; the result after
// layer l is Ã_l · … · Ã_0. Returns one T×T matrix per layer. Requires stack.is_self().
std::vector<Matrix> attention_rollout(const AttentionStack& stack, HeadReduce reduce);

// The attention of several query tokens together: the sum of their rows (1×T_k).
RowVector summed_attention(const Matrix& map, const std::vector<int>& query_rows);

// [SECTION] Subword tokens -------------------------------------------------------------------

// A token as a reader should see it: byte-level BPE "Ġ" / "Ċ" and SentencePiece "▁" become a
// leading space / newline mark, the WordPiece "##" continuation prefix is dropped.
std::string display_token(const std::string& token);

// Consecutive subword tokens that make one word: [first, first + count).
struct Word {
    std::string text;  // the merged text, markers removed
    int first = 0, count = 1;
};
// Groups tokens into words from their markers (a "##" piece continues the word before it; a
// "Ġ" / "▁" piece starts a new one; special tokens such as [CLS] or <s> stay alone).
std::vector<Word> merge_subwords(const std::vector<std::string>& tokens);

// A map over words: for each query word the mean of its pieces' rows, and for each key word
// the sum of its pieces' columns, so rows still sum to 1 (Clark et al. 2019).
Matrix merge_attention(const Matrix& map, const std::vector<Word>& query_words,
                       const std::vector<Word>& key_words);

}  // namespace attn
