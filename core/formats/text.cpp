// text.cpp: the tokenizer, generated embeddings, sinusoidal positions and byte sizes (text.hpp).
//
// [SECTION] UTF-8 decoding
// [SECTION] Character classes: range tables
// [SECTION] Tokenizer
// [SECTION] Generated embeddings
// [SECTION] Sinusoidal positions
//
// What the tokenizer decides, beyond the header:
// - Numbers: a '.' or ',' between two digits stays inside the token ("2.13", "3,000.50",
//   "v1.2.3"), so does the Arabic decimal/thousands separator (٫ ٬). Digits and letters
//   group ("GPT2", "48kg"); a hyphen or underscore is a token of its own ("self", "-", ...).
// - Inner apostrophes (' ’, and Hebrew geresh/gershayim) keep a word whole when a letter or
//   digit follows them inside the word: "don't", "O’Neill"; "students' " splits off the '.
// - Kana and hangul syllables are one token each, like ideographs (안녕 → 안 녕). Conjoining
//   jamo form one token per syllable: leading consonants, then vowels and trailing ones.
// - Thai, Lao, Khmer, Myanmar, Tibetan... group as words: a Thai run without spaces is one
//   token (there is no dictionary here to find its words).
// - Emoji: pictograph + skin tones/variation selectors/tags, joined by ZWJ; flags as
//   regional-indicator pairs (an odd one out stands alone); keycaps [0-9#*] FE0F? 20E3.
//   A skin tone attaches to whatever precedes it, as a combining mark would; alone it is an
//   emoji of its own.
// - Invalid UTF-8: every byte that is not part of a well-formed sequence becomes one U+FFFD,
//   a token of its own (so output bytes ≤ 3 × input bytes).
// - White space and C0/C1 controls separate and are dropped. Invisible format characters
//   (soft hyphen, ZWNJ, bidi marks, BOM, tag characters) ride on the open token and are
//   dropped when no token is open (a BOM at the start, a bidi mark after a space). The
//   visible prepended signs (Arabic number sign U+0600..0605, ...) count as letters.
// - A combining mark with nothing to attach to (start of text, after white space, after an
//   invalid byte) is kept as a token of its own; further marks attach to it.
// - Tokens do not depend on their surroundings: each token alone tokenizes to itself, and
//   the tokens joined by spaces tokenize to the same tokens (the fuzz target checks this).
//
// Approximated (range tables written by hand against Unicode 14/15, not generated):
// - Letters are listed by block; a few punctuation marks of rarer scripts (mostly in the
//   supplementary planes) group with words. What no table lists (Yi, Tangut, hieroglyphs,
//   letterlike symbols such as ℕ, unassigned code points) is one token per character.
// - Every Unicode 14 combining mark (Mn, Mc, Me) is either in kExtend or inside a letter
//   block of kLetter. In the second case it joins a word like a letter does: the same tokens,
//   except that such a mark standing alone after white space starts a word.
// - kPictographic covers all of Extended_Pictographic plus some dingbats and symbols of the
//   same blocks; the extra ones differ only in being joinable after a ZWJ.
// - No UAX #29 word rules beyond the above (no "e.g.", no URLs, no Catalan l·l).
// Checked against the Unicode data files (emoji-test.txt 15.0: all 4733 sequences one token
// each; GraphemeBreakTest.txt: no cluster split except a prepended sign before a non-letter).

#include "text.hpp"

#include <cstdio>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <span>

