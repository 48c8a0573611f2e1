// bench_open.cpp: the app's own path for an import file, without the GPU: open_file_text (the
// "import or scene" decision, read_import, the model view's state) and each of its steps alone,
// natively and as wasm under node. bench/import_e2e.mjs runs it beside the end-to-end times
// (docs/BENCHMARKS.md, "Opening a model's attention"). Run by hand, never a test:
//   cmake --build build --target attn_bench_open && build/attn_bench_open FILE.json [--reps 3]
//   node --no-experimental-fetch build-web/attn_bench_open.js FILE.json
// Prints one RESULT line: median wall times in ms (and the fastest of open_file_text).
#include "app_state.hpp"
#include "import_state.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace attn;

namespace {

template <class F>
double median_ms(int reps, F&& f) {
    std::vector<double> ms;
    for (int r = 0; r < reps; ++r) {
        const auto start = std::chrono::steady_clock::now();
        f();
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: attn_bench_open FILE.json [--reps N]\n");
        return 2;
    }
    const int reps = argc > 3 && !std::strcmp(argv[2], "--reps") ? std::max(1, std::atoi(argv[3])) : 3;
    std::string text;
    const double read_ms = median_ms(1, [&] { read_file(argv[1], text); });
    if (text.empty()) {
        std::fprintf(stderr, "%s: cannot read the file\n", argv[1]);
        return 2;
    }
    bool is_import = false;
    const double decide_ms = median_ms(reps, [&] { is_import = file_kind(text) == FileKind::Import; });
    const double read_import_ms = median_ms(reps, [&] { (void)read_import(text); });
    std::string error;
    const double open_ms = median_ms(reps, [&] {
        AppState st;
        open_file_text(st, text, "bench.json");
        error = st.error;
    });
    std::printf("RESULT bytes=%zu import=%d read_file_ms=%.0f decide_ms=%.1f read_import_ms=%.0f open_file_text_ms=%.0f%s%s\n",
                text.size(), is_import, read_ms, decide_ms, read_import_ms, open_ms, error.empty() ? "" : " error=",
                error.c_str());
    return error.empty() ? 0 : 1;
}
