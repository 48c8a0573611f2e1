// The model runtime (config.hpp, safetensors.hpp, blocks.hpp, transformer.hpp): the building
// blocks against plain loops, a GPT-2 forward against one written in double, every bad file
// as its one-line error, the steps, block_trace and the KV-cache decoder against the forward,
// and every case of tests/model/make_models.py (PyTorch, float64) when the build made them.
// Each check prints the largest difference it saw.
#include "test_util.hpp"
#include "blocks.hpp"
#include "family.hpp"
#include "model_checkpoint.hpp"
#include "reference_cases.hpp"
#include "model.hpp"
#include "model_error.hpp"
#include "oracle.hpp"
#include "rope.hpp"
#include "safetensors.hpp"
#include "transformer.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <tuple>

using namespace attn;
using attn::test::matrix_of;
using attn::test::same_bits;
using attn::testing::error_of;
namespace ck = attn::checkpoint;

namespace {

constexpr double kPi = 3.14159265358979323846;

std::shared_ptr<const FileBytes> bytes_of(const std::vector<std::uint8_t>& b) { return FileBytes::own(ByteBuffer(b.data(), b.size())); }

Model gpt2_model(const ck::Gpt2Shape& s, std::uint64_t seed, const std::string& activation = "gelu_new",
                 const std::string& dtype = "F32", const std::string& prefix = "", bool buffers = false) {
    auto tensors = ck::gpt2_tensors(s, seed, prefix, buffers);
    for (ck::Tensor& t : tensors)
        if (t.dtype == "F32" && !t.name.ends_with("masked_bias")) t.dtype = dtype;
    return load_model_weights(read_config(ck::gpt2_config(s, activation), "gpt2/config.json"),
                              bytes_of(ck::safetensors(tensors)), "gpt2/model.safetensors");
}


// [SECTION] A GPT-2 forward in double (llm.c's gpt2_forward, as plain loops) ------------------

using Grid = oracle::Grid;

struct NaiveRun {
    std::vector<std::vector<Grid>> attention;  // [layer][head] T×T
    Grid hidden;
    std::vector<double> logits;
};

// Tensors by name, values as the checkpoint holds them after conversion to F32.
struct Named {
    std::map<std::string, const ck::Tensor*> t;
    explicit Named(const std::vector<ck::Tensor>& ts) {
        for (const ck::Tensor& x : ts) t[x.name] = &x;
    }
    double at(const std::string& n, std::size_t i) const { return t.at(n)->values[i]; }
};

void naive_layer_norm(Grid& x, const Named& w, const std::string& n, double eps) {
    for (auto& row : x) {
        double mean = 0, var = 0;
        for (double v : row) mean += v;
        mean /= row.size();
        for (double v : row) var += (v - mean) * (v - mean);
        var /= row.size();
        for (std::size_t i = 0; i < row.size(); ++i)
            row[i] = (row[i] - mean) / std::sqrt(var + eps) * w.at(n + ".weight", i) + w.at(n + ".bias", i);
    }
}

Grid naive_conv1d(const Grid& x, const Named& w, const std::string& n, int in, int out) {
    Grid y(x.size(), std::vector<double>(out));
    for (std::size_t t = 0; t < x.size(); ++t)
        for (int j = 0; j < out; ++j) {
            double acc = w.at(n + ".bias", j);
            for (int i = 0; i < in; ++i) acc += x[t][i] * w.at(n + ".weight", static_cast<std::size_t>(i) * out + j);
            y[t][j] = acc;
        }
    return y;
}

NaiveRun naive_gpt2(const ck::Gpt2Shape& s, const std::vector<ck::Tensor>& tensors, const std::vector<int>& ids,
                    bool exact_gelu) {
    const Named w(tensors);
    const int T = static_cast<int>(ids.size()), d = s.d, H = s.heads, dk = d / H;
    Grid x(T, std::vector<double>(d));
    for (int t = 0; t < T; ++t)
        for (int i = 0; i < d; ++i) x[t][i] = w.at("wte.weight", ids[t] * d + i) + w.at("wpe.weight", t * d + i);
    NaiveRun r;
    for (int l = 0; l < s.layers; ++l) {
        const std::string h = "h." + std::to_string(l) + ".";
        Grid a = x;
        naive_layer_norm(a, w, h + "ln_1", 1e-5);
        const Grid qkv = naive_conv1d(a, w, h + "attn.c_attn", d, 3 * d);
        Grid concat(T, std::vector<double>(d, 0.0));
        r.attention.emplace_back();
        for (int hd = 0; hd < H; ++hd) {
            Grid p(T, std::vector<double>(T, 0.0));
            for (int i = 0; i < T; ++i) {
                double mx = -1e300;
                std::vector<double> sc(i + 1);
                for (int j = 0; j <= i; ++j) {
                    double dot = 0;
                    for (int c = 0; c < dk; ++c) dot += qkv[i][hd * dk + c] * qkv[j][d + hd * dk + c];
                    sc[j] = dot / std::sqrt(static_cast<double>(dk));
                    mx = std::max(mx, sc[j]);
                }
                double sum = 0;
                for (int j = 0; j <= i; ++j) sum += (p[i][j] = std::exp(sc[j] - mx));
                for (int j = 0; j <= i; ++j) p[i][j] /= sum;
                for (int c = 0; c < dk; ++c)
                    for (int j = 0; j <= i; ++j) concat[i][hd * dk + c] += p[i][j] * qkv[j][2 * d + hd * dk + c];
            }
            r.attention.back().push_back(p);
        }
        const Grid o = naive_conv1d(concat, w, h + "attn.c_proj", d, d);
        for (int t = 0; t < T; ++t)
            for (int i = 0; i < d; ++i) x[t][i] += o[t][i];
        Grid m = x;
        naive_layer_norm(m, w, h + "ln_2", 1e-5);
        Grid f = naive_conv1d(m, w, h + "mlp.c_fc", d, s.d_ff);
        for (auto& row : f)
            for (double& v : row)
                v = exact_gelu ? 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)))
                               : 0.5 * v * (1 + std::tanh(std::sqrt(2 / kPi) * (v + 0.044715 * v * v * v)));
        const Grid y = naive_conv1d(f, w, h + "mlp.c_proj", s.d_ff, d);
        for (int t = 0; t < T; ++t)
            for (int i = 0; i < d; ++i) x[t][i] += y[t][i];
    }
    naive_layer_norm(x, w, "ln_f", 1e-5);
    r.hidden = x;
    r.logits.assign(s.vocab, 0.0);
    for (int v = 0; v < s.vocab; ++v)
        for (int i = 0; i < d; ++i) r.logits[v] += x[T - 1][i] * w.at("wte.weight", v * d + i);
    return r;
}

double max_abs_diff(const Matrix& m, const Grid& g) {
    double worst = 0;
    for (int i = 0; i < m.rows(); ++i)
        for (int j = 0; j < m.cols(); ++j) worst = std::max(worst, std::fabs(m(i, j) - g[i][j]));
    return worst;
}

}  // namespace

// [SECTION] Building blocks --------------------------------------------------------------------

TEST_CASE("model: building blocks against plain loops in double, several shapes") {
    oracle::Random rng(7);
    double worst_ln = 0, worst_act = 0, worst_lin = 0, worst_head = 0, worst_sin = 0;
    for (auto [T, d] : {std::pair{1, 1}, {3, 5}, {7, 16}, {17, 33}, {64, 96}}) {
        Matrix x = rng.matrix(T, d) * 3.0f, y(T, d);
        std::vector<float> g(d), b(d);
        for (int i = 0; i < d; ++i) g[i] = 1 + rng.uniform() * 0.3f, b[i] = rng.uniform();
        blocks::layer_norm(x.data(), T, d, g.data(), b.data(), 1e-5f, y.data());
        for (int t = 0; t < T; ++t) {
            double mean = 0, var = 0;
            for (int i = 0; i < d; ++i) mean += x(t, i);
            mean /= d;
            for (int i = 0; i < d; ++i) var += (x(t, i) - mean) * (x(t, i) - mean);
            var /= d;
            for (int i = 0; i < d; ++i)
                worst_ln = std::max(worst_ln, std::fabs(y(t, i) - ((x(t, i) - mean) / std::sqrt(var + 1e-5) * g[i] + b[i])));
        }
        // activations
        // (with the tails: where e^(−|u|) underflows, and where 1 − e cancels)
        const float tails[] = {60.0f, -60.0f, 1e-4f, -1e-4f, -9.0f, 9.0f, 0.0f};
        for (int i = 0; i < 7 && i < x.size(); ++i) x.data()[i] = tails[i];
        for (kernels::Isa isa : kernels::available_isas())
        for (Activation a : {Activation::GeluTanh, Activation::GeluExact, Activation::Silu, Activation::Relu}) {
            Matrix z = x;
            blocks::activate(isa, a, z.data(), static_cast<std::size_t>(z.size()));
            for (Eigen::Index i = 0; i < z.size(); ++i) {
                const double v = x.data()[i];
                const double want = a == Activation::GeluTanh  ? 0.5 * v * (1 + std::tanh(std::sqrt(2 / kPi) * (v + 0.044715 * v * v * v)))
                                    : a == Activation::GeluExact ? 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)))
                                    : a == Activation::Silu      ? v / (1 + std::exp(-v))
                                                                 : std::max(v, 0.0);
                worst_act = std::max(worst_act, std::fabs(z.data()[i] - want) / (1 + std::fabs(want)));
            }
        }
        // linear, both layouts, with a row stride past the used columns
        for (bool transposed : {false, true}) {
            const int out = d + 3, ld = (transposed ? d : out) + 2;
            std::vector<float> W(static_cast<std::size_t>(transposed ? out : d) * ld), bias(out);
            for (float& v : W) v = rng.uniform();
            for (float& v : bias) v = rng.uniform();
            kernels::Context ctx;
            std::vector<float> packed(kernels::packed_size(ctx.isa, d, out));
            const blocks::Linear f{kernels::pack(ctx.isa, d, out, W.data(), ld, transposed, packed.data()), bias.data()};
            Matrix z(T, out);
            blocks::linear(ctx, f, x.data(), T, d, z.data(), out);
            for (int t = 0; t < T; ++t)
                for (int j = 0; j < out; ++j) {
                    double acc = bias[j];
                    for (int i = 0; i < d; ++i) acc += static_cast<double>(x(t, i)) * (transposed ? W[j * ld + i] : W[i * ld + j]);
                    worst_lin = std::max(worst_lin, std::fabs(z(t, j) - acc) / (1 + std::fabs(acc)));
                }
        }
        // an LM head: logits = x·Eᵀ, E: V×d packed as the d×V table (Plan::table), one row x,
        // past several of the products' column blocks too
        for (const int V : {T * 7 + 1, 4096 + T}) {
            Matrix E = rng.matrix(V, d);
            std::vector<float> bias(V), logits(V);
            for (float& v : bias) v = rng.uniform();
            kernels::Context ctx;
            std::vector<float> packed(kernels::packed_size(ctx.isa, d, V));
            const blocks::Linear head{kernels::pack(ctx.isa, d, V, E.data(), d, true, packed.data()), bias.data()};
            blocks::linear(ctx, head, x.data(), 1, d, logits.data(), V);
            for (int v = 0; v < V; ++v) {
                double acc = bias[v];
                for (int i = 0; i < d; ++i) acc += static_cast<double>(E(v, i)) * x(0, i);
                worst_head = std::max(worst_head, std::fabs(logits[v] - acc) / (1 + std::fabs(acc)));
            }
        }
        // sinusoidal positions, HF's formula: position_enc[p][j] = p / 10000^(2·(j//2)/d)
        {
            std::vector<float> table(static_cast<std::size_t>(T + 5) * d);
            blocks::sinusoidal_positions(T + 5, d, table.data());
            const int sentinel = d / 2 + d % 2;
            for (int p = 0; p < T + 5; ++p)
                for (int j = 0; j < d; ++j) {
                    const double angle = p / std::pow(10000.0, 2.0 * (j / 2) / d);
                    const int col = j % 2 == 0 ? j / 2 : sentinel + j / 2;
                    worst_sin = std::max(worst_sin, std::fabs(table[p * d + col] - (j % 2 == 0 ? std::sin(angle) : std::cos(angle))));
                }
        }
    }
    MESSAGE("layer_norm ", worst_ln, ", activations ", worst_act, ", linear ", worst_lin, ", lm_head ", worst_head,
            ", sinusoid ", worst_sin);
    CHECK(worst_ln < 1e-5);
    CHECK(worst_act < 1e-6);
    CHECK(worst_lin < 1e-5);
    CHECK(worst_head < 1e-5);
    CHECK(worst_sin < 1e-6);
    std::vector<int> ids = {2, 0, 1};
    std::vector<float> table = {1, 2, 3, 4, 5, 6}, pos = {10, 20, 30, 40, 50, 60, 70, 80}, out(6);  // V = 3 rows of d = 2
    for (const kernels::Isa isa : kernels::available_isas()) {
        std::vector<float> packed(kernels::packed_size(isa, 2, 3));
        blocks::embed(kernels::pack(isa, 2, 3, table.data(), 2, true, packed.data()), ids, 2.0f, pos.data(), 1, out.data());
        CHECK(out == std::vector<float>{40, 52, 52, 64, 76, 88});
    }
}

