// why.cpp: the logit lens, direct logit attribution and activation patching (why.hpp), on the
// residual stream a recorded run keeps (transformer.hpp's Inside).
//
// [SECTION] Which models, which tokens
// [SECTION] The logit lens
// [SECTION] Token probabilities
// [SECTION] Direct logit attribution
// [SECTION] Activation patching
#include "why.hpp"

#include "family.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>
#include <optional>

namespace attn {

// [SECTION] Which models, which tokens -------------------------------------------------------

bool has_stream(const ModelConfig& c) { return c.decoder_only() && c.residual != Residual::PostNorm; }

void check_why(const LoadedModel& m, const std::string& field) {
    const ModelConfig& c = m.config();
    if (c.encoder_only())
        throw ModelError(m.folder, field, c.model_type + " has no LM head: it predicts no token (its attention and head tags are what it shows)");
    if (c.encoder_decoder() || c.residual == Residual::PostNorm)
        throw ModelError(m.folder, field, c.model_type + " renormalizes its stream after every sub-block (post-norm): no part's write to it is its own; "
                                          "the lens, attribution and patching read decoder-only models (gpt2, the Llama-like)");
}

int one_token(const LoadedModel& m, std::string_view text, const std::string& field) {
    const int vocab = m.config().vocab_size;
    if (text.size() > 1 && text[0] == '#') {  // an id
        int id = -1;
        const auto [end, ec] = std::from_chars(text.data() + 1, text.data() + text.size(), id);
        if (ec != std::errc() || end != text.data() + text.size() || id < 0 || id >= vocab)
            throw ModelError(m.folder, field, "\"" + std::string(text) + "\": expected #ID with an id from 0 to " + std::to_string(vocab - 1));
        return id;
    }
    const Tokenizer& t = m.decoder_tokenizer();
    const std::vector<int> ids = t.encode(text);
    if (ids.size() == 1 && ids[0] < vocab) return ids[0];
    if (ids.empty()) throw ModelError(m.folder, field, "\"" + std::string(text) + "\" is no token");
    std::string names;
    for (int id : ids) names.append(names.empty() ? "\"" : " \"").append(t.token(id)).append("\"");
    throw ModelError(m.folder, field, "\"" + std::string(text) + "\" is " + std::to_string(ids.size()) + " tokens (" + names +
                                          "): give one token, or #ID");
}

// [SECTION] The logit lens ------------------------------------------------------------------

namespace {

// One row of logits (V): its softmax's top n and the target's rank and probability.
LensCell lens_cell(const float* z, int V, int n, int target, std::vector<int>& order) {
    const float max = *std::max_element(z, z + V);
    double sum = 0;
    for (int i = 0; i < V; ++i) sum += std::exp(static_cast<double>(z[i]) - max);
    const auto p = [&](int id) { return static_cast<float>(std::exp(static_cast<double>(z[id]) - max) / sum); };
    const auto before = [&](int a, int b) { return z[a] > z[b] || (z[a] == z[b] && a < b); };
    LensCell cell;
    order.resize(static_cast<std::size_t>(V));
    std::iota(order.begin(), order.end(), 0);
    const int k = std::min(n, V);
    std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
    for (int i = 0; i < k; ++i) cell.top.push_back({order[static_cast<std::size_t>(i)], p(order[static_cast<std::size_t>(i)])});
    if (target < 0) target = order[0];  // the last layer's: its own top token
    cell.target = target;
    cell.target_rank = 1 + static_cast<int>(std::count_if(order.begin(), order.end(), [&](int j) { return before(j, target); }));
    cell.target_p = p(target);
    return cell;
}

}  // namespace

LensRun::LensRun(const Model& model, const RunResult& run, int top, int band_logits)
    : model_(model), streams_(&run.inside.streams), top_(top),
      band_(std::max(1, band_logits / std::max(model.config.vocab_size, 1))), layer_(static_cast<int>(run.inside.streams.size()) - 1) {
    lens_.layers = static_cast<int>(streams_->size());
    lens_.positions = streams_->empty() ? 0 : static_cast<int>(streams_->front().rows());
    lens_.cells.resize(static_cast<std::size_t>(lens_.layers) * static_cast<std::size_t>(lens_.positions));
    if (lens_.positions == 0) layer_ = -1;
}

float LensRun::progress() const {
    const int rows = lens_.layers * lens_.positions;
    return done() || rows == 0 ? 1.0f : static_cast<float>((lens_.layers - 1 - layer_) * lens_.positions + row_) / static_cast<float>(rows);
}

void LensRun::step(kernels::Context& ctx) {
    if (done()) return;
    const int V = model_.config.vocab_size, T = lens_.positions, last = lens_.layers - 1;
    const int n = std::min(band_, T - row_);
    const Matrix z = stream_logits(ctx, model_, (*streams_)[static_cast<std::size_t>(layer_)].middleRows(row_, n));
    for (int i = 0; i < n; ++i) {
        const int target = layer_ == last ? -1 : lens_.at(last, row_ + i).target;
        lens_.cells[static_cast<std::size_t>(layer_ * T + row_ + i)] = lens_cell(z.row(i).data(), V, top_, target, order_);
    }
    row_ += n;
    if (row_ == T) row_ = 0, --layer_;
}

Lens logit_lens(kernels::Context& ctx, const Model& model, const RunResult& run, int top) {
    LensRun lens(model, run, top);
    while (!lens.done()) lens.step(ctx);
    return lens.take();
}

// [SECTION] Token probabilities -------------------------------------------------------------

TokenProbsRun::TokenProbsRun(const Model& model, const RunResult& run, std::vector<int> ids, int top, int band_logits)
    : model_(model), hidden_(&run.hidden), ids_(std::move(ids)), top_(top),
      band_(std::max(1, band_logits / std::max(model.config.vocab_size, 1))) {
    // (a run of these ids: one hidden row each)
    probs_.at.resize(std::min(ids_.size(), static_cast<std::size_t>(run.hidden.rows())));
    if (!probs_.at.empty()) probs_.at[0].target = -1;
}

float TokenProbsRun::progress() const {
    const int T = probs_.positions();
    return T <= 1 ? 1.0f : static_cast<float>(std::min(row_, T) - 1) / static_cast<float>(T - 1);
}

void TokenProbsRun::step(kernels::Context& ctx) {
    if (done()) return;
    const int V = model_.config.vocab_size, n = std::min(band_, probs_.positions() - row_);
    // 1. logits at rows row_ − 1 … row_ + n − 2: the predictions of positions row_ … row_ + n − 1
    const Matrix z = hidden_logits(ctx, model_, hidden_->middleRows(row_ - 1, n));
    // 2. each read at the token that came
    for (int i = 0; i < n; ++i)
        probs_.at[static_cast<std::size_t>(row_ + i)] = lens_cell(z.row(i).data(), V, top_, ids_[static_cast<std::size_t>(row_ + i)], order_);
    row_ += n;
}

TokenProbs token_probs(kernels::Context& ctx, const Model& model, const RunResult& run, const std::vector<int>& ids, int top) {
    TokenProbsRun probs(model, run, ids, top);
    while (!probs.done()) probs.step(ctx);
    return probs.take();
}

// [SECTION] Direct logit attribution -------------------------------------------------------------

namespace {

// A reading: a linear functional on a d-vector (c ↦ Σ r_i·c_i), in double.
using Reading = std::vector<double>;

// Σ x_i·r_{first + i} over n numbers (every one of r's when n = 0).
double dot(const float* x, const Reading& r, std::size_t first = 0, std::size_t n = 0) {
    double s = 0;
    for (std::size_t i = 0; i < (n ? n : r.size()); ++i) s += static_cast<double>(x[i]) * r[first + i];
    return s;
}

// A norm n with its scale frozen at its value on x (d numbers), as a linear map on a part c of
// x: (c − mean(c), where it centres: LayerNorm)·g / σ(x); its shift β is added once (the bias).
// Given the reading `after` of its output, the reading of c: q − mean(q) (centred), where
// q = after ⊙ g / σ(x).
Reading pull(const ModelConfig& c, const Norm& n, const float* x, const Reading& after) {
    const std::size_t d = after.size();
    const bool centre = c.norm != NormKind::RmsNorm;
    double mean = 0, squares = 0;
    if (centre)
        for (std::size_t i = 0; i < d; ++i) mean += x[i] / static_cast<double>(d);
    for (std::size_t i = 0; i < d; ++i) squares += (x[i] - mean) * (x[i] - mean);
    const double inv = 1.0 / std::sqrt(squares / static_cast<double>(d) + c.layer_norm_eps);
    Reading q(d);
    double q_mean = 0;
    for (std::size_t i = 0; i < d; ++i) q[i] = after[i] * n.g[i] * inv, q_mean += q[i] / static_cast<double>(d);
    if (centre)
        for (double& v : q) v -= q_mean;
    return q;
}

// What the residual() of one sub-block does to its output f (d numbers) before adding it
// (transformer.cpp): a frozen post-norm (sandwich, post only), granite's factor, or nothing.
// Returns the reading of f; the post-norm's shift, read by `after`, goes to `bias`.
Reading through_post(const ModelConfig& c, const Norm& post, const float* f, const Reading& after, double& bias) {
    if (c.residual == Residual::Sandwich || c.residual == Residual::PostOnly) {
        if (post.b) bias += dot(post.b, after);
        return pull(c, post, f, after);
    }
    Reading r = after;
    if (c.residual == Residual::PreNorm)
        for (double& v : r) v *= c.residual_scale;
    return r;
}

}  // namespace

Attribution attribute(kernels::Context& ctx, const Model& model, const RunResult& run, int target, int contrast) {
    const ModelConfig& c = model.config;
    const ModelWeights& w = *model.weights;
    const Inside& in = run.inside;
    const int L = c.n_layers, T = static_cast<int>(run.hidden.rows()), d = c.d_model;
    const int H = c.n_heads, hd = c.d_head(), group = H / c.kv_heads(), last = T - 1;
    const auto row = [&](const Matrix& m, int i) { return m.data() + static_cast<std::ptrdiff_t>(i) * m.cols(); };
    Attribution a;
    a.target = target, a.contrast = contrast;
    a.layers = L, a.heads = H, a.positions = T;
    a.head.assign(static_cast<std::size_t>(L * H), 0.0);
    a.mlp.assign(static_cast<std::size_t>(L), 0.0);
    a.sources.assign(static_cast<std::size_t>(L * H * T), 0.0);
    // u: the LM head's column of the target (less the contrast's), times granite's factor
    std::vector<float> column(static_cast<std::size_t>(std::max(d, H * hd))), other(column.size());
    kernels::column(w.lm_head.w, target, column.data());
    if (contrast >= 0) kernels::column(w.lm_head.w, contrast, other.data());
    Reading u(static_cast<std::size_t>(d));
    for (std::size_t i = 0; i < u.size(); ++i) u[i] = (static_cast<double>(column[i]) - (contrast >= 0 ? other[i] : 0.0f)) * c.logit_scale;
    a.total = dot(row(run.hidden, last), u);
    if (w.lm_head.b) {
        const double b = static_cast<double>(w.lm_head.b[target]) - (contrast >= 0 ? static_cast<double>(w.lm_head.b[contrast]) : 0.0);
        a.total += b * c.logit_scale, a.bias += b * c.logit_scale;
    }
    // the final norm, frozen on the whole stream
    Reading r = u;
    if (w.final_norm.present()) {
        if (w.final_norm.b) a.bias += dot(w.final_norm.b, u);
        r = pull(c, w.final_norm, row(in.streams.back(), last), u);
    }
    a.embed = dot(row(in.streams.front(), last), r);
    for (int l = 0; l < L; ++l) {
        const LayerWeights& lw = w.layers[static_cast<std::size_t>(l)];
        const auto li = static_cast<std::size_t>(l);
        // the heads: the reading of concat is W_o·r_attention (W_o: (H·hd)×d, its column n read whole)
        const Reading ra = through_post(c, lw.post_attention, row(in.attention[li], last), r, a.bias);
        Reading f(static_cast<std::size_t>(H * hd), 0.0);
        for (int n = 0; n < d; ++n) {
            kernels::column(lw.self.o.w, n, column.data());
            for (std::size_t i = 0; i < f.size(); ++i) f[i] += column[i] * ra[static_cast<std::size_t>(n)];
        }
        if (lw.self.o.b) a.bias += dot(lw.self.o.b, ra);
        const BlockRun& block = run.stacks[kFirstStack].layers[li];
        for (int h = 0; h < H; ++h) {
            const auto first = static_cast<std::size_t>(h * hd), n = static_cast<std::size_t>(hd);
            a.head[static_cast<std::size_t>(l * H + h)] = dot(row(in.concat[li], last) + first, f, first, n);
            if (run.edits.knocked_out(kFirstStack, l, h)) continue;  // its output is not its weights·V: no split
            const RowVector weights = block.weights.empty() ? RowVector(map_region(ctx, block.kept, h, {last, T, 0, T}).row(0))
                                                            : RowVector(block.weights[static_cast<std::size_t>(h)].row(last));
            const std::size_t g = static_cast<std::size_t>(h / group * hd);
            for (int j = 0; j < T; ++j)
                a.sources[static_cast<std::size_t>((l * H + h) * T + j)] = static_cast<double>(weights[j]) * dot(row(in.values[li], j) + g, f, first, n);
        }
        a.mlp[li] = dot(row(in.mlp[li], last), through_post(c, lw.post_ff, row(in.mlp[li], last), r, a.bias));
    }
    return a;
}

// [SECTION] Activation patching --------------------------------------------------------------

struct PatchingRun::State {
    Model model;
    RunInput clean, corrupted;
    int target = 0, contrast = 0;
    std::string field;
    Patching out;
    RunResult clean_run, corrupted_run;
    int job = 0;  // 0: the clean run, 1: the corrupted, then the heads (layer·heads + head), then the stream's rows
    std::unique_ptr<Forward> run;
    double done = 0, total = 0;  // sub-blocks