namespace attn {

// [SECTION] UTF-8 decoding -------------------------------------------------------------------

char32_t decode_utf8(std::string_view text, std::size_t& pos) {
    if (pos >= text.size()) {
        ++pos;
        return kReplacementCharacter;
    }
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
    const auto in = [](unsigned b, unsigned lo, unsigned hi) { return b >= lo && b <= hi; };
    const unsigned b0 = byte(pos);
    if (b0 < 0x80) {
        ++pos;
        return b0;
    }
    // Length and the allowed range of the second byte, by lead byte (Table 3-7).
    unsigned len = 0, lo = 0x80, hi = 0xBF;
    if (in(b0, 0xC2, 0xDF)) len = 2;
    else if (b0 == 0xE0) len = 3, lo = 0xA0;  // below: overlong
    else if (in(b0, 0xE1, 0xEC) || in(b0, 0xEE, 0xEF)) len = 3;
    else if (b0 == 0xED) len = 3, hi = 0x9F;  // U+D800..DFFF are surrogates
    else if (b0 == 0xF0) len = 4, lo = 0x90;  // below: overlong
    else if (in(b0, 0xF1, 0xF3)) len = 4;
    else if (b0 == 0xF4) len = 4, hi = 0x8F;  // nothing above U+10FFFF
    bool ok = len != 0 && len <= text.size() - pos && in(byte(pos + 1), lo, hi);
    for (unsigned k = 2; ok && k < len; ++k) ok = in(byte(pos + k), 0x80, 0xBF);
    if (!ok) {
        ++pos;
        return kReplacementCharacter;
    }
    char32_t cp = b0 & (0xFFu >> (len + 1));
    for (unsigned k = 1; k < len; ++k) cp = (cp << 6) | (byte(pos + k) & 0x3Fu);
    pos += len;
    return cp;
}

std::optional<std::size_t> first_bad_utf8(std::string_view text) {
    for (std::size_t pos = 0; pos < text.size();) {
        const std::size_t at = pos;
        // U+FFFD read from three bytes is the character itself; from fewer, a bad byte
        if (decode_utf8(text, pos) == 0xFFFD && pos - at != 3) return at;
    }
    return std::nullopt;
}

void append_utf8(std::string& s, char32_t cp) {
    if (cp < 0x80) {
        s += static_cast<char>(cp);
    } else if (cp < 0x800) {
        s += static_cast<char>(0xC0 | (cp >> 6));
        s += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        s += static_cast<char>(0xE0 | (cp >> 12));
        s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        s += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        s += static_cast<char>(0xF0 | (cp >> 18));
        s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        s += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

namespace {

// Marks a byte that is not part of a well-formed sequence; one past the largest code point.
constexpr char32_t kInvalidByte = 0x110000;
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// One entry per code point, or one kInvalidByte per bad byte (decode_utf8 moved one byte and
// gave U+FFFD): a stray continuation byte, or the lead byte of a sequence that breaks off.
std::vector<char32_t> code_points(std::string_view text) {
    std::vector<char32_t> out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        const std::size_t start = i;
        const char32_t cp = decode_utf8(text, i);
        out.push_back(cp == kReplacementCharacter && i - start == 1 ? kInvalidByte : cp);
    }
    return out;
}


// [SECTION] Character classes: range tables --------------------------------------------------

enum class CharClass : std::uint8_t {
    Invalid,            // a bad byte: U+FFFD, always a token of its own
    Space,              // white space and controls: separate, dropped
    Format,             // invisible: rides on the open token, dropped when none is open
    Joiner,             // U+200D ZWJ: glues two pictographs into one emoji
    Extend,             // combining marks, variation selectors, hangul medial/final jamo
    Letter,
    Digit,
    Pictographic,       // emoji bases (approximately Extended_Pictographic)
    RegionalIndicator,  // half a flag
    EmojiModifier,      // skin tones U+1F3FB..1F3FF
    HangulLead,         // a leading consonant jamo: starts a syllable
    Single,             // ideographs, kana, hangul syllables, punctuation, symbols, unlisted
};

// Inclusive, sorted, disjoint (checked at compile time below).
struct Range {
    char32_t first, last;
};

constexpr bool sorted_and_disjoint(std::span<const Range> table) {
    for (std::size_t k = 0; k < table.size(); ++k) {
        if (table[k].first > table[k].last) return false;
        if (k > 0 && table[k - 1].last >= table[k].first) return false;
    }
    return true;
}

constexpr bool contains(std::span<const Range> table, char32_t cp) {
    const auto it = std::upper_bound(table.begin(), table.end(), cp,
                                     [](char32_t c, const Range& r) { return c < r.first; });
    return it != table.begin() && cp <= std::prev(it)->last;
}

// Non-ASCII white space (U+200B ZERO WIDTH SPACE counts: it separates words that way).
constexpr Range kSpace[] = {
    {0x0085, 0x0085}, {0x00A0, 0x00A0}, {0x1680, 0x1680}, {0x2000, 0x200B},
    {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000},
};

// Non-ASCII controls: C1 except NEL (white space above).
constexpr Range kControl[] = {{0x0080, 0x0084}, {0x0086, 0x009F}};

// Cf and the tag characters, except ZWJ (its own class) and the visible prepended signs
// (Arabic number signs U+0600..0605 and the like: letters in kLetter, so they join the number
// that follows them).
constexpr Range kFormat[] = {
    {0x00AD, 0x00AD}, {0x061C, 0x061C}, {0x180E, 0x180E}, {0x200C, 0x200C},
    {0x200E, 0x200F}, {0x202A, 0x202E}, {0x2060, 0x2064}, {0x2066, 0x206F},
    {0xFEFF, 0xFEFF}, {0xFFF9, 0xFFFB}, {0x13430, 0x13438}, {0x1BCA0, 0x1BCA3},
    {0x1D173, 0x1D17A}, {0xE0001, 0xE0001}, {0xE0020, 0xE007F},
};

// Combining marks (Mn, Mc, Me) that must attach to what precedes them, variation selectors,
// and hangul jamo that continue a syllable (V and T; an L jamo starts one).
constexpr Range kExtend[] = {
    {0x0300, 0x036F}, {0x0483, 0x0489}, {0x0591, 0x05BD}, {0x05BF, 0x05BF},
    {0x05C1, 0x05C2}, {0x05C4, 0x05C5}, {0x05C7, 0x05C7}, {0x0610, 0x061A},
    {0x064B, 0x065F}, {0x0670, 0x0670}, {0x06D6, 0x06DC}, {0x06DF, 0x06E4},
    {0x06E7, 0x06E8}, {0x06EA, 0x06ED}, {0x0711, 0x0711}, {0x0730, 0x074A},
    {0x07A6, 0x07B0}, {0x07EB, 0x07F3}, {0x07FD, 0x07FD}, {0x0898, 0x089F},
    {0x08CA, 0x08E1}, {0x08E3, 0x0903},  // Arabic extended marks, then Devanagari's first
    {0x093A, 0x093C}, {0x093E, 0x094F}, {0x0951, 0x0957}, {0x0962, 0x0963},
    {0x0E31, 0x0E31}, {0x0E34, 0x0E3A}, {0x0E47, 0x0E4E},              // Thai
    {0x0EB1, 0x0EB1}, {0x0EB4, 0x0EBC}, {0x0EC8, 0x0ECE},              // Lao
    {0x0FC6, 0x0FC6},
    {0x1160, 0x11FF},                                                  // hangul V, T
    {0x135D, 0x135F}, {0x180B, 0x180D}, {0x180F, 0x180F},
    {0x1AB0, 0x1AFF}, {0x1DC0, 0x1DFF}, {0x20D0, 0x20FF},              // incl. keycap 20E3
    {0x2CEF, 0x2CF1}, {0x2DE0, 0x2DFF}, {0x302A, 0x302F}, {0x3099, 0x309A},
    {0xA66F, 0xA672}, {0xA674, 0xA67D}, {0xA69E, 0xA69F}, {0xA6F0, 0xA6F1},
    {0xA8E0, 0xA8F1}, {0xD7B0, 0xD7FF},                                // hangul V, T ext.
    {0xFB1E, 0xFB1E}, {0xFE00, 0xFE0F}, {0xFE20, 0xFE2F}, {0xFF9E, 0xFF9F},
    {0x101FD, 0x101FD}, {0x16FE4, 0x16FE4}, {0x16FF0, 0x16FF1}, {0x1BC9D, 0x1BC9E},
    {0x1CF00, 0x1CF46}, {0x1D165, 0x1D169}, {0x1D16D, 0x1D172}, {0x1D17B, 0x1D182},
    {0x1D185, 0x1D18B}, {0x1D1AA, 0x1D1AD}, {0x1D242, 0x1D244}, {0x1DA00, 0x1DA36},
    {0x1DA3B, 0x1DA6C}, {0x1DA75, 0x1DA75}, {0x1DA84, 0x1DA84}, {0x1DA9B, 0x1DA9F},
    {0x1DAA1, 0x1DAAF}, {0x1E944, 0x1E94A}, {0xE0100, 0xE01EF},
};

// Emoji bases, approximately Extended_Pictographic. Regional indicators (1F1E6..1F1FF) and
// skin tones (1F3FB..1F3FF) inside 1F000..1FAFF are classified before this table is read.
constexpr Range kPictographic[] = {
    {0x00A9, 0x00A9}, {0x00AE, 0x00AE}, {0x203C, 0x203C}, {0x2049, 0x2049},
    {0x2122, 0x2122}, {0x2139, 0x2139}, {0x2194, 0x2199}, {0x21A9, 0x21AA},
    {0x231A, 0x231B}, {0x2328, 0x2328}, {0x2388, 0x2388}, {0x23CF, 0x23CF},
    {0x23E9, 0x23F3}, {0x23F8, 0x23FA}, {0x24C2, 0x24C2}, {0x25AA, 0x25AB},
    {0x25B6, 0x25B6}, {0x25C0, 0x25C0}, {0x25FB, 0x25FE}, {0x2600, 0x27BF},
    {0x2934, 0x2935}, {0x2B05, 0x2B07}, {0x2B1B, 0x2B1C}, {0x2B50, 0x2B50},
    {0x2B55, 0x2B55}, {0x3030, 0x3030}, {0x303D, 0x303D}, {0x3297, 0x3297},
    {0x3299, 0x3299}, {0x1F000, 0x1FAFF}, {0x1FC00, 0x1FFFD},
};

// Punctuation and symbols inside the letter blocks of kLetter: read before it, so they stay
// tokens of their own.
constexpr Range kPunctuationInLetters[] = {
    {0x00D7, 0x00D7}, {0x00F7, 0x00F7}, {0x0375, 0x0375}, {0x037E, 0x037E},
    {0x0384, 0x0385}, {0x0387, 0x0387}, {0x03F6, 0x03F6}, {0x0482, 0x0482},
    {0x055A, 0x055F}, {0x0589, 0x058A}, {0x058D, 0x058F}, {0x066A, 0x066D},
    {0x06D4, 0x06D4}, {0x06DE, 0x06DE}, {0x06E9, 0x06E9}, {0x06FD, 0x06FE},
    {0x07F6, 0x07F9}, {0x07FE, 0x07FF}, {0x0830, 0x083E}, {0x085E, 0x085E},
    {0x0888, 0x0888}, {0x0964, 0x0965}, {0x0970, 0x0970}, {0x09F2, 0x09FB},
    {0x09FD, 0x09FD}, {0x0A76, 0x0A76}, {0x0AF0, 0x0AF1}, {0x0B70, 0x0B70},
    {0x0BF3, 0x0BFA}, {0x0C77, 0x0C77}, {0x0C7F, 0x0C7F}, {0x0C84, 0x0C84},
    {0x0D4F, 0x0D4F}, {0x0D79, 0x0D79}, {0x0DF4, 0x0DF4}, {0x0E4F, 0x0E4F},
    {0x0F01, 0x0F17}, {0x0F1A, 0x0F1F}, {0x0F34, 0x0F34}, {0x0F36, 0x0F36},
    {0x0F38, 0x0F38}, {0x0F3A, 0x0F3D}, {0x0F85, 0x0F85}, {0x104A, 0x104F},
    {0x109E, 0x109F}, {0x10FB, 0x10FB}, {0x1360, 0x1368}, {0x1400, 0x1400},
    {0x166D, 0x166E}, {0x169B, 0x169C}, {0x16EB, 0x16ED}, {0x1735, 0x1736},
    {0x17D4, 0x17D6}, {0x17D8, 0x17DB}, {0x1800, 0x180A}, {0x1940, 0x1940},
    {0x1944, 0x1945}, {0x19DE, 0x19FF}, {0x1A1E, 0x1A1F}, {0x1AA0, 0x1AA6},
    {0x1AA8, 0x1AAD}, {0x1B5A, 0x1B6A}, {0x1B74, 0x1B7E}, {0x1BFC, 0x1BFF},
    {0x1C3B, 0x1C3F}, {0x1C7E, 0x1C7F}, {0x1CC0, 0x1CC7}, {0x1CD3, 0x1CD3},
    {0x1FBD, 0x1FBD}, {0x1FBF, 0x1FC1}, {0x1FCD, 0x1FCF}, {0x1FDD, 0x1FDF},
    {0x1FED, 0x1FEF}, {0x1FFD, 0x1FFE}, {0x2CE5, 0x2CEA}, {0x2CF9, 0x2CFF},
    {0x2D70, 0x2D70}, {0xA4FE, 0xA4FF}, {0xA60D, 0xA60F}, {0xA673, 0xA673},
    {0xA67E, 0xA67E}, {0xA6F2, 0xA6F7}, {0xA720, 0xA721}, {0xA789, 0xA78A},
    {0xA828, 0xA82B}, {0xA830, 0xA839}, {0xA874, 0xA877}, {0xA8CE, 0xA8CF},
    {0xA8F8, 0xA8FA}, {0xA8FC, 0xA8FC}, {0xA92E, 0xA92F}, {0xA95F, 0xA95F},
    {0xA9C1, 0xA9CD}, {0xA9DE, 0xA9DF}, {0xAA5C, 0xAA5F}, {0xAA77, 0xAA79},
    {0xAADE, 0xAADF}, {0xAAF0, 0xAAF1}, {0xAB5B, 0xAB5B}, {0xAB6A, 0xAB6B},
    {0xABEB, 0xABEB}, {0xFB29, 0xFB29}, {0xFBB2, 0xFBC2}, {0xFD3E, 0xFD4F},
    {0xFDCF, 0xFDCF}, {0xFDFC, 0xFDFF}, {0x10100, 0x101FC}, {0x11FC0, 0x11FFF},
    {0x1D6C1, 0x1D6C1}, {0x1D6DB, 0x1D6DB}, {0x1D6FB, 0x1D6FB}, {0x1D715, 0x1D715},
    {0x1D735, 0x1D735}, {0x1D74F, 0x1D74F}, {0x1D76F, 0x1D76F}, {0x1D789, 0x1D789},
    {0x1D7A9, 0x1D7A9}, {0x1D7C3, 0x1D7C3}, {0x1E14F, 0x1E14F}, {0x1E2FF, 0x1E2FF},
    {0x1E95E, 0x1E95F},
};

// Decimal digits (Nd) of the scripts in kLetter; read before it.
constexpr Range kDigit[] = {
    {0x0660, 0x0669}, {0x06F0, 0x06F9}, {0x07C0, 0x07C9}, {0x0966, 0x096F},
    {0x09E6, 0x09EF}, {0x0A66, 0x0A6F}, {0x0AE6, 0x0AEF}, {0x0B66, 0x0B6F},
    {0x0BE6, 0x0BEF}, {0x0C66, 0x0C6F}, {0x0CE6, 0x0CEF}, {0x0D66, 0x0D6F},
    {0x0DE6, 0x0DEF}, {0x0E50, 0x0E59}, {0x0ED0, 0x0ED9}, {0x0F20, 0x0F29},
    {0x1040, 0x1049}, {0x1090, 0x1099}, {0x17E0, 0x17E9}, {0x1810, 0x1819},
    {0xFF10, 0xFF19}, {0x1D7CE, 0x1D7FF},
};

// Letters (and the marks and digits inside their blocks) of scripts that write words.
// Ideographs, kana and hangul are absent on purpose: each of them is a token of its own.
constexpr Range kLetter[] = {
    {0x00AA, 0x00AA}, {0x00B2, 0x00B3}, {0x00B5, 0x00B5}, {0x00B9, 0x00BA},  // ª ² ³ µ ¹ º
    {0x00C0, 0x02C1}, {0x02C6, 0x02D1}, {0x02E0, 0x02E4}, {0x02EC, 0x02EC},  // Latin, IPA
    {0x02EE, 0x02EE}, {0x0370, 0x058F},               // Greek, Cyrillic, Armenian
    {0x05D0, 0x05F2},                                 // Hebrew
    {0x0600, 0x0605}, {0x0620, 0x06FF},               // Arabic
    {0x070F, 0x08FF},                                 // Syriac, Thaana, NKo, ...
    {0x0900, 0x0DFF},                                 // Devanagari .. Sinhala
    {0x0E01, 0x0E3A}, {0x0E40, 0x0E59},               // Thai (not ฿ ๏ ๚ ๛)
    {0x0E80, 0x0EFF}, {0x0F00, 0x0FBC},               // Lao, Tibetan
    {0x1000, 0x10FF},                                 // Myanmar, Georgian
    {0x1200, 0x167F},                                 // Ethiopic, Cherokee, Canadian
    {0x1681, 0x169C}, {0x16A0, 0x16F8},               // Ogham, Runic
    {0x1700, 0x17DD}, {0x17E0, 0x17E9},               // Philippine scripts, Khmer
    {0x1800, 0x18AA}, {0x18B0, 0x18F5},               // Mongolian, Canadian ext.
    {0x1900, 0x1AAD},                                 // Limbu .. Tai Tham
    {0x1B00, 0x1CFF},                                 // Balinese .. Vedic extensions
    {0x1D00, 0x1DBF}, {0x1E00, 0x1FFC},               // phonetic, Latin/Greek extended
    {0x2070, 0x2071}, {0x2074, 0x2079}, {0x207F, 0x2089}, {0x2090, 0x209C},  // ⁰ⁱ⁴ ₀ₐ
    {0x2C00, 0x2CFF}, {0x2D00, 0x2D7F}, {0x2D80, 0x2DDE},  // Glagolitic .. Ethiopic ext.
    {0xA4D0, 0xA4FF}, {0xA500, 0xA62B}, {0xA640, 0xA6F7},  // Lisu, Vai, Cyrillic, Bamum
    {0xA717, 0xA71F}, {0xA722, 0xA7FF},               // Latin extended D
    {0xA800, 0xAB2F},                                 // Syloti .. Ethiopic ext. A
    {0xAB30, 0xABF9},                                 // Latin ext. E, Cherokee, Meetei
    {0xFB00, 0xFB4F}, {0xFB50, 0xFDFB}, {0xFE70, 0xFEFC},  // presentation forms
    {0xFF21, 0xFF3A}, {0xFF41, 0xFF5A},               // fullwidth Latin
    {0x10000, 0x11FFF},                               // historic scripts, Brahmi family
    {0x16800, 0x16F9F},                               // Mro .. Miao
    {0x1D400, 0x1D7FF},                               // mathematical alphanumerics
    {0x1E000, 0x1E95F},                               // Glagolitic supp. .. Adlam
};

static_assert(sorted_and_disjoint(kSpace) && sorted_and_disjoint(kControl) &&
              sorted_and_disjoint(kFormat) && sorted_and_disjoint(kExtend) &&
              sorted_and_disjoint(kPictographic) && sorted_and_disjoint(kPunctuationInLetters) &&
              sorted_and_disjoint(kDigit) && sorted_and_disjoint(kLetter));

// ASCII: every byte that is not a letter, digit, space or control is a punctuation token.
constexpr CharClass classify_ascii(char32_t cp) {
    if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D)) return CharClass::Space;
    if (cp < 0x20 || cp == 0x7F) return CharClass::Space;  // controls separate, too
    if (cp >= '0' && cp <= '9') return CharClass::Digit;
    if ((cp >= 'A' && cp <= 'Z') || (cp >= 'a' && cp <= 'z')) return CharClass::Letter;
    return CharClass::Single;
}

// First match wins, in this order: the tables overlap on purpose (marks and punctuation
// inside letter blocks, skin tones and flags inside the emoji block).
constexpr CharClass classify(char32_t cp) {
    if (cp == kInvalidByte) return CharClass::Invalid;
    if (cp < 0x80) return classify_ascii(cp);
    if (contains(kSpace, cp) || contains(kControl, cp)) return CharClass::Space;
    if (cp == 0x200D) return CharClass::Joiner;
    if (contains(kFormat, cp)) return CharClass::Format;
    if (cp >= 0x1F1E6 && cp <= 0x1F1FF) return CharClass::RegionalIndicator;
    if (cp >= 0x1F3FB && cp <= 0x1F3FF) return CharClass::EmojiModifier;
    if ((cp >= 0x1100 && cp <= 0x115F) || (cp >= 0xA960 && cp <= 0xA97C))
        return CharClass::HangulLead;
    if (contains(kExtend, cp)) return CharClass::Extend;
    if (contains(kPictographic, cp)) return CharClass::Pictographic;
    if (contains(kPunctuationInLetters, cp)) return CharClass::Single;
    if (contains(kDigit, cp)) return CharClass::Digit;
    if (contains(kLetter, cp)) return CharClass::Letter;
    return CharClass::Single;
}

static_assert(classify(U'é') == CharClass::Letter && classify(U'\u0301') == CharClass::Extend);
static_assert(classify(U'我') == CharClass::Single && classify(U'，') == CharClass::Single);
static_assert(classify(U'\u3000') == CharClass::Space && classify(0x1F600) == CharClass::Pictographic);

constexpr bool is_word(CharClass c) { return c == CharClass::Letter || c == CharClass::Digit; }

constexpr bool is_hangul_syllable(char32_t cp) { return cp >= 0xAC00 && cp <= 0xD7A3; }

// Inside a word before a letter or digit: don't, O’Neill, צה״ל.
constexpr bool is_inner_apostrophe(char32_t cp) {
    return cp == U'\'' || cp == 0x2019 || cp == 0x05F3 || cp == 0x05F4;
}

// Between two digits: 2.13, 3,000, ٣٫١٤.
constexpr bool is_number_separator(char32_t cp) {
    return cp == U'.' || cp == U',' || cp == 0x066B || cp == 0x066C;
}

// [SECTION] Tokenizer ------------------------------------------------------------------------

// What the token being built can still take.
enum class Open : std::uint8_t {
    None,      // no token open
    Word,      // letters and digits: takes more of them
    Single,    // one character: takes only marks and format characters
    Marks,     // marks with no base: takes only more marks
    Emoji,       // takes modifiers, marks, and a pictograph after ZWJ
    HalfFlag,    // one regional indicator: takes a second one
    HangulLead,  // ends in a leading jamo: takes another, or a vowel jamo, or a syllable
};

class Tokenizer {
public:
    explicit Tokenizer(std::string_view text) : cps_(code_points(text)) {}

