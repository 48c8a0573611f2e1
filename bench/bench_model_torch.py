#!/usr/bin/python3
"""PyTorch's peer of bench_model.cpp: GPT-2 small (12 layers, d_model 768, 12 heads, vocab 50257,
1024 positions), random float32 weights, one forward at T tokens on one thread (no transformers
package here: the forward is written out with torch.nn.functional, as GPT2LMHeadModel computes
it, attention weights kept per head as the runtime keeps them; logits at the last position).

    /usr/bin/python3 bench/bench_model_torch.py [--T 128] [--reps 5]
Prints "RESULT peer=torch …" with the min and median of reps forwards."""
import argparse
import math
import time

import torch
import torch.nn.functional as F

V, D, L, H, P, FF = 50257, 768, 12, 12, 1024, 3072


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--T", type=int, default=128)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)

    def r(*shape, scale=0.02, offset=0.0):
        return (torch.rand(*shape, generator=g) * 2 - 1) * scale + offset

    wte, wpe = r(V, D), r(P, D, scale=0.01)
    layers = [dict(ln1=(r(D, scale=0.1, offset=1), r(D)), attn=(r(D, 3 * D), r(3 * D)), proj=(r(D, D), r(D)),
                   ln2=(r(D, scale=0.1, offset=1), r(D)), fc=(r(D, FF), r(FF)), fc_proj=(r(FF, D), r(D)))
              for _ in range(L)]
    lnf = (r(D, scale=0.1, offset=1), r(D))
    T, dk = a.T, D // H
    ids = torch.tensor([(t * 7919 + 13) % V for t in range(T)])
    mask = torch.ones(T, T, dtype=torch.bool).tril()

    def forward():
        x = wte[ids] + wpe[:T]
        maps = []
        for l in layers:
            h = F.layer_norm(x, (D,), *l["ln1"], 1e-5)
            q, k, v = (torch.addmm(l["attn"][1], h, l["attn"][0])).split(D, dim=1)
            q, k, v = (t.view(T, H, dk).transpose(0, 1) for t in (q, k, v))
            s = (q @ k.transpose(1, 2)) / math.sqrt(dk)
            w = s.masked_fill(~mask, float("-inf")).softmax(-1)
            maps.append(w)
            o = (w @ v).transpose(0, 1).reshape(T, D)
            x = x + torch.addmm(l["proj"][1], o, l["proj"][0])
            m = F.layer_norm(x, (D,), *l["ln2"], 1e-5)
            x = x + torch.addmm(l["fc_proj"][1], F.gelu(torch.addmm(l["fc"][1], m, l["fc"][0]), approximate="tanh"),
                                l["fc_proj"][0])
        x = F.layer_norm(x, (D,), *lnf, 1e-5)
        return x[-1] @ wte.t(), maps

    times = []
    with torch.no_grad():
        forward()  # warm-up
        for _ in range(a.reps):
            t0 = time.perf_counter()
            logits, _ = forward()
            times.append(time.perf_counter() - t0)
    times.sort()
    print(f"RESULT peer=torch-{torch.__version__} threads={torch.get_num_threads()} T={T} reps={a.reps} "
          f"forward_min_ms={times[0] * 1e3:.1f} forward_median_ms={times[len(times) // 2] * 1e3:.1f}")


if __name__ == "__main__":
    main()
