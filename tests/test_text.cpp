// test_text.cpp: UTF-8 decoding, the tokenizer, generated embeddings and sinusoidal positions
// (core/formats/text.hpp).
//
// [SECTION] Helpers
// [SECTION] UTF-8 decoding
// [SECTION] Tokenizer: seeds, Latin, numbers, CJK, other scripts
// [SECTION] Tokenizer: emoji, combining marks, white space, invalid UTF-8
// [SECTION] Generated embeddings
// [SECTION] Sinusoidal positions

#include <doctest/doctest.h>

#include "text.hpp"
#include "utf8_reference.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace {

using Tokens = std::vector<std::string>;

// [SECTION] Helpers --------------------------------------------------------------------------

// Strict UTF-8 check written independently of the tokenizer's decoder (Unicode Table 3-7).
bool is_valid_utf8(const std::string& s) {
    std::size_t i = 0;
    while (i < s.size()) {
        const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
        const unsigned c = b(i);
        std::size_t n = 0;
        unsigned lo = 0x80, hi = 0xBF;
        if (c < 0x80) n = 1;
        else if (c >= 0xC2 && c <= 0xDF) n = 2;
        else if (c == 0xE0) n = 3, lo = 0xA0;
        else if (c == 0xED) n = 3, hi = 0x9F;
        else if (c >= 0xE1 && c <= 0xEF) n = 3;
        else if (c == 0xF0) n = 4, lo = 0x90;
        else if (c == 0xF4) n = 4, hi = 0x8F;
        else if (c >= 0xF1 && c <= 0xF3) n = 4;
        else return false;
        if (i + n > s.size()) return false;
        if (n > 1 && (b(i + 1) < lo || b(i + 1) > hi)) return false;
        for (std::size_t k = 2; k < n; ++k)
            if (b(i + k) < 0x80 || b(i + k) > 0xBF) return false;
        i += n;
    }
    return true;
}

std::string join(const Tokens& tokens) {
    std::string out;
    for (const auto& t : tokens) out += (out.empty() ? "" : " ") + t;
    return out;
}

const std::string kFFFD = "\xEF\xBF\xBD";

// std::bit_cast is missing from Emscripten 3.1.6's libc++.
std::uint32_t float_bits(float f) {
    std::uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}

// decode_utf8 at the start of `bytes`: the code point and how far pos moved.
std::pair<char32_t, std::size_t> decode_at_start(std::string_view bytes) {
    std::size_t pos = 0;
    const char32_t cp = attn::decode_utf8(bytes, pos);
    return {cp, pos};
}

}  // namespace

// [SECTION] UTF-8 decoding -------------------------------------------------------------------

TEST_CASE("decode_utf8: well-formed sequences at each length and boundary") {
    struct Case {
        const char* bytes;
        char32_t cp;
        std::size_t length;
    };
    for (const Case& c : std::initializer_list<Case>{
             {"A", U'A', 1}, {"\x7F", 0x7F, 1},
             {"\xC2\x80", 0x80, 2}, {"\xDF\xBF", 0x7FF, 2},                  // 2 bytes: U+0080..07FF
             {"\xE0\xA0\x80", 0x800, 3}, {"\xED\x9F\xBF", 0xD7FF, 3},        // below the surrogates
             {"\xEE\x80\x80", 0xE000, 3}, {"\xEF\xBF\xBD", 0xFFFD, 3},       // U+FFFD itself: 3 bytes
             {"\xEF\xBF\xBF", 0xFFFF, 3},
             {"\xF0\x90\x80\x80", 0x10000, 4}, {"\xF4\x8F\xBF\xBF", 0x10FFFF, 4},
             {"\xE6\x88\x91", U'我', 3}, {"\xF0\x9F\x98\x80", U'😀', 4}}) {
        CAPTURE(c.bytes);
        const auto [cp, length] = decode_at_start(std::string_view(c.bytes, std::strlen(c.bytes)));
        CHECK(cp == c.cp);
        CHECK(length == c.length);
    }
}

