"""PyTorch reference for bench/run.sh: nn.MultiheadAttention(512, 8), one thread, per-head
weights returned (need_weights=True, average_attn_weights=False), projections included.
Kinds as in bench.cpp: self, masked (causal attn_mask), cross. Prints RESULT lines; ms is the
median CPU time of the process (time.process_time), wall_ms the median wall time.

One thread means OpenBLAS's too: torch.set_num_threads(1) sets ATen's OpenMP threads only, and
Debian's OpenBLAS (pthreads) still ran its products on both cores; time.thread_time (used before)
then missed the second thread's work and showed OpenBLAS at 100-140 GFLOP/s on a core whose
single-thread rate is 65-70. OPENBLAS_NUM_THREADS must be set before OpenBLAS loads; the CPU time
of the whole process would show any thread left over."""
import argparse
import os
import time

os.environ["OPENBLAS_NUM_THREADS"] = "1"
os.environ["OMP_NUM_THREADS"] = "1"
import torch  # noqa: E402

D_MODEL, HEADS = 512, 8


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--T", default="128,512,2048,8192")
    parser.add_argument("--kinds", default="self,masked,cross")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(D_MODEL, HEADS, batch_first=True).eval()
    print(f"# torch {torch.__version__}, threads {torch.get_num_threads()}", flush=True)
    for T in [int(t) for t in args.T.split(",")]:
        x, x_kv = torch.rand(1, T, D_MODEL) * 2 - 1, torch.rand(1, T, D_MODEL) * 2 - 1
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)  # True = masked
        reps = 21 if T <= 128 else 7 if T <= 512 else 3 if T <= 2048 else 1
        for kind in args.kinds.split(","):
            kv = x_kv if kind == "cross" else x
            mask = causal if kind == "masked" else None

            def run():
                with torch.no_grad():
                    out, w = mha(x, kv, kv, attn_mask=mask, need_weights=True, average_attn_weights=False)
                return out, w

            if T <= 512:
                run()
            cpu, wall = [], []
            for _ in range(reps):
                c0, w0 = time.process_time(), time.perf_counter()
                out, w = run()
                cpu.append((time.process_time() - c0) * 1e3)
                wall.append((time.perf_counter() - w0) * 1e3)
                del out, w
            cpu.sort()
            wall.sort()
            ms = cpu[len(cpu) // 2]
            gflop = (8.0 * T * D_MODEL * D_MODEL + 4.0 * T * T * D_MODEL) * 1e-9
            print(f"RESULT build=pytorch isa=openblas kind={kind} T={T} mode=weights reps={reps} ms={ms:.3f} "
                  f"wall_ms={wall[len(wall) // 2]:.3f} gflops={gflop / (ms * 1e-3):.2f}", flush=True)


if __name__ == "__main__":
    main()