    std::vector<std::string> run() {
        for (std::size_t i = 0; i < cps_.size(); ++i) step(i);
        close();
        return std::move(tokens_);
    }

private:
    char32_t at(std::size_t i) const { return i < cps_.size() ? cps_[i] : kInvalidByte; }

    // [0-9#*] FE0F? 20E3 starts at i.
    bool keycap_at(std::size_t i) const {
        const char32_t c = at(i);
        if (!((c >= U'0' && c <= U'9') || c == U'#' || c == U'*')) return false;
        return at(i + 1) == 0x20E3 || (at(i + 1) == 0xFE0F && at(i + 2) == 0x20E3);
    }

    // A letter or digit at i that continues a word (a keycap there starts an emoji instead).
    bool word_continues_at(std::size_t i) const {
        return is_word(classify(at(i))) && !keycap_at(i);
    }

    void close() {
        if (!current_.empty()) tokens_.push_back(std::move(current_));
        current_.clear();
        open_ = Open::None;
        after_joiner_ = false;
    }

    void start(Open kind, char32_t cp) {
        close();
        append_utf8(current_, cp);
        open_ = kind;
    }

    void append(char32_t cp) {
        append_utf8(current_, cp);
        after_joiner_ = false;
        // Whatever follows a half flag or a leading jamo completes it.
        if (open_ == Open::HalfFlag) open_ = Open::Emoji;
        if (open_ == Open::HangulLead) open_ = Open::Single;
    }

