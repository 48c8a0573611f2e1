"""attnviz.serve() on transformers' own model classes (issue 51): where transformers is installed
(the device machine: transformers 5.17, torch 2.11, a GPU); elsewhere it says so and exits 0.

    python3 tests/serve/test_serve_transformers.py [cuda|cpu]

Random-weight models of transformers' Llama, Qwen3, Gemma 2 (soft caps, a sliding window on
alternate layers) and Gemma 3 (text: sliding and full layers, query_pre_attn_scalar) built from
their config classes, in float32 on the device. For each, against the same model run with
transformers' eager attention and output_attentions=True:
  - the logits through attnviz's attention function (1e-4) and every map of /api/maps (1e-5);
  - every head's map rebuilt from /api/qk's Q, K and metadata (1e-5), as the page does;
  - a 640-token text: /api/region's thumbnails (64 x 64, max) and a 1024 x 1024 pooling against
    the eager maps pooled the same way;
  - a knockout (/api/run's "knockout") against eager with that head's slice of o_proj's input
    zeroed by a forward pre-hook;
  - /api/generate against greedy decoding of the eager model.
Not written here: tensor parallelism under torchrun (no machine with several GPUs).
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, HERE)  # answers.py (not torch_llama: it puts a stand-in transformers on the path)

try:
    import transformers
except ImportError:
    print("skipped: transformers is not installed here (tests/serve/test_serve.py runs a stand-in)")
    sys.exit(0)
import numpy as np
import torch

import attnviz
from answers import Words, request, tensors

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def pool_max(m, rows, cols):
    R, C = min(rows, m.shape[0]), min(cols, m.shape[1])
    re = [m.shape[0] * a // R for a in range(R + 1)]
    ce = [m.shape[1] * b // C for b in range(C + 1)]
    return np.array([[m[re[a]:re[a + 1], ce[b]:ce[b + 1]].max() for b in range(C)] for a in range(R)])


def rebuilt(q, k, meta):
    """A head's map from Q [T, D], K [T, D] and /api/qk's metadata, in float64."""
    s = q.astype(np.float64) @ k.astype(np.float64).T * float(meta["scaling"])
    cap = float(meta["softcap"])
    if cap:
        s = np.tanh(s / cap) * cap
    T = s.shape[0]
    i, j = np.arange(T)[:, None], np.arange(T)[None, :]
    ok = (j <= i) if meta["causal"] == "1" else np.ones((T, T), bool)
    if int(meta["window"]):
        ok &= j > i - int(meta["window"])
    s = np.where(ok, s, -np.inf)
    w = np.exp(s - s.max(1, keepdims=True))
    return w / w.sum(1, keepdims=True)


def configs():
    common = dict(vocab_size=512, hidden_size=128, intermediate_size=256, num_hidden_layers=4, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=4096)
    yield "llama", transformers.LlamaConfig(**common)
    yield "qwen3", transformers.Qwen3Config(**common, head_dim=32)
    yield "gemma2", transformers.Gemma2Config(**common, head_dim=32, sliding_window=48, attn_logit_softcapping=50.0,
                                              final_logit_softcapping=30.0, query_pre_attn_scalar=24)
    yield "gemma3", transformers.Gemma3TextConfig(**common, head_dim=32, sliding_window=48, query_pre_attn_scalar=24,
                                                  layer_types=["sliding_attention", "full_attention"] * 2)


def eager_run(model, ids, knockout=()):
    """Logits and every layer's maps [L, H, T, T] of transformers' eager attention, heads knocked out
    by zeroing their slice of o_proj's input."""
    hooks = []
    for layer, head in knockout:
        attn = model.model.layers[layer].self_attn
        d = attn.head_dim

        def zero(module, args, head=head, d=d):
            x = args[0].clone()
            x[..., head * d:(head + 1) * d] = 0
            return (x,)
        hooks.append(attn.o_proj.register_forward_pre_hook(zero))
    try:
        model.set_attn_implementation("eager")
        with torch.no_grad():
            out = model(input_ids=ids[None], output_attentions=True, use_cache=False)
    finally:
        for h in hooks:
            h.remove()
        model.set_attn_implementation("attnviz")
    return out.logits[0].float().cpu(), np.stack([a[0].float().cpu().numpy() for a in out.attentions])


