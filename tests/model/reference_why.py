#!/usr/bin/env python3
"""The PyTorch reference's "why" views (SPEC.md §5: --lens, --attribute, --contrast, --corrupted)
of a decoder-only model folder (gpt2 or one of reference.LLAMA_LIKE) on given ids, as one JSON
object on stdout: {"ids", "lens"?, "attribution"?, "patching"?} with the shapes of
tests/model/reference.py's lens(), attribution() and patching() (float64; each asserts its own
invariants, so a run that prints is a run whose parts sum to its logit).

    /usr/bin/python3 tests/model/reference_why.py FOLDER --ids 1,2,3 [--lens] [--attribute ID]
        [--contrast ID] [--corrupted-ids 4,5,6]

--attribute and --contrast take vocabulary ids here (attnviz's '#ID'); --corrupted-ids needs both.
Also imported by tests/model/test_why.py for load().
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference  # noqa: E402
from test_reference import read_checkpoint  # noqa: E402

torch.set_num_threads(1)


def load(folder):
    """-> (config.json, {name without the head's prefix: float64 tensor})."""
    cfg = json.load(open(os.path.join(folder, "config.json")))
    t = cfg["model_type"]
    prefix = "model." if t in reference.LLAMA_LIKE else {"gpt2": "transformer.", "bert": "bert."}.get(t, "model.")
    W = {n[len(prefix):] if n.startswith(prefix) else n: v for n, v in read_checkpoint(folder).items()}
    return cfg, W


def ids_list(text):
    return [int(i) for i in text.split(",")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder")
    ap.add_argument("--ids", type=ids_list, required=True)
    ap.add_argument("--lens", action="store_true")
    ap.add_argument("--attribute", type=int)
    ap.add_argument("--contrast", type=int)
    ap.add_argument("--corrupted-ids", type=ids_list)
    a = ap.parse_args()
    if a.corrupted_ids is not None and (a.attribute is None or a.contrast is None):
        ap.error("--corrupted-ids needs --attribute and --contrast")
    if a.contrast is not None and a.attribute is None:
        ap.error("--contrast needs --attribute")
    cfg, W = load(a.folder)
    out = {"ids": a.ids}
    with torch.no_grad():
        if a.lens:
            out["lens"] = reference.lens(W, cfg, a.ids)[0]
        if a.attribute is not None:
            out["attribution"] = reference.attribution(W, cfg, a.ids, a.attribute, a.contrast)
        if a.corrupted_ids is not None:
            out["patching"] = reference.patching(W, cfg, a.ids, a.corrupted_ids, a.attribute, a.contrast)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
