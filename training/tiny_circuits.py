"""Trains attnviz's model of the textbook heads, models/tiny-circuits: a Llama (RoPE, grouped-query
attention, RMSNorm, SwiGLU; 2 layers) whose layer 1 has a previous-token head and layer 2 an
induction head, as in Olsson et al. 2022, and which also models English and Chinese. Its
tokenizer is a byte-level BPE in one tokenizer.json. Deterministic: fixed seeds, one thread
order (scripts/train_models.sh runs it).

  /usr/bin/python3 training/tiny_circuits.py OUT_FOLDER

Writes OUT_FOLDER/{config.json, model.safetensors (F16), tokenizer.json, tokenizer_config.json,
training.json, loss.svg, heldout.json}. docs/MODELS.md describes the result.

The curriculum (docs/MODELS.md "tiny-circuits"), on a 512-token vocabulary:
  phase 1  windows made only of blocks r + r (r: random ids from the whole vocabulary), BOS
           first: for FIRST_STEPS steps windows of 32 with blocks of 2–15 (SHORT), then windows
           of T with blocks of 4…60: the circuit forms, with nothing else to learn;
  phase 2  the Debian text of tiny-lm, with REPEAT_SHARE of the windows still blocks r + r, so
           that the heads stay while the model learns language.

The defaults are the shipped run's. The environment variables (NL, D, DFF, VOCAB, TIED, BOSREP,
LR, FP, FS, SHORT, LOSS_ALL, ZERO_MLP, POOLSOFT, GROW, NT, CKPT) are the knobs of the runs that
led to it, so that each run below can be repeated.

The runs (2026-11-27). Until the last ones: NL=2 D=128 DFF=384 VOCAB=4096 TIED=1 LR=1e-3 FP=64
ZERO_MLP=0, SHORT unset, 2 threads. Each row: what changed from those, and what the probes
showed (scores on the ids being trained; "L:H" from 1).
  d 128, tied, loss on 2nd copies, whole vocabulary from step 0 (no small pool): plateau to step
      1400 (loss 8.10 of ln 4095 = 8.32); induction n = 30 0.17 (2:2), previous token 0.07.
  d 128, untied, loss on 2nd copies, 64 ids for 800 steps: plateau; at the switch to all ids the
      loss jumped to 14.
  d 128, tied, loss on 2nd copies, 64 ids for 1500 steps: loss 1.2 by step 600, but through a
      positional shortcut: every layer-1 head attends a fixed 28–29 tokens back (the blocks' mean
      length is 32), whatever the probe's length (n = 30 scored 0.99 "induction" at 1:2, n = 60
      0.00); on all ids, loss 8.7.
  LOSS_ALL (the issue's recipe: loss on every position), d 128, tied, 64 ids: plateau to step
      1000 (4.05 of ln 64 = 4.16); a previous-token head formed in layer 2 (2:2, 0.26), not 1.
  D=64 DFF=192 TIED=0 LOSS_ALL, 1 thread, with and without BOSREP: plateau to step 1300–1800.
  the same with ZERO_MLP (the MLPs start silent, as an attention-only model): plateau to 900.
  the same with LR=3e-3: plateau to 1000; layer 2 again took the positional and previous-token
      roles.
  SHORT=32,2,15 (windows of 32, blocks of 2–15 while the small pool is used), LR=3e-3, ZERO_MLP:
      left the plateau by step 600 (0.12 s a step), but the previous-token head formed in
      layer 2 (2:1, 0.58 by step 1000) and layer 1's heads looked at the first token.
What the issue's recipe (attention-only, LayerNorm, d 64) did, a Llama-shaped model of 2 layers
has not done here: its layer 1 settles as a first-token / positional layer and layer 2 takes the
previous-token role, leaving no layer for induction. Three layers did:
  NL=3 SHORT=32,2,15 LR=3e-3 ZERO_MLP=1 LOSS_ALL=1 D=64 DFF=192 TIED=0 BOSREP=1 NT=1: by step
      1100 (3.5 min) 1:1 previous token 0.70, 2:2 induction 0.50 (n = 30, on the 64 ids), 0.74
      and 0.53 by 1400; a second run gave the same numbers to the printed digits (1 thread).
      At step 1500 (all ids, windows of 128): loss 36, the heads gone by 1600.
  the same with GROW=100 (the ids doubling every 100 steps from 128): loss 20 at 1500, gone.
  the same with TIED=1: the previous-token head formed in layer 3.
  the same with VOCAB=512 and POOLSOFT (the softmax over the 64 ids only, so the others' logits
      are not pushed down): 1:3 previous token 0.68, 2:1 induction 0.71 by step 1300; at the
      move to all 512 ids the loss went to 6.3 (ln 512 = 6.24) and the heads to 0.15.
  VOCAB=512 FP=512 (every id from the first step), 3 layers: induction 0.83 (2:3) at both
      lengths and held-out loss 1.9 (English) and 2.9 (Chinese) nats below the unigram's, but
      layer 1's previous-token work split between 1:1 and 1:2 at 0.40 and 0.42.
  the same with NL=2: 1:1 previous token 0.73, 2:2 induction 0.95 / 0.86, held-out 1.89 and
      2.82 nats under the unigram's, the same bytes when run again; but on an English sentence
      said twice its best head found the token after the earlier copy for only 26–43 % of the
      second copy (Chinese: 83 %).
  the same with BOSREP=0: 0.44 and 0.74 by step 1600, stopped there.
  NL=2 with TR=0.25 (a quarter of the text windows repeat their start): English 83–90 %, but
      previous token 0.67; RR=0.15 TR=0.4: 0.65.
  NL=2 with TR=0.1 (the defaults now): the shipped model, docs/MODELS.md (previous token 0.71,
      English 43–74 %); TR=0.15: previous token 0.68.

[SECTION] The tokenizer: tiny-lm's byte-level BPE, written as tokenizer.json
[SECTION] The model: Llama with Hugging Face's parameter names
[SECTION] The probe: [BOS] + r + r, TransformerLens's scores
[SECTION] Training: the two phases
[SECTION] Evaluation: held-out loss, unigram baseline
[SECTION] Writing the checkpoint
"""
import ctypes
import math
import os
import sys
import time

