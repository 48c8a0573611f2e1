// tokenizer_impl.hpp: the pipeline every tokenizer is, and its parts (tokenizer_*.cpp), not for
// users of tokenizer.hpp. Each reader assembles the same stages:
//   (added tokens) → normalizer → pre-tokenizer → word model → post-processor; decoder: labels
// GPT-2's vocab.json + merges.txt, BERT's vocab.txt and a SentencePiece model file (with Marian's
// vocab.json) pick their parts by hand; tokenizer.json from the tables below, by each part's
// JSON "type". The files:
//   tokenizer.cpp                  the Tokenizer class, the pipeline's run, vocabularies, JSON fields
//   tokenizer_pieces.cpp           pieces of text: patterns, splits, character classes, GPT-2's bytes
//   tokenizer_normalizers.cpp      normalizers: tokenizer.json's table, BERT's clean-up
//   tokenizer_charsmap.cpp         SentencePiece's precompiled charsmap: Precompiled, sentencepiece's own
//   tokenizer_pre_tokenizers.cpp   pre-tokenizers: the table, GPT-2's split, BERT's words
//   tokenizer_post_processors.cpp  post-processors: the table
//   tokenizer_decoders.cpp         decoders: the table
//   tokenizer_added.cpp            tokenizer.json's added tokens
//   tokenizer_bpe.cpp              the BPE word model; GPT-2's files
//   tokenizer_unigram.cpp          the Unigram word model; SentencePiece model files
//   tokenizer_wordpiece.cpp        the WordPiece word model; BERT's vocab.txt
//   tokenizer_wordlevel.cpp        the WordLevel word model
//   tokenizer_json.cpp             tokenizer.json: the pipeline from the tables
//
// [SECTION] Vocabularies and JSON fields
// [SECTION] Pieces of text
// [SECTION] The parts
// [SECTION] The pipeline
#pragma once

#include "files.hpp"
#include "tokenizer.hpp"

#include <nlohmann/json_fwd.hpp>

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace attn {
class Regex;  // regex.hpp
}

// Everything here but Tokenizer::Impl is in attn::tok: the unity build puts these files into one
// translation unit with others of attn (transformer.hpp has a Decoder of its own).
namespace attn::tok {

// [SECTION] Vocabularies and JSON fields -------------------------------------------------------

using Json = nlohmann::json;

// Ids and their tokens.
struct Vocab {
    struct Hash {  // found by std::string_view too: no string made to look a piece up
        using is_transparent = void;
        size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };
    std::vector<std::string> tokens;                                  // by id
    std::unordered_map<std::string, int, Hash, std::equal_to<>> ids;  // by token (a duplicate token: its last id)

    void add(std::string token) {  // with the next id
        ids[token] = static_cast<int>(tokens.size());
        tokens.push_back(std::move(token));
    }
    int find(std::string_view token, int otherwise) const {
        auto it = ids.find(token);
        return it == ids.end() ? otherwise : it->second;
    }
};

// The tokens of a {"token": id, …} object (vocab.json, tokenizer.json's BPE and WordPiece
// vocabularies): ids must be 0 … n − 1, each once. `where` names the object in messages.
Vocab read_vocab_object(const nlohmann::json& vocab, const std::string& file, const std::string& where);

// Base64 text's bytes (tokenizer.json's precompiled_charsmap); `where` names it in messages.
std::string base64_decode(std::string_view text, const std::string& file, const std::string& where);

// A JSON value with its path in the file ("pre_tokenizer.pretokenizers[1]"), for messages.
struct Field {
    const nlohmann::json& j;
    std::string path;
    const std::string& file;

