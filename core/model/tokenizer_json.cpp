// tokenizer_json.cpp: tokenizer.json as Hugging Face's tokenizers (0.2x, tokenizers/src/) runs it:
//   1. added tokens whose "normalized" is false are found in the raw text (leftmost, longest
//      first; "lstrip" / "rstrip" take the white space beside them into the token, "single_word"
//      only between non-word characters); each stretch of text between them goes on alone
//   2. the normalizer, on each stretch; then the normalized added tokens found in its result
//   3. the pre-tokenizer splits what is left into words (ByteLevel maps bytes to GPT-2's
//      printable alphabet, Metaspace spaces to "▁")
//   4. the model turns each word into ids: BPE (byte fallback, ignore_merges, fuse_unk),
//      Unigram, WordPiece or WordLevel
//   5. encode_with_specials: the post-processor's ids around them (TemplateProcessing, …)
// Token labels (Tokenizer::text) come from the decoder. A component, option or pattern this file
// does not implement is refused with ModelError naming its JSON field: never a silently
// different tokenization. Not applied: "truncation" and "padding" (they shape batches; attnviz
// encodes one text and refuses one longer than the model's positions itself), BPE dropout
// (random; refused unless 0), the UnicodeScripts pre-tokenizer and the CTC decoder (refused).
//
// [SECTION] Reading JSON
// [SECTION] Patterns and splits
// [SECTION] Normalizers
// [SECTION] Pre-tokenizers
// [SECTION] Models
// [SECTION] Added tokens
// [SECTION] Post-processors
// [SECTION] Decoders
// [SECTION] The pipeline
// [SECTION] read_tokenizer_json
#include "regex.hpp"
#include "tokenizer_impl.hpp"
#include "unicode.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <queue>
#include <stdexcept>

namespace attn {
namespace {

using Json = nlohmann::json;

// [SECTION] Reading JSON ------------------------------------------------------------------------

// A JSON value with its path in the file ("pre_tokenizer.pretokenizers[1]"), for messages.
struct Field {
    const Json& j;
    std::string path;
    const std::string& file;

    [[noreturn]] void fail(const std::string& what) const { throw ModelError(file, path, what); }
    Field at(const std::string& key) const {
        static const Json kNull;  // immutable: what a missing key reads as
        if (!j.is_object()) fail("expected an object");
        const auto it = j.find(key);
        return {it == j.end() ? kNull : *it, path.empty() ? key : path + "." + key, file};
    }
    Field at(size_t i) const { return {j[i], path + "[" + std::to_string(i) + "]", file}; }
    bool missing() const { return j.is_null(); }
    std::string str() const {
        if (!j.is_string()) fail("expected a string");
        return j.get<std::string>();
    }
    std::string str_or(const std::string& otherwise) const { return missing() ? otherwise : str(); }
    bool flag(bool otherwise) const {
        if (missing()) return otherwise;
        if (!j.is_boolean()) fail("expected true or false");
        return j.get<bool>();
    }
    long long integer() const {
        if (!j.is_number_integer()) fail("expected a whole number");
        return j.get<long long>();
    }
    double number() const {
        if (!j.is_number()) fail("expected a number");
        return j.get<double>();
    }
    const Json& list() const {
        if (!j.is_array()) fail("expected a list");
        return j;
    }
    std::string type() const { return at("type").str(); }
    [[noreturn]] void unsupported() const { at("type").fail("\"" + type() + "\" is not supported"); }
};

std::u32string u32(std::string_view s) { return unicode::decode(s); }
std::string utf8(std::u32string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char32_t c : s) unicode::append_utf8(out, c);
    return out;
}

// One character given as a string ("▁"): Metaspace's replacement, Strip's content.
char32_t one_char(const Field& f) {
    const std::u32string s = u32(f.str());
    if (s.size() != 1) f.fail("expected one character");
    return s[0];
}

// [SECTION] Patterns and splits -----------------------------------------------------------------

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

    std::vector<Span> find_all(std::u32string_view s) const {
        if (regex) return regex->find_all(s);
        std::vector<Span> out;
        for (size_t at = s.find(literal); at != std::u32string_view::npos; at = s.find(literal, at + literal.size()))
            out.emplace_back(at, at + literal.size());
        return out;
    }
};

Pattern read_pattern(const Field& f) {
    Pattern p;
    if (f.j.is_object() && f.j.contains("String")) {
        p.literal = u32(f.at("String").str());
        if (p.literal.empty()) f.at("String").fail("an empty pattern is not supported");
    } else if (f.j.is_object() && f.j.contains("Regex")) {
        try {
            p.regex = std::make_shared<const Regex>(f.at("Regex").str());
        } catch (const std::invalid_argument& e) {
            f.at("Regex").fail(e.what());
        }
    } else {
        f.fail("expected {\"String\": …} or {\"Regex\": …}");
    }
    return p;
}

// tokenizers' SplitDelimiterBehavior: what becomes of the matches when a piece is split.
enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

Behavior read_behavior(const Field& f) {
    const std::string b = f.str();
    if (b == "Removed") return Behavior::Removed;
    if (b == "Isolated") return Behavior::Isolated;
    if (b == "MergedWithPrevious") return Behavior::MergedWithPrevious;
    if (b == "MergedWithNext") return Behavior::MergedWithNext;
    if (b == "Contiguous") return Behavior::Contiguous;
    f.fail("\"" + b + "\" is not a split behavior (Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous)");
}

struct Segment {
    size_t begin, end;
    bool match;
};

// The piece cut at its matches: the stretches between them and the matches (pattern.rs).
std::vector<Segment> segments(size_t length, const std::vector<Span>& matches, bool invert) {
    std::vector<Segment> out;
    size_t prev = 0;
    for (const auto& [b, e] : matches) {
        if (prev != b) out.push_back({prev, b, invert});
        out.push_back({b, e, !invert});
        prev = e;
    }
    if (prev != length) out.push_back({prev, length, invert});
    return out;
}

