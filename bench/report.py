"""Reads bench/run.sh's RESULT and SOFTMAX lines and prints the table, the ratios and the
issue's targets: native no slower than PyTorch at every T; wasm SIMD >= 3x wasm scalar;
wasm <= 2.5x native; softmax in wasm <= 2.5 ns per element. The targets are checked on the
"weights" mode (what PyTorch computes: per-head weights and the output); the "trace" mode
(every intermediate kept, as the app does for T <= 1024) is reported beside it, its ratios
for information. Usage: report.py results.txt"""
import sys


def parse(path):
    results, softmax = {}, {}
    for line in open(path):
        words = line.split()
        if not words or words[0] not in ("RESULT", "SOFTMAX"):
            continue
        kv = dict(w.split("=", 1) for w in words[1:])
        if words[0] == "SOFTMAX":
            softmax[kv["build"]] = kv
        else:
            results[(kv["build"], kv["kind"], int(kv["T"]), kv["mode"])] = kv
    return results, softmax


def main():
    results, softmax = parse(sys.argv[1])
    builds = ["native", "native-scalar", "wasm", "wasm-scalar", "pytorch"]
    kinds = ["self", "masked", "cross"]
    keys = sorted({(k[1], k[2], k[3]) for k in results}, key=lambda k: (kinds.index(k[0]), k[1], k[2] != "weights"))
    ms = lambda b, kind, T, mode: float(results[(b, kind, T, mode)]["ms"]) if (b, kind, T, mode) in results else None
    print("\nms (median CPU time) and GFLOP/s; mode: weights = per-head weights and output (as PyTorch),"
          " trace = every intermediate kept")
    print(f"{'kind':7}{'T':>6} {'mode':8}" + "".join(f"{b:>22}" for b in builds))
    for kind, T, mode in keys:
        cells = []
        for b in builds:
            r = results.get((b, kind, T, mode))
            cells.append(f"{float(r['ms']):11.1f} ({float(r['gflops']):5.1f})" if r else f"{'-':>19}")
        print(f"{kind:7}{T:6d} {mode:8}" + "".join(f"{c:>22}" for c in cells))

    print("\nratios: SIMD speed-up over the scalar build (native, wasm); wasm time / native time;"
          " native time / PyTorch time (trace: for information, PyTorch keeps no trace)")
    print(f"{'kind':7}{'T':>6} {'mode':8}{'native simd/scalar':>20}{'wasm simd/scalar':>18}{'wasm/native':>13}"
          f"{'native/torch':>14}")
    fails, met = [], 0
    fmt = lambda v: f"{v:.2f}" if v is not None else "-"
    for kind, T, mode in keys:
        n, ns, w, ws = (ms(b, kind, T, mode) for b in builds[:4])
        p = ms("pytorch", kind, T, "weights")
        simd_native = ns / n if n and ns else None
        simd_wasm = ws / w if w and ws else None
        wasm_native = w / n if w and n else None
        native_torch = n / p if n and p else None
        print(f"{kind:7}{T:6d} {mode:8}{fmt(simd_native):>20}{fmt(simd_wasm):>18}{fmt(wasm_native):>13}"
              f"{fmt(native_torch):>14}")
        if mode != "weights":
            continue
        for value, bad, text in ((native_torch, lambda v: v > 1.0, "native slower than PyTorch"),
                                 (simd_wasm, lambda v: v < 3.0, "wasm SIMD < 3x wasm scalar"),
                                 (wasm_native, lambda v: v > 2.5, "wasm > 2.5x native")):
            if value is None:
                continue
            if bad(value):
                fails.append(f"{text}: {kind} T={T} ({value:.2f}x)")
            else:
                met += 1
    print("\nsoftmax alone, ns per element (rows of 2048 in cache; causal: per allowed element)")
    for b, kv in softmax.items():
        print(f"  {b:14} {kv['isa']:14} {float(kv['ns_per_element']):7.3f}  causal {float(kv['causal_ns_per_allowed_element']):7.3f}")
    if "wasm" in softmax:
        if float(softmax["wasm"]["ns_per_element"]) > 2.5:
            fails.append(f"softmax in wasm {float(softmax['wasm']['ns_per_element']):.2f} ns per element > 2.5")
        else:
            met += 1
    if not any(k[0] == "pytorch" for k in results):
        print("\nPyTorch: not run (apt-get install python3-torch), native-to-PyTorch target not checked")
    print(f"\ntargets (weights mode, and the wasm softmax): {met} met, {len(fails)} missed")
    for f in fails:
        print("  missed: " + f)


if __name__ == "__main__":
    main()
