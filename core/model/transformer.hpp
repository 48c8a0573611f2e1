// transformer.hpp: the forward passes of every family (config.hpp, families/*.cpp) on core's
// kernels, keeping what the views need: every layer's attention weights per head and the input X
// of every attention block, from which any block's whole pipeline (Q, K, V, scores, …) is
// recomputed on demand.
//
//   gpt2    decoder-only: causal self-attention, pre-LN, learned positions, ln_f, tied LM head
//   bert    encoder-only: bidirectional self-attention, post-LN, token types, no LM head
//   marian  encoder-decoder: encoder self, decoder causal self and cross attention, post-LN,
//           sinusoidal positions, scaled embeddings, SiLU, tied LM head + final_logits_bias
//   llama, mistral, qwen2, qwen3, gemma2, gemma3_text, phi3: decoder-only, RMSNorm, rotary
//           positions, grouped-query attention, gated MLPs, sliding windows (families/*.cpp)
//
// [SECTION] Weights
// [SECTION] Interventions: heads knocked out, tokens hidden
// [SECTION] A forward pass
// [SECTION] Any block's whole pipeline, again
// [SECTION] Generation with a KV cache, greedy or sampled
#pragma once

#include "attention.hpp"
#include "attention_maps.hpp"
#include "config.hpp"
#include "files.hpp"
#include "rope.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace attn {

// [SECTION] Weights --------------------------------------------------------------------------

struct ModelWeights;  // every tensor in F32, laid out for the kernels (family.hpp)

// A model's configuration and weights. Immutable once loaded; copies share the weights.
struct Model {
    ModelConfig config;
    std::shared_ptr<const ModelWeights> weights;

    std::int64_t parameters() const;     // distinct parameters (a tied head counted once)
    std::size_t weight_bytes() const;    // the F32 weights as held in memory
    // The checkpoint's tensors as stored: "BF16 1.19 GB" (the dtype of most of their bytes).
    std::string checkpoint_text() const;
    // Memory a run over T tokens needs (T source and T target tokens for marian): what it keeps
    // (the maps and block inputs when `maps`, and always every block's Q, K and row statistics)
    // plus the working buffers. MODELS.md states the formula.
    std::uint64_t activation_bytes(int T, bool maps = true) const;  // 64-bit: wasm32's size_t cannot hold every map's
};

// Bytes [begin, end) of one of a checkpoint's files.
struct FileRange {
    std::string file;  // its name among the model's files: "model.safetensors", a shard's
    std::size_t begin = 0, end = 0;
    std::size_t size() const { return end - begin; }
    friend bool operator==(const FileRange&, const FileRange&) = default;
};

// Loads model.safetensors, or the shards model.safetensors.index.json names (F32, F16 or BF16;
// tensor names with or without the base model's prefix, GPT-2's attn.bias / attn.masked_bias
// buffers ignored) in steps, so a page can draw between them. Every tensor is checked against
// the config: a missing tensor, a wrong shape or dtype throws ModelError(file, TENSOR,
// "expected shape [768, 2304], got [768, 768]"); a shard missing, or an index naming a tensor
// its shard lacks, throws too.
//
// The files are read a window at a time, in the order of their bytes: a window is about
// kWindowBytes (16 MB) of one file (or one read's, when bigger: a tensor's rows, the rows of a Linear's
// weight that are one part of its packing, kernels::pack_step; GPT-2's Conv1D whole), and each
// tensor goes from the window to its place: F32 norms and biases converted by rows, Linears'
// weights and tables packed by columns (kernels::pack_columns), so no tensor is ever held
// whole beside its packing. A mapped or owned file holds every window (a mapped one gives each
// window's pages back once read: FileBytes::done_with). A sliced file (FileBytes::sliced, the
// page's) holds only its header: step() stops at a window it lacks, wanted() names it, and
// the page writes its bytes into window() and calls filled(); one window is ever allocated.
class ModelLoader {
public:
    static constexpr std::size_t kWindowBytes = 16u << 20;
    // `file` is how messages name the checkpoint ("gpt2/model.safetensors"). Reads the header.
    // `window_bytes`: the windows' size (the tests make it small).
    ModelLoader(ModelConfig config, std::shared_ptr<const FileBytes> safetensors, std::string file,
                std::size_t window_bytes = kWindowBytes);
    // The checkpoint of a model's files: the index and its shards, or model.safetensors.
    ModelLoader(ModelConfig config, const ModelFiles& files, std::size_t window_bytes = kWindowBytes);
    ~ModelLoader();
    bool done() const;
    float progress() const;  // 0 … 1, by bytes read
    void step();             // reads the next window(s), about 16 MB, unless wanted()
    Model take();            // once done() (steps until then: a sliced file must be filled first)
    // A sliced file's window that step() waits for, until filled().
    const std::optional<FileRange>& wanted() const;
    std::uint8_t* window();  // where wanted()'s bytes go: wanted()->size() of them
    void filled();           // they are there

private:
    struct State;
    std::unique_ptr<State> state_;
};
Model load_model_weights(ModelConfig config, std::shared_ptr<const FileBytes> safetensors, const std::string& file);