    void step(std::size_t i) {
        const char32_t cp = cps_[i];
        const CharClass cls = classify(cp);
        switch (cls) {
        case CharClass::Invalid:
            close();
            tokens_.emplace_back(kReplacement);
            return;
        case CharClass::Space:
            close();
            return;
        case CharClass::Format:
            if (open_ != Open::None) append(cp);
            return;
        case CharClass::Joiner:
            if (open_ == Open::None) return;
            {
                const bool joins = open_ == Open::Emoji;
                append(cp);
                after_joiner_ = joins;
            }
            return;
        case CharClass::Extend:
            if (open_ == Open::None) start(Open::Marks, cp);
            else append(cp);
            return;
        case CharClass::EmojiModifier:
            // Attaches to anything, as a combining mark would (Unicode's grapheme rules);
            // alone it shows as a colour swatch, an emoji of its own.
            if (open_ != Open::None) append(cp);
            else start(Open::Emoji, cp);
            return;
        case CharClass::RegionalIndicator:
            if (open_ == Open::HalfFlag) append(cp);  // the pair is complete: now Emoji
            else start(Open::HalfFlag, cp);
            return;
        case CharClass::Pictographic:
            if (open_ == Open::Emoji && after_joiner_) append(cp);
            else start(Open::Emoji, cp);
            return;
        case CharClass::HangulLead:
            if (open_ == Open::HangulLead) append(cp);
            else start(Open::Single, cp);
            open_ = Open::HangulLead;
            return;
        case CharClass::Letter:
        case CharClass::Digit:
            if (keycap_at(i)) start(Open::Emoji, cp);
            else if (open_ == Open::Word) append(cp);
            else start(Open::Word, cp);
            last_was_digit_ = cls == CharClass::Digit;
            return;
        case CharClass::Single:
            if (open_ == Open::Word && word_continues_at(i + 1) &&
                (is_inner_apostrophe(cp) ||
                 (is_number_separator(cp) && last_was_digit_ &&
                  classify(at(i + 1)) == CharClass::Digit))) {
                append(cp);
            } else if (open_ == Open::HangulLead && is_hangul_syllable(cp)) {
                append(cp);
            } else if (keycap_at(i)) {
                start(Open::Emoji, cp);
            } else {
                start(Open::Single, cp);
            }
            return;
        }
    }