TEST_CASE("decode_utf8: overlong forms, surrogates, > U+10FFFF and cut-short sequences give U+FFFD, one byte") {
    for (const char* bytes : {
             "\xC0\xAF", "\xC0\x80", "\xC1\xBF",                  // overlong 2-byte ('/', NUL, U+007F)
             "\xE0\x80\xAF", "\xE0\x9F\xBF",                      // overlong 3-byte (U+002F, U+07FF)
             "\xF0\x80\x80\xAF", "\xF0\x8F\xBF\xBF",              // overlong 4-byte (U+002F, U+FFFF)
             "\xED\xA0\x80", "\xED\xAF\xBF", "\xED\xB0\x80", "\xED\xBF\xBF",  // surrogates D800, DBFF, DC00, DFFF
             "\xF4\x90\x80\x80", "\xF7\xBF\xBF\xBF",              // U+110000, U+1FFFFF
             "\xF5\x80\x80\x80", "\xF8\x88\x80\x80\x80", "\xFC\x84\x80\x80\x80\x80", "\xFE", "\xFF",  // never lead bytes
             "\x80", "\xBF",                                      // stray continuation bytes
             "\xC3", "\xE6\x88", "\xF0\x9F\x98",                  // cut short at the end
             "\xE6\x88" "A", "\xF0\x9F" "AB", "\xC3\xC3\xA9"}) {  // cut short by a byte that does not continue
        CAPTURE(bytes);
        const auto [cp, length] = decode_at_start(std::string_view(bytes, std::strlen(bytes)));
        CHECK(cp == attn::kReplacementCharacter);
        CHECK(length == 1);
    }
    // The bytes after a bad lead byte are read again: "\xC3\xC3\xA9" is U+FFFD then é.
    std::size_t pos = 1;
    CHECK(attn::decode_utf8("\xC3\xC3\xA9", pos) == U'é');
    CHECK(pos == 3);
    // At or past the end: U+FFFD, one step, nothing read.
    pos = 3;
    CHECK(attn::decode_utf8("abc", pos) == attn::kReplacementCharacter);
    CHECK(pos == 4);
}

TEST_CASE("decode_utf8 agrees with a naive decoder on every 1-, 2- and 3-byte string and on 4-byte patterns") {
    // 1, 2 and 3 bytes: all 16.8M strings. 4 bytes: every first and second byte, the third and
    // fourth from values around each boundary of Table 3-7 (6.6M strings).
    constexpr unsigned char kTail[] = {0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC2, 0xF4, 0xFF};
    long long tested = 0, mismatches = 0, valid = 0;
    std::string first_mismatch;
    unsigned char b[4];
    auto compare = [&](std::size_t n) {
        const std::string_view s(reinterpret_cast<const char*>(b), n);
        const utf8_reference::Decoded want = utf8_reference::decode(s);
        const auto [cp, length] = decode_at_start(s);
        ++tested;
        valid += want.length == n;
        if (cp != want.cp || length != want.length) {
            if (mismatches++ == 0)
                for (std::size_t k = 0; k < n; ++k) first_mismatch += std::to_string(b[k]) + " ";
        }
    };
    for (unsigned b0 = 0; b0 < 256; ++b0) {
        b[0] = static_cast<unsigned char>(b0);
        compare(1);
        for (unsigned b1 = 0; b1 < 256; ++b1) {
            b[1] = static_cast<unsigned char>(b1);
            compare(2);
            for (unsigned b2 = 0; b2 < 256; ++b2) {
                b[2] = static_cast<unsigned char>(b2);
                compare(3);
            }
            for (unsigned char b2 : kTail)
                for (unsigned char b3 : kTail) {
                    b[2] = b2, b[3] = b3;
                    compare(4);
                }
        }
    }
    MESSAGE(tested << " strings, " << valid << " of them one whole code point, " << mismatches << " mismatches");
    CHECK_MESSAGE(mismatches == 0, "first mismatch: bytes " << first_mismatch);
    // Every scalar value: encoded, it decodes to itself in its own length.
    long long round_trip_failures = 0;
    for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
        if (cp >= 0xD800 && cp <= 0xDFFF) continue;
        const std::size_t n = utf8_reference::encode(cp, b);
        const auto [got, length] = decode_at_start(std::string_view(reinterpret_cast<const char*>(b), n));
        round_trip_failures += got != cp || length != n;
    }
    CHECK(round_trip_failures == 0);
}

// [SECTION] Tokenizer: seeds, Latin, numbers, CJK, other scripts -----------------------------