// [SECTION] Interventions: heads knocked out, tokens hidden --------------------------------

// The attention stacks a forward pass keeps, in RunResult::stacks' order: one ("attention"),
// but marian's three (SPEC.md §3's names).
struct StackShape {
    std::string name;
    bool causal = false, cross = false;
    int layers = 0, heads = 0;
};
std::vector<StackShape> stack_shapes(const ModelConfig& config);

// The stacks of RunResult::stacks, by index: the one stack (gpt2, bert, the Llama-like) or
// Marian's encoder self attention; Marian's decoder self attention; its cross attention.
enum StackIndex : int { kFirstStack = 0, kDecoderStack = 1, kCrossStack = 2 };
// Whether Interventions::hidden tokens are keys of that stack: every stack's but Marian's decoder
// self attention (its keys are the target's tokens; the others' are the text's or the source's).
constexpr bool hides_keys(int stack) { return stack != kDecoderStack; }

// A head, counted from 0. stack: a StackIndex.
struct HeadRef {
    int stack = 0, layer = 0, head = 0;
    friend bool operator==(const HeadRef&, const HeadRef&) = default;
};

enum class Ablation { Zero, Mean };

// What an experiment changes in a forward pass (none by default):
//   knockout  these heads contribute nothing: their output (weights·V_h, T_q×d_k, before W_o)
//             is replaced by zeros (Zero) or by its mean over the query positions (Mean).
//             Their weights are still computed and kept: the maps show what the head would
//             attend to; every later layer sees the change.
//   hidden    key positions that no query attends to, in every layer (as padding is masked):
//             gpt2, bert: the tokens; marian: the source's (encoder self and cross attention).
//             A query left with no key gets a row of zeros.
struct Interventions {
    std::vector<HeadRef> knockout;
    Ablation ablation = Ablation::Zero;
    std::vector<int> hidden;

    bool empty() const { return knockout.empty() && hidden.empty(); }
    bool knocked_out(int stack, int layer, int head) const;
    friend bool operator==(const Interventions&, const Interventions&) = default;
};

// [SECTION] A forward pass -------------------------------------------------------------------

// What a run with RunInput::record saw: the residual stream and each layer's writes to it, at
// every position (n_layers + 1 streams; the rest per layer).
struct Inside {
    std::vector<Matrix> streams;    // T×d: [0] the embeddings, [l + 1] after layer l (the final norm's input last)
    std::vector<Matrix> concat;     // T×(n_heads·d_head): the heads' outputs before W_o (after any knockout or patch)
    std::vector<Matrix> attention;  // T×d: the attention block's output (concat·W_o + b_o), before any post-attention norm
    std::vector<Matrix> mlp;        // T×d: the MLP's (or the experts') output, before any post-feedforward norm
    std::vector<Matrix> keys;       // T×(kv_heads·d_head): K, as the scores read it (normed, rotated)
    std::vector<Matrix> values;     // T×(kv_heads·d_head): V, as the heads read it
};