# Measured on this machine (docs/MODELS.md): libgomp's spinning threads and glibc giving the
# logits' memory back each step cost 40 % of a step. Neither changes a number.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heads  # noqa: E402
import tiny_lm  # noqa: E402
from hf_files import stored, write_json, write_safetensors  # noqa: E402

CONFIG = dict(n_layer=int(os.environ.get("NL", "2")), n_head=4, n_kv_head=2, d=int(os.environ.get("D", "64")), d_ff=int(os.environ.get("DFF", "192")), vocab_size=int(os.environ.get("VOCAB", "512")), rope_theta=10000.0)
TIED = os.environ.get("TIED", "0") == "1"
BOS_IN_REPEATS = os.environ.get("BOSREP", "1") == "1"
T = 128                      # training windows, BOS included
BATCH = 32                   # windows a step
PHASE1, PHASE2 = 2300, 1500  # steps
LR, WARMUP, WEIGHT_DECAY = float(os.environ.get("LR", "3e-3")), 100, 0.01
BLOCK = (4, 60)              # a block r + r: len(r) drawn from this range, inclusive
FIRST_POOL, FIRST_STEPS = int(os.environ.get("FP", "512")), int(os.environ.get("FS", "1500"))
LOSS_ALL = os.environ.get("LOSS_ALL", "1") == "1"  # exploring: the loss on the first copies too  # phase 1 draws r from FIRST_POOL ids for its first steps, then from all
REPEAT_SHARE = float(os.environ.get("RR", "0.25"))  # phase 2: the share of windows that are still blocks r + r
TEXT_REPEAT_SHARE = float(os.environ.get("TR", "0.1"))  # and of windows of text with a repeat (text_window)
PROBE_LENGTHS = (30, 60)     # the probes: [BOS] + r + r with len(r) = n
SEED = 2027
BOS = tiny_lm.EOT            # "<|endoftext|>": starts every window and document (GPT-2's and SmolLM2's use)

