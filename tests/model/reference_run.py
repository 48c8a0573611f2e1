#!/usr/bin/env python3
"""The PyTorch reference's run of a gpt2 or bert folder on given ids, as JSON on stdout:
{"attention": [L][H][T][T], "q": [L][H][T][d_head], "hidden": [T][d]} — for tests that check
numbers the app shows for text typed into it (tests/browser/model.mjs).

    /usr/bin/python3 tests/model/reference_run.py FOLDER 464,3797,3332
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference  # noqa: E402
from test_reference import read_safetensors  # noqa: E402

folder, ids = sys.argv[1], [int(i) for i in sys.argv[2].split(",")]
cfg = json.load(open(os.path.join(folder, "config.json")))
tensors = read_safetensors(os.path.join(folder, "model.safetensors"))
prefix = {"gpt2": "transformer.", "bert": "bert."}[cfg["model_type"]]
W = {n[len(prefix):] if n.startswith(prefix) else n: t for n, t in tensors.items()}
forward = {"gpt2": reference.gpt2_forward, "bert": reference.bert_forward}[cfg["model_type"]]
with torch.no_grad():
    run = forward(W, cfg, ids)
print(json.dumps({"attention": run["attention"].tolist(), "q": run["q"]["attention"].tolist(), "hidden": run["hidden"].tolist()}))
