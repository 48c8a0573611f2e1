// heads.hpp: what a self-attention head does, measured with the standard scores on one probe
// (docs/MODELS.md "Head scores"; training/heads.py is the same in Python, and the tests hold
// the two together):
// Rows i are the probe's drawn tokens past position 0 (not the special tokens around them):
//   prev       mean of A[i][i−1]: the previous-token head
//   induction  over the second copy, mean of A[i][i−n+1]: the token after the previous
//              occurrence of the current one (Olsson et al. 2022)
//   sink       mean of A[i][0]: the first-token ("sink") head; position 0 is the model's BOS
//              where its texts start with one (tagged from 0.3, Gu et al. 2024's α)
//   delimiter  mean of the weight on delimiter tokens (. , ; : ! ? newline 。，；：！？、)
//   duplicate  over the second copy, mean of A[i][i−n]: the previous occurrence of the
//              current token itself (TransformerLens's duplicate-token head)
// The probe: n = min(32, (positions − specials) / 2) tokens drawn with splitmix64 from seed 2022
// (every fourth a delimiter, the others ordinary tokens), then the same n again, with the
// special tokens the model's texts get around them (encode_text's: Llama's BOS, BERT's [CLS] …
// [SEP], none for GPT-2), so a head that sinks on BOS in every text does here too.
//
// [SECTION] The probe
// [SECTION] Scores and labels
#pragma once

#include "tokenizer.hpp"
#include "transformer.hpp"

#include <array>
#include <functional>
#include <optional>
#include <vector>

namespace attn {

// [SECTION] The probe ------------------------------------------------------------------------

struct HeadProbe {
    int n = 0;                    // the repeated half's length
    int first = 0;                // the drawn tokens are ids[first … first + 2n)
    std::vector<int> ids;         // with the special tokens around them
    std::vector<bool> delimiter;  // per position: the token is a drawn delimiter
};
// `specials` puts the model's special tokens around drawn ids (with_model_specials). nullopt
// when the vocabulary has no ordinary token, or the model fewer than 4 positions beside them.
std::optional<HeadProbe> head_probe(const Tokenizer& tokenizer, const ModelConfig& config,
                                    const std::function<std::vector<int>(std::vector<int>)>& specials);

// [SECTION] Scores and labels ----------------------------------------------------------------

enum class HeadKind { Prev, Induction, Sink, Delimiter, Duplicate };
inline constexpr int kHeadKinds = 5;
inline constexpr std::array<const char*, kHeadKinds> kHeadKindNames = {"prev", "induction", "sink", "delimiter", "duplicate"};
// SPEC.md §5's names in `attnviz run --json`: its scores' keys and its tags.
inline constexpr std::array<const char*, kHeadKinds> kHeadScoreNames = {"previous_token", "induction", "sink", "delimiter",
                                                                        "duplicate_token"};
inline constexpr std::array<const char*, kHeadKinds> kHeadTagNames = {"previous-token", "induction", "sink", "delimiter",
                                                                      "duplicate-token"};
// A label is given from these scores on (docs/MODELS.md).
inline constexpr std::array<float, kHeadKinds> kHeadThresholds = {0.5f, 0.4f, 0.3f, 0.5f, 0.4f};

struct HeadScores {
    int layers = 0, heads = 0;
    std::array<std::vector<float>, kHeadKinds> score;  // [kind][layer·heads + head]

    float at(HeadKind k, int layer, int head) const { return score[static_cast<size_t>(k)][static_cast<size_t>(layer * heads + head)]; }
};
// The scores of one self-attention stack's run on the probe (stack 0 of gpt2 and bert).
HeadScores head_scores(const HeadProbe& probe, const StackRun& run);

struct HeadLabel {
    HeadKind kind;
    float score;
};
// The kind whose score is highest among those that clear their threshold, or nullopt.
std::optional<HeadLabel> head_label(const HeadScores& s, int layer, int head);
// Every kind that clears its threshold, in kHeadKinds' order.
std::vector<HeadKind> head_tags(const HeadScores& s, int layer, int head);

}  // namespace attn
