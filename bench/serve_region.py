#!/usr/bin/python3
"""serve_region.py: what the page waits for from a served model on a long text (issue 51,
docs/BENCHMARKS.md "A served model's long text"). Numbers only: not a test.

  /usr/bin/python3 bench/serve_region.py [T=8192] [repeats=5] [device=cpu]
  /usr/bin/python3 bench/serve_region.py --serve SITE_DIR  (for bench/served_frames.mjs: serves the
      model and its page, prints its port and token, and stops when stdin closes)

A Llama-shaped model in plain torch (tests/serve/torch_llama.py; SmolLM2-135M's attention: 9
heads, 3 K/V heads, d_head 64; 2 layers, random weights) is served by attnviz.serve() on
127.0.0.1 and run on T tokens (on the CPU, or on `device`, e.g. cuda: then Q, K and the maps'
poolings are the GPU's, and every timing waits for it); then, over HTTP as the page asks, timed (median of `repeats`):
  - one head's whole T x T map pooled to 1024 x 1024 (max): the issue's round trip;
  - the same pooling in the server's process, no HTTP (what the HTTP costs on top);
  - a layer's thumbnails (every head at 64 x 64), and a layer's Q and K (/api/qk), the two
    questions the page asks before it shows a long text;
and the peers, in the same process: the same head's whole map as PyTorch holds it when a model
returns its attentions (softmax of the T x T scores, materialized), max-pooled to 1024 x 1024 by
F.adaptive_max_pool2d; and the forward with eager attention (every map materialized, a layer at
a time, as output_attentions needs: torch 1.13 has no public scaled_dot_product_attention).
"""
import json
import os
import resource
import statistics
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "serve"))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import torch_llama  # noqa: E402
import attnviz  # noqa: E402
from attnviz import _serve  # noqa: E402
from answers import Words, request  # noqa: E402


def median_ms(fn, repeats, device="cpu"):
    return in_turns([fn], repeats, device)[0]


def in_turns(fns, repeats, device="cpu"):
    """(median, fastest) ms of each of fns, called in turns (one of each, `repeats` times): this
    machine's speed drifts by 2x from minute to minute, so two numbers compared come from the same
    minutes."""
    times = [[] for _ in fns]
    for _ in range(repeats):
        for fn, out in zip(fns, times):
            t = time.perf_counter()
            fn()
            if device != "cpu":
                torch.cuda.synchronize()
            out.append((time.perf_counter() - t) * 1000)
    return [(statistics.median(t), min(t)) for t in times]


def llama_shaped(T, device="cpu"):
    """SmolLM2-135M's attention (9 heads, 3 K/V heads, d_head 64) in 2 layers, random weights."""
    torch.set_num_threads(os.cpu_count())
    torch.manual_seed(0)
    config = torch_llama.Config({"hidden_size": 576, "num_hidden_layers": 2, "num_attention_heads": 9, "num_key_value_heads": 3,
                                 "intermediate_size": 1536, "vocab_size": 512, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
                                 "max_position_embeddings": T, "tie_word_embeddings": True}, "llama-shaped")
    return config, torch_llama.CausalLM(config, "sdpa").eval().to(device)


def main():
    if sys.argv[1:2] == ["--serve"]:
        _, model = llama_shaped(16384)
        served = attnviz.serve(model, Words(), max_tokens=16384, site=sys.argv[2], quiet=True)
        print(served.port, served.token, flush=True)
        sys.stdin.read()
        served.stop()
        return
    T = int(sys.argv[1]) if len(sys.argv) > 1 else 8192
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    device = sys.argv[3] if len(sys.argv) > 3 else "cpu"
    config, model = llama_shaped(T, device)
    served = attnviz.serve(model, Words(), max_tokens=T, quiet=True)

    def ask(path, body=None):
        return request(served, path, body)[1]

    try:
        text = " ".join(f"w{(i * 7919) % 512}" for i in range(T))
        t = time.perf_counter()
        run = json.loads(ask("/api/run", {"text": text}))["run"]
        forward = time.perf_counter() - t
        gpu = f", {torch.cuda.get_device_name()}" if device != "cpu" else ""
        print(f"machine: {os.cpu_count()} cores{gpu}, torch {torch.__version__}, {torch.get_num_threads()} threads")
        print(f"T = {T}: the forward through attnviz's function, keeping Q, K and the rows' softmax: {forward:.2f} s; "
              f"peak resident memory of the process so far {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
        region = f"/api/region?run={run}&layer=1&head=4&rows=1024&cols=1024"
        size = len(ask(region))
        kept = served.session.runs[run][1][1]
        http, local = in_turns([lambda: ask(region), lambda: _serve.pooled(kept, 4, 0, T, 0, T, 1024, 1024)], repeats, device)
        thumbs = f"/api/region?run={run}&layer=1&rows=64&cols=64"
        thumbs_size = len(ask(thumbs))
        thumbs_ms = median_ms(lambda: ask(thumbs), repeats)
        qk = f"/api/qk?run={run}&layer=1"
        qk_size = len(ask(qk))
        qk_ms = median_ms(lambda: ask(qk), repeats)

        def materialized():  # the peer: the head's whole map, then pooled
            w = torch.softmax(kept.scores(4, 0, T, 0, T), -1)
            return torch.nn.functional.adaptive_max_pool2d(w[None, None], min(T, 1024))[0, 0]
        peer = median_ms(materialized, repeats, device)
        ours = _serve.pooled(kept, 4, 0, T, 0, T, 1024, 1024)[0]
        eager = torch_llama.CausalLM(config, "eager").eval().to(device)
        eager.load_state_dict(model.state_dict())
        ids = Words()(text)["input_ids"].to(device)
        t = time.perf_counter()
        with torch.no_grad():
            eager(ids)
        if device != "cpu":
            torch.cuda.synchronize()
        print(f"peer: the same forward with eager attention: {time.perf_counter() - t:.2f} s; "
              f"peak resident memory of the process then {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
        print(f"  (the two poolings agree to {float((ours - materialized().cpu()).abs().max()):.1e})")
        print(f"| question (T = {T}) | median (fastest) | bytes |")
        print("|---|---:|---:|")
        print(f"| a head's map pooled to 1024 x 1024, over HTTP | {http[0]:.0f} ms ({http[1]:.0f}) | {size} |")
        print(f"| the same pooling in the server's process | {local[0]:.0f} ms ({local[1]:.0f}) | |")
        print(f"| peer: the map materialized (softmax of T x T) and max-pooled | {peer[0]:.0f} ms ({peer[1]:.0f}) | |")
        print(f"| a layer's thumbnails, 9 heads at 64 x 64, over HTTP | {thumbs_ms[0]:.0f} ms ({thumbs_ms[1]:.0f}) | {thumbs_size} |")
        print(f"| a layer's Q and K, over HTTP | {qk_ms[0]:.0f} ms ({qk_ms[1]:.0f}) | {qk_size} |")
    finally:
        served.stop()


if __name__ == "__main__":
    main()
