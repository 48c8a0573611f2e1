// mha_wasm.cpp: attnviz's multi-head attention (core/math/attention.hpp,
// multi_head_attention_weights) and a model's forward pass (core/model/transformer.hpp) as wasm
// functions, so that bench/ort_web.mjs and ort_chromium.mjs can time them against ONNX Runtime
// Web on the same inputs, alternating (a text model on ids, a vision model on pixel values).
// Each layer or model gets `threads` threads (kernels::Pool; one in a module built without
// threads, as ORT's numThreads). Built by
// `cmake --build build-web --target attn_mha_wasm` (build-web/attn_mha_wasm.js; files are read
// from the real file system, NODERAWFS). Not a test.
#include "attention.hpp"
#include "image.hpp"
#include "model.hpp"

#include <emscripten/emscripten.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <utility>

namespace {

// One layer's weights, its threads and the kernels' context, kept between runs as the app keeps them.
struct Mha {
    explicit Mha(int threads) : pool(threads), ctx(attn::kernels::best_isa(), &pool) {}
    attn::kernels::Pool pool;
    attn::kernels::Context ctx;
    attn::Weights w;
    int heads = 1;
};

// A model and its threads.
struct ModelRun {
    ModelRun(attn::LoadedModel m, int threads) : model(std::move(m)), pool(threads), ctx(attn::kernels::best_isa(), &pool) {}
    attn::LoadedModel model;
    attn::kernels::Pool pool;
    attn::kernels::Context ctx;
};

attn::Matrix rows(const float* p, int r, int c) { return Eigen::Map<const attn::Matrix>(p, r, c); }

// A run's logits and every layer's attention (layers × heads × T × T, as the trace keeps them)
// copied out; returns the maps copied.
int copy_out(const attn::RunResult& r, float* logits, float* attention) {
    std::memcpy(logits, r.logits.data(), r.logits.size() * sizeof(float));
    size_t at = 0;
    for (const attn::BlockRun& layer : r.stacks.front().layers)
        for (const attn::Matrix& w : layer.weights) {
            std::memcpy(attention + at, w.data(), static_cast<size_t>(w.size()) * sizeof(float));
            at += static_cast<size_t>(w.size());
        }
    return static_cast<int>(r.stacks.front().layers.size() * r.stacks.front().layers.front().weights.size());
}

}  // namespace

extern "C" {

// w: W_q, W_k, W_v, W_o (each d×d, row-vector convention: y = x·W + b), then b_q, b_k, b_v, b_o.
EMSCRIPTEN_KEEPALIVE void* attn_mha_new(int d, int heads, const float* w, int threads) {
    auto* m = new Mha(threads);
    m->heads = heads;
    const size_t dd = static_cast<size_t>(d) * d;
    m->w.w_q = rows(w, d, d), m->w.w_k = rows(w + dd, d, d), m->w.w_v = rows(w + 2 * dd, d, d), m->w.w_o = rows(w + 3 * dd, d, d);
    const float* b = w + 4 * dd;
    m->w.b_q = Eigen::Map<const attn::RowVector>(b, d), m->w.b_k = Eigen::Map<const attn::RowVector>(b + d, d);
    m->w.b_v = Eigen::Map<const attn::RowVector>(b + 2 * d, d), m->w.b_o = Eigen::Map<const attn::RowVector>(b + 3 * d, d);
    return m;
}

EMSCRIPTEN_KEEPALIVE void attn_mha_delete(void* m) { delete static_cast<Mha*>(m); }

// x_q T_q×d, x_kv T_k×d (x_kv == x_q: self-attention); out T_q×d; weights heads×T_q×T_k, every
// head's softmax rows (the trace's per-head weights).
EMSCRIPTEN_KEEPALIVE void attn_mha_run(void* handle, const float* x_q, int T_q, const float* x_kv, int T_k, int causal,
                                       float* out, float* weights) {
    Mha& m = *static_cast<Mha*>(handle);
    const int d = m.w.d_model();
    attn::AttentionOptions o;
    o.n_heads = m.heads;
    o.mask.causal = causal != 0;
    const attn::Matrix q = rows(x_q, T_q, d);
    const attn::Matrix kv = x_kv == x_q ? q : rows(x_kv, T_k, d);
    const size_t plane = static_cast<size_t>(T_q) * T_k;
    const attn::Matrix y = attn::multi_head_attention_weights(m.ctx, q, kv, m.w, o, [&](int h, const attn::Matrix& a) {
        std::memcpy(weights + h * plane, a.data(), plane * sizeof(float));
    });
    std::memcpy(out, y.data(), static_cast<size_t>(T_q) * d * sizeof(float));
}

// A model's folder (Hugging Face layout, SPEC.md §5), loaded as the app loads it; nullptr and
// the reason on stderr when it cannot be.
EMSCRIPTEN_KEEPALIVE void* attn_model_new(const char* folder, int threads) {
    try {
        return new ModelRun(attn::load_model(attn::ModelFiles::from_folder(folder)), threads);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "attn_model_new: %s\n", e.what());
        return nullptr;
    }
}

EMSCRIPTEN_KEEPALIVE void attn_model_delete(void* m) { delete static_cast<ModelRun*>(m); }

// One forward pass over ids[0..T) (gpt2): the logits at the last position (vocab_size) and every
// layer's attention, layers × heads × T × T, copied out as the trace keeps them.
EMSCRIPTEN_KEEPALIVE int attn_model_run(void* handle, const int* ids, int T, float* logits, float* attention) {
    ModelRun& m = *static_cast<ModelRun*>(handle);
    static_assert(sizeof(float) == 4);
    attn::RunInput in;
    in.ids.assign(ids, ids + T);
    return copy_out(attn::forward(m.ctx, m.model.model, in), logits, attention);
}

// A vision model's forward pass over a picture's pixel values (3 × height × width, as its image
// processor hands them: the processing itself is not timed, as ORT's graph starts there too):
// the logits (num_labels) and every layer's attention.
EMSCRIPTEN_KEEPALIVE int attn_model_run_pixels(void* handle, const float* values, int width, int height, float* logits,
                                               float* attention) {
    ModelRun& m = *static_cast<ModelRun*>(handle);
    attn::PixelValues px;
    px.width = width, px.height = height;
    px.values.assign(values, values + 3 * static_cast<size_t>(width) * height);
    return copy_out(attn::forward(m.ctx, m.model.model, attn::image_input(m.model, px)), logits, attention);
}

}  // extern "C"
