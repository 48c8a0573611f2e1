#!/usr/bin/python3
"""Checks tests/model/make_models.py's cases against a second, independent implementation: each
model.safetensors is read back with numpy (not the writer's code), loaded into torch.nn's own
layers (TransformerEncoderLayer / TransformerDecoderLayer / MultiheadAttention, float64, with
GPT-2's Conv1D weights transposed into them), run, and every number of expected.json (maps, q, x,
hidden, logits, marian's greedy ids) must agree within 1e-9. Also: rows sum to 1, causal maps are
zero above the diagonal, the sinusoids equal Hugging Face's construction, the tokenizer files agree
with the config, every tensor in the file is used or known to be ignorable, two runs give the
same bytes, and deliberately wrong variants (the other GELU, interleaved sinusoids or unscaled
embeddings, a map moved by 1e-6) are caught, so the comparison can fail. Prints the largest difference.

usage: /usr/bin/python3 tests/model/test_reference.py
"""
import filecmp
import json
import math
import os
import struct
import sys
import tempfile

import numpy as np
import sentencepiece as spm
import torch
import torch.nn.functional as F
from torch import nn

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import make_models  # noqa: E402
import reference  # noqa: E402

torch.set_num_threads(1)
TOLERANCE = 1e-9
passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    passed, failed = passed + bool(ok), failed + (not ok)
    print(("ok    " if ok else "FAIL  ") + name + (f"  ({detail})" if detail else ""))


def max_diff(a, b):
    a, b = torch.as_tensor(a, dtype=torch.float64), torch.as_tensor(b, dtype=torch.float64)
    return math.inf if a.shape != b.shape else float((a - b).abs().max()) if a.numel() else 0.0

# [SECTION] An independent safetensors reader ----------------------------------------------------------


def read_safetensors(path):
    """-> {name: float64 tensor (or int64 / uint8 for integer buffers)}, checking the layout."""
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    assert n % 8 == 0 and header.pop("__metadata__") == {"format": "pt"}, "header"
    body, end, out = data[8 + n:], 0, {}
    for name, info in sorted(header.items(), key=lambda item: item[1]["data_offsets"]):
        begin, stop = info["data_offsets"]
        assert begin == end, f"{name}: a gap or an overlap before it"
        end = stop
        raw = body[begin:stop]
        kind = info["dtype"]
        if kind == "BF16":  # the high half of a float32
            values = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            values = np.frombuffer(raw, {"F32": "<f4", "F16": "<f2", "I64": "<i8", "U8": "u1", "BOOL": "u1"}[kind])
        assert values.size == math.prod(info["shape"]), f"{name}: size"
        values = values.reshape(info["shape"])
        out[name] = torch.from_numpy(values.astype(np.float64 if kind in ("F32", "F16", "BF16") else values.dtype))
    assert end == len(body), "trailing bytes"
    return out


class Weights:
    """The file's tensors by their names without the head's prefix; remembers which were used."""

    def __init__(self, tensors, prefix):
        self.tensors, self.prefix, self.used = tensors, prefix, set()

    def __call__(self, name):
        full = name if name in ("lm_head.weight", "final_logits_bias") else self.prefix + name
        self.used.add(full)
        return self.tensors[full]

    def has(self, name):
        return self.prefix + name in self.tensors

    def unused(self):
        return sorted(set(self.tensors) - self.used)


def put(parameter, value):  # a module's parameter <- a file's tensor, the shapes equal
    assert parameter.shape == value.shape, f"{tuple(parameter.shape)} vs {tuple(value.shape)}"
    with torch.no_grad():
        parameter.copy_(value)


def put_layer_norm(norm, w, name):
    put(norm.weight, w(name + ".weight"))
    put(norm.bias, w(name + ".bias"))

# [SECTION] The models from torch.nn's layers --------------------------------------------------------


def causal_mask(T):  # True: not attended
    return torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)


def heads_of(x, n_heads):  # [T, d] -> [H, T, d_head]
    return x.reshape(x.shape[0], n_heads, -1).transpose(0, 1)


