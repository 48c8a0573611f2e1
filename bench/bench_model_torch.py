#!/usr/bin/python3
"""PyTorch's peer of bench_model.cpp: GPT-2 small (12 layers, d_model 768, 12 heads, vocab 50257,
1024 positions), or with --arch smollm2 SmolLM2-135M's shape (LlamaForCausalLM: 30 layers,
d_model 576, 9 heads / 3 KV, d_ff 1536, vocab 49152, tied, RoPE θ 1e5), random float32 weights,
one forward at T tokens on one thread, or --threads N (no transformers package here: the forward is written out
with torch.nn.functional as the models compute it, attention weights kept per head as the
runtime keeps them; logits at the last position).

    /usr/bin/python3 bench/bench_model_torch.py [--arch gpt2|smollm2] [--T 128] [--reps 5] [--threads 1] [--maps kept|none]
Prints "RESULT peer=torch …" with the min and median of reps forwards, and the peak RSS.

--maps none (long texts, attnviz's maps on demand): attention keeps no map, as transformers runs
without output_attentions: torch.nn.functional.scaled_dot_product_attention where this torch has
it (2.0 and later), else the same softmax a band of 256 query rows at a time (Debian's 1.13).

--why (gpt2): then the why views as TransformerLens computes them, on the same weights: the logit
lens (every layer's stream through ln_f and the unembedding, one product) and activation patching
the way its patching utilities run it (one whole forward of the corrupted ids per patch, the
clean activation put in by a hook: every head's output at every position, 144 runs, then the
stream entering each layer and after the last at each position, 13·T runs); the logits at the
last position only, as attnviz's. The corrupted ids are bench_model.cpp's (every other id + 1).

Threads: --threads N is PyTorch's own (torch.set_num_threads) and OpenBLAS's
(OPENBLAS_NUM_THREADS, which must be set before OpenBLAS loads: without it OpenBLAS takes every
core, whatever torch.set_num_threads says; the runs before 2026-11-28 measured that). With N > 1,
OMP_WAIT_POLICY=PASSIVE unless set: PyTorch's OpenMP threads otherwise spin between its
elementwise ops while OpenBLAS's threads want the same cores (GPT-2 small at T = 128 on 2 cores:
440 ms spinning, 175 ms passive, 296 ms with OpenBLAS on one thread)."""
import argparse
import math
import resource
import os
import sys
import time


def threads_arg():
    for i, arg in enumerate(sys.argv[:-1]):
        if arg == "--threads":
            return sys.argv[i + 1]
    return "1"


os.environ["OPENBLAS_NUM_THREADS"] = threads_arg()
if threads_arg() != "1":
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import torch  # noqa: E402 (after OpenBLAS's thread count)
import torch.nn.functional as F  # noqa: E402

V, D, L, H, P, FF = 50257, 768, 12, 12, 1024, 3072


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", default="gpt2", choices=("gpt2", "smollm2"))
    ap.add_argument("--T", type=int, default=128)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--maps", default="kept", choices=("kept", "none"))
    ap.add_argument("--why", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    g = torch.Generator().manual_seed(0)

    def r(*shape, scale=0.02, offset=0.0):
        return (torch.rand(*shape, generator=g) * 2 - 1) * scale + offset

    if a.arch == "smollm2":
        return time_forward(a, smollm2(a.T, r, a.maps == "kept"))

    wte, wpe = r(V, D), r(P, D, scale=0.01)
    layers = [dict(ln1=(r(D, scale=0.1, offset=1), r(D)), attn=(r(D, 3 * D), r(3 * D)), proj=(r(D, D), r(D)),
                   ln2=(r(D, scale=0.1, offset=1), r(D)), fc=(r(D, FF), r(FF)), fc_proj=(r(FF, D), r(D)))
              for _ in range(L)]
    lnf = (r(D, scale=0.1, offset=1), r(D))
    T, dk = a.T, D // H
    ids = torch.tensor([(t * 7919 + 13) % V for t in range(T)])
    mask = torch.ones(T, T, dtype=torch.bool).tril()

    def forward(tokens=ids, head=None, resid=None, record=None):
        """head: (layer, h, [T, dk]) put in place of that head's output; resid: (r, t, [D]) in place
        of the stream's row t entering layer r (r = L: the final norm's input); record: a dict
        that gets every head's output and every stream."""
        x = wte[tokens] + wpe[:T]
        maps = []
        for i, l in enumerate(layers):
            if resid is not None and resid[0] == i:
                x = x.clone()
                x[resid[1]] = resid[2]
            if record is not None:
                record.setdefault("resid", []).append(x)
            h = F.layer_norm(x, (D,), *l["ln1"], 1e-5)
            q, k, v = (torch.addmm(l["attn"][1], h, l["attn"][0])).split(D, dim=1)
            q, k, v = (t.view(T, H, dk).transpose(0, 1) for t in (q, k, v))
            s = (q @ k.transpose(1, 2)) / math.sqrt(dk)
            w = s.masked_fill(~mask, float("-inf")).softmax(-1)
            maps.append(w)
            z = w @ v  # [H, T, dk]
            if head is not None and head[0] == i:
                z = z.clone()
                z[head[1]] = head[2]
            if record is not None:
                record.setdefault("z", []).append(z)
            o = z.transpose(0, 1).reshape(T, D)
            x = x + torch.addmm(l["proj"][1], o, l["proj"][0])
            m = F.layer_norm(x, (D,), *l["ln2"], 1e-5)
            x = x + torch.addmm(l["fc_proj"][1], F.gelu(torch.addmm(l["fc"][1], m, l["fc"][0]), approximate="tanh"),
                                l["fc_proj"][0])
        if resid is not None and resid[0] == L:
            x = x.clone()
            x[resid[1]] = resid[2]
        if record is not None:
            record.setdefault("resid", []).append(x)
        x = F.layer_norm(x, (D,), *lnf, 1e-5)
        return x[-1] @ wte.t(), maps

    time_forward(a, forward)
    if a.why:
        why(a, forward, ids, lambda rows: F.layer_norm(rows, (D,), *lnf, 1e-5) @ wte.t())


def why(a, forward, ids, unembed):
    corrupted = ids.clone()
    corrupted[1::2] = (corrupted[1::2] + 1) % V
    with torch.no_grad():
        clean, bad = {}, {}
        forward(ids, record=clean)
        forward(corrupted, record=bad)
        lens = []
        for _ in range(a.reps):
            t0 = time.perf_counter()
            p = unembed(torch.stack(clean["resid"]).reshape(-1, D)).softmax(-1)
            p.topk(5, dim=-1)
            lens.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        for i in range(L):
            for h in range(H):
                forward(corrupted, head=(i, h, clean["z"][i][h]))
        heads_s = time.perf_counter() - t0
        for r in range(L + 1):
            for t in range(a.T):
                forward(corrupted, resid=(r, t, clean["resid"][r][t]))
        patching_s = time.perf_counter() - t0
    print(f"RESULT peer=torch-{torch.__version__} why T={a.T} threads={torch.get_num_threads()} lens_ms={min(lens) * 1e3:.1f} "
          f"patching_s={patching_s:.2f} patching_heads_s={heads_s:.2f} ({L} x {H} heads, {L + 1} x {a.T} stream rows)")


def causal_attention(q, k, v, scale):
    """softmax(q·kᵀ·scale, causal)·v for [heads, T, d] without the T × T maps."""
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale)
    T, out = q.shape[1], torch.empty_like(q)
    for r0 in range(0, T, 256):
        r1 = min(T, r0 + 256)
        s = (q[:, r0:r1] @ k[:, :r1].transpose(1, 2)) * scale
        s = s.masked_fill(torch.ones(r1 - r0, r1, dtype=torch.bool).tril(r0).logical_not(), float("-inf"))
        out[:, r0:r1] = s.softmax(-1) @ v[:, :r1]
    return out


