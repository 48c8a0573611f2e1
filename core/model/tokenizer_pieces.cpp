// tokenizer_pieces.cpp: pieces of text on their way through a tokenizer's pipeline
// (tokenizer_impl.hpp): UTF-8 and code points, Split's and Replace's patterns, tokenizers'
// split behaviours (NormalizedString::split), the character classes the parts share, GPT-2's
// byte alphabet.
//
// [SECTION] Text
// [SECTION] Patterns and splits
// [SECTION] Character classes
#include "regex.hpp"
#include "tokenizer_impl.hpp"
#include "unicode.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <stdexcept>

namespace attn::tok {

// [SECTION] Text -------------------------------------------------------------------------------

std::u32string u32(std::string_view s) { return unicode::decode(s); }

std::string utf8(std::u32string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char32_t c : s) unicode::append_utf8(out, c);
    return out;
}

char32_t one_char(const Field& f) {
    const std::u32string s = u32(f.str());
    if (s.size() != 1) f.fail("expected one character");
    return s[0];
}

// [SECTION] Patterns and splits ----------------------------------------------------------------

std::vector<Span> Pattern::find_all(std::u32string_view s) const {
    if (regex) return regex->find_all(s);
    std::vector<Span> out;
    for (size_t at = s.find(literal); at != std::u32string_view::npos; at = s.find(literal, at + literal.size()))
        out.emplace_back(at, at + literal.size());
    return out;
}

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

Behavior read_behavior(const Field& f) {
    const std::string b = f.str();
    if (b == "Removed") return Behavior::Removed;
    if (b == "Isolated") return Behavior::Isolated;
    if (b == "MergedWithPrevious") return Behavior::MergedWithPrevious;
    if (b == "MergedWithNext") return Behavior::MergedWithNext;
    if (b == "Contiguous") return Behavior::Contiguous;
    f.fail("\"" + b + "\" is not a split behavior (Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous)");
}

namespace {

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

}  // namespace

void split_piece(const Piece& piece, const std::vector<Span>& matches, bool invert, Behavior behavior, Pieces& out) {
    std::vector<Segment> segs = segments(piece.text.size(), matches, invert);
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

std::vector<Span> char_matches(const std::u32string& s, const std::function<bool(char32_t)>& is) {
    std::vector<Span> out;
    for (size_t i = 0; i < s.size(); ++i)
        if (is(s[i])) out.emplace_back(i, i + 1);
    return out;
}

// [SECTION] Character classes ------------------------------------------------------------------

bool is_punctuation(char32_t c) {
    if (c < 0x80) return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126);
    const auto k = unicode::category(c);
    return k >= unicode::Category::Pc && k <= unicode::Category::Po;
}
bool is_numeric(char32_t c) {
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

bool is_mark(char32_t c) {
    const auto k = unicode::category(c);
    return k == unicode::Category::Mn || k == unicode::Category::Mc || k == unicode::Category::Me;
}

std::array<char32_t, 256> byte_chars() {
    std::array<char32_t, 256> out{};
    char32_t n = 0;
    for (int b = 0; b < 256; ++b) {
        const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
        out[static_cast<size_t>(b)] = printable ? static_cast<char32_t>(b) : 256 + n++;
    }
    return out;
}

}  // namespace attn::tok
