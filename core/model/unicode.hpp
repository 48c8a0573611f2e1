// unicode.hpp: the Unicode classes and mappings the tokenizers need, from tables generated out
// of Python's unicodedata (scripts/unicode_tables.py → unicode_tables.inc), so they agree with
// the Python and JavaScript reference tokenizers.
#pragma once

#include "text.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace attn::unicode {

bool is_letter(char32_t c);           // \p{L}
bool is_number(char32_t c);           // \p{N}
bool is_js_space(char32_t c);         // JavaScript's \s (gpt-3-encoder's regex)
bool is_bert_whitespace(char32_t c);  // BERT: space, \t, \n, \r or Zs
bool is_bert_control(char32_t c);     // BERT: category C* but \t, \n, \r
bool is_bert_punctuation(char32_t c); // BERT: ASCII symbols 33–47, 58–64, 91–96, 123–126, or P*
bool is_cjk(char32_t c);              // BERT's "Chinese character" blocks
bool is_nonspacing_mark(char32_t c);  // Mn
// str.lower() and NFD of one character, as UTF-8.
void append_lower(std::string& out, char32_t c);
void append_nfd(std::string& out, char32_t c);

// The general category (Unicode 14, as Python's unicodedata.category; unassigned: Cn).
enum class Category : unsigned char { Lu, Ll, Lt, Lm, Lo, Mn, Mc, Me, Nd, Nl, No, Pc, Pd, Ps, Pe, Pi, Pf,
                                      Po, Sm, Sc, Sk, So, Zs, Zl, Zp, Cc, Cf, Cs, Co, Cn };
Category category(char32_t c);
bool is_white_space(char32_t c);  // the White_Space property: Rust's char::is_whitespace, Oniguruma's \s
int combining_class(char32_t c);  // canonical combining class (0 for starters)

// Unicode's normalization forms (UAX #15) of a whole text, as code points.
enum class Form { NFD, NFKD, NFC, NFKC };
std::u32string normalize(std::u32string_view text, Form form);

using attn::append_utf8;  // text.hpp's
// The code points of UTF-8 text (a bad byte reads as U+FFFD, as decode_utf8 does).
std::u32string decode(std::string_view text);

}  // namespace attn::unicode
