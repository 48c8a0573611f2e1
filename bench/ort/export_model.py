#!/usr/bin/env python3
"""export_model.py: a model folder (Hugging Face layout: GPT-2, or a Llama-like family) exported to
ONNX for bench/ort_web.mjs and bench/ort_chromium.mjs.

The forward is tests/model/reference.py's (gpt2_forward, llama_like_forward: written from the
architectures' definitions, the ones the runtime's tests check against), traced in float32 at a
fixed T (opset 14: the causal mask is a constant), with the weights attnviz loads from the folder
(16-bit ones widened to float32, as attnviz's products widen them). The graph takes ids (T,) int64
and returns the logits at the last position (V,) and every layer's attention (L, H, T, T).
    /usr/bin/python3 bench/ort/export_model.py FOLDER T OUT.onnx
e.g. models/tiny-lm 64, or GPT-2 small's or SmolLM2-135M's shape with random weights
(build/attn_bench_model [--arch smollm2] --keep writes /tmp/attn_bench_ARCH/ with its config.json).
"""
import json
import os
import sys

import torch
from torch import nn

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "../../tests/model"))
import reference  # noqa: E402
from test_reference import read_checkpoint  # noqa: E402

reference_rotate = reference.rotate


def rotate_float32(x, inv_freq, att, first=0):
    """reference.rotate with its cos and sin tables (computed in float64, constants of the graph)
    cast to x's float32, so the graph stays float32 as attnviz computes."""
    rot = 2 * len(inv_freq)
    pos = torch.arange(first, first + x.shape[1], dtype=torch.float64)[:, None]
    emb = torch.cat([pos * inv_freq[None, :]] * 2, dim=-1)
    cos, sin = (emb.cos() * att).to(x.dtype), (emb.sin() * att).to(x.dtype)
    x_rot, x_pass = x[..., :rot], x[..., rot:]
    half = rot // 2
    rotated = torch.cat([-x_rot[..., half:], x_rot[..., :half]], dim=-1)
    return torch.cat([x_rot * cos + rotated * sin, x_pass], dim=-1)


class Model(nn.Module):
    def __init__(self, W, cfg):
        super().__init__()
        self.names = list(W)
        for i, n in enumerate(self.names):  # buffers: the graph's initializers
            self.register_buffer(f"w{i}", W[n])
        self.cfg = cfg
        self.forward_of = reference.gpt2_forward if cfg["model_type"] == "gpt2" else reference.llama_like_forward

    def forward(self, ids):
        W = {n: getattr(self, f"w{i}") for i, n in enumerate(self.names)}
        run = self.forward_of(W, self.cfg, ids)
        return run["logits"], run["attention"]


def main():
    folder, T, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    cfg = json.load(open(os.path.join(folder, "config.json")))
    if cfg["model_type"] not in ("gpt2",) + reference.LLAMA_LIKE:
        sys.exit(f"export_model.py: model_type {cfg['model_type']} is not gpt2 or a Llama-like family")
    reference.rotate = rotate_float32
    prefix = "transformer." if cfg["model_type"] == "gpt2" else "model."
    tensors = read_checkpoint(folder)
    W = {(n[len(prefix):] if n.startswith(prefix) else n): t.float() for n, t in tensors.items()}
    ids = torch.arange(T, dtype=torch.int64) % cfg["vocab_size"]
    with torch.no_grad():
        torch.onnx.export(Model(W, cfg).eval(), (ids,), out, opset_version=14, input_names=["ids"],
                          output_names=["logits", "attention"])
    L = cfg.get("n_layer", cfg.get("num_hidden_layers"))
    H = cfg.get("n_head", cfg.get("num_attention_heads"))
    print(f"wrote {out}: {cfg['model_type']}, {L} layers x {H} heads, T {T}")


if __name__ == "__main__":
    main()
