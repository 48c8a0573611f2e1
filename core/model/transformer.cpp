// transformer.cpp: GPT-2, BERT and Marian forward passes on core's kernels (transformer.hpp).
//
// Every product is kernels::matmul (blocks::linear) and every head kernels::attention_head
// (attend_heads): the forward pass, block_trace and the KV-cache decoder share them, so the
// Steps view and generation see the forward's numbers.
//
// [SECTION] Weights: tensors by name, shapes from the config
// [SECTION] Loading in steps
// [SECTION] Interventions
// [SECTION] Attention: one block, shared by the forward, block_trace and the decoder
// [SECTION] Sub-blocks of each family
// [SECTION] A forward pass in steps
// [SECTION] Any block's whole pipeline, again
// [SECTION] Generation with a KV cache
#include "transformer.hpp"

#include "blocks.hpp"
#include "safetensors.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

namespace attn {

using blocks::Linear;

// [SECTION] Weights: tensors by name, shapes from the config ---------------------------------

struct Norm {
    const float* g = nullptr;
    const float* b = nullptr;
};

struct AttentionWeights {
    Linear q, k, v, o;  // each d_model×d_model in the row-vector convention
};

// One layer. gpt2: norm_1 before the attention, norm_2 before the MLP (pre-LN). bert, marian:
// norm_1 after the (self) attention, norm_2 after the feed-forward, norm_3 after marian's
// cross attention (post-LN).
struct LayerWeights {
    Norm norm_1, norm_2, norm_3;
    AttentionWeights self, cross;
    Linear fc1, fc2;  // d_model -> d_ff -> d_model
};

struct ModelWeights {
    // every tensor, F32, as in the file's layout, but the Linears' weights: packed as the
    // products read them (kernels::pack, for the best instruction set)
    std::vector<std::unique_ptr<float[]>> storage;
    std::size_t bytes = 0;
    std::int64_t parameters = 0;

    // gpt2 wte, bert word_embeddings, marian shared: V×d (one row per token), or d×V (one
    // column per token) when it is also the LM head (tied), the layout the head's product wants
    const float* token_embedding = nullptr;
    bool embedding_columns = false;             // token_embedding is d×V
    const float* positions = nullptr;           // P×d: gpt2 wpe, bert position_embeddings, marian encoder's
    const float* decoder_positions = nullptr;   // marian: P×d
    const float* token_types = nullptr;         // bert: type_vocab×d (row 0 is used)
    Norm embedding_norm;                        // bert
    Norm final_norm;                            // gpt2 ln_f
    std::vector<LayerWeights> layers;           // gpt2, bert; marian's encoder
    std::vector<LayerWeights> decoder_layers;   // marian
    // The LM head as a d×V matrix (gpt2: wte; marian: shared, or lm_head.weight when untied),
    // transposed at load: logits = x·lm_head packs it with plain row copies, and a step's
    // product over 50257 columns streams it once.
    const float* lm_head = nullptr;
    const float* final_logits_bias = nullptr;   // marian, V (absent: none)
};

namespace {

// What the loader converts: a tensor of the file into its F32 place, or (a Linear's weight,
// out = nullptr) into an F32 copy that lives only until the tensor is converted and packed.
struct Conversion {
    const TensorInfo* info;
    float* out;
    bool transpose = false;  // a R×C tensor stored as C×R
};

// A Linear's weight, packed once its tensor's F32 copy is whole: W (in×out) from `offset` in the
// copy, stored as [in, out] with row stride ld, or as [out, in] (transposed).
struct Packing {
    std::size_t conversion;
    std::ptrdiff_t offset;
    int ld;
    bool transposed;
    kernels::Isa isa;
    int in, out;
    float* to;  // kernels::packed_size(isa, in, out) floats
};

// The tensor names of a family, as a plan: each name with its expected shape and where it goes.
class Plan {
public:
    Plan(const SafetensorsHeader& header, const std::string& file, std::string prefix, ModelWeights& w)
        : header_(header), file_(file), prefix_(std::move(prefix)), w_(w) {}

