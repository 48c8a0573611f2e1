// transformer.hpp: GPT-2, BERT and Marian forward passes on core's kernels, keeping what the
// views need: every layer's attention weights per head and the input X of every attention
// block, from which any block's whole pipeline (Q, K, V, scores, …) is recomputed on demand.
//
//   gpt2    decoder-only: causal self-attention, pre-LN, learned positions, ln_f, tied LM head
//   bert    encoder-only: bidirectional self-attention, post-LN, token types, no LM head
//   marian  encoder-decoder: encoder self, decoder causal self and cross attention, post-LN,
//           sinusoidal positions, scaled embeddings, SiLU, tied LM head + final_logits_bias
//
// [SECTION] Weights
// [SECTION] A forward pass
// [SECTION] Any block's whole pipeline, again
// [SECTION] Generation with a KV cache
#pragma once

#include "attention.hpp"
#include "config.hpp"
#include "files.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace attn {

// [SECTION] Weights --------------------------------------------------------------------------

struct ModelWeights;  // every tensor in F32, laid out for the kernels (transformer.cpp)

// A model's configuration and weights. Immutable once loaded; copies share the weights.
struct Model {
    ModelConfig config;
    std::shared_ptr<const ModelWeights> weights;

    std::int64_t parameters() const;     // distinct parameters (a tied head counted once)
    std::size_t weight_bytes() const;    // the F32 weights as held in memory
    // Memory a run over T tokens needs (T source and T target tokens for marian): the kept
    // maps and block inputs plus the working buffers.
    std::size_t activation_bytes(int T) const;
};

// Loads model.safetensors (F32, F16 or BF16; tensor names with or without the base model's
// prefix, GPT-2's attn.bias / attn.masked_bias buffers ignored) in steps, so a page can draw
// between them. Every tensor is checked against the config: a missing tensor, a wrong shape or
// dtype throws ModelError(file, TENSOR, "expected shape [768, 2304], got [768, 768]").
class ModelLoader {
public:
    // `file` is how messages name the checkpoint ("gpt2/model.safetensors"). Reads the header.
    ModelLoader(ModelConfig config, std::shared_ptr<const FileBytes> safetensors, std::string file);
    ~ModelLoader();
    bool done() const;
    float progress() const;  // 0 … 1, by bytes converted
    void step();             // converts the next tensor(s), about 16 MB
    Model take();            // once done()

private:
    struct State;
    std::unique_ptr<State> state_;
};
Model load_model_weights(ModelConfig config, std::shared_ptr<const FileBytes> safetensors, const std::string& file);

// [SECTION] A forward pass -------------------------------------------------------------------

// ids: gpt2/bert: the tokens; marian: the decoder's tokens (starting with decoder_start_id).
// source_ids: marian only, the encoder's tokens. Ids are checked against the vocabulary and the
// length against max_positions by the caller (model.hpp), as are empty inputs.
struct RunInput {
    std::vector<int> ids;
    std::vector<int> source_ids;
};

// One attention block of one layer.
struct BlockRun {
    Matrix x;                     // T_q×d_model: what the block's Q projection reads (after the
                                  // layer norm before it, in pre-LN models); its K and V read
                                  // the same x (self) or the encoder's output (cross)
    std::vector<Matrix> weights;  // n_heads maps T_q×T_k (softmax rows; a causal map is 0 above the diagonal)
};

struct StackRun {
    std::string name;             // SPEC.md §3: "attention"; "encoder_attention", "decoder_attention", "cross_attention"
    bool causal = false, cross = false;
    int heads = 0;
    std::vector<BlockRun> layers;
};

struct RunResult {
    std::vector<StackRun> stacks;  // gpt2, bert: one; marian: encoder, decoder, cross
    Matrix encoder_output;         // marian: T_src×d_model, the cross blocks' keys and values
    Matrix hidden;                 // T×d_model: the last layer's output (after ln_f for gpt2; the decoder's for marian)
    std::vector<float> logits;     // the LM head at the last position (gpt2, marian), [vocab_size]; bert: empty
};

// A forward pass in steps (one attention or feed-forward sub-block each), so a page stays
// responsive: while (!f.done()) f.step(ctx); then take().
class Forward {
public:
    Forward(const Model& model, RunInput input);
    ~Forward();
    bool done() const;
    float progress() const;  // 0 … 1
    void step(kernels::Context& ctx);
    RunResult take();        // once done()

private:
    struct State;
    std::unique_ptr<State> state_;
};
RunResult forward(kernels::Context& ctx, const Model& model, const RunInput& input);

// [SECTION] Any block's whole pipeline, again ------------------------------------------------

// One block's attention recomputed from its kept input with the model's W_q, W_k, W_v, W_o and
// biases in the row-vector convention of attention.hpp (Q = X·W_q + b_q per head, concat·W_o +
// b_o), with every intermediate: the numbers of the forward pass (the same kernels on the same
// inputs), for the Steps view. The scale is 1/√d_k, the mask causal for a causal stack.
struct BlockTrace {
    Weights weights;        // the block's projections as d_model×d_model matrices
    AttentionOptions options;
    MultiHeadTrace trace;   // x_q, x_kv, heads (q, k, v, scores, scaled, weights, output), concat, output
};
BlockTrace block_trace(kernels::Context& ctx, const Model& model, const RunResult& run, int stack, int layer);

// [SECTION] Generation with a KV cache -------------------------------------------------------

// A decoder (gpt2, or marian's over a given encoder output) fed one token at a time; every
// layer's keys and values are cached, so a step costs one row. Its logits equal those of a
// forward over the whole sequence.
class Decoder {
public:
    // marian: `encoder_output` from a forward over the source (RunResult::encoder_output).
    Decoder(const Model& model, Matrix encoder_output = {});
    ~Decoder();
    // Feeds one token at the next position; returns the LM head's logits there.
    std::vector<float> step(kernels::Context& ctx, int id);
    int length() const;  // tokens fed so far

private:
    struct State;
    std::unique_ptr<State> state_;
};

// Greedy decoding: starts from `prefix` (marian: [decoder_start_id]), appends the argmax until
// `eos` (when ≥ 0) or max_new tokens. Returns prefix + generated tokens.
std::vector<int> greedy(kernels::Context& ctx, const Model& model, const Matrix& encoder_output,
                        std::vector<int> prefix, int max_new, int eos);

}  // namespace attn
