#!/usr/bin/python3
"""Writes tiny random-weight ViT checkpoints in the Hugging Face layout, each with a picture and
the float64 reference run of tests/model/reference.py (vit_forward) on it, for the C++ runtime's
vision tests (tests/model/test_vision.py).

usage: /usr/bin/python3 tests/model/make_vision_models.py OUTDIR

OUTDIR/cases.json lists the cases (written last); OUTDIR/CASE/ holds
  config.json                as save_pretrained writes a ViTConfig (the class's own fields, the
                             architectures, id2label/label2id when there is a classifier)
  model.safetensors          every tensor of ViTForImageClassification ("vit." + …, classifier.*)
                             or of ViTModel (no prefix, and pooler.dense.*, which attnviz ignores)
  preprocessor_config.json   a ViTImageProcessor's: resize to {height, width}, rescale, normalize
  image.png                  the picture (PIL, RGB, its own size: the processor resizes it)
  expected.json              {"case", "model_type": "vit", "dtype", "image": "image.png",
                             "pixel_values" [3][H][W] (tests/model/image_reference.py's process()
                             of image.png with that preprocessor config: float32 values),
                             "tokens" ["[CLS]", "p0,0", "p0,1", … "p{row},{col}"] (patches in row
                             order), "patches" {"rows": H/p, "cols": W/p, "size": p, "first": 1},
                             "attention" [L][H][T][T], "hidden" [T][d] (after the final layernorm),
                             "logits" [num_labels] (the classifier on the [CLS] row; ViTModel: none),
                             "q": {"attention": [L][H][T][d_head]}, "x": {"attention": [L][T][d]}}
Fixed seeds, one thread: the same bytes every run.
"""
import math
import os
import sys

import numpy as np
import torch
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference  # noqa: E402
from image_reference import process  # noqa: E402
from make_models import RandomWeights, case_folder, expected_json, write_json  # noqa: E402
from hf_files import TORCH_DTYPES  # noqa: E402  (training/, on the path make_models set)

torch.set_num_threads(1)

LABELS = ["tabby cat", "golden retriever", "espresso", "lighthouse", "sunflower"]

CASES = [
    dict(case="vit", head=True, d=32, L=2, H=4, d_ff=64, image_size=32, patch_size=8, picture=(45, 37),
         resample=2, dtype="F32", seed=61, name_or_path="attnviz/tiny-vit"),
    dict(case="vit-model", head=False, d=24, L=3, H=2, d_ff=40, image_size=48, patch_size=16, picture=(61, 29),
         resample=3, dtype="F32", seed=62),
]


def vit_config(case):
    """config.json as save_pretrained writes a ViTConfig: ViTConfig's fields (its defaults where the
    case does not set them), architectures, torch_dtype, transformers_version; the labels only for
    the classifier (ViTModel keeps PretrainedConfig's default two, which save_pretrained omits)."""
    cfg = {"_name_or_path": case.get("name_or_path"),
           "architectures": ["ViTForImageClassification" if case["head"] else "ViTModel"],
           "attention_probs_dropout_prob": 0.0, "encoder_stride": 16, "hidden_act": "gelu",
           "hidden_dropout_prob": 0.0, "hidden_size": case["d"], "image_size": case["image_size"],
           "initializer_range": 0.02, "intermediate_size": case["d_ff"], "layer_norm_eps": 1e-12,
           "model_type": "vit", "num_attention_heads": case["H"], "num_channels": 3,
           "num_hidden_layers": case["L"], "patch_size": case["patch_size"], "qkv_bias": True,
           "torch_dtype": str(TORCH_DTYPES[case["dtype"]])[6:], "transformers_version": "4.46.3"}
    if case["head"]:
        cfg["id2label"] = {str(i): name for i, name in enumerate(LABELS)}
        cfg["label2id"] = {name: i for i, name in enumerate(LABELS)}
    return cfg