    // A required tensor: checked, given its F32 place (converted later).
    std::string full(const std::string& name, bool prefixed = true) const { return prefixed ? prefix_ + name : name; }
    const std::string& file() const { return file_; }
    float* need(const std::string& name, std::vector<std::int64_t> shape, bool prefixed = true) {
        return required(name, shape, prefixed, true);
    }
    // A required R×C matrix, stored transposed (C×R).
    float* need_transposed(const std::string& name, std::vector<std::int64_t> shape, bool prefixed = true) {
        float* out = need(name, shape, prefixed);
        conversions.back().transpose = true;
        return out;
    }
    // An optional tensor: nullptr when absent.
    float* maybe(const std::string& name, std::vector<std::int64_t> shape, bool prefixed = true) {
        const std::string full = this->full(name, prefixed);
        auto it = header_.tensors.find(full);
        return it == header_.tensors.end() ? nullptr : place(full, it->second, shape);
    }
    // Memory for a table computed here (not from the file).
    float* computed(std::size_t n) {
        w_.storage.emplace_back(new float[n]);
        w_.bytes += n * sizeof(float);
        return w_.storage.back().get();
    }
    Norm norm(const std::string& name, int d) { return {need(name + ".weight", {d}), need(name + ".bias", {d})}; }
    // nn.Linear: weight [out, in], bias [out].
    Linear linear(const std::string& name, int in, int out) {
        const std::size_t weight = packed_weight(name + ".weight", {out, in});
        return packed(weight, 0, in, true, in, out, need(name + ".bias", {out}));
    }
    // GPT-2's Conv1D: weight [in, out], bias [out]; `parts` Linears of out/parts columns each
    // (c_attn: Q | K | V side by side, each packed on its own).
    std::vector<Linear> conv1d(const std::string& name, int in, int out, int parts = 1) {
        const std::size_t weight = packed_weight(name + ".weight", {in, out});
        const float* b = need(name + ".bias", {out});
        const int n = out / parts;
        std::vector<Linear> l;
        for (int k = 0; k < parts; ++k) l.push_back(packed(weight, k * n, out, false, in, n, b + k * n));
        return l;
    }
    std::vector<Conversion> conversions;
    std::vector<Packing> packings;

private:
    // A required Linear weight, checked: its conversion's index (no F32 place: it is packed).
    std::size_t packed_weight(const std::string& name, std::vector<std::int64_t> shape) {
        required(name, shape, true, false);
        return conversions.size() - 1;
    }
    // A Linear packed (kernels::pack, for the best instruction set) from its weight's F32 copy:
    // in×out from `offset`, rows ld apart, or transposed.
    Linear packed(std::size_t weight, std::ptrdiff_t offset, int ld, bool transposed, int in, int out, const float* b) {
        const kernels::Isa isa = kernels::best_isa();
        float* to = computed(kernels::packed_size(isa, in, out));
        packings.push_back({weight, offset, ld, transposed, isa, in, out, to});
        return {kernels::PackedB{isa, in, out, to}, b};
    }
    // A required tensor, placed (kept: given its F32 place; else converted into a passing copy).
    float* required(const std::string& name, const std::vector<std::int64_t>& shape, bool prefixed, bool kept) {
        const std::string full = this->full(name, prefixed);
        auto it = header_.tensors.find(full);
        if (it == header_.tensors.end()) throw ModelError(file_, full, "missing");
        return place(full, it->second, shape, kept);
    }
    float* place(const std::string& full, const TensorInfo& t, const std::vector<std::int64_t>& shape, bool kept = true) {
        if (!is_float_weight(t.dtype))
            throw ModelError(file_, full, std::string("dtype ") + dtype_name(t.dtype) + " is not F32, F16 or BF16");
        if (t.shape != shape)
            throw ModelError(file_, full, "expected shape " + shape_text(shape) + ", got " + shape_text(t.shape));
        float* out = kept ? computed(static_cast<std::size_t>(t.elements())) : nullptr;
        w_.parameters += t.elements();
        conversions.push_back({&t, out});
        return out;
    }