// [SECTION] GPT-2 against the forward in double --------------------------------------------------

TEST_CASE("model: gpt2 forward against a forward in double, every activation, dtype and prefix") {
    const ck::Gpt2Shape s;
    const std::vector<int> ids = {3, 14, 15, 9, 2, 6, 5, 35, 49, 0, 7};
    kernels::Context ctx;
    for (std::string activation : {"gelu_new", "gelu"})
        for (std::string dtype : {"F32", "F16", "BF16"})
            for (std::string prefix : {"", "transformer."}) {
                CAPTURE(activation);
                CAPTURE(dtype);
                CAPTURE(prefix);
                auto tensors = ck::gpt2_tensors(s, 11);
                for (ck::Tensor& t : tensors) {  // the reference sees the values the file holds
                    for (float& v : t.values)
                        if (dtype == "F16") v = f16_to_f32(ck::to_f16(v));
                        else if (dtype == "BF16") v = bf16_to_f32(ck::to_bf16(v));
                }
                const NaiveRun want = naive_gpt2(s, tensors, ids, activation == "gelu");
                const Model m = gpt2_model(s, 11, activation, dtype, prefix, prefix.empty());
                CHECK(m.parameters() == 50 * 16 + 32 * 16 + 2 * (4 * 16 + 16 * 48 + 48 + 16 * 16 + 16 + 16 * 64 + 64 + 64 * 16 + 16) + 32);
                const RunResult r = forward(ctx, m, {ids, {}});
                REQUIRE(r.stacks.size() == 1);
                double worst_attn = 0;
                for (int l = 0; l < s.layers; ++l)
                    for (int h = 0; h < s.heads; ++h)
                        worst_attn = std::max(worst_attn, max_abs_diff(r.stacks[0].layers[l].weights[h], want.attention[l][h]));
                const double worst_hidden = max_abs_diff(r.hidden, want.hidden);
                double worst_logit = 0, scale = 0;
                for (int v = 0; v < s.vocab; ++v)
                    worst_logit = std::max(worst_logit, std::fabs(r.logits[v] - want.logits[v])), scale = std::max(scale, std::fabs(want.logits[v]));
                MESSAGE(activation, " ", dtype, " '", prefix, "': attention ", worst_attn, ", hidden ", worst_hidden,
                        ", logits ", worst_logit / scale, " (relative)");
                CHECK(worst_attn < 1e-5);
                CHECK(worst_hidden < 1e-4);
                CHECK(worst_logit / scale < 1e-5);
            }
}

// A BF16 or F16 checkpoint is kept 16-bit (the products widen its numbers in registers): the same
// forward, bit for bit, as an F32 file of the same numbers, in little more than half the memory.
TEST_CASE("model: a 16-bit checkpoint's weights stay 16-bit, and its forward is its F32 copy's, bit for bit") {
    const ck::Gpt2Shape s;
    const std::vector<int> ids = {3, 14, 15, 9, 2, 6, 5, 35, 49, 0, 7};
    kernels::Context ctx;
    for (std::string dtype : {"F16", "BF16"}) {
        CAPTURE(dtype);
        auto tensors = ck::gpt2_tensors(s, 11);
        for (ck::Tensor& t : tensors)
            for (float& v : t.values) v = dtype == "F16" ? f16_to_f32(ck::to_f16(v)) : bf16_to_f32(ck::to_bf16(v));
        const auto config = read_config(ck::gpt2_config(s), "gpt2/config.json");
        const Model f32 = load_model_weights(config, bytes_of(ck::safetensors(tensors)), "gpt2/model.safetensors");
        for (ck::Tensor& t : tensors) t.dtype = dtype;
        const Model h16 = load_model_weights(config, bytes_of(ck::safetensors(tensors)), "gpt2/model.safetensors");
        const RunResult a = forward(ctx, f32, {ids, {}}), b = forward(ctx, h16, {ids, {}});
        int differ = (a.hidden.array() != b.hidden.array()).count();
        for (std::size_t v = 0; v < a.logits.size(); ++v) differ += a.logits[v] != b.logits[v];
        for (int l = 0; l < s.layers; ++l)
            for (int h = 0; h < s.heads; ++h)
                differ += (a.stacks[0].layers[l].weights[h].array() != b.stacks[0].layers[l].weights[h].array()).count();
        CHECK(differ == 0);
        const double ratio = static_cast<double>(h16.weight_bytes()) / static_cast<double>(f32.weight_bytes());
        MESSAGE(dtype, ": weights ", h16.weight_bytes(), " bytes against ", f32.weight_bytes(), " as F32 (", ratio, ")");
        CHECK(ratio < 0.6);  // the products' weights and the table halve; norms, biases and positions stay F32
    }
}

// [SECTION] The steps, block_trace and the decoder against the forward ---------------------------

namespace {

Model bert_model(const ck::Seq2SeqShape& s, std::uint64_t seed, const std::string& prefix = "") {
    return load_model_weights(read_config(ck::bert_config(s), "bert/config.json"),
                              bytes_of(ck::safetensors(ck::bert_tensors(s, seed, prefix))), "bert/model.safetensors");
}
Model marian_model(const ck::Seq2SeqShape& s, std::uint64_t seed, const std::string& prefix = "model.") {
    return load_model_weights(read_config(ck::marian_config(s), "marian/config.json"),
                              bytes_of(ck::safetensors(ck::marian_tensors(s, seed, prefix))), "marian/model.safetensors");
}

// The stepwise Forward gives forward()'s numbers, and block_trace the forward's weights (bit for
// bit) and its block output.
void check_run_consistency(const Model& m, const RunInput& in) {
    kernels::Context ctx;
    const RunResult r = forward(ctx, m, in);
    Forward f(m, in);
    int steps = 0;
    float last = -1;
    while (!f.done()) {
        CHECK(f.progress() > last);
        last = f.progress();
        f.step(ctx), ++steps;
    }
    CHECK(f.progress() == 1.0f);
    const RunResult s = f.take();
    REQUIRE(s.stacks.size() == r.stacks.size());
    bool same = same_bits(s.hidden, r.hidden) && s.logits == r.logits && same_bits(s.encoder_output, r.encoder_output);
    int traced = 0;
    for (std::size_t k = 0; k < r.stacks.size(); ++k)
        for (std::size_t l = 0; l < r.stacks[k].layers.size(); ++l) {
            const BlockRun& b = r.stacks[k].layers[l];
            same = same && same_bits(s.stacks[k].layers[l].x, b.x);
            const BlockTrace t = block_trace(ctx, m, r, static_cast<int>(k), static_cast<int>(l));
            REQUIRE(t.trace.heads.size() == b.weights.size());
            CHECK(t.options.mask.causal == r.stacks[k].causal);
            for (std::size_t h = 0; h < b.weights.size(); ++h) {
                same = same && same_bits(s.stacks[k].layers[l].weights[h], b.weights[h]);
                CHECK(same_bits(t.trace.heads[h].weights, b.weights[h]));
                ++traced;
            }
            // the trace through attention.hpp's own multi_head_attention, with the dense weights
            const MultiHeadTrace mh = multi_head_attention(ctx, t.trace.x_q, t.trace.x_kv, t.weights, t.options);
            double worst = 0;
            for (std::size_t h = 0; h < b.weights.size(); ++h)
                worst = std::max(worst, static_cast<double>((mh.heads[h].weights - b.weights[h]).cwiseAbs().maxCoeff()));
            bool knocked = false;  // attention.hpp has no knockout: its output differs there
            for (std::size_t h = 0; h < b.weights.size(); ++h) knocked = knocked || in.edits.knocked_out(static_cast<int>(k), static_cast<int>(l), static_cast<int>(h));
            if (!knocked) worst = std::max(worst, static_cast<double>((mh.output - t.trace.output).cwiseAbs().maxCoeff()));
            CHECK(worst < 1e-5);
        }
    CHECK(same);
    MESSAGE(m.config.model_type, ": ", steps, " steps, ", traced, " heads traced bit for bit");
}

// Decoder logits at every length == the forward's last-position logits over that prefix.
void check_decoder(const Model& m, const std::vector<int>& ids, const std::vector<int>& source, const Interventions& edits = {}) {
    kernels::Context ctx;
    Matrix encoder_output;
    if (!source.empty()) encoder_output = forward(ctx, m, {{m.config.decoder_start_id}, source, edits}).encoder_output;
    Decoder dec(m, encoder_output, edits);
    double worst = 0;
    bool bitwise = true;
    for (std::size_t n = 1; n <= ids.size(); ++n) {
        const std::vector<float> step = dec.step(ctx, ids[n - 1]);
        CHECK(dec.length() == static_cast<int>(n));
        const std::vector<int> prefix(ids.begin(), ids.begin() + n);
        const RunResult r = forward(ctx, m, {prefix, source, edits});
        REQUIRE(step.size() == r.logits.size());
        for (std::size_t v = 0; v < step.size(); ++v) worst = std::max(worst, static_cast<double>(std::fabs(step[v] - r.logits[v])));
        bitwise = bitwise && step == r.logits;
    }
    MESSAGE(m.config.model_type, " decoder: largest logit difference to the forward ", worst, std::string(bitwise ? " (bit for bit)" : ""));
    CHECK(worst < 1e-4);
}

}  // namespace

