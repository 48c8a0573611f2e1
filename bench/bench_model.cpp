// bench_model.cpp: GPT-2 small (12 layers, d_model 768, 12 heads, vocab 50257, 1024 positions)
// with random weights, through the real loader and the real forward pass, on one core.
//
//   1. writes /tmp/attn_bench_gpt2/model.safetensors, F32, ~500 MB, one tensor at a time
//      (the writer never holds more than one tensor)
//   2. loads it (FileBytes::map + ModelLoader, its pages given back as they are converted)
//   3. times forward() at T (default 128), min and median of --reps runs, and the time per kind
//      of step (embeddings, attention blocks, MLP blocks, the LM head) in the fastest run
//   4. peak RSS (getrusage ru_maxrss) against the F32 weights' bytes
// Output: "RESULT key=value …" lines. bench/bench_model_torch.py is PyTorch's peer.
//   attn_bench_model [--T 128] [--reps 5] [--dir /tmp/attn_bench_gpt2] [--keep]
#include "transformer.hpp"

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

std::int64_t elements(const Entry& e) {
    std::int64_t n = 1;
    for (std::int64_t s : e.shape) n *= s;
    return n;
}

// Streams the file: the header, then each tensor's random floats (xorshift, uniform).
void write_checkpoint(const std::string& path) {
    const std::vector<Entry> entries = gpt2_small();
    std::string header = "{\"__metadata__\":{\"format\":\"pt\"}";  // as torch writes it
    std::int64_t offset = 0;
    for (const Entry& e : entries) {
        std::string shape;
        for (std::size_t i = 0; i < e.shape.size(); ++i) shape += (i ? "," : "") + std::to_string(e.shape[i]);
        const std::int64_t end = offset + 4 * elements(e);
        header += ",\"" + e.name + "\":{\"dtype\":\"F32\",\"shape\":[" + shape +
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
        out.write(reinterpret_cast<const char*>(buf.data()), static_cast<std::streamsize>(buf.size() * 4));
    }
    buf = {};
    if (!out) std::fprintf(stderr, "cannot write %s\n", path.c_str()), std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
    int T = 128, reps = 5;
    std::string dir = "/tmp/attn_bench_gpt2";
    bool keep = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--T" && i + 1 < argc) T = std::atoi(argv[++i]);
        else if (a == "--reps" && i + 1 < argc) reps = std::atoi(argv[++i]);
        else if (a == "--dir" && i + 1 < argc) dir = argv[++i];
        else if (a == "--keep") keep = true;
        else return std::fprintf(stderr, "usage: attn_bench_model [--T 128] [--reps 5] [--dir DIR] [--keep]\n"), 2;
    }
    std::filesystem::create_directories(dir);
    const std::string path = dir + "/model.safetensors";
    double t0 = now_s();
    if (!keep || !std::filesystem::exists(path)) write_checkpoint(path);
    const double write_s = now_s() - t0;
    const double rss_before_load = peak_rss_mb();

    const std::string config = "{\"model_type\":\"gpt2\",\"vocab_size\":50257,\"n_embd\":768,\"n_layer\":12,\"n_head\":12,"
                               "\"n_positions\":1024,\"n_inner\":null,\"activation_function\":\"gelu_new\"}";
    t0 = now_s();
    Model model;
    double read_s = 0;  // wasm reads the file whole (as the page hands it over); natively a map
    {
        auto bytes = FileBytes::map(path, "gpt2/model.safetensors");
        read_s = now_s() - t0;
        model = load_model_weights(read_config(config, "gpt2/config.json"), bytes, "gpt2/model.safetensors");
    }
    const double load_s = now_s() - t0;
    const double rss_after_load = peak_rss_mb();

    std::vector<int> ids(T);
    for (int t = 0; t < T; ++t) ids[t] = (t * 7919 + 13) % kVocab;
    kernels::Context ctx;
    std::vector<double> times;
    double best = 1e30, embed = 0, attention = 0, mlp = 0, head = 0;
    for (int r = 0; r < reps; ++r) {
        Forward f(model, {ids, {}});
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
        if (res.logits.size() != static_cast<std::size_t>(kVocab) || !std::isfinite(res.logits[0]))
            return std::fprintf(stderr, "bad logits\n"), 1;
        times.push_back(total);
        if (total < best) best = total, embed = e, attention = a, mlp = m, head = h;
    }
    std::sort(times.begin(), times.end());
    const double weights_mb = model.weight_bytes() / 1048576.0, rss = peak_rss_mb();
    std::printf("RESULT bench=gpt2_small isa=%s T=%d reps=%d forward_min_ms=%.1f forward_median_ms=%.1f\n",
                kernels::isa_name(ctx.isa), T, reps, best * 1e3, times[times.size() / 2] * 1e3);
    std::printf("RESULT steps_ms embeddings=%.2f attention=%.1f mlp=%.1f lm_head=%.1f\n", embed * 1e3, attention * 1e3,
                mlp * 1e3, head * 1e3);
    std::printf("RESULT read_s=%.3f convert_s=%.3f\n", read_s, load_s - read_s);
    std::printf("RESULT load_s=%.3f write_s=%.2f parameters=%lld weights_mb=%.1f activation_mb_estimate=%.1f\n", load_s,
                write_s, static_cast<long long>(model.parameters()), weights_mb, model.activation_bytes(T) / 1048576.0);
    std::printf("RESULT peak_rss_mb=%.1f (before load %.1f, after load %.1f) peak_rss_over_weights=%.3f\n", rss,
                rss_before_load, rss_after_load, rss / weights_mb);
    if (!keep) std::filesystem::remove(path);
    return 0;
}