    const SafetensorsHeader& header_;
    const std::string& file_;
    std::string prefix_;
    ModelWeights& w_;
};

bool has(const SafetensorsHeader& h, const std::string& name) { return h.tensors.count(name) != 0; }

void plan_gpt2(const ModelConfig& c, Plan& p, ModelWeights& w) {
    const int d = c.d_model, V = c.vocab_size;
    w.token_embedding = p.need_transposed("wte.weight", {V, d});
    w.embedding_columns = true;
    w.positions = p.need("wpe.weight", {c.max_positions, d});
    for (int i = 0; i < c.n_layers; ++i) {
        const std::string h = "h." + std::to_string(i) + ".";
        LayerWeights l;
        l.norm_1 = p.norm(h + "ln_1", d);
        // c_attn: [d, 3d], Q | K | V side by side
        const std::vector<Linear> qkv = p.conv1d(h + "attn.c_attn", d, 3 * d, 3);
        l.self.q = qkv[0], l.self.k = qkv[1], l.self.v = qkv[2];
        l.self.o = p.conv1d(h + "attn.c_proj", d, d)[0];
        l.norm_2 = p.norm(h + "ln_2", d);
        l.fc1 = p.conv1d(h + "mlp.c_fc", d, c.d_ff)[0];
        l.fc2 = p.conv1d(h + "mlp.c_proj", c.d_ff, d)[0];
        w.layers.push_back(l);
    }
    w.final_norm = p.norm("ln_f", d);
    w.lm_head = w.token_embedding;  // tied: d×V
}

void plan_bert(const ModelConfig& c, Plan& p, ModelWeights& w) {
    const int d = c.d_model;
    w.token_embedding = p.need("embeddings.word_embeddings.weight", {c.vocab_size, d});
    w.positions = p.need("embeddings.position_embeddings.weight", {c.max_positions, d});
    w.token_types = p.need("embeddings.token_type_embeddings.weight", {c.type_vocab_size, d});
    w.embedding_norm = p.norm("embeddings.LayerNorm", d);
    for (int i = 0; i < c.n_layers; ++i) {
        const std::string e = "encoder.layer." + std::to_string(i) + ".";
        LayerWeights l;
        l.self = {p.linear(e + "attention.self.query", d, d), p.linear(e + "attention.self.key", d, d),
                  p.linear(e + "attention.self.value", d, d), p.linear(e + "attention.output.dense", d, d)};
        l.norm_1 = p.norm(e + "attention.output.LayerNorm", d);
        l.fc1 = p.linear(e + "intermediate.dense", d, c.d_ff);
        l.fc2 = p.linear(e + "output.dense", c.d_ff, d);
        l.norm_2 = p.norm(e + "output.LayerNorm", d);
        w.layers.push_back(l);
    }
}

AttentionWeights marian_attention(Plan& p, const std::string& name, int d) {
    return {p.linear(name + ".q_proj", d, d), p.linear(name + ".k_proj", d, d), p.linear(name + ".v_proj", d, d),
            p.linear(name + ".out_proj", d, d)};
}

void plan_marian(const ModelConfig& c, const SafetensorsHeader& h, Plan& p, ModelWeights& w) {
    const int d = c.d_model, V = c.vocab_size, P = c.max_positions;
    // Tied (the usual): shared is the head too, so it is kept as d×V.
    const bool untied = !c.tie_word_embeddings && has(h, p.full("lm_head.weight", false));
    w.token_embedding = untied ? p.need("shared.weight", {V, d}) : p.need_transposed("shared.weight", {V, d});
    w.embedding_columns = !untied;
    // The sinusoidal table as the file has it, else computed (the same numbers).
    w.positions = p.maybe("encoder.embed_positions.weight", {P, d});
    w.decoder_positions = p.maybe("decoder.embed_positions.weight", {P, d});
    if (!w.positions || !w.decoder_positions) {
        constexpr std::int64_t kMaxTable = std::int64_t{1} << 26;  // 256 MB of floats
        if (static_cast<std::int64_t>(P) * d > kMaxTable)
            throw ModelError(p.file(), p.full(w.positions ? "decoder.embed_positions.weight" : "encoder.embed_positions.weight"),
                             "missing, and max_position_embeddings × d_model (" + std::to_string(P) + " × " +
                                 std::to_string(d) + ") is too large a table to compute");
        float* table = p.computed(static_cast<std::size_t>(P) * d);
        blocks::sinusoidal_positions(P, d, table);
        if (!w.positions) w.positions = table;
        if (!w.decoder_positions) w.decoder_positions = table;
    }
    for (int i = 0; i < c.n_layers; ++i) {
        const std::string e = "encoder.layers." + std::to_string(i) + ".";
        LayerWeights l;
        l.self = marian_attention(p, e + "self_attn", d);
        l.norm_1 = p.norm(e + "self_attn_layer_norm", d);
        l.fc1 = p.linear(e + "fc1", d, c.d_ff);
        l.fc2 = p.linear(e + "fc2", c.d_ff, d);
        l.norm_2 = p.norm(e + "final_layer_norm", d);
        w.layers.push_back(l);
    }
    for (int i = 0; i < c.decoder_layers; ++i) {
        const std::string e = "decoder.layers." + std::to_string(i) + ".";
        LayerWeights l;
        l.self = marian_attention(p, e + "self_attn", d);
        l.norm_1 = p.norm(e + "self_attn_layer_norm", d);
        l.cross = marian_attention(p, e + "encoder_attn", d);
        l.norm_3 = p.norm(e + "encoder_attn_layer_norm", d);
        l.fc1 = p.linear(e + "fc1", d, c.decoder_ff);
        l.fc2 = p.linear(e + "fc2", c.decoder_ff, d);
        l.norm_2 = p.norm(e + "final_layer_norm", d);
        w.decoder_layers.push_back(l);
    }
    // MarianMTModel: lm_head.weight (often left out when tied) and final_logits_bias [1, V].
    w.lm_head = untied ? p.need_transposed("lm_head.weight", {V, d}, false) : w.token_embedding;
    if (has(h, "final_logits_bias")) {
        const bool flat = h.tensors.at("final_logits_bias").shape.size() == 1;
        w.final_logits_bias = flat ? p.need("final_logits_bias", {V}, false) : p.need("final_logits_bias", {1, V}, false);
    }
}

// The base model's prefix the file uses: "transformer." (GPT2LMHeadModel), "bert."
// (BertFor…), "model." (MarianMTModel), or none (the base models).
std::string prefix_of(const ModelConfig& c, const SafetensorsHeader& h) {
    switch (c.family) {
        case Family::Gpt2: return has(h, "transformer.wte.weight") ? "transformer." : "";
        case Family::Bert: return has(h, "bert.embeddings.word_embeddings.weight") ? "bert." : "";
        case Family::Marian: return has(h, "model.shared.weight") ? "model." : "";
    }
    return "";
}

}  // namespace

std::int64_t Model::parameters() const { return weights ? weights->parameters : 0; }
std::size_t Model::weight_bytes() const { return weights ? weights->bytes : 0; }

// Kept: per attention block its input (T_q×d) and n_heads maps (T_q×T_k). Working buffers at
// their largest: the residual stream and the sub-block's output (2·T·d), Q, K, V and the
// concatenated heads (4·T·d), the feed-forward's hidden layer (T·d_ff), marian's encoder
// output (T·d); the logits (V); the kernels' packed panels (A's MC×KC block; K and V of one
// head: 2·T·d_k, rounded up to 16 columns; the weights' were packed at load).
std::size_t Model::activation_bytes(int T) const {
    const ModelConfig& c = config;
    const std::size_t t = static_cast<std::size_t>(std::max(T, 0)), d = c.d_model;
    std::size_t floats = 0;
    auto stack = [&](int layers, int heads) { floats += static_cast<std::size_t>(layers) * (heads * t * t + t * d); };
    stack(c.n_layers, c.n_heads);
    std::size_t d_ff = c.d_ff;
    if (c.family == Family::Marian) {
        stack(c.decoder_layers, c.decoder_heads);  // decoder self
        stack(c.decoder_layers, c.decoder_heads);  // cross
        d_ff = std::max<std::size_t>(d_ff, c.decoder_ff);
        floats += t * d;  // encoder output
    }
    floats += 6 * t * d + t * d_ff + t * d /* hidden */ + c.vocab_size;
    floats += 24 * 8 * 256 + 2 * (t + 16) * (d / std::max(c.n_heads, 1) + 16);
    return floats * sizeof(float);
}

// [SECTION] Loading in steps -----------------------------------------------------------------

namespace {

// t: R×C -> out: C×R, 64 rows at a time: a block is converted to F32 (48 KB-200 KB, in L2),
// then each of its columns is written as 64 consecutive floats of a row of `out`.
// Rows [r0, r1) of a tensor (its first dimension) into `out`, the whole tensor's F32 copy: as
// stored, or transposed (a R×C tensor kept C×R), through a block of 64 rows at a time.
void convert_rows(const std::uint8_t* data, const TensorInfo& t, std::int64_t r0, std::int64_t r1, float* out, bool transpose) {
    const std::int64_t R = t.shape.empty() ? 1 : t.shape[0], C = R ? t.elements() / R : 0;
    const std::size_t row_bytes = static_cast<std::size_t>(C) * dtype_bytes(t.dtype);
    auto part_of = [&](std::int64_t a, std::int64_t b) {
        TensorInfo part = t;
        part.shape = {b - a, C};
        part.begin = t.begin + static_cast<std::size_t>(a) * row_bytes;
        part.end = part.begin + static_cast<std::size_t>(b - a) * row_bytes;
        return part;
    };
    if (!transpose) return convert_to_f32(data, part_of(r0, r1), out + r0 * C);
    constexpr std::int64_t kRows = 64;
    std::vector<float> block(static_cast<std::size_t>(kRows * C));
    for (std::int64_t a = r0; a < r1; a += kRows) {
        const std::int64_t rows = std::min(kRows, r1 - a);
        convert_to_f32(data, part_of(a, a + rows), block.data());
        for (std::int64_t c = 0; c < C; ++c)
            for (std::int64_t i = 0; i < rows; ++i) out[c * R + a + i] = block[static_cast<std::size_t>(i * C + c)];
    }
}

}  // namespace

struct ModelLoader::State {
    ModelConfig config;
    std::shared_ptr<const FileBytes> bytes;
    std::string file;
    SafetensorsHeader header;
    std::shared_ptr<ModelWeights> weights;
    std::vector<Conversion> conversions;
    std::vector<Packing> packings;
    std::size_t next = 0, bytes_total = 0, bytes_done = 0;
    std::int64_t row = 0;  // of conversions[next]: the first row not converted yet
    std::unique_ptr<float[]> copy;  // conversions[next]'s F32 copy, when it is a Linear's weight