TEST_CASE("tokenize: the seeds' sentences") {
    CHECK(attn::tokenize("我爱你") == Tokens{"我", "爱", "你"});
    CHECK(attn::tokenize("那天雨很大") == Tokens{"那", "天", "雨", "很", "大"});
    CHECK(attn::tokenize("It rained heavily that day") ==
          Tokens{"It", "rained", "heavily", "that", "day"});
    CHECK(attn::tokenize("我爱吃苹果") == Tokens{"我", "爱", "吃", "苹", "果"});
    CHECK(attn::tokenize("A dog ate the food because it was hungry.") ==
          Tokens{"A", "dog", "ate", "the", "food", "because", "it", "was", "hungry", "."});
    CHECK(attn::tokenize("I am good.") == Tokens{"I", "am", "good", "."});
    CHECK(attn::tokenize("I am good") == Tokens{"I", "am", "good"});
    CHECK(attn::tokenize("我很好") == Tokens{"我", "很", "好"});

    // 004's multi-head sentence: 23 characters and 4 punctuation marks, one token each.
    const Tokens long_sentence = attn::tokenize("那天雨很大，他等了很久，水汽打湿了衣服，也没有等到她。");
    CHECK(long_sentence == Tokens{"那", "天", "雨", "很", "大", "，", "他", "等", "了", "很",
                                  "久", "，", "水", "汽", "打", "湿", "了", "衣", "服", "，",
                                  "也", "没", "有", "等", "到", "她", "。"});
}

TEST_CASE("tokenize: Latin words and punctuation") {
    CHECK(attn::tokenize("Hello, world!") == Tokens{"Hello", ",", "world", "!"});
    CHECK(attn::tokenize("(a)") == Tokens{"(", "a", ")"});
    CHECK(attn::tokenize("Wait...") == Tokens{"Wait", ".", ".", "."});
    CHECK(attn::tokenize("self-attention") == Tokens{"self", "-", "attention"});
    CHECK(attn::tokenize("d_model") == Tokens{"d", "_", "model"});
    CHECK(attn::tokenize("\"Q\" + K") == Tokens{"\"", "Q", "\"", "+", "K"});
    CHECK(attn::tokenize("softmax(QK^T/sqrt(d_k))V") ==
          Tokens{"softmax", "(", "QK", "^", "T", "/", "sqrt", "(", "d", "_", "k", ")", ")", "V"});
    CHECK(attn::tokenize("Ça va? Größe, naïve") ==
          Tokens{"Ça", "va", "?", "Größe", ",", "naïve"});
    CHECK(attn::tokenize("Việt Nam") == Tokens{"Việt", "Nam"});
    CHECK(attn::tokenize("© 2024 — «guillemets»") ==
          Tokens{"©", "2024", "—", "«", "guillemets", "»"});
}

TEST_CASE("tokenize: inner apostrophes keep a word whole") {
    CHECK(attn::tokenize("don't") == Tokens{"don't"});
    CHECK(attn::tokenize("It's fine") == Tokens{"It's", "fine"});
    CHECK(attn::tokenize("don’t O’Neill") == Tokens{"don’t", "O’Neill"});  // typographic ’
    CHECK(attn::tokenize("rock 'n' roll") == Tokens{"rock", "'", "n", "'", "roll"});
    CHECK(attn::tokenize("the students' books") == Tokens{"the", "students", "'", "books"});
    CHECK(attn::tokenize("'quoted'") == Tokens{"'", "quoted", "'"});
    CHECK(attn::tokenize("don''t") == Tokens{"don", "'", "'", "t"});
    CHECK(attn::tokenize("the '90s") == Tokens{"the", "'", "90s"});
}

TEST_CASE("tokenize: digits group with letters; a number keeps its inner . and ,") {
    CHECK(attn::tokenize("GPT2 and GPT-4") == Tokens{"GPT2", "and", "GPT", "-", "4"});
    CHECK(attn::tokenize("2.13") == Tokens{"2.13"});
    CHECK(attn::tokenize("3,000.50 yuan") == Tokens{"3,000.50", "yuan"});
    CHECK(attn::tokenize("v1.2.3") == Tokens{"v1.2.3"});
    CHECK(attn::tokenize("他现在身高是2.13米") ==
          Tokens{"他", "现", "在", "身", "高", "是", "2.13", "米"});
    CHECK(attn::tokenize("2024年10月2日") == Tokens{"2024", "年", "10", "月", "2", "日"});
    CHECK(attn::tokenize("It is 1.") == Tokens{"It", "is", "1", "."});
    CHECK(attn::tokenize("1, 2, 3") == Tokens{"1", ",", "2", ",", "3"});
    CHECK(attn::tokenize("a.b e.g.") == Tokens{"a", ".", "b", "e", ".", "g", "."});
    CHECK(attn::tokenize(".5") == Tokens{".", "5"});
    CHECK(attn::tokenize("1..2") == Tokens{"1", ".", ".", "2"});
    CHECK(attn::tokenize("٣٫١٤") == Tokens{"٣٫١٤"});  // Arabic-Indic digits, Arabic decimal
    CHECK(attn::tokenize("１２３") == Tokens{"１２３"});    // fullwidth digits
}