    [[noreturn]] void fail(const std::string& what) const { throw ModelError(file, path, what); }
    Field at(const std::string& key) const;  // a missing key reads as null
    Field at(size_t i) const;
    bool missing() const;
    std::string str() const;
    std::string str_or(const std::string& otherwise) const { return missing() ? otherwise : str(); }
    bool flag(bool otherwise) const;
    long long integer() const;
    double number() const;
    const nlohmann::json& list() const;
    size_t length() const;  // a list's (else refused as list() refuses it)
    bool is_object() const;
    std::string type() const { return at("type").str(); }
    [[noreturn]] void unsupported() const { at("type").fail("\"" + type() + "\" is not supported"); }
};

// One row of a component's table: its "type" in tokenizer.json and the function that reads it
// (Read: a Reader<Part>, or one that takes the vocabulary too).
template <class Read>
struct TypeRow {
    const char* type;
    Read read;
};
template <class Part>
using Reader = Part (*)(const Field&);

// The row of `table` ({"TypeName", reader} rows) for the "type" of `f`, an object; another type
// is refused naming the field: "tokenizer.json: normalizer.type: \"X\" is not supported".
template <class Row, size_t N>
const Row& row_of(const Row (&table)[N], const Field& f) {
    if (!f.is_object()) f.fail("expected an object with a \"type\"");
    const std::string type = f.type();
    for (const Row& row : table)
        if (type == row.type) return row;
    f.unsupported();
}

// [SECTION] Pieces of text ---------------------------------------------------------------------

std::u32string u32(std::string_view s);  // unicode::decode: a bad byte is U+FFFD
std::string utf8(std::u32string_view s);
char32_t one_char(const Field& f);  // one character given as a string ("▁")

// A piece of text on its way through the pipeline; `at_start`: its first character is the
// original text's first (Metaspace's prepend_scheme "first" asks).
struct Piece {
    std::u32string text;
    bool at_start = false;
};
using Pieces = std::vector<Piece>;
using Span = std::pair<size_t, size_t>;  // [begin, end) in code points

// A Split's or Replace's pattern: {"String": s} (found literally) or {"Regex": r}.
struct Pattern {
    std::u32string literal;
    std::shared_ptr<const Regex> regex;
    std::vector<Span> find_all(std::u32string_view s) const;
};
Pattern read_pattern(const Field& f);

// tokenizers' SplitDelimiterBehavior: what becomes of the matches when a piece is split.
enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };
Behavior read_behavior(const Field& f);

// The pieces `piece` makes when split at `matches` (inverted: at what lies between them) with
// `behavior` (NormalizedString::split); empty ones dropped.
void split_piece(const Piece& piece, const std::vector<Span>& matches, bool invert, Behavior behavior, Pieces& out);
// Every character for which `is` holds, as a match of its own (a char predicate's Pattern).
std::vector<Span> char_matches(const std::u32string& s, const std::function<bool(char32_t)>& is);

bool is_punctuation(char32_t c);  // Rust's is_ascii_punctuation || unicode_categories' P*
bool is_numeric(char32_t c);      // Rust's char::is_numeric: Nd, Nl, No
bool is_word_char(char32_t c);    // Rust regex's \w
bool is_mark(char32_t c);         // Mn, Mc, Me

// GPT-2's bytes_to_unicode(): printable Latin-1 bytes stand for themselves, the others for
// U+0100 onwards in byte order.
std::array<char32_t, 256> byte_chars();

// [SECTION] The parts --------------------------------------------------------------------------
// Each kind of part is a function over pieces; tokenizer.json's are read by `type` from a table
// of {"TypeName", reader} rows (tokenizer_normalizers.cpp, …), the other readers' made by hand.

using Normalizer = std::function<void(Piece&)>;
using PreTokenizer = std::function<void(Pieces&)>;
using PostProcessor = std::function<void(std::vector<int>&)>;
using Decoder = std::function<void(std::string&)>;  // one token's label

// A "Sequence" of parts: those listed under `key`, each read by `read` (given `more` too: the
// vocabulary), run in order on the same value.
template <class Part, class Read, class... More>
Part sequence_of(const Field& f, const char* key, Read read, const More&... more) {
    std::vector<Part> parts;
    const Field list = f.at(key);
    for (size_t i = 0; i < list.length(); ++i) parts.push_back(read(list.at(i), more...));
    return [parts](auto& value) {
        for (const Part& part : parts) part(value);
    };
}
// A normalizer of the text's bytes, before they are read as characters: SentencePiece's.
using ByteNormalizer = std::function<std::string(std::string_view)>;

Normalizer read_normalizer(const Field& f);  // tokenizer.json's "normalizer"
PreTokenizer read_pre_tokenizer(const Field& f);
PostProcessor read_post_processor(const Field& f, const Vocab& vocab);
Decoder read_decoder(const Field& f);
Normalizer read_precompiled(const Field& f);  // "Precompiled" (tokenizer_charsmap.cpp)
// Replace's: every match of `pattern` replaced by `content` (a normalizer's, a decoder's).
Normalizer replace_normalizer(const Pattern& pattern, const std::u32string& content);

