// tokenizer.hpp: text to a model's vocabulary ids, as Hugging Face's tokenizers do it with their
// defaults. Any tokenizer.json: its normalizers, pre-tokenizers, model (BPE, Unigram, WordPiece,
// WordLevel), added tokens, post-processor and decoder as the tokenizers library runs them
// (tokenizer_json.cpp: what it implements, and what it refuses). Besides, each kind's own files:
//   byte-level BPE         GPT-2: vocab.json + merges.txt, or tokenizer.json's "BPE" model
//   WordPiece              BERT: vocab.txt (+ tokenizer_config.json's do_lower_case), or
//                          tokenizer.json's "WordPiece" model; BERT's basic tokenizer first
//                          (clean-up, CJK characters split, lower-casing and accent stripping,
//                          punctuation split), then greedy longest-match-first with "##"
//   SentencePiece Unigram  Marian: source.spm / target.spm (the ModelProto, its normalizer's
//                          precompiled charsmap included) with vocab.json's ids, or
//                          tokenizer.json's "Unigram" model; Viterbi over the pieces' scores
// encode() adds no special tokens ([CLS], [SEP], </s>, the decoder's start): the model family
// knows where they go (model.hpp); encode_with_specials() adds a tokenizer.json's own.
//
// [SECTION] The tokenizer
// [SECTION] Reading tokenizer files
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

// [SECTION] The tokenizer --------------------------------------------------------------------

// Bpe: a tokenizer.json BPE model without a ByteLevel pre-tokenizer or decoder (SentencePiece's
// BPE: Llama 2, Gemma), and WordLevel's.
enum class TokenizerKind { ByteLevelBpe, WordPiece, Unigram, Bpe };

class Tokenizer {
public:
    struct Impl;  // the pipeline every reader assembles (tokenizer_impl.hpp)
    explicit Tokenizer(std::shared_ptr<const Impl> impl);

    TokenizerKind kind() const;
    // The ids of `text` (UTF-8; invalid bytes are read as U+FFFD, as decode_utf8 does), without
    // special tokens (added tokens written in the text are matched: "<|im_start|>" is one id).
    // Never throws for any text.
    std::vector<int> encode(std::string_view text) const;
    // What tokenizers' encode(text) gives with add_special_tokens: encode's ids with the
    // post-processor's around them (Llama 3's <|begin_of_text|> first). Other files: encode's.
    std::vector<int> encode_with_specials(std::string_view text) const;
    // `ids` with the post-processor's around them, as encode_with_specials puts them.
    std::vector<int> with_specials(std::vector<int> ids) const;
    bool adds_specials() const;  // encode_with_specials adds ids
    // The vocabulary's string for an id ("Ġcat", "##s", "▁rain", "[CLS]"); id in [0, size()).
    const std::string& token(int id) const;
    std::optional<int> id(std::string_view token) const;
    // What an id stands for in decoded text: byte-level BPE its bytes as UTF-8 (a byte that is
    // not whole UTF-8 as U+FFFD), WordPiece without "##", SentencePiece with "▁" as a space;
    // a tokenizer.json's token through its decoder, as in the middle of a text ("Ġcat" and
    // "▁cat" → " cat", "<0xE4>" alone → U+FFFD), an added token as it is.
    std::string text(int id) const;
    int size() const;  // ids are 0 … size() − 1

private:
    std::shared_ptr<const Impl> impl_;  // immutable: copies share it
};

// [SECTION] Reading tokenizer files ----------------------------------------------------------
// Every reader throws ModelError (files.hpp) naming the file and the field or line, e.g.
// "gpt2/merges.txt: line 7: expected two tokens". `file` is the name shown in messages.

// GPT-2's vocab.json ({"token": id}) and merges.txt ("#version" line, then "a b" per line).
Tokenizer read_bpe(std::string_view vocab_json, const std::string& vocab_file,
                   std::string_view merges_txt, const std::string& merges_file);

struct WordPieceOptions {
    bool lower_case = true;      // tokenizer_config.json "do_lower_case"
    bool strip_accents = true;   // "strip_accents" (null: follows lower_case, as BERT does)
    bool chinese_chars = true;   // "tokenize_chinese_chars": a space around every CJK character
    std::string unk = "[UNK]";
    int max_chars_per_word = 100;
};
// BERT's vocab.txt: one token per line, the id is the line number (from 0).
Tokenizer read_wordpiece(std::string_view vocab_txt, const std::string& file, const WordPieceOptions& options);

// A SentencePiece model file (source.spm / target.spm: the ModelProto protobuf, Unigram). With
// `vocab_json` (Marian's vocab.json) pieces get that file's ids (the unknown piece's id for a
// piece it lacks, as MarianTokenizer does); without it, the model's own piece ids.
Tokenizer read_sentencepiece(std::string_view model_proto, const std::string& file,
                             std::string_view vocab_json = {}, const std::string& vocab_file = {});

// tokenizer.json, as Hugging Face's tokenizers library runs it (tokenizer_json.cpp). A component
// it does not implement is refused naming its field: "tokenizer.json:
// pre_tokenizer.pretokenizers[1].type: \"UnicodeScripts\" is not supported".
Tokenizer read_tokenizer_json(std::string_view json, const std::string& file);

}  // namespace attn