def smollm2(T, r, keep_maps=True):
    """LlamaForCausalLM's forward for SmolLM2-135M's shape: RMSNorm, RoPE (rotate-half), GQA
    (repeat_kv), SwiGLU, tied head. keep_maps False: causal_attention."""
    V, D, L, H, KV, FF, theta = 49152, 576, 30, 9, 3, 1536, 100000.0
    hd = D // H
    emb = r(V, D)
    layers = [dict(n1=r(D, scale=0.1, offset=1), q=r(H * hd, D, scale=0.04), k=r(KV * hd, D, scale=0.04),
                   v=r(KV * hd, D, scale=0.04), o=r(D, H * hd, scale=0.04), n2=r(D, scale=0.1, offset=1),
                   gate=r(FF, D, scale=0.04), up=r(FF, D, scale=0.04), down=r(D, FF, scale=0.03)) for _ in range(L)]
    norm_w = r(D, scale=0.1, offset=1)
    ids = torch.tensor([(t * 7919 + 13) % V for t in range(T)])
    inv = 1.0 / theta ** (torch.arange(0, hd, 2).float() / hd)
    freqs = torch.arange(T).float()[:, None] * inv[None, :]
    cos, sin = torch.cat([freqs, freqs], -1).cos(), torch.cat([freqs, freqs], -1).sin()
    mask = torch.ones(T, T, dtype=torch.bool).tril() if keep_maps else None

    def rms(x, w):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * w

    def rope(x):  # [heads, T, hd]
        return x * cos + torch.cat([-x[..., hd // 2:], x[..., :hd // 2]], -1) * sin

    def forward():
        x = emb[ids]
        maps = []
        for l in layers:
            h = rms(x, l["n1"])
            q = rope(F.linear(h, l["q"]).view(T, H, hd).transpose(0, 1))
            k = rope(F.linear(h, l["k"]).view(T, KV, hd).transpose(0, 1)).repeat_interleave(H // KV, 0)
            v = F.linear(h, l["v"]).view(T, KV, hd).transpose(0, 1).repeat_interleave(H // KV, 0)
            if keep_maps:
                w = ((q @ k.transpose(1, 2)) / math.sqrt(hd)).masked_fill(~mask, float("-inf")).softmax(-1)
                maps.append(w)
                o = w @ v
            else:
                o = causal_attention(q, k, v, 1 / math.sqrt(hd))
            x = x + F.linear(o.transpose(0, 1).reshape(T, H * hd), l["o"])
            m = rms(x, l["n2"])
            x = x + F.linear(F.silu(F.linear(m, l["gate"])) * F.linear(m, l["up"]), l["down"])
        x = rms(x, norm_w)
        return x[-1] @ emb.t(), maps
    return forward


def time_forward(a, forward):
    times = []
    with torch.no_grad():
        forward()  # warm-up
        for _ in range(a.reps):
            t0 = time.perf_counter()
            logits, _ = forward()
            times.append(time.perf_counter() - t0)
    times.sort()
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"RESULT peer=torch-{torch.__version__} arch={a.arch} threads={torch.get_num_threads()} T={a.T} reps={a.reps} "
          f"maps={a.maps} forward_min_ms={times[0] * 1e3:.1f} forward_median_ms={times[len(times) // 2] * 1e3:.1f} peak_rss_mb={peak_mb:.0f}")


if __name__ == "__main__":
    main()
