"""GGUF files written from Python for the tests: the container (v3, as llama.cpp's gguf-py
writes it), ggml's block formats (quantizers and dequantizers), and llama.cpp's converter's one
change to a checkpoint that attnviz must undo (Q and K rows paired for its RoPE).

Quantizers: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL and MXFP4 as ggml's quantize_row_*_ref
(ggml-quants.c); the K-quants (Q2_K … Q6_K) with a plainer choice of scales than ggml's search
(make_qkx2_quants and friends), written into ggml's exact block layouts: the tests need valid
blocks of every layout and dequantize them as ggml does, not ggml's quantization error.
Dequantizers: ggml's dequantize_row_*, in float32 and in ggml's order of operations.

[SECTION] The container
[SECTION] Block formats
[SECTION] The converter's changes
"""
import struct

import numpy as np

# [SECTION] The container ------------------------------------------------------------------------

U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
SCALARS = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f", BOOL: "<?", U64: "<Q", I64: "<q", F64: "<d"}
GGML_TYPES = {"F32": 0, "F16": 1, "Q4_0": 2, "Q4_1": 3, "Q5_0": 6, "Q5_1": 7, "Q8_0": 8, "Q2_K": 10, "Q3_K": 11,
              "Q4_K": 12, "Q5_K": 13, "Q6_K": 14, "IQ4_NL": 20, "BF16": 30, "MXFP4": 39}


def gguf_string(s):
    b = s.encode("utf-8") if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def gguf_value(kind, value):
    if kind == STRING:
        return gguf_string(value)
    if kind == ARRAY:
        element, items = value
        return struct.pack("<IQ", element, len(items)) + b"".join(gguf_value(element, v) for v in items)
    return struct.pack(SCALARS[kind], value)


def write_gguf(path, metadata, tensors, alignment=32, version=3):
    """metadata: [(key, kind, value)] (arrays: (ARRAY, (element kind, [values]))); tensors:
    [(name, type name, shape as numpy gives it (outermost first), raw bytes)], written in order,
    each at the alignment."""
    out = bytearray(b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(metadata)))
    for key, kind, value in metadata:
        out += gguf_string(key) + struct.pack("<I", kind) + gguf_value(kind, value)
    offset, data = 0, bytearray()
    for name, kind, shape, raw in tensors:
        dims = list(reversed(shape))  # ne[0] first
        out += gguf_string(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", n) for n in dims)
        out += struct.pack("<IQ", GGML_TYPES[kind], offset)
        data += raw + b"\0" * (-len(raw) % alignment)
        offset = len(data)
    out += b"\0" * (-len(out) % alignment)
    with open(path, "wb") as f:
        f.write(bytes(out) + bytes(data))

# [SECTION] Block formats ---------------------------------------------------------------------------

BLOCK = {"F32": (1, 4), "F16": (1, 2), "BF16": (1, 2), "Q4_0": (32, 18), "Q4_1": (32, 20), "Q5_0": (32, 22),
         "Q5_1": (32, 24), "Q8_0": (32, 34), "Q2_K": (256, 84), "Q3_K": (256, 110), "Q4_K": (256, 144),
         "Q5_K": (256, 176), "Q6_K": (256, 210), "IQ4_NL": (32, 18), "MXFP4": (32, 17)}
IQ4NL = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113], np.float32)
MXFP4 = np.array([0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12], np.float32)
f32 = np.float32


def half(x):
    return np.float16(x)


def h(b, at):  # an IEEE half at byte `at`, as float32
    return f32(np.frombuffer(bytes(b[at:at + 2]), "<f2")[0])


def nearest(x):  # ggml's nearest_int: round half to even
    return int(np.rint(x))


def nibbles(lo, hi):  # 16 bytes: lo[j] in the low nibble, hi[j] in the high
    return bytes(int(a) | (int(b) << 4) for a, b in zip(lo, hi))


