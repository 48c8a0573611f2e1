// bench_model.cpp: GPT-2 small (12 layers, d_model 768, 12 heads, vocab 50257, 1024 positions),
// or with --arch smollm2 SmolLM2-135M's shape (llama: 30 layers, d_model 576, 9 heads / 3 KV,
// d_ff 1536, vocab 49152, tied, BF16), or --arch llama1b Llama-3.2-1B's (16 layers, d_model 2048,
// 32 heads / 8 KV, d_ff 8192, vocab 128256, tied, BF16 2.47 GB), with random weights, through the real loader and the real
// forward pass, on one core or, with --threads N, a pool of N threads (kernels::Pool). --dtype f32 or bf16 writes the weights in that dtype instead (BF16
// weights stay 16-bit in memory: the same random numbers, the products widen them in registers).
//
//   1. writes /tmp/attn_bench_ARCH/model.safetensors (GPT-2 F32 ~500 MB; SmolLM2 BF16 ~270 MB),
//      one tensor at a time (the writer never holds more than one tensor), and its config.json
//   2. loads it (FileBytes::map + ModelLoader, its pages given back as they are converted)
//   3. times forward() at T (default 128), min and median of --reps runs, and the time per kind
//      of step (embeddings, attention blocks, MLP blocks, the LM head) in the fastest run
//   4. peak RSS (getrusage ru_maxrss) against the F32 weights' bytes, and the memory
//      Model::activation_bytes says the run needs
//   5. with the maps on demand (--maps demand, the default past 512 tokens: RunInput::keep_maps
//      false), a head's whole map pooled to at most 1024 × 1024 blocks (map_pooled) and an exact
//      64 × 64 zoom in the middle of it (map_region), min of --reps; and the Explain view's
//      rollout of the last query's row through every layer (explain_rows.hpp RolloutRow), once
//      on one thread and once on --threads (a head a part, as the view computes it)
// Output: "RESULT key=value …" lines. bench/bench_model_torch.py is PyTorch's peer.
//   attn_bench_model [--arch gpt2|smollm2|llama1b] [--dtype f32|bf16] [--T 128] [--reps 5] [--threads 1] [--maps kept|demand]
//                    [--dir /tmp/attn_bench_ARCH] [--keep] [--gguf FILE]
// --why: then the why views (why.hpp) at T: the logit lens over every layer and position,
// attribution to one token, and activation patching of every head and every stream row (the
// corrupted ids: the clean ones with every other id changed), min of --reps (patching: once).
// --gguf FILE: that model instead (its weights as the file holds them: a block format's kept
// quantized), not written here; bench/gguf_llama_cpp.py writes them and times llama.cpp beside.
#include "explain_rows.hpp"
#include "model.hpp"  // kept_bytes
#include "transformer.hpp"
#include "why.hpp"

#if defined(__EMSCRIPTEN__)
#include <emscripten/heap.h>
#else
#include <sys/resource.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace attn;

