// utf8_reference.hpp: a naive UTF-8 decoder, the oracle for attn::decode_utf8 (test_text.cpp,
// fuzz_tokenizer.cpp). Written another way than text.cpp's table of lead bytes: the length
// comes from the lead byte's bit pattern, the bits are gathered, and the bytes are well-formed
// only when the result is a Unicode scalar value whose own (shortest) encoding is those bytes.
#pragma once

#include <cstddef>
#include <cstring>
#include <string_view>

namespace utf8_reference {

// The shortest UTF-8 form of cp into out (4 bytes of room); returns its length.
inline std::size_t encode(char32_t cp, unsigned char* out) {
    if (cp < 0x80) {
        out[0] = static_cast<unsigned char>(cp);
        return 1;
    }
    std::size_t n = cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    for (std::size_t k = n - 1; k > 0; --k, cp >>= 6) out[k] = static_cast<unsigned char>(0x80 | (cp & 0x3F));
    static constexpr unsigned char kLead[] = {0, 0, 0xC0, 0xE0, 0xF0};
    out[0] = static_cast<unsigned char>(kLead[n] | cp);
    return n;
}

struct Decoded {
    char32_t cp;
    std::size_t length;  // bytes read: 1 for a bad byte (cp is then U+FFFD)
};

// The code point at the start of s (not empty).
inline Decoded decode(std::string_view s) {
    const Decoded bad{0xFFFD, 1};
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned c = byte(0);
    const std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || n > s.size()) return bad;
    char32_t cp = n == 1 ? c : c & (0x7Fu >> n);
    for (std::size_t k = 1; k < n; ++k) {
        if ((byte(k) >> 6) != 0x2) return bad;
        cp = (cp << 6) | (byte(k) & 0x3Fu);
    }
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return bad;
    unsigned char again[4];
    if (encode(cp, again) != n || std::memcmp(again, s.data(), n) != 0) return bad;  // overlong
    return {cp, n};
}

}  // namespace utf8_reference