TEST_CASE("tokenize: every CJK character, kana and hangul syllable is a token") {
    CHECK(attn::tokenize("我爱NLP模型") == Tokens{"我", "爱", "NLP", "模", "型"});
    CHECK(attn::tokenize("Transformer中的Attention") ==
          Tokens{"Transformer", "中", "的", "Attention"});
    CHECK(attn::tokenize("「你好」！真的？好、好。") ==
          Tokens{"「", "你", "好", "」", "！", "真", "的", "？", "好", "、", "好", "。"});
    CHECK(attn::tokenize("《书》（注）：是；“引”") ==
          Tokens{"《", "书", "》", "（", "注", "）", "：", "是", "；", "“", "引", "”"});
    CHECK(attn::tokenize("ひらがなカタカナ") ==
          Tokens{"ひ", "ら", "が", "な", "カ", "タ", "カ", "ナ"});
    CHECK(attn::tokenize("コーヒー") == Tokens{"コ", "ー", "ヒ", "ー"});
    CHECK(attn::tokenize("안녕하세요 세계") == Tokens{"안", "녕", "하", "세", "요", "세", "계"});
    CHECK(attn::tokenize("𠀀𪚥") == Tokens{"𠀀", "𪚥"});  // supplementary-plane ideographs
    // か + combining voiced mark: one token, like が.
    CHECK(attn::tokenize("\u304B\u3099\u304B") == Tokens{"\u304B\u3099", "\u304B"});
    // Conjoining jamo: L V T is one syllable; L L V too; a new L after V starts another.
    CHECK(attn::tokenize("\u1100\u1161\u11A8") == Tokens{"\u1100\u1161\u11A8"});
    CHECK(attn::tokenize("\u1100\u1100\u1161") == Tokens{"\u1100\u1100\u1161"});
    CHECK(attn::tokenize("\u1100\u1161\u1100\u1161") == Tokens{"\u1100\u1161", "\u1100\u1161"});
    CHECK(attn::tokenize("\u1100가") == Tokens{"\u1100가"});
}

TEST_CASE("tokenize: other scripts group as words") {
    CHECK(attn::tokenize("Привет, мир!") == Tokens{"Привет", ",", "мир", "!"});
    CHECK(attn::tokenize("Καλημέρα κόσμε;") == Tokens{"Καλημέρα", "κόσμε", ";"});
    CHECK(attn::tokenize("Τι\u037E") == Tokens{"Τι", "\u037E"});  // Greek question mark
    CHECK(attn::tokenize("مرحبا بالعالم") == Tokens{"مرحبا", "بالعالم"});
    CHECK(attn::tokenize("نعم، لا؟") == Tokens{"نعم", "،", "لا", "؟"});
    CHECK(attn::tokenize("مَرْحَبًا") == Tokens{"مَرْحَبًا"});  // with harakat
    CHECK(attn::tokenize("שָׁלוֹם עולם") == Tokens{"שָׁלוֹם", "עולם"});
    CHECK(attn::tokenize("नमस्ते दुनिया।") == Tokens{"नमस्ते", "दुनिया", "।"});
    CHECK(attn::tokenize("สวัสดีครับ") == Tokens{"สวัสดีครับ"});  // no spaces: one run
    CHECK(attn::tokenize("ქართული ენა") == Tokens{"ქართული", "ენა"});
    CHECK(attn::tokenize("می\u200Cخواهم") == Tokens{"می\u200Cخواهم"});  // ZWNJ inside a word
}

// [SECTION] Tokenizer: emoji, combining marks, white space, invalid UTF-8 --------------------

