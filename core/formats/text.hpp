// text.hpp: UTF-8 decoding, tokens from text, vectors for tokens that come without any, and
// byte sizes as people read them.
#pragma once

#include "attention.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

inline constexpr char32_t kReplacementCharacter = 0xFFFD;

// The code point that starts at text[pos]; pos moves past it. Well-formed means Table 3-7 of
// the Unicode standard: the shortest form (no overlongs such as C0 AF for '/'), no surrogates
// (U+D800..DFFF), nothing above U+10FFFF, no sequence cut short. Anything else returns U+FFFD
// and moves pos one byte only, so the bytes after a bad lead byte are read again on their own.
// A U+FFFD written in the text takes three bytes: U+FFFD with pos moved by one is a bad byte.
// pos at or past the end: U+FFFD, pos moved by one, nothing read.
char32_t decode_utf8(std::string_view text, std::size_t& pos);
// Appends the UTF-8 bytes of one code point.
void append_utf8(std::string& s, char32_t cp);
// The offset of the first byte that is not well-formed UTF-8 (as decode_utf8 reads it), or
// nullopt when the whole text is.
std::optional<std::size_t> first_bad_utf8(std::string_view text);

// Bytes as base64 (RFC 4648 §4, padded with '=': data: URIs), or with `url` as base64url (§5,
// '-' and '_', unpadded: the links' scenes).
std::string base64_encode(std::string_view bytes, bool url = false);

// A size in bytes as every message and panel writes it, in decimal units as the Hub and file
// managers do: "512 B", "118 kB", "12.3 MB", "1.5 GB".
std::string byte_size(double bytes);

// Splits UTF-8 text into tokens as a reader of the seeds would:
// - runs of Latin-script letters and digits (with their combining marks and inner
//   apostrophes, "don't") form one token; other scripts without spaces likewise;
// - every CJK ideograph, kana or hangul syllable is its own token (我爱你 → 我 爱 你);
// - every punctuation mark or symbol is its own token, except '.' or ',' between digits
//   (2.13, 3,000) and an apostrophe followed by a letter (don't); emoji stay whole, with
//   their modifiers, variation selectors and zero-width-joiner sequences;
// - white space separates and is dropped.
// Never splits a code point; bytes that are not valid UTF-8 become U+FFFD.
std::vector<std::string> tokenize(std::string_view text);

// T×d_model, one row per token, drawn from the token text alone (the same token gets the same
// row wherever it stands). Integer arithmetic and exact conversions only: bit-identical in the
// native and the wasm build. Entries are uniform on [-1, 1) (variance 1/3); a row for a
// smaller d_model is the start of the row for a larger one. T or d_model ≤ 0: empty.
Matrix generated_embeddings(const std::vector<std::string>& tokens, int d_model);

// The sinusoidal positional encoding of "Attention Is All You Need", T×d_model:
// PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model)).
Matrix sinusoidal_positions(int T, int d_model);

}  // namespace attn