TEST_CASE("model: stepwise forward, block_trace and the KV-cache decoder agree with forward()") {
    const ck::Gpt2Shape g;
    const ck::Seq2SeqShape s;
    const Model gpt2 = gpt2_model(g, 5), bert = bert_model(s, 6), marian = marian_model(s, 7),
                marian_base = marian_model(s, 7, "");
    const std::vector<int> ids = {3, 14, 15, 9, 2, 6, 5, 35, 30, 0, 7, 1, 19};
    check_run_consistency(gpt2, {ids, {}});
    check_run_consistency(bert, {ids, {}});
    check_run_consistency(marian, {{39, 4, 8, 15, 16}, ids});
    check_run_consistency(marian_base, {{39, 4, 8, 15, 16, 23, 42 % 40}, {5, 6}});
    check_decoder(gpt2, ids, {});
    check_decoder(marian, {39, 4, 8, 15, 16, 23, 2}, ids);
    // greedy: the argmax at every step, as forward() would pick it
    kernels::Context ctx;
    const Matrix enc = forward(ctx, marian, {{39}, ids}).encoder_output;
    const std::vector<int> out = generate(ctx, marian, enc, {39}, 8, 0).ids;
    std::vector<int> want = {39};
    for (int i = 0; i < 8; ++i) {
        const std::vector<float> logits = forward(ctx, marian, {want, ids}).logits;
        want.push_back(static_cast<int>(std::max_element(logits.begin(), logits.end()) - logits.begin()));
        if (want.back() == 0) break;
    }
    CHECK(out == want);
    CHECK(marian.parameters() > 0);
    CHECK(marian.activation_bytes(128) > bert.activation_bytes(128));
}

// [SECTION] Experiments: knockout, hidden tokens, sampling ----------------------------------

TEST_CASE("model: knockouts and hidden tokens run the same in every path (steps, block_trace, the KV cache)") {
    const ck::Gpt2Shape g;
    const ck::Seq2SeqShape s;
    const Model gpt2 = gpt2_model(g, 5), bert = bert_model(s, 6), marian = marian_model(s, 7);
    const std::vector<int> ids = {3, 14, 15, 9, 2, 6, 5, 35, 30, 0, 7, 1, 19};
    Interventions zero;
    zero.knockout = {{0, 0, 1}, {0, 1, 0}};
    zero.hidden = {2, 5};
    Interventions mean = zero;
    mean.ablation = Ablation::Mean;
    Interventions marian_edits;
    marian_edits.knockout = {{0, 0, 0}, {1, 0, 1}, {2, 1, 0}};
    marian_edits.hidden = {1};
    for (const Interventions& e : {zero, mean}) {
        check_run_consistency(gpt2, {ids, {}, e});
        check_run_consistency(bert, {ids, {}, e});
    }
    check_run_consistency(marian, {{39, 4, 8, 15, 16}, ids, marian_edits});
    check_decoder(gpt2, ids, {}, zero);
    check_decoder(marian, {39, 4, 8, 15, 16, 23, 2}, ids, marian_edits);

    kernels::Context ctx;
    const RunResult plain = forward(ctx, gpt2, {ids, {}});
    const RunResult knocked = forward(ctx, gpt2, {ids, {}, zero});
    CHECK(plain.logits != knocked.logits);
    // the knocked-out heads still attend (their maps are kept); a hidden key has no weight
    const Matrix& map = knocked.stacks[0].layers[0].weights[1];
    CHECK(map.col(2).cwiseAbs().maxCoeff() == 0.0f);
    CHECK(map.col(5).cwiseAbs().maxCoeff() == 0.0f);
    CHECK((map.rowwise().sum().array() - 1).abs().maxCoeff() < 1e-5f);  // row 2 included: it sees 0, 1
    // hiding every token: rows of zeros, finite logits, never NaN
    Interventions all;
    for (int j = 0; j < static_cast<int>(ids.size()); ++j) all.hidden.push_back(j);
    const RunResult none = forward(ctx, gpt2, {ids, {}, all});
    CHECK(none.stacks[0].layers[1].weights[0].cwiseAbs().maxCoeff() == 0.0f);
    CHECK(std::all_of(none.logits.begin(), none.logits.end(), [](float v) { return std::isfinite(v); }));
    // mean ablation cannot run on a cache: it says so; generate() recomputes instead
    CHECK(error_of([&] { Decoder d(gpt2, {}, mean); }).find("mean ablation") != std::string::npos);
    const Generated gm = generate(ctx, gpt2, {}, {3, 14, 15}, 5, -1, {}, mean);
    std::vector<int> want = {3, 14, 15};
    for (int i = 0; i < 5; ++i) {
        const std::vector<float> l = forward(ctx, gpt2, {want, {}, mean}).logits;
        want.push_back(static_cast<int>(std::max_element(l.begin(), l.end()) - l.begin()));
    }
    CHECK(gm.ids == want);
    CHECK(gm.logits.size() == 5);
}

TEST_CASE("model: head importance is log p(top token) with each head knocked out too, minus the run's") {
    const ck::Gpt2Shape g;
    const Model gpt2 = gpt2_model(g, 5);
    kernels::Context ctx;
    RunInput in{{3, 14, 15, 9, 2, 6}, {}};
    in.edits.knockout = {{0, 1, 2}};
    in.edits.ablation = Ablation::Mean;
    const RunResult run = forward(ctx, gpt2, in);
    HeadImportanceRun importance(gpt2, in, run.logits);
    float last = -1;
    int steps = 0;
    while (!importance.done()) {
        CHECK(importance.progress() >= last);
        last = importance.progress();
        importance.step(ctx), ++steps;
    }
    const HeadImportance hi = importance.take();
    const int top = static_cast<int>(std::max_element(run.logits.begin(), run.logits.end()) - run.logits.begin());
    REQUIRE(hi.token == top);
    REQUIRE(hi.delta.size() == static_cast<std::size_t>(g.layers * g.heads));
    double worst = 0;
    for (int l = 0; l < g.layers; ++l)
        for (int h = 0; h < g.heads; ++h) {
            if (l == 1 && h == 2) {  // knocked out by the run itself
                CHECK(std::isnan(hi.at(l, h)));
                continue;
            }
            RunInput knocked = in;
            knocked.edits.knockout.push_back({0, l, h});
            const std::vector<float> logits = forward(ctx, gpt2, knocked).logits;
            const double want = log_probability(logits, top) - log_probability(run.logits, top);
            worst = std::max(worst, std::fabs(want - hi.at(l, h)));
        }
    CHECK(worst < 1e-6);
    CHECK(steps == (g.layers * g.heads - 1) * (2 * g.layers + 2));  // 7 forwards of embed + 2 blocks a layer + head
    // log_probability against a naive log-softmax
    const std::vector<float> logits = {1.0f, 3.0f, -2.0f};
    const double z = std::exp(1.0) + std::exp(3.0) + std::exp(-2.0);
    CHECK(std::fabs(log_probability(logits, 2) - (-2.0 - std::log(z))) < 1e-12);
    CHECK(error_of([&] { HeadImportanceRun(bert_model(ck::Seq2SeqShape{}, 6), {{1, 2}, {}}, {}); }).find("no LM head") != std::string::npos);
}

TEST_CASE("model: pick_token: the argmax, top-k, and samples that follow softmax(logits / T) from a seed") {
    const std::vector<float> logits = {0.5f, 2.0f, -1.0f, 2.0f, 1.0f};
    SplitMix64 rng{1};
    CHECK(pick_token(logits, {}, rng) == 1);                    // greedy: the first of two equal maxima
    CHECK(pick_token(logits, {0.7f, 1, 3}, rng) == 1);          // top-1 is the argmax
    for (int i = 0; i < 200; ++i) {
        const int t = pick_token(logits, {5.0f, 2, 9}, rng);    // top-2: ids 1 and 3 only
        CHECK((t == 1 || t == 3));
    }
    for (float temperature : {0.5f, 1.0f, 2.0f}) {
        std::vector<int> counts(logits.size());
        SplitMix64 r{42};
        const int n = 40000;
        for (int i = 0; i < n; ++i) ++counts[pick_token(logits, {temperature, 0, 0}, r)];
        double total = 0;
        for (float l : logits) total += std::exp(l / temperature);
        for (std::size_t i = 0; i < logits.size(); ++i) {
            const double p = std::exp(logits[i] / temperature) / total;
            CHECK(std::fabs(counts[i] / static_cast<double>(n) - p) < 4 * std::sqrt(p * (1 - p) / n) + 1e-3);
        }
    }
    SplitMix64 a{7}, b{7}, c{8};
    std::vector<int> ta, tb, tc;
    for (int i = 0; i < 50; ++i) {
        ta.push_back(pick_token(logits, {1.0f, 0, 0}, a));
        tb.push_back(pick_token(logits, {1.0f, 0, 0}, b));
        tc.push_back(pick_token(logits, {1.0f, 0, 0}, c));
    }
    CHECK(ta == tb);
    CHECK(ta != tc);
    CHECK(error_of([&] { pick_token({}, {}, a); }).find("logits") != std::string::npos);
}

// [SECTION] Bad files, each as its one line ---------------------------------------------------

namespace {

std::string load_error(const std::vector<std::uint8_t>& bytes, const ck::Gpt2Shape& s = {}) {
    return error_of([&] { load_model_weights(read_config(ck::gpt2_config(s), "gpt2/config.json"), bytes_of(bytes), "gpt2/model.safetensors"); });
}

// A file whose header is `header` (padded as written) followed by `data_bytes` zero bytes.
std::vector<std::uint8_t> raw_file(const std::string& header, std::size_t data_bytes) {
    std::vector<std::uint8_t> out(8);
    for (int i = 0; i < 8; ++i) out[i] = static_cast<std::uint8_t>(static_cast<std::uint64_t>(header.size()) >> (8 * i));
    out.insert(out.end(), header.begin(), header.end());
    out.resize(out.size() + data_bytes, 0);
    return out;
}

}  // namespace