// ids: gpt2/bert: the tokens; marian: the decoder's tokens (starting with decoder_start_id);
// vision models (vit): 0, 1, …, T − 1, the [CLS] and each patch (their names are the tokenizer's,
// model.hpp's image_input), the pictures in `patches`: one row per patch, in row order, its
// channels·p·p pixels (channel, row, column) as the patch embedding reads them.
// source_ids: marian only, the encoder's tokens. Ids are checked against the vocabulary and the
// length against max_positions by the caller (model.hpp), as are empty inputs and the
// interventions (check_interventions).
// keep_maps: every map and every block's input kept (the views' import, block_trace), as up to
// kMapsKeptUpTo tokens; false: neither, only what the maps are recomputed from (a long text:
// memory grows as T, not T²; BlockRun::kept answers). Either, never both: the copies of Q and K
// beside the maps cost a short text's run 7 % in page faults (BENCHMARKS.md).
//
// Looking inside and activation patching (why.hpp; the first stack of a decoder-only model):
//   record   RunResult::inside: the residual stream after every layer and what each layer wrote
//   from     the run starts at layer `from` with `stream` (T×d) entering it (from = n_layers: the
//            final norm's input); the layers before it are skipped (their maps left empty)
//   first_row  with `from` and `prefix` (a recorded run whose rows before it are this run's):
//            only rows first_row … T − 1 are run (`stream` holds them, (T − first_row)×d), every
//            layer's keys and values of the rows before from `prefix`, as the KV cache's; the
//            logits are the last row's, as a whole run's (a causal model's rows before are the prefix's)
//   patched  with `patch` (the rows run × d_head): that head's output (weights·V_h, before W_o,
//            after any knockout) is replaced by it at every position
//   logit_ids  when given, RunResult::logits holds only these ids' logits, in this order: each
//            the LM head's column read on its own (patching reads two of 50 257)
struct RunInput {
    std::vector<int> ids;
    std::vector<int> source_ids;
    Interventions edits = {};
    bool keep_maps = true;
    bool record = false;
    int from = 0;
    Matrix stream = {};
    int first_row = 0;
    const Inside* prefix = nullptr;
    HeadRef patched = {};
    Matrix patch = {};
    std::vector<int> logit_ids = {};
    Matrix patches = {};
    int patch_rows = 0;  // the patches' grid: rows of patches.rows() / patch_rows (0: the config's square)
    Matrix image_rows = {};  // vision-language models: what replaces the image tokens' embeddings, one row each (d_model), in order
    // Rotary positions in streams (Rope::sections) where they are not 0, 1, …: qwen2_5_vl's
    // (time, height, width) of each token (model.hpp picture_positions); its tower's (row, column)
    // of each patch (image_input's), whose windows (ModelConfig::window_patches) they give too.
    PositionStreams positions = {};
};
// The texts whose maps are all kept by default (SPEC.md §5: `attnviz run` prints them all).
constexpr int kMapsKeptUpTo = 512;

// One attention block of one layer.
struct BlockRun {
    Matrix x;                     // T_q×d_model: what the block's Q projection reads (after the
                                  // layer norm before it, in pre-LN models); its K and V read
                                  // the same x (self) or the encoder's output (cross). keep_maps only
    std::vector<Matrix> weights;  // n_heads maps T_q×T_k (softmax rows; a causal map is 0 above the
                                  // diagonal). keep_maps only
    KeptHeads kept;               // what every map is recomputed from, bit for bit (attention_maps.hpp);
                                  // !keep_maps only
};

struct StackRun {
    std::string name;             // SPEC.md §3: "attention"; "encoder_attention", "decoder_attention", "cross_attention"
    bool causal = false, cross = false;
    int heads = 0;
    std::vector<BlockRun> layers;
};

// One token's experts in a layer with experts (config.hpp's Experts): the k it was routed to,
// heaviest first, with their weights (which sum to 1, or less where the router does not
// renormalize: qwen3_moe without norm_topk_prob).
struct Routed {
    int expert = 0;
    float weight = 0;
};
using Routing = std::vector<std::vector<Routed>>;  // [token][k]


struct RunResult {
    std::vector<StackRun> stacks;  // gpt2, bert: one; marian: encoder, decoder, cross
    std::vector<Routing> experts;  // mixtures of experts: per layer (empty for a dense layer); else empty
    Interventions edits;           // the input's, which block_trace applies again
    Matrix encoder_output;         // marian: T_src×d_model, the cross blocks' keys and values
    Matrix hidden;                 // T×d_model: the last layer's output (after ln_f for gpt2; the decoder's for marian)
    std::vector<float> logits;     // the LM head at the last position (gpt2, marian), [vocab_size]; bert: empty
    Inside inside;                 // RunInput::record only
    BothWays both_ways;            // gemma3: the picture's runs of image tokens its self-attention saw both ways
    PositionStreams positions;     // the input's (block_trace turns the heads again by them)
};

