#!/usr/bin/env python3
"""export_gpt2.py: a GPT-2 folder (Hugging Face layout) exported to ONNX for bench/ort_web.mjs.

The forward is tests/model/reference.py's gpt2_forward (written from the architecture's
definition, the one the runtime's tests check against), traced in float32 at a fixed T (opset 14: the causal mask is a triu), with
the same weights attnviz loads from the folder. The graph takes ids (T,) int64 and returns the
logits at the last position (V,) and every layer's attention (L, H, T, T).
    /usr/bin/python3 bench/ort/export_gpt2.py FOLDER T OUT.onnx
e.g. models/tiny-lm 64, or GPT-2 small's shape with random weights (build/attn_bench_model --keep
writes /tmp/attn_bench_gpt2/model.safetensors; bench/model_web.mjs writes its config.json).
"""
import json
import os
import sys

import torch
from torch import nn

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "../../tests/model"))
import reference  # noqa: E402
from test_reference import read_safetensors  # noqa: E402


class Gpt2(nn.Module):
    def __init__(self, W, cfg):
        super().__init__()
        self.names = list(W)
        for i, n in enumerate(self.names):  # buffers: the graph's initializers
            self.register_buffer(f"w{i}", W[n])
        self.cfg = cfg

    def forward(self, ids):
        W = {n: getattr(self, f"w{i}") for i, n in enumerate(self.names)}
        run = reference.gpt2_forward(W, self.cfg, ids)
        return run["logits"], run["attention"]


def main():
    folder, T, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    cfg = json.load(open(os.path.join(folder, "config.json")))
    tensors = read_safetensors(os.path.join(folder, "model.safetensors"))
    W = {(n[len("transformer."):] if n.startswith("transformer.") else n): t.float() for n, t in tensors.items()}
    ids = torch.arange(T, dtype=torch.int64) % cfg["vocab_size"]
    with torch.no_grad():
        torch.onnx.export(Gpt2(W, cfg).eval(), (ids,), out, opset_version=14, input_names=["ids"],
                          output_names=["logits", "attention"])
    print(f"wrote {out}: {cfg['n_layer']} layers x {cfg['n_head']} heads, d {cfg['n_embd']}, T {T}")


if __name__ == "__main__":
    main()
