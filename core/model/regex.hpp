// regex.hpp: a small backtracking regular expression matcher over code points, for the
// patterns tokenizer.json files carry (their Split pre-tokenizers and Replace normalizers and
// decoders). Hugging Face's tokenizers compiles them with Oniguruma (Ruby syntax); this reads
// the subset real files use and matches it as Oniguruma does (leftmost, alternatives in order,
// greedy quantifiers backtracking):
//   literals and escapes      a \. \t \n \r \f \v \e \0 \xHH \x{H…} \uHHHH
//   classes                   . [abc] [^a-z] \d \D \w \W \s \S \h \H \p{L} \P{N} \p{^Lu} and
//                             every general category (L Lu Ll Lt Lm Lo LC M Mn Mc Me N Nd Nl No P
//                             Pc Pd Ps Pe Pi Pf Po S Sm Sc Sk So Z Zs Zl Zp C Cc Cf Cs Co Cn, or
//                             their long names: Letter, Mark, Number, …)
//   groups                    (…) (?:…) (?i:…) (?i) (?-i) (?=…) (?!…) (?>…) (atomic)
//   quantifiers               * + ? {n} {n,} {n,m}, lazy (*?) and possessive (*+)
//   anchors                   ^ $ (lines, as in Ruby) \A \z \Z \b \B
//   case-insensitive          Unicode simple case folding (so (?i:'s) also matches 'ſ)
// Unicode classes follow Unicode 14 (unicode.hpp); \s is White_Space, \w letters, marks,
// decimal digits and connector punctuation, \d decimal digits (Oniguruma's Unicode meanings).
// Anything else (lookbehind, backreferences, named groups, script names, class intersections)
// is refused when the pattern is read: std::invalid_argument says what and where.
// A search that would backtrack without end (more than kStepLimit steps, plus 64 for each
// character it may start at, or nesting deeper than kDepthLimit) is given up as no match:
// tokenizer files never come near it (Llama 3's pattern takes a few steps a character), fuzzed
// patterns may.
//
// [SECTION] The pattern
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace attn {

// [SECTION] The pattern ----------------------------------------------------------------------

class Regex {
public:
    static constexpr long kStepLimit = 1'000'000;
    static constexpr int kDepthLimit = 2'000;
    struct Node;  // regex.cpp

    explicit Regex(std::string_view pattern);  // UTF-8; throws std::invalid_argument
    ~Regex();
    Regex(Regex&&) noexcept;
    Regex& operator=(Regex&&) noexcept;

    // The leftmost match in `text` that starts at `from` or later: [begin, end) in code points.
    std::optional<std::pair<size_t, size_t>> find(std::u32string_view text, size_t from = 0) const;
    // Every match, left to right, as Oniguruma's find_iter gives them: after an empty match the
    // search goes on one character later.
    std::vector<std::pair<size_t, size_t>> find_all(std::u32string_view text) const;

private:
    std::vector<std::unique_ptr<Node>> nodes_;  // owns every node; nodes_[root_] is the pattern
    size_t root_ = 0;
};

}  // namespace attn