// The LM head read on rows of a residual stream (Inside::streams), rows×d -> rows×V: through the
// final norm (where the family has one), scaled and soft-capped as the forward's logits (the
// logit lens; on the last stream's last row, RunResult::logits' numbers).
Matrix stream_logits(kernels::Context& ctx, const Model& model, const Matrix& rows);
// A vision-language model's connector (ModelWeights::projector, after projector_norm where the
// family has one) on a picture's merged rows (model.hpp picture_rows): rows×(s²·d_vision)
// (gemma3's means: rows×d_vision) -> rows×d_model.
Matrix connector_rows(kernels::Context& ctx, const Model& model, const Matrix& merged);
// A vision model's patch embedding as Steps shows it (a token per row, T = the [CLS], the
// registers, then `patches`' rows): `pixels` T×k each token's pixels (k = channels·p·p, as
// RunInput::patches; the [CLS]'s and the registers' rows 0: learned vectors, not seen), the
// embedding's `weight` k×d and `bias` d read back through the model's own product (rows of the
// identity, a row of zeros: whatever the file's dtype), and `embedded` T×d: P·W_e + b for a
// patch, the learned vector for the [CLS] and the registers (before any position is added).
struct PatchEmbedding {
    Matrix pixels, weight, embedded;
    RowVector bias;
    int first = 0;  // the learned tokens' rows before the patches'
};
PatchEmbedding patch_embedding(kernels::Context& ctx, const Model& model, const Matrix& patches);
// The same on rows already through the final norm (RunResult::hidden's): rows×d -> rows×V.
Matrix hidden_logits(kernels::Context& ctx, const Model& model, const Matrix& rows);
// The logits of some ids at one position (x: d, after the final norm), each its LM head column's
// dot product in double (RunInput::logit_ids reads them so).
std::vector<float> id_logits(const Model& m, const float* x, const std::vector<int>& ids);

// gemma3 (ModelConfig::bidirectional_images): the runs of image tokens in `ids`, each of whose
// tokens attends to the whole run; none for every other model.
BothWays image_runs(const ModelConfig& c, const std::vector<int>& ids);
// How many of ids[from], ids[from + 1], … a Decoder must be fed at once: a both-ways run that
// starts there whole (its first tokens see its last), else 1.
int fed_together(const ModelConfig& c, const std::vector<int>& ids, int from);

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
// inputs), for the Steps view. The scale is the family's (1/√d_head, or Gemma's
// query_pre_attn_scalar^−½), the mask causal for a causal stack, and the window's where the
// layer slides (options.mask.allowed).
//
// What today's families add, kept for the Steps view (empty or 0 where the model has none):
//   grouped-query attention  query head h reads K/V head h / group (K and V of trace.heads[h]
//                            are that head's)
//   q/k norm                 q_projected, k_projected: each head's Q and K as projected, before
//                            the norm; q_normed, k_normed after it (before the rotation); the
//                            norms' gains and eps
//   rotary positions         q_unrotated, k_unrotated: before the rotation (after any norm);
//                            trace.heads[h].q and .k: after it, as the scores read them;
//                            rope: cos and sin per position (rows 0 …) and pair i < rope_dim/2,
//                            the pair (i, i + rope_dim/2) turned by angle[p][i] = p·inv_freq[i];
//                            the layer's rope type, inv_freq and attention factor
//   soft-capping             softcap: the scaled scores s became softcap·tanh(s/softcap)
//                            (trace.heads[h].scaled holds them capped)
struct BlockTrace {
    Weights weights;        // the block's projections: W_q d_model×(heads·d_head), W_k and W_v d_model×(kv_heads·d_head)
    AttentionOptions options;
    MultiHeadTrace trace;   // x_q, x_kv, heads (q, k, v, scores, scaled, weights, output), concat, output
    int d_head = 0, kv_heads = 0, group = 1;  // query heads per K/V head
    int window = 0;                           // > 0: the sliding window of this layer
    float softcap = 0;
    std::vector<float> sinks;                 // gpt_oss: each head's sink logit (in every row's denominator)
    std::vector<Matrix> q_projected, k_projected, q_normed, k_normed;  // per head (k: per K/V head); qk_norm only
    RowVector q_norm_gain, k_norm_gain;       // qk_norm: the norms' g, d_head each (gemma's 1 + w folded in)
    float norm_eps = 0;
    std::vector<Matrix> q_unrotated, k_unrotated;                      // per head (k: per K/V head); rotary only
    int rope_dim = 0;                         // rotated dimensions of a head (0: no rotation)
    double rope_theta = 0;
    Rope::Type rope_type = Rope::Type::Default;
    std::vector<double> rope_inv_freq;        // rope_dim/2
    double rope_attention_factor = 1;         // cos and sin are scaled by it
    Matrix rope_angle, rope_cos, rope_sin;    // T×(rope_dim/2): p·inv_freq[i], and cos, sin × the attention factor
    // M-RoPE (Rope::sections): each token's position in each stream ([stream][T]), the stream of each pair
    std::vector<std::vector<int>> rope_positions;
    std::vector<int> rope_streams;
    int kv_head_of(int h) const { return h / std::max(group, 1); }
};
BlockTrace block_trace(kernels::Context& ctx, const Model& model, const RunResult& run, int stack, int layer);