TEST_CASE("tokenize: emoji stay whole") {
    SUBCASE("single pictographs") {
        CHECK(attn::tokenize("😀") == Tokens{"😀"});
        CHECK(attn::tokenize("😀😀") == Tokens{"😀", "😀"});
        CHECK(attn::tokenize("hi👋there") == Tokens{"hi", "👋", "there"});
        CHECK(attn::tokenize("好😀") == Tokens{"好", "😀"});
        CHECK(attn::tokenize("❤️ ❤") == Tokens{"❤️", "❤"});  // with and without FE0F
        CHECK(attn::tokenize("☺︎") == Tokens{"☺︎"});         // text presentation FE0E
    }
    SUBCASE("skin tones") {
        CHECK(attn::tokenize("👍🏽") == Tokens{"👍🏽"});
        CHECK(attn::tokenize("👍🏻👍🏿") == Tokens{"👍🏻", "👍🏿"});
        CHECK(attn::tokenize("🏽") == Tokens{"🏽"});  // alone: a swatch
    }
    SUBCASE("zero-width-joiner sequences") {
        CHECK(attn::tokenize("👩‍💻") == Tokens{"👩‍💻"});
        CHECK(attn::tokenize("👨‍👩‍👧") == Tokens{"👨‍👩‍👧"});
        CHECK(attn::tokenize("👨‍👩‍👧‍👦 👩🏽‍💻") == Tokens{"👨‍👩‍👧‍👦", "👩🏽‍💻"});
        CHECK(attn::tokenize("🏃🏽‍♀️") == Tokens{"🏃🏽‍♀️"});
        CHECK(attn::tokenize("🏳️‍🌈") == Tokens{"🏳️‍🌈"});
        CHECK(attn::tokenize("🧑🏻‍🤝‍🧑🏿") == Tokens{"🧑🏻‍🤝‍🧑🏿"});
        // A ZWJ between a letter and an emoji joins nothing: they stay apart.
        CHECK(attn::tokenize("a\u200D😀") == Tokens{"a\u200D", "😀"});
    }
    SUBCASE("flags are regional-indicator pairs") {
        CHECK(attn::tokenize("🇨🇳") == Tokens{"🇨🇳"});
        CHECK(attn::tokenize("🇨🇳🇺🇸🇯🇵") == Tokens{"🇨🇳", "🇺🇸", "🇯🇵"});
        CHECK(attn::tokenize("🇨🇳🇺") == Tokens{"🇨🇳", "🇺"});
        CHECK(attn::tokenize("中国🇨🇳") == Tokens{"中", "国", "🇨🇳"});
    }
    SUBCASE("keycaps") {
        CHECK(attn::tokenize("1️⃣") == Tokens{"1️⃣"});
        CHECK(attn::tokenize("1️⃣2️⃣#️⃣*️⃣") == Tokens{"1️⃣", "2️⃣", "#️⃣", "*️⃣"});
        CHECK(attn::tokenize("11️⃣") == Tokens{"1", "1️⃣"});
        CHECK(attn::tokenize("a1\u20E3") == Tokens{"a", "1\u20E3"});  // without FE0F
        CHECK(attn::tokenize("第1️⃣名") == Tokens{"第", "1️⃣", "名"});
    }
    SUBCASE("tag sequences") {
        const std::string scotland = "🏴\U000E0067\U000E0062\U000E0073\U000E0063\U000E0074\U000E007F";
        CHECK(attn::tokenize(scotland) == Tokens{scotland});
        CHECK(attn::tokenize(scotland + "🏴") == Tokens{scotland, "🏴"});
    }
}

TEST_CASE("tokenize: combining marks stay on their base") {
    CHECK(attn::tokenize("cafe\u0301") == Tokens{"cafe\u0301"});
    CHECK(attn::tokenize("cafe\u0301 au lait") == Tokens{"cafe\u0301", "au", "lait"});
    CHECK(attn::tokenize("Z\u0351\u036B\u0303\u0344a\u1AB0\u1DC0\u20D0\uFE20") ==
          Tokens{"Z\u0351\u036B\u0303\u0344a\u1AB0\u1DC0\u20D0\uFE20"});
    CHECK(attn::tokenize("我\u0301你") == Tokens{"我\u0301", "你"});
    CHECK(attn::tokenize("!\u20DD") == Tokens{"!\u20DD"});
    // A mark with nothing to sit on is kept as a token of its own, never dropped.
    CHECK(attn::tokenize("\u0301") == Tokens{"\u0301"});
    CHECK(attn::tokenize("\u0301abc") == Tokens{"\u0301", "abc"});
    CHECK(attn::tokenize("abc \u0301\u0302 d") == Tokens{"abc", "\u0301\u0302", "d"});
    CHECK(attn::tokenize("\xFF\u0301") == Tokens{kFFFD, "\u0301"});
    // Marks inside a number do not break it.
    CHECK(attn::tokenize("1\u0301.5") == Tokens{"1\u0301.5"});
}

