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
struct ValuedRange {
    char32_t lo, hi;
    unsigned char value;
};
struct Composition {
    char32_t first, second, composite;
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

template <size_t N>
int value_in(const ValuedRange (&ranges)[N], char32_t c, int otherwise) {
    const ValuedRange* it = std::upper_bound(ranges, ranges + N, c, [](char32_t v, const ValuedRange& r) { return v < r.lo; });
    return it != ranges && c <= (it - 1)->hi ? (it - 1)->value : otherwise;
}

// Hangul syllables by UAX #15's formula: S = 0xAC00 + (L·21 + V)·28 + T.
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28, kSCount = kLCount * kVCount * kTCount;

// One character's full decomposition (canonical, or compatibility with `compat`), appended.
void decompose(std::u32string& out, char32_t c, bool compat) {
    if (c >= kSBase && c < kSBase + kSCount) {
        const char32_t s = c - kSBase, t = s % kTCount;
        out += kLBase + s / (kVCount * kTCount);
        out += kVBase + (s % (kVCount * kTCount)) / kTCount;
        if (t) out += kTBase + t;
        return;
    }
    const char* d = nullptr;
    if (compat) d = mapped(kCompatibility, c);
    if (!d && c >= 0xC0) d = mapped(kDecompose, c);
    if (!d) {
        out += c;
        return;
    }
    out += decode(d);
}

// The primary composite of a pair, or 0.
char32_t compose(char32_t first, char32_t second) {
    if (first >= kLBase && first < kLBase + kLCount && second >= kVBase && second < kVBase + kVCount)
        return kSBase + ((first - kLBase) * kVCount + (second - kVBase)) * kTCount;
    if (first >= kSBase && first < kSBase + kSCount && (first - kSBase) % kTCount == 0 && second > kTBase && second < kTBase + kTCount)
        return first + (second - kTBase);
    const Composition* end = kCompositions + std::size(kCompositions);
    const Composition* it = std::lower_bound(kCompositions, end, std::pair(first, second), [](const Composition& x, std::pair<char32_t, char32_t> v) {
        return x.first != v.first ? x.first < v.first : x.second < v.second;
    });
    return it != end && it->first == first && it->second == second ? it->composite : 0;
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

Category category(char32_t c) { return static_cast<Category>(value_in(kCategories, c, static_cast<int>(Category::Cn))); }

bool is_white_space(char32_t c) {
    if ((c >= 0x09 && c <= 0x0D) || c == 0x85) return true;
    const Category k = category(c);
    return k == Category::Zs || k == Category::Zl || k == Category::Zp;
}

int combining_class(char32_t c) { return c < 0x300 ? 0 : value_in(kCombiningClasses, c, 0); }

std::u32string normalize(std::u32string_view text, Form form) {
    // 1. full decomposition, then the canonical order: each run of non-starters sorted (stably) by class
    std::u32string d;
    d.reserve(text.size());
    const bool compat = form == Form::NFKD || form == Form::NFKC;
    for (char32_t c : text) decompose(d, c, compat);
    for (size_t i = 0; i < d.size();) {
        if (combining_class(d[i]) == 0) {
            ++i;
            continue;
        }
        size_t j = i;
        while (j < d.size() && combining_class(d[j]) != 0) ++j;
        std::stable_sort(d.begin() + static_cast<std::ptrdiff_t>(i), d.begin() + static_cast<std::ptrdiff_t>(j),
                         [](char32_t a, char32_t b) { return combining_class(a) < combining_class(b); });
        i = j;
    }
    if (form == Form::NFD || form == Form::NFKD) return d;
    // 2. canonical composition: a character joins the last starter unless a character between
    //    them has a class of 0 or one not below its own (it is "blocked")
    std::u32string out;
    out.reserve(d.size());
    size_t starter = std::u32string::npos;
    int last_class = 0;
    for (char32_t c : d) {
        const int cc = combining_class(c);
        if (starter != std::u32string::npos && (out.size() - 1 == starter || (last_class != 0 && last_class < cc))) {
            if (const char32_t composite = compose(out[starter], c)) {
                out[starter] = composite;
                continue;
            }
        }
        if (cc == 0) starter = out.size();
        last_class = cc;
        out += c;
    }
    return out;
}

std::u32string decode(std::string_view text) {
    std::u32string out;
    out.reserve(text.size());
    for (size_t pos = 0; pos < text.size();) out += decode_utf8(text, pos);
    return out;
}

}  // namespace attn::unicode
