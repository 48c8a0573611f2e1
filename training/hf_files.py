"""The files of a Hugging Face checkpoint, written from Python: safetensors (F32, F16, BF16),
JSON, and GPT-2's byte alphabet. Shared by the tests' random-weight checkpoints
(tests/model/make_models.py) and the shipped models' training scripts (training/).

[SECTION] safetensors
[SECTION] GPT-2's byte alphabet and BPE merges
"""
import math
import json
import struct

import numpy as np
import torch

# [SECTION] safetensors --------------------------------------------------------------------------

TORCH_DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}
RAW_VIEWS = {"F32": torch.int32, "F16": torch.int16, "BF16": torch.int16}  # the bits as stored


def stored(values, dtype):
    """float values -> (raw little-endian bytes in `dtype`, the stored values as float64)."""
    t = torch.tensor(np.asarray(values, dtype=np.float32)).to(TORCH_DTYPES[dtype])
    return t.view(RAW_VIEWS[dtype]).numpy().astype("<i%d" % t.element_size()).tobytes(), t.to(torch.float64)


def write_safetensors(path, tensors):
    """tensors: [(name, dtype, shape, raw bytes)] -> u64 header length, JSON header padded with
    spaces to a multiple of 8, then the data (offsets relative to the data's start)."""
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(raw for *_, raw in tensors))


def write_json(path, value, **options):
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(value, **options) + "\n")

# [SECTION] GPT-2's byte alphabet and BPE merges --------------------------------------------


def bytes_to_unicode():
    """GPT-2's byte -> printable character map, in its order (the first 256 ids of vocab.json)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs, n = bs[:], 0
    for b in range(256):  # the other bytes (control, space, …) move to 256, 257, …
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def merge_pair(symbols, pair):
    """symbols with every adjacent occurrence of `pair` joined, left to right."""
    out, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
            out.append(symbols[i] + symbols[i + 1])
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out


def bpe_word(symbols, rank):
    """GPT2Tokenizer's merging of one word: the lowest-ranked adjacent pair first, until none is
    in `rank` ({pair: rank})."""
    while len(symbols) > 1:
        pair = min(zip(symbols, symbols[1:]), key=lambda p: rank.get(p, math.inf))
        if pair not in rank:
            break
        symbols = merge_pair(symbols, pair)
    return symbols
