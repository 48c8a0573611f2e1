"""A Llama (and Mistral, with its sliding window) in plain torch, module for module as
transformers' modeling_llama.py and modeling_mistral.py write it, for attnviz.serve()'s tests on
machines without transformers: each attention module looks its attention function up by the
config's _attn_implementation in AttentionInterface and calls it with the modeling files'
signature, fn(module, query, key, value, attention_mask, dropout=, scaling=, sliding_window=),
query [B, H, T, D], key and value [B, KV, T, D] (before repeat_kv), the mask in sdpa's form
(None where the causal mask says it all; else boolean, True attends) or, with mask="eager",
eager's additive floats. It reads the checkpoints tests/model/make_models.py writes.

    model, tokenizer = load(folder)
"""
import json
import os
import sys

import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "stand_in"))  # transformers' AttentionInterface, when transformers is absent
sys.path.insert(0, os.path.join(HERE, "..", "model"))
from transformers import AttentionInterface  # noqa: E402
from make_models import BYTE_CHARS, gpt2_encode  # noqa: E402
from test_reference import read_checkpoint  # noqa: E402


class Config:
    def __init__(self, values, name):
        self.__dict__.update(values)
        self.head_dim = values.get("head_dim") or values["hidden_size"] // values["num_attention_heads"]
        self.num_key_value_heads = values.get("num_key_value_heads") or values["num_attention_heads"]
        self.sliding_window = values.get("sliding_window")
        self._attn_implementation = "eager"
        self._name_or_path = name


def rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


def eager_attention_forward(module, query, key, value, attention_mask, dropout=0.0, scaling=None, **kwargs):
    group = query.shape[1] // key.shape[1]
    key, value = key.repeat_interleave(group, dim=1), value.repeat_interleave(group, dim=1)
    w = query @ key.transpose(2, 3) * scaling
    if attention_mask is not None:
        w = w + attention_mask
    w = torch.softmax(w, dim=-1, dtype=torch.float32).to(query.dtype)
    return (w @ value).transpose(1, 2).contiguous(), w


class RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(d)), eps

    def forward(self, x):
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


class Attention(nn.Module):
    def __init__(self, config, layer_idx):
        super().__init__()
        self.config, self.layer_idx, self.is_causal = config, layer_idx, True
        d, hd = config.hidden_size, config.head_dim
        self.scaling = hd ** -0.5
        self.q_proj = nn.Linear(d, config.num_attention_heads * hd, bias=False)
        self.k_proj = nn.Linear(d, config.num_key_value_heads * hd, bias=False)
        self.v_proj = nn.Linear(d, config.num_key_value_heads * hd, bias=False)
        self.o_proj = nn.Linear(config.num_attention_heads * hd, d, bias=False)

    def forward(self, x, cos, sin, attention_mask):
        B, T, _ = x.shape
        shape = (B, T, -1, self.config.head_dim)
        q = self.q_proj(x).view(shape).transpose(1, 2)
        k = self.k_proj(x).view(shape).transpose(1, 2)
        v = self.v_proj(x).view(shape).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        name = self.config._attn_implementation
        fn = eager_attention_forward if name == "eager" else AttentionInterface()[name]
        out, _ = fn(self, q, k, v, attention_mask, dropout=0.0, scaling=self.scaling,
                    sliding_window=self.config.sliding_window)
        return self.o_proj(out.reshape(B, T, -1))


class MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        d, f = config.hidden_size, config.intermediate_size
        self.gate_proj, self.up_proj = nn.Linear(d, f, bias=False), nn.Linear(d, f, bias=False)
        self.down_proj = nn.Linear(f, d, bias=False)

    def forward(self, x):
        return self.down_proj(nn.functional.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, config, i):
        super().__init__()
        self.self_attn, self.mlp = Attention(config, i), MLP(config)
        self.input_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)

    def forward(self, x, cos, sin, mask):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        return x + self.mlp(self.post_attention_layernorm(x))


class Output:
    def __init__(self, logits):
        self.logits = logits


class CausalLM(nn.Module):
    def __init__(self, config, mask="sdpa"):
        super().__init__()
        self.config, self.mask_form = config, mask
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(Layer(config, i) for i in range(config.num_hidden_layers))
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)

    @property
    def device(self):
        return self.embed_tokens.weight.device

    def set_attn_implementation(self, name):
        self.config._attn_implementation = name

    def _mask(self, T):
        """sdpa's mask: None when causal alone says it (no window inside T), else boolean; eager's: floats
        (eager attention always gets eager's, as transformers' mask interface gives it)."""
        form = "eager" if self.config._attn_implementation == "eager" else self.mask_form
        i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
        allowed = j <= i
        window = self.config.sliding_window
        if window and window < T:
            allowed &= j > i - window
        elif form == "sdpa":
            return None
        if form == "eager":
            return torch.zeros(1, 1, T, T).masked_fill(~allowed, torch.finfo(torch.float32).min).to(self.device)
        return allowed[None, None].to(self.device)

    def forward(self, input_ids, use_cache=False, **kwargs):
        T = input_ids.shape[1]
        hd = self.config.head_dim
        inv = 1.0 / (self.config.rope_theta ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
        angles = torch.arange(T).float()[:, None] * inv[None, :]
        emb = torch.cat((angles, angles), dim=-1).to(self.device)
        cos, sin = emb.cos()[None, None], emb.sin()[None, None]
        x = self.embed_tokens(input_ids)
        mask = self._mask(T)
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return Output(self.lm_head(self.norm(x)))


class Tokenizer:
    """GPT-2's byte-level BPE over tokenizer.json's vocab and merges (no special tokens)."""

    def __init__(self, folder):
        with open(os.path.join(folder, "tokenizer.json"), encoding="utf-8") as f:
            model = json.load(f)["model"]
        self.vocab = model["vocab"]
        self.merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
        self.names = {i: t for t, i in self.vocab.items()}

    def __call__(self, text, return_tensors="pt"):
        return {"input_ids": torch.tensor([gpt2_encode(self.vocab, self.merges, text)])}

    def convert_ids_to_tokens(self, ids):
        return [self.names[int(i)] for i in ids]

    def decode(self, ids):
        """The text of ids, byte by byte (special tokens left out)."""
        byte = {c: b for b, c in BYTE_CHARS.items()}
        pieces = [self.names[int(i)] for i in ids]
        return bytes(byte[c] for p in pieces if all(c in byte for c in p) for c in p).decode("utf-8", errors="replace")


def load(folder, mask="sdpa"):
    with open(os.path.join(folder, "config.json"), encoding="utf-8") as f:
        config = Config(json.load(f), os.path.basename(os.path.normpath(folder)))
    model = CausalLM(config, mask)
    weights = {k[len("model."):] if k.startswith("model.") else k: v.float() for k, v in read_checkpoint(folder).items()}
    if "lm_head.weight" not in weights:
        weights["lm_head.weight"] = weights["embed_tokens.weight"]
    model.load_state_dict(weights)
    return model.eval(), Tokenizer(folder)