def preprocessor_config(case):
    return {"image_processor_type": "ViTImageProcessor", "do_resize": True,
            "size": {"height": case["image_size"], "width": case["image_size"]}, "resample": case["resample"],
            "do_rescale": True, "rescale_factor": 0.00392156862745098, "do_normalize": True,
            "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5]}


def vit_weights(case, cfg):
    """The tensors in ViTForImageClassification's / ViTModel's state_dict order; the scales of
    make_models' other families (nn.Linear 1.2/√in, LayerNorm 1 ± 0.1), so that the softmax rows
    are neither uniform nor one-hot."""
    d, d_ff, p, C = cfg["hidden_size"], cfg["intermediate_size"], cfg["patch_size"], cfg["num_channels"]
    n = (cfg["image_size"] // p) ** 2
    w = RandomWeights(case["seed"], case["dtype"], "vit." if case["head"] else "")
    e = "embeddings."
    w.normal(e + "cls_token", (1, 1, d), 0.5)
    w.normal(e + "position_embeddings", (1, 1 + n, d), 0.3)
    w.normal(e + "patch_embeddings.projection.weight", (d, C, p, p), 1.2 / math.sqrt(C * p * p))
    w.normal(e + "patch_embeddings.projection.bias", (d,), 0.1)
    for i in range(cfg["num_hidden_layers"]):
        lp = f"encoder.layer.{i}."
        for name in ("query", "key", "value"):
            w.linear(lp + "attention.attention." + name, d, d)
        w.linear(lp + "attention.output.dense", d, d)
        w.linear(lp + "intermediate.dense", d, d_ff)
        w.linear(lp + "output.dense", d_ff, d)
        w.layer_norm(lp + "layernorm_before", d)
        w.layer_norm(lp + "layernorm_after", d)
    w.layer_norm("layernorm", d)
    if case["head"]:  # ViTForImageClassification: the classifier, never under the prefix
        for name, shape, std in (("classifier.weight", (len(LABELS), d), 1.2 / math.sqrt(d)),
                                 ("classifier.bias", (len(LABELS),), 0.1)):
            w.add(name, std * w.rng.standard_normal(shape), file_name=name)
    else:  # ViTModel's pooler (dense + tanh on [CLS]): in the file, not in attnviz's run
        w.linear("pooler.dense", d, d)
    return w


def picture(case):
    """An RGB picture of the case's size (width, height): gradients, a disc, seeded noise."""
    width, height = case["picture"]
    rng = np.random.default_rng(case["seed"] + 1000)
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    disc = ((x - 0.6 * width) ** 2 + (y - 0.4 * height) ** 2 < (0.3 * min(width, height)) ** 2) * 90.0
    rgb = np.stack([255 * x / (width - 1), 255 * y / (height - 1), 60 + disc + 60 * np.sin(x / 3.0)], -1)
    rgb = rgb + rng.normal(0, 25, rgb.shape)
    return Image.fromarray(np.clip(np.rint(rgb), 0, 255).astype(np.uint8), "RGB")


def check_patches(W, cfg, pixel_values):
    """The reference's patch projection (a product) against torch's Conv2d, and its row order."""
    weight = W["embeddings.patch_embeddings.projection.weight"]
    p = cfg["patch_size"]
    values = torch.as_tensor(pixel_values, dtype=torch.float64)[None]
    conv = torch.nn.functional.conv2d(values, weight, W["embeddings.patch_embeddings.projection.bias"], stride=p)
    conv = conv.flatten(2).transpose(1, 2)[0]  # [N, d]
    ours = reference.vit_patches(W, cfg, pixel_values)
    assert float((conv - ours).abs().max()) < 1e-12, "the patch projection is not the Conv2d's"


def make_case(out, case):
    cfg = vit_config(case)
    weights = vit_weights(case, cfg)
    folder = case_folder(out, case, dict(cfg), weights)
    prep = preprocessor_config(case)
    write_json(os.path.join(folder, "preprocessor_config.json"), prep, indent=2)
    picture(case).save(os.path.join(folder, "image.png"))
    pixel_values = process(Image.open(os.path.join(folder, "image.png")), prep)  # float32 [3, H, W]
    check_patches(weights.W, cfg, pixel_values)
    run = reference.vit_forward(weights.W, cfg, pixel_values)
    p, side = cfg["patch_size"], cfg["image_size"] // cfg["patch_size"]
    inputs = {"image": "image.png", "pixel_values": pixel_values.tolist(),
              "tokens": ["[CLS]"] + [f"p{r},{c}" for r in range(side) for c in range(side)],
              "patches": {"rows": side, "cols": side, "size": p, "first": 1}}
    expected_json(folder, case, "vit", inputs, run)
    return case["case"]


def main(out):
    os.makedirs(out, exist_ok=True)
    cases = [make_case(out, case) for case in CASES]
    write_json(os.path.join(out, "cases.json"), cases, indent=2)  # written last: the build's stamp


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
