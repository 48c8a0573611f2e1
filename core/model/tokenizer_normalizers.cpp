// tokenizer_normalizers.cpp: normalizers, what a tokenizer's pipeline does to the text first
// (tokenizer_impl.hpp): tokenizer.json's, chosen by "type" from kNormalizers (the Precompiled
// charsmap's in tokenizer_charsmap.cpp), and BERT's clean-up as BertTokenizer (Python) does it
// for vocab.txt. Each changes a piece's characters and keeps `at_start` true only while its
// first character stays first.
//
// [SECTION] Characters
// [SECTION] tokenizer.json's normalizers
// [SECTION] BERT's clean-up (vocab.txt)
#include "regex.hpp"
#include "tokenizer_impl.hpp"
#include "unicode.hpp"

#include <nlohmann/json.hpp>

namespace attn::tok {
namespace {

// [SECTION] Characters -------------------------------------------------------------------------

// Each character replaced by what `map` appends (nothing: removed).
template <class Map>
void map_chars(Piece& p, Map map) {
    std::u32string out;
    out.reserve(p.text.size());
    for (size_t i = 0; i < p.text.size(); ++i) {
        const size_t before = out.size();
        map(out, p.text[i]);
        if (i == 0 && out.size() == before) p.at_start = false;  // the first character went: the rest start later
    }
    p.text = std::move(out);
}

void lowercase(Piece& p) {
    map_chars(p, [](std::u32string& out, char32_t c) {
        if (c < 0x80) {
            out += c >= 'A' && c <= 'Z' ? c + 32 : c;
            return;
        }
        std::string l;
        unicode::append_lower(l, c);
        out += u32(l);
    });
}

bool is_cjk_bert(char32_t c) {  // BertNormalizer's is_chinese_char (tokenizers' ranges)
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

Normalizer bert_normalizer(const Field& f) {  // tokenizers' (Rust)
    const bool clean = f.at("clean_text").flag(true), chinese = f.at("handle_chinese_chars").flag(true);
    const bool lower = f.at("lowercase").flag(true);
    const bool strip = f.at("strip_accents").flag(lower);  // null: follows lowercase
    return [=](Piece& p) {
        if (clean)
            map_chars(p, [](std::u32string& out, char32_t c) {
                const bool ws = c == '\t' || c == '\n' || c == '\r' || unicode::is_white_space(c);
                const auto k = unicode::category(c);  // unicode_categories' is_other: Cc, Cf, Cs, Co (not Cn)
                const bool control = !ws && k >= unicode::Category::Cc && k != unicode::Category::Cn;
                if (c == 0 || c == 0xFFFD || control) return;
                out += ws ? char32_t(' ') : c;
            });
        if (chinese)
            map_chars(p, [](std::u32string& out, char32_t c) {
                if (is_cjk_bert(c)) out += U' ', out += c, out += U' ';
                else out += c;
            });
        if (strip) {
            p.text = unicode::normalize(p.text, unicode::Form::NFD);
            map_chars(p, [](std::u32string& out, char32_t c) {
                if (unicode::category(c) != unicode::Category::Mn) out += c;
            });
        }
        if (lower) lowercase(p);
    };
}

// [SECTION] tokenizer.json's normalizers -------------------------------------------------------

Normalizer normalizer_sequence(const Field& f) { return sequence_of<Normalizer>(f, "normalizers", read_normalizer); }

template <unicode::Form kForm>
Normalizer unicode_form(const Field&) {  // NFD, NFKD, NFC, NFKC
    return [](Piece& p) { p.text = unicode::normalize(p.text, kForm); };
}

Normalizer lowercase_normalizer(const Field&) { return lowercase; }

Normalizer strip_accents(const Field&) {
    return [](Piece& p) {
        map_chars(p, [](std::u32string& out, char32_t c) {
            if (!is_mark(c)) out += c;
        });
    };
}

Normalizer strip(const Field& f) {
    const bool left = f.at("strip_left").flag(true), right = f.at("strip_right").flag(true);
    return [=](Piece& p) {
        size_t b = 0, e = p.text.size();
        if (left)
            while (b < e && unicode::is_white_space(p.text[b])) ++b;
        if (right)
            while (e > b && unicode::is_white_space(p.text[e - 1])) --e;
        if (b > 0 && b < p.text.size()) p.at_start = false;
        p.text = p.text.substr(b, e - b);
    };
}

Normalizer prepend(const Field& f) {
    const std::u32string prefix = u32(f.at("prepend").str());
    return [=](Piece& p) {
        if (!p.text.empty()) p.text = prefix + p.text;
    };
}

Normalizer replace(const Field& f) { return replace_normalizer(read_pattern(f.at("pattern")), u32(f.at("content").str())); }

Normalizer byte_level_normalizer(const Field&) {  // every UTF-8 byte as GPT-2's character for it
    return [bytes = byte_chars()](Piece& p) {
        std::u32string mapped;
        for (unsigned char b : utf8(p.text)) mapped += bytes[b];
        p.text = std::move(mapped);
    };
}

Normalizer nmt(const Field&) {  // normalizers/unicode.rs do_nmt: controls dropped, odd spaces made ' '
    return [](Piece& p) {
        map_chars(p, [](std::u32string& out, char32_t c) {
            if ((c >= 0x01 && c <= 0x08) || c == 0x0B || (c >= 0x0E && c <= 0x1F) || c == 0x7F || c == 0x8F || c == 0x9F) return;
            const bool space = c == 0x09 || c == 0x0A || c == 0x0C || c == 0x0D || c == 0x1680 || (c >= 0x200B && c <= 0x200F) ||
                               c == 0x2028 || c == 0x2029 || c == 0x2581 || c == 0xFEFF || c == 0xFFFD;
            out += space ? char32_t(' ') : c;
        });
    };
}

const TypeRow<Reader<Normalizer>> kNormalizers[] = {
    {"Sequence", normalizer_sequence},
    {"NFD", unicode_form<unicode::Form::NFD>},
    {"NFKD", unicode_form<unicode::Form::NFKD>},
    {"NFC", unicode_form<unicode::Form::NFC>},
    {"NFKC", unicode_form<unicode::Form::NFKC>},
    {"Lowercase", lowercase_normalizer},
    {"StripAccents", strip_accents},
    {"Strip", strip},
    {"Prepend", prepend},
    {"Replace", replace},
    {"BertNormalizer", bert_normalizer},
    {"ByteLevel", byte_level_normalizer},
    {"Nmt", nmt},
    {"Precompiled", read_precompiled},
};

}  // namespace

Normalizer read_normalizer(const Field& f) { return row_of(kNormalizers, f).read(f); }

Normalizer replace_normalizer(const Pattern& pattern, const std::u32string& content) {
    return [=](Piece& p) {
        const std::vector<Span> matches = pattern.find_all(p.text);
        if (matches.empty()) return;
        if (content.empty() && matches.front().first == 0 && matches.front().second > 0) p.at_start = false;
        std::u32string out;
        size_t prev = 0;
        for (const auto& [b, e] : matches) {
            out.append(p.text, prev, b - prev);
            out += content;
            prev = e;
        }
        out.append(p.text, prev);
        p.text = std::move(out);
    };
}

// [SECTION] BERT's clean-up (vocab.txt) --------------------------------------------------------
// BertTokenizer's _clean_text and _tokenize_chinese_chars: Python's rules, not tokenizers' above.

Normalizer bert_clean_up(bool chinese_chars) {
    return [=](Piece& p) {
        map_chars(p, [&](std::u32string& out, char32_t c) {
            if (c == 0 || c == 0xFFFD || unicode::is_bert_control(c)) return;
            const bool cjk = chinese_chars && unicode::is_cjk(c);
            if (cjk) out += ' ';
            out += unicode::is_bert_whitespace(c) ? char32_t(' ') : c;
            if (cjk) out += ' ';
        });
    };
}

}  // namespace attn::tok