    std::vector<char32_t> cps_;
    std::vector<std::string> tokens_;
    std::string current_;
    Open open_ = Open::None;
    bool after_joiner_ = false;    // the open emoji ends in ZWJ: a pictograph joins it
    bool last_was_digit_ = false;  // the last letter or digit of the open word was a digit
};

// [SECTION] Generated embeddings -------------------------------------------------------------

constexpr std::uint64_t fnv1a_64(std::string_view bytes) {
    std::uint64_t h = 0xCBF29CE484222325ull;
    for (const char c : bytes) {
        h ^= static_cast<unsigned char>(c);
        h *= 0x100000001B3ull;
    }
    return h;
}

// The j-th output (from 0) of splitmix64 seeded with `seed`.
constexpr std::uint64_t splitmix64(std::uint64_t seed, std::uint64_t j) {
    std::uint64_t z = seed + (j + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// The top 24 bits as a signed integer in [-2^23, 2^23), scaled by 2^-23: both steps are
// exact in float, so the result is the same bits on every IEEE platform.
constexpr float unit_from_bits(std::uint64_t z) {
    const auto s = static_cast<std::int32_t>(z >> 40) - (std::int32_t{1} << 23);
    return static_cast<float>(s) * 0x1p-23f;
}

}  // namespace

std::vector<std::string> tokenize(std::string_view text) { return Tokenizer(text).run(); }

// T×d_model. Entry (i, j) = uniform in [-1, 1) from (FNV-1a of token i, column j): mean 0,
// variance 1/3. The column index is the stream position, not mixed with d_model, so a
// token's row for a smaller d_model is a prefix of its row for a larger one.
Matrix generated_embeddings(const std::vector<std::string>& tokens, int d_model) {
    const auto T = static_cast<Eigen::Index>(tokens.size());
    const Eigen::Index d = std::max(d_model, 0);
    Matrix x(T, d);
    for (Eigen::Index i = 0; i < T; ++i) {
        const std::uint64_t seed = fnv1a_64(tokens[static_cast<std::size_t>(i)]);
        for (Eigen::Index j = 0; j < d; ++j)
            x(i, j) = unit_from_bits(splitmix64(seed, static_cast<std::uint64_t>(j)));
    }
    return x;
}

// [SECTION] Sinusoidal positions -------------------------------------------------------------

// T×d_model. Column 2i is sin(pos·ω_i), column 2i+1 is cos(pos·ω_i), ω_i = 10000^(-2i/d_model);
// an odd d_model ends on a sin column. Computed in double, stored as float.
Matrix sinusoidal_positions(int T, int d_model) {
    const Eigen::Index rows = std::max(T, 0), d = std::max(d_model, 0);
    Matrix pe(rows, d);
    for (Eigen::Index c = 0; c < d; ++c) {
        const double two_i = static_cast<double>(c - c % 2);
        const double wavelength = std::pow(10000.0, two_i / static_cast<double>(d));
        for (Eigen::Index pos = 0; pos < rows; ++pos) {
            const double angle = static_cast<double>(pos) / wavelength;
            pe(pos, c) = static_cast<float>(c % 2 == 0 ? std::sin(angle) : std::cos(angle));
        }
    }
    return pe;
}

std::string byte_size(double bytes) {
    char s[32];
    if (bytes < 1e3) std::snprintf(s, sizeof s, "%.0f B", bytes);
    else if (bytes < 1e6) std::snprintf(s, sizeof s, "%.0f kB", bytes / 1e3);
    else if (bytes < 1e9) std::snprintf(s, sizeof s, "%.1f MB", bytes / 1e6);
    else std::snprintf(s, sizeof s, "%.1f GB", bytes / 1e9);
    return s;
}

std::string base64_encode(std::string_view bytes, bool url) {
    const char* k = url ? "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
                        : "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    for (std::size_t i = 0; i < bytes.size(); i += 3) {
        const std::size_t n = std::min<std::size_t>(3, bytes.size() - i);  // bytes in this group
        unsigned v = 0;
        for (std::size_t j = 0; j < 3; ++j) v = (v << 8) | (j < n ? static_cast<unsigned char>(bytes[i + j]) : 0u);
        for (std::size_t j = 0; j <= n; ++j) out += k[(v >> (18 - 6 * j)) & 63];
        if (!url) out.append(3 - n, '=');
    }
    return out;
}

}  // namespace attn
