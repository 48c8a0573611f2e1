// figure.cpp: figures from each source (figure.hpp).
#include "figure.hpp"

#include <algorithm>
#include <cmath>

namespace attn {

const Trace& Figure::trace() const {
    static const Trace kNone;
    return shown ? *shown : kNone;
}

int Figure::window_of(int stack, int layer) const {
    if (stack < 0 || stack >= static_cast<int>(architecture.size())) return 0;
    const std::vector<int>& w = architecture[static_cast<size_t>(stack)].window;
    return layer >= 0 && layer < static_cast<int>(w.size()) ? w[static_cast<size_t>(layer)] : 0;
}

int Figure::kv_heads_of(int stack) const {
    const int heads = stack >= 0 && stack < stack_count() ? this->stack(stack).heads : 0;
    if (stack < 0 || stack >= static_cast<int>(architecture.size())) return heads;
    const int kv = architecture[static_cast<size_t>(stack)].kv_heads;
    return kv > 0 && heads % kv == 0 ? kv : heads;
}

Figure scene_figure(Scene scene, Trace trace) {
    Figure f;
    f.name = scene.name;
    f.details = kSceneDetails;
    f.shown = std::make_shared<const Trace>(std::move(trace));
    f.scene = std::make_shared<const Scene>(std::move(scene));
    return f;
}

namespace {
bool upper_triangle_zero(const Matrix& m) {
    if (m.rows() != m.cols()) return false;
    for (Eigen::Index q = 0; q < m.rows(); ++q)
        for (Eigen::Index k = q + 1; k < m.cols(); ++k)
            if (m(q, k) != 0.0f) return false;
    return true;
}
}  // namespace

bool stack_is_causal(const AttentionStack& s) {
    if (!s.is_self() || s.queries.size() != s.keys.size() || s.queries.size() < 2) return false;
    return std::all_of(s.maps.begin(), s.maps.end(), upper_triangle_zero);
}

Figure layered_figure(std::shared_ptr<const ImportedAttention> layers, std::string file, std::vector<bool> causal) {
    if (layers->stacks.empty()) throw SceneError("", "the file holds no attention");
    for (const AttentionStack& stack : layers->stacks)
        if (stack.layers < 1 || stack.heads < 1 || stack.queries.empty() || stack.keys.empty())
            throw SceneError(stack.name, "expected at least one layer, one head and one token");
    Figure f;
    f.name = !layers->model.empty() ? layers->model : file;
    f.file = std::move(file);
    f.details = static_cast<unsigned>(Detail::Layers);
    if (causal.size() == layers->stacks.size()) f.causal = std::move(causal);
    else
        for (const AttentionStack& s : layers->stacks) f.causal.push_back(stack_is_causal(s));
    f.layers = std::move(layers);
    return f;
}

Figure live_figure(std::shared_ptr<const LiveRun> run) {
    auto layers = std::make_shared<const ImportedAttention>(run_attention(*run->model, run->input, run->result));
    // Known from the model rather than read off its maps (with 2 tokens or more, as there); not
    // where a picture's tokens see each other both ways (gemma3): its maps have weight above the
    // diagonal there.
    std::vector<bool> causal;
    for (size_t i = 0; i < layers->stacks.size(); ++i)
        causal.push_back(run->result.stacks[i].causal && layers->stacks[i].queries.size() >= 2 &&
                         (run->result.stacks[i].cross || run->result.both_ways.empty()));
    Figure f = layered_figure(std::move(layers), "", std::move(causal));
    f.name = run->model->name;
    // As the forward pass reads the config (transformer.cpp): windows on the one stack of a
    // decoder-only family, never on cross attention; K/V heads shared only there too.
    const ModelConfig& config = run->model->config();
    for (const StackRun& s : run->result.stacks) {
        StackArchitecture a;
        for (int l = 0; l < static_cast<int>(s.layers.size()); ++l) a.window.push_back(s.cross ? 0 : config.window_of(l));
        a.kv_heads = config.decoder_only() ? config.kv_heads() : s.heads;
        f.architecture.push_back(std::move(a));
    }
    f.live = std::move(run);
    return f;
}

void show_maps(Figure& figure, Trace shown, unsigned shown_details) {
    figure.shown = std::make_shared<const Trace>(std::move(shown));
    figure.details = static_cast<unsigned>(Detail::Layers) | shown_details;
}

namespace {

// A run that kept no block input (maps on demand: a long text): the layer as a long trace
// (scene.hpp) from the Q and K it kept, shared with the block (no copy), the first
// kLongTraceRows rows' scores and weights; attention_rows computes any other row again with the
// forward's kernel, mask, scale, cap and sink, so every weight is the forward's, bit for bit.
// query_scale: the scores' factor where it is not 1/√d_head (0), as ModelConfig says it.
// whole: every row instead, not a long trace (a served short text's layer, beside its whole maps).
Trace kept_layer_trace(std::shared_ptr<const KeptHeads> block, AttentionKind kind, int d_model, float query_scale, std::vector<std::string> queries,
                       std::vector<std::string> keys, bool whole) {
    const KeptHeads& k = *block;
    Trace t;
    t.kind = kind;
    t.queries = std::move(queries);
    t.keys = std::move(keys);
    t.heads = k.heads;
    t.d_model = d_model;
    t.d_k = k.d_head;
    t.scale = query_scale > 0 ? Scale{ScaleKind::Divisor, 1.0f / query_scale} : Scale{ScaleKind::InvSqrtDk};
    t.allowed = k.mask();  // the block's rule: no T×T cells
    t.window = k.window;
    FamilyTrace& f = t.family;
    f.kv_heads = k.kv_heads, f.group = k.heads / std::max(k.kv_heads, 1);
    f.softcap = k.softcap, f.sinks = k.sinks, f.factor = k.factor;
    if (query_scale > 0) f.query_pre_attn_scalar = 1.0f / (query_scale * query_scale);
    const int rows = whole ? k.T_q : std::min(kLongTraceRows, k.T_q);
    const MaskMatrix first = t.allowed.rows_between(0, rows);
    const auto spans = kernels::row_spans(first.data(), rows, k.T_k);
    if (!whole) {  // the block's own Q and K, not a copy per head (38 MB at 8 192 tokens, 9 heads)
        t.long_q = std::shared_ptr<const Matrix>(block, &k.q);
        t.long_k = std::shared_ptr<const Matrix>(block, &k.k);
    }
    kernels::Context ctx;  // attention_rows' instruction set
    t.attention.heads.resize(static_cast<size_t>(k.heads));
    for (int h = 0; h < k.heads; ++h) {
        HeadTrace& ht = t.attention.heads[static_cast<size_t>(h)];
        ht.q = k.q.block(0, h * k.d_head, rows, k.d_head);
        if (whole) ht.k = k.k.middleCols(f.kv_head_of(h) * k.d_head, k.d_head);
        const MatrixRef keys = head_keys(t, h);
        ht.scores.resize(rows, k.T_k), ht.scaled.resize(rows, k.T_k), ht.weights.resize(rows, k.T_k);
        kernels::HeadArgs a;
        a.T_q = rows, a.T_k = k.T_k, a.d_k = k.d_head;
        a.q = ht.q.data(), a.k = keys.data(), a.ld_kv = static_cast<int>(keys.outerStride());
        a.allowed = first.data(), a.spans = spans.data();
        a.factor = k.factor, a.softcap = k.softcap;
        if (!k.sinks.empty()) a.sink = k.sinks[static_cast<size_t>(h)];
        a.scores = ht.scores.data(), a.scaled = ht.scaled.data(), a.weights = ht.weights.data();
        a.fully_masked = &ht.fully_masked_rows;
        kernels::attention_head(ctx, a);
    }
    return t;
}

}  // namespace

std::vector<float> head_row(const Trace& tr, int head, int q) {
    std::vector<float> row(static_cast<std::size_t>(tr.T_k()), 0.0f);
    if (q < 0 || q >= tr.T_q() || tr.heads <= 0) return row;
    const bool mean = head < 0 || head >= tr.heads;
    for (int h = mean ? 0 : head; h < (mean ? tr.heads : head + 1); ++h)
        for (int k = 0; k < tr.T_k(); ++k) row[static_cast<std::size_t>(k)] += tr.attention.heads[static_cast<std::size_t>(h)].weights(q, k);
    if (mean)
        for (float& v : row) v /= static_cast<float>(tr.heads);
    return row;
}

std::vector<float> figure_row(const Figure& figure, const Trace& tr, int stack, int layer, int head, int q) {
    const std::shared_ptr<const KeptHeads> k = figure.maps_on_demand() ? figure.kept_layer(stack, layer) : nullptr;
    if (!k) return head_row(tr, head, q);
    std::vector<float> row(static_cast<std::size_t>(k->T_k), 0.0f);
    if (q < 0 || q >= k->T_q || k->heads <= 0) return row;
    const bool mean = head < 0 || head >= k->heads;
    kernels::Context ctx;
    for (int h = mean ? 0 : head; h < (mean ? k->heads : head + 1); ++h) {
        const Matrix m = map_region(ctx, *k, h, {q, q + 1, 0, k->T_k});
        for (int j = 0; j < k->T_k; ++j) row[static_cast<std::size_t>(j)] += m(0, j);
    }
    if (mean)
        for (float& v : row) v /= static_cast<float>(k->heads);
    return row;
}

bool Figure::maps_on_demand() const { return (live && !live->input.keep_maps) || (remote && remote->on_demand); }

const std::vector<Matrix>& Figure::thumbnails(int stack) const {
    return remote ? remote->thumbnails : live->thumbnails[static_cast<size_t>(stack)];
}

std::shared_ptr<const KeptHeads> Figure::kept_layer(int stack, int layer) const {
    if (remote) {
        auto it = remote->layers.find(layer);
        return it == remote->layers.end() ? nullptr : it->second;
    }
    if (!live) return nullptr;
    return {live, &live->result.stacks[static_cast<size_t>(stack)].layers[static_cast<size_t>(layer)].kept};  // the run's, as long as it
}

Trace live_layer_trace(const Figure& figure, int stack, int layer, std::vector<std::string> queries,
                       std::vector<std::string> keys) {
    if (figure.remote) {
        std::shared_ptr<const KeptHeads> block = figure.kept_layer(stack, layer);
        const KeptHeads& k = *block;
        // A served model says its scores' factor; 1/√d_head is said as such.
        const float plain = 1.0f / std::sqrt(static_cast<float>(k.d_head));
        const float query_scale = std::abs(k.factor - plain) <= 1e-6f * plain ? 0.0f : k.factor;
        const AttentionKind kind = figure.causal[static_cast<size_t>(stack)] ? AttentionKind::Masked : AttentionKind::Self;
        return kept_layer_trace(std::move(block), kind, figure.remote->d_model, query_scale, std::move(queries), std::move(keys), !figure.remote->on_demand);
    }
    const LiveRun& live = *figure.live;
    // causal unless a picture's tokens see each other both ways (gemma3): the mask is then given
    const StackRun& s = live.result.stacks[static_cast<size_t>(stack)];
    const AttentionKind kind = s.cross ? AttentionKind::Cross : s.causal && live.result.both_ways.empty() ? AttentionKind::Masked : AttentionKind::Self;
    if (figure.maps_on_demand()) {
        return kept_layer_trace(figure.kept_layer(stack, layer), kind, live.model->config().d_model, live.model->config().query_scale,
                                std::move(queries), std::move(keys), false);
    }
    kernels::Context ctx;
    BlockTrace block = block_trace(ctx, live.model->model, live.result, stack, layer);
    Trace t;
    t.kind = kind;
    t.queries = std::move(queries);
    t.keys = std::move(keys);
    t.heads = block.options.n_heads;
    t.d_model = static_cast<int>(block.trace.x_q.cols());
    t.d_k = block.d_head;
    t.scale = block.options.scale;
    t.allowed = combine_masks(block.options.mask, t.T_q(), t.T_k());
    t.window = block.window;
    t.attention = std::move(block.trace);
    t.w_o = std::move(block.weights.w_o);
    // What the family adds between the projections and the softmax (steps.hpp shows it).
    FamilyTrace& f = t.family;
    f.kv_heads = block.kv_heads, f.group = block.group;
    f.q_projected = std::move(block.q_projected), f.k_projected = std::move(block.k_projected);
    f.q_normed = std::move(block.q_normed), f.k_normed = std::move(block.k_normed);
    f.q_norm_gain = std::move(block.q_norm_gain), f.k_norm_gain = std::move(block.k_norm_gain), f.norm_eps = block.norm_eps;
    f.q_unrotated = std::move(block.q_unrotated), f.k_unrotated = std::move(block.k_unrotated);
    f.rope_dim = block.rope_dim, f.rope_theta = block.rope_theta, f.rope_attention_factor = block.rope_attention_factor;
    f.rope_scaling = rope_type_name(block.rope_type);
    f.rope_inv_freq = std::move(block.rope_inv_freq);
    f.rope_angle = std::move(block.rope_angle), f.rope_cos = std::move(block.rope_cos), f.rope_sin = std::move(block.rope_sin);
    f.rope_positions = std::move(block.rope_positions), f.rope_streams = std::move(block.rope_streams);
    if (live.model->config().vision() && layer == 0 && live.input.patches.rows() > 0) {  // Steps from the pixels
        PatchEmbedding e = patch_embedding(ctx, live.model->model, live.input.patches);
        f.patch_pixels = std::move(e.pixels), f.patch_weight = std::move(e.weight), f.patch_embedded = std::move(e.embedded);
        f.patch_bias = std::move(e.bias), f.patch_first = e.first;
        f.patch_channels = live.model->config().channels, f.patch_size = live.model->config().patch_size;
    }
    f.softcap = block.softcap;
    f.sinks = std::move(block.sinks);
    const float query_scale = live.model->config().query_scale;
    if (query_scale > 0) f.query_pre_attn_scalar = 1.0f / (query_scale * query_scale);
    return t;
}

}  // namespace attn
