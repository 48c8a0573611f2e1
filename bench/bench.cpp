// bench.cpp: multi-head attention timings, natively and as wasm under node (bench/run.sh runs
// every build and bench/report.py prints the ratios; docs/BENCHMARKS.md has the results).
//
// Workload (the issue's): d_model 512, 8 heads (d_k 64), T_q = T_k = T, projections included.
//   self:   x_q = x_kv, no mask          masked: self with the causal mask
//   cross:  x_kv a different T×d_model matrix
// Modes, each on its own line:
//   "weights" at every T: multi_head_attention_weights, heads one by one in one T×T weights
//             buffer, the output projected; what PyTorch's nn.MultiheadAttention returns
//             (per-head weights and the output), so the one compared with it
//   "trace"   up to --max-trace-T (default 2048): multi_head_attention, every intermediate
//             kept (per head q, k, v, scores, scaled, weights, output), what the app keeps for
//             T ≤ 1024 (at T = 8192 one trace matrix type would be 2 GB)
// GFLOP counts the dense work: 4 projections 8·T·d_model² + QKᵀ and ·V 4·T²·d_model; the causal
// mask skips part of it, so "masked" GFLOP/s is an effective rate.
//
// Output: one line per measurement, "RESULT key=value ...", read by bench/report.py. ms is the
// median CPU time (user + system) of the run, wall_ms the median wall time.
//   attn_bench [--T 128,512,2048,8192] [--kinds self,masked,cross] [--isa scalar|sse2|avx2+fma|wasm-simd128]
//              [--build NAME] [--max-trace-T 2048] [--max-T N] [--reps N]
#include "attention.hpp"
#include "kernels.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#ifdef __EMSCRIPTEN__
#include <emscripten.h>
#else
#include <time.h>
#endif

using namespace attn;

namespace {

constexpr int kDModel = 512, kHeads = 8;

std::vector<std::string> split(const std::string& s) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start <= s.size()) {
        const size_t comma = s.find(',', start);
        out.push_back(s.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return out;
}

Matrix random_matrix(std::uint64_t seed, int rows, int cols) {
    Matrix m(rows, cols);
    std::uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (Eigen::Index i = 0; i < m.size(); ++i) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        m.data()[i] = static_cast<float>(s >> 40) * (1.0f / 8388608.0f) - 1.0f;
    }
    return m;
}

double wall_ms() {
    using namespace std::chrono;
    return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

// CPU time, user + system: the machine may be shared, and every run here is single-threaded.
// Natively the thread's own time; in wasm node's process.cpuUsage() (the process also runs
// V8's compiler and GC threads, mostly idle once the code is warm).
double cpu_ms() {
#ifdef __EMSCRIPTEN__
    return EM_ASM_DOUBLE({
        const u = process.cpuUsage();
        return (u.user + u.system) / 1000;
    });
#else
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
#endif
}

struct Timing {
    double cpu, wall;  // medians, ms
};

template <class F>
Timing median_ms(int reps, F run) {
    // Untimed warm-up of at least 50 ms: a first call pays for page faults and cold caches
    // (bench/run.sh runs node with --no-liftoff, so wasm is optimized from the start).
    // Single-repetition runs (T = 8192) take seconds; their start is a small part of them.
    if (reps > 1)
        for (const double w0 = wall_ms(); wall_ms() - w0 < 50.0;) run();
    std::vector<double> cpu, wall;
    for (int r = 0; r < reps; ++r) {
        const double c0 = cpu_ms(), w0 = wall_ms();
        run();
        cpu.push_back(cpu_ms() - c0), wall.push_back(wall_ms() - w0);
    }
    std::sort(cpu.begin(), cpu.end());
    std::sort(wall.begin(), wall.end());
    return {cpu[cpu.size() / 2], wall[wall.size() / 2]};
}

int default_reps(int T) { return T <= 128 ? 21 : T <= 512 ? 7 : T <= 2048 ? 3 : 1; }

}  // namespace