def family(name, config, device):
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager").to(device).eval()
    served = attnviz.serve(model, Words(), quiet=True)
    try:
        ids = torch.tensor([(i * 7919) % 500 + 3 for i in range(40)], device=device)
        text = " ".join(f"w{int(i)}" for i in ids)
        status, body = request(served, "/api/run", {"text": text})
        run = json.loads(body)
        logits, maps = eager_run(model, ids)
        with torch.no_grad():
            through = model(input_ids=ids[None], use_cache=False).logits[0].float().cpu()
        check(status == 200 and float((through - logits).abs().max()) < 1e-4, f"{name}: logits through attnviz's function")
        got = tensors(request(served, f"/api/maps?run={run['run']}")[1])[0]["attention"]
        d = float(np.abs(got - maps).max())
        check(got.shape == maps.shape and d < 1e-5, f"{name}: /api/maps against eager's output_attentions ({d:.1e})")
        worst = 0.0
        for layer in range(config.num_hidden_layers):
            qk, meta = tensors(request(served, f"/api/qk?run={run['run']}&layer={layer}")[1])
            group = qk["q"].shape[0] // qk["k"].shape[0]
            for h in range(qk["q"].shape[0]):
                worst = max(worst, float(np.abs(rebuilt(qk["q"][h], qk["k"][h // group], meta) - maps[layer, h]).max()))
        check(worst < 1e-5, f"{name}: every map rebuilt from /api/qk as the page does ({worst:.1e})")

        # A long text: thumbnails and a pooling, against eager's maps.
        long_ids = torch.tensor([(i * 104729) % 500 + 3 for i in range(640)], device=device)
        run = json.loads(request(served, "/api/run", {"text": " ".join(f"w{int(i)}" for i in long_ids)})[1])
        _, long_maps = eager_run(model, long_ids)
        thumbs = tensors(request(served, f"/api/region?run={run['run']}&layer=1&rows=64&cols=64")[1])[0]["values"]
        d = max(float(np.abs(thumbs[h] - pool_max(long_maps[1, h], 64, 64)).max()) for h in range(thumbs.shape[0]))
        check(d < 1e-5, f"{name}: 640 tokens, a layer's thumbnails ({d:.1e})")
        region = tensors(request(served, f"/api/region?run={run['run']}&layer=0&head=1&rows=200&cols=300")[1])[0]["values"]
        d = float(np.abs(region - pool_max(long_maps[0, 1], 200, 300)).max())
        check(d < 1e-5, f"{name}: 640 tokens, a map pooled to 200 x 300 ({d:.1e})")

        # Knockout and generation.
        status, body = request(served, "/api/run", {"text": text, "knockout": [[1, 2]]})
        knocked = json.loads(body)
        k_logits, k_maps = eager_run(model, ids, [(1, 2)])
        p = torch.softmax(k_logits[-1], -1)
        got = tensors(request(served, f"/api/maps?run={knocked['run']}")[1])[0]["attention"]
        check(knocked["top"][0]["id"] == int(p.argmax()) and abs(knocked["top"][0]["p"] - float(p.max())) < 1e-5
              and float(np.abs(got - k_maps).max()) < 1e-5, f"{name}: head 2:3 knocked out, as eager with its o_proj input zeroed")
        generated = json.loads(request(served, "/api/generate", {"text": text, "tokens": 6})[1])
        greedy = ids.clone()
        for _ in range(6):
            greedy = torch.cat([greedy, eager_run(model, greedy)[0][-1].argmax().view(1).to(device)])
        check(generated["ids"] == greedy[len(ids):].tolist(), f"{name}: /api/generate {generated['ids']} as greedy eager")
    finally:
        served.stop()


def main():
    device = sys.argv[1] if len(sys.argv) > 1 else ("cuda" if torch.cuda.is_available() else "cpu")
    print(f"transformers {transformers.__version__}, torch {torch.__version__}, on {device}")
    for name, config in configs():
        family(name, config, device)
    print(f"{len(failures)} failures")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