// The pieces a split with `behavior` makes (NormalizedString::split); empty ones dropped.
void split_piece(const Piece& piece, std::vector<Segment> segs, Behavior behavior, Pieces& out) {
    std::vector<Segment> kept;
    bool previous_match = false;
    switch (behavior) {
        case Behavior::Isolated: kept = std::move(segs); break;
        case Behavior::Removed:
            for (const Segment& s : segs)
                if (!s.match) kept.push_back(s);
            break;
        case Behavior::Contiguous:
            for (const Segment& s : segs) {
                if (!kept.empty() && s.match == previous_match) kept.back().end = s.end;
                else kept.push_back(s);
                previous_match = s.match;
            }
            break;
        case Behavior::MergedWithPrevious:
            for (const Segment& s : segs) {
                if (s.match && !previous_match && !kept.empty()) kept.back().end = s.end;
                else kept.push_back(s);
                previous_match = s.match;
            }
            break;
        case Behavior::MergedWithNext:
            for (size_t i = segs.size(); i-- > 0;) {
                const Segment& s = segs[i];
                if (s.match && !previous_match && !kept.empty()) kept.back().begin = s.begin;
                else kept.push_back(s);
                previous_match = s.match;
            }
            std::reverse(kept.begin(), kept.end());
            break;
    }
    for (const Segment& s : kept)
        if (s.end > s.begin) out.push_back({piece.text.substr(s.begin, s.end - s.begin), piece.at_start && s.begin == 0});
}

// Every character for which `is` holds, as a match of its own (a char predicate's Pattern).
template <class Predicate>
std::vector<Span> char_matches(const std::u32string& s, Predicate is) {
    std::vector<Span> out;
    for (size_t i = 0; i < s.size(); ++i)
        if (is(s[i])) out.emplace_back(i, i + 1);
    return out;
}

// Rust's char::is_ascii_punctuation || unicode_categories' is_punctuation (P*).
bool is_punctuation(char32_t c) {
    if (c < 0x80) return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126);
    const auto k = unicode::category(c);
    return k >= unicode::Category::Pc && k <= unicode::Category::Po;
}
bool is_numeric(char32_t c) {  // Rust's char::is_numeric: Nd, Nl, No
    const auto k = unicode::category(c);
    return k == unicode::Category::Nd || k == unicode::Category::Nl || k == unicode::Category::No;
}
// Rust regex's \w (the Whitespace pre-tokenizer's, single_word's): Alphabetic (letters, Nl, and
// the Other_Alphabetic symbols: circled and squared Latin letters), marks, decimal digits,
// connector punctuation and the joiners U+200C, U+200D.
bool is_word_char(char32_t c) {
    using unicode::Category;
    const Category k = unicode::category(c);
    return k <= Category::Lo || k == Category::Mn || k == Category::Mc || k == Category::Me || k == Category::Nd ||
           k == Category::Nl || k == Category::Pc || c == 0x200C || c == 0x200D || (c >= 0x24B6 && c <= 0x24E9) ||
           (c >= 0x1F130 && c <= 0x1F149) || (c >= 0x1F150 && c <= 0x1F169) || (c >= 0x1F170 && c <= 0x1F189);
}

// GPT-2's bytes_to_unicode(): printable Latin-1 bytes stand for themselves, the others for
// U+0100 onwards in byte order.
std::array<char32_t, 256> byte_chars() {
    std::array<char32_t, 256> out{};
    char32_t n = 0;
    for (int b = 0; b < 256; ++b) {
        const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
        out[static_cast<size_t>(b)] = printable ? static_cast<char32_t>(b) : 256 + n++;
    }
    return out;
}

// [SECTION] Normalizers -------------------------------------------------------------------------

using Normalizer = std::function<void(Piece&)>;

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

bool is_mark(char32_t c) {
    const auto k = unicode::category(c);
    return k == unicode::Category::Mn || k == unicode::Category::Mc || k == unicode::Category::Me;
}

