// tokenizer_wordpiece.cpp: the WordPiece word model, for tokenizer.json's "WordPiece" and BERT's
// vocab.txt alike, as tokenizers (models/wordpiece/mod.rs) and BertTokenizer run it:
//   1. a word longer than max_input_chars_per_word characters is the unknown token
//   2. the longest vocabulary entry from the start, then the continuing prefix ("##") + the
//      longest from there, …; a word with a part that matches nothing is the unknown token
// BERT's vocab.txt makes its pipeline with BertTokenizer's basic tokenizer (Python's rules:
// tokenizer_normalizers.cpp, tokenizer_pre_tokenizers.cpp) and this model.
//
// [SECTION] The model
// [SECTION] tokenizer.json's "WordPiece"
// [SECTION] BERT's vocab.txt
#include "tokenizer_impl.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace attn::tok {
namespace {

// [SECTION] The model --------------------------------------------------------------------------

struct WordPieceModel final : WordModel {
    int unk = -1;
    std::string prefix = "##";
    size_t max_chars = 100;

    using WordModel::WordModel;

    // `word` is UTF-8 as the pipeline writes it: a character starts at every byte that does not
    // continue one (10xxxxxx).
    static bool starts_char(char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }

    void encode(const std::string& word, std::vector<int>& out) const override {
        const size_t chars = static_cast<size_t>(std::count_if(word.begin(), word.end(), starts_char));
        if (chars > max_chars) return out.push_back(unk);  // [pass 1]
        const size_t first = out.size();
        std::string piece;
        for (size_t start = 0; start < word.size();) {  // [pass 2]
            int found = -1;
            size_t end = word.size();
            for (; end > start; --end) {
                if (end < word.size() && !starts_char(word[end])) continue;
                const std::string_view part = std::string_view(word).substr(start, end - start);
                found = start == 0 ? find(part) : find(piece.assign(prefix).append(part));
                if (found >= 0) break;
            }
            if (found < 0) {
                out.resize(first);
                return out.push_back(unk);
            }
            out.push_back(found);
            start = end;
        }
    }
};

}  // namespace

// [SECTION] tokenizer.json's "WordPiece" -------------------------------------------------------

std::unique_ptr<WordModel> read_wordpiece_model(const Field& f, Vocab& vocab) {
    const Field unk_token = f.at("unk_token");
    vocab = read_vocab_object(f.at("vocab").j, f.file, f.at("vocab").path);
    auto m = std::make_unique<WordPieceModel>(vocab);
    m->unk = unk_token_id(unk_token.missing() ? Field{Json("[UNK]"), unk_token.path, f.file} : unk_token, vocab);
    m->prefix = f.at("continuing_subword_prefix").str_or("##");
    const Field max = f.at("max_input_chars_per_word");
    if (!max.missing()) {
        if (max.integer() < 1) max.fail("expected a positive number");
        m->max_chars = static_cast<size_t>(max.integer());
    }
    return m;
}

}  // namespace attn::tok

// [SECTION] BERT's vocab.txt -------------------------------------------------------------------

namespace attn {

Tokenizer read_wordpiece(std::string_view vocab_txt, const std::string& file, const WordPieceOptions& options) {
    using namespace tok;
    Vocab vocab;
    for (size_t pos = 0; pos < vocab_txt.size();) {  // one token a line, as Python's readlines()
        size_t end = vocab_txt.find('\n', pos);
        if (end == std::string_view::npos) end = vocab_txt.size();
        vocab.add(std::string(vocab_txt.substr(pos, end - pos)));
        pos = end + 1;
    }
    if (vocab.tokens.empty()) throw ModelError(file, "", "holds no token");
    auto p = std::make_shared<Tokenizer::Impl>(TokenizerKind::WordPiece, std::move(vocab));
    auto m = std::make_unique<WordPieceModel>(p->vocab);
    m->unk = m->find(options.unk);
    if (m->unk < 0) throw ModelError(file, "", "has no unknown token \"" + options.unk + "\"");
    if (options.max_chars_per_word < 1) throw ModelError(file, "max_input_chars_per_word", "expected a positive number");
    m->max_chars = static_cast<size_t>(options.max_chars_per_word);
    p->normalizer = bert_clean_up(options.chinese_chars);
    p->pre_tokenizer = bert_words(options.lower_case, options.strip_accents);
    p->model = std::move(m);
    p->decoder = wordpiece_decoder("##");
    return Tokenizer(std::move(p));
}

}  // namespace attn
