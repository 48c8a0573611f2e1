// bench_import.cpp: how long read_import takes on a BERT-base-sized file, natively and as wasm
// under node (docs/IMPORT.md has the results). Run by hand, never a test:
//   cmake --build build --target attn_bench_import && build/attn_bench_import
//   cmake --build build-web --target attn_bench_import && node --no-experimental-fetch build-web/attn_bench_import.js
//
// The file is made in memory: 12 layers × 12 heads × 256×256 softmax rows (9.4M numbers),
// written twice: numbers to 6 significant digits (what scripts/export_attention.py writes)
// and to 17 (what json.dumps(tensor.tolist()) writes). Prints the median and the fastest wall
// time of reps, and the median CPU time.
//   attn_bench_import [--layers 12] [--heads 12] [--T 256] [--reps 3]
#include "import.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

using namespace attn;

namespace {

std::string make_file(int layers, int heads, int T, int digits) {
    std::mt19937 rng(1);
    std::normal_distribution<double> normal(0.0, 2.0);
    std::string s = "{\"tokens\": [";
    for (int t = 0; t < T; ++t) s += (t ? ", \"tok" : "\"tok") + std::to_string(t) + "\"";
    s += "], \"attention\": [";
    std::vector<double> row(static_cast<size_t>(T));
    char buffer[40];
    for (int l = 0; l < layers; ++l) {
        s += l ? ", [" : "[";
        for (int h = 0; h < heads; ++h) {
            s += h ? ", [" : "[";
            for (int q = 0; q < T; ++q) {
                double sum = 0;
                for (double& x : row) sum += x = std::exp(normal(rng));
                s += q ? ", [" : "[";
                for (int k = 0; k < T; ++k) {
                    std::snprintf(buffer, sizeof buffer, "%s%.*g", k ? ", " : "", digits, row[static_cast<size_t>(k)] / sum);
                    s += buffer;
                }
                s += "]";
            }
            s += "]";
        }
        s += "]";
    }
    return s + "]}";
}

}  // namespace

int main(int argc, char** argv) {
    int layers = 12, heads = 12, T = 256, reps = 3;
    for (int i = 1; i + 1 < argc; i += 2) {
        const int v = std::atoi(argv[i + 1]);
        if (!std::strcmp(argv[i], "--layers")) layers = v;
        else if (!std::strcmp(argv[i], "--heads")) heads = v;
        else if (!std::strcmp(argv[i], "--T")) T = v;
        else if (!std::strcmp(argv[i], "--reps")) reps = v;
    }
    for (int digits : {6, 17}) {
        const std::string text = make_file(layers, heads, T, digits);
        std::vector<double> ms, cpu_ms;
        size_t maps = 0;
        for (int r = 0; r < reps; ++r) {
            const auto start = std::chrono::steady_clock::now();
            const std::clock_t cpu_start = std::clock();
            const ImportedAttention a = read_import(text);
            cpu_ms.push_back(1e3 * static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC);
            ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
            maps = a.stacks[0].maps.size();
        }
        std::sort(ms.begin(), ms.end());
        std::sort(cpu_ms.begin(), cpu_ms.end());
        const double median = ms[ms.size() / 2];
        // cpu_ms: the process's CPU time (natively; Emscripten's clock() is wall time), less
        // disturbed than wall time when other work shares the cores.
        std::printf("RESULT layers=%d heads=%d T=%d numbers=%lld digits=%d bytes=%zu maps=%zu ms=%.0f cpu_ms=%.0f "
                    "min_ms=%.0f MB_per_s=%.1f\n",
                    layers, heads, T, static_cast<long long>(layers) * heads * T * T, digits, text.size(), maps,
                    median, cpu_ms[cpu_ms.size() / 2], ms.front(), text.size() / 1e6 / (median / 1e3));
    }
}