def q_simple(x, kind):
    """One block of 32: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, MXFP4 (quantize_row_*_ref)."""
    x = np.asarray(x, f32)
    if kind == "Q8_0":
        amax = np.abs(x).max()
        d = amax / 127
        q = [nearest(v / d) if d else 0 for v in x]
        return half(d).tobytes() + bytes(np.int8(q).tobytes())
    if kind in ("Q4_0", "Q5_0"):
        nmax = 8 if kind == "Q4_0" else 16
        m = x[np.argmax(np.abs(x))]
        d = m / -nmax
        idd = 1 / d if d else 0
        q = [min(2 * nmax - 1, int(v * idd + nmax + 0.5)) for v in x]
        if kind == "Q4_0":
            return half(d).tobytes() + nibbles(q[:16], q[16:])
        qh = sum(((q[j] & 0x10) >> 4) << j for j in range(16)) | sum(((q[j + 16] & 0x10) >> 4) << (j + 16) for j in range(16))
        return half(d).tobytes() + struct.pack("<I", qh) + nibbles([v & 15 for v in q[:16]], [v & 15 for v in q[16:]])
    if kind in ("Q4_1", "Q5_1"):
        nmax = 15 if kind == "Q4_1" else 31
        lo, hi = x.min(), x.max()
        d = (hi - lo) / nmax
        idd = 1 / d if d else 0
        q = [min(nmax, int((v - lo) * idd + 0.5)) for v in x]
        head = half(d).tobytes() + half(lo).tobytes()
        if kind == "Q4_1":
            return head + nibbles(q[:16], q[16:])
        qh = sum(((q[j] & 0x10) >> 4) << j for j in range(16)) | sum(((q[j + 16] & 0x10) >> 4) << (j + 16) for j in range(16))
        return head + struct.pack("<I", qh) + nibbles([v & 15 for v in q[:16]], [v & 15 for v in q[16:]])
    if kind == "IQ4_NL":
        amax = np.abs(x).max()
        d = x[np.argmax(np.abs(x))] / IQ4NL[0]
        q = [int(np.argmin(np.abs(IQ4NL * d - v))) if amax else 0 for v in x]
        return half(d).tobytes() + nibbles(q[:16], q[16:])
    if kind == "MXFP4":
        amax = np.abs(x).max()
        e = int(np.floor(np.log2(amax)) - 2 + 127) if amax > 0 else 0
        d = f32(np.ldexp(f32(1), e - 128))
        q = [int(np.argmin(np.abs(MXFP4 * d - v))) for v in x]
        return bytes([e]) + nibbles(q[:16], q[16:])
    raise ValueError(kind)


def scales_k4(sc, mn):  # Q4_K, Q5_K: 8 6-bit scales and mins in 12 bytes (get_scale_min_k4's inverse)
    b = [0] * 12
    for j in range(8):
        if j < 4:
            b[j] |= sc[j]
            b[j + 4] |= mn[j]
        else:
            b[j + 4] = (sc[j] & 15) | ((mn[j] & 15) << 4)
            b[j - 4] |= (sc[j] >> 4) << 6
            b[j] |= (mn[j] >> 4) << 6
    return bytes(b)


def affine(x, groups, nmax, scale_max):
    """Per group of len(x)/groups: min ≤ 0 and scale, as (d, dmin, scale codes, min codes, q)."""
    g = x.reshape(groups, -1)
    mins = np.minimum(g.min(1), 0)
    scales = (g.max(1) - mins) / nmax
    d = half(scales.max() / scale_max if scales.max() > 0 else 0)
    dmin = half(-mins.min() / scale_max if mins.min() < 0 else 0)
    sc = [min(scale_max, nearest(s / f32(d))) if d else 0 for s in scales]
    mn = [min(scale_max, nearest(-m / f32(dmin))) if dmin else 0 for m in mins]
    q = []
    for j in range(groups):
        dl, ml = f32(d) * f32(sc[j]), f32(dmin) * f32(mn[j])
        q += [max(0, min(nmax, nearest((v + ml) / dl))) if dl else 0 for v in g[j]]
    return d, dmin, sc, mn, q