bool is_cjk_bert(char32_t c) {  // BertNormalizer's is_chinese_char (tokenizers' ranges)
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

Normalizer bert_normalizer(const Field& f) {
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

Normalizer replace(const Pattern& pattern, const std::u32string& content) {
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

// Where extended grapheme clusters break (UAX #29, as unicode-segmentation), closely enough for
// the Precompiled normalizer: never before a mark, a joiner, a variation selector, an emoji
// modifier or tag; CR LF, Hangul syllable sequences, regional indicator pairs, ZWJ + emoji and
// Indic consonant + virama + consonant (GB9c) stay together.
bool grapheme_break(const std::u32string& s, size_t i, size_t cluster_start) {
    const char32_t a = s[i - 1], b = s[i];
    if (a == '\r' && b == '\n') return false;
    if (a == '\r' || a == '\n' || b == '\r' || b == '\n') return true;
    const auto kb = unicode::category(b);
    if (kb == unicode::Category::Mn || kb == unicode::Category::Mc || kb == unicode::Category::Me || b == 0x200C || b == 0x200D ||
        b == 0xFF9E || b == 0xFF9F || (b >= 0x1F3FB && b <= 0x1F3FF) || (b >= 0xE0020 && b <= 0xE007F))
        return false;
    auto jamo = [](char32_t c) {  // 'L', 'V', 'T', 'S' (LV), 'X' (LVT), or 0
        if ((c >= 0x1100 && c <= 0x115F) || (c >= 0xA960 && c <= 0xA97C)) return 'L';
        if ((c >= 0x1160 && c <= 0x11A7) || (c >= 0xD7B0 && c <= 0xD7C6)) return 'V';
        if ((c >= 0x11A8 && c <= 0x11FF) || (c >= 0xD7CB && c <= 0xD7FB)) return 'T';
        if (c >= 0xAC00 && c <= 0xD7A3) return (c - 0xAC00) % 28 == 0 ? 'S' : 'X';
        return '\0';
    };
    const char ja = jamo(a), jb = jamo(b);
    if (ja == 'L' && (jb == 'L' || jb == 'V' || jb == 'S' || jb == 'X')) return false;
    if ((ja == 'S' || ja == 'V') && (jb == 'V' || jb == 'T')) return false;
    if ((ja == 'X' || ja == 'T') && jb == 'T') return false;
    auto regional = [](char32_t c) { return c >= 0x1F1E6 && c <= 0x1F1FF; };
    if (regional(a) && regional(b)) {
        size_t run = 0;  // a pair joins: an odd number of indicators before b
        for (size_t k = i; k > cluster_start && regional(s[k - 1]); --k) ++run;
        return run % 2 == 0;
    }
    if (a == 0x200D && (unicode::category(b) == unicode::Category::So || (b >= 0x1F000 && b <= 0x1FAFF))) return false;
    auto virama = [](char32_t c) { return c == 0x94D || c == 0x9CD || c == 0xACD || c == 0xB4D || c == 0xC4D || c == 0xD4D; };
    if (kb == unicode::Category::Lo && b >= 0x900 && b <= 0xD7F)
        for (size_t k = i; k > cluster_start; --k) {
            if (virama(s[k - 1])) return false;
            if (!is_mark(s[k - 1]) && s[k - 1] != 0x200D) break;
        }
    return true;
}

// spm_precompiled's normalize, as tokenizers runs it: each grapheme cluster under 6 bytes
// replaced whole by the charsmap's value for the shortest key that is a prefix of it; a
// longer cluster character by character the same way.
void precompiled(const Charsmap& charsmap, Piece& p) {
    std::u32string out;
    const std::u32string& s = p.text;
    auto transform = [&](std::u32string_view chunk) {  // false: no key is a prefix of it
        const std::string bytes = utf8(chunk);
        std::string_view replacement;
        if (!charsmap.shortest(bytes, replacement)) return false;
        out += u32(replacement);
        return true;
    };
    for (size_t start = 0; start < s.size();) {
        size_t end = start + 1;
        while (end < s.size() && !grapheme_break(s, end, start)) ++end;
        const std::u32string_view cluster(s.data() + start, end - start);
        const size_t before = out.size();
        if (utf8(cluster).size() >= 6 || !transform(cluster))
            for (size_t k = 0; k < cluster.size(); ++k)
                if (!transform(cluster.substr(k, 1))) out += cluster[k];
        if (start == 0 && out.size() == before) p.at_start = false;
        start = end;
    }
    p.text = std::move(out);
}

Normalizer read_normalizer(const Field& f);

Normalizer normalizer_of(const Field& f) {
    const std::string type = f.type();
    if (type == "Sequence") {
        std::vector<Normalizer> parts;
        const Field list = f.at("normalizers");
        for (size_t i = 0; i < list.list().size(); ++i) parts.push_back(read_normalizer(list.at(i)));
        return [parts](Piece& p) {
            for (const Normalizer& n : parts) n(p);
        };
    }
    for (auto [name, form] : {std::pair("NFD", unicode::Form::NFD), std::pair("NFKD", unicode::Form::NFKD),
                              std::pair("NFC", unicode::Form::NFC), std::pair("NFKC", unicode::Form::NFKC)})
        if (type == name) return [form = form](Piece& p) { p.text = unicode::normalize(p.text, form); };
    if (type == "Lowercase") return lowercase;
    if (type == "StripAccents")
        return [](Piece& p) {
            map_chars(p, [](std::u32string& out, char32_t c) {
                if (!is_mark(c)) out += c;
            });
        };
    if (type == "Strip") {
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
    if (type == "Prepend") {
        const std::u32string prepend = u32(f.at("prepend").str());
        return [=](Piece& p) {
            if (!p.text.empty()) p.text = prepend + p.text;
        };
    }
    if (type == "Replace") return replace(read_pattern(f.at("pattern")), u32(f.at("content").str()));
    if (type == "BertNormalizer") return bert_normalizer(f);
    if (type == "ByteLevel")  // every UTF-8 byte as GPT-2's character for it
        return [bytes = byte_chars()](Piece& p) {
            std::u32string mapped;
            for (unsigned char b : utf8(p.text)) mapped += bytes[b];
            p.text = std::move(mapped);
        };
    if (type == "Nmt")  // normalizers/unicode.rs do_nmt: controls dropped, odd spaces made ' '
        return [](Piece& p) {
            map_chars(p, [](std::u32string& out, char32_t c) {
                if ((c >= 0x01 && c <= 0x08) || c == 0x0B || (c >= 0x0E && c <= 0x1F) || c == 0x7F || c == 0x8F || c == 0x9F) return;
                const bool space = c == 0x09 || c == 0x0A || c == 0x0C || c == 0x0D || c == 0x1680 || (c >= 0x200B && c <= 0x200F) ||
                                   c == 0x2028 || c == 0x2029 || c == 0x2581 || c == 0xFEFF || c == 0xFFFD;
                out += space ? char32_t(' ') : c;
            });
        };
    if (type == "Precompiled") {
        const Field map = f.at("precompiled_charsmap");
        if (map.missing()) return [](Piece&) {};
        auto charsmap = std::make_shared<const Charsmap>(base64_decode(map.str(), f.file, map.path), f.file);
        return [charsmap](Piece& p) { precompiled(*charsmap, p); };
    }
    f.unsupported();
}

Normalizer read_normalizer(const Field& f) {
    if (!f.j.is_object()) f.fail("expected an object with a \"type\"");
    return normalizer_of(f);
}

// [SECTION] Pre-tokenizers ----------------------------------------------------------------------

using PreTokenizer = std::function<void(Pieces&)>;

// Each piece split by `split(piece, out)`.
template <class Split>
void each_piece(Pieces& pieces, Split split) {
    Pieces out;
    out.reserve(pieces.size());
    for (const Piece& p : pieces) split(p, out);
    pieces = std::move(out);
}

constexpr const char* kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

PreTokenizer byte_level(const Field& f) {
    const bool prefix = f.at("add_prefix_space").flag(true), use_regex = f.at("use_regex").flag(true);
    const auto gpt2 = std::make_shared<const Regex>(kGpt2Pattern);
    return [=, bytes = byte_chars()](Pieces& pieces) {
        each_piece(pieces, [&](const Piece& p, Pieces& out) {
            Piece q = p;
            if (prefix && (q.text.empty() || q.text[0] != ' ')) q.text.insert(q.text.begin(), U' ');
            if (use_regex) split_piece(q, segments(q.text.size(), gpt2->find_all(q.text), false), Behavior::Isolated, out);
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
            split_piece(q, segments(q.text.size(), char_matches(q.text, [&](char32_t c) { return c == replacement; }), false),
                        Behavior::MergedWithNext, out);
        });
    };
}

PreTokenizer split_by(std::function<bool(char32_t)> is, Behavior behavior) {
    return [=](Pieces& pieces) {
        each_piece(pieces, [&](const Piece& p, Pieces& out) { split_piece(p, segments(p.text.size(), char_matches(p.text, is), false), behavior, out); });
    };
}

PreTokenizer read_pre_tokenizer(const Field& f) {
    if (!f.j.is_object()) f.fail("expected an object with a \"type\"");
    const std::string type = f.type();
    if (type == "Sequence") {
        std::vector<PreTokenizer> parts;
        const Field list = f.at("pretokenizers");
        for (size_t i = 0; i < list.list().size(); ++i) parts.push_back(read_pre_tokenizer(list.at(i)));
        return [parts](Pieces& p) {
            for (const PreTokenizer& t : parts) t(p);
        };
    }
    if (type == "Split") {
        const Pattern pattern = read_pattern(f.at("pattern"));
        const Behavior behavior = read_behavior(f.at("behavior"));
        const bool invert = f.at("invert").flag(false);
        return [=](Pieces& pieces) {
            each_piece(pieces, [&](const Piece& p, Pieces& out) { split_piece(p, segments(p.text.size(), pattern.find_all(p.text), invert), behavior, out); });
        };
    }
    if (type == "ByteLevel") return byte_level(f);
    if (type == "Metaspace") return metaspace(f);
    if (type == "Digits") {
        const bool individual = f.at("individual_digits").flag(false);
        return split_by(is_numeric, individual ? Behavior::Isolated : Behavior::Contiguous);
    }
    if (type == "WhitespaceSplit") return split_by(unicode::is_white_space, Behavior::Removed);
    if (type == "Whitespace")  // \w+|[^\w\s]+ kept, the rest removed: runs of word characters, runs of others
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
                split_piece(p, segments(s.size(), runs, true), Behavior::Removed, out);
            });
        };
    if (type == "Punctuation") {
        const Behavior behavior = f.at("behavior").missing() ? Behavior::Isolated : read_behavior(f.at("behavior"));
        return split_by(is_punctuation, behavior);
    }
    if (type == "BertPreTokenizer") {
        const PreTokenizer space = split_by(unicode::is_white_space, Behavior::Removed), punct = split_by(is_punctuation, Behavior::Isolated);
        return [=](Pieces& p) { space(p), punct(p); };
    }
    if (type == "FixedLength") {  // pieces of `length` characters
        const long long length = f.at("length").missing() ? 5 : f.at("length").integer();
        if (length < 1) f.at("length").fail("expected a positive number");
        return [=](Pieces& pieces) {
            each_piece(pieces, [&](const Piece& p, Pieces& out) {
                for (size_t i = 0; i < p.text.size(); i += static_cast<size_t>(length))
                    out.push_back({p.text.substr(i, static_cast<size_t>(length)), p.at_start && i == 0});
            });
        };
    }
    if (type == "CharDelimiterSplit") {
        const char32_t delimiter = one_char(f.at("delimiter"));
        return split_by([=](char32_t c) { return c == delimiter; }, Behavior::Removed);
    }
    f.unsupported();
}

// [SECTION] Models --------------------------------------------------------------------------------

// A model turns one word (UTF-8) into ids. It sees only its own vocabulary: the ids below
// `size`, not the added tokens appended after it.
struct WordModel {
    const Vocab& vocab;
    int size = 0;

    explicit WordModel(const Vocab& v) : vocab(v), size(static_cast<int>(v.tokens.size())) {}
    virtual ~WordModel() = default;
    virtual void encode(const std::string& word, std::vector<int>& out) const = 0;
    int find(const std::string& token) const {
        const int id = vocab.find(token, -1);
        return id < size ? id : -1;
    }
};

std::string byte_token(unsigned char b) {  // "<0xE4>": byte fallback's tokens
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string t = "<0x00>";
    t[3] = kHex[b >> 4], t[4] = kHex[b & 15];
    return t;
}

// The ids of byte fallback's tokens for every byte of `s`, or false when one is missing.
bool byte_fallback_ids(const WordModel& model, std::string_view s, std::vector<int>& out) {
    std::vector<int> ids;
    for (unsigned char b : s) {
        const int id = model.find(byte_token(b));
        if (id < 0) return false;
        ids.push_back(id);
    }
    out.insert(out.end(), ids.begin(), ids.end());
    return true;
}

// BPE as models/bpe/model.rs: the word's characters (with continuing_subword_prefix after the
// first and end_of_word_suffix on the last), each an id, else its bytes' <0xNN> tokens
// (byte_fallback), else the unknown token (runs fused with fuse_unk); then the pair of lowest
// rank merged, leftmost first among equals, until none is left (word.rs's merge_all).
struct BpeModel final : WordModel {
    std::unordered_map<std::uint64_t, std::pair<int, int>> merges;  // (left id, right id) → (rank, merged id)
    int unk = -1;
    std::string prefix, suffix;
    bool byte_fallback = false, fuse_unk = false, ignore_merges = false;

    using WordModel::WordModel;
    static std::uint64_t pair_key(int a, int b) { return (static_cast<std::uint64_t>(a) << 32) | static_cast<std::uint32_t>(b); }

    void encode(const std::string& word, std::vector<int>& out) const override {
        if (ignore_merges)
            if (const int id = find(word); id >= 0) return out.push_back(id);
        std::vector<int> symbols;
        int pending_unk = 0;  // characters in the unknown run not yet written
        size_t pos = 0;
        while (pos < word.size()) {
            size_t end = pos;
            decode_utf8(word, end);
            std::string s = word.substr(pos, end - pos);
            if (pos > 0) s = prefix + s;
            if (end == word.size()) s += suffix;
            pos = end;
            if (const int id = find(s); id >= 0) {
                if (pending_unk) symbols.push_back(unk), pending_unk = 0;
                symbols.push_back(id);
                continue;
            }
            if (byte_fallback && byte_fallback_ids(*this, s, symbols)) continue;
            if (unk < 0) continue;  // no unknown token: the character is dropped, as tokenizers does
            if (pending_unk && !fuse_unk) symbols.push_back(unk);
            pending_unk = 1;
        }
        if (pending_unk) symbols.push_back(unk);
        merge_all(symbols);
        out.insert(out.end(), symbols.begin(), symbols.end());
    }

    void merge_all(std::vector<int>& ids) const {
        const size_t n = ids.size();
        if (n < 2) return;
        std::vector<int> prev(n), next(n);
        std::vector<bool> gone(n, false);
        for (size_t i = 0; i < n; ++i) prev[i] = static_cast<int>(i) - 1, next[i] = i + 1 < n ? static_cast<int>(i) + 1 : -1;
        struct Candidate {
            int rank, pos, merged;
            bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
        };
        std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
        auto offer = [&](int pos) {
            if (pos < 0 || next[static_cast<size_t>(pos)] < 0) return;
            const auto it = merges.find(pair_key(ids[static_cast<size_t>(pos)], ids[static_cast<size_t>(next[static_cast<size_t>(pos)])]));
            if (it != merges.end()) queue.push({it->second.first, pos, it->second.second});
        };
        for (size_t i = 0; i + 1 < n; ++i) offer(static_cast<int>(i));
        while (!queue.empty()) {
            const Candidate top = queue.top();
            queue.pop();
            const auto p = static_cast<size_t>(top.pos);
            if (gone[p] || next[p] < 0) continue;
            const auto r = static_cast<size_t>(next[p]);
            const auto it = merges.find(pair_key(ids[p], ids[r]));
            if (it == merges.end() || it->second.second != top.merged) continue;  // stale
            ids[p] = top.merged;
            gone[r] = true;
            next[p] = next[r];
            if (next[r] >= 0) prev[static_cast<size_t>(next[r])] = top.pos;
            offer(prev[p]);
            offer(top.pos);
        }
        size_t k = 0;
        for (size_t i = 0; i < n; ++i)
            if (!gone[i]) ids[k++] = ids[i];
        ids.resize(k);
    }
};

// Unigram as models/unigram/model.rs: Viterbi over the pieces' scores (every vocabulary entry a
// candidate); a character no piece starts with is the unknown piece, scored lowest − 10, and a
// run of them one unknown (fused), then its bytes' <0xNN> tokens with byte_fallback.
struct UnigramModel final : WordModel {
    std::vector<double> scores;  // by id
    size_t longest = 0;          // bytes
    int unk = -1;
    double unk_score = 0;
    bool byte_fallback = false;

    using WordModel::WordModel;

    void encode(const std::string& word, std::vector<int>& out) const override {
        const size_t n = word.size();
        struct Best {
            double score = 0;
            size_t begin = 0;
            int id = -1;  // −1: not reached
        };
        std::vector<Best> best(n + 1);
        best[0].id = 0;
        for (size_t begin = 0; begin < n;) {
            size_t end = begin;
            decode_utf8(word, end);
            const size_t one_char = end - begin;
            bool single = false;
            for (size_t len = 1; len <= longest && begin + len <= n; ++len) {
                const int id = find(word.substr(begin, len));
                if (id < 0) continue;
                const double score = best[begin].score + scores[static_cast<size_t>(id)];
                Best& target = best[begin + len];
                if (target.id < 0 || score > target.score) target = {score, begin, id};
                single = single || len == one_char;
            }
            if (!single) {
                const double score = best[begin].score + unk_score;
                Best& target = best[begin + one_char];
                if (target.id < 0 || score > target.score) target = {score, begin, unk};
            }
            begin = end;
        }
        std::vector<std::pair<size_t, size_t>> pieces;  // [begin, end) of each piece, last first
        std::vector<bool> unknown;
        for (size_t end = n; end > 0;) {
            const Best& b = best[end];
            const bool u = b.id == unk;
            if (u && !unknown.empty() && unknown.back()) pieces.back().first = b.begin;  // fuse_unk
            else pieces.emplace_back(b.begin, end), unknown.push_back(u);
            end = b.begin;
        }
        for (size_t i = pieces.size(); i-- > 0;) {
            const std::string s = word.substr(pieces[i].first, pieces[i].second - pieces[i].first);
            const int id = find(s);
            if (id >= 0) out.push_back(id);
            else if (!(byte_fallback && byte_fallback_ids(*this, s, out))) out.push_back(unk);
        }
    }
};

// WordPiece as models/wordpiece/mod.rs: greedy longest match from the start, then the
// continuing prefix + the longest from there; a word with a part nothing matches, or longer
// than max_input_chars_per_word characters, is the unknown token.
struct WordPieceModel final : WordModel {
    int unk = -1;
    std::string prefix = "##";
    size_t max_chars = 100;

    using WordModel::WordModel;

    void encode(const std::string& word, std::vector<int>& out) const override {
        const std::u32string chars = u32(word);
        if (chars.size() > max_chars) return out.push_back(unk);
        std::vector<int> pieces;
        for (size_t start = 0; start < chars.size();) {
            int found = -1;
            size_t end = chars.size();
            for (; end > start; --end) {
                const std::string piece = (start > 0 ? prefix : "") + utf8(chars.substr(start, end - start));
                if ((found = find(piece)) >= 0) break;
            }
            if (found < 0) return out.push_back(unk);
            pieces.push_back(found);
            start = end;
        }
        out.insert(out.end(), pieces.begin(), pieces.end());
    }
};

struct WordLevelModel final : WordModel {
    int unk = -1;
    using WordModel::WordModel;
    void encode(const std::string& word, std::vector<int>& out) const override {
        const int id = find(word);
        if (id >= 0 || unk >= 0) out.push_back(id >= 0 ? id : unk);
    }
};

// [SECTION] Added tokens --------------------------------------------------------------------------

struct AddedToken {
    std::u32string content;  // for "normalized" ones: the content normalized
    int id = 0;
    bool special = false, single_word = false, lstrip = false, rstrip = false, normalized = false;
};

// The added tokens matched at one stage (raw or normalized): a trie of their contents.
class AddedMatcher {
public:
    void add(const AddedToken& t) {
        size_t node = 0;
        for (char32_t c : t.content) {
            auto& children = nodes_[node].children;
            auto it = children.find(c);
            if (it == children.end()) {
                nodes_.push_back({});
                it = nodes_[node].children.emplace(c, nodes_.size() - 1).first;
            }
            node = it->second;
        }
        nodes_[node].token = static_cast<int>(tokens_.size());
        tokens_.push_back(t);
    }
    bool empty() const { return tokens_.empty(); }

    // Pieces of `p` between the matches, and the matches' ids in their places: leftmost-longest
    // (added_vocabulary.rs find_matches); `emit(piece)` for text, `emit_id(id)` for a token.
    template <class Text, class Id>
    void split(const Piece& p, Text emit_text, Id emit_id) const {
        const std::u32string& s = p.text;
        size_t done = 0;  // text before this was written
        for (size_t i = 0; i < s.size();) {
            size_t node = 0, match_end = 0;
            int match = -1;
            for (size_t k = i; k < s.size(); ++k) {
                const auto it = nodes_[node].children.find(s[k]);
                if (it == nodes_[node].children.end()) break;
                node = it->second;
                if (nodes_[node].token >= 0) match = nodes_[node].token, match_end = k + 1;
            }
            if (match < 0) {
                ++i;
                continue;
            }
            const AddedToken& t = tokens_[static_cast<size_t>(match)];
            size_t start = i, stop = match_end;
            if (t.single_word) {
                const bool before = start == 0 || !is_word_char(s[start - 1]);
                const bool after = stop == s.size() || !is_word_char(s[stop]);
                if (!before || !after) {  // not this token here: the search goes on after it
                    i = match_end;
                    continue;
                }
            }
            if (t.lstrip)
                while (start > done && unicode::is_white_space(s[start - 1])) --start;
            if (t.rstrip)
                while (stop < s.size() && unicode::is_white_space(s[stop])) ++stop;
            if (start > done) emit_text(Piece{s.substr(done, start - done), p.at_start && done == 0});
            emit_id(t.id);
            done = i = stop;
        }
        if (done < s.size()) emit_text(Piece{s.substr(done), p.at_start && done == 0});
    }

private:
    struct Node {
        std::unordered_map<char32_t, size_t> children;
        int token = -1;
    };
    std::vector<Node> nodes_ = std::vector<Node>(1);
    std::vector<AddedToken> tokens_;
};

// [SECTION] Post-processors -----------------------------------------------------------------------

using PostProcessor = std::function<void(std::vector<int>&)>;

int token_id(const Field& f, const Vocab& vocab) {  // ["[CLS]", 101] (BertProcessing, RobertaProcessing)
    if (!f.j.is_array() || f.j.size() != 2) f.fail("expected [token, id]");
    const long long id = f.at(1).integer();
    if (id < 0 || id >= static_cast<long long>(vocab.tokens.size())) f.at(1).fail("not an id of the vocabulary");
    return static_cast<int>(id);
}

PostProcessor read_post_processor(const Field& f, const Vocab& vocab) {
    if (!f.j.is_object()) f.fail("expected an object with a \"type\"");
    const std::string type = f.type();
    if (type == "Sequence") {
        std::vector<PostProcessor> parts;
        const Field list = f.at("processors");
        for (size_t i = 0; i < list.list().size(); ++i) parts.push_back(read_post_processor(list.at(i), vocab));
        return [parts](std::vector<int>& ids) {
            for (const PostProcessor& p : parts) p(ids);
        };
    }
    if (type == "ByteLevel") return [](std::vector<int>&) {};  // offsets only
    if (type == "BertProcessing" || type == "RobertaProcessing") {
        const int cls = token_id(f.at("cls"), vocab), sep = token_id(f.at("sep"), vocab);
        return [=](std::vector<int>& ids) {
            ids.insert(ids.begin(), cls);
            ids.push_back(sep);
        };
    }
    if (type == "TemplateProcessing") {
        // "single": [{"SpecialToken": {"id": "<bos>"}}, {"Sequence": {"id": "A"}}]: the ids of each
        // special token from "special_tokens", the sequence in its place
        const Field single = f.at("single"), specials = f.at("special_tokens");
        std::vector<int> before, after;
        bool seen = false;
        for (size_t i = 0; i < single.list().size(); ++i) {
            const Field item = single.at(i);
            if (item.j.is_object() && item.j.contains("Sequence")) {
                if (item.at("Sequence").at("id").str() != "A") item.at("Sequence").at("id").fail("expected \"A\" in a single template");
                seen = true;
                continue;
            }
            const Field special = item.at("SpecialToken");
            if (special.missing()) item.fail("expected {\"SpecialToken\": …} or {\"Sequence\": …}");
            const std::string name = special.at("id").str();
            const Field entry = specials.at(name);
            if (entry.missing()) special.at("id").fail("\"" + name + "\" is not in special_tokens");
            const Field ids = entry.at("ids");
            for (size_t k = 0; k < ids.list().size(); ++k) {
                const long long id = ids.at(k).integer();
                if (id < 0 || id >= static_cast<long long>(vocab.tokens.size())) ids.at(k).fail("not an id of the vocabulary");
                (seen ? after : before).push_back(static_cast<int>(id));
            }
        }
        if (!seen) single.fail("has no {\"Sequence\": {\"id\": \"A\"}}");
        return [=](std::vector<int>& ids) {
            ids.insert(ids.begin(), before.begin(), before.end());
            ids.insert(ids.end(), after.begin(), after.end());
        };
    }
    f.unsupported();
}

// [SECTION] Decoders ------------------------------------------------------------------------------
// A label is one token as it reads in the middle of a text: decoders run on it alone, and the
// steps that only trim the start of a whole text (Strip, Metaspace's first "▁") are left out.

using Decoder = std::function<void(std::string&)>;

Decoder read_decoder(const Field& f) {
    if (!f.j.is_object()) f.fail("expected an object with a \"type\"");
    const std::string type = f.type();
    if (type == "Sequence") {
        std::vector<Decoder> parts;
        const Field list = f.at("decoders");
        for (size_t i = 0; i < list.list().size(); ++i) parts.push_back(read_decoder(list.at(i)));
        return [parts](std::string& t) {
            for (const Decoder& d : parts) d(t);
        };
    }
    if (type == "ByteLevel")
        return [bytes = byte_chars()](std::string& t) {  // GPT-2's characters back to bytes, read as UTF-8
            std::string raw;
            for (char32_t c : u32(t)) {
                const auto b = std::find(bytes.begin(), bytes.end(), c);
                if (b == bytes.end()) return;  // not all from the byte alphabet: as it is
                raw += static_cast<char>(b - bytes.begin());
            }
            t = utf8(u32(raw));
        };
    if (type == "ByteFallback")
        return [](std::string& t) {  // "<0xE4>": the byte, alone not UTF-8: U+FFFD
            if (t.size() != 6 || t.rfind("<0x", 0) != 0 || t.back() != '>') return;
            const std::string hex = t.substr(3, 2);
            if (hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) return;
            const auto b = static_cast<unsigned char>(std::stoi(hex, nullptr, 16));
            t = b < 0x80 ? std::string(1, static_cast<char>(b)) : "\xef\xbf\xbd";
        };
    if (type == "Metaspace") {
        const char32_t replacement = one_char(f.at("replacement"));
        return [=](std::string& t) {
            std::u32string s = u32(t);
            std::replace(s.begin(), s.end(), replacement, U' ');
            t = utf8(s);
        };
    }
    if (type == "Replace") {
        const Normalizer r = replace(read_pattern(f.at("pattern")), u32(f.at("content").str()));
        return [=](std::string& t) {
            Piece p{u32(t), true};
            r(p);
            t = utf8(p.text);
        };
    }
    if (type == "WordPiece") {
        const std::string prefix = f.at("prefix").str_or("##");
        return [=](std::string& t) {
            if (t.size() > prefix.size() && t.rfind(prefix, 0) == 0) t = t.substr(prefix.size());
        };
    }
    if (type == "BPEDecoder") {
        const std::string suffix = f.at("suffix").str_or("</w>");
        return [=](std::string& t) {
            if (!suffix.empty() && t.size() >= suffix.size() && t.compare(t.size() - suffix.size(), suffix.size(), suffix) == 0)
                t = t.substr(0, t.size() - suffix.size()) + " ";
        };
    }
    if (type == "Fuse" || type == "Strip") return [](std::string&) {};
    f.unsupported();
}

// [SECTION] The pipeline --------------------------------------------------------------------------

struct Pipeline final : Tokenizer::Impl {
    AddedMatcher raw_added, normalized_added;
    std::vector<bool> added;        // by id: an added token (its label is its content)
    Normalizer normalizer;          // may be empty: none
    PreTokenizer pre_tokenizer;     // may be empty
    std::unique_ptr<WordModel> model;
    PostProcessor post_processor;   // may be empty
    bool post_adds = false;
    Decoder decoder;                // may be empty

    using Impl::Impl;

    std::vector<int> encode(std::string_view text) const override {
        std::vector<int> out;
        Piece whole{u32(text), true};  // invalid UTF-8 reads as U+FFFD
        auto words = [&](Piece p) {
            Pieces pieces;
            if (!p.text.empty()) pieces.push_back(std::move(p));
            if (pre_tokenizer) pre_tokenizer(pieces);
            for (const Piece& w : pieces) model->encode(utf8(w.text), out);
        };
        auto normalized = [&](Piece p) {
            if (normalizer) normalizer(p);
            if (normalized_added.empty()) return words(std::move(p));
            normalized_added.split(p, words, [&](int id) { out.push_back(id); });
        };
        raw_added.split(whole, normalized, [&](int id) { out.push_back(id); });
        return out;
    }

    std::vector<int> encode_with_specials(std::string_view text) const override {
        std::vector<int> ids = encode(text);
        if (post_processor) post_processor(ids);
        return ids;
    }
    bool adds_specials() const override { return post_adds; }

    std::string text(int id) const override {
        std::string t = vocab.tokens[static_cast<size_t>(id)];
        if (decoder && !added[static_cast<size_t>(id)]) decoder(t);
        return t;
    }
};

// [SECTION] read_tokenizer_json -------------------------------------------------------------------

bool is_byte_level(const Field& f) {  // a ByteLevel pre-tokenizer or decoder, alone or in a Sequence
    if (!f.j.is_object() || !f.j.contains("type") || !f.j["type"].is_string()) return false;
    const std::string type = f.j["type"].get<std::string>();
    if (type == "ByteLevel") return true;
    for (const char* list : {"pretokenizers", "decoders"})
        if (type == "Sequence" && f.j.contains(list) && f.j[list].is_array())
            for (size_t i = 0; i < f.j[list].size(); ++i)
                if (is_byte_level(f.at(list).at(i))) return true;
    return false;
}

// The vocabulary: the model's, then the added tokens that it lacks, with the ids tokenizers
// gives them (added_vocabulary.rs add_tokens: the model's id for a token it has, else the next
// free id; the file's "id" is not read).
std::vector<AddedToken> read_added_tokens(const Field& list, Vocab& vocab, const Normalizer& normalizer) {
    std::vector<AddedToken> out;
    if (list.missing()) return out;
    std::unordered_map<std::string, size_t> by_content;
    const size_t model_size = vocab.tokens.size();
    for (size_t i = 0; i < list.list().size(); ++i) {
        const Field f = list.at(i);
        const std::string content = f.at("content").str();
        if (content.empty()) continue;
        AddedToken t;
        t.special = f.at("special").flag(false);
        t.single_word = f.at("single_word").flag(false);
        t.lstrip = f.at("lstrip").flag(false);
        t.rstrip = f.at("rstrip").flag(false);
        t.normalized = f.at("normalized").flag(!t.special);
        t.id = vocab.find(content, -1);
        if (const auto it = by_content.find(content); it != by_content.end()) {
            t.id = out[it->second].id;  // the same content again: its settings replace the first's
            out[it->second] = t;
        } else {
            if (t.id < 0) {
                t.id = static_cast<int>(std::max(vocab.tokens.size(), model_size));
                vocab.add(content);
            }
            by_content[content] = out.size();
            out.push_back(t);
        }
        AddedToken& kept = out[by_content[content]];
        kept.content = u32(content);
        if (kept.normalized && normalizer) {
            Piece p{kept.content, true};
            normalizer(p);
            kept.content = p.text;
        }
    }
    return out;
}

std::unique_ptr<WordModel> read_model(const Field& f, Vocab& vocab) {
    const std::string type = f.type();
    const Field unk_token = f.at("unk_token");
    auto unk_id = [&](const Field& name) {
        if (name.missing()) return -1;
        const int id = vocab.find(name.str(), -1);
        if (id < 0) name.fail("\"" + name.str() + "\" is not in the vocabulary");
        return id;
    };
    if (type == "BPE") {
        vocab = read_vocab_object(f.at("vocab").j, f.file, f.at("vocab").path);
        if (!f.at("dropout").missing() && f.at("dropout").number() != 0) f.at("dropout").fail("BPE dropout is not supported (it is random)");
        auto m = std::make_unique<BpeModel>(vocab);
        m->unk = unk_id(unk_token);
        m->prefix = f.at("continuing_subword_prefix").str_or("");
        m->suffix = f.at("end_of_word_suffix").str_or("");
        m->byte_fallback = f.at("byte_fallback").flag(false);
        m->fuse_unk = f.at("fuse_unk").flag(false);
        m->ignore_merges = f.at("ignore_merges").flag(false);
        const Field merges = f.at("merges");
        const Json& list = merges.missing() ? Json::array() : merges.list();
        m->merges.reserve(list.size());
        std::string a, b;
        for (size_t i = 0; i < list.size(); ++i) {
            const Json& j = list[i];
            auto e = [&] { return merges.at(i); };  // its path, for a message only: half a million merges
            if (j.is_string()) {  // "a b"
                const std::string& s = j.get_ref<const std::string&>();
                const size_t space = s.find(' ');
                if (space == std::string::npos) e().fail("expected two tokens separated by a space");
                a.assign(s, 0, space), b.assign(s, space + 1);
            } else if (j.is_array() && j.size() == 2 && j[0].is_string() && j[1].is_string()) {  // ["a", "b"]
                a = j[0].get_ref<const std::string&>(), b = j[1].get_ref<const std::string&>();
            } else {
                e().fail("expected \"a b\" or [\"a\", \"b\"]");
            }
            const int ia = vocab.find(a, -1), ib = vocab.find(b, -1);
            if (ia < 0 || ib < 0) e().fail("\"" + (ia < 0 ? a : b) + "\" is not in the vocabulary");
            if (b.size() < m->prefix.size() || b.compare(0, m->prefix.size(), m->prefix) != 0)
                if (!m->prefix.empty()) e().fail("\"" + b + "\" lacks continuing_subword_prefix");
            a.append(b, m->prefix.size());  // the merged token
            const int id = vocab.find(a, -1);
            if (id < 0) e().fail("makes \"" + a + "\", which the vocabulary lacks");
            m->merges[BpeModel::pair_key(ia, ib)] = {static_cast<int>(i), id};  // a repeated merge: the last one's rank
        }
        return m;
    }
    if (type == "Unigram") {
        const Field v = f.at("vocab");
        if (v.list().empty()) v.fail("expected a list of [piece, score]");
        auto m = std::make_unique<UnigramModel>(vocab);
        double min_score = std::numeric_limits<double>::infinity();
        vocab = Vocab();
        for (size_t i = 0; i < v.j.size(); ++i) {
            const Field e = v.at(i);
            if (!e.j.is_array() || e.j.size() != 2 || !e.j[0].is_string() || !e.j[1].is_number()) e.fail("expected [piece, score]");
            const double score = e.j[1].get<double>();
            if (!std::isfinite(score)) e.fail("not a finite score");
            vocab.add(e.j[0].get<std::string>());
            m->scores.push_back(score);
            min_score = std::min(min_score, score);
            m->longest = std::max(m->longest, vocab.tokens.back().size());
        }
        m->size = static_cast<int>(vocab.tokens.size());
        // a duplicate piece: the vocabulary finds its last id, as token_to_ids in tokenizers
        const Field unk = f.at("unk_id");
        if (!unk.missing()) {
            const long long id = unk.integer();
            if (id < 0 || id >= static_cast<long long>(vocab.tokens.size())) unk.fail("expected the id of a piece");
            m->unk = static_cast<int>(id);
        } else {
            unk.fail("a Unigram model without unk_id is not supported");
        }
        m->unk_score = min_score - 10.0;
        m->byte_fallback = f.at("byte_fallback").flag(false);
        return m;
    }
    if (type == "WordPiece") {
        vocab = read_vocab_object(f.at("vocab").j, f.file, f.at("vocab").path);
        auto m = std::make_unique<WordPieceModel>(vocab);
        m->unk = unk_id(unk_token.missing() ? Field{Json("[UNK]"), unk_token.path, f.file} : unk_token);
        m->prefix = f.at("continuing_subword_prefix").str_or("##");
        const Field max = f.at("max_input_chars_per_word");
        if (!max.missing()) {
            if (max.integer() < 1) max.fail("expected a positive number");
            m->max_chars = static_cast<size_t>(max.integer());
        }
        return m;
    }
    if (type == "WordLevel") {
        vocab = read_vocab_object(f.at("vocab").j, f.file, f.at("vocab").path);
        auto m = std::make_unique<WordLevelModel>(vocab);
        m->unk = unk_id(unk_token);
        return m;
    }
    f.at("type").fail("\"" + type + "\" is not BPE, Unigram, WordPiece or WordLevel");
}

}  // namespace

