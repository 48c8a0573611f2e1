#!/usr/bin/env python3
"""Writes a BERT-base-sized import file (SPEC.md §3) for the end-to-end import benchmark
(bench/import_e2e.mjs): 12 layers × 12 heads × 256 × 256 softmax rows, 256 WordPiece-style
tokens, numbers with 6 significant digits as scripts/export_attention.py writes them (about
120 MB). The same seed gives the same bytes (numpy's PCG64 and Python's "%.6g").
    /usr/bin/python3 bench/make_bert_import.py OUT.json [--layers 12] [--heads 12] [--T 256]
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from export_attention import write_import  # noqa: E402

WORDS = ("the cat sat on the mat and un ##believ ##able things happened to the house while "
         "everyone watched , then it rained for a long time .").split()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--T", type=int, default=256)
    a = p.parse_args()
    rng = np.random.default_rng(256)
    tokens = ["[CLS]"] + [WORDS[i % len(WORDS)] for i in range(a.T - 2)] + ["[SEP]"]
    attention = []
    for _ in range(a.layers):
        scores = rng.normal(0.0, 2.0, size=(a.heads, a.T, a.T))
        weights = np.exp(scores - scores.max(axis=-1, keepdims=True))  # softmax per row
        attention.append(weights / weights.sum(axis=-1, keepdims=True))
    write_import(a.out, tokens, attention, model="bert-sized (bench/make_bert_import.py)")


if __name__ == "__main__":
    main()