namespace {

constexpr int kVocab = 50257, kD = 768, kLayers = 12, kHeads = 12, kPositions = 1024, kFf = 3072;

double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Natively the peak resident set; in wasm the heap's size (it only grows: its peak).
double peak_rss_mb() {
#if defined(__EMSCRIPTEN__)
    return static_cast<double>(emscripten_get_heap_size()) / 1048576.0;
#else
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss / 1024.0;  // kB on Linux
#endif
}

struct Entry {
    std::string name;
    std::vector<std::int64_t> shape;
    float scale, offset;
};

// The shape benchmarked: its tensors, config.json, the dtype written.
struct Arch {
    std::string name, config;
    std::vector<Entry> entries;
    bool bf16 = false;
    int vocab = 0;
};

std::vector<Entry> gpt2_small() {
    std::vector<Entry> e = {{"wte.weight", {kVocab, kD}, 0.02f, 0}, {"wpe.weight", {kPositions, kD}, 0.01f, 0}};
    for (int i = 0; i < kLayers; ++i) {
        const std::string h = "h." + std::to_string(i) + ".";
        e.push_back({h + "ln_1.weight", {kD}, 0.1f, 1}), e.push_back({h + "ln_1.bias", {kD}, 0.02f, 0});
        e.push_back({h + "attn.c_attn.weight", {kD, 3 * kD}, 0.02f, 0}), e.push_back({h + "attn.c_attn.bias", {3 * kD}, 0.02f, 0});
        e.push_back({h + "attn.c_proj.weight", {kD, kD}, 0.02f, 0}), e.push_back({h + "attn.c_proj.bias", {kD}, 0.02f, 0});
        e.push_back({h + "ln_2.weight", {kD}, 0.1f, 1}), e.push_back({h + "ln_2.bias", {kD}, 0.02f, 0});
        e.push_back({h + "mlp.c_fc.weight", {kD, kFf}, 0.02f, 0}), e.push_back({h + "mlp.c_fc.bias", {kFf}, 0.02f, 0});
        e.push_back({h + "mlp.c_proj.weight", {kFf, kD}, 0.02f, 0}), e.push_back({h + "mlp.c_proj.bias", {kD}, 0.02f, 0});
    }
    e.push_back({"ln_f.weight", {kD}, 0.1f, 1}), e.push_back({"ln_f.bias", {kD}, 0.02f, 0});
    return e;
}

// A Llama's tensors (tied: no lm_head), random with `scale` (the down projection's ¾ of it).
struct LlamaShape {
    int vocab, d, layers, heads, kv, ff;
    float scale;
};
std::vector<Entry> llama(const LlamaShape& s) {
    const std::int64_t hd = s.d / s.heads, d = s.d, ff = s.ff;
    std::vector<Entry> e = {{"model.embed_tokens.weight", {s.vocab, d}, 0.02f, 0}};
    for (int i = 0; i < s.layers; ++i) {
        const std::string l = "model.layers." + std::to_string(i) + ".";
        e.push_back({l + "input_layernorm.weight", {d}, 0.1f, 1});
        e.push_back({l + "self_attn.q_proj.weight", {s.heads * hd, d}, s.scale, 0});
        e.push_back({l + "self_attn.k_proj.weight", {s.kv * hd, d}, s.scale, 0});
        e.push_back({l + "self_attn.v_proj.weight", {s.kv * hd, d}, s.scale, 0});
        e.push_back({l + "self_attn.o_proj.weight", {d, s.heads * hd}, s.scale, 0});
        e.push_back({l + "post_attention_layernorm.weight", {d}, 0.1f, 1});
        e.push_back({l + "mlp.gate_proj.weight", {ff, d}, s.scale, 0});
        e.push_back({l + "mlp.up_proj.weight", {ff, d}, s.scale, 0});
        e.push_back({l + "mlp.down_proj.weight", {d, ff}, 0.75f * s.scale, 0});
    }
    e.push_back({"model.norm.weight", {d}, 0.1f, 1});
    return e;
}
// SmolLM2-135M (HuggingFaceTB/SmolLM2-135M's config.json): tied, rope_theta 1e5.
constexpr LlamaShape kSmolLM2{49152, 576, 30, 9, 3, 1536, 0.04f};
// Llama-3.2-1B (meta-llama/Llama-3.2-1B's config.json): 16 layers, d_model 2048, 32 heads / 8 KV
// of 64, d_ff 8192, vocab 128256, tied, RoPE θ 5e5 with llama3 scaling; BF16 2.47 GB.
constexpr LlamaShape kLlama1B{128256, 2048, 16, 32, 8, 8192, 0.02f};

Arch arch_named(const std::string& name) {
    if (name == "llama1b")
        return {"llama1b",
                "{\"model_type\":\"llama\",\"vocab_size\":128256,\"hidden_size\":2048,\"num_hidden_layers\":16,"
                "\"num_attention_heads\":32,\"num_key_value_heads\":8,\"head_dim\":64,\"intermediate_size\":8192,"
                "\"max_position_embeddings\":131072,\"rms_norm_eps\":1e-5,\"rope_theta\":500000,\"tie_word_embeddings\":true,"
                "\"rope_scaling\":{\"factor\":32.0,\"high_freq_factor\":4.0,\"low_freq_factor\":1.0,"
                "\"original_max_position_embeddings\":8192,\"rope_type\":\"llama3\"},\"hidden_act\":\"silu\"}",
                llama(kLlama1B), true, kLlama1B.vocab};
    if (name == "smollm2")
        return {"smollm2",
                "{\"model_type\":\"llama\",\"vocab_size\":49152,\"hidden_size\":576,\"num_hidden_layers\":30,"
                "\"num_attention_heads\":9,\"num_key_value_heads\":3,\"intermediate_size\":1536,"
                "\"max_position_embeddings\":8192,\"rms_norm_eps\":1e-5,\"rope_theta\":100000,\"tie_word_embeddings\":true,"
                "\"hidden_act\":\"silu\"}",
                llama(kSmolLM2), true, kSmolLM2.vocab};
    return {"gpt2_small",
            "{\"model_type\":\"gpt2\",\"vocab_size\":50257,\"n_embd\":768,\"n_layer\":12,\"n_head\":12,"
            "\"n_positions\":1024,\"n_inner\":null,\"activation_function\":\"gelu_new\"}",
            gpt2_small(), false, kVocab};
}

std::int64_t elements(const Entry& e) {
    std::int64_t n = 1;
    for (std::int64_t s : e.shape) n *= s;
    return n;
}

// Streams the file: the header, then each tensor's random floats (xorshift, uniform), F32 or
// BF16 (the float's top 16 bits, rounded to nearest even).
void write_checkpoint(const std::string& path, const Arch& arch) {
    const std::vector<Entry>& entries = arch.entries;
    const int bytes = arch.bf16 ? 2 : 4;
    std::string header = "{\"__metadata__\":{\"format\":\"pt\"}";  // as torch writes it
    std::int64_t offset = 0;
    for (const Entry& e : entries) {
        std::string shape;
        for (std::size_t i = 0; i < e.shape.size(); ++i) shape.append(i ? "," : "").append(std::to_string(e.shape[i]));
        const std::int64_t end = offset + bytes * elements(e);
        header += ",\"" + e.name + "\":{\"dtype\":\"" + (arch.bf16 ? "BF16" : "F32") + "\",\"shape\":[" + shape +
                  "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(end) + "]}";
        offset = end;
    }
    header += "}";
    while (header.size() % 8) header += ' ';
    std::ofstream out(path, std::ios::binary);
    const std::uint64_t n = header.size();
    out.write(reinterpret_cast<const char*>(&n), 8);
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    std::uint64_t state = 0x9E3779B97F4A7C15ull;
    std::vector<float> buf;
    for (const Entry& e : entries) {
        buf.resize(static_cast<std::size_t>(elements(e)));
        for (float& v : buf) {
            state ^= state << 13, state ^= state >> 7, state ^= state << 17;
            v = e.offset + e.scale * (static_cast<float>(state >> 40) * (2.0f / 16777216.0f) - 1.0f);
        }
        if (arch.bf16) {
            std::vector<std::uint16_t> half(buf.size());
            for (std::size_t i = 0; i < buf.size(); ++i) {
                std::uint32_t u;
                std::memcpy(&u, &buf[i], 4);
                half[i] = static_cast<std::uint16_t>((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
            }
            out.write(reinterpret_cast<const char*>(half.data()), static_cast<std::streamsize>(half.size() * 2));
        } else {
            out.write(reinterpret_cast<const char*>(buf.data()), static_cast<std::streamsize>(buf.size() * 4));
        }
    }
    buf = {};
    if (!out) std::fprintf(stderr, "cannot write %s\n", path.c_str()), std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
    int T = 128, reps = 5, threads = 1, product_parts = 1, spin_us = -1;
    std::string dir, arch_name = "gpt2", dtype, gguf;
    bool keep = false, why = false;
    std::string maps;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--arch" && i + 1 < argc) arch_name = argv[++i];
        else if (a == "--dtype" && i + 1 < argc) dtype = argv[++i];
        else if (a == "--T" && i + 1 < argc) T = std::atoi(argv[++i]);
        else if (a == "--reps" && i + 1 < argc) reps = std::atoi(argv[++i]);
        else if (a == "--threads" && i + 1 < argc) threads = std::max(1, std::atoi(argv[++i]));
        else if (a == "--dir" && i + 1 < argc) dir = argv[++i];
        else if (a == "--keep") keep = true;
        else if (a == "--maps" && i + 1 < argc) maps = argv[++i];
        else if (a == "--gguf" && i + 1 < argc) gguf = argv[++i];
        else if (a == "--why") why = true;
        else if (a == "--product-parts" && i + 1 < argc) product_parts = std::max(1, std::atoi(argv[++i]));
        else if (a == "--spin-us" && i + 1 < argc) spin_us = std::atoi(argv[++i]);
        else return std::fprintf(stderr, "usage: attn_bench_model [--arch gpt2|smollm2|llama1b] [--dtype f32|bf16] [--T 128] [--reps 5] [--threads 1] [--maps kept|demand] [--dir DIR] [--keep] [--gguf FILE] [--why] [--product-parts 1] [--spin-us 100]\n"), 2;
    }
    const bool keep_maps = maps.empty() ? T <= kMapsKeptUpTo : maps == "kept";
    if (!getenv("ATTN_BENCH_GLIBC_DEFAULTS")) kernels::keep_freed_memory();  // as attnviz's main does
    Arch arch = arch_named(arch_name);
    if (!dtype.empty()) arch.bf16 = dtype == "bf16";
    if (dir.empty()) dir = "/tmp/attn_bench_" + (arch.name == "gpt2_small" ? std::string("gpt2") : arch.name) + (arch.bf16 ? "_bf16" : "");
    std::filesystem::create_directories(dir);
    const std::string path = gguf.empty() ? dir + "/model.safetensors" : gguf;
    double t0 = now_s();
    if (gguf.empty() && (!keep || !std::filesystem::exists(path))) write_checkpoint(path, arch);
    const double write_s = now_s() - t0;
    if (gguf.empty()) std::ofstream(dir + "/config.json") << arch.config;  // a model folder: bench/ort/export_model.py, bench/ort_web.mjs
    const double rss_before_load = peak_rss_mb();

    t0 = now_s();
    Model model;
    double read_s = 0;  // wasm reads the file whole (as the page hands it over); natively a map
    if (!gguf.empty()) {  // a GGUF file (bench/gguf_llama_cpp.py writes them): its weights kept quantized
        model = load_model(ModelFiles::from_gguf(gguf)).model;
        arch.name = "gguf", arch.vocab = model.config.vocab_size, keep = true;
    } else {
        auto bytes = FileBytes::map(path, arch.name + "/model.safetensors");
        read_s = now_s() - t0;
        model = load_model_weights(read_config(arch.config, arch.name + "/config.json"), bytes, arch.name + "/model.safetensors");
    }
    const double load_s = now_s() - t0;
    const double rss_after_load = peak_rss_mb();

    std::vector<int> ids(T);
    for (int t = 0; t < T; ++t) ids[t] = (t * 7919 + 13) % arch.vocab;
    kernels::Pool pool(threads);
    kernels::Context ctx(kernels::best_isa(), &pool);
    ctx.product_parts = product_parts;
    if (spin_us >= 0) pool.set_spin_us(spin_us);
    std::vector<double> times;
    double best = 1e30, embed = 0, attention = 0, mlp = 0, head = 0;
    kernels::PoolTimes jobs;  // the fastest forward's
    RunResult last;
    for (int r = 0; r < reps; ++r) {
        Forward f(model, {ids, {}, {}, keep_maps});
        pool.set_timing(threads > 1);
        double e = 0, a = 0, m = 0, h = 0;
        const double start = now_s();
        for (int step = 0; !f.done(); ++step) {
            const double s0 = now_s();
            f.step(ctx);
            const double dt = now_s() - s0;
            if (step == 0) e += dt;
            else if (f.done()) h += dt;
            else if (step % 2 == 1) a += dt;
            else m += dt;
        }
        const double total = now_s() - start;
        RunResult res = f.take();
        if (res.logits.size() != static_cast<std::size_t>(arch.vocab) || !std::isfinite(res.logits[0]))
            return std::fprintf(stderr, "bad logits\n"), 1;
        times.push_back(total);
        if (total < best) best = total, embed = e, attention = a, mlp = m, head = h, jobs = pool.times();
        if (r + 1 == reps) last = std::move(res);
    }
    std::sort(times.begin(), times.end());
    const double weights_mb = model.weight_bytes() / 1048576.0, rss = peak_rss_mb();
    std::printf("RESULT bench=%s dtype=%s isa=%s threads=%d T=%d reps=%d forward_min_ms=%.1f forward_median_ms=%.1f\n",
                arch.name.c_str(), arch.bf16 ? "bf16" : "f32", kernels::isa_name(ctx.isa), pool.threads(), T, reps, best * 1e3,
                times[times.size() / 2] * 1e3);
    std::printf("RESULT steps_ms embeddings=%.2f attention=%.1f mlp=%.1f lm_head=%.1f\n", embed * 1e3, attention * 1e3,
                mlp * 1e3, head * 1e3);
    if (threads > 1)  // the pool's jobs in the fastest forward (Pool::set_timing); serial: the rest of it
        std::printf("RESULT pool product_parts=%d spin_us=%d jobs=%lld parts=%lld wall_ms=%.1f busy_ms=%.1f longest_ms=%.1f "
                    "serial_ms=%.1f\n", product_parts, spin_us, jobs.jobs, jobs.parts, jobs.wall_s * 1e3, jobs.busy_s * 1e3,
                    jobs.longest_s * 1e3, (best - jobs.wall_s) * 1e3);
    std::printf("RESULT read_s=%.3f convert_s=%.3f\n", read_s, load_s - read_s);
    std::printf("RESULT load_s=%.3f write_s=%.2f parameters=%lld weights_mb=%.1f activation_mb_estimate=%.1f\n", load_s,
                write_s, static_cast<long long>(model.parameters()), weights_mb, model.activation_bytes(T, keep_maps) / 1048576.0);
    std::printf("RESULT peak_rss_mb=%.1f (before load %.1f, after load %.1f) peak_rss_over_weights=%.3f\n", rss,
                rss_before_load, rss_after_load, rss / weights_mb);
    std::printf("RESULT maps=%s peak_over_weights_mb=%.1f formula_mb=%.1f kept_mb=%.1f\n", keep_maps ? "kept" : "demand",
                rss - weights_mb, model.activation_bytes(T, keep_maps) / 1048576.0, kept_bytes(last) / 1048576.0);
    if (!keep_maps) {  // a head in the middle of the model: its whole map pooled, and an exact zoom
        const KeptHeads& k = last.stacks.front().layers[last.stacks.front().layers.size() / 2].kept;
        double pooled = 1e30, zoom = 0.0;
        for (int r = 0; r < reps; ++r) {
            double s0 = now_s();
            const PooledMap p = map_pooled(ctx, k, k.heads / 2, whole_map(k), 1024, 1024);
            pooled = std::min(pooled, now_s() - s0);
            s0 = now_s();
            const Matrix z = map_region(ctx, k, k.heads / 2, {T / 2, T / 2 + std::min(64, T / 2), T / 4, T / 4 + std::min(64, T / 4)});
            const double dt = now_s() - s0;
            zoom = r == 0 ? dt : std::min(zoom, dt);
            if (!std::isfinite(p.values.sum() + z.sum())) return std::fprintf(stderr, "bad map\n"), 1;
        }
        std::printf("RESULT map_pooled_1024_ms=%.1f zoom_64_ms=%.3f\n", pooled * 1e3, zoom * 1e3);
        {  // what the forward added for it: every block's value norms (value_norms, each head on one thread)
            const ModelConfig& c = model.config;
            const Matrix v = Matrix::Random(T, c.d_head()), w = Matrix::Random(c.d_head(), c.d_model);
            const double s0 = now_s();
            float sink = 0;
            for (int h = 0; h < c.n_heads; ++h) sink += value_norms(v, w).sum();
            const double per_layer = now_s() - s0;
            std::printf("RESULT value_norms_ms=%.1f (every layer: %d x %.1f ms, one thread) check=%g\n", per_layer * c.n_layers * 1e3,
                        c.n_layers, per_layer * 1e3, static_cast<double>(sink));
        }
        auto run = std::make_shared<LiveRun>();
        run->input.keep_maps = false, run->result = std::move(last);
        const RowSource rows = run_rows(run, 0);
        // on one thread, then on the run's threads (a head a part, as the view runs it)
        for (kernels::Pool* threads : {static_cast<kernels::Pool*>(nullptr), ctx.pool}) {
            RolloutRow rollout;
            const double s0 = now_s();
            rollout.start(rows, rows.layers - 1, T - 1, 0, threads);
            while (!rollout.step(1e30)) {}
            std::printf("RESULT rollout_row_s=%.2f threads=%d layers=%d rollout_row_sum=%.6f\n", now_s() - s0,
                        threads ? threads->threads() : 1, rows.layers, static_cast<double>(rollout.row().sum()));
        }
    }
    if (why) {
        RunInput clean{ids, {}};
        clean.record = true;
        double lens_ms = 1e30, attribution_ms = 1e30, record_ms = 1e30;
        for (int r = 0; r < reps; ++r) {
            double s0 = now_s();
            const RunResult run = forward(ctx, model, clean);
            record_ms = std::min(record_ms, (now_s() - s0) * 1e3);
            s0 = now_s();
            const Lens lens = logit_lens(ctx, model, run);
            lens_ms = std::min(lens_ms, (now_s() - s0) * 1e3);
            s0 = now_s();
            const Attribution a = attribute(ctx, model, run, lens.at(lens.layers - 1, T - 1).target);
            attribution_ms = std::min(attribution_ms, (now_s() - s0) * 1e3);
            if (!std::isfinite(a.total)) return std::fprintf(stderr, "bad attribution\n"), 1;
        }
        std::vector<int> other = ids;
        for (int t = 1; t < T; t += 2) other[t] = (other[t] + 1) % arch.vocab;
        const double s0 = now_s();
        PatchingRun patch(model, {ids, {}}, {other, {}}, 1, 2, "bench");
        int steps = 0;
        double heads_s = 0;  // when the first stream row's job starts: the heads are done
        const int L = model.config.n_layers, H = model.config.n_heads;
        const double heads_part = (2.0 * (2 * L + 2) + static_cast<double>(H) * L * (L + 2)) /
                                  (2.0 * (2 * L + 2) + static_cast<double>(H) * L * (L + 2) + static_cast<double>(T) * (L + 1) * (L + 1));
        while (!patch.done()) {
            patch.step(ctx), ++steps;
            if (heads_s == 0 && patch.progress() >= heads_part - 1e-9) heads_s = now_s() - s0;
        }
        const double patch_s = now_s() - s0;
        const Patching p = patch.take();
        if (p.resid_at(L, T - 1) != 1.0) return std::fprintf(stderr, "bad patching\n"), 1;
        std::printf("RESULT why T=%d recorded_forward_ms=%.1f lens_ms=%.1f attribution_ms=%.2f patching_s=%.2f patching_heads_s=%.2f "
                    "(%d x %d heads, %d x %d stream rows, %d sub-blocks)\n",
                    T, record_ms, lens_ms, attribution_ms, patch_s, heads_s, L, H, L + 1, T, steps);
    }
    if (!keep) std::filesystem::remove(path);
    return 0;
}
