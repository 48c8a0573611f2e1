// heads.cpp: see heads.hpp.
#include "heads.hpp"

#include "unicode.hpp"

#include <algorithm>
#include <cstdint>
#include <string_view>

namespace attn {

// [SECTION] The probe ------------------------------------------------------------------------

namespace {

bool is_special_text(const std::string& t) {
    return t.size() >= 3 && ((t.front() == '<' && t.back() == '>') || (t.front() == '[' && t.back() == ']'));
}

// Its text without ASCII spaces is not empty and only . , ; : ! ? newline 。，；：！？、
bool is_delimiter_text(const std::string& t) {
    constexpr std::u32string_view kDelimiters = U".,;:!?\n。，；：！？、";
    bool any = false;
    for (char32_t c : unicode::decode(t)) {
        if (c == U' ') continue;
        if (kDelimiters.find(c) == std::u32string_view::npos) return false;
        any = true;
    }
    return any;
}

}  // namespace

std::optional<HeadProbe> head_probe(const Tokenizer& tok, const ModelConfig& config) {
    std::vector<int> ordinary, delimiters;
    for (int id = 0; id < std::min(tok.size(), config.vocab_size); ++id) {
        const std::string text = tok.text(id);
        if (is_special_text(text)) continue;
        (is_delimiter_text(text) ? delimiters : ordinary).push_back(id);
    }
    const int n = std::min(32, config.max_positions / 2);
    if (ordinary.empty() || n < 2) return std::nullopt;
    HeadProbe p;
    p.n = n;
    SplitMix64 rng{2022};
    for (int j = 0; j < n; ++j) {
        const bool delimiter = j % 4 == 3 && !delimiters.empty();
        const std::vector<int>& from = delimiter ? delimiters : ordinary;
        p.ids.push_back(from[rng.next() % from.size()]);
        p.delimiter.push_back(delimiter);
    }
    for (int j = 0; j < n; ++j) {  // the same again
        p.ids.push_back(p.ids[static_cast<size_t>(j)]);
        p.delimiter.push_back(p.delimiter[static_cast<size_t>(j)]);
    }
    return p;
}

// [SECTION] Scores and labels ----------------------------------------------------------------

HeadScores head_scores(const HeadProbe& probe, const StackRun& run) {
    HeadScores s;
    s.layers = static_cast<int>(run.layers.size());
    s.heads = run.heads;
    for (auto& v : s.score) v.reserve(static_cast<size_t>(s.layers * s.heads));
    const int T = 2 * probe.n, n = probe.n;
    for (const BlockRun& block : run.layers)
        for (const Matrix& A : block.weights) {  // T×T
            double prev = 0, induction = 0, sink = 0, delimiter = 0, duplicate = 0;
            for (int i = 1; i < T; ++i) {
                prev += A(i, i - 1);
                sink += A(i, 0);
                for (int j = 0; j < T; ++j)
                    if (probe.delimiter[static_cast<size_t>(j)]) delimiter += A(i, j);
            }
            for (int i = n; i < T; ++i) induction += A(i, i - n + 1), duplicate += A(i, i - n);
            s.score[0].push_back(static_cast<float>(prev / (T - 1)));
            s.score[1].push_back(static_cast<float>(induction / n));
            s.score[2].push_back(static_cast<float>(sink / (T - 1)));
            s.score[3].push_back(static_cast<float>(delimiter / (T - 1)));
            s.score[4].push_back(static_cast<float>(duplicate / n));
        }
    return s;
}

std::optional<HeadLabel> head_label(const HeadScores& s, int layer, int head) {
    std::optional<HeadLabel> best;
    for (int k = 0; k < kHeadKinds; ++k) {
        const float v = s.at(static_cast<HeadKind>(k), layer, head);
        if (v >= kHeadThresholds[static_cast<size_t>(k)] && (!best || v > best->score)) best = HeadLabel{static_cast<HeadKind>(k), v};
    }
    return best;
}

std::vector<HeadKind> head_tags(const HeadScores& s, int layer, int head) {
    std::vector<HeadKind> tags;
    for (int k = 0; k < kHeadKinds; ++k)
        if (s.at(static_cast<HeadKind>(k), layer, head) >= kHeadThresholds[static_cast<size_t>(k)]) tags.push_back(static_cast<HeadKind>(k));
    return tags;
}

}  // namespace attn