# [SECTION] The tokenizer: tiny-lm's byte-level BPE, written as tokenizer.json ----------------------


def tokenizer_json(tok):
    """Hugging Face tokenizers' file for GPT-2's byte-level BPE (the same pre-tokenizer pattern as
    tiny_lm.GPT2_SPLIT) with a post-processor that puts BOS first, as Llama's do."""
    bos = tok.vocab[BOS]
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": bos, "content": BOS, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True}],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": BOS, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                           "pair": [{"SpecialToken": {"id": BOS, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                                    {"Sequence": {"id": "B", "type_id": 1}}],
                           "special_tokens": {BOS: {"id": BOS, "ids": [bos], "tokens": [BOS]}}},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": tok.vocab, "merges": [[a, b] for a, b in tok.merges]},
    }


def encode(tok, text):  # what the tokenizer.json gives: BOS, then the text's ids
    return [tok.vocab[BOS]] + tok.encode(text)

# [SECTION] The model: Llama with Hugging Face's parameter names -------------------------------------


def rope(x, theta):  # x [B, H, T, hd] -> rotated (rotate-half, LlamaRotaryEmbedding's default)
    hd, n = x.shape[-1], x.shape[-2]
    inv = 1.0 / theta ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd)
    freqs = torch.arange(n, dtype=torch.float32)[:, None] * inv[None, :]
    emb = torch.cat([freqs, freqs], -1)
    rotated = torch.cat([-x[..., hd // 2:], x[..., :hd // 2]], -1)
    return x * emb.cos() + rotated * emb.sin()


class RMSNorm(torch.nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.weight, self.eps = torch.nn.Parameter(torch.ones(d)), eps

    def forward(self, x):
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + self.eps) * self.weight


class Attention(torch.nn.Module):
    def __init__(self, d, H, KV):
        super().__init__()
        self.H, self.KV, self.hd = H, KV, d // H
        self.q_proj = torch.nn.Linear(d, H * self.hd, bias=False)
        self.k_proj = torch.nn.Linear(d, KV * self.hd, bias=False)
        self.v_proj = torch.nn.Linear(d, KV * self.hd, bias=False)
        self.o_proj = torch.nn.Linear(H * self.hd, d, bias=False)

    def forward(self, x, theta):  # x [B, T, d] -> ([B, T, d], probs [B, H, T, T])
        B, n, _ = x.shape
        q = self.q_proj(x).reshape(B, n, self.H, self.hd).transpose(1, 2)
        k = self.k_proj(x).reshape(B, n, self.KV, self.hd).transpose(1, 2)
        v = self.v_proj(x).reshape(B, n, self.KV, self.hd).transpose(1, 2)
        q, k = rope(q, theta), rope(k, theta)
        k, v = k.repeat_interleave(self.H // self.KV, 1), v.repeat_interleave(self.H // self.KV, 1)  # repeat_kv
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.hd)
        future = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
        probs = scores.masked_fill(future, float("-inf")).softmax(-1)
        return self.o_proj((probs @ v).transpose(1, 2).reshape(B, n, self.H * self.hd)), probs


class MLP(torch.nn.Module):
    def __init__(self, d, d_ff):
        super().__init__()
        self.gate_proj = torch.nn.Linear(d, d_ff, bias=False)
        self.up_proj = torch.nn.Linear(d, d_ff, bias=False)
        self.down_proj = torch.nn.Linear(d_ff, d, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.input_layernorm, self.self_attn = RMSNorm(c["d"]), Attention(c["d"], c["n_head"], c["n_kv_head"])
        self.post_attention_layernorm, self.mlp = RMSNorm(c["d"]), MLP(c["d"], c["d_ff"])


class Model(torch.nn.Module):
    """Hugging Face's LlamaForCausalLM without dropout or caches: parameter names as in its
    checkpoints ("model." is added when written, lm_head stays as it is); the LM head its own
    (TIED=1 ties it to the embedding, as SmolLM2's and Llama 3.2's are: a tied head put the
    previous-token head in layer 3). nn.Linear's default initialization; with ZERO_MLP the MLPs'
    output weights start at zero."""

    def __init__(self, c, V):
        super().__init__()
        self.c = c
        self.embed_tokens = torch.nn.Embedding(V, c["d"])
        self.layers = torch.nn.ModuleList(Layer(c) for _ in range(c["n_layer"]))
        self.norm = RMSNorm(c["d"])
        if os.environ.get("ZERO_MLP", "1") == "1":
            for layer in self.layers:
                torch.nn.init.zeros_(layer.mlp.down_proj.weight)
        if TIED:
            torch.nn.init.normal_(self.embed_tokens.weight, std=c["d"] ** -0.5)  # tied: logits of std ~1 at the start
        else:
            self.lm_head = torch.nn.Linear(c["d"], V, bias=False)

    def forward(self, ids, keep_attention=False, where=None):
        """ids [B, T] -> logits [B, T, V] (, [L][B, H, T, T]); with `where` ([B, T] bool), the
        logits [N, V] of those positions only."""
        x = self.embed_tokens(ids)
        maps = []
        for layer in self.layers:
            a, probs = layer.self_attn(layer.input_layernorm(x), self.c["rope_theta"])
            x = x + a
            x = x + layer.mlp(layer.post_attention_layernorm(x))
            maps.append(probs)
        x = self.norm(x)
        x = x if where is None else x[where]
        logits = x @ self.embed_tokens.weight.T if TIED else self.lm_head(x)
        return (logits, maps) if keep_attention else logits

# [SECTION] The probe: [BOS] + r + r, TransformerLens's scores ------------------------------------


def ordinary_ids(tok):  # every id but the special one
    return [i for i, raw in enumerate(tok.token_bytes) if not heads.is_special(raw)]


def repeat_probe(tok, n, seed=2022, pool=None):
    """[BOS] + r + r, r: n ids drawn with splitmix64 from `pool`, by default every ordinary id
    (the issue's probe)."""
    pool, rng = ordinary_ids(tok) if pool is None else pool, heads.splitmix64(seed + n)
    r = [pool[next(rng) % len(pool)] for _ in range(n)]
    return [tok.vocab[BOS]] + r + r


def tl_scores(A, n):
    """A [L][H][T][T] on [BOS] + r + r -> {"prev", "induction", "duplicate", "sink"}: [L][H].
    TransformerLens's: previous token, mean of A[i][i-1] over i >= 1; induction, mean of
    A[i][i-n+1] (the token after the earlier copy) over the second copy; duplicate token,
    mean of A[i][i-n]; sink, mean of A[i][0] over i >= 1."""
    A = np.asarray(A, dtype=np.float64)
    T = A.shape[-1]
    i = np.arange(1, T)
    second = np.arange(n + 1, 2 * n + 1)
    return {"prev": A[..., i, i - 1].mean(-1).tolist(), "induction": A[..., second, second - n + 1].mean(-1).tolist(),
            "duplicate": A[..., second, second - n].mean(-1).tolist(), "sink": A[..., i, 0].mean(-1).tolist()}


@torch.no_grad()
def probe_scores(model, tok, pool=None):
    out = {}
    for n in PROBE_LENGTHS:
        _, maps = model(torch.tensor([repeat_probe(tok, n, pool=pool)]), keep_attention=True)
        out[n] = tl_scores([m[0].numpy() for m in maps], n)
    return out


def best(scores, kind):  # -> (score, "layer:head" counted from 1)
    return max((v, f"{l + 1}:{h + 1}") for l, row in enumerate(scores[kind]) for h, v in enumerate(row))

# [SECTION] Training: the two phases ---------------------------------------------------------------


POOL_SOFTMAX = os.environ.get("POOLSOFT", "0") == "1"
SHORT = os.environ.get("SHORT", "32,2,15")  # exploring: "T,lo,hi" windows of T and blocks lo..hi while the small pool is used


def repeat_window(rng, pool, bos, n=None, block=None):
    n, block = n or T, block or BLOCK
    """-> ([BOS] then blocks r + r until T + 1 ids, the last block cut; per id, whether it can be
    predicted: those of the second copies). The loss is taken on those only: the first copies
    are random and teach nothing but the uniform distribution."""
    row, known = ([bos], [False]) if BOS_IN_REPEATS else ([], [])
    while len(row) < n + 1:
        r = pool[rng.integers(0, len(pool), int(rng.integers(block[0], block[1] + 1)))].tolist()
        row += r + r
        known += [LOSS_ALL] * len(r) + [True] * len(r)
    return row[:n + 1], known[:n + 1]


def text_window(rng, streams, bos, repeat=False):
    """-> ([BOS] + T ids at a random offset of a source, all predictable). With `repeat`, the
    window's first k ids (k drawn from BLOCK) are followed by the same k ids again, then the text
    goes on: a repeat made of text, so that the induction heads also work on a reader's own
    repeated sentence and not only on random ids."""
    names = list(tiny_lm.WEIGHTS)
    s = streams[names[rng.choice(len(names), p=[tiny_lm.WEIGHTS[n] for n in names])]]
    start = int(rng.integers(0, len(s) - T))
    row = s[start:start + T].tolist()
    if repeat:
        k = int(rng.integers(BLOCK[0], BLOCK[1] + 1))
        row = (row[:k] + row[:k] + row[k:])[:T]
    return [bos] + row, [False] + [True] * T


def batch(rng, phase, streams, pool, bos, short=None):
    """-> (ids [BATCH, T + 1], the targets the loss is taken on [BATCH, T])."""
    if short:
        rows = [repeat_window(rng, pool, bos, short[0], short[1:]) for _ in range(BATCH)]
        return torch.tensor([r for r, _ in rows]), torch.tensor([k[1:] for _, k in rows])
    rows = []
    for _ in range(BATCH):
        u = 0.0 if phase == 1 else rng.random()
        rows.append(repeat_window(rng, pool, bos) if u < REPEAT_SHARE
                    else text_window(rng, streams, bos, repeat=u < REPEAT_SHARE + TEXT_REPEAT_SHARE))
    return torch.tensor([r for r, _ in rows]), torch.tensor([k[1:] for _, k in rows])


def train(model, streams, tok, log, out_dir="/tmp/tc"):
    rng = np.random.default_rng(SEED)
    pool, bos, V = np.array(ordinary_ids(tok)), tok.vocab[BOS], len(tok.vocab)
    decay = [p for n, p in model.named_parameters() if p.dim() == 2]
    other = [p for n, p in model.named_parameters() if p.dim() != 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": WEIGHT_DECAY}, {"params": other, "weight_decay": 0.0}],
                            lr=LR, betas=(0.9, 0.95))
    steps = PHASE1 + PHASE2
    curve, history, start = [], [], time.time()
    order = pool[np.random.default_rng(SEED + 1).permutation(len(pool))]
    first = order[:FIRST_POOL]
    GROW = int(os.environ.get("GROW", "0"))  # after the small pool: twice as many ids every GROW steps
    for step in range(steps):
        phase = 1 if step < PHASE1 else 2
        # phase 1 at a constant rate after the warm-up; phase 2 decays (cosine) to 10 %
        t = max(0, step - PHASE1) / PHASE2
        lr = LR * min(1.0, (step + 1) / WARMUP) * (1.0 if phase == 1 else 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))
        for g in opt.param_groups:
            g["lr"] = lr
        short = tuple(map(int, SHORT.split(","))) if SHORT and step < FIRST_STEPS else None
        ids_now = first if step < FIRST_STEPS else pool
        if GROW and step >= FIRST_STEPS:
            ids_now = order[:min(len(pool), FIRST_POOL * 2 ** ((step - FIRST_STEPS) // GROW + 1))]
        x, known = batch(rng, phase, streams, ids_now, bos, short)
        logits, targets = model(x[:, :-1], where=known), x[:, 1:][known]
        if POOL_SOFTMAX and step < FIRST_STEPS:  # exploring: the softmax over the small pool only
            inv = torch.full((V,), -1, dtype=torch.long)
            inv[torch.as_tensor(first)] = torch.arange(len(first))
            logits, targets = logits[:, torch.as_tensor(first)], inv[targets]
        loss = F.cross_entropy(logits, targets)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        curve.append(round(loss.item(), 4))
        if step % 100 == 0 or step == steps - 1:
            s = probe_scores(model, tok, first.tolist() if step < FIRST_STEPS else None)  # the ids it trains on
            p, ind = best(s[PROBE_LENGTHS[0]], "prev"), [best(s[n], "induction") for n in PROBE_LENGTHS]
            history.append({"step": step, "prev": p[0], "induction": [v for v, _ in ind]})
            if os.environ.get("CKPT"):  # exploring: the weights so far, for a look at every head
                torch.save(model.state_dict(), os.environ["CKPT"])
            log(f"step {step:5d}  phase {phase}  loss {loss.item():.3f}  lr {lr:.2e}  {time.time() - start:.0f} s  "
                f"prev {p[0]:.2f} ({p[1]})  induction " + ", ".join(f"n={n} {v:.2f} ({w})" for n, (v, w) in zip(PROBE_LENGTHS, ind)))
    return curve, history, time.time() - start

# [SECTION] Evaluation: held-out loss, unigram baseline ---------------------------------------------

LANGUAGES = {"English": ("bible-kjv", "fortunes"), "Chinese": ("fortunes-zh",)}  # docs/MODELS.md's held-out table


@torch.no_grad()
def heldout_loss(model, stream, bos):
    """Mean cross-entropy (nats per token) of the stream's ids, cut into windows of T, each read
    after BOS as training reads its windows."""
    windows = [[bos] + stream[start:start + T].tolist() for start in range(0, len(stream), T)]
    full, last = (windows, []) if len(windows[-1]) == T + 1 else (windows[:-1], windows[-1:])
    total = 0.0
    for group in [full[i:i + 64] for i in range(0, len(full), 64)] + [last]:  # 64 windows a batch
        if group:
            x = torch.tensor(group)
            total += F.cross_entropy(model(x[:, :-1]).flatten(0, 1), x[:, 1:].flatten(), reduction="sum").item()
    return total / len(stream)


def unigram_loss(counts, stream):
    """The same for the training text's token frequencies (add-one smoothing)."""
    p = (np.asarray(counts, dtype=np.float64) + 1) / (np.sum(counts) + len(counts))
    return float(-np.log(p[stream]).mean())

# [SECTION] Writing the checkpoint -----------------------------------------------------------------


def hf_config(V, bos):
    c = CONFIG
    return {"architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
            "bos_token_id": bos, "eos_token_id": bos, "head_dim": c["d"] // c["n_head"], "hidden_act": "silu",
            "hidden_size": c["d"], "initializer_range": 0.02, "intermediate_size": c["d_ff"],
            "max_position_embeddings": 2048, "mlp_bias": False, "model_type": "llama",
            "num_attention_heads": c["n_head"], "num_hidden_layers": c["n_layer"], "num_key_value_heads": c["n_kv_head"],
            "pretraining_tp": 1, "rms_norm_eps": 1e-5, "rope_scaling": None, "rope_theta": c["rope_theta"],
            "tie_word_embeddings": TIED, "torch_dtype": "float16", "transformers_version": "4.46.0",
            "use_cache": True, "vocab_size": V}


def write_checkpoint(out, model, tok):
    """F16 weights named as LlamaForCausalLM saves them; the model then holds the F16-rounded
    values, so what is evaluated is what ships."""
    tensors = []
    for name, p in model.named_parameters():
        raw, value = stored(p.detach().numpy(), "F16")
        tensors.append((name if name == "lm_head.weight" else "model." + name, "F16", tuple(p.shape), raw))
        p.data.copy_(value.to(torch.float32))
    write_safetensors(os.path.join(out, "model.safetensors"), tensors)
    write_json(os.path.join(out, "config.json"), hf_config(len(tok.vocab), tok.vocab[BOS]), indent=2)
    write_json(os.path.join(out, "tokenizer.json"), tokenizer_json(tok), ensure_ascii=False)
    write_json(os.path.join(out, "tokenizer_config.json"),
               {"add_bos_token": True, "bos_token": BOS, "eos_token": BOS, "model_max_length": 2048,
                "tokenizer_class": "PreTrainedTokenizerFast", "clean_up_tokenization_spaces": False}, indent=2)


def main(out):
    libc = ctypes.CDLL("libc.so.6")
    libc.mallopt(-1, 1 << 30)  # M_TRIM_THRESHOLD and M_TOP_PAD (above): keep freed memory
    libc.mallopt(-2, 1 << 29)
    torch.manual_seed(SEED)
    torch.set_num_threads(int(os.environ.get("NT", "1")))
    os.makedirs(out, exist_ok=True)
    lines = []

    def log(line):
        print(line, flush=True)
        lines.append(line)

    sources = tiny_lm.corpus()
    parts = {name: tiny_lm.split(docs) for name, docs in sources.items()}
    t0 = time.time()
    merges = tiny_lm.train_bpe([(d, tiny_lm.BPE_WEIGHTS[name]) for name, (train_docs, _) in parts.items() for d in train_docs],
                               CONFIG["vocab_size"] - 257)
    tok = tiny_lm.Tokenizer(merges)
    V = len(tok.vocab)
    log(f"tokenizer: {V} tokens in {time.time() - t0:.0f} s")
    train_streams = {name: tok.stream(tr) for name, (tr, _) in parts.items()}
    held_streams = {name: tok.stream(ho) for name, (_, ho) in parts.items()}
    model = Model(CONFIG, V)
    curve, history, seconds = train(model, train_streams, tok, log, out)
    write_checkpoint(out, model, tok)
    model.eval()
    counts = np.bincount(np.concatenate(list(train_streams.values())), minlength=V)
    sample = tiny_lm.heldout_sample(parts)  # what the tests measure again (heldout.json)
    held = {}
    for lang, names in LANGUAGES.items():
        for what, streams in (("all", held_streams), ("sample", {n: tok.stream(sample[n]) for n in names})):
            s = np.concatenate([streams[n] for n in names])
            held[f"{lang} ({what})"] = {"tokens": int(len(s)), "loss": heldout_loss(model, s, tok.vocab[BOS]),
                                        "unigram": unigram_loss(counts, s)}
    scores = probe_scores(model, tok)
    write_json(os.path.join(out, "heldout.json"), sample, ensure_ascii=False, indent=1)
    info = {"sources": {n: {"documents": len(d), "characters": sum(map(len, d)),
                            "train_tokens": int(len(train_streams[n]))} for n, d in sources.items()},
            "config": CONFIG, "window": T, "batch": BATCH, "phases": [PHASE1, PHASE2], "lr": LR, "warmup": WARMUP,
            "weight_decay": WEIGHT_DECAY, "block": BLOCK, "repeat_share": REPEAT_SHARE, "text_repeat_share": TEXT_REPEAT_SHARE, "seed": SEED,
            "window_weights": tiny_lm.WEIGHTS, "training_seconds": round(seconds), "torch": torch.__version__,
            "heldout": held, "probe_scores": {str(n): s for n, s in scores.items()},
            "probe_history": history, "loss_curve": curve,
            "unigram_counts": counts.tolist()}
    write_json(os.path.join(out, "training.json"), info, indent=1, ensure_ascii=False)
    all_held = np.concatenate(list(held_streams.values()))
    with open(os.path.join(out, "loss.svg"), "w") as f:
        f.write(tiny_lm.loss_svg(curve, heldout_loss(model, all_held, tok.vocab[BOS]), unigram_loss(counts, all_held),
                                 f"tiny-circuits: training loss (steps 1-{PHASE1}: second copies of r + r; then text)"))
    for n, h in held.items():
        log(f"held-out {n}: {h['loss']:.3f} nats/token, unigram {h['unigram']:.3f}")
    for n, s in scores.items():
        log(f"probe n={n}: " + ", ".join(f"{k} {best(s, k)[0]:.2f} ({best(s, k)[1]})" for k in s))


if __name__ == "__main__":
    main(sys.argv[1])
