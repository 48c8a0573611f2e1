#!/usr/bin/env python3
"""The PyTorch reference's run of a model folder (gpt2, bert, or one of the Llama-like
families) on given ids, as JSON on stdout: {"attention": [L][H][T][T], "q": [L][H][T][d_head],
"hidden": [T][d]}, and for the rotary families "q_unrotated" (Q before the rotation, after any
q/k norm) — for tests that check numbers the app shows for text typed into it
(tests/browser/model.mjs). A Gemma 3 folder of make_vision_models.py (transformers 5's names):
its picture's pixel values from expected.json, the ids those of a prompt with its image tokens;
"attention" and "hidden" only.

    /usr/bin/python3 tests/model/reference_run.py FOLDER 464,3797,3332
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference  # noqa: E402
from test_reference import read_checkpoint  # noqa: E402

LLAMA_LIKE = reference.LLAMA_LIKE

folder, ids = sys.argv[1], [int(i) for i in sys.argv[2].split(",")]
cfg = json.load(open(os.path.join(folder, "config.json")))
tensors = read_checkpoint(folder)  # model.safetensors, or the shards of its index
t = cfg["model_type"]
if t == "gemma3":
    views = torch.tensor(json.load(open(os.path.join(folder, "expected.json")))["pixel_values"], dtype=torch.float64)
    W = {n[len("model."):] if n.startswith("model.") else n: v for n, v in tensors.items()}
    with torch.no_grad():
        run = reference.gemma3_forward(W, cfg, ids, views)
    print(json.dumps({"attention": run["attention"].tolist(), "hidden": run["hidden"].tolist()}))
    sys.exit(0)
prefix = "model." if t in LLAMA_LIKE else {"gpt2": "transformer.", "bert": "bert."}[t]
W = {n[len(prefix):] if n.startswith(prefix) else n: v for n, v in tensors.items()}
forward = reference.llama_like_forward if t in LLAMA_LIKE else {"gpt2": reference.gpt2_forward, "bert": reference.bert_forward}[t]
with torch.no_grad():
    run = forward(W, cfg, ids)
out = {"attention": run["attention"].tolist(), "q": run["q"]["attention"].tolist(), "hidden": run["hidden"].tolist()}
if "q_unrotated" in run:
    out["q_unrotated"] = run["q_unrotated"]["attention"].tolist()
print(json.dumps(out))