// [SECTION] Generation with a KV cache, greedy or sampled ------------------------------------

// A decoder (gpt2, or marian's over a given encoder output) fed one token at a time; every
// layer's keys and values are cached, so a step costs one row. Its logits equal those of a
// forward over the whole sequence with the same interventions. Mean ablation is not causal
// (a head's mean changes with every new token, and so every earlier position's output):
// it throws ModelError, and generate() recomputes the whole sequence instead.
class Decoder {
public:
    // marian: `encoder_output` from a forward over the source (RunResult::encoder_output).
    // A vision-language model: `image_rows` (RunInput::image_rows) for its image tokens, in the
    // order they are fed.
    // `positions`: the tokens' streams (RunInput::positions), those fed later going on from them.
    Decoder(const Model& model, Matrix encoder_output = {}, Interventions edits = {}, Matrix image_rows = {}, PositionStreams positions = {});
    ~Decoder();
    // Feeds tokens at the next positions (one, or together what must be: fed_together's run of
    // a picture); returns the LM head's logits at the last.
    std::vector<float> step(kernels::Context& ctx, const std::vector<int>& ids);
    std::vector<float> step(kernels::Context& ctx, int id) { return step(ctx, std::vector<int>{id}); }
    int length() const;  // tokens fed so far

private:
    struct State;
    std::unique_ptr<State> state_;
    std::vector<float> feed(kernels::Context& ctx, const std::vector<int>& ids);  // the rows through the layers
};

// How the next token is chosen from the logits (SPEC.md §5 --temperature, --top-k, --seed):
//   temperature ≤ 0: the argmax (the smallest id among equal logits);
//   else: the top_k largest logits (all when top_k ≤ 0; ties: smaller id first), in that
//   order, p_i ∝ exp((l_i − l_max)/temperature) in double; u = the next splitmix64 output's top
//   53 bits · 2⁻⁵³; the first i whose running sum of p exceeds u · Σp. One draw per token.
// tests/model/reference.py writes the same rule.
struct Sampling {
    float temperature = 0;
    int top_k = 0;
    std::uint64_t seed = 0;
};
int pick_token(const std::vector<float>& logits, const Sampling& sampling, SplitMix64& rng);

struct Generated {
    std::vector<int> ids;                    // prefix + the generated tokens
    std::vector<std::vector<float>> logits;  // per generated token: the logits it was picked from
};

// Decoding: starts from `prefix` (marian: [decoder_start_id]), appends a token picked by
// `sampling` until `eos` (when ≥ 0), max_new tokens or the model's last position. With the KV
// cache, except under mean ablation (a forward over the sequence per token). `image_rows`,
// `positions`: a vision-language model's picture (RunInput's).
Generated generate(kernels::Context& ctx, const Model& model, const Matrix& encoder_output, std::vector<int> prefix,
                   int max_new, int eos, const Sampling& sampling = {}, const Interventions& edits = {}, const Matrix& image_rows = {},
                   const PositionStreams& positions = {});

}  // namespace attn
