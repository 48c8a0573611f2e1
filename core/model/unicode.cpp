// unicode.cpp: see unicode.hpp.
#include "unicode.hpp"

#include "text.hpp"  // decode_utf8

#include <algorithm>

namespace attn::unicode {
namespace {

struct CodeRange {
    char32_t lo, hi;
};
struct CodeMapping {
    char32_t from;
    const char* to;  // UTF-8
};

#include "unicode_tables.inc"

template <size_t N>
bool in(const CodeRange (&ranges)[N], char32_t c) {
    const CodeRange* it = std::upper_bound(ranges, ranges + N, c, [](char32_t v, const CodeRange& r) { return v < r.lo; });
    return it != ranges && c <= (it - 1)->hi;
}

template <size_t N>
const char* mapped(const CodeMapping (&map)[N], char32_t c) {
    const CodeMapping* it = std::lower_bound(map, map + N, c, [](const CodeMapping& m, char32_t v) { return m.from < v; });
    return it != map + N && it->from == c ? it->to : nullptr;
}

}  // namespace

bool is_letter(char32_t c) { return in(kLetters, c); }
bool is_number(char32_t c) { return in(kNumbers, c); }

bool is_js_space(char32_t c) {
    return c == ' ' || (c >= 0x09 && c <= 0x0D) || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
           c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000 || c == 0xFEFF;
}

bool is_bert_whitespace(char32_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || in(kSpaceSeparators, c); }
bool is_bert_control(char32_t c) { return in(kControl, c); }

bool is_bert_punctuation(char32_t c) {
    return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126) || in(kPunctuation, c);
}

bool is_cjk(char32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

bool is_nonspacing_mark(char32_t c) { return in(kNonspacingMarks, c); }

void append_lower(std::string& out, char32_t c) {
    if (c < 0x80) out += static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
    else if (const char* s = mapped(kLower, c)) out += s;
    else append_utf8(out, c);
}

void append_nfd(std::string& out, char32_t c) {
    if (c >= 0xAC00 && c <= 0xD7A3) {  // Hangul syllables: L V (T) by their formula
        const char32_t s = c - 0xAC00, t = s % 28;
        append_utf8(out, 0x1100 + s / (21 * 28));
        append_utf8(out, 0x1161 + (s % (21 * 28)) / 28);
        if (t) append_utf8(out, 0x11A7 + t);
    } else if (const char* d = c < 0xC0 ? nullptr : mapped(kDecompose, c)) {
        out += d;
    } else {
        append_utf8(out, c);
    }
}


std::u32string decode(std::string_view text) {
    std::u32string out;
    out.reserve(text.size());
    for (size_t pos = 0; pos < text.size();) out += decode_utf8(text, pos);
    return out;
}

}  // namespace attn::unicode
