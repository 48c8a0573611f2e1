// fuzz_tokenizer.cpp: libFuzzer target for attn::tokenize. Any input bytes; traps when an
// invariant of text.hpp breaks.
//
//   clang++-14 -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -I core/formats -I core/math \
//     -I /usr/include/eigen3 core/formats/text.cpp tests/fuzz/fuzz_tokenizer.cpp -o fuzz_tokenizer
//   cp -r tests/fuzz/corpus/tokenizer /tmp/corpus && ./fuzz_tokenizer /tmp/corpus
//
// Invariants, for every input:
//   1. every token is non-empty, valid UTF-8, and holds no white space or control character;
//   2. the tokens hold at most 3 bytes per input byte (a bad byte grows into U+FFFD);
//   3. tokenizing twice gives the same tokens;
//   4. tokenizing the tokens joined by spaces gives them back, and each token alone is
//      one token (tokens do not depend on what stood around them);
//   5. the U+FFFDs out are the bad bytes in plus the U+FFFDs already there;
//   6. valid input loses no letter: ASCII letters and digits, and CJK ideographs, are all
//      still there, in the same number;
//   7. attn::decode_utf8 agrees with the reference at every byte of the input.
// The reference decoder (tests/utf8_reference.hpp) is written apart from the tokenizer's: it
// decodes first and rejects overlongs, surrogates and out-of-range values by value afterwards.

#include "text.hpp"
#include "../utf8_reference.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace {

struct Decoded {
    std::vector<char32_t> code_points;  // the well-formed ones, in order
    std::size_t bad_bytes = 0;
};

Decoded reference_decode(std::string_view s) {
    Decoded out;
    for (std::size_t i = 0; i < s.size();) {
        const utf8_reference::Decoded d = utf8_reference::decode(s.substr(i));
        if (d.length == 1 && d.cp == 0xFFFD)  // ASCII never decodes to U+FFFD
            ++out.bad_bytes;
        else
            out.code_points.push_back(d.cp);
        i += d.length;
    }
    return out;
}

bool separates(char32_t cp) {
    return cp <= 0x20 || (cp >= 0x7F && cp <= 0xA0) || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200B) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
           cp == 0x205F || cp == 0x3000;
}

bool is_ascii_alnum(char32_t cp) {
    return (cp >= '0' && cp <= '9') || (cp >= 'A' && cp <= 'Z') || (cp >= 'a' && cp <= 'z');
}

bool is_ideograph(char32_t cp) { return cp >= 0x4E00 && cp <= 0x9FFF; }

template <class Pred>
std::size_t count(const std::vector<char32_t>& cps, Pred pred) {
    std::size_t n = 0;
    for (const char32_t cp : cps) n += pred(cp) ? 1 : 0;
    return n;
}

void check(bool ok) {
    if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const std::vector<std::string> tokens = attn::tokenize(text);

    std::size_t bytes = 0;
    std::vector<char32_t> all_out;
    for (const std::string& t : tokens) {
        check(!t.empty());                                            // 1
        const Decoded d = reference_decode(t);
        check(d.bad_bytes == 0);
        for (const char32_t cp : d.code_points) check(!separates(cp));
        all_out.insert(all_out.end(), d.code_points.begin(), d.code_points.end());
        bytes += t.size();
    }
    check(bytes <= 3 * size);                                         // 2
    check(attn::tokenize(text) == tokens);                            // 3

    std::string joined;
    for (const std::string& t : tokens) {
        if (!joined.empty()) joined += ' ';
        joined += t;
        const std::vector<std::string> alone = attn::tokenize(t);   // 4
        check(alone.size() == 1 && alone[0] == t);
    }
    check(attn::tokenize(joined) == tokens);

    const Decoded in = reference_decode(text);                       // 5
    const auto is_fffd = [](char32_t cp) { return cp == 0xFFFD; };
    check(count(all_out, is_fffd) == in.bad_bytes + count(in.code_points, is_fffd));

    if (in.bad_bytes == 0) {                                          // 6
        check(count(all_out, is_ascii_alnum) == count(in.code_points, is_ascii_alnum));
        check(count(all_out, is_ideograph) == count(in.code_points, is_ideograph));
    }

    for (std::size_t i = 0; i < size; ++i) {                          // 7
        const utf8_reference::Decoded want = utf8_reference::decode(text.substr(i));
        std::size_t pos = i;
        check(attn::decode_utf8(text, pos) == want.cp && pos == i + want.length);
    }
    return 0;
}
