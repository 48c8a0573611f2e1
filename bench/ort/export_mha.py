#!/usr/bin/env python3
"""export_mha.py: torch.nn.MultiheadAttention(512, 8) exported to ONNX for bench/ort_web.mjs.

One layer with seeded random weights, three graphs (opset 13, T dynamic), each returning the
output and every head's weights (need_weights, average_attn_weights=False: what a trace needs):
  self.onnx    x (T, 1, 512)                     -> y (T, 1, 512), w (1, 8, T, T)
  causal.onnx  x, mask (T, T): -inf above the diagonal
  cross.onnx   xq (T, 1, 512), xkv (T, 1, 512)
and weights.bin, the same layer for attnviz (float32: W_q, W_k, W_v, W_o as d×d in the row-vector
convention y = x·W + b, then b_q, b_k, b_v, b_o).
  /usr/bin/python3 bench/ort/export_mha.py OUT_DIR
Debian's python3-torch; torch.onnx writes the file itself (the onnx package is not needed).
"""
import os
import sys

import numpy as np
import torch
from torch import nn

D, HEADS = 512, 8


class Self(nn.Module):
    def __init__(self, mha):
        super().__init__()
        self.mha = mha

    def forward(self, x):
        return self.mha(x, x, x, need_weights=True, average_attn_weights=False)


class Causal(Self):
    def forward(self, x, mask):
        return self.mha(x, x, x, attn_mask=mask, need_weights=True, average_attn_weights=False)


class Cross(Self):
    def forward(self, xq, xkv):
        return self.mha(xq, xkv, xkv, need_weights=True, average_attn_weights=False)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/attnviz-ort"
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(D, HEADS).eval()
    with torch.no_grad():  # biases too, so that a dropped bias shows in the comparison
        mha.in_proj_bias.normal_(0, 0.1)
        mha.out_proj.bias.normal_(0, 0.1)
    T = 16
    x = torch.randn(T, 1, D)
    mask = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
    seq = {0: "T"}
    outs = {"y": seq, "w": {2: "T", 3: "T"}}
    for name, module, args, inputs, axes in [
        ("self", Self(mha), (x,), ["x"], {"x": seq}),
        ("causal", Causal(mha), (x, mask), ["x", "mask"], {"x": seq, "mask": {0: "T", 1: "T"}}),
        ("cross", Cross(mha), (x, torch.randn(T, 1, D)), ["xq", "xkv"], {"xq": seq, "xkv": seq}),
    ]:
        torch.onnx.export(module, args, os.path.join(out, name + ".onnx"), opset_version=13, input_names=inputs,
                          output_names=["y", "w"], dynamic_axes={**axes, **outs})
    w = mha.in_proj_weight.detach().numpy()
    b = mha.in_proj_bias.detach().numpy()
    parts = [w[0:D].T, w[D:2 * D].T, w[2 * D:].T, mha.out_proj.weight.detach().numpy().T,
             b[0:D], b[D:2 * D], b[2 * D:], mha.out_proj.bias.detach().numpy()]
    np.concatenate([np.ascontiguousarray(p, dtype=np.float32).ravel() for p in parts]).tofile(os.path.join(out, "weights.bin"))
    print(f"wrote self.onnx, causal.onnx, cross.onnx and weights.bin to {out} (torch {torch.__version__})")


if __name__ == "__main__":
    main()