def symmetric(x, nmax, scale_max):
    """Q3_K, Q6_K: per group of 16, a signed scale code (d·code ≈ the group's largest number /
    −nmax) and codes L in [0, 2·nmax) for q = L − nmax, as (d, scale codes, L)."""
    g = x.reshape(16, 16)
    scales = g[np.arange(16), np.argmax(np.abs(g), 1)] / -nmax
    d = half(np.abs(scales).max() / scale_max if np.abs(scales).max() > 0 else 0)
    sc = [max(-scale_max - 1, min(scale_max, nearest(s / f32(d)))) if d else 0 for s in scales]
    L = []
    for j in range(16):
        dl = f32(d) * f32(sc[j])
        L += [max(-nmax, min(nmax - 1, nearest(v / dl))) + nmax if dl else nmax for v in g[j]]
    return d, sc, L


def q_k(x, kind):
    """One block of 256: Q2_K … Q6_K in ggml's layouts (scales chosen plainly)."""
    x = np.asarray(x, f32)
    if kind in ("Q4_K", "Q5_K"):
        nmax = 15 if kind == "Q4_K" else 31
        d, dmin, sc, mn, q = affine(x, 8, nmax, 63)
        head = half(d).tobytes() + half(dmin).tobytes() + scales_k4(sc, mn)
        if kind == "Q4_K":
            return head + b"".join(nibbles(q[64 * k:64 * k + 32], q[64 * k + 32:64 * k + 64]) for k in range(4))
        qh = [0] * 32
        for k in range(4):  # sub-blocks 2k, 2k + 1: fifth bits 2k and 2k + 1
            for l in range(32):
                qh[l] |= ((q[64 * k + l] >> 4) << (2 * k)) | ((q[64 * k + 32 + l] >> 4) << (2 * k + 1))
        low = b"".join(nibbles([v & 15 for v in q[64 * k:64 * k + 32]], [v & 15 for v in q[64 * k + 32:64 * k + 64]]) for k in range(4))
        return head + bytes(qh) + low
    if kind == "Q2_K":
        d, dmin, sc, mn, q = affine(x, 16, 3, 15)
        scales = bytes(s | (m << 4) for s, m in zip(sc, mn))
        qs = bytearray(64)
        for n in range(2):
            for j in range(4):  # shift 2j: sub-blocks 8n + 2j (q[l]) and 8n + 2j + 1 (q[l + 16])
                for l in range(32):
                    qs[32 * n + l] |= q[128 * n + 32 * j + l] << (2 * j)
        return scales + bytes(qs) + half(d).tobytes() + half(dmin).tobytes()
    if kind == "Q6_K":
        d, sc, L = symmetric(x, 32, 127)
        ql, qh = bytearray(128), bytearray(64)
        for n in range(2):
            for l in range(32):
                q1, q2, q3, q4 = L[128 * n + l], L[128 * n + l + 32], L[128 * n + l + 64], L[128 * n + l + 96]
                ql[64 * n + l] = (q1 & 15) | ((q3 & 15) << 4)
                ql[64 * n + l + 32] = (q2 & 15) | ((q4 & 15) << 4)
                qh[32 * n + l] = (q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6)
        return bytes(ql) + bytes(qh) + np.int8(sc).tobytes() + half(d).tobytes()
    if kind == "Q3_K":
        d, sc, L = symmetric(x, 4, 31)
        hmask, qs = bytearray(32), bytearray(64)
        for j in range(256):  # the high bit of number j: hmask[j % 32], bit j // 32
            if L[j] > 3:
                hmask[j % 32] |= 1 << (j // 32)
        for n in range(2):
            for j in range(4):
                for l in range(32):
                    qs[32 * n + l] |= (L[128 * n + 32 * j + l] & 3) << (2 * j)
        packed = [0] * 12
        for j in range(16):
            v = sc[j] + 32
            packed[j % 8] |= (v & 15) << (4 * (j // 8))
            packed[8 + j % 4] |= (v >> 4) << (2 * (j // 4))
        return bytes(hmask) + bytes(qs) + bytes(packed) + half(d).tobytes()
    raise ValueError(kind)


def quantize(values, kind):
    """values [rows, n] (n whole blocks) -> raw bytes of `kind`."""
    x = np.asarray(values, f32)
    if kind == "F32":
        return x.astype("<f4").tobytes()
    if kind == "F16":
        return x.astype("<f2").tobytes()
    if kind == "BF16":
        return (x.view(np.uint32) >> 16).astype("<u2").tobytes()  # truncated: the test's own values
    size = BLOCK[kind][0]
    blocks = x.reshape(-1, size)
    one = q_k if size == 256 else q_simple
    return b"".join(one(b, kind) for b in blocks)


def dequantize(raw, kind, n):
    """n numbers of `kind` from raw bytes, as ggml's dequantize_row_* computes them (float32)."""
    if kind == "F32":
        return np.frombuffer(raw, "<f4", n).astype(f32)
    if kind == "F16":
        return np.frombuffer(raw, "<f2", n).astype(f32)
    if kind == "BF16":
        return (np.frombuffer(raw, "<u2", n).astype(np.uint32) << 16).view(f32)
    size, nbytes = BLOCK[kind]
    out = np.zeros(n, f32)
    for i in range(n // size):
        b, y = raw[i * nbytes:(i + 1) * nbytes], out[i * size:(i + 1) * size]
        if kind in ("Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "IQ4_NL"):
            d = h(b, 0)
        if kind == "Q4_0":
            for j in range(16):
                y[j], y[j + 16] = f32((b[2 + j] & 15) - 8) * d, f32((b[2 + j] >> 4) - 8) * d
        elif kind == "Q4_1":
            m = h(b, 2)
            for j in range(16):
                y[j], y[j + 16] = f32(b[4 + j] & 15) * d + m, f32(b[4 + j] >> 4) * d + m
        elif kind in ("Q5_0", "Q5_1"):
            one = kind == "Q5_1"
            m = h(b, 2) if one else f32(0)
            qh = struct.unpack("<I", bytes(b[4 if one else 2:8 if one else 6]))[0]
            qs = b[8 if one else 6:]
            for j in range(16):
                x0 = (qs[j] & 15) | (((qh >> j) << 4) & 0x10)
                x1 = (qs[j] >> 4) | ((qh >> (j + 12)) & 0x10)
                if one:
                    y[j], y[j + 16] = f32(x0) * d + m, f32(x1) * d + m
                else:
                    y[j], y[j + 16] = f32(x0 - 16) * d, f32(x1 - 16) * d
        elif kind == "Q8_0":
            y[:] = np.frombuffer(bytes(b[2:34]), np.int8).astype(f32) * d
        elif kind == "IQ4_NL":
            for j in range(16):
                y[j], y[j + 16] = d * IQ4NL[b[2 + j] & 15], d * IQ4NL[b[2 + j] >> 4]
        elif kind == "MXFP4":
            d = f32(np.ldexp(f32(1), int(b[0]) - 128))
            for j in range(16):
                y[j], y[j + 16] = MXFP4[b[1 + j] & 15] * d, MXFP4[b[1 + j] >> 4] * d
        elif kind in ("Q4_K", "Q5_K"):
            d, dmin, sc8 = h(b, 0), h(b, 2), b[4:16]
            qh, ql = (b[16:48], b[48:]) if kind == "Q5_K" else (None, b[16:])

            def sm(j):
                if j < 4:
                    return sc8[j] & 63, sc8[j + 4] & 63
                return (sc8[j + 4] & 15) | ((sc8[j - 4] >> 6) << 4), (sc8[j + 4] >> 4) | ((sc8[j] >> 6) << 4)
            for k in range(4):
                (s1, m1), (s2, m2) = sm(2 * k), sm(2 * k + 1)
                d1, mm1, d2, mm2 = d * f32(s1), dmin * f32(m1), d * f32(s2), dmin * f32(m2)
                for l in range(32):
                    lo, hi = ql[32 * k + l] & 15, ql[32 * k + l] >> 4
                    if qh is not None:
                        lo += 16 if qh[l] & (1 << (2 * k)) else 0
                        hi += 16 if qh[l] & (2 << (2 * k)) else 0
                    y[64 * k + l], y[64 * k + 32 + l] = d1 * f32(lo) - mm1, d2 * f32(hi) - mm2
        elif kind == "Q2_K":
            d, dmin = h(b, 80), h(b, 82)
            at = 0
            for n in range(2):
                for j in range(4):
                    for part in range(2):
                        sc = b[8 * n + 2 * j + part]
                        dl, ml = d * f32(sc & 15), dmin * f32(sc >> 4)
                        for l in range(16):
                            y[at] = dl * f32((b[16 + 32 * n + l + 16 * part] >> (2 * j)) & 3) - ml
                            at += 1
        elif kind == "Q3_K":
            d = h(b, 108)
            hm, qs, packed = b[0:32], b[32:96], b[96:108]
            sc = [((packed[j % 8] >> (4 * (j // 8))) & 15) | (((packed[8 + j % 4] >> (2 * (j // 4))) & 3) << 4) for j in range(16)]
            at, m = 0, 1
            for n in range(2):
                for j in range(4):
                    for part in range(2):
                        dl = d * f32(sc[8 * n + 2 * j + part] - 32)
                        for l in range(16):
                            k = l + 16 * part
                            y[at] = dl * f32(((qs[32 * n + k] >> (2 * j)) & 3) - (0 if hm[k] & m else 4))
                            at += 1
                    m <<= 1
        elif kind == "Q6_K":
            ql, qh, sc, d = b[0:128], b[128:192], np.frombuffer(bytes(b[192:208]), np.int8), h(b, 208)
            for n in range(2):
                for l in range(32):
                    L, H = ql[64 * n:], qh[32 * n:]
                    s = sc[8 * n:]
                    q1 = ((L[l] & 15) | (((H[l] >> 0) & 3) << 4)) - 32
                    q2 = ((L[l + 32] & 15) | (((H[l] >> 2) & 3) << 4)) - 32
                    q3 = ((L[l] >> 4) | (((H[l] >> 4) & 3) << 4)) - 32
                    q4 = ((L[l + 32] >> 4) | (((H[l] >> 6) & 3) << 4)) - 32
                    is_ = l // 16
                    y[128 * n + l] = d * f32(s[is_]) * f32(q1)
                    y[128 * n + l + 32] = d * f32(s[is_ + 2]) * f32(q2)
                    y[128 * n + l + 64] = d * f32(s[is_ + 4]) * f32(q3)
                    y[128 * n + l + 96] = d * f32(s[is_ + 6]) * f32(q4)
        else:
            raise ValueError(kind)
    return out

# [SECTION] The converter's changes ---------------------------------------------------------------


def pair_rows(w, heads):
    """LlamaModel.permute (convert_hf_to_gguf.py): each head's rows i and i + n/2 made adjacent."""
    w = np.asarray(w)
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)

# [SECTION] The fuzzer's seeds ----------------------------------------------------------------------


def write_seeds(folder):
    """tests/fuzz/corpus/gguf: three tiny models (d 32, one layer), llama in Q8_0 and Q4_0 with a
    byte-level BPE, gemma2 in Q4_K's cousins' 32-blocks (IQ4_NL, Q5_1) with a SentencePiece one,
    gpt2 in Q8_0 and F16 with GPT-2's pre-tokenizer."""
    import os
    rng = np.random.default_rng(7)
    d, heads, kv, hd, ff, vocab = 32, 2, 1, 16, 64, 12
    tokens = [chr(ord("a") + i) for i in range(vocab - 2)] + ["ab", "<s>"]
    for arch, kinds, model in (("llama", ("Q8_0", "Q4_0"), "gpt2"), ("gemma2", ("IQ4_NL", "Q5_1"), "llama")):
        meta = [("general.architecture", STRING, arch), (f"{arch}.context_length", U32, 16), (f"{arch}.embedding_length", U32, d),
                (f"{arch}.block_count", U32, 1), (f"{arch}.feed_forward_length", U32, ff), (f"{arch}.attention.head_count", U32, heads),
                (f"{arch}.attention.head_count_kv", U32, kv), (f"{arch}.attention.key_length", U32, hd),
                (f"{arch}.attention.layer_norm_rms_epsilon", F32, 1e-6), (f"{arch}.attention.sliding_window", U32, 4),
                ("tokenizer.ggml.model", STRING, model), ("tokenizer.ggml.tokens", ARRAY, (STRING, tokens)),
                ("tokenizer.ggml.scores", ARRAY, (F32, [-float(i) for i in range(vocab)])),
                ("tokenizer.ggml.token_type", ARRAY, (I32, [1] * (vocab - 1) + [3])),
                ("tokenizer.ggml.merges", ARRAY, (STRING, ["a b"])), ("tokenizer.ggml.bos_token_id", U32, vocab - 1)]
        shapes = {"token_embd.weight": (vocab, d), "output_norm.weight": (d,), "blk.0.attn_norm.weight": (d,),
                  "blk.0.attn_q.weight": (heads * hd, d), "blk.0.attn_k.weight": (kv * hd, d), "blk.0.attn_v.weight": (kv * hd, d),
                  "blk.0.attn_output.weight": (d, heads * hd), "blk.0.ffn_norm.weight": (d,), "blk.0.ffn_gate.weight": (ff, d),
                  "blk.0.ffn_up.weight": (ff, d), "blk.0.ffn_down.weight": (d, ff)}
        if arch == "gemma2":
            shapes.update({"blk.0.post_attention_norm.weight": (d,), "blk.0.post_ffw_norm.weight": (d,)})
        tensors = []
        for i, (name, shape) in enumerate(shapes.items()):
            x = rng.standard_normal(shape).astype(f32) * 0.3 + (1.0 if len(shape) == 1 else 0.0)
            kind = "F32" if len(shape) == 1 else kinds[i % 2]
            tensors.append((name, kind, shape, quantize(x.reshape(shape[0], -1) if len(shape) == 2 else x[None, :], kind)))
        write_gguf(os.path.join(folder, f"{arch}_tiny.gguf"), meta, tensors)
    # gpt2 as GPT2Model writes it: its own keys and tensors, the Conv1D weights [out, in], biases,
    # learned positions (a generator of its own: the seeds above stay as they were)
    rng = np.random.default_rng(8)
    meta = [("general.architecture", STRING, "gpt2"), ("gpt2.context_length", U32, 16), ("gpt2.embedding_length", U32, d),
            ("gpt2.block_count", U32, 1), ("gpt2.feed_forward_length", U32, ff), ("gpt2.attention.head_count", U32, heads),
            ("gpt2.attention.layer_norm_epsilon", F32, 1e-5), ("tokenizer.ggml.model", STRING, "gpt2"),
            ("tokenizer.ggml.pre", STRING, "gpt-2"), ("tokenizer.ggml.tokens", ARRAY, (STRING, tokens)),
            ("tokenizer.ggml.token_type", ARRAY, (I32, [1] * (vocab - 1) + [3])), ("tokenizer.ggml.merges", ARRAY, (STRING, ["a b"]))]
    shapes = {"token_embd.weight": (vocab, d), "position_embd.weight": (16, d), "output_norm.weight": (d,), "output_norm.bias": (d,),
              "blk.0.attn_norm.weight": (d,), "blk.0.attn_norm.bias": (d,), "blk.0.attn_qkv.weight": (3 * d, d), "blk.0.attn_qkv.bias": (3 * d,),
              "blk.0.attn_output.weight": (d, d), "blk.0.attn_output.bias": (d,), "blk.0.ffn_norm.weight": (d,), "blk.0.ffn_norm.bias": (d,),
              "blk.0.ffn_up.weight": (ff, d), "blk.0.ffn_up.bias": (ff,), "blk.0.ffn_down.weight": (d, ff), "blk.0.ffn_down.bias": (d,)}
    tensors = []
    for i, (name, shape) in enumerate(shapes.items()):
        x = rng.standard_normal(shape).astype(f32) * 0.3
        kind = "F32" if len(shape) == 1 or name.startswith("position") else ("Q8_0", "F16")[i % 2]
        tensors.append((name, kind, shape, quantize(x.reshape(shape[0], -1) if len(shape) == 2 else x[None, :], kind)))
    write_gguf(os.path.join(folder, "gpt2_tiny.gguf"), meta, tensors)


if __name__ == "__main__":
    import sys
    if len(sys.argv) != 2:
        sys.exit("usage: /usr/bin/python3 tests/model/gguf_files.py FOLDER   (writes the fuzzer's seeds)")
    write_seeds(sys.argv[1])