def maps_and_queries(mha, x_q, x_kv, mask):
    """torch's MultiheadAttention: its per-head maps [H, T_q, T_k] and its Q projection [H, T_q, d_head]."""
    d = x_q.shape[-1]
    _, maps = mha(x_q[None], x_kv[None], x_kv[None], attn_mask=mask, need_weights=True, average_attn_weights=False)
    q = F.linear(x_q, mha.in_proj_weight[:d], mha.in_proj_bias[:d])
    return maps[0], heads_of(q, mha.num_heads)


def torch_gpt2(w, cfg, ids, activation):
    d, T, eps = cfg["n_embd"], len(ids), cfg["layer_norm_epsilon"]
    x = w("wte.weight")[ids] + w("wpe.weight")[:T]
    out = {"attention": [], "q": [], "x": []}
    for i in range(cfg["n_layer"]):
        p = f"h.{i}."
        layer = nn.TransformerEncoderLayer(d, cfg["n_head"], cfg["n_inner"] or 4 * d, dropout=0.0, activation=activation,
                                           layer_norm_eps=eps, batch_first=True, norm_first=True, dtype=torch.float64).eval()
        put(layer.self_attn.in_proj_weight, w(p + "attn.c_attn.weight").T)  # Conv1D [in, out] -> Linear [out, in]
        put(layer.self_attn.in_proj_bias, w(p + "attn.c_attn.bias"))
        put(layer.self_attn.out_proj.weight, w(p + "attn.c_proj.weight").T)
        put(layer.self_attn.out_proj.bias, w(p + "attn.c_proj.bias"))
        put(layer.linear1.weight, w(p + "mlp.c_fc.weight").T)
        put(layer.linear1.bias, w(p + "mlp.c_fc.bias"))
        put(layer.linear2.weight, w(p + "mlp.c_proj.weight").T)
        put(layer.linear2.bias, w(p + "mlp.c_proj.bias"))
        put_layer_norm(layer.norm1, w, p + "ln_1")
        put_layer_norm(layer.norm2, w, p + "ln_2")
        a = layer.norm1(x)
        maps, q = maps_and_queries(layer.self_attn, a, a, causal_mask(T))
        out["attention"].append(maps), out["q"].append(q), out["x"].append(a)
        x = layer(x[None], src_mask=causal_mask(T))[0]
    x = F.layer_norm(x, (d,), w("ln_f.weight"), w("ln_f.bias"), eps)
    return {"attention": torch.stack(out["attention"]), "hidden": x, "logits": F.linear(x[-1], w("wte.weight")),
            "q": {"attention": torch.stack(out["q"])}, "x": {"attention": torch.stack(out["x"])}}


def torch_bert(w, cfg, ids, activation):
    d, T, eps = cfg["hidden_size"], len(ids), cfg["layer_norm_eps"]
    e = "embeddings."
    x = w(e + "word_embeddings.weight")[ids] + w(e + "position_embeddings.weight")[:T] + w(e + "token_type_embeddings.weight")[0]
    x = F.layer_norm(x, (d,), w(e + "LayerNorm.weight"), w(e + "LayerNorm.bias"), eps)
    out = {"attention": [], "q": [], "x": []}
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        layer = nn.TransformerEncoderLayer(d, cfg["num_attention_heads"], cfg["intermediate_size"], dropout=0.0,
                                           activation=activation, layer_norm_eps=eps, batch_first=True,
                                           dtype=torch.float64).eval()  # post-LN
        qkv = [p + "attention.self." + n for n in ("query", "key", "value")]
        put(layer.self_attn.in_proj_weight, torch.cat([w(n + ".weight") for n in qkv]))
        put(layer.self_attn.in_proj_bias, torch.cat([w(n + ".bias") for n in qkv]))
        put(layer.self_attn.out_proj.weight, w(p + "attention.output.dense.weight"))
        put(layer.self_attn.out_proj.bias, w(p + "attention.output.dense.bias"))
        put_layer_norm(layer.norm1, w, p + "attention.output.LayerNorm")
        put(layer.linear1.weight, w(p + "intermediate.dense.weight"))
        put(layer.linear1.bias, w(p + "intermediate.dense.bias"))
        put(layer.linear2.weight, w(p + "output.dense.weight"))
        put(layer.linear2.bias, w(p + "output.dense.bias"))
        put_layer_norm(layer.norm2, w, p + "output.LayerNorm")
        maps, q = maps_and_queries(layer.self_attn, x, x, None)
        out["attention"].append(maps), out["q"].append(q), out["x"].append(x)
        x = layer(x[None])[0]
    return {"attention": torch.stack(out["attention"]), "hidden": x,
            "q": {"attention": torch.stack(out["q"])}, "x": {"attention": torch.stack(out["x"])}}


