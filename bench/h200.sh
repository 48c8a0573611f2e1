#!/bin/bash
# h200.sh: the checks and numbers that need the H200 host (16 cores, a GPU, transformers 5.17,
# torch 2.11; ../shared/TOOLCHAIN.md), in one run that fits a session's device time (about
# 5 minutes). Run there from the repository root, with what was built here carried:
#   build/attn_bench_model   (cmake --build build --target attn_bench_model)
#   build/vision-refs        (/usr/bin/python3 tests/model/make_vision_models.py build/vision-refs)
# and OUT set to a folder for what comes back: log (everything below) and vision.tar.gz
# (tests/model/transformers_vision.py's records, kept in tests/model/transformers5-vision/).
#   1. tests/serve/test_serve_transformers.py on the GPU: attnviz.serve() on transformers' own
#      Llama, Qwen3, Gemma 2 and Gemma 3 (issue 51)
#   2. transformers' own vision classes as the second oracle of the vision runtime (issue 50)
#   3. bench/serve_region.py on the GPU: a served head's 8192² map pooled to 1024² (issue 51)
#   4. threads: SmolLM2-135M's shape (BF16) at T = 128 and 512 on 1, 2, 4, 8 and 16 threads,
#      attnviz against PyTorch (bench_model_torch.py, the same threads); T = 8192 on 16 threads
#      with the maps on demand against scaled_dot_product_attention (issue 47)
#   5. where 16 threads' time goes: the cores' layout (lscpu -e), the pool's jobs (RESULT pool:
#      wall, the parts' busy time, the longest parts, the serial rest) on 8 and 16 threads
#      against one thread's time; on 16, with 2 parts a thread per product and a 1000 µs spin,
#      with glibc's malloc asking for huge pages, and with the maps on demand
#   6. after the kept maps stay in the process from run to run (kernels::keep_freed_memory's
#      1 GB): threads 1-16 at T = 128 and 512 against PyTorch again, the maps kept and on demand
#      (7 minutes)
#   7. whether a part's slowdown beside 15 others is the machine's: 1, 8 and 16 copies of a
#      one-thread run side by side, each copy's time against one alone (30 s)
# `bench/h200.sh 5` runs section 5 alone (and the machine's line); no argument runs them all.
set -u
SECTIONS=${1:-1234567}
OUT=${OUT:-/tmp/h200}
mkdir -p "$OUT"
exec > >(tee "$OUT/log") 2>&1
export PYTHONUNBUFFERED=1
step() { echo; echo "=== $* ($(date -u +%T))"; }

want() { [[ $SECTIONS == *$1* ]]; }

step machine
nproc; lscpu | grep -E "Model name|Flags" | cut -c1-200; nvidia-smi -L; python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__, 'threads', torch.get_num_threads())"

want 1 && step "1. serve on transformers' classes" && timeout 240 python3 tests/serve/test_serve_transformers.py cuda

want 2 && step "2. vision records" && timeout 150 python3 tests/model/transformers_vision.py make build/vision-refs /tmp/vision &&
    tar -czf "$OUT/vision.tar.gz" -C /tmp vision

want 3 && step "3. a served map on the GPU" && timeout 150 python3 bench/serve_region.py 8192 5 cuda

want 4 && step "4. threads" && for T in 128 512; do
    for t in 1 2 4 8 16; do
        timeout 60 build/attn_bench_model --arch smollm2 --dtype bf16 --T $T --reps $((T == 128 ? 5 : 3)) --threads $t --keep | grep -E "bench=|steps_ms"
        timeout 60 python3 bench/bench_model_torch.py --arch smollm2 --T $T --reps $((T == 128 ? 5 : 3)) --threads $t | grep RESULT
    done
done
want 4 && timeout 120 build/attn_bench_model --arch smollm2 --dtype bf16 --T 8192 --reps 1 --threads 16 --keep | grep RESULT
want 4 && timeout 120 python3 bench/bench_model_torch.py --arch smollm2 --T 8192 --reps 1 --threads 16 --maps none | grep RESULT

want 5 && step "5. where 16 threads' time goes" && lscpu -e | head -3 && cat /sys/kernel/mm/transparent_hugepage/enabled &&
    for T in 512 128; do
    b="build/attn_bench_model --arch smollm2 --dtype bf16 --T $T --keep"
    timeout 60 $b --reps 3 --threads 1 | grep -E "bench=|steps_ms"
    for t in 8 16; do timeout 60 $b --reps 5 --threads $t | grep -E "bench=|steps_ms|pool"; done
    echo "-- 16 threads, 2 parts a product per thread, spin 1000 us"
    timeout 60 $b --reps 5 --threads 16 --product-parts 2 --spin-us 1000 | grep -E "bench=|steps_ms|pool"
    echo "-- 16 threads, glibc's malloc asking for huge pages (the kept maps' page faults)"
    GLIBC_TUNABLES=glibc.malloc.hugetlb=1 timeout 60 $b --reps 5 --threads 16 | grep -E "bench=|steps_ms|pool"
    echo "-- 16 threads, maps on demand (no map kept: no page faults for them)"
    timeout 60 $b --reps 5 --threads 16 --maps demand | grep -E "bench=|steps_ms|pool"
    for t in 1 16; do
        timeout 60 python3 bench/bench_model_torch.py --arch smollm2 --T $T --reps 3 --threads $t | grep RESULT
    done
done
want 6 && step "6. threads, the maps' memory kept from run to run" &&
    lscpu | grep -E "Thread|Core|Socket|NUMA node\(|MHz" && for T in 512 128; do
    for t in 1 2 4 8 16; do
        timeout 60 build/attn_bench_model --arch smollm2 --dtype bf16 --T $T --reps 5 --threads $t --keep | grep -E "bench=|pool"
        timeout 60 python3 bench/bench_model_torch.py --arch smollm2 --T $T --reps 5 --threads $t | grep RESULT
    done
    for t in 1 16; do
        echo "-- maps on demand, $t threads"
        timeout 60 build/attn_bench_model --arch smollm2 --dtype bf16 --T $T --reps 5 --threads $t --keep --maps demand | grep -E "bench="
    done
done
want 7 && step "7. one thread's run in copies side by side" && for copies in 1 8 16; do
    echo "-- $copies copies of one thread's run side by side, T = 128"
    for c in $(seq $copies); do
        timeout 60 build/attn_bench_model --arch smollm2 --dtype bf16 --T 128 --reps 5 --threads 1 --keep | grep -E "bench=" &
    done
    wait
done
step done
