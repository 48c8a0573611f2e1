"""What the tests of attnviz.serve() share: asking it, reading its binary answers, and a
tokenizer of numbered words for models built without tokenizer files."""
import json
import struct
import urllib.error
import urllib.request

import numpy as np
import torch


def request(served, path, body=None, token=True, headers=None, timeout=600):
    """(status, bytes) of a request to the server: a GET, or a POST of `body` (JSON or bytes);
    the server's token in its header unless token is False (or another token)."""
    h = dict(headers or {})
    if token:
        h["X-Attnviz-Token"] = served.token if token is True else token
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    req = urllib.request.Request(served.address + path, data=data, headers=h, method="POST" if data is not None else "GET")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def tensors(blob):
    """A .safetensors answer -> ({name: float32 array}, metadata): F32, F16 and BF16 tensors."""
    n = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        raw = blob[8 + n + a:8 + n + b]
        if info["dtype"] == "F32":
            values = np.frombuffer(raw, dtype=np.float32)
        elif info["dtype"] == "F16":
            values = np.frombuffer(raw, dtype=np.float16).astype(np.float32)
        else:  # BF16: the high half of a float32
            values = (np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
        out[name] = values.reshape(info["shape"])
    return out, header.get("__metadata__", {})


class Words:
    """A tokenizer of "wN" words: id N."""

    def __call__(self, text, return_tensors=None):
        return {"input_ids": torch.tensor([[int(w[1:]) for w in text.split()]])}

    def convert_ids_to_tokens(self, ids):
        return [f"w{int(i)}" for i in ids]

    def decode(self, ids):
        return "".join(f" w{int(i)}" for i in ids)