def hf_sinusoids(n_positions, dim, interleaved=False):
    """MarianSinusoidalPositionalEmbedding._init_weight, as Hugging Face writes it (numpy)."""
    position_enc = np.array([[pos / np.power(10000, 2 * (j // 2) / dim) for j in range(dim)] for pos in range(n_positions)])
    out = np.zeros((n_positions, dim))
    if interleaved:  # the usual sin/cos interleaving: NOT Marian's layout (a wrong variant)
        out[:, 0::2], out[:, 1::2] = np.sin(position_enc[:, 0::2]), np.cos(position_enc[:, 1::2])
    else:
        sentinel = dim // 2 if dim % 2 == 0 else (dim // 2) + 1
        out[:, 0:sentinel] = np.sin(position_enc[:, 0::2])
        out[:, sentinel:] = np.cos(position_enc[:, 1::2])
    return torch.from_numpy(out)


def marian_layers(w, cfg, side):
    d, heads, ff = cfg["d_model"], cfg[side + "_attention_heads"], cfg[side + "_ffn_dim"]
    layers = []
    for i in range(cfg[side + "_layers"]):
        p = f"{side}.layers.{i}."
        kind = nn.TransformerEncoderLayer if side == "encoder" else nn.TransformerDecoderLayer
        layer = kind(d, heads, ff, dropout=0.0, activation=F.silu, layer_norm_eps=1e-5, batch_first=True,
                     dtype=torch.float64).eval()  # post-LN
        blocks = [("self_attn", layer.self_attn, layer.norm1)]
        if side == "decoder":
            blocks.append(("encoder_attn", layer.multihead_attn, layer.norm2))
        for name, mha, norm in blocks:
            put(mha.in_proj_weight, torch.cat([w(f"{p}{name}.{x}_proj.weight") for x in "qkv"]))
            put(mha.in_proj_bias, torch.cat([w(f"{p}{name}.{x}_proj.bias") for x in "qkv"]))
            put(mha.out_proj.weight, w(f"{p}{name}.out_proj.weight"))
            put(mha.out_proj.bias, w(f"{p}{name}.out_proj.bias"))
            put_layer_norm(norm, w, f"{p}{name}_layer_norm")
        put(layer.linear1.weight, w(p + "fc1.weight"))
        put(layer.linear1.bias, w(p + "fc1.bias"))
        put(layer.linear2.weight, w(p + "fc2.weight"))
        put(layer.linear2.bias, w(p + "fc2.bias"))
        put_layer_norm(layer.norm3 if side == "decoder" else layer.norm2, w, p + "final_layer_norm")
        layers.append(layer)
    return layers


def torch_marian(w, cfg, encoder_ids, decoder_ids, interleaved=False, scale=True):
    d = cfg["d_model"]
    shared = w("shared.weight")

    def embed(ids, side):
        name = side + ".embed_positions.weight"
        positions = w(name) if w.has(name) else hf_sinusoids(cfg["max_position_embeddings"], d, interleaved)
        return shared[ids] * (math.sqrt(d) if scale else 1.0) + positions[:len(ids)]

    out = {"q": {}, "x": {}}
    stacks = {s: ([], [], []) for s in ("encoder_attention", "decoder_attention", "cross_attention")}

    def keep(stack, maps, q, x):
        for store, value in zip(stacks[stack], (maps, q, x)):
            store.append(value)

    memory = embed(encoder_ids, "encoder")
    for layer in marian_layers(w, cfg, "encoder"):
        keep("encoder_attention", *maps_and_queries(layer.self_attn, memory, memory, None), memory)
        memory = layer(memory[None])[0]
    y, T = embed(decoder_ids, "decoder"), len(decoder_ids)
    for layer in marian_layers(w, cfg, "decoder"):
        keep("decoder_attention", *maps_and_queries(layer.self_attn, y, y, causal_mask(T)), y)
        y1 = layer.norm1(y + layer.self_attn(y[None], y[None], y[None], attn_mask=causal_mask(T))[0][0])
        keep("cross_attention", *maps_and_queries(layer.multihead_attn, y1, memory, None), y1)
        y = layer(y[None], memory[None], tgt_mask=causal_mask(T))[0]
    for stack, (maps, qs, xs) in stacks.items():
        out[stack], out["q"][stack], out["x"][stack] = torch.stack(maps), torch.stack(qs), torch.stack(xs)
    has_head = "lm_head.weight" in w.tensors
    head = w("lm_head.weight") if has_head else shared
    bias = w("final_logits_bias")[0] if has_head else 0
    out["hidden"], out["logits"] = y, F.linear(y[-1], head) + bias
    return out

# [SECTION] The checks ----------------------------------------------------------------------------------


def compare(label, expected, got):
    """Every key of the independent run against expected.json -> the largest difference."""
    worst = 0.0
    for key, value in got.items():
        if isinstance(value, dict):
            for stack, v in value.items():
                worst = max(worst, max_diff(expected[key][stack], v))
        else:
            worst = max(worst, max_diff(expected[key], value))
    return worst


def check_maps(label, expected, causal_stacks, sinks=False):
    for stack in ("attention", "encoder_attention", "decoder_attention", "cross_attention"):
        if stack not in expected:
            continue
        maps = torch.tensor(expected[stack], dtype=torch.float64)  # [L, H, T_q, T_k]
        if sinks:  # learned sinks (gpt_oss) take the rest of each row: under 1, not 0
            sums = maps.sum(-1)
            check(f"{label}: {stack} rows sum to under 1 (the sinks take the rest)",
                  bool(((sums < 1) & (sums > 0)).all()), f"sums {float(sums.min()):.2f} … {float(sums.max()):.2f}")
            continue
        row_error = float((maps.sum(-1) - 1).abs().max())
        check(f"{label}: {stack} rows sum to 1", row_error < 1e-12, f"max |sum - 1| {row_error:.1e}")
        if stack in causal_stacks:
            above = float(maps.triu(diagonal=1).abs().max()) if maps.shape[-1] > 1 else 0.0
            check(f"{label}: {stack} is zero above the diagonal", above == 0.0, f"max {above:.1e}")


def experts_dense(w, cfg, p, x, act):
    """A mixture of experts a second way: every expert on every token, each token's output the
    sum over experts of its weight there (0 for the experts it was not routed to), the top k by
    sorting the router's scores."""
    t, k, E = cfg["model_type"], cfg["num_experts_per_tok"], cfg["num_local_experts"]
    logits = F.linear(x, w(p + ("mlp.router.weight" if t == "gpt_oss" else "mlp.gate.weight")),
                      w(p + "mlp.router.bias") if t == "gpt_oss" else None)
    order = torch.sort(logits, dim=-1, descending=True).indices[:, :k]
    chosen = torch.zeros_like(logits, dtype=torch.bool).scatter(1, order, True)
    if t == "gpt_oss":  # softmax over the chosen logits
        weights = torch.where(chosen, torch.exp(logits - logits.max(-1, keepdim=True).values), torch.zeros_like(logits))
        weights = weights / weights.sum(-1, keepdim=True)
    else:  # softmax over all, the chosen kept (renormalized with norm_topk_prob)
        weights = torch.where(chosen, torch.softmax(logits, -1), torch.zeros_like(logits))
        if cfg.get("norm_topk_prob"):
            weights = weights / weights.sum(-1, keepdim=True)
    out = torch.zeros_like(x)
    for e in range(E):
        if t == "gpt_oss":
            gu = x @ w(p + "mlp.experts.gate_up_proj")[e] + w(p + "mlp.experts.gate_up_proj_bias")[e]
            gate, up = torch.clamp(gu[:, 0::2], max=7.0), torch.clamp(gu[:, 1::2], -7.0, 7.0)
            y = (up + 1) * gate / (1 + torch.exp(-1.702 * gate)) @ w(p + "mlp.experts.down_proj")[e] \
                + w(p + "mlp.experts.down_proj_bias")[e]
        else:
            q = p + f"mlp.experts.{e}."
            y = F.linear(act(F.linear(x, w(q + "gate_proj.weight"))) * F.linear(x, w(q + "up_proj.weight")), w(q + "down_proj.weight"))
        out = out + weights[:, e:e + 1] * y
    return out


def torch_llama_like(w, cfg, ids, interleaved=False):
    """The Llama-like families a second way: RoPE as complex numbers (x_i + i·x_{i+half}, turned by
    e^{i·a}; interleaved pairs, Meta's original layout, as the wrong variant), RMSNorm from the
    vector's norm, each query head against its K/V head by index, the masks by loops."""
    t = cfg["model_type"]
    gemma = t in ("gemma2", "gemma3_text")
    d, H, T = cfg["hidden_size"], cfg["num_attention_heads"], len(ids)
    KV, hd = cfg.get("num_key_value_heads") or H, cfg.get("head_dim") or d // cfg["num_attention_heads"]
    eps, rot = cfg.get("rms_norm_eps", 1e-6), int(hd * cfg.get("partial_rotary_factor", 1.0))

    def norm(x, name):
        g = w(name + ".weight")
        y = x / torch.sqrt(x.norm(dim=-1, keepdim=True) ** 2 / x.shape[-1] + eps)
        return y * (1 + g) if gemma else y * g

    def lin(x, name):
        return F.linear(x, w(name + ".weight"), w(name + ".bias") if w.has(name + ".bias") else None)

    def turn(x, inv, att):  # x [T, hd]
        a = torch.arange(T, dtype=torch.float64)[:, None] * inv[None, :]
        z = torch.polar(torch.full_like(a, att), a)
        r = x[:, :rot]
        pairs = (r[:, 0::2], r[:, 1::2]) if interleaved else (r[:, :rot // 2], r[:, rot // 2:])
        y = torch.complex(*pairs) * z
        out = torch.stack([y.real, y.imag], -1).reshape(T, rot) if interleaved else torch.cat([y.real, y.imag], -1)
        return torch.cat([out, x[:, rot:]], -1)

    windows = reference.layer_kinds(cfg)
    x = F.embedding(torch.tensor(ids), w("embed_tokens.weight"))
    if gemma:
        x = x * float(torch.tensor(d ** 0.5, dtype=torch.float32))
    maps, qs, xs = [], [], []
    for i in range(cfg["num_hidden_layers"]):
        p = f"layers.{i}."
        a = norm(x, p + "input_layernorm")
        if t == "phi3":
            q, k, v = lin(a, p + "self_attn.qkv_proj").split([H * hd, KV * hd, KV * hd], -1)
        else:
            q, k, v = (lin(a, p + f"self_attn.{n}_proj") for n in "qkv")
        rope = {"theta": cfg.get("rope_local_base_freq", 10000.0), "scaling": None} if t == "gemma3_text" and windows[i] \
            else {"theta": cfg.get("rope_theta", 10000.0), "scaling": cfg.get("rope_scaling")}
        inv, att = reference.rope_inv_freq(cfg, rope, rot, T)
        heads_q, heads_k = [], []
        for h in range(H):
            qh = q[:, h * hd:(h + 1) * hd]
            heads_q.append(turn(norm(qh, p + "self_attn.q_norm") if w.has(p + "self_attn.q_norm.weight") else qh, inv, att))
        for g in range(KV):
            kg = k[:, g * hd:(g + 1) * hd]
            heads_k.append(turn(norm(kg, p + "self_attn.k_norm") if w.has(p + "self_attn.k_norm.weight") else kg, inv, att))
        allowed = torch.tensor([[j <= r and (not windows[i] or r - j < windows[i]) for j in range(T)] for r in range(T)])
        scale = cfg.get("query_pre_attn_scalar", 256) ** -0.5 if gemma else hd ** -0.5
        cap = cfg.get("attn_logit_softcapping", 50.0 if t == "gemma2" else None) if gemma else None
        layer_maps, context = [], []
        for h in range(H):
            g = h * KV // H
            s_ = heads_q[h] @ heads_k[g].T * scale
            if cap:
                s_ = cap * torch.tanh(s_ / cap)
            if w.has(p + "self_attn.sinks"):  # e^(s−M) / (Σ e^(s−M) + e^(sink−M)), M over both
                sink = w(p + "self_attn.sinks")[h]
                M = torch.maximum(torch.where(allowed, s_, torch.tensor(float("-inf"), dtype=torch.float64)).max(-1).values, sink)
                e = torch.where(allowed, torch.exp(s_ - M[:, None]), torch.zeros_like(s_))
                m = e / (e.sum(-1, keepdim=True) + torch.exp(sink - M)[:, None])
            else:
                m = torch.softmax(torch.where(allowed, s_, torch.tensor(float("-inf"), dtype=torch.float64)), -1)
            layer_maps.append(m)
            context.append(m @ v[:, g * hd:(g + 1) * hd])
        o = lin(torch.cat(context, -1), p + "self_attn.o_proj")
        x = x + (norm(o, p + "post_attention_layernorm") if gemma else o)
        maps.append(torch.stack(layer_maps)), qs.append(torch.stack(heads_q)), xs.append(a)
        m_in = norm(x, p + ("pre_feedforward_layernorm" if gemma else "post_attention_layernorm"))
        act = (lambda z: F.gelu(z, approximate="tanh")) if gemma else F.silu
        if reference.moe_layer(cfg, i):
            f = experts_dense(w, cfg, p, m_in, act)
        else:
            if t == "phi3":
                gate, up = lin(m_in, p + "mlp.gate_up_proj").chunk(2, -1)
            else:
                gate, up = lin(m_in, p + "mlp.gate_proj"), lin(m_in, p + "mlp.up_proj")
            f = lin(act(gate) * up, p + "mlp.down_proj")
        x = x + (norm(f, p + "post_feedforward_layernorm") if gemma else f)
    x = norm(x, "norm")
    tied = cfg.get("tie_word_embeddings", gemma)
    logits = x[-1] @ (w("embed_tokens.weight") if tied else w("lm_head.weight")).T
    cap = cfg.get("final_logit_softcapping", 30.0 if t == "gemma2" else None) if gemma else None
    if cap:
        logits = cap * torch.tanh(logits / cap)
    return {"attention": torch.stack(maps), "hidden": x, "logits": logits,
            "q": {"attention": torch.stack(qs)}, "x": {"attention": torch.stack(xs)}}


def read_checkpoint(folder):  # model.safetensors, or the shards its index names
    index = os.path.join(folder, "model.safetensors.index.json")
    if not os.path.exists(index):
        return read_safetensors(os.path.join(folder, "model.safetensors"))
    tensors = {}
    for shard in sorted(set(json.load(open(index))["weight_map"].values())):
        tensors.update(read_safetensors(os.path.join(folder, shard)))
    return tensors


def check_case(folder):
    label = os.path.basename(folder)
    cfg = json.load(open(os.path.join(folder, "config.json")))
    expected = json.load(open(os.path.join(folder, "expected.json")))
    tensors = read_checkpoint(folder)
    family = cfg["model_type"]
    prefix = {"gpt2": "transformer.", "bert": "bert.", "marian": "model."}.get(family, "model.")
    w = Weights(tensors, prefix if any(n.startswith(prefix) for n in tensors) else "")
    dtypes = {"float32": "F32", "float16": "F16", "bfloat16": "BF16"}
    check(f"{label}: dtype", dtypes[cfg["torch_dtype"]] == expected["dtype"], expected["dtype"])

    with torch.no_grad():
        if family == "gpt2":
            act = {"gelu_new": lambda t: F.gelu(t, approximate="tanh"), "gelu": F.gelu}[cfg["activation_function"]]
            got = torch_gpt2(w, cfg, expected["ids"], act)
            wrong = torch_gpt2(w, cfg, expected["ids"], F.gelu if cfg["activation_function"] == "gelu_new" else
                               (lambda t: F.gelu(t, approximate="tanh")))
            ignorable = (".attn.bias", ".attn.masked_bias")
        elif family == "bert":
            got = torch_bert(w, cfg, expected["ids"], F.gelu)
            wrong = torch_bert(w, cfg, expected["ids"], lambda t: F.gelu(t, approximate="tanh"))
            ignorable = ("position_ids", "pooler.", "cls.predictions.")
        elif family in reference.LLAMA_LIKE:
            got = torch_llama_like(w, cfg, expected["ids"])
            wrong = torch_llama_like(w, cfg, expected["ids"], interleaved=True)
            ignorable = ()
        else:
            got = torch_marian(w, cfg, expected["encoder_ids"], expected["decoder_ids"])
            # positions from the file: embeddings not scaled; else the sinusoids interleaved
            stored = w.has("encoder.embed_positions.weight")
            wrong = torch_marian(w, cfg, expected["encoder_ids"], expected["decoder_ids"], interleaved=not stored, scale=not stored)
            ignorable = ("embed_tokens.weight",)
    diff = compare(label, expected, got)
    check(f"{label}: torch.nn's layers give expected.json", diff < TOLERANCE, f"max diff {diff:.1e}")
    wrong_diff = compare(label, expected, wrong)  # the comparison can fail: a wrong variant must disagree
    check(f"{label}: a wrong variant is caught", wrong_diff > 1e-6, f"max diff {wrong_diff:.1e}")
    causal = ("attention",) if family == "gpt2" or family in reference.LLAMA_LIKE else ("decoder_attention",)
    check_maps(label, expected, causal, sinks=family == "gpt_oss")

    unused = [n for n in w.unused() if not any(s in n for s in ignorable)]
    check(f"{label}: every tensor is used or ignorable", not unused, ", ".join(unused[:4]))
    if family == "marian":  # the tied copies equal the shared embeddings; stored positions equal HF's
        shared = tensors[w.prefix + "shared.weight"]
        copies = [n for n in tensors if n.endswith("embed_tokens.weight") or n == "lm_head.weight"]
        check(f"{label}: embed_tokens / lm_head equal shared", all(torch.equal(tensors[n], shared) for n in copies),
              f"{len(copies)} copies")
        for side in ("encoder", "decoder"):
            name = f"{w.prefix}{side}.embed_positions.weight"
            if name in tensors:
                table = hf_sinusoids(cfg["max_position_embeddings"], cfg["d_model"])
                d = max_diff(tensors[name], table)
                check(f"{label}: stored {side} positions are HF's sinusoids", d < 1e-6, f"max diff {d:.1e}")
        check_greedy(label, w, cfg, expected)
    check_tokenizer(label, folder, cfg, expected)


def check_greedy(label, w, cfg, expected):
    ids = [cfg["decoder_start_token_id"]]
    with torch.no_grad():
        for _ in range(expected["max_new"]):
            logits = torch_marian(w, cfg, expected["encoder_ids"], ids)["logits"]
            top = torch.topk(logits, 2).values
            assert float(top[0] - top[1]) > 1e-3, "a near-tie"
            ids.append(int(logits.argmax()))
            if ids[-1] == cfg["eos_token_id"]:
                break
    check(f"{label}: greedy ids", ids == expected["generated_ids"], str(ids))


def check_tokenizer(label, folder, cfg, expected):
    V, family = cfg["vocab_size"], cfg["model_type"]
    ids = expected.get("ids", expected.get("encoder_ids", [])) + expected.get("decoder_ids", [])
    check(f"{label}: ids within the vocabulary", all(0 <= i < V for i in ids), f"V = {V}")
    if family in reference.LLAMA_LIKE:  # tokenizer.json: its BPE vocabulary covers the ids; BOS first
        model = json.load(open(os.path.join(folder, "tokenizer.json"), encoding="utf-8"))["model"]
        ok = len(model["vocab"]) == V and sorted(model["vocab"].values()) == list(range(V))
        check(f"{label}: tokenizer.json", ok and ids[0] == cfg["bos_token_id"], f"{len(model['vocab'])} tokens")
    elif family == "gpt2":
        vocab = json.load(open(os.path.join(folder, "vocab.json"), encoding="utf-8"))
        merges = open(os.path.join(folder, "merges.txt"), encoding="utf-8").read().split("\n")
        bytes_of = {c: b for b, c in make_models.bytes_to_unicode().items()}
        ok = (len(vocab) == V and sorted(vocab.values()) == list(range(V)) and vocab["<|endoftext|>"] == cfg["eos_token_id"]
              and all(bytes_of[t] >= 0 for t, i in vocab.items() if i < 256) and merges[0] == "#version: 0.2"
              and all(a in vocab and b in vocab and a + b in vocab for a, b in (m.split(" ") for m in merges[1:] if m)))
        check(f"{label}: vocab.json and merges.txt", ok, f"{len(vocab)} tokens, {len(merges) - 2} merges")
        if "text" in expected:
            token_of = {i: t for t, i in vocab.items()}
            text = bytes(bytes_of[c] for i in expected["ids"] for c in token_of[i]).decode("utf-8")
            check(f"{label}: the ids decode to the text", text == expected["text"], repr(text))
    elif family == "bert":
        vocab = open(os.path.join(folder, "vocab.txt"), encoding="utf-8").read().split("\n")[:-1]
        config = json.load(open(os.path.join(folder, "tokenizer_config.json")))
        ok = len(vocab) == V and len(set(vocab)) == V and vocab[cfg["pad_token_id"]] == "[PAD]" and config["do_lower_case"]
        check(f"{label}: vocab.txt", ok, f"{len(vocab)} tokens")
        check(f"{label}: [CLS] … [SEP]", [vocab[ids[0]], vocab[ids[-1]]] == ["[CLS]", "[SEP]"])
    else:
        vocab = json.load(open(os.path.join(folder, "vocab.json"), encoding="utf-8"))
        ok = (len(vocab) == V and sorted(vocab.values()) == list(range(V)) and vocab["</s>"] == 0 == cfg["eos_token_id"]
              and vocab["<unk>"] == 1 and vocab["<pad>"] == V - 1 == cfg["pad_token_id"] == cfg["decoder_start_token_id"])
        check(f"{label}: vocab.json", ok, f"{len(vocab)} pieces")
        piece_of = {i: p for p, i in vocab.items()}
        for name, text, ids_ in (("source.spm", expected["source_text"], expected["encoder_ids"][:-1]),
                                 ("target.spm", expected["target_text"], expected["decoder_ids"][1:])):
            sp = spm.SentencePieceProcessor(model_file=os.path.join(folder, name))
            pieces = sp.encode(text, out_type=str)
            check(f"{label}: {name} gives the ids' pieces", [piece_of[i] for i in ids_] ==
                  [p if p in vocab else "<unk>" for p in pieces], " ".join(pieces))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        first, second = os.path.join(tmp, "a"), os.path.join(tmp, "b")
        make_models.main(first)
        make_models.main(second)
        same = filecmp.dircmp(first, second)
        differ = same.diff_files + [f"{c}/{f}" for c, sub in same.subdirs.items() for f in sub.diff_files + sub.left_only + sub.right_only]
        check("two runs write the same bytes", not differ and not same.left_only and not same.right_only, ", ".join(differ[:4]))

        d = max_diff(reference.sinusoidal_positions(50, 24), hf_sinusoids(50, 24))
        check("reference sinusoids equal HF's construction", d < 1e-12, f"max diff {d:.1e}")
        d = max_diff(reference.sinusoidal_positions(50, 24), hf_sinusoids(50, 24, interleaved=True))
        check("interleaved sinusoids differ from them", d > 0.1, f"max diff {d:.1e}")

        cases = json.load(open(os.path.join(first, "cases.json")))
        check("cases.json lists every folder", sorted(cases) == sorted(n for n in os.listdir(first) if n != "cases.json"),
              f"{len(cases)} cases")
        for case in cases:
            check_case(os.path.join(first, case))

        # A map moved by 1e-6 must fail the comparison used above.
        expected = json.load(open(os.path.join(first, cases[0], "expected.json")))
        moved = dict(expected, attention=(torch.tensor(expected["attention"]) + 1e-6).tolist())
        check("a map moved by 1e-6 is caught", compare("moved", moved, {"attention": expected["attention"]}) > TOLERANCE)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
