// tokenizer_wordpiece.cpp: BERT's tokenizer (vocab.txt, or tokenizer.json's "WordPiece"), as
// Hugging Face's BertTokenizer does it:
//   1. clean-up: U+0000, U+FFFD and control characters dropped, white space made a space
//   2. a space around every CJK character (tokenize_chinese_chars)
//   3. split on white space; each word lower-cased (str.lower()) and its accents stripped (NFD,
//      nonspacing marks dropped) as the options say; then split around every punctuation mark
//   4. WordPiece: the longest vocabulary entry from the start, then "##" + the longest from
//      there, …; a word with a part that matches nothing, or longer than max_chars_per_word
//      characters, is the unknown token
#include "tokenizer_impl.hpp"
#include "unicode.hpp"

#include <nlohmann/json.hpp>

namespace attn {
namespace {

struct WordPiece final : Tokenizer::Impl {
    WordPieceOptions options;
    int unk = -1;

    WordPiece(Vocab v, WordPieceOptions o) : Impl(TokenizerKind::WordPiece, std::move(v)), options(std::move(o)) {}

    // [steps 1–3] The words and punctuation marks of `text`, as code points.
    std::vector<std::u32string> basic_tokens(std::string_view text) const {
        std::u32string cleaned;
        for (char32_t c : unicode::decode(text)) {
            if (c == 0 || c == 0xFFFD || unicode::is_bert_control(c)) continue;
            const bool cjk = options.chinese_chars && unicode::is_cjk(c);
            if (cjk) cleaned += ' ';
            cleaned += unicode::is_bert_whitespace(c) ? char32_t(' ') : c;
            if (cjk) cleaned += ' ';
        }
        std::vector<std::u32string> out;
        auto split_words = [&](const std::u32string& word) {  // step 3: case, accents, punctuation
            std::string folded;
            for (char32_t c : word) {
                if (options.lower_case) unicode::append_lower(folded, c);
                else unicode::append_utf8(folded, c);
            }
            std::u32string chars = unicode::decode(folded);
            if (options.strip_accents) {
                std::string nfd;
                for (char32_t c : chars) unicode::append_nfd(nfd, c);
                chars.clear();
                for (char32_t c : unicode::decode(nfd))
                    if (!unicode::is_nonspacing_mark(c)) chars += c;
            }
            std::u32string run;
            for (char32_t c : chars) {
                if (!unicode::is_bert_punctuation(c)) {
                    run += c;
                    continue;
                }
                if (!run.empty()) out.push_back(std::move(run)), run.clear();
                out.push_back(std::u32string(1, c));
            }
            if (!run.empty()) out.push_back(std::move(run));
        };
        std::u32string word;
        for (char32_t c : cleaned) {
            if (c == ' ' || c == 0x2028 || c == 0x2029) {  // str.split(): what white space the clean-up left
                if (!word.empty()) split_words(word), word.clear();
            } else {
                word += c;
            }
        }
        if (!word.empty()) split_words(word);
        return out;
    }

    std::vector<int> encode(std::string_view text) const override {
        std::vector<int> out;
        for (const std::u32string& word : basic_tokens(text)) {
            if (static_cast<int>(word.size()) > options.max_chars_per_word) {
                out.push_back(unk);
                continue;
            }
            // [step 4] longest match first, from each end of the last piece
            std::vector<int> pieces;
            bool bad = false;
            for (size_t start = 0; start < word.size() && !bad;) {
                int found = -1;
                size_t end = word.size();
                for (; end > start; --end) {
                    std::string piece = start > 0 ? "##" : "";
                    for (size_t k = start; k < end; ++k) unicode::append_utf8(piece, word[k]);
                    if ((found = vocab.find(piece, -1)) >= 0) break;
                }
                if (found < 0) bad = true;
                else pieces.push_back(found), start = end;
            }
            if (bad) out.push_back(unk);
            else out.insert(out.end(), pieces.begin(), pieces.end());
        }
        return out;
    }
};

}  // namespace

std::shared_ptr<const Tokenizer::Impl> make_wordpiece(Vocab vocab, const WordPieceOptions& options, const std::string& file) {
    auto wp = std::make_shared<WordPiece>(std::move(vocab), options);
    wp->unk = wp->vocab.find(options.unk, -1);
    if (wp->unk < 0) throw ModelError(file, "", "has no unknown token \"" + options.unk + "\"");
    if (options.max_chars_per_word < 1) throw ModelError(file, "max_input_chars_per_word", "expected a positive number");
    return wp;
}

Tokenizer read_wordpiece(std::string_view vocab_txt, const std::string& file, const WordPieceOptions& options) {
    Vocab vocab;
    for (size_t pos = 0; pos < vocab_txt.size();) {  // one token a line, as Python's readlines()
        size_t end = vocab_txt.find('\n', pos);
        if (end == std::string_view::npos) end = vocab_txt.size();
        vocab.add(std::string(vocab_txt.substr(pos, end - pos)));
        pos = end + 1;
    }
    if (vocab.tokens.empty()) throw ModelError(file, "", "holds no token");
    return Tokenizer(make_wordpiece(std::move(vocab), options, file));
}

}  // namespace attn
