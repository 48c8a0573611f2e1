#!/usr/bin/env bash
# Benchmark, run by hand (never a test): native and wasm, SIMD and scalar builds, and PyTorch
# when /usr/bin/python3 has it, on this machine, then the table with the ratios and targets.
#   bash bench/run.sh                 T = 128, 512, 2048, 8192 (a few minutes)
#   T=128,512 bash bench/run.sh       a quick look
# Build dirs: build-bench, build-bench-scalar (-DATTN_SIMD=OFF), build-bench-wasm{,-scalar}.
# Modes: "weights" (as PyTorch) at every T, "trace" (every intermediate) up to T = 2048.
# Scalar builds stop at T = 2048 and keep the trace mode to T = 512 (the rest would take many
# minutes). Output: build-bench/results.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
export NODE_PATH=/usr/share/nodejs
Ts=${T:-128,512,2048,8192}
jobs=${JOBS:-2}
out=build-bench/results.txt
: > "$out"

build() {  # build DIR [emcmake] CMAKE-ARGS...
    local dir=$1; shift
    local wrap=()
    if [ "${1:-}" = emcmake ]; then wrap=(emcmake); shift; fi
    "${wrap[@]}" cmake -S . -B "$dir" -DATTN_APP=OFF -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
    cmake --build "$dir" -j "$jobs" --target attn_bench >/dev/null
}

build build-bench
build build-bench-scalar -DATTN_SIMD=OFF
build build-bench-wasm emcmake
build build-bench-wasm-scalar emcmake -DATTN_SIMD=OFF

{
    echo "# machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, $(uname -sr), node $(node --version)"
    echo "# load before the run: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee -a "$out"
build-bench/attn_bench --build native --T "$Ts" | tee -a "$out"
build-bench-scalar/attn_bench --build native-scalar --T "$Ts" --max-T 2048 --max-trace-T 512 | tee -a "$out"
# --no-liftoff: V8 first runs wasm from its baseline compiler (Liftoff) and swaps in optimized
# code while it runs; a page that stays open runs the optimized code, and the swap's timing made
# short measurements (the softmax: 2.2 to 6.7 ns per element) depend on when it happened.
node --no-experimental-fetch --no-liftoff build-bench-wasm/attn_bench.js --build wasm --T "$Ts" | tee -a "$out"
node --no-experimental-fetch --no-liftoff build-bench-wasm-scalar/attn_bench.js --build wasm-scalar --T "$Ts" --max-T 2048 --max-trace-T 512 \
    | tee -a "$out"
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
    /usr/bin/python3 bench/torch_ref.py --T "$Ts" | tee -a "$out"
else
    echo "# PyTorch: skipped (no torch for /usr/bin/python3; apt-get install python3-torch)" | tee -a "$out"
fi
echo "# load after the run: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out"
/usr/bin/python3 bench/report.py "$out"