TEST_CASE("model: bad checkpoints give one-line errors that name the tensor") {
    const ck::Gpt2Shape s;
    const std::vector<std::uint8_t> good = ck::safetensors(ck::gpt2_tensors(s, 3));
    CHECK(load_error(good) == "");
    // truncated: the last tensor's bytes are past the end
    std::vector<std::uint8_t> cut(good.begin(), good.end() - 10);
    CHECK(load_error(cut).starts_with("gpt2/model.safetensors: ln_f.bias: data_offsets ["));
    CHECK(load_error(cut).find("are past the end of the data") != std::string::npos);
    CHECK(load_error({1, 2, 3}) == "gpt2/model.safetensors: header: the file is 3 bytes, too short for the header's length");
    CHECK(load_error(raw_file("{}", 0)).empty() == false);  // parses, then wte.weight is missing
    CHECK(load_error(raw_file("{}", 0)) == "gpt2/model.safetensors: wte.weight: missing");
    std::vector<std::uint8_t> long_header = raw_file("{}", 0);
    long_header[0] = 200;
    CHECK(load_error(long_header) == "gpt2/model.safetensors: header: length 200 is past the end of the file (10 bytes)");
    CHECK(load_error(raw_file("{\"a\": [", 0)).starts_with("gpt2/model.safetensors: header: not JSON: "));
    CHECK(load_error(raw_file("[1, 2]", 0)) == "gpt2/model.safetensors: header: expected a JSON object");
    CHECK(load_error(raw_file(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,16]}})", 8)) ==
          "gpt2/model.safetensors: x: data_offsets [0,16] are past the end of the data (8 bytes)");
    CHECK(load_error(raw_file(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8)) ==
          "gpt2/model.safetensors: x: data_offsets [0,8] hold 8 bytes, shape [3] of F32 needs 12");
    CHECK(load_error(raw_file(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8)) ==
          "gpt2/model.safetensors: x: data_offsets [8,0]: begin is after end");
    CHECK(load_error(raw_file(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"y":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8)) ==
          "gpt2/model.safetensors: y: data_offsets [4, 8] overlap x's");
    CHECK(load_error(raw_file(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8)) ==
          "gpt2/model.safetensors: header: bytes [0, 4] of the data belong to no tensor");
    CHECK(load_error(raw_file(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 8)) ==
          "gpt2/model.safetensors: header: bytes [4, 8] of the data belong to no tensor");
    CHECK(load_error(raw_file(R"({"x":{"dtype":"F33","shape":[1],"data_offsets":[0,4]}})", 4)) ==
          "gpt2/model.safetensors: x: dtype: \"F33\" is not a safetensors dtype");
    CHECK(load_error(raw_file(R"({"x":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4)) ==
          "gpt2/model.safetensors: x: shape: expected non-negative integers, got [-1]");
    CHECK(load_error(raw_file(R"({"x":{"dtype":"F32","shape":[1099511627776,1099511627776],"data_offsets":[0,4]}})", 4)) ==
          "gpt2/model.safetensors: x: shape: too many elements [1099511627776,1099511627776]");
    CHECK(load_error(raw_file(R"({"x":[1]})", 0)) == "gpt2/model.safetensors: x: expected an object with dtype, shape and data_offsets");
    CHECK(load_error(raw_file(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", 4)) ==
          "gpt2/model.safetensors: x: data_offsets: expected [begin, end]");

    // tensors checked against the config
    auto with = [&](const std::function<void(std::vector<ck::Tensor>&)>& edit, const std::string& prefix = "") {
        auto t = ck::gpt2_tensors(s, 3, prefix);
        edit(t);
        return load_error(ck::safetensors(t));
    };
    auto find = [](std::vector<ck::Tensor>& ts, const std::string& n) -> ck::Tensor& {
        return *std::find_if(ts.begin(), ts.end(), [&](const ck::Tensor& t) { return t.name == n; });
    };
    CHECK(with([&](auto& t) { find(t, "h.1.attn.c_attn.weight").shape = {48, 16}; }) ==
          "gpt2/model.safetensors: h.1.attn.c_attn.weight: expected shape [16, 48], got [48, 16]");
    CHECK(with([&](auto& t) { find(t, "transformer.h.1.attn.c_attn.weight").shape = {16, 16}, find(t, "transformer.h.1.attn.c_attn.weight").values.resize(256); }, "transformer.") ==
          "gpt2/model.safetensors: transformer.h.1.attn.c_attn.weight: expected shape [16, 48], got [16, 16]");
    CHECK(with([&](auto& t) { t.erase(t.begin() + 3); }) == "gpt2/model.safetensors: h.0.ln_1.bias: missing");
    CHECK(with([&](auto& t) {
              ck::Tensor& w = find(t, "wte.weight");
              w.dtype = "I32";
              w.raw.assign(w.values.size() * 4, 0);
          }) == "gpt2/model.safetensors: wte.weight: dtype I32 is not F32, F16 or BF16");
    // ignorable buffers of any dtype, unknown extra tensors
    CHECK(with([&](auto& t) {
              ck::Tensor ids{"position_ids", {1, 32}, {}, "I64", std::vector<std::uint8_t>(256, 0)};
              t.push_back(ids);
          }) == "");
}

TEST_CASE("model: config.json fields, defaults and errors") {
    const ModelConfig g = read_config(ck::gpt2_config({}), "gpt2/config.json");
    CHECK(g.family == Family::Gpt2);
    CHECK(g.d_ff == 64);
    CHECK(g.activation == Activation::GeluTanh);
    CHECK(g.eos_id == 1);
    const ModelConfig b = read_config(ck::bert_config({}), "bert/config.json");
    CHECK(b.family == Family::Bert);
    CHECK(b.layer_norm_eps == 1e-12f);
    CHECK(b.activation == Activation::GeluExact);
    const ModelConfig m = read_config(ck::marian_config({}), "m/config.json");
    CHECK(m.family == Family::Marian);
    CHECK(m.activation == Activation::Silu);
    CHECK(m.embedding_scale == doctest::Approx(std::sqrt(static_cast<float>(m.d_model))));
    CHECK(m.decoder_layers == 3);
    CHECK(m.decoder_start_id == 39);
    auto err = [](const std::string& json) { return error_of([&] { read_config(json, "gpt2/config.json"); }); };
    CHECK(err(R"({"model_type":"gpt2","vocab_size":10,"n_embd":768,"n_layer":2,"n_head":5})") ==
          "gpt2/config.json: n_head: expected a positive integer that divides n_embd (768)");
    CHECK(err(R"({"model_type":"gpt2","vocab_size":10,"n_embd":768,"n_layer":2,"n_head":-12})") ==
          "gpt2/config.json: n_head: expected a positive integer that divides n_embd (768), got -12");
    CHECK(err(R"({"model_type":"t5"})") == "gpt2/config.json: model_type: \"t5\" is not one of " + supported_model_types());
    CHECK(supported_model_types() ==
          "gpt2, bert, marian, llama, mistral, qwen2, qwen3, gemma2, gemma3_text, phi3, smollm3, granite, olmo2, exaone4, "
          "cohere2, glm4, seed_oss, qwen3_moe, gpt_oss, vit, clip, clip_vision_model, siglip, siglip_vision_model, dinov2, dinov2_with_registers, idefics3, smolvlm, gemma3, qwen2_5_vl");
    CHECK(err(R"({"n_embd":4})") == "gpt2/config.json: model_type: missing");
    CHECK(err(R"({"model_type":"gpt2","vocab_size":10,"n_layer":2,"n_head":2})") == "gpt2/config.json: n_embd: missing");
    CHECK(err(R"({"model_type":"gpt2","vocab_size":"ten","n_embd":8,"n_layer":2,"n_head":2})") ==
          "gpt2/config.json: vocab_size: expected a positive integer, got \"ten\"");
    CHECK(err(R"({"model_type":"gpt2","vocab_size":10,"n_embd":8,"n_layer":0,"n_head":2})") ==
          "gpt2/config.json: n_layer: expected a positive integer, got 0");
    CHECK(err(R"({"model_type":"gpt2","vocab_size":10,"n_embd":8,"n_layer":1,"n_head":2,"activation_function":"tanh"})") ==
          "gpt2/config.json: activation_function: \"tanh\" is not one of gelu, gelu_new, gelu_pytorch_tanh, relu, silu, swish, quick_gelu");
    CHECK(err(R"({"model_type":"gpt2","vocab_size":10,"n_embd":8,"n_layer":1,"n_head":2,"layer_norm_epsilon":-1})") ==
          "gpt2/config.json: layer_norm_epsilon: expected a positive number (of float's range), got -1");
    CHECK(err(R"({"model_type":"gpt2","vocab_size":10,"n_embd":8,"n_layer":1,"n_head":2,"layer_norm_epsilon":1e-50})") ==
          "gpt2/config.json: layer_norm_epsilon: expected a positive number (of float's range), got 1e-50");  // 0 in F32
    CHECK(err("{") .starts_with("gpt2/config.json: not JSON: "));
    CHECK(err("[]") == "gpt2/config.json: expected a JSON object");
}

// [SECTION] PyTorch's references (tests/model/make_models.py, float64) -------------------------

namespace {

// Largest |got − want| (nan when the shapes differ).
double diff(const Matrix& got, const Matrix& want) {
    if (got.rows() != want.rows() || got.cols() != want.cols()) return std::nan("");
    return got.size() ? static_cast<double>((got - want).cwiseAbs().maxCoeff()) : 0.0;
}
double max_abs(const Matrix& m) { return m.size() ? static_cast<double>(m.cwiseAbs().maxCoeff()) : 0.0; }

struct Worst {
    double attention = 0, hidden = 0, logits = 0, q = 0, x = 0, decoder = 0;
    void keep(double& slot, double v) { slot = std::isnan(v) || std::isnan(slot) ? std::nan("") : std::max(slot, v); }
};

// One case folder: config.json, model.safetensors, expected.json.
void check_reference_case(const std::filesystem::path& folder, Worst& all) {
    const ModelFiles files = ModelFiles::from_folder(folder.string());
    const ModelConfig config = read_config(files.need("config.json").text(), files.shown("config.json"));
    const Model model = ModelLoader(config, files).take();
    const nlohmann::json e = nlohmann::json::parse(files.need("expected.json").text());
    const bool marian = config.encoder_decoder();
    RunInput in;
    if (marian) in.ids = e.at("decoder_ids").get<std::vector<int>>(), in.source_ids = e.at("encoder_ids").get<std::vector<int>>();
    else in.ids = e.at("ids").get<std::vector<int>>();
    kernels::Context ctx;
    const RunResult run = forward(ctx, model, in);
    Worst w;
    for (std::size_t k = 0; k < run.stacks.size(); ++k) {
        const StackRun& s = run.stacks[k];
        const nlohmann::json& maps = e.at(s.name);
        REQUIRE(maps.size() == s.layers.size());
        for (std::size_t l = 0; l < s.layers.size(); ++l) {
            REQUIRE(maps[l].size() == s.layers[l].weights.size());
            const BlockTrace t = block_trace(ctx, model, run, static_cast<int>(k), static_cast<int>(l));
            for (std::size_t h = 0; h < maps[l].size(); ++h) {
                w.keep(w.attention, diff(s.layers[l].weights[h], matrix_of(maps[l][h])));
                CHECK(same_bits(t.trace.heads[h].weights, s.layers[l].weights[h]));
                if (e.contains("q") && e["q"].contains(s.name)) {
                    const Matrix q = matrix_of(e["q"][s.name][l][h]);
                    w.keep(w.q, diff(t.trace.heads[h].q, q) / std::max(1.0, max_abs(q)));
                }
                if (e.contains("q_unrotated")) {  // the Steps view's Q before the rotation, and the rotation itself
                    const Matrix q = matrix_of(e["q_unrotated"][s.name][l][h]);
                    REQUIRE(t.q_unrotated.size() == maps[l].size());
                    w.keep(w.q, diff(t.q_unrotated[h], q) / std::max(1.0, max_abs(q)));
                    const Matrix& u = t.q_unrotated[h];
                    const int half = t.rope_dim / 2;
                    Matrix turned = u;
                    for (int p = 0; p < u.rows(); ++p)
                        for (int i = 0; i < half; ++i)
                            turned(p, i) = u(p, i) * t.rope_cos(p, i) - u(p, i + half) * t.rope_sin(p, i),
                                    turned(p, i + half) = u(p, i + half) * t.rope_cos(p, i) + u(p, i) * t.rope_sin(p, i);
                    CHECK(same_bits(turned, t.trace.heads[h].q));
                    CHECK(t.kv_head_of(static_cast<int>(h)) == static_cast<int>(h) / (model.config.n_heads / model.config.kv_heads()));
                }
            }
            if (e.contains("x") && e["x"].contains(s.name)) {
                const Matrix x = matrix_of(e["x"][s.name][l]);
                w.keep(w.x, diff(t.trace.x_q, x) / std::max(1.0, max_abs(x)));
            }
        }
    }
    const Matrix hidden = matrix_of(e.at("hidden"));
    w.keep(w.hidden, diff(run.hidden, hidden) / std::max(1e-30, max_abs(hidden)));
    if (e.contains("logits")) {
        const std::vector<float> want = e["logits"].get<std::vector<float>>();
        const Matrix got_m = Eigen::Map<const Matrix>(run.logits.data(), 1, static_cast<Eigen::Index>(run.logits.size()));
        const Matrix want_m = Eigen::Map<const Matrix>(want.data(), 1, static_cast<Eigen::Index>(want.size()));
        w.keep(w.logits, diff(got_m, want_m) / std::max(1e-30, max_abs(want_m)));
        // the KV-cache decoder at every length against the forward over that prefix
        Decoder dec(model, run.encoder_output);
        for (std::size_t n = 1; n <= in.ids.size(); ++n) {
            const std::vector<float> step = dec.step(ctx, in.ids[n - 1]);
            const RunResult r = forward(ctx, model, {std::vector<int>(in.ids.begin(), in.ids.begin() + n), in.source_ids});
            for (std::size_t v = 0; v < step.size(); ++v) w.keep(w.decoder, std::fabs(step[v] - r.logits[v]));
        }
    }
    if (e.contains("generated_ids")) {
        const std::vector<int> want = e["generated_ids"].get<std::vector<int>>();
        const int max_new = e.value("max_new", static_cast<int>(want.size()) - 1);
        CHECK(generate(ctx, model, run.encoder_output, {config.decoder_start_id}, max_new, config.eos_id).ids == want);
    }
    MESSAGE(folder.filename().string(), ": attention ", w.attention, ", hidden ", w.hidden, ", logits ", w.logits, ", q ", w.q,
            ", x ", w.x, ", decoder ", w.decoder);
    CHECK(w.attention < 1e-4);
    CHECK(w.hidden < 1e-3);
    CHECK(w.logits < 1e-3);
    CHECK(w.q < 1e-4);
    CHECK(w.x < 1e-4);
    CHECK(w.decoder < 1e-4);
    all.keep(all.attention, w.attention), all.keep(all.hidden, w.hidden), all.keep(all.logits, w.logits);
    all.keep(all.q, w.q), all.keep(all.x, w.x), all.keep(all.decoder, w.decoder);
}

}  // namespace

TEST_CASE("model: every case of make_models.py against PyTorch in float64") {
#ifdef ATTN_MODEL_REFS
    const std::filesystem::path root = ATTN_MODEL_REFS;
    REQUIRE_MESSAGE(std::filesystem::exists(root / "cases.json"), "no references at ", root.string(),
                    ": the build runs tests/model/make_models.py");
    std::ifstream f(root / "cases.json");
    const nlohmann::json cases_json = nlohmann::json::parse(f);
    const nlohmann::json& list = cases_json.is_object() ? cases_json.at("cases") : cases_json;
    REQUIRE(!list.empty());
    Worst all;
    for (const nlohmann::json& c : list) {
        const std::string name = c.is_string() ? c.get<std::string>() : c.at("case").get<std::string>();
        CAPTURE(name);
        try {
            check_reference_case(root / name, all);
        } catch (const std::exception& ex) {
            FAIL_CHECK(name, ": ", ex.what());
        }
    }
    MESSAGE(list.size(), " cases, largest differences: attention ", all.attention, ", hidden ", all.hidden, " (relative), logits ",
            all.logits, " (relative), q ", all.q, ", x ", all.x, ", decoder ", all.decoder);
#else
    FAIL("built without ATTN_MODEL_REFS: the PyTorch references (tests/model/make_models.py) were not made");
#endif
}

// Threads: every reference case (every family, shape, precision, sliding window, soft cap) gives
// one thread's numbers, bit for bit, on 2, 3 and 8 threads with every job split (split_work 0):
// the forward's maps, hidden states and logits, each layer's block trace, and tokens generated
// with the KV cache.
TEST_CASE("threads: every reference case's forward, block traces and generation are one thread's, bit for bit") {
#ifdef ATTN_MODEL_REFS
    const std::filesystem::path root = ATTN_MODEL_REFS;
    std::vector<std::unique_ptr<kernels::Pool>> pools;
    for (int threads : {2, 3, 8}) pools.push_back(std::make_unique<kernels::Pool>(threads));
    int cases = 0, differ = 0;
    for (const std::string& name : test::reference_case_names(root)) {
        CAPTURE(name);
        const test::ReferenceCase rc = test::load_reference_case(root, name);
        const Model& model = rc.model;
        const ModelConfig& config = rc.config;
        const RunInput& in = rc.input;
        const auto outcome = [&](kernels::Context& ctx) {
            RunResult run = forward(ctx, model, in);
            std::vector<Matrix> traced;
            for (std::size_t k = 0; k < run.stacks.size(); ++k)
                for (std::size_t l = 0; l < run.stacks[k].layers.size(); ++l)
                    for (const HeadTrace& h : block_trace(ctx, model, run, static_cast<int>(k), static_cast<int>(l)).trace.heads)
                        traced.push_back(h.weights), traced.push_back(h.output);
            Generated g;
            if (config.decoder_only()) g = generate(ctx, model, {}, in.ids, 4, -1);
            return std::make_tuple(std::move(run), std::move(traced), std::move(g));
        };
        kernels::Context one;
        const auto [want, want_traced, want_generated] = outcome(one);
        for (const auto& pool : pools) {
            kernels::Context ctx(kernels::best_isa(), pool.get());
            ctx.split_work = 0;
            const auto [got, got_traced, got_generated] = outcome(ctx);
            differ += !same_bits(got.hidden, want.hidden) + (got.logits != want.logits) +
                      (got_generated.ids != want_generated.ids) + (got_generated.logits != want_generated.logits);
            for (std::size_t k = 0; k < want.stacks.size(); ++k)
                for (std::size_t l = 0; l < want.stacks[k].layers.size(); ++l)
                    for (std::size_t h = 0; h < want.stacks[k].layers[l].weights.size(); ++h)
                        differ += !same_bits(got.stacks[k].layers[l].weights[h], want.stacks[k].layers[l].weights[h]);
            for (std::size_t i = 0; i < want_traced.size(); ++i) differ += !same_bits(got_traced[i], want_traced[i]);
        }
        ++cases;
    }
    MESSAGE(cases, " cases on 2, 3 and 8 threads: ", differ, " results differ from one thread's");
    CHECK(cases > 10);
    CHECK(differ == 0);
#else
    FAIL("built without ATTN_MODEL_REFS: the PyTorch references (tests/model/make_models.py) were not made");
#endif
}

TEST_CASE("model: the loader in steps reports its progress by bytes, and the model's sizes") {
    const ck::Gpt2Shape s{.vocab = 3000, .d = 64, .heads = 4, .layers = 2, .positions = 64, .d_ff = 256};
    const auto bytes = bytes_of(ck::safetensors(ck::gpt2_tensors(s, 9)));
    ModelLoader loader(read_config(ck::gpt2_config(s), "gpt2/config.json"), bytes, "gpt2/model.safetensors");
    CHECK(!loader.done());
    CHECK(loader.progress() == 0.0f);
    loader.step();  // ~1 MB of tensors: one step converts them all
    CHECK(loader.done());
    CHECK(loader.progress() == 1.0f);
    const Model m = loader.take();
    const std::int64_t params = 3000 * 64 + 64 * 64 + 2 * (4 * 64 + 64 * 192 + 192 + 64 * 64 + 64 + 64 * 256 + 256 + 256 * 64 + 64) + 2 * 64;
    CHECK(m.parameters() == params);
    // every parameter as a float, and the embedding's packed columns rounded up to a panel's width
    const std::size_t padding = kernels::packed_size(kernels::best_isa(), 64, 3000) - 64 * 3000;
    CHECK(m.weight_bytes() == (static_cast<std::size_t>(params) + padding) * 4);
    // kept maps and block inputs alone are 2·(4·T² + T·64) floats; the estimate holds them
    CHECK(m.activation_bytes(100) > 2u * (4 * 100 * 100 + 100 * 64) * 4);
    CHECK(m.activation_bytes(100) < 4u << 20);
}

// [SECTION] A checkpoint read a window at a time ----------------------------------------------

namespace {

// The page's part, played from memory: every .safetensors given sliced (only its header held,
// as the page reads it: 8 bytes and the JSON), and each window the loader asks for served from
// the file's bytes. Records the largest window, and checks that a window is asked for only once
// the last was filled, inside its file, and always into the loader's one buffer (a new one only
// when a bigger window needs it).
struct SlicedPage {
    std::map<std::string, std::shared_ptr<const FileBytes>> whole;  // by file name
    std::size_t largest = 0, windows = 0, buffers = 0;
    int bad = 0;
    const std::uint8_t* buffer = nullptr;
    std::size_t buffer_size = 0;

    std::shared_ptr<const FileBytes> sliced(const std::string& name, std::shared_ptr<const FileBytes> file) {
        whole[name] = file;
        std::uint64_t n = 0;
        for (int i = 7; i >= 0 && file->size() >= 8; --i) n = (n << 8) | file->data()[i];
        const std::size_t head = static_cast<std::size_t>(std::min<std::uint64_t>(file->size(), file->size() >= 8 ? 8 + n : file->size()));
        return FileBytes::sliced(file->size(), ByteBuffer(file->data(), head));
    }
    ModelFiles sliced(const ModelFiles& files) {
        ModelFiles out = files;
        for (auto& [name, bytes] : out.files)
            if (name.ends_with(".safetensors")) bytes = sliced(name, bytes);
        return out;
    }
    // Steps `loader` (a ModelLoader) to the end, serving its windows.
    template <class Loader>
    void serve(Loader& loader) {
        while (!loader.done()) {
            loader.step();
            const std::optional<FileRange> w = loader.wanted();
            if (!w) continue;
            const FileBytes* file = whole.count(w->file) ? whole.at(w->file).get() : nullptr;
            if (!file || w->end > file->size() || w->begin >= w->end) {
                ++bad;
                return;
            }
            std::uint8_t* to = loader.window();
            if (to != buffer) ++buffers, bad += w->size() <= buffer_size;  // a new buffer only to grow
            buffer = to, buffer_size = std::max(buffer_size, w->size());
            std::memcpy(to, file->data() + w->begin, w->size());
            loader.filled();
            bad += loader.wanted().has_value();
            ++windows, largest = std::max(largest, w->size());
        }
    }
};

// Two weights are the same numbers, bit for bit: every packed Linear and table (their bytes),
// every bias and norm.
struct SameWeights {
    const ModelConfig& c;
    int differ = 0, compared = 0;

    void bytes(const void* a, const void* b, std::size_t n) {
        if (!a && !b) return;
        ++compared;
        differ += !a || !b || std::memcmp(a, b, n) != 0;
    }
    void packed(const kernels::PackedB& a, const kernels::PackedB& b) {
        differ += a.K != b.K || a.N != b.N || a.precision != b.precision;
        const std::size_t e = a.precision == kernels::Precision::F32 ? 4 : 2;
        bytes(a.data, b.data, kernels::packed_size(a.isa, a.K, a.N) * e);
    }
    void linear(const Linear& a, const Linear& b) {
        packed(a.w, b.w);
        bytes(a.b, b.b, static_cast<std::size_t>(a.w.N) * 4);
    }
    void norm(const Norm& a, const Norm& b, int n) {
        bytes(a.g, b.g, static_cast<std::size_t>(n) * 4);
        bytes(a.b, b.b, static_cast<std::size_t>(n) * 4);
    }
    void layer(const LayerWeights& a, const LayerWeights& b) {
        for (auto [x, y] : {std::pair{&a.norm_1, &b.norm_1}, {&a.norm_2, &b.norm_2}, {&a.norm_3, &b.norm_3},
                            {&a.post_attention, &b.post_attention}, {&a.post_ff, &b.post_ff}})
            norm(*x, *y, c.d_model);
        for (auto [x, y] : {std::pair{&a.self, &b.self}, {&a.cross, &b.cross}}) {
            linear(x->q, y->q), linear(x->k, y->k), linear(x->v, y->v), linear(x->o, y->o);
            norm(x->q_norm, y->q_norm, c.d_head()), norm(x->k_norm, y->k_norm, c.d_head());
        }
        linear(a.fc1, b.fc1), linear(a.fc2, b.fc2), linear(a.gate, b.gate);
    }
    void model(const ModelWeights& a, const ModelWeights& b) {
        packed(a.token_embedding, b.token_embedding);
        linear(a.lm_head, b.lm_head);
        norm(a.embedding_norm, b.embedding_norm, c.d_model), norm(a.final_norm, b.final_norm, c.d_model);
        differ += a.layers.size() != b.layers.size() || a.decoder_layers.size() != b.decoder_layers.size() || a.bytes != b.bytes;
        for (std::size_t i = 0; i < std::min(a.layers.size(), b.layers.size()); ++i) layer(a.layers[i], b.layers[i]);
        for (std::size_t i = 0; i < std::min(a.decoder_layers.size(), b.decoder_layers.size()); ++i)
            layer(a.decoder_layers[i], b.decoder_layers[i]);
    }
};

// GPT-2's tensors (Conv1D, tied table, F32 places) and Llama's (nn.Linear, GQA, a separate head)
// in one file or in shards named by an index, as a model's files.
ModelFiles files_of(const std::string& config, const std::vector<ck::Tensor>& tensors, int shards) {
    ModelFiles f;
    f.folder = "m";
    f.files["config.json"] = FileBytes::own(ByteBuffer(reinterpret_cast<const std::uint8_t*>(config.data()), config.size()));
    if (shards == 1) {
        f.files["model.safetensors"] = bytes_of(ck::safetensors(tensors));
        return f;
    }
    nlohmann::json map;
    for (int k = 0; k < shards; ++k) {
        const std::string name = "model-0000" + std::to_string(k + 1) + "-of-0000" + std::to_string(shards) + ".safetensors";
        std::vector<ck::Tensor> part;
        for (std::size_t i = k; i < tensors.size(); i += shards) part.push_back(tensors[i]), map[tensors[i].name] = name;
        f.files[name] = bytes_of(ck::safetensors(part));
    }
    const std::string index = nlohmann::json{{"metadata", nlohmann::json::object()}, {"weight_map", map}}.dump();
    f.files["model.safetensors.index.json"] = FileBytes::own(ByteBuffer(reinterpret_cast<const std::uint8_t*>(index.data()), index.size()));
    return f;
}

std::vector<ck::Tensor> llama_tensors(int vocab, int d, int heads, int kv, int d_ff, int layers, std::uint64_t seed) {
    ck::Maker m(seed);
    const int d_head = d / heads;
    m.add("model.embed_tokens.weight", {vocab, d}, 1.0f);
    for (int i = 0; i < layers; ++i) {
        const std::string l = "model.layers." + std::to_string(i) + ".";
        m.add(l + "input_layernorm.weight", {d}, 0.5f);
        m.add(l + "self_attn.q_proj.weight", {heads * d_head, d}, 0.3f);
        m.add(l + "self_attn.k_proj.weight", {kv * d_head, d}, 0.3f);
        m.add(l + "self_attn.v_proj.weight", {kv * d_head, d}, 0.3f);
        m.add(l + "self_attn.o_proj.weight", {d, heads * d_head}, 0.3f);
        m.add(l + "post_attention_layernorm.weight", {d}, 0.5f);
        m.add(l + "mlp.gate_proj.weight", {d_ff, d}, 0.3f);
        m.add(l + "mlp.up_proj.weight", {d_ff, d}, 0.3f);
        m.add(l + "mlp.down_proj.weight", {d, d_ff}, 0.3f);
    }
    m.add("model.norm.weight", {d}, 0.5f);
    m.add("lm_head.weight", {vocab, d}, 1.0f);
    return m.tensors;
}

std::string llama_config(int vocab, int d, int heads, int kv, int d_ff, int layers) {
    return nlohmann::json{{"model_type", "llama"}, {"vocab_size", vocab}, {"hidden_size", d}, {"num_attention_heads", heads},
                          {"num_key_value_heads", kv}, {"intermediate_size", d_ff}, {"num_hidden_layers", layers},
                          {"max_position_embeddings", 64}, {"rms_norm_eps", 1e-5}, {"tie_word_embeddings", false}}
        .dump();
}

// What check_sliced saw.
struct SlicedSeen {
    std::size_t windows = 0, largest = 0, buffers = 0;
    int differ = 0, compared = 0;
    void add(const SlicedSeen& o) {
        windows += o.windows, largest = std::max(largest, o.largest), buffers = std::max(buffers, o.buffers);
        differ += o.differ, compared += o.compared;
    }
};

// The weights of `files` mapped (as natively: every range held) and sliced (served window by
// window): the same numbers, bit for bit; and the same forward.
SlicedSeen check_sliced(const ModelFiles& files, std::size_t window, const std::string& what) {
    CAPTURE(what);
    CAPTURE(window);
    const ModelConfig config = read_config(files.need("config.json").text(), files.shown("config.json"));
    const Model mapped = ModelLoader(config, files, window).take();
    SlicedPage page;
    ModelLoader loader(config, page.sliced(files), window);
    page.serve(loader);
    REQUIRE(loader.done());
    const Model sliced = loader.take();
    SameWeights same{config};
    same.model(*mapped.weights, *sliced.weights);
    kernels::Context ctx;
    const RunInput input{config.encoder_decoder() ? std::vector<int>{config.decoder_start_id, 3, 1} : std::vector<int>{3, 1, 4, 1, 5},
                         config.encoder_decoder() ? std::vector<int>{2, 7, 1} : std::vector<int>{}};
    const RunResult a = forward(ctx, mapped, input), b = forward(ctx, sliced, input);
    same.differ += (a.hidden.array() != b.hidden.array()).count();
    CHECK(same.differ == 0);
    CHECK(page.bad == 0);
    CHECK(page.windows > 0);
    return {page.windows, page.largest, page.buffers, same.differ, same.compared};
}

}  // namespace

TEST_CASE("model: a checkpoint read a window at a time gives the mapped load's weights, bit for bit") {
    const ck::Gpt2Shape g{.vocab = 3000, .d = 64, .heads = 4, .layers = 2, .positions = 64, .d_ff = 256};
    for (const std::string dtype : {"F32", "BF16", "F16"})
        for (const int shards : {1, 3}) {
            auto gpt2 = ck::gpt2_tensors(g, 7, "", true), llama = llama_tensors(2500, 64, 4, 2, 160, 2, 8);
            for (auto* ts : {&gpt2, &llama})
                for (ck::Tensor& t : *ts)
                    if (t.dtype == "F32" && !t.name.ends_with("masked_bias")) t.dtype = dtype;
            const std::string what = dtype + ", " + std::to_string(shards) + " file(s)";
            // windows smaller than a part of a packing, a few parts, and the default (one window)
            for (const std::size_t window : {std::size_t{4096}, std::size_t{300000}, ModelLoader::kWindowBytes}) {
                SlicedSeen seen = check_sliced(files_of(ck::gpt2_config(g), gpt2, shards), window, "gpt2 " + what);
                const SlicedSeen llama_seen = check_sliced(files_of(llama_config(2500, 64, 4, 2, 160, 2), llama, shards), window, "llama " + what);
                // a window is its size, or one read's: the rows of one part of a packing (the
                // 2500×64 head: up to pack_step columns of 64 numbers)
                const std::size_t e = dtype == "F32" ? 4 : 2;
                CHECK(llama_seen.largest <= std::max<std::size_t>(window, static_cast<std::size_t>(kernels::pack_step(kernels::best_isa(), 2500)) * 64 * e));
                seen.add(llama_seen);
                MESSAGE("gpt2 and llama, ", what, ", window ", window, ": ", seen.windows, " windows, the largest ", seen.largest,
                        " bytes; ", seen.compared, " arrays compared, ", seen.differ, " differ");
            }
        }
#ifdef ATTN_MODEL_REFS
    // every reference case (every family; F32, F16, BF16; one file and shards)
    const std::filesystem::path root = ATTN_MODEL_REFS;
    int cases = 0;
    SlicedSeen seen;
    for (const auto& e : std::filesystem::directory_iterator(root))
        if (e.is_directory() && std::filesystem::exists(e.path() / "config.json")) {
            seen.add(check_sliced(ModelFiles::from_folder(e.path().string()), 512, e.path().filename().string()));
            ++cases;
        }
    MESSAGE(cases, " reference cases, windows of 512 bytes: ", seen.windows, " windows, ", seen.compared, " arrays compared, ",
            seen.differ, " differ");
    CHECK(cases > 10);
#endif
}

TEST_CASE("model: a sliced checkpoint's bad bytes give the mapped file's one-line errors") {
    // every bad file of the errors test, through the sliced path: the same message
    const ck::Gpt2Shape s;
    const std::vector<std::uint8_t> good = ck::safetensors(ck::gpt2_tensors(s, 3));
    auto both = [&](const std::vector<std::uint8_t>& bytes) {
        const ModelConfig config = read_config(ck::gpt2_config(s), "gpt2/config.json");
        const std::string mapped = error_of([&] { ModelLoader(config, bytes_of(bytes), "gpt2/model.safetensors").take(); });
        const std::string sliced = error_of([&] {
            SlicedPage page;
            ModelLoader loader(config, page.sliced("model.safetensors", bytes_of(bytes)), "gpt2/model.safetensors", 1024);
            page.serve(loader);
            loader.take();
        });
        CHECK(mapped == sliced);
        return sliced;
    };
    CHECK(both(good) == "");
    std::vector<std::uint8_t> cut(good.begin(), good.end() - 10);  // truncated
    CHECK(both(cut).find("gpt2/model.safetensors: ln_f.bias: data_offsets [") == 0);
    CHECK(both({1, 2, 3}) == "gpt2/model.safetensors: header: the file is 3 bytes, too short for the header's length");
    std::vector<std::uint8_t> long_header = raw_file("{}", 0);
    long_header[0] = 200;
    CHECK(both(long_header) == "gpt2/model.safetensors: header: length 200 is past the end of the file (10 bytes)");
    // a header lying about offsets: past the end, overlapping, leaving a hole
    CHECK(both(raw_file(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,16]}})", 8)) ==
          "gpt2/model.safetensors: x: data_offsets [0,16] are past the end of the data (8 bytes)");
    CHECK(both(raw_file(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"y":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8)) ==
          "gpt2/model.safetensors: y: data_offsets [4, 8] overlap x's");
    CHECK(both(raw_file(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8)) ==
          "gpt2/model.safetensors: header: bytes [0, 4] of the data belong to no tensor");
    // a page that gives a sliced file less than its header, or never fills a window
    const ModelConfig config = read_config(ck::gpt2_config(s), "gpt2/config.json");
    CHECK(error_of([&] { ModelLoader(config, FileBytes::sliced(good.size(), ByteBuffer(good.data(), 20)), "gpt2/model.safetensors"); })
              .find("gpt2/model.safetensors: header: its ") == 0);
    CHECK(error_of([&] { ModelLoader(config, FileBytes::sliced(good.size(), ByteBuffer(good.data(), 4)), "gpt2/model.safetensors"); }) ==
          "gpt2/model.safetensors: header: its length was not given (4 bytes were)");
    SlicedPage page;
    ModelLoader unfed(config, page.sliced("model.safetensors", bytes_of(good)), "gpt2/model.safetensors");
    CHECK(error_of([&] { unfed.take(); }).find("gpt2/model.safetensors: its bytes ") == 0);
}

TEST_CASE("model: sizes no model has are errors, not allocations") {
    CHECK(error_of([] { read_config(R"({"model_type":"gpt2","vocab_size":10,"n_embd":1073741824,"n_layer":1,"n_head":1})", "g/config.json"); }) ==
          "g/config.json: n_embd: expected a positive integer up to 16777216, got 1073741824");
    ck::Seq2SeqShape s;
    std::string config = ck::marian_config(s);
    config.replace(config.find("\"max_position_embeddings\":24"), 28, "\"max_position_embeddings\":16777216");
    CHECK(error_of([&] {
              load_model_weights(read_config(config, "m/config.json"), bytes_of(ck::safetensors(ck::marian_tensors(s, 1))), "m/model.safetensors");
          }) == "m/model.safetensors: model.encoder.embed_positions.weight: missing, and max_position_embeddings × d_model "
                "(16777216 × 16) is too large a table to compute");
}

TEST_CASE("model: the summary line names what a rotary family adds") {
#ifdef ATTN_MODEL_REFS
    const std::filesystem::path root = ATTN_MODEL_REFS;
    const LoadedModel qwen3 = load_model(ModelFiles::from_folder((root / "qwen3_l2_h4kv2_d24_f32_qknorm").string()));
    CHECK(qwen3.summary(5).starts_with(
        "qwen3_l2_h4kv2_d24_f32_qknorm · qwen3 · 2 layers × 4 heads (2 KV) · RoPE θ 1e+06 · window 5 on 1 of 2 layers · q/k norm · "));
    const LoadedModel phi3 = load_model(ModelFiles::from_folder((root / "phi3_l2_h4kv2_d32_f16_longrope_partial").string()));
    CHECK(phi3.summary().find("RoPE θ 10000 (longrope) on 4 of 8 dims · window 8 · ") != std::string::npos);
    CHECK(phi3.summary().find(" · F16 ") != std::string::npos);
    const LoadedModel gemma2 = load_model(ModelFiles::from_folder((root / "gemma2_l3_h4kv2_d32_f32_softcap").string()));
    CHECK(gemma2.summary().find("window 4 on 2 of 3 layers · soft caps 1.5 / 2") != std::string::npos);
    const LoadedModel gpt2 = load_model(ModelFiles::from_folder((root / "gpt2_l2_h2_d16_f32").string()));
    CHECK(gpt2.summary(8).starts_with("attnviz/tiny-gpt2 · 2 layers × 2 heads · "));  // as before: no RoPE, no KV heads
#else
    FAIL("built without ATTN_MODEL_REFS");
#endif
}

// [SECTION] transformers 5's config.json -------------------------------------------------------------

namespace {

std::string read_text(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A small llama's config.json with `extra` fields merged in (an object's members, JSON).
std::string llama_config(const std::string& extra) {
    return R"({"model_type":"llama","vocab_size":16,"hidden_size":16,"num_hidden_layers":2,"num_attention_heads":2,)"
           R"("intermediate_size":8,"max_position_embeddings":64)" + (extra.empty() ? "" : "," + extra) + "}";
}

}  // namespace

TEST_CASE("model: config.json as transformers 5.17 writes it, every fixture to the positions it means") {
    // tests/data/transformers-5.17/: config.json exactly as transformers 5.17's save_pretrained
    // wrote it for each family (../shared/fixtures/transformers-5.17/).
    struct Case {
        const char* file;
        Rope::Type type;
        double theta, factor;
        int dim, original;
        std::vector<int> window;
        double local_theta;  // 0: no rotation of their own for the sliding layers
    };
    using T = Rope::Type;
    const Case cases[] = {
        {"llama-default", T::Default, 1e4, 1, 16, 0, {0, 0}, 0},
        {"llama-dynamic", T::Dynamic, 1e4, 2, 16, 0, {0, 0}, 0},
        {"llama-linear", T::Linear, 1e4, 4, 16, 0, {0, 0}, 0},
        {"llama-theta5e5-llama3", T::Llama3, 5e5, 8, 16, 64, {0, 0}, 0},
        {"llama-yarn", T::Yarn, 1e4, 4, 16, 32, {0, 0}, 0},
        {"mistral", T::Default, 1e4, 1, 16, 0, {8, 8}, 0},
        {"qwen2", T::Default, 1e6, 1, 16, 0, {0, 8}, 0},
        {"qwen3", T::Default, 1e6, 1, 32, 0, {0, 0}, 0},  // head_dim 32
        {"gemma2", T::Default, 1e4, 1, 16, 0, {7, 0}, 0},
        {"gemma3_text", T::Linear, 1e6, 8, 16, 0, {6, 6}, 1e4},
        {"phi3-longrope", T::LongRope, 1e4, 1, 12, 32, {0, 0}, 0},
    };
    const std::filesystem::path dir = std::filesystem::path(ATTN_TEST_DATA) / "transformers-5.17";
    for (const Case& k : cases) {
        const std::string file = k.file;
        CAPTURE(file);
        const ModelConfig c = read_config(read_text(dir / (std::string(k.file) + ".json")), k.file);
        CHECK(family_of(c).model_type == c.model_type);
        CHECK(c.rope.type == k.type);
        CHECK(c.rope.theta == k.theta);
        CHECK(c.rope.factor == k.factor);
        CHECK(c.rope.dim == k.dim);
        CHECK(c.rope.original_max_positions == k.original);
        CHECK(c.window == k.window);
        CHECK(c.local_rope.theta == (k.local_theta > 0 ? k.local_theta : 10000.0));
        CHECK((c.local_rope.dim > 0) == (k.local_theta > 0));
    }
    // The families since: each file read as its own family (kFamilies is in the enum's order),
    // with what it adds; qwen3_next (linear attention) is refused by its model_type.
    const auto fixture = [&](const std::string& name) { return read_config(read_text(dir / (name + ".json")), name); };
    for (const std::string name : {"cohere2", "exaone4", "glm4", "gpt_oss", "granite", "olmo2", "qwen3_moe", "seed_oss", "smollm3"}) {
        CAPTURE(name);
        const ModelConfig c = fixture(name);
        CHECK(family_of(c).model_type == c.model_type);
        CHECK(c.model_type == name);
    }
    CHECK(error_of([&] { fixture("qwen3_next"); }).starts_with("qwen3_next: model_type: \"qwen3_next\" is not one of "));
    const ModelConfig oss = fixture("gpt_oss");
    CHECK(oss.sinks);
    CHECK((oss.experts.n == 4 && oss.experts.top_k == 2 && oss.experts.d_ff == 96 && oss.experts.clamped_swiglu));
    CHECK(oss.experts.router == Experts::Router::TopKSoftmax);
    CHECK(oss.window == std::vector<int>{128, 0});
    CHECK((oss.rope.type == T::Yarn && oss.rope.factor == 32 && !oss.rope.truncate && oss.rope.theta == 150000));
    CHECK((oss.qkv_bias && oss.o_bias));
    const ModelConfig moe = fixture("qwen3_moe");
    CHECK((moe.experts.n == 4 && moe.experts.top_k == 2 && moe.experts.d_ff == 32 && !moe.experts.normalize));
    CHECK(moe.experts.layers == std::vector<std::uint8_t>{1, 1});
    CHECK(fixture("smollm3").no_rope == std::vector<std::uint8_t>{0, 0});  // no_rope_layers [1, 1]: both rotate
    const ModelConfig cohere = fixture("cohere2");
    CHECK((cohere.residual == Residual::Parallel && cohere.norm == NormKind::LayerNorm && cohere.rope.interleaved));
    CHECK(cohere.logit_scale == 0.0625f);
    CHECK(cohere.no_rope == std::vector<std::uint8_t>{0, 0});  // both layers slide, so both rotate
    const ModelConfig glm = fixture("glm4");
    CHECK((glm.rope.dim == 64 && glm.rope.interleaved && glm.qkv_bias && !glm.o_bias && glm.residual == Residual::Sandwich));
    CHECK((fixture("olmo2").qk_norm_whole && fixture("olmo2").residual == Residual::PostOnly));
    const ModelConfig exaone = fixture("exaone4");
    CHECK(exaone.window == std::vector<int>{4096, 4096});
    CHECK(fixture("seed_oss").o_bias == false);
    CHECK(fixture("seed_oss").qkv_bias);
}

TEST_CASE("model: rope_parameters and the older rope_theta + rope_scaling read to the same rotation") {
    const auto rope_of = [](const std::string& extra) { return read_config(llama_config(extra), "c.json").rope; };
    const auto same = [](const Rope& a, const Rope& b) {
        return a.type == b.type && a.dim == b.dim && a.theta == b.theta && a.factor == b.factor &&
               a.low_freq_factor == b.low_freq_factor && a.high_freq_factor == b.high_freq_factor &&
               a.beta_fast == b.beta_fast && a.beta_slow == b.beta_slow && a.attention_factor == b.attention_factor &&
               a.truncate == b.truncate && a.original_max_positions == b.original_max_positions &&
               a.short_factor == b.short_factor && a.long_factor == b.long_factor;
    };
    CHECK(same(rope_of(R"("rope_parameters":{"rope_type":"llama3","rope_theta":500000,"factor":8,"low_freq_factor":1,)"
                       R"("high_freq_factor":4,"original_max_position_embeddings":16})"),
               rope_of(R"("rope_theta":500000,"rope_scaling":{"rope_type":"llama3","factor":8,"low_freq_factor":1,)"
                       R"("high_freq_factor":4,"original_max_position_embeddings":16})")));
    CHECK(same(rope_of(R"("rope_parameters":{"rope_type":"yarn","rope_theta":150000,"factor":32,"beta_fast":16,"truncate":false,)"
                       R"("original_max_position_embeddings":4096,"partial_rotary_factor":0.5})"),
               rope_of(R"("rope_theta":150000,"partial_rotary_factor":0.5,"rope_scaling":{"type":"yarn","factor":32,"beta_fast":16,)"
                       R"("truncate":false,"original_max_position_embeddings":4096})")));
    CHECK(same(rope_of(R"("rope_parameters":{"rope_type":"default","rope_theta":1e6})"), rope_of(R"("rope_theta":1e6)")));
    CHECK(rope_of("").theta == 10000.0);
    CHECK(rope_of(R"("rope_parameters":{"rope_type":"default"},"rope_theta":1e6)").theta == 1e6);  // a field missing: at the top
    CHECK(rope_of(R"("rope_parameters":{"rope_type":"yarn","factor":4})").factor == 4);  // yarn's factor as given

    // The random checkpoints of make_models.py with their config.json rewritten in transformers 5's
    // form run bit for bit as before.
#ifdef ATTN_MODEL_REFS
    const std::filesystem::path root = ATTN_MODEL_REFS;
    for (const char* name : {"llama_l2_h4kv1_d24_f16_llama3_headdim", "llama_l2_h4kv2_d32_f32_yarn",
                             "gemma3_l3_h2kv1_d32_bf16_local_rope", "phi3_l2_h4kv2_d32_f16_longrope_partial"}) {
        CAPTURE(name);
        const std::filesystem::path old_folder = root / name;
        nlohmann::json j = nlohmann::json::parse(read_text(old_folder / "config.json"));
        nlohmann::json params = j.contains("rope_scaling") && !j["rope_scaling"].is_null() ? j["rope_scaling"] : nlohmann::json::object();
        params["rope_theta"] = j.value("rope_theta", 10000.0);
        if (!params.contains("rope_type")) params["rope_type"] = params.value("type", "default");
        params.erase("type");
        if (j.contains("partial_rotary_factor")) params["partial_rotary_factor"] = j["partial_rotary_factor"];
        if (j["model_type"] == "gemma3_text") {
            params = {{"full_attention", params},
                      {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", j["rope_local_base_freq"]}}}};
            j.erase("rope_local_base_freq");
        }
        j.erase("rope_scaling"), j.erase("rope_theta"), j["rope_parameters"] = params;
        const std::string new_text = j.dump();
        const ModelFiles files = ModelFiles::from_folder(old_folder.string());
        const ModelConfig old_config = read_config(files.need("config.json").text(), "old");
        const ModelConfig new_config = read_config(new_text, "new");
        const Model old_model = ModelLoader(old_config, files).take();
        const Model new_model = ModelLoader(new_config, files).take();
        const nlohmann::json e = nlohmann::json::parse(files.need("expected.json").text());
        RunInput in;
        in.ids = e.at("ids").get<std::vector<int>>();
        kernels::Context ctx;
        const RunResult a = forward(ctx, old_model, in), b = forward(ctx, new_model, in);
        CHECK(a.logits == b.logits);
        for (std::size_t l = 0; l < a.stacks[0].layers.size(); ++l)
            for (std::size_t h = 0; h < a.stacks[0].layers[l].weights.size(); ++h)
                CHECK(same_bits(a.stacks[0].layers[l].weights[h], b.stacks[0].layers[l].weights[h]));
    }
#else
    FAIL("built without ATTN_MODEL_REFS");
#endif
}

TEST_CASE("model: a config field that changes the math and is not read is refused by name, never ignored") {
    const auto err = [](const std::string& extra) { return error_of([&] { read_config(llama_config(extra), "m/config.json"); }); };
    CHECK(err(R"("rope_parameters":{"rope_type":"mrope","rope_theta":10000})") ==
          "m/config.json: rope_parameters.rope_type: \"mrope\" is not one of default, linear, dynamic, llama3, yarn, longrope");
    CHECK(err(R"("rope_scaling":{"type":"su","factor":2})") ==
          "m/config.json: rope_scaling.type: \"su\" is not one of default, linear, dynamic, llama3, yarn, longrope");
    CHECK(err(R"("rope_parameters":{"rope_type":"default","factor":2})") ==
          "m/config.json: rope_parameters.factor: is not read by attnviz's \"default\" rotation (it would change the "
          "positions): refused rather than ignored");
    CHECK(err(R"("rope_parameters":{"rope_type":"linear","factor":2,"mrope_section":[2,2]})").starts_with(
        "m/config.json: rope_parameters.mrope_section: is not read by attnviz's \"linear\" rotation"));
    CHECK(err(R"("rope_parameters":{"rope_type":"linear"})") == "m/config.json: rope_parameters.factor: missing");
    CHECK(err(R"("rope_parameters":{"rope_type":"llama3","factor":8,"low_freq_factor":1,"high_freq_factor":4})") ==
          "m/config.json: rope_parameters.original_max_position_embeddings: missing");
    CHECK(err(R"("rope_parameters":{"rope_type":"default"},"rope_scaling":{"rope_type":"linear","factor":2})") ==
          "m/config.json: rope_scaling: given with rope_parameters: a config states its rotation one way");
    CHECK(err(R"("rope_parameters":{"full_attention":{"rope_type":"default"},"linear_attention":{"rope_type":"default"}})") ==
          "m/config.json: rope_parameters.linear_attention: is not a layer type attnviz runs (full_attention, sliding_attention)");
    CHECK(err(R"("rope_parameters":{"sliding_attention":{"rope_type":"default"}})") ==
          "m/config.json: rope_parameters.full_attention: missing");
    CHECK(err(R"("rope_interleaved":true)") ==
          "m/config.json: rope_interleaved: changes the attention, and attnviz's llama does not read it: refused rather "
          "than ignored (the figure would be wrong)");
    CHECK(err(R"("rope_local_base_freq":10000)").starts_with("m/config.json: rope_local_base_freq: changes the attention"));
    CHECK(err(R"("no_rope_layers":[1,0])").starts_with("m/config.json: no_rope_layers: changes the attention"));
    CHECK(err(R"("attention_chunk_size":8192)").starts_with("m/config.json: attention_chunk_size: changes the attention"));
    CHECK(err(R"("layer_types":["full_attention","chunked_attention"])") ==
          "m/config.json: layer_types: \"chunked_attention\" is not a layer type attnviz runs (full_attention, sliding_attention)");
    CHECK(err(R"("layer_types":["sliding_attention","full_attention"])") ==
          "m/config.json: sliding_window: missing, and layer 0 slides");
    CHECK(err(R"("layer_types":["full_attention"])") == "m/config.json: layer_types: expected a list of 2 strings");
    // harmless when null or false; read fields are fine
    CHECK(err(R"("attention_chunk_size":null,"use_bidirectional_attention":false,"layer_types":["full_attention","full_attention"],"dtype":"bfloat16")") == "");
    CHECK(error_of([] {
              read_config(R"({"model_type":"bert","vocab_size":8,"hidden_size":8,"num_hidden_layers":1,"num_attention_heads":2,)"
                          R"("position_embedding_type":"relative_key"})",
                          "b/config.json");
          }) == "b/config.json: position_embedding_type: \"relative_key\": attnviz's bert runs absolute positions only");
}

TEST_CASE("model: rotary models run past max_position_embeddings; learned positions are refused there") {
    ModelConfig c = read_config(llama_config(R"("rope_parameters":{"rope_type":"dynamic","factor":2})"), "c.json");
    CHECK(c.position_limit() > c.max_positions);
    CHECK(!c.past_training(64));
    CHECK(c.past_training(65));
    // dynamic: θ unchanged within max_position_embeddings, raised past it as transformers computes it
    CHECK(rope_frequencies(c.rope, 64).inv_freq == rope_frequencies(c.rope, 10).inv_freq);
    const double L = 100, P = 64, dim = c.rope.dim;
    const double base = 10000.0 * std::pow(2 * L / P - 1, dim / (dim - 2));
    CHECK(rope_frequencies(c.rope, 100).inv_freq[1] == doctest::Approx(1 / std::pow(base, 2 / dim)).epsilon(1e-12));
    const ModelConfig g = read_config(ck::gpt2_config({}), "gpt2/config.json");
    CHECK(g.position_limit() == g.max_positions);
    CHECK(!g.past_training(g.max_positions + 1));
#ifdef ATTN_MODEL_REFS
    const LoadedModel qwen3 = load_model(ModelFiles::from_folder((std::filesystem::path(ATTN_MODEL_REFS) / "qwen3_l2_h4kv2_d24_f32_qknorm").string()));
    CHECK(qwen3.summary(64).find("trained on") == std::string::npos);
    CHECK(qwen3.summary(65).ends_with(" · past the 64 positions it was trained on"));
#endif
}
