#!/usr/bin/env python3
"""export_vit.py: ViT-B/16's shape (ViTForImageClassification: 12 layers × 12 heads, d 768, MLP
3072, 224 × 224 pictures in 16-pixel patches: 197 tokens; random weights, float32) as a model folder
in the Hugging Face layout (tests/model/make_vision_models.py's writer) and as ONNX, for
bench/ort_chromium.mjs: attnviz and ONNX Runtime Web on the same pixel values (issue 50).

The graph is a float32 forward written here (torch.nn.functional), checked at export against
tests/model/reference.py's vit_forward (float64), traced at opset 14: pixel_values (1, 3, 224,
224) float32 -> logits (5,) (the test checkpoints' five labels, not ImageNet's 1000: the
classifier is one row of products) and every layer's attention (12, 12, 197, 197).
    /usr/bin/python3 bench/ort/export_vit.py /tmp/attnviz-ort/vit-b16 /tmp/attnviz-ort/vit-b16.onnx
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "../../tests/model"))
import make_vision_models as mv  # noqa: E402
import reference  # noqa: E402

CASE = dict(case="vit-b16", family="vit", head=True, d=768, L=12, H=12, d_ff=3072, image_size=224, patch_size=16,
            picture=(224, 224), resample=2, dtype="F32", seed=71)


class Vit(nn.Module):
    """ViTForImageClassification's forward in float32: patches (a strided convolution), [CLS],
    positions; per layer pre-norm attention and GELU MLP; the final norm; the classifier on [CLS]."""

    def __init__(self, W, cfg):
        super().__init__()
        self.names = list(W)
        for i, n in enumerate(self.names):  # buffers: the graph's initializers
            self.register_buffer(f"w{i}", W[n].float())
        self.cfg = cfg

    def forward(self, pixel_values):
        W = {n: getattr(self, f"w{i}") for i, n in enumerate(self.names)}
        c, e = self.cfg, "embeddings."
        d, H, eps = c["hidden_size"], c["num_attention_heads"], c["layer_norm_eps"]
        x = F.conv2d(pixel_values, W[e + "patch_embeddings.projection.weight"], W[e + "patch_embeddings.projection.bias"],
                     stride=c["patch_size"]).flatten(2).transpose(1, 2)[0]                    # [N, d]
        x = torch.cat([W[e + "cls_token"].reshape(1, d), x]) + W[e + "position_embeddings"][0]  # [T, d]
        T, dh = x.shape[0], d // H
        maps = []
        for i in range(c["num_hidden_layers"]):
            lp = f"encoder.layer.{i}."
            a = F.layer_norm(x, (d,), W[lp + "layernorm_before.weight"], W[lp + "layernorm_before.bias"], eps)
            s = lp + "attention.attention."
            q, k, v = (F.linear(a, W[s + n + ".weight"], W[s + n + ".bias"]).reshape(T, H, dh).transpose(0, 1)
                       for n in ("query", "key", "value"))                                      # [H, T, dh]
            probs = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(dh), dim=-1)                # [H, T, T]
            maps.append(probs)
            context = (probs @ v).transpose(0, 1).reshape(T, d)
            x = x + F.linear(context, W[lp + "attention.output.dense.weight"], W[lp + "attention.output.dense.bias"])
            m = F.layer_norm(x, (d,), W[lp + "layernorm_after.weight"], W[lp + "layernorm_after.bias"], eps)
            m = F.gelu(F.linear(m, W[lp + "intermediate.dense.weight"], W[lp + "intermediate.dense.bias"]))
            x = x + F.linear(m, W[lp + "output.dense.weight"], W[lp + "output.dense.bias"])
        x = F.layer_norm(x, (d,), W["layernorm.weight"], W["layernorm.bias"], eps)
        return F.linear(x[0], W["classifier.weight"], W["classifier.bias"]), torch.stack(maps)


def main(folder, out):
    torch.set_num_threads(1)
    cfg, tower, weights, prep = mv.vit_case(CASE)
    mv.case_folder(os.path.dirname(folder), dict(CASE, case=os.path.basename(folder)), dict(cfg), weights)
    mv.write_json(os.path.join(folder, "preprocessor_config.json"), prep, indent=2)
    model = Vit(weights.W, tower).eval()
    S = cfg["image_size"]
    pixels = torch.as_tensor(np.random.default_rng(5).uniform(-1, 1, (3, S, S)), dtype=torch.float32)
    with torch.no_grad():
        logits, attention = model(pixels[None])
        ref = reference.vit_forward(weights.W, tower, pixels.double().numpy())
        dl = float((logits.double() - ref["logits"]).abs().max() / ref["logits"].abs().max())
        da = float((attention.double() - ref["attention"]).abs().max())
        assert dl < 1e-4 and da < 1e-4, f"the float32 forward is not the reference's: logits {dl:.1e}, attention {da:.1e}"
        torch.onnx.export(model, (pixels[None],), out, opset_version=14, input_names=["pixel_values"],
                          output_names=["logits", "attention"])
    print(f"wrote {folder} and {out}: ViT-B/16's shape, {sum(t.numel() for t in weights.W.values()) / 1e6:.1f} M parameters; "
          f"the float32 forward against the reference: logits {dl:.1e} (relative), attention {da:.1e}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
