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

std::optional<HeadProbe> head_probe(const Tokenizer& tok, const ModelConfig& config,
                                    const std::function<std::vector<int>(std::vector<int>)>& specials) {
    std::vector<int> ordinary, delimiters;
    for (int id = 0; id < std::min(tok.size(), config.vocab_size); ++id) {
        const std::string text = tok.text(id);
        if (is_special_text(text)) continue;
        (is_delimiter_text(text) ? delimiters : ordinary).push_back(id);
    }
    const int around = static_cast<int>(specials({}).size());
    const int n = std::min(32, (config.max_positions - around) / 2);
    if (ordinary.empty() || n < 2) return std::nullopt;
    std::vector<int> drawn;
    std::vector<bool> delimiter;
    SplitMix64 rng{2022};
    for (int j = 0; j < n; ++j) {
        const bool d = j % 4 == 3 && !delimiters.empty();
        const std::vector<int>& from = d ? delimiters : ordinary;
        drawn.push_back(from[rng.next() % from.size()]);
        delimiter.push_back(d);
    }
    for (int j = 0; j < n; ++j) {  // the same again
        drawn.push_back(drawn[static_cast<size_t>(j)]);
        delimiter.push_back(delimiter[static_cast<size_t>(j)]);
    }
    HeadProbe p;
    p.n = n;
    p.ids = specials(drawn);
    const auto at = std::search(p.ids.begin(), p.ids.end(), drawn.begin(), drawn.end());
    if (at == p.ids.end()) return std::nullopt;  // a post-processor that rewrites the ids
    p.first = static_cast<int>(at - p.ids.begin());
    p.delimiter.assign(p.ids.size(), false);
    std::copy(delimiter.begin(), delimiter.end(), p.delimiter.begin() + p.first);
    return p;
}

// [SECTION] Scores and labels ----------------------------------------------------------------

HeadScores head_scores(const HeadProbe& probe, const StackRun& run) {
    HeadScores s;
    s.layers = static_cast<int>(run.layers.size());
    s.heads = run.heads;
    for (auto& v : s.score) v.reserve(static_cast<size_t>(s.layers * s.heads));
    const int T = static_cast<int>(probe.ids.size()), n = probe.n, first = probe.first, end = first + 2 * n;
    const int rows = end - std::max(first, 1);  // the drawn tokens past position 0
    for (const BlockRun& block : run.layers)
        for (const Matrix& A : block.weights) {  // T×T
            double prev = 0, induction = 0, sink = 0, delimiter = 0, duplicate = 0;
            for (int i = std::max(first, 1); i < end; ++i) {
                prev += A(i, i - 1);
                sink += A(i, 0);
                for (int j = 0; j < T; ++j)
                    if (probe.delimiter[static_cast<size_t>(j)]) delimiter += A(i, j);
            }
            for (int i = first + n; i < end; ++i) induction += A(i, i - n + 1), duplicate += A(i, i - n);
            s.score[0].push_back(static_cast<float>(prev / rows));
            s.score[1].push_back(static_cast<float>(induction / n));
            s.score[2].push_back(static_cast<float>(sink / rows));
            s.score[3].push_back(static_cast<float>(delimiter / rows));
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
