// transformer.cpp: the forward pass of every family (transformer.hpp), on core's kernels.
//
// One forward for all: a family's file (families/*.cpp) states its architecture in ModelConfig
// (which norm, where the norms sit, rotary positions, shared K/V heads, windows, caps) and its
// tensors in a Plan; the sub-blocks here read those switches. Every product is kernels::matmul
// (blocks::linear) and every head kernels::attention_head (attend_heads): the forward pass,
// block_trace and the KV-cache decoder share them, so the Steps view and generation see the
// forward's numbers.
//
// [SECTION] Loading in steps
// [SECTION] Interventions
// [SECTION] Attention: one block, shared by the forward, block_trace and the decoder
// [SECTION] Sub-blocks: norms, residuals, MLPs, embeddings, the head
// [SECTION] A forward pass in steps
// [SECTION] Any block's whole pipeline, again
// [SECTION] Generation with a KV cache
#include "transformer.hpp"
#include "text.hpp"

#include "blocks.hpp"
#include "family.hpp"
#include "image.hpp"
#include "rope.hpp"
#include "quants.hpp"
#include "safetensors.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <numeric>
#include <optional>

namespace attn {

// The feed-forward's rows at a time (its hidden layers: 2·kFeedForwardRows·d_ff floats at most).
static constexpr int kFeedForwardRows = 512;

// With no map kept, a part of a head's rows runs a band of rows at a time, its weights in the
// thread's scratch: about this many floats (1 MB), at least 8 rows.
constexpr std::size_t kBandFloats = 1u << 18;

std::int64_t Model::parameters() const { return weights ? weights->parameters : 0; }
std::size_t Model::weight_bytes() const { return weights ? weights->bytes : 0; }

std::string Model::checkpoint_text() const {
    if (!weights || weights->file_bytes.empty()) return "";
    const auto name = [&](Dtype d) { return d == Dtype::U8 && weights->mxfp4 ? "MXFP4" : dtype_name(d); };
    std::size_t total = 0;
    auto most = weights->file_bytes.begin();
    for (auto it = weights->file_bytes.begin(); it != weights->file_bytes.end(); ++it) {
        total += it->second;
        if (it->second > most->second) most = it;
    }
    return std::string(name(most->first)) + " " + byte_size(static_cast<double>(total));
}

// Kept per attention block (T_q queries, T_k keys, h heads, g K/V heads of d_k): with the maps,
// its input (T_q×d) and the h maps (T_q×T_k each); else its Q and K ((T_q·h + T_k·g)·d_k floats),
// each row's softmax (T_q·h RowStats) and each key's value norm per head (T_k·h floats). Working
// buffers at their largest: the residual stream and the sub-block's output (2·T·d), Q, K, V and the concatenated heads (4·T·q,
// q = max(d, h·d_k)), the feed-forward's hidden layers (2·min(T, 512)·d_ff for a gated MLP), marian's
// encoder output (T·d); the logits (V); per thread, the kernels' packed panels (A's MC×KC
// block; K and V of one head: 2·T·d_k, rounded up to 16 columns; the weights' were packed at
// load) and, with no map kept, a band of a head's rows of weights (kBandFloats).
std::uint64_t Model::activation_bytes(int T, bool maps) const {
    const ModelConfig& c = config;
    const std::uint64_t t = static_cast<std::uint64_t>(std::max(T, 0)), d = c.d_model;
    const std::uint64_t q = std::max<std::uint64_t>(d, static_cast<std::uint64_t>(c.n_heads) * c.d_head());
    std::uint64_t floats = 0;
    auto stack = [&](int layers, int heads, int kv_heads, int d_k) {
        const std::uint64_t h = static_cast<std::uint64_t>(heads), per_row = sizeof(kernels::RowStat) / sizeof(float);
        if (maps) floats += static_cast<std::uint64_t>(layers) * (h * t * t + t * d);
        else floats += static_cast<std::uint64_t>(layers) * ((t * h + t * static_cast<std::uint64_t>(kv_heads)) * d_k + t * h * (per_row + 1));
    };
    const int d_k = c.decoder_only() ? c.d_head() : c.d_model / std::max(c.n_heads, 1);
    stack(c.n_layers, c.n_heads, c.encoder_decoder() ? c.n_heads : c.kv_heads(), d_k);
    std::uint64_t d_ff = c.d_ff * (c.gated_mlp ? 2 : 1);
    if (c.encoder_decoder()) {
        const int dd = c.d_model / std::max(c.decoder_heads, 1);
        stack(c.decoder_layers, c.decoder_heads, c.decoder_heads, dd);  // decoder self
        stack(c.decoder_layers, c.decoder_heads, c.decoder_heads, dd);  // cross
        d_ff = std::max<std::uint64_t>(d_ff, c.decoder_ff);
        floats += t * d;  // encoder output
    }
    floats += 2 * t * d + 4 * t * q + std::min<std::uint64_t>(t, static_cast<std::uint64_t>(kFeedForwardRows)) * d_ff + t * d /* hidden */ + c.vocab_size;
    floats += static_cast<std::uint64_t>(kernels::scratch_floats(kernels::best_isa(), T, c.d_head()));
    if (!maps) floats += kBandFloats;
    return floats * sizeof(float);
}

// [SECTION] Loading in steps -----------------------------------------------------------------

namespace {

// One piece of the loading, from bytes [begin, end) of a shard: rows [lo, hi) of a tensor into
// its F32 place (packing < 0), or B's columns [lo, hi) of a packing (its weight's rows, when
// transposed; GPT-2's Conv1D is read whole: lo = 0, hi = its columns).
struct Read {
    int shard;
    std::size_t begin, end;
    std::size_t conversion;
    std::ptrdiff_t packing;
    std::int64_t lo, hi;
};

// The reads of a plan, in the order of the files' bytes. F32 places: rows, about a window's
// worth at a time. Packings: whole parts of the packing (kernels::pack_step columns, as many
// as fit a window, at least one), each from its weight's rows.
std::vector<Read> plan_reads(const std::vector<Conversion>& conversions, const std::vector<Packing>& packings,
                             std::size_t window) {
    std::vector<Read> reads;
    for (std::size_t ci = 0; ci < conversions.size(); ++ci) {
        const Conversion& c = conversions[ci];
        const TensorInfo& t = *c.tensor.info;
        const std::int64_t R = t.shape.empty() ? 1 : t.shape[0];
        if ((!c.out && !c.raw) || R <= 0 || t.end == t.begin) continue;
        const std::size_t row_bytes = (t.end - t.begin) / static_cast<std::size_t>(R);
        const auto rows = t.pair_rows ? R : static_cast<std::int64_t>(std::max<std::size_t>(window / row_bytes, 1));
        for (std::int64_t r = 0; r < R; r += rows) {
            const std::int64_t r1 = std::min(R, r + rows);
            reads.push_back({c.tensor.shard, t.begin + static_cast<std::size_t>(r) * row_bytes,
                             t.begin + static_cast<std::size_t>(r1) * row_bytes, ci, -1, r, r1});
        }
    }
    for (std::size_t pi = 0; pi < packings.size(); ++pi) {
        const Packing& p = packings[pi];
        const TensorInfo& t = *conversions[p.conversion].tensor.info;
        const int shard = conversions[p.conversion].tensor.shard;
        if (p.in <= 0 || p.out <= 0) continue;
        if (!p.transposed) {
            reads.push_back({shard, t.begin, t.end, p.conversion, static_cast<std::ptrdiff_t>(pi), 0, p.out});
            continue;
        }
        // B's column j is the weight's row `first + j` (linear_parts: the part's first row)
        const std::size_t row_bytes = tensor_bytes(t.dtype, p.ld);
        const std::int64_t first = p.offset / p.ld, step = kernels::pack_step(p.isa, p.out);
        // rows whose order a GGUF changed (TensorInfo::pair_rows) are read whole, and put back
        const std::int64_t columns = t.pair_rows ? p.out : step * std::max<std::int64_t>(static_cast<std::int64_t>(window / (row_bytes * step)), 1);
        for (std::int64_t j = 0; j < p.out; j += columns) {
            const std::int64_t j1 = std::min<std::int64_t>(p.out, j + columns);
            reads.push_back({shard, t.begin + static_cast<std::size_t>(first + j) * row_bytes,
                             t.begin + static_cast<std::size_t>(first + j1) * row_bytes, p.conversion,
                             static_cast<std::ptrdiff_t>(pi), j, j1});
        }
    }
    std::stable_sort(reads.begin(), reads.end(),
                     [](const Read& a, const Read& b) { return a.shard != b.shard ? a.shard < b.shard : a.begin < b.begin; });
    return reads;
}

// A GGUF's Q or K weight (every row, `bytes`) with its rows as the checkpoint had them: in each
// head of n rows, llama.cpp's converter put rotate-half's rows i and i + n/2 side by side (rows
// 2i and 2i + 1, LlamaModel.permute); row r of a head comes back from row 2·(r mod n/2) + r div n/2.
ByteBuffer rows_unpaired(const std::uint8_t* bytes, const TensorInfo& t) {
    const std::int64_t R = t.shape[0], n = t.pair_rows;
    const std::size_t row = (t.end - t.begin) / static_cast<std::size_t>(R);
    ByteBuffer out(t.end - t.begin);
    for (std::int64_t h = 0; h < R; h += n)
        for (std::int64_t r = 0; r < n; ++r)
            std::memcpy(out.data() + static_cast<std::size_t>(h + r) * row,
                        bytes + static_cast<std::size_t>(h + 2 * (r % (n / 2)) + r / (n / 2)) * row, row);
    return out;
}

// Rows [lo, hi) of a tensor, given as `bytes`, into its F32 place (+ add: Gemma's 1 + w), or
// its raw bytes as they are.
void convert_rows(const std::uint8_t* bytes, const Conversion& c, std::int64_t lo, std::int64_t hi) {
    const TensorInfo& t = *c.tensor.info;
    const std::int64_t R = t.shape.empty() ? 1 : t.shape[0], C = t.elements() / R;
    if (c.raw) {
        std::memcpy(c.raw + lo * C, bytes, static_cast<std::size_t>((hi - lo) * C));
        return;
    }
    const ByteBuffer unpaired = t.pair_rows ? rows_unpaired(bytes, t) : ByteBuffer();  // read whole (plan_reads)
    if (t.pair_rows) bytes = unpaired.data();
    TensorInfo part = t;
    part.shape = {hi - lo, C};
    part.begin = 0;
    part.end = tensor_bytes(t.dtype, (hi - lo) * C);
    float* out = c.out + lo * C;
    convert_to_f32(bytes, part, out);
    if (c.add != 0)
        for (std::int64_t i = 0; i < (hi - lo) * C; ++i) out[i] += c.add;
}

// A read's columns of a packing, given as `bytes` (its weight's rows, or the whole Conv1D). A
// GGUF's block formats stay grouped (Plan::packed: quants.hpp's held_as), or, where their rows
// are not whole groups, are dequantized and packed as F32.
void pack_read(const std::uint8_t* bytes, const Packing& p, const TensorInfo& t, std::int64_t lo, std::int64_t hi) {
    Dtype dtype = t.dtype;
    const ByteBuffer unpaired = t.pair_rows ? rows_unpaired(bytes, t) : ByteBuffer();  // read whole (plan_reads)
    if (t.pair_rows) bytes = unpaired.data();
    if (kernels::is_grouped(p.precision)) {
        // rows [lo, hi) of an [out, in] weight, kept quantized: 16-groups decoded, then as the
        // precision groups them (Q4, Q4K: each two 16-groups have one scale; the codes too)
        const std::int64_t n = (hi - lo) * p.ld, g16 = n / kGroup;
        const bool coded = kernels::is_coded(p.precision);
        std::vector<std::int8_t> q(static_cast<std::size_t>(n)), a(static_cast<std::size_t>(coded ? g16 : 0)), b(a.size());
        std::vector<float> s(static_cast<std::size_t>(g16)), o(s.size());
        std::vector<float> d(static_cast<std::size_t>(coded ? n / kernels::kCodedRows : 0)), m(d.size());
        QuantGroups y{q.data(), s.data(), o.data()};
        if (coded) y.a = a.data(), y.b = b.data(), y.d = d.data(), y.m = m.data();
        decode_groups(dtype, bytes, n, y);
        const int per = kernels::group_rows(p.precision) / kGroup;  // 16-groups per group
        for (std::int64_t g = 0; per > 1 && g < g16 / per; ++g) {
            s[g] = s[per * g], o[g] = o[per * g];
            if (coded) a[g] = a[per * g], b[g] = b[per * g];
        }
        kernels::GroupedColumns c;
        c.q = q.data(), c.ldq = p.ld, c.ldg = p.ld / kernels::group_rows(p.precision), c.ldk = p.ld / kernels::kCodedRows;
        if (coded) c.a = a.data(), c.b = b.data(), c.d = d.data(), c.m = m.data();
        else c.s = s.data(), c.o = o.data();
        kernels::pack_columns_grouped(p.isa, p.precision, p.in, p.out, static_cast<int>(lo), static_cast<int>(hi), c, p.to, p.scales);
        return;
    }
    std::vector<float> floats;
    if (is_block_format(dtype)) {
        const std::int64_t n = p.transposed ? (hi - lo) * p.ld : t.elements();
        floats.resize(static_cast<std::size_t>(n));
        dequantize(dtype, bytes, n, floats.data());
        bytes = reinterpret_cast<const std::uint8_t*>(floats.data());
        dtype = Dtype::F32;
    }
    if (p.transposed)
        kernels::pack_columns(p.isa, p.precision, p.in, p.out, static_cast<int>(lo), static_cast<int>(hi), bytes, p.ld, true, p.to);
    else
        kernels::pack_columns(p.isa, p.precision, p.in, p.out, 0, p.out, bytes + p.offset * static_cast<std::ptrdiff_t>(dtype_bytes(dtype)),
                              p.ld, false, p.to);
}

}  // namespace

struct ModelLoader::State {
    ModelConfig config;
    Checkpoint checkpoint;
    std::shared_ptr<ModelWeights> weights;
    std::vector<Conversion> conversions;
    std::vector<Packing> packings;
    std::vector<Mxfp4Packing> mxfp4;
    std::vector<std::unique_ptr<std::uint8_t[]>> raw;
    std::vector<Read> reads;
    std::size_t window_bytes = kWindowBytes;
    std::size_t next = 0, bytes_total = 0, bytes_done = 0;  // next: the first read not done
    // A sliced file's window: the range step() waits for, the range held, and its bytes.
    std::optional<FileRange> wanted, held;
    ByteBuffer window;

