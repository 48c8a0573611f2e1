"""Reads bench/run.sh's RESULT and SOFTMAX lines and prints the table, the ratios and the
issue's targets: native no slower than PyTorch at every T; wasm SIMD >= 3x wasm scalar;
wasm <= 2.5x native; softmax in wasm <= 2.5 ns per element. Usage: report.py results.txt"""
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
            results[(kv["build"], kv["kind"], int(kv["T"]))] = kv
    return results, softmax


def main():
    results, softmax = parse(sys.argv[1])
    builds = ["native", "native-scalar", "wasm", "wasm-scalar", "pytorch"]
    keys = sorted({(k[1], k[2]) for k in results}, key=lambda k: (["self", "masked", "cross"].index(k[0]), k[1]))
    ms = lambda b, kind, T: float(results[(b, kind, T)]["ms"]) if (b, kind, T) in results else None
    print("\nms (median CPU time) and GFLOP/s; mode: trace = every intermediate kept, weights = per-head weights only")
    print(f"{'kind':7}{'T':>6} {'mode':8}" + "".join(f"{b:>22}" for b in builds))
    for kind, T in keys:
        mode = results.get(("native", kind, T), {}).get("mode", "?")
        cells = []
        for b in builds:
            r = results.get((b, kind, T))
            cells.append(f"{float(r['ms']):11.1f} ({float(r['gflops']):5.1f})" if r else f"{'-':>19}")
        print(f"{kind:7}{T:6d} {mode:8}" + "".join(f"{c:>22}" for c in cells))

    print("\nratios: SIMD speed-up over the scalar build (native, wasm); wasm time / native time;"
          " native time / PyTorch time")
    print(f"{'kind':7}{'T':>6}{'native simd/scalar':>20}{'wasm simd/scalar':>18}{'wasm/native':>13}{'native/torch':>14}")
    fails = []
    fmt = lambda v: f"{v:.2f}" if v is not None else "-"
    for kind, T in keys:
        n, ns, w, ws, p = (ms(b, kind, T) for b in builds)
        simd_native = ns / n if n and ns else None
        simd_wasm = ws / w if w and ws else None
        wasm_native = w / n if w and n else None
        native_torch = n / p if n and p else None
        print(f"{kind:7}{T:6d}{fmt(simd_native):>20}{fmt(simd_wasm):>18}{fmt(wasm_native):>13}{fmt(native_torch):>14}")
        if native_torch is not None and native_torch > 1.0:
            fails.append(f"native slower than PyTorch: {kind} T={T} ({native_torch:.2f}x)")
        if simd_wasm is not None and simd_wasm < 3.0:
            fails.append(f"wasm SIMD < 3x wasm scalar: {kind} T={T} ({simd_wasm:.2f}x)")
        if wasm_native is not None and wasm_native > 2.5:
            fails.append(f"wasm > 2.5x native: {kind} T={T} ({wasm_native:.2f}x)")
    print("\nsoftmax alone, ns per element (rows of 2048 in cache; causal: per allowed element)")
    for b, kv in softmax.items():
        print(f"  {b:14} {kv['isa']:14} {float(kv['ns_per_element']):7.3f}  causal {float(kv['causal_ns_per_allowed_element']):7.3f}")
    if "wasm" in softmax and float(softmax["wasm"]["ns_per_element"]) > 2.5:
        fails.append(f"softmax in wasm {float(softmax['wasm']['ns_per_element']):.2f} ns per element > 2.5")
    if not any(k[0] == "pytorch" for k in results):
        print("\nPyTorch: not run (apt-get install python3-torch), native-to-PyTorch target not checked")
    print("\ntargets: " + ("all met" if not fails else f"{len(fails)} missed"))
    for f in fails:
        print("  missed: " + f)


if __name__ == "__main__":
    main()