TEST_CASE("tokenize: white space separates and is dropped") {
    CHECK(attn::tokenize("").empty());
    CHECK(attn::tokenize(" ").empty());
    CHECK(attn::tokenize(" \t\n\r\v\f").empty());
    CHECK(attn::tokenize("\u00A0\u2000\u2003\u200A\u200B\u2028\u2029\u3000\u0085\u202F").empty());
    CHECK(attn::tokenize("a\u3000b") == Tokens{"a", "b"});
    CHECK(attn::tokenize("a\u00A0b") == Tokens{"a", "b"});
    CHECK(attn::tokenize("a\u200Bb") == Tokens{"a", "b"});
    CHECK(attn::tokenize("  I\n\nam\tgood  ") == Tokens{"I", "am", "good"});
    CHECK(attn::tokenize("我\u3000爱\n你") == Tokens{"我", "爱", "你"});
    // Controls separate too; invisible format characters with nothing open vanish.
    CHECK(attn::tokenize("a\x01" "b\x7F" "c") == Tokens{"a", "b", "c"});
    CHECK(attn::tokenize("\uFEFFhello") == Tokens{"hello"});
    CHECK(attn::tokenize("\u200E\u200F\u2060").empty());
    CHECK(attn::tokenize("hy\u00ADphen") == Tokens{"hy\u00ADphen"});
}

TEST_CASE("tokenize: invalid UTF-8 becomes U+FFFD, one per bad byte") {
    CHECK(attn::tokenize("\xFF") == Tokens{kFFFD});
    CHECK(attn::tokenize("a\xFF" "b") == Tokens{"a", kFFFD, "b"});
    CHECK(attn::tokenize("\x80") == Tokens{kFFFD});                       // lone continuation
    CHECK(attn::tokenize("\xC0\xAF") == Tokens{kFFFD, kFFFD});            // overlong '/'
    CHECK(attn::tokenize("\xE0\x80\xAF") == Tokens{kFFFD, kFFFD, kFFFD});  // overlong
    CHECK(attn::tokenize("\xED\xA0\x80") == Tokens{kFFFD, kFFFD, kFFFD});  // surrogate D800
    CHECK(attn::tokenize("\xF4\x90\x80\x80") == Tokens(4, kFFFD));         // U+110000
    CHECK(attn::tokenize("\xF5\xF8\xFE") == Tokens(3, kFFFD));             // never lead bytes
    CHECK(attn::tokenize("\xE6\x88") == Tokens{kFFFD, kFFFD});            // 我 cut short
    CHECK(attn::tokenize("\xE6\x88我") == Tokens{kFFFD, kFFFD, "我"});
    CHECK(attn::tokenize("don\xE2\x80t") == Tokens{"don", kFFFD, kFFFD, "t"});  // ’ cut short
    CHECK(attn::tokenize("\xF0\x9F\x98") == Tokens(3, kFFFD));             // 😀 cut short
    // U+FFFD that was already in the text is a symbol token, as after a bad byte.
    CHECK(attn::tokenize("a\uFFFDb") == Tokens{"a", kFFFD, "b"});
    // The largest code points are still valid.
    CHECK(attn::tokenize("\xF4\x8F\xBF\xBF") == Tokens{"\xF4\x8F\xBF\xBF"});
}

TEST_CASE("tokenize: invariants over pseudo-random bytes and mixed text") {
    // A cheap in-suite fuzz (the libFuzzer target does more): every token non-empty, valid
    // UTF-8, free of white space; output at most 3 bytes per input byte; tokenizing the
    // space-joined tokens gives them back.
    const std::vector<std::string> pieces = {
        "a", "Z", "1", ".", ",", "'", "’", " ", "\u3000", "我", "。", "\u0301", "\u200D",
        "\uFE0F", "\u20E3", "👩", "💻", "🏽", "🇨", "🇳", "\U000E0067", "\U000E007F", "\u1100",
        "\u1161", "가", "ก", "\u0E31", "\xFF", "\xE6\x88", "\x80", "\xF0\x9F", "\u00AD", "-"};
    std::uint64_t state = 0x2545F4914F6CDD1Dull;
    const auto next = [&] {
        state ^= state << 13, state ^= state >> 7, state ^= state << 17;
        return state;
    };
    int checked = 0;
    for (int round = 0; round < 2000; ++round) {
        std::string text;
        const int length = static_cast<int>(next() % 12);
        for (int k = 0; k < length; ++k) {
            if (next() % 4 == 0) text += static_cast<char>(next() & 0xFF);  // any byte
            else text += pieces[next() % pieces.size()];
        }
        const Tokens tokens = attn::tokenize(text);
        std::size_t bytes = 0;
        for (const auto& t : tokens) {
            bytes += t.size();
            REQUIRE(!t.empty());
            REQUIRE(is_valid_utf8(t));
            REQUIRE(t.find_first_of(" \t\n\r\v\f") == std::string::npos);
            REQUIRE(t.find("\u3000") == std::string::npos);
        }
        REQUIRE(bytes <= 3 * text.size());
        REQUIRE(attn::tokenize(text) == tokens);
        INFO("text = " << text << ", joined = " << join(tokens));
        REQUIRE(attn::tokenize(join(tokens)) == tokens);
        ++checked;
    }
    CHECK(checked == 2000);

    // Valid text with no white space: the tokens put together are the text itself.
    const std::string mixed = "我爱NLP模型！don't👩‍💻🇨🇳1️⃣café2.13米Привет，สวัสดี";
    std::string together;
    for (const auto& t : attn::tokenize(mixed)) together += t;
    CHECK(together == mixed);
}