    void plan(std::size_t window) {
        window_bytes = std::max<std::size_t>(window, 1);
        weights = std::make_shared<ModelWeights>();
        const FamilyDef& family = family_of(config);
        for (const auto& [from, to] : config.renamed) checkpoint.rename(from, to);
        const bool prefixed = checkpoint.has(std::string(family.prefix) + family.probe);
        Plan p(checkpoint, !config.weights_prefix.empty() ? config.weights_prefix : prefixed ? family.prefix : "", *weights);
        family.plan(config, p, *weights);
        conversions = std::move(p.conversions);
        packings = std::move(p.packings);
        mxfp4 = std::move(p.mxfp4);
        raw = std::move(p.raw);
        reads = plan_reads(conversions, packings, window_bytes);
        for (const Read& r : reads) bytes_total += r.end - r.begin;
    }
    // The window from reads[first]: it and every next read of its shard that ends inside it or
    // keeps it within window_bytes (the reads tile the file: nothing between them is read for
    // nothing but tensors no plan reads). Returns the range and the end of those reads.
    std::pair<FileRange, std::size_t> window_at(std::size_t first) const {
        const Read& r = reads[first];
        FileRange range{checkpoint.shards[r.shard].name, r.begin, r.end};
        std::size_t last = first + 1;
        for (; last < reads.size() && reads[last].shard == r.shard; ++last) {
            if (reads[last].end > range.end && reads[last].end - range.begin > window_bytes) break;
            range.end = std::max(range.end, reads[last].end);
        }
        return {range, last};
    }
    // The bytes of `range` of `shard`: the file's when it holds them, else the window's when it
    // holds them; else nullptr, and the range is wanted.
    const std::uint8_t* bytes_of(int shard, const FileRange& range) {
        if (const std::uint8_t* p = checkpoint.shards[shard].bytes->range(range.begin, range.end)) return p;
        if (held == range) return window.data();
        wanted = range;
        return nullptr;
    }
};

ModelLoader::ModelLoader(ModelConfig config, std::shared_ptr<const FileBytes> safetensors, std::string file,
                         std::size_t window_bytes)
    : state_(std::make_unique<State>()) {
    state_->config = std::move(config);
    state_->checkpoint = Checkpoint::one_file(std::move(safetensors), std::move(file));
    state_->plan(window_bytes);
}

ModelLoader::ModelLoader(ModelConfig config, const ModelFiles& files, std::size_t window_bytes)
    : state_(std::make_unique<State>()) {
    state_->config = std::move(config);
    state_->checkpoint = Checkpoint::from_files(files);
    state_->plan(window_bytes);
}

ModelLoader::~ModelLoader() = default;
bool ModelLoader::done() const { return state_->next == state_->reads.size(); }
float ModelLoader::progress() const {
    return state_->bytes_total ? static_cast<float>(static_cast<double>(state_->bytes_done) / state_->bytes_total) : 1.0f;
}

// Windows until about 16 MB were read (a page draws between steps), or until one is wanted.
void ModelLoader::step() {
    State& s = *state_;
    constexpr std::size_t kBytesPerStep = 16u << 20;
    std::size_t read = 0;
    while (s.next < s.reads.size() && read < kBytesPerStep && !s.wanted) {
        const auto [range, last] = s.window_at(s.next);
        const int shard = s.reads[s.next].shard;
        const std::uint8_t* bytes = s.bytes_of(shard, range);
        if (!bytes) return;
        for (std::size_t i = s.next; i < last; ++i) {
            const Read& r = s.reads[i];
            const Conversion& c = s.conversions[r.conversion];
            const std::uint8_t* at = bytes + (r.begin - range.begin);
            if (r.packing < 0) convert_rows(at, c, r.lo, r.hi);
            else pack_read(at, s.packings[static_cast<std::size_t>(r.packing)], *c.tensor.info, r.lo, r.hi);
            s.bytes_done += r.end - r.begin;
        }
        s.checkpoint.shards[shard].bytes->done_with(range.begin, range.size());
        read += range.size();
        s.next = last;
    }
}

const std::optional<FileRange>& ModelLoader::wanted() const { return state_->wanted; }

std::uint8_t* ModelLoader::window() {
    State& s = *state_;
    if (!s.wanted) return nullptr;
    s.held.reset();  // its bytes are about to change
    if (s.window.size() < s.wanted->size()) {
        s.window = ByteBuffer();  // the old window goes first: one is ever allocated
        s.window = ByteBuffer(s.wanted->size());
    }
    return s.window.data();
}

void ModelLoader::filled() {
    State& s = *state_;
    s.held = s.wanted;
    s.wanted.reset();
}

Model ModelLoader::take() {
    while (!done()) {
        step();
        if (const std::optional<FileRange>& w = wanted()) {  // a sliced file's window no one filled
            const auto& shards = state_->checkpoint.shards;
            const auto shard = std::find_if(shards.begin(), shards.end(), [&](const Checkpoint::Shard& x) { return x.name == w->file; });
            throw ModelError(shard == shards.end() ? w->file : shard->shown, "",
                             "its bytes " + std::to_string(w->begin) + " … " + std::to_string(w->end) + " were not given");
        }
    }
    State& s = *state_;
    for (const Mxfp4Packing& m : s.mxfp4) pack_mxfp4(m, s.conversions);  // their blocks and scales are all in
    s.mxfp4.clear(), s.raw.clear();
    return Model{s.config, s.weights};
}

Model load_model_weights(ModelConfig config, std::shared_ptr<const FileBytes> safetensors, const std::string& file) {
    ModelLoader loader(std::move(config), std::move(safetensors), file);
    return loader.take();
}

// [SECTION] Interventions ---------------------------------------------------------------------

std::vector<StackShape> stack_shapes(const ModelConfig& c) {
    if (!c.encoder_decoder()) return {{"attention", c.decoder_only(), false, c.n_layers, c.n_heads}};
    return {{"encoder_attention", false, false, c.n_layers, c.n_heads},
            {"decoder_attention", true, false, c.decoder_layers, c.decoder_heads},
            {"cross_attention", false, true, c.decoder_layers, c.decoder_heads}};
}

bool Interventions::knocked_out(int stack, int layer, int head) const {
    return std::find(knockout.begin(), knockout.end(), HeadRef{stack, layer, head}) != knockout.end();
}

// [SECTION] Attention: one block, shared by the forward, block_trace and the decoder ----------

namespace {

// Where the heads write: per head a T_q×T_k weights buffer, the concatenated outputs
// T_q×(n_heads·d_head), and, for block_trace, every intermediate.
struct HeadsOut {
    float* const* maps;       // n_heads pointers to T_q×T_k, or nullptr: no map kept
    float* concat;            // T_q×(n_heads·d_head)
    MultiHeadTrace* trace;    // or nullptr
    kernels::RowStat* stats;  // n_heads × T_q (head-major), or nullptr
};

// What an attention block of one layer does differently in an experiment (Interventions).
struct BlockEdits {
    std::vector<std::uint8_t> keys;  // empty, or T_k entries: 1 = may be attended, 0 = hidden
    std::vector<int> knocked;        // the heads whose output is ablated
    Ablation ablation = Ablation::Zero;
    int patched = -1;                // a head whose output is replaced by `patch` (T_q×d_head), or -1
    const Matrix* patch = nullptr;
};

// stack, layer: the block's; T_k: its keys (hidden ones only where hides_keys(stack)).
BlockEdits block_edits(const Interventions& e, int stack, int layer, int heads, int T_k) {
    BlockEdits b;
    b.ablation = e.ablation;
    for (int h = 0; h < heads; ++h)
        if (e.knocked_out(stack, layer, h)) b.knocked.push_back(h);
    if (hides_keys(stack) && !e.hidden.empty()) {
        b.keys.assign(static_cast<std::size_t>(T_k), 1);
        for (int j : e.hidden)
            if (j >= 0 && j < T_k) b.keys[static_cast<std::size_t>(j)] = 0;
    }
    return b;
}

// An attention block as its family states it (block_spec).
struct BlockSpec {
    int n_heads = 0, n_kv_heads = 0, d_head = 0;  // query head h reads K/V head h / (n_heads / n_kv_heads)
    bool causal = false;
    int window = 0;            // > 0: a query sees itself and the window − 1 keys before it
    BothWays both_ways;        // gemma3: a picture's tokens see each other (image_runs); set by the caller
    float factor = 0;          // the scores' scale
    float softcap = 0;         // > 0: scores = softcap·tanh(scores/softcap)
    const Rope* rope = nullptr;  // rotary positions, or none
    const PositionStreams* positions = nullptr;  // the rotation's positions (RunInput::positions), or 0, 1, …
    const std::vector<int>* groups = nullptr;    // qwen2_5_vl's tower: each token's window (KeptHeads::groups), or none
    Norm q_norm, k_norm;       // over each head (or the whole projection), before the rotation (qk_norm)
    bool qk_norm_whole = false;
    const float* sinks = nullptr;  // n_heads logits of no key (gpt_oss), or none
    float eps = 0;
    int group() const { return n_heads / n_kv_heads; }
};

BlockSpec block_spec(const ModelConfig& c, const AttentionWeights& a, const StackShape& stack, int layer) {
    BlockSpec s;
    s.n_heads = stack.heads;
    s.n_kv_heads = stack.cross || c.encoder_decoder() ? stack.heads : c.kv_heads();
    s.d_head = c.decoder_only() ? c.d_head() : c.d_model / stack.heads;
    s.causal = stack.causal;
    s.window = stack.cross ? 0 : c.window_of(layer);
    s.factor = c.query_scale > 0 ? c.query_scale : 1.0f / std::sqrt(static_cast<float>(s.d_head));
    s.softcap = c.attn_softcap;
    if (c.rotates(stack.cross ? -1 : layer)) s.rope = s.window > 0 && c.local_rope.dim > 0 ? &c.local_rope : &c.rope;
    s.q_norm = a.q_norm, s.k_norm = a.k_norm, s.qk_norm_whole = c.qk_norm_whole;
    s.sinks = a.sinks;
    s.eps = c.layer_norm_eps;
    return s;
}

// Which keys each query may attend: T_q×T_k of 0/1, or empty when every one. Query i sits at
// key position i + offset (a decoder's new row: offset = the keys before it).
MaskMatrix block_allowed(const BlockSpec& s, int T_q, int T_k, int offset, const std::vector<std::uint8_t>& keys) {
    if (!s.causal && s.window <= 0 && keys.empty() && !s.groups) return {};
    MaskMatrix m(T_q, T_k);
    const auto group = [&](int t) { return (*s.groups)[static_cast<std::size_t>(t)]; };
    for (int i = 0; i < T_q; ++i) {
        const auto [lo, hi] = key_span(i + offset, T_k, s.causal, s.window, s.both_ways);
        for (int j = 0; j < T_k; ++j)
            m(i, j) = j >= lo && j < hi && (keys.empty() || keys[static_cast<std::size_t>(j)]) && (!s.groups || group(i + offset) == group(j));
    }
    return m;
}

// The same as the kernels read it: each row's span of keys, and the matrix only where a span has
// holes (hidden keys). A causal or sliding mask alone is spans: no T_q×T_k bytes for a long text.
struct BlockMask {
    MaskMatrix allowed;                   // T_q×T_k, or empty: every key of a row's span allowed
    std::vector<kernels::RowSpan> spans;  // T_q
};
BlockMask block_mask(const BlockSpec& s, int T_q, int T_k, int offset, const std::vector<std::uint8_t>& keys) {
    BlockMask m;
    if (!keys.empty() || s.groups) {
        m.allowed = block_allowed(s, T_q, T_k, offset, keys);
        m.spans = kernels::row_spans(m.allowed.data(), T_q, T_k);
        return m;
    }
    m.spans.resize(static_cast<std::size_t>(std::max(T_q, 0)));
    for (int i = 0; i < T_q; ++i) {
        const auto [lo, hi] = key_span(i + offset, T_k, s.causal, s.window, s.both_ways);
        m.spans[static_cast<std::size_t>(i)] = {lo, hi, true};
    }
    return m;
}

// Q: T_q×(n_heads·d_head) (row stride ld_q), K, V: T_k×(n_kv_heads·d_head) (row stride ld_kv);
// query head h reads and writes columns h·d_head …, its K and V head g = h / group those of g.
// `mask`: block_mask's. The heads' rows split into parts for the threads (kernels::head_parts:
// (head, rows r0 … r1 − 1), whatever the split the same numbers; a trace: one part per head).
// Per part (kernels::attention_head, fused per block of rows):
//   pass 1: S = Q_h·K_gᵀ (rows×T_k; the masked part skipped unless traced)
//   pass 2: weights = softmax(cap(S·factor)) per row (masked: 0; a row with no key: all 0; with
//           sinks, each head's in the denominator), into the head's map or, none kept, the
//           thread's scratch; each row's RowStat into out.stats
//   pass 3: concat_h = weights·V_g (rows×d_head)
void attend_heads(kernels::Context& ctx, const BlockSpec& s, const float* Q, int ld_q, const float* K, const float* V,
                  int ld_kv, int T_q, int T_k, const BlockMask& mask, const HeadsOut& out) {
    const MaskMatrix& allowed = mask.allowed;
    const bool masked = allowed.size() > 0;
    const std::vector<kernels::RowSpan>& spans = mask.spans;
    const double work = 2.0 * s.n_heads * T_q * T_k * s.d_head;  // S and O, every entry (masked included)
    const std::vector<kernels::HeadPart> parts =
        kernels::head_parts(ctx.isa, out.trace ? 1 : ctx.threads(), s.n_heads, spans, work, ctx.split_work);
    kernels::for_parts(ctx, static_cast<int>(parts.size()), work, [&](int p, kernels::Context& part_ctx) {
        const auto [h, r0, r1] = parts[static_cast<std::size_t>(p)];
        const int g = h / s.group(), rows = r1 - r0;
        const std::ptrdiff_t first = static_cast<std::ptrdiff_t>(r0) * T_k;  // the part's first entry of a map
        kernels::HeadArgs args;
        args.T_q = rows, args.T_k = T_k, args.d_k = s.d_head;
        args.ld_q = ld_q, args.ld_kv = ld_kv, args.ld_out = s.n_heads * s.d_head;
        args.q = Q + static_cast<std::ptrdiff_t>(r0) * ld_q + h * s.d_head, args.k = K + g * s.d_head, args.v = V + g * s.d_head;
        args.allowed = masked ? allowed.data() + first : nullptr;
        args.spans = spans.data() + r0;
        args.factor = s.factor;
        args.softcap = s.softcap;
        if (s.sinks) args.sink = s.sinks[h];
        args.output = out.concat + static_cast<std::ptrdiff_t>(r0) * args.ld_out + h * s.d_head;
        if (out.stats) args.stats = out.stats + static_cast<std::ptrdiff_t>(h) * T_q + r0;
        HeadTrace* ht = out.trace ? &out.trace->heads[h] : nullptr;
        if (ht) {  // one part per head
            ht->scores.resize(T_q, T_k), ht->scaled.resize(T_q, T_k);
            args.scores = ht->scores.data(), args.scaled = ht->scaled.data();
            args.fully_masked = &ht->fully_masked_rows;
        }
        if (out.maps) {
            args.weights = out.maps[h] + first;
            return kernels::attention_head(part_ctx, args);
        }
        // no map: a band of rows at a time through the scratch
        const int band = std::max(8, static_cast<int>(kBandFloats / static_cast<std::size_t>(std::max(T_k, 1))) / 8 * 8);
        float* weights = part_ctx.weights.get(static_cast<std::size_t>(std::min(band, rows)) * std::max(T_k, 1));
        for (int b0 = 0; b0 < rows; b0 += band) {
            kernels::HeadArgs b = args;
            b.T_q = std::min(band, rows - b0);
            b.q += static_cast<std::ptrdiff_t>(b0) * ld_q;
            if (b.allowed) b.allowed += static_cast<std::ptrdiff_t>(b0) * T_k;
            b.spans += b0;
            b.weights = weights;
            b.output += static_cast<std::ptrdiff_t>(b0) * args.ld_out;
            if (b.stats) b.stats += b0;
            kernels::attention_head(part_ctx, b);
        }
    });
}

// The knocked-out heads' columns of concat (T_q×(n_heads·d_head)): zeros, or each column's mean
// over the rows; then the patched head's columns, the patch's.
void ablate(Matrix& concat, const BlockEdits& e, int n_heads) {
    const int d_k = static_cast<int>(concat.cols()) / n_heads;
    for (int h : e.knocked) {
        auto cols = concat.middleCols(h * d_k, d_k);
        if (e.ablation == Ablation::Zero || cols.rows() == 0) cols.setZero();
        else cols.rowwise() = RowVector(cols.colwise().mean());
    }
    if (e.patch) concat.middleCols(e.patched * d_k, d_k) = *e.patch;
}

// The heads of X (T rows of `heads` heads of d_head columns) as one matrix each.
std::vector<Matrix> split_heads(const Matrix& X, int heads, int d_head) {
    std::vector<Matrix> out;
    for (int h = 0; h < heads; ++h) out.push_back(X.middleCols(h * d_head, d_head));
    return out;
}

// A Linear as a dense in×out matrix (row-vector convention), unpacked.
Matrix dense(const Linear& f) {
    Matrix m(f.in(), f.out());
    kernels::unpack(f.w, m.data(), f.out());
    return m;
}

// Each head's value norms (attention_maps.hpp value_norms) from V (T_k×n_kv_heads·d_head) and
// W_o: heads×T_k, the heads in parts on ctx's threads (each head's numbers the same in any split).
Matrix head_value_norms(kernels::Context& ctx, const Linear& o, const Matrix& V, const BlockSpec& s) {
    const Matrix w_o = dense(o);  // n_heads·d_head × d
    const int d_k = s.d_head, T_k = static_cast<int>(V.rows());
    Matrix norms(s.n_heads, T_k);
    kernels::for_parts(ctx, s.n_heads, static_cast<double>(s.n_heads) * d_k * (d_k * (T_k + w_o.cols())), [&](int h, kernels::Context&) {
        norms.row(h) = value_norms(V.middleCols((h / s.group()) * d_k, d_k), w_o.middleRows(static_cast<Eigen::Index>(h) * d_k, d_k));
    });
    return norms;
}

// f(r0, r1) for rows [0, T) in parts, one a thread: work row by row (norms, activations, the
// rotation), whose numbers are the same in any split. `cost`: a row's multiply-adds, or what
// costs as much (a tanh, an exp or a division about 16), for for_parts' threshold.
template <class F>
void by_rows(kernels::Context& ctx, int T, double cost, F&& f) {
    const int parts = std::max(1, std::min(ctx.threads(), T));
    kernels::for_parts(ctx, parts, cost * T, [&](int part, kernels::Context&) {
        const auto [r0, r1] = kernels::part_range(part, parts, T);
        if (r1 > r0) f(r0, r1);
    });
}

// The rotation's cos and sin for rows [first, first + T) of a sequence of `length`: at the spec's
// positions, or at first, first + 1, ….
RopeTable spec_table(const BlockSpec& s, int first, int T, int length) {
    return s.positions ? rope_table(*s.rope, *s.positions, first, T, length) : rope_table(*s.rope, first, T, length);
}

// Q (T rows of n heads): each head's q/k norm, then its rotation at positions 0 … by `table`
// (rope_table's of at least T rows: its first T). With `normed` and `unrotated` (block_trace),
// the heads after the norm and before the rotation.
void position_heads(kernels::Context& ctx, const BlockSpec& s, const Norm& norm, Matrix& X, int heads, const RopeTable& table,
                    std::vector<Matrix>* normed = nullptr, std::vector<Matrix>* unrotated = nullptr) {
    const int T = static_cast<int>(X.rows()), ld = heads * s.d_head;
    if (norm.present()) {
        const int n = s.qk_norm_whole ? ld : s.d_head;  // a head, or the whole projection (olmo2)
        by_rows(ctx, T, 4.0 * ld, [&](int r0, int r1) {
            float* x = X.row(r0).data();
            blocks::rms_norm(x, (r1 - r0) * ld / n, n, n, norm.g, s.eps, x);
        });
        if (normed) *normed = split_heads(X, heads, s.d_head);
    }
    if (s.rope) {
        if (unrotated) *unrotated = split_heads(X, heads, s.d_head);
        by_rows(ctx, T, 2.0 * ld, [&](int r0, int r1) { apply_rope(table, X.row(r0).data(), r0, r1 - r0, ld, heads, s.d_head); });
    }
}

// One attention block: x_q T_q×d, x_kv T_k×d (x_q itself for self-attention) -> T_q×d.
//   pass 1: Q = x_q·W_q + b_q (T_q×n_heads·d_head), K = x_kv·W_k + b_k, V = x_kv·W_v + b_v
//           (T_k×n_kv_heads·d_head)
//   pass 2: q/k norm and the rotation of Q and K (rotary families; positions from 0)
//   pass 3: the heads (attend_heads), weights into `maps` (resized to n_heads T_q×T_k) when
//           given; into `kept`, when given, Q, K and each row's softmax (attention_maps.hpp)
//   pass 4: the knocked-out heads' outputs ablated (ablate)
//   pass 5: out = concat·W_o + b_o
// With `trace` (and maps), every intermediate is kept too: the same products, the same heads (q
// and k as the scores read them: normed and rotated). With `seen` (RunInput::record), concat
// (after pass 4) and V.
struct BlockSeen {
    Matrix *concat, *keys, *values;
};
Matrix attention_block(kernels::Context& ctx, const AttentionWeights& w, const BlockSpec& s, const Matrix& x_q,
                       const Matrix& x_kv, const BlockEdits& edits, std::vector<Matrix>* maps, KeptHeads* kept,
                       MultiHeadTrace* trace = nullptr, BlockTrace* extras = nullptr, const BlockSeen* seen = nullptr) {
    const int T_q = static_cast<int>(x_q.rows()), T_k = static_cast<int>(x_kv.rows()), d = static_cast<int>(x_q.cols());
    const int dq = s.n_heads * s.d_head, dkv = s.n_kv_heads * s.d_head;
    Matrix Q(T_q, dq), K(T_k, dkv), V(T_k, dkv), concat(T_q, dq), out(T_q, d);
    blocks::linear(ctx, w.q, x_q.data(), T_q, d, Q.data(), dq);
    blocks::linear(ctx, w.k, x_kv.data(), T_k, d, K.data(), dkv);
    blocks::linear(ctx, w.v, x_kv.data(), T_k, d, V.data(), dkv);
    if (extras && (s.q_norm.present() || s.k_norm.present()))
        extras->q_projected = split_heads(Q, s.n_heads, s.d_head), extras->k_projected = split_heads(K, s.n_kv_heads, s.d_head);
    const RopeTable table = s.rope ? spec_table(s, 0, std::max(T_q, T_k), T_k) : RopeTable{};  // Q's and K's
    position_heads(ctx, s, s.q_norm, Q, s.n_heads, table, extras ? &extras->q_normed : nullptr, extras ? &extras->q_unrotated : nullptr);
    position_heads(ctx, s, s.k_norm, K, s.n_kv_heads, table, extras ? &extras->k_normed : nullptr, extras ? &extras->k_unrotated : nullptr);
    std::vector<float*> map_ptrs;
    if (maps) {
        maps->resize(s.n_heads);
        for (Matrix& m : *maps) m.resize(T_q, T_k), map_ptrs.push_back(m.data());
    }
    if (trace) trace->heads.assign(s.n_heads, HeadTrace{});
    if (kept) kept->stats.assign(static_cast<std::size_t>(s.n_heads) * T_q, kernels::RowStat{});
    attend_heads(ctx, s, Q.data(), dq, K.data(), V.data(), dkv, T_q, T_k, block_mask(s, T_q, T_k, 0, edits.keys),
                 {maps ? map_ptrs.data() : nullptr, concat.data(), trace, kept ? kept->stats.data() : nullptr});
    if (seen) *seen->keys = K;
    if (kept) {
        kept->heads = s.n_heads, kept->kv_heads = s.n_kv_heads, kept->d_head = s.d_head;
        kept->T_q = T_q, kept->T_k = T_k;
        kept->factor = s.factor, kept->softcap = s.softcap;
        kept->causal = s.causal, kept->window = s.window, kept->both_ways = s.both_ways, kept->keys = edits.keys;
        if (s.groups) kept->groups = *s.groups;
        if (s.sinks) kept->sinks.assign(s.sinks, s.sinks + s.n_heads);
        kept->q = trace ? Q : std::move(Q), kept->k = trace ? K : std::move(K);
        kept->value_norms = head_value_norms(ctx, w.o, V, s);
    }
    ablate(concat, edits, s.n_heads);
    blocks::linear(ctx, w.o, concat.data(), T_q, dq, out.data(), d);
    if (seen) *seen->concat = concat, *seen->values = V;
    if (trace) {
        const int d_k = s.d_head;
        trace->x_q = x_q, trace->x_kv = x_kv;
        for (int h = 0; h < s.n_heads; ++h) {
            HeadTrace& ht = trace->heads[h];
            const int g = h / s.group();
            ht.q = Q.middleCols(h * d_k, d_k), ht.k = K.middleCols(g * d_k, d_k), ht.v = V.middleCols(g * d_k, d_k);
            ht.weights = (*maps)[h];
            ht.output = concat.middleCols(h * d_k, d_k);
        }
        trace->concat = concat;
        trace->output = out;
    }
    return out;
}

// m new rows (at positions n … n + m − 1, n = the cached rows) of self-attention over the cache:
// q, k, v projected for x (m×d), q and k normed and rotated there; k and v appended; each row
// attends to the cached keys its mask allows (causal, the window's) that `edits` does not hide,
// and its knocked-out (or patched: edits.patch's m rows) heads' outputs are replaced. Returns the
// block's output, m×d. The decoder feeds one row; a patched run the rows after the patch's first.
Matrix cached_self_attention(kernels::Context& ctx, const AttentionWeights& a, const BlockSpec& s, const Matrix& x,
                             const BlockEdits& edits, int rope_length, std::vector<float>& K, std::vector<float>& V) {
    const int d = static_cast<int>(x.cols()), dq = s.n_heads * s.d_head, dkv = s.n_kv_heads * s.d_head;
    const int n = static_cast<int>(K.size() / dkv), m = static_cast<int>(x.rows());
    Matrix q(m, dq), k(m, dkv), concat(m, dq), out(m, d);
    blocks::linear(ctx, a.q, x.data(), m, d, q.data(), dq);
    blocks::linear(ctx, a.k, x.data(), m, d, k.data(), dkv);
    const RopeTable table = s.rope ? spec_table(s, n, m, rope_length) : RopeTable{};
    position_heads(ctx, s, s.q_norm, q, s.n_heads, table);
    position_heads(ctx, s, s.k_norm, k, s.n_kv_heads, table);
    K.insert(K.end(), k.data(), k.data() + static_cast<std::size_t>(m) * dkv);
    V.resize(V.size() + static_cast<std::size_t>(m) * dkv);
    blocks::linear(ctx, a.v, x.data(), m, d, V.data() + static_cast<std::size_t>(n) * dkv, dkv);
    const int T_k = n + m;
    attend_heads(ctx, s, q.data(), dq, K.data(), V.data(), dkv, m, T_k, block_mask(s, m, T_k, n, edits.keys),
                 {nullptr, concat.data(), nullptr, nullptr});
    ablate(concat, edits, s.n_heads);
    blocks::linear(ctx, a.o, concat.data(), m, dq, out.data(), d);
    return out;
}

// [SECTION] Sub-blocks: norms, residuals, MLPs, embeddings, the head ----------------------------

// x: T×d -> T×d: LayerNorm or RMSNorm, as the family's.
Matrix norm(kernels::Context& ctx, const ModelConfig& c, const Matrix& x, const Norm& n) {
    Matrix y(x.rows(), x.cols());
    const int T = static_cast<int>(x.rows()), d = static_cast<int>(x.cols());
    by_rows(ctx, T, 4.0 * d, [&](int r0, int r1) {
        if (c.norm == NormKind::RmsNorm) blocks::rms_norm(x.row(r0).data(), r1 - r0, d, d, n.g, c.layer_norm_eps, y.row(r0).data());
        else blocks::layer_norm(x.row(r0).data(), r1 - r0, d, n.g, n.b, c.layer_norm_eps, y.row(r0).data());
    });
    return y;
}

// One sub-block f (the attention or the MLP) with its residual, as the family places the norms:
//   pre-norm:  x = x + f(norm(x))       (granite: x + residual_multiplier·f(norm(x)); dinov2: x + λ ⊙ f(norm(x)),
//                                         λ the layer's `scale`, one factor per channel)
//   post-norm: x = norm(x + f(x))
//   sandwich:  x = x + post(f(norm(x)))
//   post only: x = x + post(f(x))
//   parallel:  x = x + attention(norm(x)) + mlp(norm(x)): the attention's sub-block (n present)
//              keeps norm(x) in `shared`, the MLP's (n absent) reads it
// f reads what it is given (the block's input, which the forward keeps).
void residual(kernels::Context& ctx, const ModelConfig& c, Matrix& x, const Norm& n, const Norm& post,
              const std::function<Matrix(const Matrix&)>& f, Matrix& shared, const float* scale = nullptr) {
    switch (c.residual) {
        case Residual::PostOnly: x += norm(ctx, c, f(x), post); return;
        case Residual::Parallel:
            if (n.present()) shared = norm(ctx, c, x, n);
            x += f(shared);
            return;
        case Residual::PreNorm:
            if (scale) x += f(norm(ctx, c, x, n)) * Eigen::Map<const RowVector>(scale, x.cols()).asDiagonal();
            else if (c.residual_scale != 1) x += c.residual_scale * f(norm(ctx, c, x, n));
            else x += f(norm(ctx, c, x, n));
            return;
        case Residual::PostNorm: x += f(x), x = norm(ctx, c, x, n); return;
        case Residual::Sandwich: x += norm(ctx, c, f(norm(ctx, c, x, n)), post); return;
    }
}

// A layer's experts in place of the MLP, x: T×d -> T×d (config.hpp's Experts).
//   pass 1: the router's logits, T×n_experts; each token's top k and their weights (`routing`)
//   pass 2: expert by expert, the tokens routed to it gathered, its MLP run on them, and each
//           output row added to its token's, times the token's weight for it
Matrix experts_forward(kernels::Context& ctx, const ModelConfig& c, const LayerWeights& l, const Matrix& x, Routing* routing) {
    const Experts& ex = c.experts;
    const int T = static_cast<int>(x.rows()), d = static_cast<int>(x.cols()), n = ex.n, k = ex.top_k, ff = ex.d_ff;
    // pass 1
    Matrix logits(T, n);
    blocks::linear(ctx, l.router, x.data(), T, d, logits.data(), n);
    Routing routed(static_cast<std::size_t>(T));
    std::vector<int> order(static_cast<std::size_t>(n));
    for (int t = 0; t < T; ++t) {
        const float* z = logits.row(t).data();
        std::iota(order.begin(), order.end(), 0);
        std::partial_sort(order.begin(), order.begin() + k, order.end(),
                          [&](int a, int b) { return z[a] > z[b] || (z[a] == z[b] && a < b); });
        // softmax over every expert (then the top k's share), or over the top k alone
        const bool all = ex.router == Experts::Router::SoftmaxTopK;
        const double top = z[order[0]];
        double sum = 0, kept = 0;
        for (int e = 0; e < (all ? n : k); ++e) sum += std::exp(static_cast<double>(z[all ? e : order[e]]) - top);
        for (int j = 0; j < k; ++j) kept += std::exp(static_cast<double>(z[order[j]]) - top) / sum;
        for (int j = 0; j < k; ++j) {
            const double p = std::exp(static_cast<double>(z[order[j]]) - top) / sum;
            routed[t].push_back({order[j], static_cast<float>(all && ex.normalize ? p / kept : p)});
        }
    }
    // pass 2
    Matrix y = Matrix::Zero(T, d);
    for (int e = 0; e < n; ++e) {
        std::vector<std::pair<int, float>> tokens;  // (token, weight)
        for (int t = 0; t < T; ++t)
            for (const Routed& r : routed[t])
                if (r.expert == e) tokens.push_back({t, r.weight});
        if (tokens.empty()) continue;
        const int m = static_cast<int>(tokens.size());
        const ExpertWeights& w = l.experts[static_cast<std::size_t>(e)];
        Matrix xe(m, d), h(m, ff), ye(m, d);
        for (int i = 0; i < m; ++i) xe.row(i) = x.row(tokens[i].first);
        if (ex.clamped_swiglu) {
            Matrix gu(m, 2 * ff);
            blocks::linear(ctx, w.gate, xe.data(), m, d, gu.data(), 2 * ff);
            for (int i = 0; i < m; ++i)
                for (int j = 0; j < ff; ++j) {
                    const float g = std::min(gu(i, 2 * j), 7.0f), u = std::clamp(gu(i, 2 * j + 1), -7.0f, 7.0f);
                    h(i, j) = (u + 1.0f) * (g / (1.0f + std::exp(-1.702f * g)));
                }
        } else {
            Matrix g(m, ff);
            blocks::linear(ctx, w.gate, xe.data(), m, d, g.data(), ff);
            blocks::linear(ctx, w.up, xe.data(), m, d, h.data(), ff);
            blocks::activate(ctx.isa, c.activation, g.data(), static_cast<std::size_t>(m) * ff);
            h.array() *= g.array();
        }
        blocks::linear(ctx, w.down, h.data(), m, ff, ye.data(), d);
        for (int i = 0; i < m; ++i) y.row(tokens[i].first) += tokens[i].second * ye.row(i);
    }
    if (routing) *routing = std::move(routed);
    return y;
}

// x: T×d -> T×d: fc2(act(fc1(x))), or gated: down(act(gate(x)) ⊙ up(x)) (fc1 = up, fc2 = down);
// a layer with experts: experts_forward (its routing into `routing`, when given).
Matrix feed_forward(kernels::Context& ctx, const ModelConfig& c, const LayerWeights& l, const Matrix& x, Routing* routing = nullptr) {
    if (!l.experts.empty()) return experts_forward(ctx, c, l, x, routing);
    const int T = static_cast<int>(x.rows()), d = static_cast<int>(x.cols()), d_ff = l.fc1.out();
    Matrix y(T, d);
    // kFeedForwardRows rows at a time: the hidden layers of a long text are a band's, not T×d_ff
    // (each row's numbers are the same in any band: the products' rows are independent)
    const int band = std::min(T, kFeedForwardRows);
    Matrix h(band, d_ff), g(c.gated_mlp ? band : 0, d_ff);
    for (int b0 = 0; b0 < T; b0 += band) {
        const int n = std::min(band, T - b0);
        blocks::linear(ctx, l.fc1, x.row(b0).data(), n, d, h.data(), d_ff);
        if (c.gated_mlp) blocks::linear(ctx, l.gate, x.row(b0).data(), n, d, g.data(), d_ff);
        // h = act(h), or act(g) ⊙ h: elementwise (a tanh or σ costs about 16 multiply-adds)
        by_rows(ctx, n, 16.0 * d_ff, [&](int r0, int r1) {
            const std::size_t count = static_cast<std::size_t>(r1 - r0) * d_ff;
            if (c.gated_mlp) {
                blocks::activate(ctx.isa, c.activation, g.row(r0).data(), count);
                h.middleRows(r0, r1 - r0).array() *= g.middleRows(r0, r1 - r0).array();
            } else {
                blocks::activate(ctx.isa, c.activation, h.row(r0).data(), count);
            }
        });
        blocks::linear(ctx, l.fc2, h.data(), n, d_ff, y.row(b0).data(), d);
    }
    return y;
}

// The LM head on rows x (rows×d) -> out (rows×V): logits = x·Eᵀ (+ final_logits_bias), scaled
// (granite: divided by logits_scaling), soft-capped where the family caps them (gemma2:
// cap·tanh(logits/cap)). logits_of: at one position.
void head_logits(kernels::Context& ctx, const Model& m, const float* x, int rows, float* out) {
    const ModelConfig& c = m.config;
    blocks::linear(ctx, m.weights->lm_head, x, rows, m.weights->lm_head.in(), out, c.vocab_size);  // d (dinov2's: 2·d)
    const std::size_t n = static_cast<std::size_t>(rows) * static_cast<std::size_t>(c.vocab_size);
    if (c.logit_scale != 1)
        for (std::size_t i = 0; i < n; ++i) out[i] *= c.logit_scale;
    if (c.final_softcap > 0)
        for (std::size_t i = 0; i < n; ++i) out[i] = c.final_softcap * std::tanh(out[i] / c.final_softcap);
}
std::vector<float> logits_of(kernels::Context& ctx, const Model& m, const float* x) {
    std::vector<float> logits(m.config.vocab_size);
    head_logits(ctx, m, x, 1, logits.data());
    return logits;
}

}  // namespace

std::vector<float> id_logits(const Model& m, const float* x, const std::vector<int>& ids) {
    const ModelConfig& c = m.config;
    const Linear& head = m.weights->lm_head;
    std::vector<float> logits, column(static_cast<std::size_t>(c.d_model));
    column.resize(static_cast<std::size_t>(head.in()));  // d (dinov2's pooled head: 2·d)
    for (int id : ids) {
        kernels::column(head.w, id, column.data());
        double z = head.b ? head.b[id] : 0.0;
        for (int i = 0; i < head.in(); ++i) z += static_cast<double>(x[i]) * column[static_cast<std::size_t>(i)];
        float l = static_cast<float>(z) * c.logit_scale;
        if (c.final_softcap > 0) l = c.final_softcap * std::tanh(l / c.final_softcap);
        logits.push_back(l);
    }
    return logits;
}

namespace {

// torch's interpolate(mode="bicubic", align_corners=False) along one axis, n samples to m: each
// output's inputs and weights.
//   plain (antialias=False): the source point s = (i + ½)·n/m − ½; its neighbours ⌊s⌋−1 … ⌊s⌋+2,
//     clamped to the edges; Keys' cubic (a = −0.75) at t = s − ⌊s⌋;
//   antialias=True: PIL's bicubic resampling weights (image.hpp resample_weights: a = −0.5,
//     stretched by n/m when shrinking, normalized; at the edges fewer inputs, none clamped).
struct AxisTaps {
    std::vector<int> at;
    std::vector<double> w;
};
double keys_cubic(double x) {  // a = −0.75
    constexpr double a = -0.75;
    x = std::fabs(x);
    if (x < 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
    if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
    return 0;
}
std::vector<AxisTaps> cubic_taps(int n, int m, bool antialias) {
    std::vector<AxisTaps> taps(static_cast<std::size_t>(m));
    if (antialias) {
        const std::vector<ResampleWeights> weights = resample_weights(n, m, Resample::Bicubic);
        for (std::size_t i = 0; i < taps.size(); ++i) {
            taps[i].w = weights[i].w;
            for (std::size_t k = 0; k < taps[i].w.size(); ++k) taps[i].at.push_back(weights[i].first + static_cast<int>(k));
        }
        return taps;
    }
    const double scale = static_cast<double>(n) / m;
    for (int i = 0; i < m; ++i) {
        AxisTaps& t = taps[static_cast<std::size_t>(i)];
        const double src = (i + 0.5) * scale - 0.5, fl = std::floor(src);
        for (int k = -1; k <= 2; ++k) {
            t.at.push_back(std::clamp(static_cast<int>(fl) + k, 0, n - 1));
            t.w.push_back(keys_cubic(src - fl - k));
        }
    }
    return taps;
}

// A G×G table of d-vectors (row-major) resized to rows × cols, each axis by cubic_taps
// (columns first, then rows; sums in double).
Matrix resized_positions(const float* table, int G, int d, int rows, int cols, bool antialias) {
    const std::vector<AxisTaps> across = cubic_taps(G, cols, antialias), down = cubic_taps(G, rows, antialias);
    Eigen::MatrixXd wide = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(G) * cols, d);  // G rows × cols
    const Eigen::Map<const Matrix> in(table, static_cast<Eigen::Index>(G) * G, d);
    for (int r = 0; r < G; ++r)
        for (int x = 0; x < cols; ++x) {
            const AxisTaps& t = across[static_cast<std::size_t>(x)];
            for (std::size_t k = 0; k < t.at.size(); ++k) wide.row(r * cols + x) += t.w[k] * in.row(r * G + t.at[k]).cast<double>();
        }
    Matrix out(static_cast<Eigen::Index>(rows) * cols, d);
    for (int y = 0; y < rows; ++y)
        for (int x = 0; x < cols; ++x) {
            const AxisTaps& t = down[static_cast<std::size_t>(y)];
            Eigen::RowVectorXd v = Eigen::RowVectorXd::Zero(d);
            for (std::size_t k = 0; k < t.at.size(); ++k) v += t.w[k] * wide.row(t.at[k] * cols + x);
            out.row(y * cols + x) = v.cast<float>();
        }
    return out;
}

// Embeddings of a stack: T×d, rows at positions first_position ….
//   gpt2:    wte[ids] + wpe[positions]
//   bert:    LN(word[ids] + position[positions] + token_type[0])
//   marian:  shared[ids]·√d (scale_embedding) + sinusoid[positions]
//   rotary:  embed_tokens[ids] (gemma: ·√d); positions enter in the attention
//   idefics3, smolvlm: then the image_token_id rows replaced by `image_rows`, in order
Matrix embeddings(kernels::Context& ctx, const Model& m, const std::vector<int>& ids, bool decoder, int first_position = 0,
                  const Matrix& patches = {}, int patch_rows = 0, const Matrix& image_rows = {}) {
    const ModelConfig& c = m.config;
    const ModelWeights& w = *m.weights;
    const int T = static_cast<int>(ids.size()), d = c.d_model;
    if (first_position + T > c.position_limit())
        throw ModelError("", "ids", "position " + std::to_string(first_position + T - 1) + " is past the model's " +
                                        std::to_string(c.position_limit()) + " positions");
    Matrix x(T, d);
    if (c.vision()) {
        // The [CLS] (vit, clip, dinov2) with its position; the registers (dinov2_with_registers),
        // with none; then each patch through the patch embedding, its position added (the
        // table's, or resized to the picture's grid: rows × cols patches)
        const int first = c.class_token ? 1 : 0, patched = first + c.registers, n = T - patched;
        const int rows = patch_rows > 0 ? patch_rows : c.patch_grid(), cols = rows > 0 ? n / rows : 0;
        if (n < 1 || patches.rows() != n || rows * cols != n || patches.cols() != w.patch_embedding.in())
            throw ModelError("", "patches", "expected " + std::to_string(n) + " patches of " + std::to_string(w.patch_embedding.in()) +
                                                " pixels in " + std::to_string(rows) + " rows, got " + std::to_string(patches.rows()) + " of " +
                                                std::to_string(patches.cols()));
        if (first) x.row(0) = Eigen::Map<const RowVector>(w.cls_token, d) + Eigen::Map<const RowVector>(w.positions, d);
        for (int r = 0; r < c.registers; ++r) x.row(first + r) = Eigen::Map<const RowVector>(w.registers + static_cast<std::ptrdiff_t>(r) * d, d);
        blocks::linear(ctx, w.patch_embedding, patches.data(), n, static_cast<int>(patches.cols()), x.row(patched).data(), d);
        const float* table = w.positions + (first ? d : 0);  // the patches' positions, G×G×d
        const int G = c.patch_grid();
        if (c.positions == Positions::Rotary) {  // qwen2_5_vl's tower: turned in the attention
        } else if (rows == G && cols == G) x.bottomRows(n) += Eigen::Map<const Matrix>(table, n, d);
        else if (c.position_resize == PositionResize::None)
            throw ModelError("", "patches", std::to_string(rows) + " × " + std::to_string(cols) + " patches; " + c.model_type + " reads " +
                                                std::to_string(G) + " × " + std::to_string(G));
        else x.bottomRows(n) += resized_positions(table, G, d, rows, cols, c.position_resize == PositionResize::BicubicAntialias);
        if (w.embedding_norm.present())  // clip's pre_layrnorm
            blocks::layer_norm(x.data(), T, d, w.embedding_norm.g, w.embedding_norm.b, c.layer_norm_eps, x.data());
        return x;
    }
    const float* positions = c.positions == Positions::Rotary ? nullptr : decoder ? w.decoder_positions : w.positions;
    blocks::embed(w.token_embedding, ids, c.embedding_scale, positions, first_position, x.data());
    if (w.token_types) {
        for (int t = 0; t < T; ++t) x.row(t) += Eigen::Map<const RowVector>(w.token_types, d);
        blocks::layer_norm(x.data(), T, d, w.embedding_norm.g, w.embedding_norm.b, c.layer_norm_eps, x.data());
    }
    if (c.vision_language()) {
        Eigen::Index k = 0;
        for (int t = 0; t < T; ++t)
            if (ids[t] == c.image_token_id && k < image_rows.rows()) x.row(t) = image_rows.row(k++);
        const auto images = std::count(ids.begin(), ids.end(), c.image_token_id);
        if (images != image_rows.rows() || (image_rows.rows() > 0 && image_rows.cols() != d))
            throw ModelError("", "ids", "the text holds " + std::to_string(images) + " image tokens (id " + std::to_string(c.image_token_id) +
                                            "), the picture gives " + std::to_string(image_rows.rows()) + " rows of " + std::to_string(image_rows.cols()));
    }
    return x;
}

}  // namespace

Matrix hidden_logits(kernels::Context& ctx, const Model& model, const Matrix& rows) {
    Matrix out(rows.rows(), model.config.vocab_size);
    head_logits(ctx, model, rows.data(), static_cast<int>(rows.rows()), out.data());
    return out;
}

PatchEmbedding patch_embedding(kernels::Context& ctx, const Model& model, const Matrix& patches) {
    const ModelConfig& c = model.config;
    const ModelWeights& w = *model.weights;
    const Linear& e = w.patch_embedding;
    const int k = e.in(), d = c.d_model, first = (c.class_token ? 1 : 0) + c.registers, n = static_cast<int>(patches.rows());
    if (!c.vision() || patches.cols() != k) throw ModelError("", "patches", "expected patches of " + std::to_string(k) + " pixels");
    PatchEmbedding out;
    out.first = first;
    // 1. b: the product of a row of zeros; W_e: of the identity's rows, less b
    Matrix probe = Matrix::Zero(k + 1, k), y(k + 1, d);
    probe.bottomRows(k).setIdentity();
    blocks::linear(ctx, e, probe.data(), k + 1, k, y.data(), d);
    out.bias = y.row(0);
    out.weight = y.bottomRows(k).rowwise() - out.bias;
    // 2. P: the learned tokens' rows 0, then the patches; E = P·W_e + b as the forward computes it
    out.pixels = Matrix::Zero(first + n, k);
    out.pixels.bottomRows(n) = patches;
    out.embedded.resize(first + n, d);
    if (c.class_token) out.embedded.row(0) = Eigen::Map<const RowVector>(w.cls_token, d);
    for (int r = 0; r < c.registers; ++r)
        out.embedded.row(first - c.registers + r) = Eigen::Map<const RowVector>(w.registers + static_cast<std::ptrdiff_t>(r) * d, d);
    if (n > 0) blocks::linear(ctx, e, patches.data(), n, k, out.embedded.row(first).data(), d);
    return out;
}

Matrix connector_rows(kernels::Context& ctx, const Model& model, const Matrix& merged) {
    const Linear& p = model.weights->projector;
    const Norm& n = model.weights->projector_norm;
    if (!p.w.data || merged.cols() != p.in()) throw ModelError("", "image_rows", "expected rows of the connector's " + std::to_string(p.in()) + " inputs");
    const int rows = static_cast<int>(merged.rows()), in = p.in();
    Matrix normed;
    if (n.present()) {  // gemma3's mm_soft_emb_norm over a row, qwen2_5_vl's ln_q over each patch; the tower's eps
        const int width = model.config.connector == ModelConfig::Connector::Merge ? model.config.vision_tower->d_model : in;
        normed.resize(rows, in);
        blocks::rms_norm(merged.data(), rows * (in / width), width, width, n.g, model.config.vision_tower->layer_norm_eps, normed.data());
    }
    const Linear& q = model.weights->projector_out;
    Matrix out(rows, p.out());
    blocks::linear(ctx, p, n.present() ? normed.data() : merged.data(), rows, in, out.data(), static_cast<int>(out.cols()));
    if (!q.w.data) return out;
    blocks::gelu_exact(out.data(), static_cast<std::size_t>(out.size()));  // qwen2_5_vl: Linear, GELU, Linear
    Matrix projected(rows, model.config.d_model);
    blocks::linear(ctx, q, out.data(), rows, p.out(), projected.data(), model.config.d_model);
    return projected;
}

Matrix stream_logits(kernels::Context& ctx, const Model& model, const Matrix& rows) {
    const Norm& n = model.weights->final_norm;
    return hidden_logits(ctx, model, n.present() ? norm(ctx, model.config, rows, n) : rows);
}

BothWays image_runs(const ModelConfig& c, const std::vector<int>& ids) {
    BothWays runs;
    if (!c.bidirectional_images) return runs;
    for (int t = 0; t < static_cast<int>(ids.size()); ++t)
        if (ids[static_cast<std::size_t>(t)] == c.image_token_id) {
            if (!runs.empty() && runs.back().second == t) ++runs.back().second;
            else runs.emplace_back(t, t + 1);
        }
    return runs;
}

int fed_together(const ModelConfig& c, const std::vector<int>& ids, int from) {
    const BothWays runs = image_runs(c, ids);
    for (const auto& [first, end] : runs)
        if (first == from) return end - first;
    return 1;
}

// [SECTION] A forward pass in steps ----------------------------------------------------------

namespace {

enum class StepKind { Embed, SelfAttention, CrossAttention, FeedForward, Head };
struct Step {
    StepKind kind;
    int stack = kFirstStack;  // or kDecoderStack (marian's decoder: its self and cross attention)
    int layer = 0;
};

}  // namespace

struct Forward::State {
    Model model;
    RunInput input;
    RunResult out;
    std::vector<StackShape> shapes;
    std::vector<Step> steps;
    std::size_t next = 0;
    Matrix x;       // the residual stream of the stack being run, T×d
    Matrix shared;  // parallel blocks (cohere2): the layer's norm(x), read by the attention and the MLP
    std::vector<int> windows;  // qwen2_5_vl's tower: each patch's window (patch_windows' layers)
};

namespace {

// Each patch's window of window_patches a side (from the grid's top left), by the patches' rows
// and columns (the tower's RunInput::positions); none where the model has no windows.
std::vector<int> patch_windows(const ModelConfig& c, const PositionStreams& positions) {
    std::vector<int> out;
    if (c.window_patches <= 0 || positions.size() < 2) return out;
    for (std::size_t t = 0; t < positions[0].size(); ++t)
        out.push_back(positions[0][t] / c.window_patches * ModelConfig::kMaxPatchSide + positions[1][t] / c.window_patches);
    return out;
}

}  // namespace

Forward::Forward(const Model& model, RunInput input) : state_(std::make_unique<State>()) {
    State& s = *state_;
    s.model = model;
    s.input = std::move(input);
    s.out.edits = s.input.edits;
    const ModelConfig& c = model.config;
    s.out.both_ways = image_runs(c, s.input.ids);
    s.out.positions = s.input.positions;
    s.windows = patch_windows(c, s.input.positions);
    s.shapes = stack_shapes(c);
    for (const StackShape& shape : s.shapes) {
        StackRun r;
        r.name = shape.name, r.causal = shape.causal, r.cross = shape.cross, r.heads = shape.heads;
        r.layers.resize(shape.layers);
        s.out.stacks.push_back(std::move(r));
    }
    if (c.experts.n > 0) s.out.experts.resize(static_cast<std::size_t>(c.n_layers));
    const bool marian = c.encoder_decoder();
    const bool resumed = s.input.from > 0 || s.input.stream.size() > 0;  // decoder-only models (RunInput)
    if (resumed) s.x = s.input.stream;
    else s.steps.push_back({StepKind::Embed, kFirstStack, 0});
    if (s.input.record) {
        Inside& in = s.out.inside;
        for (auto* v : {&in.concat, &in.attention, &in.mlp, &in.keys, &in.values}) v->resize(static_cast<std::size_t>(c.n_layers));
    }
    for (int i = resumed ? s.input.from : 0; i < c.n_layers; ++i) {
        s.steps.push_back({StepKind::SelfAttention, kFirstStack, i});
        s.steps.push_back({StepKind::FeedForward, kFirstStack, i});
    }
    if (marian) {
        s.steps.push_back({StepKind::Embed, kDecoderStack, 0});
        for (int i = 0; i < c.decoder_layers; ++i) {
            s.steps.push_back({StepKind::SelfAttention, kDecoderStack, i});
            s.steps.push_back({StepKind::CrossAttention, kDecoderStack, i});
            s.steps.push_back({StepKind::FeedForward, kDecoderStack, i});
        }
    }
    s.steps.push_back({StepKind::Head, marian ? kDecoderStack : kFirstStack, 0});
}

Forward::~Forward() = default;
bool Forward::done() const { return state_->next == state_->steps.size(); }
float Forward::progress() const { return static_cast<float>(state_->next) / static_cast<float>(state_->steps.size()); }

void Forward::step(kernels::Context& ctx) {
    State& s = *state_;
    if (done()) return;
    const Step st = s.steps[s.next++];
    const ModelConfig& c = s.model.config;
    const ModelWeights& w = *s.model.weights;
    const bool marian = c.encoder_decoder();
    const LayerWeights& l = st.stack == kFirstStack ? w.layers[st.layer] : w.decoder_layers[st.layer];
    switch (st.kind) {
        case StepKind::Embed:
            if (st.stack == kDecoderStack) s.out.encoder_output = std::move(s.x);  // marian: the encoder is done
            s.x = embeddings(ctx, s.model, marian && st.stack == kFirstStack ? s.input.source_ids : s.input.ids, st.stack == kDecoderStack, 0,
                             s.input.patches, s.input.patch_rows, s.input.image_rows);
            if (s.input.record) s.out.inside.streams.push_back(s.x);
            return;
        case StepKind::SelfAttention: {
            // The block's input is what its Q projection reads (after the norm before it, if any).
            StackRun& run = s.out.stacks[st.stack];
            BlockRun& b = run.layers[st.layer];
            BlockSpec spec = block_spec(c, l.self, s.shapes[st.stack], st.layer);
            spec.both_ways = s.out.both_ways;
            if (!s.input.positions.empty()) spec.positions = &s.input.positions;
            if (c.patch_windows(st.layer)) spec.groups = &s.windows;
            residual(ctx, c, s.x, l.norm_1, l.post_attention, [&](const Matrix& in) {
                BlockEdits e = block_edits(s.input.edits, st.stack, st.layer, run.heads, s.input.first_row + static_cast<int>(in.rows()));
                if (s.input.patch.size() > 0 && s.input.patched == HeadRef{st.stack, st.layer, s.input.patched.head})
                    e.patched = s.input.patched.head, e.patch = &s.input.patch;
                Inside& inside = s.out.inside;
                const auto li = static_cast<std::size_t>(st.layer);
                if (s.input.first_row > 0) {  // the rows after the prefix's, over its keys and values
                    const Inside& p = *s.input.prefix;
                    const auto take = [&](const Matrix& m) {
                        return std::vector<float>(m.data(), m.data() + static_cast<std::ptrdiff_t>(s.input.first_row) * m.cols());
                    };
                    std::vector<float> K = take(p.keys[li]), V = take(p.values[li]);
                    return cached_self_attention(ctx, l.self, spec, in, e, static_cast<int>(p.keys[li].rows()), K, V);
                }
                const BlockSeen seen{s.input.record ? &inside.concat[li] : nullptr, s.input.record ? &inside.keys[li] : nullptr,
                                     s.input.record ? &inside.values[li] : nullptr};
                const BlockSeen* seeing = s.input.record ? &seen : nullptr;
                if (s.input.keep_maps) b.x = in;
                Matrix out = s.input.keep_maps ? attention_block(ctx, l.self, spec, b.x, b.x, e, &b.weights, nullptr, nullptr, nullptr, seeing)
                                               : attention_block(ctx, l.self, spec, in, in, e, nullptr, &b.kept, nullptr, nullptr, seeing);
                if (s.input.record) inside.attention[li] = out;
                return out;
            }, s.shared, l.layer_scale_1);
            return;
        }
        case StepKind::CrossAttention: {
            // marian decoder: x = LN(x + attn(q from x, k and v from the encoder's output))
            StackRun& run = s.out.stacks[kCrossStack];
            BlockRun& b = run.layers[st.layer];
            const Matrix& source = s.out.encoder_output;
            const BlockSpec spec = block_spec(c, l.cross, s.shapes[kCrossStack], st.layer);
            residual(ctx, c, s.x, l.norm_3, {}, [&](const Matrix& in) {
                const BlockEdits e = block_edits(s.input.edits, kCrossStack, st.layer, run.heads, static_cast<int>(source.rows()));
                if (!s.input.keep_maps) return attention_block(ctx, l.cross, spec, in, source, e, nullptr, &b.kept);
                b.x = in;
                return attention_block(ctx, l.cross, spec, b.x, source, e, &b.weights, nullptr);
            }, s.shared);
            return;
        }
        case StepKind::FeedForward:
        {
            Routing* routing = st.stack == kFirstStack && c.has_experts(st.layer) ? &s.out.experts[static_cast<std::size_t>(st.layer)] : nullptr;
            residual(ctx, c, s.x, l.norm_2, l.post_ff, [&](const Matrix& in) {
                Matrix out = feed_forward(ctx, c, l, in, routing);
                if (s.input.record) s.out.inside.mlp[static_cast<std::size_t>(st.layer)] = out;
                return out;
            }, s.shared, l.layer_scale_2);
            if (s.input.record) s.out.inside.streams.push_back(s.x);
            return;
        }
        case StepKind::Head:
            // hidden = the final norm of x (where the family has one); logits at the last
            // position (bert: none; a vision model's classifier: its labels' at the [CLS], or
            // dinov2's of the [CLS] ‖ the patches' mean)
            s.out.hidden = w.final_norm.present() ? norm(ctx, c, s.x, w.final_norm) : std::move(s.x);
            if ((!c.encoder_only() || (c.vision() && w.lm_head.w.data)) && s.out.hidden.rows() > 0) {
                const Matrix& h = s.out.hidden;
                RowVector pooled;
                if (c.pooled_head) {
                    const int first = 1 + c.registers;
                    pooled.resize(2 * h.cols());
                    pooled << h.row(0), h.bottomRows(h.rows() - first).colwise().mean();
                }
                const float* last = c.pooled_head ? pooled.data() : h.row(c.vision() ? 0 : h.rows() - 1).data();
                s.out.logits = s.input.logit_ids.empty() ? logits_of(ctx, s.model, last) : id_logits(s.model, last, s.input.logit_ids);
            }
            return;
    }
}

RunResult Forward::take() {
    return std::move(state_->out);
}

RunResult forward(kernels::Context& ctx, const Model& model, const RunInput& input) {
    Forward f(model, input);
    while (!f.done()) f.step(ctx);
    return f.take();
}

// [SECTION] Any block's whole pipeline, again ------------------------------------------------

namespace {

// A Linear's bias, or zeros.
RowVector bias(const Linear& f) {
    return f.b ? RowVector(Eigen::Map<const RowVector>(f.b, f.out())) : RowVector(RowVector::Zero(f.out()));
}

}  // namespace

BlockTrace block_trace(kernels::Context& ctx, const Model& model, const RunResult& run, int stack, int layer) {
    if (stack < 0 || stack >= static_cast<int>(run.stacks.size()) || layer < 0 ||
        layer >= static_cast<int>(run.stacks[stack].layers.size()))
        throw ModelError("", "block", "no stack " + std::to_string(stack) + " layer " + std::to_string(layer) + " in this run");
    const StackRun& s = run.stacks[stack];
    if (s.layers[layer].x.rows() == 0)
        throw ModelError("", "block", "this run kept no block's input (its maps are on demand: a text past " +
                                          std::to_string(kMapsKeptUpTo) + " tokens)");
    const ModelWeights& w = *model.weights;
    const LayerWeights& l = stack == kFirstStack ? w.layers[layer] : w.decoder_layers[layer];
    const AttentionWeights& a = s.cross ? l.cross : l.self;
    BlockSpec spec = block_spec(model.config, a, stack_shapes(model.config)[stack], layer);
    if (!s.cross) spec.both_ways = run.both_ways;
    if (!run.positions.empty()) spec.positions = &run.positions;
    const std::vector<int> windows = patch_windows(model.config, run.positions);
    if (model.config.patch_windows(layer)) spec.groups = &windows;
    BlockTrace t;
    t.weights.w_q = dense(a.q), t.weights.w_k = dense(a.k), t.weights.w_v = dense(a.v), t.weights.w_o = dense(a.o);
    t.weights.b_q = bias(a.q), t.weights.b_k = bias(a.k), t.weights.b_v = bias(a.v), t.weights.b_o = bias(a.o);
    t.options.n_heads = s.heads;
    t.options.scale = model.config.query_scale > 0 ? Scale{ScaleKind::Divisor, 1.0f / model.config.query_scale}
                                                   : Scale{ScaleKind::InvSqrtDk};
    t.options.mask.causal = s.causal;
    const Matrix& x = s.layers[layer].x;
    const Matrix& x_kv = s.cross ? run.encoder_output : x;
    const BlockEdits e = block_edits(run.edits, stack, layer, s.heads, static_cast<int>(x_kv.rows()));
    t.options.mask.key_padding = e.keys;
    if (spec.window > 0 || !spec.both_ways.empty() || spec.groups) {  // the spans (or windows) as a matrix (a picture's runs undo the causal mask there)
        t.options.mask.allowed = block_allowed(spec, static_cast<int>(x.rows()), static_cast<int>(x_kv.rows()), 0, {});
        t.options.mask.causal = false;
    }
    t.d_head = spec.d_head, t.kv_heads = spec.n_kv_heads, t.group = spec.group();
    t.window = spec.window, t.softcap = spec.softcap;
    if (spec.sinks) t.sinks.assign(spec.sinks, spec.sinks + spec.n_heads);
    if (spec.rope) {  // the rotation's angles, cos and sin of every position, as position_heads turns them
        const int T = static_cast<int>(x_kv.rows()), half = spec.rope->dim / 2;
        const RopeFrequencies f = rope_frequencies(*spec.rope, T);
        const RopeTable table = spec_table(spec, 0, T, T);
        const std::vector<int> streams = pair_streams(*spec.rope);
        t.rope_dim = spec.rope->dim, t.rope_theta = spec.rope->theta, t.rope_type = spec.rope->type;
        t.rope_inv_freq = f.inv_freq, t.rope_attention_factor = f.attention_factor;
        t.rope_angle.resize(T, half), t.rope_cos.resize(T, half), t.rope_sin.resize(T, half);
        for (int p = 0; p < T; ++p)
            for (int i = 0; i < half; ++i) {
                t.rope_angle(p, i) = static_cast<float>(stream_position(run.positions, streams[static_cast<std::size_t>(i)], p) * f.inv_freq[i]);
                t.rope_cos(p, i) = table.cos_at(p, i), t.rope_sin(p, i) = table.sin_at(p, i);
            }
        if (!spec.rope->sections.empty()) {
            t.rope_streams = streams;
            t.rope_positions.assign(spec.rope->sections.size(), std::vector<int>(static_cast<std::size_t>(T)));
            for (std::size_t s = 0; s < t.rope_positions.size(); ++s)
                for (int p = 0; p < T; ++p) t.rope_positions[s][static_cast<std::size_t>(p)] = stream_position(run.positions, static_cast<int>(s), p);
        }
    }
    if (spec.q_norm.present() || spec.k_norm.present()) {
        auto gain = [&](const Norm& n) { return n.present() ? RowVector(Eigen::Map<const RowVector>(n.g, spec.d_head)) : RowVector(); };
        t.q_norm_gain = gain(spec.q_norm), t.k_norm_gain = gain(spec.k_norm), t.norm_eps = spec.eps;
    }
    std::vector<Matrix> maps;
    attention_block(ctx, a, spec, x, x_kv, e, &maps, nullptr, &t.trace, &t);
    return t;
}

// [SECTION] Generation with a KV cache -------------------------------------------------------

struct Decoder::State {
    Model model;
    Matrix encoder_output;
    Interventions edits;
    int n = 0;  // tokens fed
    std::vector<int> ids;  // the tokens fed
    // The sequence length the cached keys were rotated for: the rope types whose frequencies
    // depend on it (longrope past original_max_position_embeddings) rotate every key again when
    // they change, as a forward over the whole sequence does.
    int rope_length = 0;
    // Per decoder layer: the keys and values of every token fed so far (rotated, for rotary
    // families), n×(n_kv_heads·d_head) each, row-major.
    std::vector<std::vector<float>> k, v;
    std::vector<Matrix> cross_k, cross_v;  // marian: T_src×d per layer, from the encoder's output
    Matrix image_rows;  // a vision-language model's picture, a row per image token fed
    int images = 0;     // image tokens fed
    PositionStreams positions;  // the tokens' (RunInput::positions), or none
};

Decoder::Decoder(const Model& model, Matrix encoder_output, Interventions edits, Matrix image_rows, PositionStreams positions)
    : state_(std::make_unique<State>()) {
    if (edits.ablation == Ablation::Mean && !edits.knockout.empty())
        throw ModelError("", "--knockout-mode", "mean ablation needs the whole sequence: it cannot run on a KV cache");
    State& s = *state_;
    s.model = model;
    s.encoder_output = std::move(encoder_output);
    s.edits = std::move(edits);
    s.image_rows = std::move(image_rows);
    s.positions = std::move(positions);
    const std::size_t layers = model.config.encoder_decoder() ? model.config.decoder_layers : model.config.n_layers;
    s.k.resize(layers), s.v.resize(layers);
}

Decoder::~Decoder() = default;
int Decoder::length() const { return state_->n; }

namespace {

Matrix cached_cross_attention(kernels::Context& ctx, const AttentionWeights& a, const BlockSpec& s, const Matrix& x,
                              const BlockEdits& edits, const Matrix& K, const Matrix& V) {
    const int d = static_cast<int>(x.cols()), T_k = static_cast<int>(K.rows()), m = static_cast<int>(x.rows());
    Matrix q(m, d), concat(m, d), out(m, d);
    blocks::linear(ctx, a.q, x.data(), m, d, q.data(), d);
    attend_heads(ctx, s, q.data(), d, K.data(), V.data(), d, m, T_k, block_mask(s, m, T_k, 0, edits.keys),
                 {nullptr, concat.data(), nullptr, nullptr});
    ablate(concat, edits, s.n_heads);
    blocks::linear(ctx, a.o, concat.data(), m, d, out.data(), d);
    return out;
}

// Whether the rotation of a sequence of n tokens differs from that of `before` (longrope: past
// original_max_position_embeddings).
bool rope_changes(const ModelConfig& c, int before, int n) {
    if (c.positions != Positions::Rotary || before < 1 || n <= before) return false;
    return rope_frequencies(c.rope, before).inv_freq != rope_frequencies(c.rope, n).inv_freq ||
           rope_frequencies(c.rope, before).attention_factor != rope_frequencies(c.rope, n).attention_factor;
}

}  // namespace

std::vector<float> Decoder::step(kernels::Context& ctx, const std::vector<int>& ids) {
    State& s = *state_;
    const ModelConfig& c = s.model.config;
    if (c.encoder_only()) throw ModelError("", "", c.model_type + " has no decoder");
    if (ids.empty()) throw ModelError("", "ids", "nothing to feed");
    for (int id : ids)
        if (id < 0 || id >= c.vocab_size) throw ModelError("", "ids", "id " + std::to_string(id) + " is not in the vocabulary");
    const int n = s.n + static_cast<int>(ids.size());
    if (rope_changes(c, std::max(s.rope_length, s.n), n)) {  // every key rotated again: the tokens fed once more
        const std::vector<int> fed = std::move(s.ids);
        for (auto& k : s.k) k.clear();
        for (auto& v : s.v) v.clear();
        s.ids.clear(), s.n = 0, s.images = 0, s.rope_length = n;
        if (!fed.empty()) feed(ctx, fed);
    }
    s.rope_length = std::max(s.rope_length, n);
    return feed(ctx, ids);
}

// The forward's sub-blocks for the new rows, keys and values from the cache.
std::vector<float> Decoder::feed(kernels::Context& ctx, const std::vector<int>& ids) {
    State& s = *state_;
    const ModelConfig& c = s.model.config;
    const ModelWeights& w = *s.model.weights;
    const bool marian = c.encoder_decoder();
    const int m = static_cast<int>(ids.size());
    const int images = c.vision_language() ? static_cast<int>(std::count(ids.begin(), ids.end(), c.image_token_id)) : 0;
    if (s.images + images > s.image_rows.rows())
        throw ModelError("", "ids", "image token " + std::to_string(s.image_rows.rows() + 1) + ": the picture gives " + std::to_string(s.image_rows.rows()) + " rows");
    Matrix x = embeddings(ctx, s.model, ids, marian, s.n, {}, 0, images > 0 ? Matrix(s.image_rows.middleRows(s.images, images)) : Matrix());
    s.images += images;
    std::vector<int> all = s.ids;
    all.insert(all.end(), ids.begin(), ids.end());
    const BothWays both_ways = image_runs(c, all);
    if (marian && s.cross_k.empty()) {  // the cross keys and values, once
        const int T_src = static_cast<int>(s.encoder_output.rows()), d = c.d_model;
        if (T_src == 0 || s.encoder_output.cols() != d) throw ModelError("", "encoder_output", "expected T_src×d_model");
        for (const LayerWeights& l : w.decoder_layers) {
            s.cross_k.emplace_back(T_src, d), s.cross_v.emplace_back(T_src, d);
            blocks::linear(ctx, l.cross.k, s.encoder_output.data(), T_src, d, s.cross_k.back().data(), d);
            blocks::linear(ctx, l.cross.v, s.encoder_output.data(), T_src, d, s.cross_v.back().data(), d);
        }
    }
    const std::vector<LayerWeights>& layers = marian ? w.decoder_layers : w.layers;
    const std::vector<StackShape> shapes = stack_shapes(c);
    const int self_stack = marian ? kDecoderStack : kFirstStack;
    const int heads = shapes[self_stack].heads;
    const int T_src = static_cast<int>(s.encoder_output.rows());
    Matrix shared;  // parallel blocks: the layer's norm(x)
    for (std::size_t i = 0; i < layers.size(); ++i) {
        const LayerWeights& l = layers[i];
        const int layer = static_cast<int>(i);
        const BlockEdits self = block_edits(s.edits, self_stack, layer, heads, s.n + m);
        BlockSpec spec = block_spec(c, l.self, shapes[self_stack], layer);
        spec.both_ways = both_ways;
        if (!s.positions.empty()) spec.positions = &s.positions;
        residual(ctx, c, x, l.norm_1, l.post_attention,
                 [&](const Matrix& in) { return cached_self_attention(ctx, l.self, spec, in, self, s.rope_length, s.k[i], s.v[i]); },
                 shared);
        if (marian) {
            const BlockEdits cross = block_edits(s.edits, kCrossStack, layer, heads, T_src);
            const BlockSpec cross_spec = block_spec(c, l.cross, shapes[2], layer);
            residual(ctx, c, x, l.norm_3, {}, [&](const Matrix& in) {
                return cached_cross_attention(ctx, l.cross, cross_spec, in, cross, s.cross_k[i], s.cross_v[i]);
            }, shared);
        }
        residual(ctx, c, x, l.norm_2, l.post_ff, [&](const Matrix& in) { return feed_forward(ctx, c, l, in); }, shared);
    }
    s.n += m;
    s.ids = std::move(all);
    Matrix last = x.bottomRows(1);
    if (w.final_norm.present()) last = norm(ctx, c, last, w.final_norm);
    return logits_of(ctx, s.model, last.data());
}

int pick_token(const std::vector<float>& logits, const Sampling& sampling, SplitMix64& rng) {
    if (logits.empty()) throw ModelError("", "logits", "no logits to pick a token from");
    if (sampling.temperature <= 0) return static_cast<int>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    std::vector<int> order(logits.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    const std::size_t k = sampling.top_k > 0 ? std::min<std::size_t>(static_cast<std::size_t>(sampling.top_k), order.size()) : order.size();
    const auto larger = [&](int a, int b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(), larger);
    std::vector<double> p(k);
    double total = 0;
    for (std::size_t i = 0; i < k; ++i)
        total += p[i] = std::exp((static_cast<double>(logits[order[i]]) - logits[order[0]]) / sampling.temperature);
    const double u = rng.unit() * total;
    double running = 0;
    for (std::size_t i = 0; i < k; ++i)
        if ((running += p[i]) > u) return order[i];
    return order[k - 1];
}

Generated generate(kernels::Context& ctx, const Model& model, const Matrix& encoder_output, std::vector<int> prefix,
                   int max_new, int eos, const Sampling& sampling, const Interventions& edits, const Matrix& image_rows,
                   const PositionStreams& positions) {
    if (prefix.empty()) throw ModelError("", "ids", "generation needs at least one token to start from");
    const bool marian = model.config.encoder_decoder();
    const bool recompute = edits.ablation == Ablation::Mean && !edits.knockout.empty();
    if (recompute && marian) throw ModelError("", "--knockout-mode", "mean ablation is not offered for translation");
    std::optional<Decoder> cached;
    if (!recompute) cached.emplace(model, encoder_output, edits, image_rows, positions);
    // The logits at the sequence's last position: the cache fed the new tokens, or a forward over all.
    std::size_t fed = 0;
    const auto next_logits = [&](const std::vector<int>& ids) {
        if (cached) {
            std::vector<float> logits;
            while (fed < ids.size()) {  // a token at a time, a picture's both-ways run at once
                const auto n = static_cast<std::size_t>(fed_together(model.config, ids, static_cast<int>(fed)));
                logits = cached->step(ctx, std::vector<int>(ids.begin() + static_cast<std::ptrdiff_t>(fed), ids.begin() + static_cast<std::ptrdiff_t>(fed + n)));
                fed += n;
            }
            return logits;
        }
        RunInput in;
        in.ids = ids, in.edits = edits, in.image_rows = image_rows, in.positions = positions;
        return forward(ctx, model, in).logits;
    };
    Generated g;
    SplitMix64 rng{sampling.seed};
    for (int i = 0; i < max_new && static_cast<int>(prefix.size()) < model.config.position_limit(); ++i) {
        g.logits.push_back(next_logits(prefix));
        const int next = pick_token(g.logits.back(), sampling, rng);
        prefix.push_back(next);
        if (next == eos) break;
    }
    g.ids = std::move(prefix);
    return g;
}

}  // namespace attn