int main(int argc, char** argv) {
    std::vector<int> Ts = {128, 512, 2048, 8192};
    std::vector<std::string> kinds = {"self", "masked", "cross"};
    std::string build = "native", isa_arg;
    int max_trace_T = 2048, max_T = 1 << 30, reps_arg = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string key = argv[i], value = argv[i + 1];
        if (key == "--T") {
            Ts.clear();
            for (const auto& t : split(value)) Ts.push_back(std::atoi(t.c_str()));
        } else if (key == "--kinds") kinds = split(value);
        else if (key == "--build") build = value;
        else if (key == "--isa") isa_arg = value;
        else if (key == "--max-trace-T") max_trace_T = std::atoi(value.c_str());
        else if (key == "--max-T") max_T = std::atoi(value.c_str());
        else if (key == "--reps") reps_arg = std::atoi(value.c_str());
        else {
            std::fprintf(stderr, "attn_bench: unknown option %s\n", key.c_str());
            return 2;
        }
    }
    // The instruction set of every measurement, and below the Context that holds it for the
    // attention calls with the kernels' memory, kept from one run to the next as a caller that
    // computes many times keeps it.
    kernels::Isa kernel_isa = kernels::best_isa();
    if (!isa_arg.empty()) {
        bool found = false;
        for (kernels::Isa i : kernels::available_isas())
            if (isa_arg == kernels::isa_name(i)) kernel_isa = i, found = true;
        if (!found) {
            std::fprintf(stderr, "attn_bench: instruction set %s not available\n", isa_arg.c_str());
            return 2;
        }
    }
    const char* isa = kernels::isa_name(kernel_isa);
    kernels::Context ctx(kernel_isa);
    std::printf("# attn_bench build=%s kernels=%s d_model=%d heads=%d\n", build.c_str(), isa, kDModel, kHeads);
    std::fflush(stdout);

    // Softmax alone, ns per element: rows of 2048 scores, 16 rows at a time so that they stay
    // in cache as in the fused head (no mask; causal per allowed element), weights written,
    // scaled not. 64 such blocks per repetition.
    {
        const int T = 2048, rows = 16, blocks = 64;
        const Matrix s = random_matrix(99, rows, T) * 8.0f;
        Matrix w(rows, T);
        MaskSpec spec;
        spec.causal = true;
        const MaskMatrix causal = combine_masks(spec, T, T);
        const auto spans = kernels::row_spans(causal.data(), T, T);
        const int reps = reps_arg ? reps_arg : 5;
        const double dense = median_ms(reps, [&] {
            for (int b = 0; b < blocks; ++b)
                kernels::softmax_rows(kernel_isa, s.data(), 0.125f, nullptr, nullptr, rows, T, nullptr, w.data(),
                                      nullptr);
        }).cpu;
        // Causal: the rows of the block at i0 = 1024 (about half of each row allowed).
        const int i0 = 1024;
        const double masked = median_ms(reps, [&] {
            for (int b = 0; b < blocks; ++b)
                kernels::softmax_rows(kernel_isa, s.data(), 0.125f, causal.data() + i0 * T, spans.data() + i0, rows,
                                      T, nullptr, w.data(), nullptr);
        }).cpu;
        double allowed = 0;
        for (int r = 0; r < rows; ++r) allowed += spans[i0 + r].hi - spans[i0 + r].lo;
        std::printf("SOFTMAX build=%s isa=%s T=%d ns_per_element=%.3f causal_ns_per_allowed_element=%.3f\n",
                    build.c_str(), isa, T, dense * 1e6 / (double(blocks) * rows * T),
                    masked * 1e6 / (blocks * allowed));
        std::fflush(stdout);
    }

    const Weights weights = Weights::random(1, kDModel);
    for (int T : Ts) {
        if (T > max_T) {
            std::printf("# T=%d skipped (--max-T %d)\n", T, max_T);
            continue;
        }
        const Matrix x = random_matrix(2, T, kDModel), x_kv = random_matrix(3, T, kDModel);
        for (const std::string& kind : kinds) {
            AttentionOptions options;
            options.n_heads = kHeads;
            options.mask.causal = kind == "masked";
            const Matrix& kv = kind == "cross" ? x_kv : x;
            const int reps = reps_arg ? reps_arg : default_reps(T);
            for (const bool trace : {false, true}) {
                if (trace && T > max_trace_T) continue;
                const auto run = [&] {
                    return trace ? multi_head_attention(ctx, x, kv, weights, options).output(0, 0)
                                 : multi_head_attention_weights(ctx, x, kv, weights, options)(0, 0);
                };
                float checksum = 0;
                if (T <= 512) checksum += run();  // warm-up: page in the allocator's memory and the code
                const Timing t = median_ms(reps, [&] { checksum += run(); });
                const double gflop = (8.0 * T * kDModel * kDModel + 4.0 * T * double(T) * kDModel) * 1e-9;
                std::printf("RESULT build=%s isa=%s kind=%s T=%d mode=%s reps=%d ms=%.3f wall_ms=%.3f gflops=%.2f "
                            "checksum=%.4g\n",
                            build.c_str(), isa, kind.c_str(), T, trace ? "trace" : "weights", reps, t.cpu, t.wall,
                            gflop / (t.cpu * 1e-3), checksum);
                std::fflush(stdout);
            }
        }
    }
    return 0;
}
