// tokenizer_pre_tokenizers.cpp: pre-tokenizers, what splits a tokenizer's normalized text into
// the words its model sees (tokenizer_impl.hpp): tokenizer.json's, chosen by "type" from
// kPreTokenizers, and two the older files use: GPT-2's split (vocab.json + merges.txt), as
// gpt-3-encoder's JavaScript regex matches it, and BERT's words, as BertTokenizer (Python)
// splits them (vocab.txt).
//
// [SECTION] tokenizer.json's pre-tokenizers
// [SECTION] GPT-2's split
// [SECTION] BERT's words
#include "regex.hpp"
#include "tokenizer_impl.hpp"
#include "unicode.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace attn::tok {
namespace {

// [SECTION] tokenizer.json's pre-tokenizers ----------------------------------------------------

// Each piece split by `split(piece, out)`.
template <class Split>
void each_piece(Pieces& pieces, Split split) {
    Pieces out;
    out.reserve(pieces.size());
    for (const Piece& p : pieces) split(p, out);
    pieces = std::move(out);
}

// Every piece split at the characters for which `is` holds.
PreTokenizer split_by(std::function<bool(char32_t)> is, Behavior behavior) {
    return [=](Pieces& pieces) {
        each_piece(pieces, [&](const Piece& p, Pieces& out) { split_piece(p, char_matches(p.text, is), false, behavior, out); });
    };
}

PreTokenizer pre_tokenizer_sequence(const Field& f) { return sequence_of<PreTokenizer>(f, "pretokenizers", read_pre_tokenizer); }

PreTokenizer split(const Field& f) {
    const Pattern pattern = read_pattern(f.at("pattern"));
    const Behavior behavior = read_behavior(f.at("behavior"));
    const bool invert = f.at("invert").flag(false);
    return [=](Pieces& pieces) {
        each_piece(pieces, [&](const Piece& p, Pieces& out) { split_piece(p, pattern.find_all(p.text), invert, behavior, out); });
    };
}

constexpr const char* kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

PreTokenizer byte_level(const Field& f) {
    const bool prefix = f.at("add_prefix_space").flag(true), use_regex = f.at("use_regex").flag(true);
    const auto gpt2 = std::make_shared<const Regex>(kGpt2Pattern);
    return [=, bytes = byte_chars()](Pieces& pieces) {
        each_piece(pieces, [&](const Piece& p, Pieces& out) {
            Piece q = p;
            if (prefix && (q.text.empty() || q.text[0] != ' ')) q.text.insert(q.text.begin(), U' ');
            if (use_regex) split_piece(q, gpt2->find_all(q.text), false, Behavior::Isolated, out);
            else if (!q.text.empty()) out.push_back(std::move(q));
        });
        for (Piece& p : pieces) {  // every UTF-8 byte as its character
            std::u32string mapped;
            for (unsigned char b : utf8(p.text)) mapped += bytes[b];
            p.text = std::move(mapped);
        }
    };
}

PreTokenizer metaspace(const Field& f) {
    const char32_t replacement = one_char(f.at("replacement"));
    std::string scheme = f.at("prepend_scheme").str_or("always");
    if (f.at("add_prefix_space").flag(true) == false) {
        if (scheme != "never" && !f.at("prepend_scheme").missing()) f.at("add_prefix_space").fail("does not match prepend_scheme");
        scheme = "never";
    }
    if (scheme != "always" && scheme != "first" && scheme != "never") f.at("prepend_scheme").fail("expected always, first or never");
    const bool split = f.at("split").flag(true);
    return [=](Pieces& pieces) {
        each_piece(pieces, [&](const Piece& p, Pieces& out) {
            Piece q = p;
            std::replace(q.text.begin(), q.text.end(), U' ', replacement);
            const bool starts = !q.text.empty() && q.text[0] == replacement;
            if (!starts && (scheme == "always" || (scheme == "first" && q.at_start))) q.text.insert(q.text.begin(), replacement);
            if (!split) {
                out.push_back(std::move(q));
                return;
            }
            split_piece(q, char_matches(q.text, [&](char32_t c) { return c == replacement; }), false, Behavior::MergedWithNext, out);
        });
    };
}

PreTokenizer digits(const Field& f) {
    const bool individual = f.at("individual_digits").flag(false);
    return split_by(is_numeric, individual ? Behavior::Isolated : Behavior::Contiguous);
}

PreTokenizer whitespace_split(const Field&) { return split_by(unicode::is_white_space, Behavior::Removed); }

PreTokenizer whitespace(const Field&) {  // \w+|[^\w\s]+ kept, the rest removed: runs of word characters, runs of others
    return [](Pieces& pieces) {
        each_piece(pieces, [&](const Piece& p, Pieces& out) {
            const std::u32string& s = p.text;
            std::vector<Span> runs;
            for (size_t i = 0; i < s.size();) {
                if (unicode::is_white_space(s[i])) {
                    ++i;
                    continue;
                }
                const bool word = is_word_char(s[i]);
                size_t j = i + 1;
                while (j < s.size() && !unicode::is_white_space(s[j]) && is_word_char(s[j]) == word) ++j;
                runs.emplace_back(i, j);
                i = j;
            }
            split_piece(p, runs, true, Behavior::Removed, out);
        });
    };
}

PreTokenizer punctuation(const Field& f) {
    const Behavior behavior = f.at("behavior").missing() ? Behavior::Isolated : read_behavior(f.at("behavior"));
    return split_by(is_punctuation, behavior);
}

PreTokenizer bert_pre_tokenizer(const Field&) {
    const PreTokenizer space = split_by(unicode::is_white_space, Behavior::Removed), punct = split_by(is_punctuation, Behavior::Isolated);
    return [=](Pieces& p) { space(p), punct(p); };
}

PreTokenizer fixed_length(const Field& f) {  // pieces of `length` characters
    const long long length = f.at("length").missing() ? 5 : f.at("length").integer();
    if (length < 1) f.at("length").fail("expected a positive number");
    return [=](Pieces& pieces) {
        each_piece(pieces, [&](const Piece& p, Pieces& out) {
            for (size_t i = 0; i < p.text.size(); i += static_cast<size_t>(length))
                out.push_back({p.text.substr(i, static_cast<size_t>(length)), p.at_start && i == 0});
        });
    };
}

PreTokenizer char_delimiter_split(const Field& f) {
    const char32_t delimiter = one_char(f.at("delimiter"));
    return split_by([=](char32_t c) { return c == delimiter; }, Behavior::Removed);
}

const TypeRow<Reader<PreTokenizer>> kPreTokenizers[] = {
    {"Sequence", pre_tokenizer_sequence},
    {"Split", split},
    {"ByteLevel", byte_level},
    {"Metaspace", metaspace},
    {"Digits", digits},
    {"WhitespaceSplit", whitespace_split},
    {"Whitespace", whitespace},
    {"Punctuation", punctuation},
    {"BertPreTokenizer", bert_pre_tokenizer},
    {"FixedLength", fixed_length},
    {"CharDelimiterSplit", char_delimiter_split},
};

// [SECTION] GPT-2's split ----------------------------------------------------------------------
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// with JavaScript's \s (unicode::is_js_space), as gpt-3-encoder matches it.

// The end of the pre-token that starts at i (GPT-2's alternatives, in their order).
size_t pretoken_end(const std::u32string& s, size_t i) {
    const size_t n = s.size();
    auto letter = [&](size_t k) { return k < n && unicode::is_letter(s[k]); };
    auto number = [&](size_t k) { return k < n && unicode::is_number(s[k]); };
    auto space = [&](size_t k) { return k < n && unicode::is_js_space(s[k]); };
    auto other = [&](size_t k) { return k < n && !space(k) && !letter(k) && !number(k); };
    if (s[i] == '\'') {  // 's 't 're 've 'm 'll 'd
        constexpr const char32_t* kSuffixes[] = {U"s", U"t", U"re", U"ve", U"m", U"ll", U"d"};
        for (const char32_t* suffix : kSuffixes) {
            const std::u32string_view x(suffix);
            if (s.compare(i + 1, x.size(), x) == 0) return i + 1 + x.size();
        }
    }
    const size_t after_space = s[i] == ' ' ? i + 1 : i;
    for (auto cls : {+[](const std::u32string& t, size_t k) { return k < t.size() && unicode::is_letter(t[k]); },
                     +[](const std::u32string& t, size_t k) { return k < t.size() && unicode::is_number(t[k]); }}) {
        if (cls(s, after_space)) {
            size_t j = after_space;
            while (cls(s, j)) ++j;
            return j;
        }
    }
    if (other(after_space)) {
        size_t j = after_space;
        while (other(j)) ++j;
        return j;
    }
    size_t j = i;  // \s+(?!\S), else \s+
    while (space(j)) ++j;
    if (j < n && j - i > 1) return j - 1;  // leave the last space to the next piece
    return j;
}

}  // namespace