Tokenizer read_tokenizer_json(std::string_view json, const std::string& file) {
    const Json j = Json::parse(json, nullptr, false);
    if (j.is_discarded() || !j.is_object()) throw ModelError(file, "", "malformed JSON");
    const Field top{j, "", file};
    const Field model = top.at("model");
    if (!model.j.is_object()) model.fail("missing");
    const std::string type = model.at("type").str_or("");
    const bool byte_level = is_byte_level(top.at("pre_tokenizer")) || is_byte_level(top.at("decoder"));
    const TokenizerKind kind = type == "WordPiece" ? TokenizerKind::WordPiece
                             : type == "Unigram"   ? TokenizerKind::Unigram
                             : byte_level          ? TokenizerKind::ByteLevelBpe
                                                   : TokenizerKind::Bpe;
    auto p = std::make_shared<Pipeline>(kind, Vocab());
    p->model = read_model(model, p->vocab);
    if (!top.at("normalizer").missing()) p->normalizer = read_normalizer(top.at("normalizer"));
    if (!top.at("pre_tokenizer").missing()) p->pre_tokenizer = read_pre_tokenizer(top.at("pre_tokenizer"));
    if (!top.at("decoder").missing()) p->decoder = read_decoder(top.at("decoder"));
    const std::vector<AddedToken> added = read_added_tokens(top.at("added_tokens"), p->vocab, p->normalizer);
    p->added.assign(p->vocab.tokens.size(), false);
    for (const AddedToken& t : added) {
        p->added[static_cast<size_t>(t.id)] = true;
        if (t.content.empty()) continue;  // normalized to nothing: never matched
        (t.normalized ? p->normalized_added : p->raw_added).add(t);
    }
    if (!top.at("post_processor").missing()) {
        p->post_processor = read_post_processor(top.at("post_processor"), p->vocab);
        std::vector<int> none;
        p->post_processor(none);
        p->post_adds = !none.empty();
    }
    return Tokenizer(std::move(p));
}

}  // namespace attn