    int jobs() const { return 2 + out.layers * out.heads + (out.layers + 1) * out.positions; }
    // Every run computes the two logits alone (RunInput::logit_ids): [target, contrast]; with the
    // contrast still to choose, the clean and corrupted runs compute them all.
    static double ld(const std::vector<float>& logits) { return static_cast<double>(logits[0]) - static_cast<double>(logits[1]); }
    // A run that computed every logit: its LD read as the patched runs read theirs.
    double ld_of(const RunResult& r) const { return ld(id_logits(model, r.hidden.row(r.hidden.rows() - 1).data(), {target, contrast})); }
    // The corrupted run's prediction, unless it is the target: then the clean run's likeliest other
    // token (the two runs' whole logits).
    void choose_contrast() {
        const auto argmax = [&](const std::vector<float>& l) {
            int best = target == 0 ? 1 : 0;
            for (int i = 0; i < static_cast<int>(l.size()); ++i)
                if (i != target && l[static_cast<std::size_t>(i)] > l[static_cast<std::size_t>(best)]) best = i;
            return best;
        };
        const std::vector<float>& c = corrupted_run.logits;
        const int top = static_cast<int>(std::max_element(c.begin(), c.end()) - c.begin());
        out.same_prediction = top == target;
        contrast = out.same_prediction ? argmax(clean_run.logits) : top;
        out.contrast = contrast;
        corrupted.logit_ids = {target, contrast};  // the patched runs' (State::patched copies it)
    }
    // The input of job k ≥ 2, or nothing when the patch changes nothing (its share is 0).
    std::optional<RunInput> patched(int k) const;
    double& share(int k) {
        const int heads = out.layers * out.heads;
        return k - 2 < heads ? out.head[static_cast<std::size_t>(k - 2)] : out.resid[static_cast<std::size_t>(k - 2 - heads)];
    }
};

// A patched run starts at the patched layer, and at the first row the patch changes: the rows
// before it are the corrupted run's at every later layer (the models are causal), their keys and
// values its (RunInput::first_row), but under mean ablation (a mean over every row).
std::optional<RunInput> PatchingRun::State::patched(int k) const {
    RunInput in = corrupted;
    in.record = false;
    const Inside &from = clean_run.inside, &into = corrupted_run.inside;
    const int heads = out.layers * out.heads, T = out.positions;
    const bool rows = in.edits.knockout.empty() || in.edits.ablation != Ablation::Mean;
    const auto start = [&](int layer, int first, const Matrix& stream) {
        in.from = layer, in.first_row = rows ? first : 0, in.prefix = &into;
        in.stream = stream.bottomRows(T - in.first_row);
    };
    if (k - 2 < heads) {
        const int l = (k - 2) / out.heads, h = (k - 2) % out.heads, hd = model.config.d_head();
        const auto li = static_cast<std::size_t>(l);
        const auto clean_head = from.concat[li].middleCols(h * hd, hd), corrupted_head = into.concat[li].middleCols(h * hd, hd);
        int first = 0;
        while (first < T && clean_head.row(first) == corrupted_head.row(first)) ++first;
        if (first == T) return std::nullopt;
        start(l, first, into.streams[li]);
        in.patched = {kFirstStack, l, h}, in.patch = clean_head.bottomRows(T - in.first_row);
        return in;
    }
    const int layer = (k - 2 - heads) / T, t = (k - 2 - heads) % T;
    const auto li = static_cast<std::size_t>(layer);
    if (from.streams[li].row(t) == into.streams[li].row(t)) return std::nullopt;  // a causal model's rows before the texts differ
    Matrix stream = into.streams[li];
    stream.row(t) = from.streams[li].row(t);
    start(layer, t, stream);
    return in;
}

PatchingRun::PatchingRun(const Model& model, RunInput clean, RunInput corrupted, int target, int contrast, const std::string& field)
    : state_(std::make_unique<State>()) {
    State& s = *state_;
    if (clean.ids.size() != corrupted.ids.size())
        throw ModelError("", field, "the corrupted text is " + std::to_string(corrupted.ids.size()) + " tokens and the clean " +
                                        std::to_string(clean.ids.size()) + ": patching needs the same length");
    s.model = model, s.target = target, s.contrast = contrast, s.field = field;
    s.out.contrast_chosen = contrast < 0;
    for (RunInput* in : {&clean, &corrupted}) {
        in->keep_maps = false, in->record = true;
        in->logit_ids = contrast < 0 ? std::vector<int>{} : std::vector<int>{target, contrast};
    }
    s.clean = std::move(clean), s.corrupted = std::move(corrupted);
    Patching& p = s.out;
    p.target = target, p.contrast = contrast;
    p.layers = model.config.n_layers, p.heads = model.config.n_heads, p.positions = static_cast<int>(s.clean.ids.size());
    p.head.assign(static_cast<std::size_t>(p.layers * p.heads), 0.0);
    p.resid.assign(static_cast<std::size_t>((p.layers + 1) * p.positions), 0.0);
    // sub-blocks: a whole run 2L + 2 (the embeddings, the layers, the head); one from layer l 2(L − l) + 1
    const double whole = 2.0 * p.layers + 2;
    s.total = 2 * whole + static_cast<double>(p.heads) * p.layers * (p.layers + 2) + static_cast<double>(p.positions) * (p.layers + 1) * (p.layers + 1);
}

PatchingRun::~PatchingRun() = default;
bool PatchingRun::done() const { return state_->job == state_->jobs(); }
float PatchingRun::progress() const { return state_->total > 0 ? static_cast<float>(std::min(1.0, state_->done / state_->total)) : 1.0f; }

void PatchingRun::step(kernels::Context& ctx) {
    State& s = *state_;
    while (!done() && !s.run) {  // the next job that runs
        if (s.job < 2) {
            s.run = std::make_unique<Forward>(s.model, s.job == 0 ? s.clean : s.corrupted);
            break;
        }
        const int layers = s.out.layers, heads = layers * s.out.heads;
        const int from = s.job - 2 < heads ? (s.job - 2) / s.out.heads : (s.job - 2 - heads) / s.out.positions;
        if (std::optional<RunInput> in = s.patched(s.job)) {
            s.run = std::make_unique<Forward>(s.model, std::move(*in));
            break;
        }
        s.share(s.job++) = 0;
        s.done += 2.0 * (layers - from) + 1;
    }
    if (!s.run) return;
    s.run->step(ctx);
    s.done += 1;
    if (!s.run->done()) return;
    RunResult r = s.run->take();
    s.run.reset();
    if (s.job == 0) s.clean_run = std::move(r);
    else if (s.job == 1) {
        s.corrupted_run = std::move(r);
        if (s.out.contrast_chosen) {
            s.choose_contrast();
            s.out.clean = s.ld_of(s.clean_run), s.out.corrupted = s.ld_of(s.corrupted_run);
        } else {
            s.out.clean = s.ld(s.clean_run.logits), s.out.corrupted = s.ld(s.corrupted_run.logits);
        }
        if (s.out.clean == s.out.corrupted)
            throw ModelError("", s.field, "the clean and the corrupted text give the same logit difference (" + std::to_string(s.out.clean) +
                                              "): there is nothing for a patch to restore");
    } else {
        s.share(s.job) = (s.ld(r.logits) - s.out.corrupted) / (s.out.clean - s.out.corrupted);
    }
    ++s.job;
}

Patching PatchingRun::take() {
    return std::move(state_->out);
}

Patching patching(kernels::Context& ctx, const Model& model, const RunInput& clean, const RunInput& corrupted, int target,
                  int contrast, const std::string& field) {
    PatchingRun run(model, clean, corrupted, target, contrast, field);
    while (!run.done()) run.step(ctx);
    return run.take();
}

}  // namespace attn