// [SECTION] Generated embeddings -------------------------------------------------------------

TEST_CASE("generated_embeddings: shape, range, determinism") {
    const Tokens tokens = attn::tokenize("A dog ate the food because it was hungry.");
    const attn::Matrix x = attn::generated_embeddings(tokens, 16);
    CHECK(x.rows() == 10);
    CHECK(x.cols() == 16);
    CHECK(x.minCoeff() >= -1.0f);
    CHECK(x.maxCoeff() < 1.0f);
    CHECK(attn::generated_embeddings(tokens, 16) == x);
    CHECK(attn::generated_embeddings({}, 8).rows() == 0);
    CHECK(attn::generated_embeddings({}, 8).cols() == 8);
    CHECK(attn::generated_embeddings({"x"}, 0).size() == 0);
}

TEST_CASE("generated_embeddings: a row depends on the token text alone") {
    const attn::Matrix x = attn::generated_embeddings({"我", "爱", "我", "你"}, 8);
    CHECK(x.row(0) == x.row(2));
    CHECK(x.row(0) != x.row(1));
    CHECK(x.row(1) != x.row(3));
    // Same token, another position, another sequence: the same row.
    const attn::Matrix y = attn::generated_embeddings({"他", "爱", "猫"}, 8);
    CHECK(y.row(1) == x.row(1));
    // A smaller d_model gives a prefix of the same row.
    const attn::Matrix z = attn::generated_embeddings({"爱"}, 3);
    CHECK(z.row(0) == x.row(1).head(3));
    // Near-identical texts give unrelated rows.
    const attn::Matrix w = attn::generated_embeddings({"cat", "Cat", "cat "}, 4);
    CHECK(w.row(0) != w.row(1));
    CHECK(w.row(0) != w.row(2));
}

TEST_CASE("generated_embeddings: entries look uniform on [-1, 1), rows look unrelated") {
    Tokens tokens;
    for (int k = 0; k < 2000; ++k) tokens.push_back("token" + std::to_string(k));
    const int d = 32;
    const attn::Matrix x = attn::generated_embeddings(tokens, d);
    const double n = static_cast<double>(x.size());
    const double mean = x.cast<double>().sum() / n;
    const double var = (x.cast<double>().array() - mean).square().sum() / n;
    MESSAGE("mean " << mean << ", variance " << var << " (uniform: 0, 1/3)");
    CHECK(std::abs(mean) < 0.01);
    CHECK(std::abs(var - 1.0 / 3.0) < 0.01);
    // Cosine of neighbouring rows: centred near 0, never close to ±1.
    double max_cos = 0.0, sum_cos = 0.0;
    for (Eigen::Index i = 0; i + 1 < x.rows(); ++i) {
        const double c = x.row(i).dot(x.row(i + 1)) / (x.row(i).norm() * x.row(i + 1).norm());
        max_cos = std::max(max_cos, std::abs(c));
        sum_cos += c;
    }
    MESSAGE("neighbouring rows: mean cosine " << sum_cos / (x.rows() - 1) << ", max |cosine| "
                                              << max_cos);
    CHECK(std::abs(sum_cos / static_cast<double>(x.rows() - 1)) < 0.02);
    CHECK(max_cos < 0.8);
    std::set<std::vector<float>> distinct;
    for (Eigen::Index i = 0; i < x.rows(); ++i)
        distinct.insert(std::vector<float>(x.row(i).data(), x.row(i).data() + d));
    CHECK(distinct.size() == tokens.size());
}

