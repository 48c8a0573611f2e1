// why.hpp: why a model says what it says (SPEC.md §5 --lens, --attribute, --contrast,
// --corrupted): the logit lens, direct logit attribution per head, and activation patching, on
// the residual stream a run records (RunInput::record, transformer.hpp's Inside). Decoder-only
// models (gpt2 and the Llama-like families): their stream is a sum of what each part writes.
//
// [SECTION] Which models, which tokens
// [SECTION] The logit lens
// [SECTION] Token probabilities
// [SECTION] Direct logit attribution
// [SECTION] Activation patching
#pragma once

#include "model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string_view>
#include <vector>

namespace attn {

// [SECTION] Which models, which tokens -------------------------------------------------------

// Throws ModelError naming `field` unless the model has a residual stream the views read: bert
// has no LM head (it predicts no token: its maps and head tags are what it shows); marian's
// decoder renormalizes its stream after every sub-block (post-norm), so no part's write is
// its own.
void check_why(const LoadedModel& m, const std::string& field);
bool has_stream(const ModelConfig& c);  // check_why passes

// The one token `text` is (the tokenizer's ids without special tokens: " cat"), or "#ID", an id
// of the vocabulary. Throws ModelError naming `field`: text that is no token, or several (it
// names them), an id outside the vocabulary.
int one_token(const LoadedModel& m, std::string_view text, const std::string& field);

// [SECTION] The logit lens ------------------------------------------------------------------

struct TokenP {
    int id = 0;
    float p = 0;
};

// At one layer and position (nostalgebraist 2020; TransformerLens' accumulated_resid with
// apply_ln): the stream after that layer through the final norm and the LM head (stream_logits),
// softmax over the vocabulary (in double). `top`: the likeliest, ties to the smaller id. The
// target is the model's final prediction at that position (the last layer's top token); its
// rank counts from 1: 1 + the tokens with a larger logit, or an equal one and a smaller id.
struct LensCell {
    std::vector<TokenP> top;
    int target = 0, target_rank = 0;
    float target_p = 0;
};

struct Lens {
    int layers = 0, positions = 0;  // layers: n_layers + 1, row 0 the embeddings
    std::vector<LensCell> cells;    // [layer·positions + position]
    const LensCell& at(int layer, int position) const { return cells[static_cast<std::size_t>(layer * positions + position)]; }
};

// In steps, so a page stays responsive: each step reads the LM head on a band of one layer's
// rows, at most `band_logits` logits (rows × V; at least one row), the last layer first (its
// top tokens are the targets). `run`: recorded (RunInput::record); it must outlive this.
class LensRun {
public:
    LensRun(const Model& model, const RunResult& run, int top = 5, int band_logits = 1 << 22);
    bool done() const { return layer_ < 0; }
    float progress() const;  // 0 … 1, by rows read
    void step(kernels::Context& ctx);
    Lens take() { return std::move(lens_); }  // once done()

private:
    Model model_;  // a copy shares the weights
    const std::vector<Matrix>* streams_;
    int top_, band_;
    int layer_, row_ = 0;  // the next band's first row, of layer_ (−1: done)
    Lens lens_;
    std::vector<int> order_;
};
Lens logit_lens(kernels::Context& ctx, const Model& model, const RunResult& run, int top = 5);

// [SECTION] Token probabilities -------------------------------------------------------------

// How likely the model found each token of its text (CircuitsVis' coloured tokens): at position
// t ≥ 1, softmax (in double) of the logits the run read at t − 1 (the LM head on the final
// hidden row, as the forward's logits), as a LensCell whose target is the text's token ids[t]:
// its p and rank, and the likeliest `top` there. Position 0 has no prediction (an empty cell:
// top empty, target −1). Surprisal, where shown, is −log₂ p in bits.
struct TokenProbs {
    std::vector<LensCell> at;  // [T]
    int positions() const { return static_cast<int>(at.size()); }
};

// In steps like the lens: each reads the LM head on a band of rows, at most `band_logits`
// logits. `run` (its hidden rows: any decoder-only run with an LM head) must outlive this.
class TokenProbsRun {
public:
    TokenProbsRun(const Model& model, const RunResult& run, std::vector<int> ids, int top = 10, int band_logits = 1 << 22);
    bool done() const { return row_ >= probs_.positions(); }
    float progress() const;  // 0 … 1, by rows read
    void step(kernels::Context& ctx);
    TokenProbs take() { return std::move(probs_); }  // once done()

private:
    Model model_;
    const Matrix* hidden_;
    std::vector<int> ids_;
    int top_, band_;
    int row_ = 1;  // the next position whose prediction is read (from the row before it)
    TokenProbs probs_;
    std::vector<int> order_;
};
TokenProbs token_probs(kernels::Context& ctx, const Model& model, const RunResult& run, const std::vector<int>& ids, int top = 10);
// Surprisal in bits, −log₂ p (a p below float's least counts as that).
inline double surprisal_bits(float p) { return -std::log2(static_cast<double>(std::max(p, std::numeric_limits<float>::denorm_min()))); }

// [SECTION] Direct logit attribution -------------------------------------------------------------

// At the last position, each part's write to the stream read directly by the target's logit (or
// the target's less the contrast's): through the final norm with its scale frozen at its value on
// the whole stream (TransformerLens' apply_ln=True), and through Gemma's post-attention and
// post-feedforward norms frozen at theirs on the block's whole output; granite's residual and
// logit factors taken. Linear in each part, so the parts sum to the logit (before a final
// soft-cap: gemma2's; `total`):
//   embed      the embeddings' row
//   head       a head's output through its rows of W_o (without b_o): Σ_j w_j · v_j·W_o,h;
//              `sources` splits it over the source positions j
//   mlp        a layer's MLP (or experts), its biases included
//   bias       the attention's output biases, the norms' shifts (LayerNorm's β), the LM head's bias
struct Attribution {
    int target = 0, contrast = -1;  // -1: none
    int layers = 0, heads = 0, positions = 0;
    double total = 0, embed = 0, bias = 0;
    std::vector<double> head;     // [layer·heads + head]
    std::vector<double> mlp;      // [layer]
    std::vector<double> sources;  // [(layer·heads + head)·positions + j]
    double at(int layer, int h) const { return head[static_cast<std::size_t>(layer * heads + h)]; }
    double source(int layer, int h, int j) const { return sources[static_cast<std::size_t>((layer * heads + h) * positions + j)]; }
};

// run: recorded, of a decoder-only model (check_why). contrast: −1 for none.
Attribution attribute(kernels::Context& ctx, const Model& model, const RunResult& run, int target, int contrast = -1);

// [SECTION] Activation patching --------------------------------------------------------------

// Causal tracing (Meng et al. 2022) and head patching (Wang et al. 2022): the run on the
// corrupted text with one piece of the clean run's put in its place; each number is the share of
// the logit difference LD = logit(target) − logit(contrast) at the last position it restores,
// (LD_patched − LD_corrupted) / (LD_clean − LD_corrupted):
//   head   a head's output (weights·V_h before W_o, every position) from the clean run
//   resid  the stream's row at one position, after a layer (row 0: the embeddings), from the
//          clean run
// A patched run starts at the patched layer from the corrupted run's stream (RunInput::from).
struct Patching {
    int target = 0, contrast = 0;     // the LD's tokens
    // The contrast was not given: the corrupted run's prediction, or (same_prediction: that is
    // the target) the clean run's likeliest token other than the target.
    bool contrast_chosen = false, same_prediction = false;
    int layers = 0, heads = 0, positions = 0;
    double clean = 0, corrupted = 0;  // LD of each run
    std::vector<double> head;         // [layer·heads + head]
    std::vector<double> resid;        // [(n_layers + 1)·positions]: [layer·positions + position]
    double at(int layer, int h) const { return head[static_cast<std::size_t>(layer * heads + h)]; }
    double resid_at(int layer, int position) const { return resid[static_cast<std::size_t>(layer * positions + position)]; }
};

// The runs one sub-block at a time, so a page stays responsive and can stop (GPT-2 small at
// T = 32: 2 + 144 + 416 runs, most of them partial).
class PatchingRun {
public:
    // clean, corrupted: the same length, the same interventions (a decoder-only model).
    // contrast −1: chosen after the two runs (Patching::contrast_chosen).
    // Throws ModelError naming `field` when they differ in length.
    PatchingRun(const Model& model, RunInput clean, RunInput corrupted, int target, int contrast, const std::string& field);
    ~PatchingRun();
    bool done() const;
    float progress() const;  // 0 … 1, by sub-blocks run
    // Throws ModelError naming `field` when the clean and corrupted runs give the same LD.
    void step(kernels::Context& ctx);
    Patching take();  // once done()

private:
    struct State;
    std::unique_ptr<State> state_;
};
Patching patching(kernels::Context& ctx, const Model& model, const RunInput& clean, const RunInput& corrupted, int target,
                  int contrast, const std::string& field);

}  // namespace attn