PreTokenizer read_pre_tokenizer(const Field& f) { return row_of(kPreTokenizers, f).read(f); }

PreTokenizer gpt2_split() {
    return [bytes = byte_chars()](Pieces& pieces) {
        Pieces out;
        for (const Piece& p : pieces)
            for (size_t i = 0; i < p.text.size();) {
                const size_t end = pretoken_end(p.text, i);
                Piece word;  // every UTF-8 byte as its character
                for (unsigned char b : utf8(std::u32string_view(p.text).substr(i, end - i))) word.text += bytes[b];
                out.push_back(std::move(word));
                i = end;
            }
        pieces = std::move(out);
    };
}

// [SECTION] BERT's words -----------------------------------------------------------------------
// BertTokenizer's whitespace_tokenize (str.split()), then each word's _run_strip_accents (after
// lower(), as asked) and _run_split_on_punc.

PreTokenizer bert_words(bool lower_case, bool strip_accents) {
    return [=](Pieces& pieces) {
        Pieces out;
        auto split_word = [&](const std::u32string& word) {  // case, accents, punctuation
            std::string folded;
            for (char32_t c : word) {
                if (lower_case) unicode::append_lower(folded, c);
                else unicode::append_utf8(folded, c);
            }
            std::u32string chars = unicode::decode(folded);
            if (strip_accents) {
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
                if (!run.empty()) out.push_back({std::move(run)}), run.clear();
                out.push_back({std::u32string(1, c)});
            }
            if (!run.empty()) out.push_back({std::move(run)});
        };
        for (const Piece& p : pieces) {
            std::u32string word;
            for (char32_t c : p.text) {
                if (c == ' ' || c == 0x2028 || c == 0x2029) {  // str.split(): what white space the clean-up left
                    if (!word.empty()) split_word(word), word.clear();
                } else {
                    word += c;
                }
            }
            if (!word.empty()) split_word(word);
        }
        pieces = std::move(out);
    };
}

}  // namespace attn::tok