    // Where conversions[next] goes: its place, or (a Linear's weight) the copy, made at its first row.
    float* out() {
        const Conversion& c = conversions[next];
        if (c.out) return c.out;
        if (row == 0) copy.reset(new float[static_cast<std::size_t>(c.info->elements())]);
        return copy.get();
    }
    // conversions[next] is whole: pack the Linears read from its copy, free the copy, go on.
    void finish() {
        for (const Packing& p : packings)
            if (p.conversion == next) kernels::pack(p.isa, p.in, p.out, copy.get() + p.offset, p.ld, p.transposed, p.to);
        copy.reset();
        ++next, row = 0;
    }
};

ModelLoader::ModelLoader(ModelConfig config, std::shared_ptr<const FileBytes> safetensors, std::string file)
    : state_(std::make_unique<State>()) {
    State& s = *state_;
    s.config = std::move(config);
    s.bytes = std::move(safetensors);
    s.file = std::move(file);
    s.header = read_safetensors_header(s.bytes->data(), s.bytes->size(), s.file);
    s.weights = std::make_shared<ModelWeights>();
    Plan plan(s.header, s.file, prefix_of(s.config, s.header), *s.weights);
    switch (s.config.family) {
        case Family::Gpt2: plan_gpt2(s.config, plan, *s.weights); break;
        case Family::Bert: plan_bert(s.config, plan, *s.weights); break;
        case Family::Marian: plan_marian(s.config, s.header, plan, *s.weights); break;
    }
    s.conversions = std::move(plan.conversions);
    s.packings = std::move(plan.packings);
    for (const Conversion& c : s.conversions) s.bytes_total += c.info->end - c.info->begin;
}

ModelLoader::~ModelLoader() = default;
bool ModelLoader::done() const { return state_->next == state_->conversions.size(); }
float ModelLoader::progress() const {
    return state_->bytes_total ? static_cast<float>(static_cast<double>(state_->bytes_done) / state_->bytes_total) : 1.0f;
}

// Converts tensors until about 16 MB of the file were read; each tensor's pages are then given
// back (FileBytes::done_with), so the file and its F32 copy are not both resident.
void ModelLoader::step() {
    // About 16 MB of the file per step, a big tensor (GPT-2's wte: 154 MB) in several: a page
    // draws between steps.
    State& s = *state_;
    constexpr std::size_t kBytesPerStep = 16u << 20;
    std::size_t read = 0;
    while (s.next < s.conversions.size() && read < kBytesPerStep) {
        const Conversion& c = s.conversions[s.next];
        const TensorInfo& t = *c.info;
        const std::int64_t R = t.shape.empty() ? 1 : t.shape[0];
        if (R <= 0) {
            s.finish();
            continue;
        }
        const std::size_t row_bytes = std::max<std::size_t>((t.end - t.begin) / static_cast<std::size_t>(R), 1);
        const auto rows = std::clamp<std::int64_t>(static_cast<std::int64_t>((kBytesPerStep - read) / row_bytes), 1, R - s.row);
        convert_rows(s.bytes->data(), t, s.row, s.row + rows, s.out(), c.transpose);
        const std::size_t n = static_cast<std::size_t>(rows) * row_bytes;
        s.bytes->done_with(t.begin + static_cast<std::size_t>(s.row) * row_bytes, n);
        read += n;
        s.bytes_done += n;
        if ((s.row += rows) == R) s.finish();
    }
}

Model ModelLoader::take() {
    while (!done()) step();
    return Model{state_->config, state_->weights};
}

Model load_model_weights(ModelConfig config, std::shared_ptr<const FileBytes> safetensors, const std::string& file) {
    ModelLoader loader(std::move(config), std::move(safetensors), file);
    return loader.take();
}

// [SECTION] Interventions ---------------------------------------------------------------------

std::vector<StackShape> stack_shapes(const ModelConfig& c) {
    if (c.family != Family::Marian) return {{"attention", c.family == Family::Gpt2, false, c.n_layers, c.n_heads}};
    return {{"encoder_attention", false, false, c.n_layers, c.n_heads},
            {"decoder_attention", true, false, c.decoder_layers, c.decoder_heads},
            {"cross_attention", false, true, c.decoder_layers, c.decoder_heads}};
}

bool Interventions::knocked_out(int stack, int layer, int head) const {
    return std::find(knockout.begin(), knockout.end(), HeadRef{stack, layer, head}) != knockout.end();
}

// [SECTION] Attention: one block, shared by the forward, block_trace and the decoder ----------

namespace {

// Where the heads write: per head a T_q×T_k weights buffer, the concatenated outputs T_q×d,
// and, for block_trace, every intermediate.
struct HeadsOut {
    float* const* maps;       // n_heads pointers to T_q×T_k
    float* concat;            // T_q×d_model
    MultiHeadTrace* trace;    // or nullptr
};

// What an attention block of one layer does differently in an experiment (Interventions).
struct BlockEdits {
    std::vector<std::uint8_t> keys;  // empty, or T_k entries: 1 = may be attended, 0 = hidden
    std::vector<int> knocked;        // the heads whose output is ablated
    Ablation ablation = Ablation::Zero;
};

// stack, layer: the block's; T_k: its keys; hides: whether `hidden` applies to its keys.
BlockEdits block_edits(const Interventions& e, int stack, int layer, int heads, int T_k, bool hides) {
    BlockEdits b;
    b.ablation = e.ablation;
    for (int h = 0; h < heads; ++h)
        if (e.knocked_out(stack, layer, h)) b.knocked.push_back(h);
    if (hides && !e.hidden.empty()) {
        b.keys.assign(static_cast<std::size_t>(T_k), 1);
        for (int j : e.hidden)
            if (j >= 0 && j < T_k) b.keys[static_cast<std::size_t>(j)] = 0;
    }
    return b;
}

// Q: T_q×d (row stride ld_q), K, V: T_k×d (row stride ld_kv); head h reads and writes columns
// h·d_k … (h+1)·d_k − 1. Causal: query i sees keys 0 … i (T_q == T_k); else every key. `keys`:
// empty, or T_k entries, 0 for a key no query sees.
// Per head (kernels::attention_head, fused per block of rows):
//   pass 1: S = Q_h·K_hᵀ (T_q×T_k; the masked part skipped unless traced)
//   pass 2: weights = softmax(S/√d_k) per row (masked: 0; a row with no key: all 0)
//   pass 3: concat_h = weights·V_h (T_q×d_k)
void attend_heads(kernels::Context& ctx, const float* Q, int ld_q, const float* K, const float* V, int ld_kv,
                  int T_q, int T_k, int d_model, int n_heads, bool causal, const std::vector<std::uint8_t>& keys,
                  const HeadsOut& out) {
    const int d_k = d_model / n_heads;
    const bool masked = causal || !keys.empty();
    MaskMatrix allowed;
    if (masked) {
        MaskSpec spec;
        spec.causal = causal;
        spec.key_padding = keys;
        allowed = combine_masks(spec, T_q, T_k);
    }
    const std::vector<kernels::RowSpan> spans = kernels::row_spans(masked ? allowed.data() : nullptr, T_q, T_k);
    for (int h = 0; h < n_heads; ++h) {
        const int c0 = h * d_k;
        kernels::HeadArgs args;
        args.T_q = T_q, args.T_k = T_k, args.d_k = d_k;
        args.ld_q = ld_q, args.ld_kv = ld_kv, args.ld_out = d_model;
        args.q = Q + c0, args.k = K + c0, args.v = V + c0;
        args.allowed = masked ? allowed.data() : nullptr;
        args.spans = spans.data();
        args.factor = 1.0f / std::sqrt(static_cast<float>(d_k));
        args.weights = out.maps[h];
        args.output = out.concat + c0;
        HeadTrace* ht = out.trace ? &out.trace->heads[h] : nullptr;
        if (ht) {
            ht->scores.resize(T_q, T_k), ht->scaled.resize(T_q, T_k);
            args.scores = ht->scores.data(), args.scaled = ht->scaled.data();
            args.fully_masked = &ht->fully_masked_rows;
        }
        kernels::attention_head(ctx, args);
    }
}

// The knocked-out heads' columns of concat (T_q×d): zeros, or each column's mean over the rows.
void ablate(Matrix& concat, const BlockEdits& e, int n_heads) {
    const int d_k = static_cast<int>(concat.cols()) / n_heads;
    for (int h : e.knocked) {
        auto cols = concat.middleCols(h * d_k, d_k);
        if (e.ablation == Ablation::Zero || cols.rows() == 0) cols.setZero();
        else cols.rowwise() = RowVector(cols.colwise().mean());
    }
}

// One attention block: x_q T_q×d, x_kv T_k×d (x_q itself for self-attention) -> T_q×d.
//   pass 1: Q = x_q·W_q + b_q, K = x_kv·W_k + b_k, V = x_kv·W_v + b_v
//   pass 2: the heads (attend_heads), weights into `maps` (resized to n_heads T_q×T_k)
//   pass 3: the knocked-out heads' outputs ablated (ablate)
//   pass 4: out = concat·W_o + b_o
// With `trace`, every intermediate is kept too: the same products, the same heads.
Matrix attention_block(kernels::Context& ctx, const AttentionWeights& w, const Matrix& x_q, const Matrix& x_kv,
                       int n_heads, bool causal, const BlockEdits& edits, std::vector<Matrix>& maps,
                       MultiHeadTrace* trace) {
    const int T_q = static_cast<int>(x_q.rows()), T_k = static_cast<int>(x_kv.rows()), d = static_cast<int>(x_q.cols());
    Matrix Q(T_q, d), K(T_k, d), V(T_k, d), concat(T_q, d), out(T_q, d);
    blocks::linear(ctx, w.q, x_q.data(), T_q, d, Q.data(), d);
    blocks::linear(ctx, w.k, x_kv.data(), T_k, d, K.data(), d);
    blocks::linear(ctx, w.v, x_kv.data(), T_k, d, V.data(), d);
    maps.resize(n_heads);
    std::vector<float*> map_ptrs(n_heads);
    for (int h = 0; h < n_heads; ++h) maps[h].resize(T_q, T_k), map_ptrs[h] = maps[h].data();
    if (trace) trace->heads.assign(n_heads, HeadTrace{});
    attend_heads(ctx, Q.data(), d, K.data(), V.data(), d, T_q, T_k, d, n_heads, causal, edits.keys,
                 {map_ptrs.data(), concat.data(), trace});
    ablate(concat, edits, n_heads);
    blocks::linear(ctx, w.o, concat.data(), T_q, d, out.data(), d);
    if (trace) {
        const int d_k = d / n_heads;
        trace->x_q = x_q, trace->x_kv = x_kv;
        for (int h = 0; h < n_heads; ++h) {
            HeadTrace& ht = trace->heads[h];
            ht.q = Q.middleCols(h * d_k, d_k), ht.k = K.middleCols(h * d_k, d_k), ht.v = V.middleCols(h * d_k, d_k);
            ht.weights = maps[h];
            ht.output = concat.middleCols(h * d_k, d_k);
        }
        trace->concat = concat;
        trace->output = out;
    }
    return out;
}

// [SECTION] Sub-blocks of each family ---------------------------------------------------------

// x: T×d -> T×d: fc2(act(fc1(x)))
Matrix feed_forward(kernels::Context& ctx, const LayerWeights& l, Activation act, const Matrix& x) {
    const int T = static_cast<int>(x.rows()), d = static_cast<int>(x.cols()), d_ff = l.fc1.out();
    Matrix h(T, d_ff), y(T, d);
    blocks::linear(ctx, l.fc1, x.data(), T, d, h.data(), d_ff);
    blocks::activate(ctx.isa, act, h.data(), static_cast<std::size_t>(h.size()));
    blocks::linear(ctx, l.fc2, h.data(), T, d_ff, y.data(), d);
    return y;
}

Matrix layer_norm(const Matrix& x, const Norm& n, float eps) {
    Matrix y(x.rows(), x.cols());
    blocks::layer_norm(x.data(), static_cast<int>(x.rows()), static_cast<int>(x.cols()), n.g, n.b, eps, y.data());
    return y;
}

// Post-LN: x = LN(x + f)
void add_and_norm(Matrix& x, const Matrix& f, const Norm& n, float eps) {
    x += f;
    blocks::layer_norm(x.data(), static_cast<int>(x.rows()), static_cast<int>(x.cols()), n.g, n.b, eps, x.data());
}

// The LM head at one position: logits[V] = x·Eᵀ (+ final_logits_bias).
std::vector<float> logits_of(kernels::Context& ctx, const Model& m, const float* x) {
    std::vector<float> logits(m.config.vocab_size);
    blocks::lm_head(ctx, m.weights->lm_head, m.config.vocab_size, m.config.d_model, x, m.weights->final_logits_bias,
                    logits.data());
    return logits;
}

// Embeddings of a stack: T×d.
//   gpt2:   wte[ids] + wpe[0 … T−1]
//   bert:   LN(word[ids] + position[0 … T−1] + token_type[0])
//   marian: shared[ids]·√d (scale_embedding) + sinusoid[first … first+T−1]
Matrix embeddings(const Model& m, const std::vector<int>& ids, bool decoder, int first_position = 0) {
    const ModelConfig& c = m.config;
    const ModelWeights& w = *m.weights;
    const int T = static_cast<int>(ids.size()), d = c.d_model;
    if (first_position + T > c.max_positions)
        throw ModelError("", "ids", "position " + std::to_string(first_position + T - 1) + " is past the model's " +
                                        std::to_string(c.max_positions) + " positions");
    Matrix x(T, d);
    const float scale = c.family == Family::Marian && c.scale_embedding ? std::sqrt(static_cast<float>(d)) : 1.0f;
    blocks::embed(w.token_embedding, d, w.embedding_columns ? c.vocab_size : 0, ids, scale,
                  decoder ? w.decoder_positions : w.positions, first_position, x.data());
    if (c.family == Family::Bert) {
        for (int t = 0; t < T; ++t) x.row(t) += Eigen::Map<const RowVector>(w.token_types, d);
        blocks::layer_norm(x.data(), T, d, w.embedding_norm.g, w.embedding_norm.b, c.layer_norm_eps, x.data());
    }
    return x;
}

}  // namespace

// [SECTION] A forward pass in steps ----------------------------------------------------------

namespace {

enum class StepKind { Embed, SelfAttention, CrossAttention, FeedForward, Head };
struct Step {
    StepKind kind;
    int stack = 0;  // 0: gpt2/bert/marian encoder; 1: marian decoder
    int layer = 0;
};

}  // namespace

struct Forward::State {
    Model model;
    RunInput input;
    RunResult out;
    std::vector<Step> steps;
    std::size_t next = 0;
    Matrix x;  // the residual stream of the stack being run, T×d
};

Forward::Forward(const Model& model, RunInput input) : state_(std::make_unique<State>()) {
    State& s = *state_;
    s.model = model;
    s.input = std::move(input);
    s.out.edits = s.input.edits;
    const ModelConfig& c = model.config;
    for (const StackShape& shape : stack_shapes(c)) {
        StackRun r;
        r.name = shape.name, r.causal = shape.causal, r.cross = shape.cross, r.heads = shape.heads;
        r.layers.resize(shape.layers);
        s.out.stacks.push_back(std::move(r));
    }
    const bool marian = c.family == Family::Marian;
    s.steps.push_back({StepKind::Embed, 0, 0});
    for (int i = 0; i < c.n_layers; ++i) {
        s.steps.push_back({StepKind::SelfAttention, 0, i});
        s.steps.push_back({StepKind::FeedForward, 0, i});
    }
    if (marian) {
        s.steps.push_back({StepKind::Embed, 1, 0});
        for (int i = 0; i < c.decoder_layers; ++i) {
            s.steps.push_back({StepKind::SelfAttention, 1, i});
            s.steps.push_back({StepKind::CrossAttention, 1, i});
            s.steps.push_back({StepKind::FeedForward, 1, i});
        }
    }
    s.steps.push_back({StepKind::Head, marian ? 1 : 0, 0});
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
    const bool gpt2 = c.family == Family::Gpt2, marian = c.family == Family::Marian;
    const float eps = c.layer_norm_eps;
    const LayerWeights* l = st.stack == 0 ? &w.layers[st.layer] : &w.decoder_layers[st.layer];
    switch (st.kind) {
        case StepKind::Embed:
            if (st.stack == 1) s.out.encoder_output = std::move(s.x);  // marian: the encoder is done
            s.x = embeddings(s.model, marian && st.stack == 0 ? s.input.source_ids : s.input.ids, st.stack == 1);
            return;
        case StepKind::SelfAttention: {
            // gpt2:  x = x + attn(ln_1(x))          the block's input is ln_1(x)
            // else:  x = LN(x + attn(x))            the block's input is x
            // Hidden tokens: the keys of gpt2's, bert's and marian's encoder's self-attention.
            StackRun& run = s.out.stacks[st.stack];
            BlockRun& b = run.layers[st.layer];
            b.x = gpt2 ? layer_norm(s.x, l->norm_1, eps) : s.x;
            const BlockEdits e = block_edits(s.input.edits, st.stack, st.layer, run.heads, static_cast<int>(b.x.rows()), st.stack == 0);
            const Matrix a = attention_block(ctx, l->self, b.x, b.x, run.heads, run.causal, e, b.weights, nullptr);
            if (gpt2) s.x += a;
            else add_and_norm(s.x, a, l->norm_1, eps);
            return;
        }
        case StepKind::CrossAttention: {
            // marian decoder: x = LN(x + attn(q from x, k and v from the encoder's output))
            StackRun& run = s.out.stacks[2];
            BlockRun& b = run.layers[st.layer];
            b.x = s.x;
            const Matrix& source = s.out.encoder_output;
            const BlockEdits e = block_edits(s.input.edits, 2, st.layer, run.heads, static_cast<int>(source.rows()), true);
            const Matrix a = attention_block(ctx, l->cross, b.x, source, run.heads, false, e, b.weights, nullptr);
            add_and_norm(s.x, a, l->norm_3, eps);
            return;
        }
        case StepKind::FeedForward:
            // gpt2: x = x + mlp(ln_2(x));  else: x = LN(x + ffn(x))
            if (gpt2) s.x += feed_forward(ctx, *l, c.activation, layer_norm(s.x, l->norm_2, eps));
            else add_and_norm(s.x, feed_forward(ctx, *l, c.activation, s.x), l->norm_2, eps);
            return;
        case StepKind::Head:
            // gpt2: hidden = ln_f(x); logits at the last position (bert: none)
            s.out.hidden = gpt2 ? layer_norm(s.x, w.final_norm, eps) : std::move(s.x);
            if (c.family != Family::Bert && s.out.hidden.rows() > 0)
                s.out.logits = logits_of(ctx, s.model, s.out.hidden.row(s.out.hidden.rows() - 1).data());
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

// A Linear as a dense in×out matrix (row-vector convention), unpacked, and its bias.
Matrix dense(const Linear& f) {
    Matrix m(f.in(), f.out());
    kernels::unpack(f.w, m.data(), f.out());
    return m;
}
RowVector bias(const Linear& f) {
    return f.b ? RowVector(Eigen::Map<const RowVector>(f.b, f.out())) : RowVector(RowVector::Zero(f.out()));
}

}  // namespace

BlockTrace block_trace(kernels::Context& ctx, const Model& model, const RunResult& run, int stack, int layer) {
    if (stack < 0 || stack >= static_cast<int>(run.stacks.size()) || layer < 0 ||
        layer >= static_cast<int>(run.stacks[stack].layers.size()))
        throw ModelError("", "block", "no stack " + std::to_string(stack) + " layer " + std::to_string(layer) + " in this run");
    const StackRun& s = run.stacks[stack];
    const ModelWeights& w = *model.weights;
    const LayerWeights& l = stack == 0 ? w.layers[layer] : w.decoder_layers[layer];
    const AttentionWeights& a = s.cross ? l.cross : l.self;
    BlockTrace t;
    t.weights.w_q = dense(a.q), t.weights.w_k = dense(a.k), t.weights.w_v = dense(a.v), t.weights.w_o = dense(a.o);
    t.weights.b_q = bias(a.q), t.weights.b_k = bias(a.k), t.weights.b_v = bias(a.v), t.weights.b_o = bias(a.o);
    t.options.n_heads = s.heads;
    t.options.scale = Scale{ScaleKind::InvSqrtDk};
    t.options.mask.causal = s.causal;
    const Matrix& x = s.layers[layer].x;
    const Matrix& x_kv = s.cross ? run.encoder_output : x;
    const BlockEdits e = block_edits(run.edits, stack, layer, s.heads, static_cast<int>(x_kv.rows()), stack == 0 || s.cross);
    t.options.mask.key_padding = e.keys;
    std::vector<Matrix> maps;
    attention_block(ctx, a, x, x_kv, s.heads, s.causal, e, maps, &t.trace);
    return t;
}

// [SECTION] Generation with a KV cache -------------------------------------------------------

struct Decoder::State {
    Model model;
    Matrix encoder_output;
    Interventions edits;
    int n = 0;  // tokens fed
    // Per decoder layer: the keys and values of every token fed so far, n×d each, row-major.
    std::vector<std::vector<float>> k, v;
    std::vector<Matrix> cross_k, cross_v;  // marian: T_src×d per layer, from the encoder's output
};

Decoder::Decoder(const Model& model, Matrix encoder_output, Interventions edits) : state_(std::make_unique<State>()) {
    if (edits.ablation == Ablation::Mean && !edits.knockout.empty())
        throw ModelError("", "--knockout-mode", "mean ablation needs the whole sequence: it cannot run on a KV cache");
    State& s = *state_;
    s.model = model;
    s.encoder_output = std::move(encoder_output);
    s.edits = std::move(edits);
    const std::size_t layers = model.config.family == Family::Marian ? model.config.decoder_layers : model.config.n_layers;
    s.k.resize(layers), s.v.resize(layers);
}

Decoder::~Decoder() = default;
int Decoder::length() const { return state_->n; }

namespace {

// One new row of self-attention over the cache: q, k, v projected for x (1×d); k and v appended;
// the row attends to every cached key (causal by construction) that `edits` does not hide, and
// its knocked-out heads are zeroed. Returns the block's output, 1×d.
Matrix cached_self_attention(kernels::Context& ctx, const AttentionWeights& a, const Matrix& x, int heads,
                             const BlockEdits& edits, std::vector<float>& K, std::vector<float>& V) {
    const int d = static_cast<int>(x.cols());
    Matrix q(1, d), concat(1, d), out(1, d);
    blocks::linear(ctx, a.q, x.data(), 1, d, q.data(), d);
    const std::size_t n = K.size() / d;
    K.resize(K.size() + d), V.resize(V.size() + d);
    blocks::linear(ctx, a.k, x.data(), 1, d, K.data() + n * d, d);
    blocks::linear(ctx, a.v, x.data(), 1, d, V.data() + n * d, d);
    const int T_k = static_cast<int>(n + 1);
    std::vector<Matrix> maps(heads, Matrix(1, T_k));
    std::vector<float*> ptrs(heads);
    for (int h = 0; h < heads; ++h) ptrs[h] = maps[h].data();
    attend_heads(ctx, q.data(), d, K.data(), V.data(), d, 1, T_k, d, heads, false, edits.keys, {ptrs.data(), concat.data(), nullptr});
    ablate(concat, edits, heads);
    blocks::linear(ctx, a.o, concat.data(), 1, d, out.data(), d);
    return out;
}

Matrix cached_cross_attention(kernels::Context& ctx, const AttentionWeights& a, const Matrix& x, int heads,
                              const BlockEdits& edits, const Matrix& K, const Matrix& V) {
    const int d = static_cast<int>(x.cols()), T_k = static_cast<int>(K.rows());
    Matrix q(1, d), concat(1, d), out(1, d);
    blocks::linear(ctx, a.q, x.data(), 1, d, q.data(), d);
    std::vector<Matrix> maps(heads, Matrix(1, T_k));
    std::vector<float*> ptrs(heads);
    for (int h = 0; h < heads; ++h) ptrs[h] = maps[h].data();
    attend_heads(ctx, q.data(), d, K.data(), V.data(), d, 1, T_k, d, heads, false, edits.keys, {ptrs.data(), concat.data(), nullptr});
    ablate(concat, edits, heads);
    blocks::linear(ctx, a.o, concat.data(), 1, d, out.data(), d);
    return out;
}

}  // namespace

// The forward's sub-blocks for one new row, keys and values from the cache.
std::vector<float> Decoder::step(kernels::Context& ctx, int id) {
    State& s = *state_;
    const ModelConfig& c = s.model.config;
    const ModelWeights& w = *s.model.weights;
    const float eps = c.layer_norm_eps;
    const bool marian = c.family == Family::Marian;
    if (c.family == Family::Bert) throw ModelError("", "", "bert has no decoder");
    if (id < 0 || id >= c.vocab_size) throw ModelError("", "ids", "id " + std::to_string(id) + " is not in the vocabulary");
    Matrix x = embeddings(s.model, {id}, marian, s.n);
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
    const int heads = marian ? c.decoder_heads : c.n_heads;
    const int T_src = static_cast<int>(s.encoder_output.rows());
    for (std::size_t i = 0; i < layers.size(); ++i) {
        const LayerWeights& l = layers[i];
        const int layer = static_cast<int>(i);
        // the stacks as the forward numbers them: gpt2 0; marian decoder self 1, cross 2
        const BlockEdits self = block_edits(s.edits, marian ? 1 : 0, layer, heads, s.n + 1, !marian);
        if (!marian) {  // gpt2, as the forward's SelfAttention and FeedForward steps
            x += cached_self_attention(ctx, l.self, layer_norm(x, l.norm_1, eps), heads, self, s.k[i], s.v[i]);
            x += feed_forward(ctx, l, c.activation, layer_norm(x, l.norm_2, eps));
        } else {
            const BlockEdits cross = block_edits(s.edits, 2, layer, heads, T_src, true);
            add_and_norm(x, cached_self_attention(ctx, l.self, x, heads, self, s.k[i], s.v[i]), l.norm_1, eps);
            add_and_norm(x, cached_cross_attention(ctx, l.cross, x, heads, cross, s.cross_k[i], s.cross_v[i]), l.norm_3, eps);
            add_and_norm(x, feed_forward(ctx, l, c.activation, x), l.norm_2, eps);
        }
    }
    ++s.n;
    if (!marian) x = layer_norm(x, w.final_norm, eps);
    return logits_of(ctx, s.model, x.data());
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
                   int max_new, int eos, const Sampling& sampling, const Interventions& edits) {
    if (prefix.empty()) throw ModelError("", "ids", "generation needs at least one token to start from");
    const bool marian = model.config.family == Family::Marian;
    const bool recompute = edits.ablation == Ablation::Mean && !edits.knockout.empty();
    if (recompute && marian) throw ModelError("", "--knockout-mode", "mean ablation is not offered for translation");
    std::optional<Decoder> cached;
    if (!recompute) cached.emplace(model, encoder_output, edits);
    // The logits at the sequence's last position: the cache fed the new tokens, or a forward over all.
    std::size_t fed = 0;
    const auto next_logits = [&](const std::vector<int>& ids) {
        if (cached) {
            std::vector<float> logits;
            for (; fed < ids.size(); ++fed) logits = cached->step(ctx, ids[fed]);
            return logits;
        }
        RunInput in;
        in.ids = ids, in.edits = edits;
        return forward(ctx, model, in).logits;
    };
    Generated g;
    SplitMix64 rng{sampling.seed};
    for (int i = 0; i < max_new && static_cast<int>(prefix.size()) < model.config.max_positions; ++i) {
        g.logits.push_back(next_logits(prefix));
        const int next = pick_token(g.logits.back(), sampling, rng);
        prefix.push_back(next);
        if (next == eos) break;
    }
    g.ids = std::move(prefix);
    return g;
}

}  // namespace attn