TEST_CASE("generated_embeddings: frozen bit patterns (native and wasm must agree)") {
    // Computed once by this implementation (and checked against an independent Python
    // FNV-1a + splitmix64) and frozen: a change here means every scene with generated
    // embeddings shows different numbers, or that a build drifted.
    const attn::Matrix x = attn::generated_embeddings({"I", "我", "", "👩‍💻"}, 4);
    const std::uint32_t expected[4][4] = {
        {0x3E3CD9F0u, 0x3F20B2C2u, 0xBF59F1B0u, 0x3ED84788u},  //  0.184425  0.627728 ...
        {0xBF04DFAEu, 0x3F5996FCu, 0xBEB21654u, 0xBD307920u},  // -0.519038  0.849960 ...
        {0x3F0702F8u, 0xBF5FE64Cu, 0xBEACF16Cu, 0xBF2734DCu},  //  0.527389 -0.874608 ...
        {0x3E1E8228u, 0x3EF56540u, 0x3E9FE5A0u, 0xBF2F6FA2u},  //  0.154793  0.479288 ...
    };
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
            INFO("row " << i << " column " << j << " value " << x(i, j));
            CHECK(float_bits(x(i, j)) == expected[i][j]);
        }
}

// [SECTION] Sinusoidal positions -------------------------------------------------------------

TEST_CASE("sinusoidal_positions: hand-computed values") {
    const attn::Matrix pe = attn::sinusoidal_positions(3, 4);
    CHECK(pe.rows() == 3);
    CHECK(pe.cols() == 4);
    // pos 0: sin 0 = 0, cos 0 = 1.
    CHECK(pe(0, 0) == 0.0f);
    CHECK(pe(0, 1) == 1.0f);
    CHECK(pe(0, 2) == 0.0f);
    CHECK(pe(0, 3) == 1.0f);
    // pos 1, d = 4: 10000^(0/4) = 1 and 10000^(2/4) = 100.
    CHECK(pe(1, 0) == doctest::Approx(0.8414709848).epsilon(1e-7));
    CHECK(pe(1, 1) == doctest::Approx(0.5403023059).epsilon(1e-7));
    CHECK(pe(1, 2) == doctest::Approx(0.0099998333).epsilon(1e-7));
    CHECK(pe(1, 3) == doctest::Approx(0.9999500004).epsilon(1e-7));
    // pos 2: sin 2, cos 2, sin 0.02, cos 0.02.
    CHECK(pe(2, 0) == doctest::Approx(0.9092974268).epsilon(1e-7));
    CHECK(pe(2, 1) == doctest::Approx(-0.4161468365).epsilon(1e-7));
    CHECK(pe(2, 2) == doctest::Approx(0.0199986667).epsilon(1e-7));
    CHECK(pe(2, 3) == doctest::Approx(0.9998000067).epsilon(1e-7));
}

TEST_CASE("sinusoidal_positions: odd d_model ends on a sin column") {
    const attn::Matrix pe = attn::sinusoidal_positions(2, 5);
    CHECK(pe.cols() == 5);
    CHECK(pe.row(0) == (attn::RowVector(5) << 0, 1, 0, 1, 0).finished());
    // Column 4 is 2i = 4: sin(1 / 10000^(4/5)) = sin(1 / 1584.89...).
    CHECK(pe(1, 4) == doctest::Approx(std::sin(1.0 / std::pow(10000.0, 0.8))).epsilon(1e-7));
    CHECK(pe(1, 3) == doctest::Approx(std::cos(1.0 / std::pow(10000.0, 0.4))).epsilon(1e-7));
    CHECK(attn::sinusoidal_positions(0, 4).rows() == 0);
    CHECK(attn::sinusoidal_positions(3, 1) == (attn::Matrix(3, 1) << 0, static_cast<float>(std::sin(1.0)),
                                               static_cast<float>(std::sin(2.0))).finished());
}

TEST_CASE("sinusoidal_positions: matches the formula over many shapes") {
    // Naive oracle: the paper's formula in long double, entry by entry.
    double max_diff = 0.0;
    for (const int d : {1, 2, 3, 4, 7, 8, 16, 63, 64}) {
        const int T = 50;
        const attn::Matrix pe = attn::sinusoidal_positions(T, d);
        REQUIRE(pe.rows() == T);
        REQUIRE(pe.cols() == d);
        for (int pos = 0; pos < T; ++pos)
            for (int c = 0; c < d; ++c) {
                const long double i2 = c - c % 2;
                const long double angle = pos / std::pow(10000.0L, i2 / d);
                const long double want = c % 2 == 0 ? std::sin(angle) : std::cos(angle);
                max_diff = std::max(max_diff, static_cast<double>(std::abs(pe(pos, c) - want)));
            }
    }
    MESSAGE("max |PE - formula| = " << max_diff);
    CHECK(max_diff < 1e-6);
    const attn::Matrix pe = attn::sinusoidal_positions(50, 64);
    CHECK(pe.minCoeff() >= -1.0f);
    CHECK(pe.maxCoeff() <= 1.0f);
}