// BERT's basic tokenizer, as BertTokenizer (Python) runs it: the clean-up (U+0000, U+FFFD and
// control characters dropped, white space a space; with `chinese_chars` a space around every CJK
// character), then the words (split on white space; each lower-cased and its accents stripped as
// asked; then split around every punctuation mark).
Normalizer bert_clean_up(bool chinese_chars);
PreTokenizer bert_words(bool lower_case, bool strip_accents);
// GPT-2's pattern matched by hand, as gpt-3-encoder's JavaScript regex; then every UTF-8 byte as
// its character of GPT-2's alphabet.
PreTokenizer gpt2_split();
// SentencePiece's normalizer (sentencepiece's normalizer.cc) over the text's bytes.
struct SentencePieceNormalization {
    std::string charsmap;  // the precompiled charsmap (may be empty: no normalization)
    bool add_dummy_prefix = true, remove_extra_whitespaces = true, escape_whitespaces = true;
};
ByteNormalizer sentencepiece_normalizer(const SentencePieceNormalization& n, const std::string& file);
// ByteLevel's: GPT-2's characters back to bytes, read as UTF-8. tokenizers leaves a token with a
// character outside the alphabet as it is; `keep_others` (gpt-3-encoder) maps the others still.
Decoder byte_level_decoder(bool keep_others);
Decoder metaspace_decoder(char32_t replacement);  // the replacement ("▁") is a space
Decoder wordpiece_decoder(const std::string& prefix);  // "##s" → "s"

// A word model turns one word (UTF-8) into ids. It sees only its own vocabulary: the ids below
// `size`, not the added tokens appended after it.
struct WordModel {
    const Vocab& vocab;
    int size = 0;

    explicit WordModel(const Vocab& v) : vocab(v), size(static_cast<int>(v.tokens.size())) {}
    virtual ~WordModel() = default;
    virtual void encode(const std::string& word, std::vector<int>& out) const = 0;
    int find(std::string_view token) const {
        const int id = vocab.find(token, -1);
        return id < size ? id : -1;
    }
};
// The ids of byte fallback's "<0xNN>" tokens for every byte of `s`, or false when one is missing.
bool byte_fallback_ids(const WordModel& model, std::string_view s, std::vector<int>& out);

// The id of a model's "unk_token" (null: −1), refused when the vocabulary lacks it.
int unk_token_id(const Field& name, const Vocab& vocab);

// tokenizer.json's "model" of each type (tokenizer_bpe.cpp, …): `vocab` becomes its vocabulary.
std::unique_ptr<WordModel> read_bpe_model(const Field& f, Vocab& vocab);
std::unique_ptr<WordModel> read_unigram_model(const Field& f, Vocab& vocab);
std::unique_ptr<WordModel> read_wordpiece_model(const Field& f, Vocab& vocab);
std::unique_ptr<WordModel> read_wordlevel_model(const Field& f, Vocab& vocab);

// tokenizer.json's added tokens: found in the text before the model (tokenizer_added.cpp).
struct AddedToken {
    std::u32string content;  // for "normalized" ones: the content normalized
    int id = 0;
    bool special = false, single_word = false, lstrip = false, rstrip = false, normalized = false;
};
// The added tokens matched at one stage (raw or normalized): a trie of their contents.
class AddedMatcher {
public:
    void add(const AddedToken& t);
    bool empty() const { return tokens_.empty(); }
    // Pieces of `p` between the matches, and the matches' ids in their places: leftmost-longest
    // (added_vocabulary.rs find_matches); `text(piece)` for text, `id(id)` for a token.
    void split(const Piece& p, const std::function<void(Piece)>& text, const std::function<void(int)>& id) const;

private:
    struct Node {
        std::unordered_map<char32_t, size_t> children;
        int token = -1;
    };
    std::vector<Node> nodes_ = std::vector<Node>(1);
    std::vector<AddedToken> tokens_;
};
// The list's tokens; those the vocabulary lacks join it (tokenizers' ids, added_vocabulary.rs).
std::vector<AddedToken> read_added_tokens(const Field& list, Vocab& vocab, const Normalizer& normalizer);

}  // namespace attn::tok

namespace attn {

// [SECTION] The pipeline -----------------------------------------------------------------------
// Every part may be empty (none) but the model.

struct Tokenizer::Impl {
    TokenizerKind kind;
    tok::Vocab vocab;
    tok::ByteNormalizer byte_normalizer;
    tok::AddedMatcher raw_added, normalized_added;
    std::vector<bool> added;  // by id: an added token (its label is its content); may be short
    tok::Normalizer normalizer;
    tok::PreTokenizer pre_tokenizer;
    std::unique_ptr<tok::WordModel> model;
    tok::PostProcessor post_processor;
    bool post_adds = false;
    tok::Decoder decoder;

    Impl(TokenizerKind k, tok::Vocab v) : kind(k), vocab(std::move(v)) {}
    std::vector<int> encode(std::string_view text) const;  // never throws
    std::string text(int id) const;
};

}  // namespace attn
