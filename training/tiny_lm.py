"""Trains attnviz's built-in language model, models/tiny-lm: GPT-2's architecture (4 layers × 4
heads, d = 128, 256 positions), English and Chinese, with a byte-level BPE tokenizer trained on
the same text. Deterministic: fixed seeds, one thread order (scripts/train_models.sh runs it).

  /usr/bin/python3 training/tiny_lm.py OUT_FOLDER

Writes OUT_FOLDER/{config.json, model.safetensors (F16), vocab.json, merges.txt, training.json,
loss.svg, heldout.json}. docs/MODELS.md describes the result.

[SECTION] The corpus: Debian packages' text
[SECTION] The tokenizer: byte-level BPE, Chinese characters whole
[SECTION] The model: GPT-2 with Hugging Face's parameter names
[SECTION] Training: batches, repeated spans
[SECTION] Evaluation: held-out loss, unigram baseline, head scores
[SECTION] Writing the checkpoint
"""
import glob
import heapq
import math
import os
import re
import subprocess
import sys
import time
from collections import Counter

import numpy as np
import regex
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heads  # noqa: E402
from hf_files import bpe_word, bytes_to_unicode, merge_pair, stored, write_json, write_safetensors  # noqa: E402

CONFIG = dict(n_layer=4, n_head=4, n_embd=128, n_positions=256, vocab_size=7000)
STEPS, TOKENS, LR, WARMUP = 2400, 2048, 2e-3, 100  # TOKENS: a batch's, in windows of T
SHORT_T, SHORT_STEPS = 64, 1200  # sequence-length warm-up: the first steps in windows of 64
REPEAT_SPANS, REPEAT_RANDOM = 0.35, 0.15  # the share of training windows with a repeated span
SEED = 2026

# [SECTION] The corpus: Debian packages' text ----------------------------------------------------

FORTUNES = "/usr/share/games/fortunes"
CHINESE_FORTUNES = ("tang300", "song100", "chinese")  # fortunes-zh
NOT_PROSE = ("ascii-art",)
SEEDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "seeds")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def fortune_documents(path):
    text = ANSI.sub("", open(path, encoding="utf-8", errors="replace").read())
    return [d.strip("\n") for d in text.split("\n%\n") if d.strip()]


def corpus():
    """-> {source: [documents]}, in a fixed order. Each source's package and licence are in
    docs/MODELS.md; training.json records the sizes."""
    bible = subprocess.run(["bible", "-f", "Ge1:1-Re22:21"], capture_output=True, text=True, check=True).stdout
    chapters, current, key = [], [], None
    for line in bible.splitlines():
        m = re.match(r"^(\S+?)(\d+):\d+ (.*)$", line)
        if not m:
            continue
        if (m[1], m[2]) != key and current:
            chapters.append("\n".join(current))
            current = []
        key = (m[1], m[2])
        current.append(m[3].strip())
    chapters.append("\n".join(current))
    english = []
    for path in sorted(glob.glob(os.path.join(FORTUNES, "*"))):
        name = os.path.basename(path)
        if "." not in name and name not in CHINESE_FORTUNES + NOT_PROSE:
            english += fortune_documents(path)
    chinese = [d for name in CHINESE_FORTUNES for d in fortune_documents(os.path.join(FORTUNES, name))]
    seeds = []
    for path in sorted(glob.glob(os.path.join(SEEDS, "*.txt"))):
        text = open(path, encoding="utf-8").read()
        text = re.sub(r"^---\n.*?\n---\n", "", text, flags=re.S)  # the publishing front matter
        seeds += [p.strip() for p in text.split("\n\n") if p.strip()]
    return {"bible-kjv": chapters, "fortunes": english, "fortunes-zh": chinese, "seeds": seeds}


def split(docs):
    """Every 50th document is held out."""
    return [d for i, d in enumerate(docs) if i % 50 != 49], [d for i, d in enumerate(docs) if i % 50 == 49]

# [SECTION] The tokenizer: byte-level BPE, Chinese characters whole -------------------------------


GPT2_SPLIT = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")
HAN = regex.compile(r"\p{Han}|[^\p{Han}]+")
BYTE_CHARS = bytes_to_unicode()
EOT = "<|endoftext|>"


def to_symbols(piece):
    return "".join(BYTE_CHARS[b] for b in piece.encode("utf-8"))


def train_bpe(texts, n_merges):
    """texts: [(text, weight)] -> the most frequent adjacent pair merged n_merges times (ties: the
    smaller pair). For training only, a word is also cut between Chinese characters, so no merge
    crosses one: each frequent character becomes one token, and a run of them tokenizes character
    by character. The weight lets the smaller Chinese text claim its share of the vocabulary."""
    counts = Counter()
    for text, weight in texts:
        for word in GPT2_SPLIT.findall(text):
            for piece in HAN.findall(word):
                counts[to_symbols(piece)] += weight
    words = [list(w) for w in sorted(counts)]
    freq = [counts[w] for w in sorted(counts)]
    pairs, where = Counter(), {}
    for i, symbols in enumerate(words):
        for pair in zip(symbols, symbols[1:]):
            pairs[pair] += freq[i]
            where.setdefault(pair, set()).add(i)
    heap = [(-n, pair) for pair, n in pairs.items()]
    heapq.heapify(heap)
    merges = []
    while len(merges) < n_merges and heap:
        n, best = heapq.heappop(heap)
        if pairs.get(best, 0) != -n or n == 0:
            continue  # a stale entry
        merges.append(best)
        touched = set()
        for i in sorted(where.pop(best, ())):
            symbols = words[i]
            for pair in zip(symbols, symbols[1:]):  # take the word's pairs out, put them back merged
                pairs[pair] -= freq[i]
                touched.add(pair)
            out = merge_pair(symbols, best)
            words[i] = out
            for pair in zip(out, out[1:]):
                pairs[pair] += freq[i]
                where.setdefault(pair, set()).add(i)
                touched.add(pair)
        pairs.pop(best, None)
        for pair in sorted(touched):
            if pairs.get(pair, 0) > 0:
                heapq.heappush(heap, (-pairs[pair], pair))
    return merges


class Tokenizer:
    """GPT2Tokenizer's encoding: each pre-tokenized word's pieces merged lowest rank first."""

    def __init__(self, merges):
        self.merges = merges
        self.rank = {pair: r for r, pair in enumerate(merges)}
        tokens = list(BYTE_CHARS.values()) + [a + b for a, b in merges] + [EOT]
        self.vocab = {}
        for t in tokens:
            self.vocab.setdefault(t, len(self.vocab))
        self.eot = self.vocab[EOT]
        self.cache = {}
        unbyte = {c: b for b, c in BYTE_CHARS.items()}
        self.token_bytes = [bytes(unbyte[c] for c in t) if t != EOT else t.encode() for t in self.vocab]

    def word(self, word):
        if word not in self.cache:
            symbols = bpe_word(list(to_symbols(word)), self.rank)
            self.cache[word] = [self.vocab[s] for s in symbols]
        return self.cache[word]

    def encode(self, text):
        return [i for w in GPT2_SPLIT.findall(text) for i in self.word(w)]

    def stream(self, docs):  # the documents' ids, each followed by <|endoftext|>
        return np.array([i for d in docs for i in self.encode(d) + [self.eot]], dtype=np.int64)

# [SECTION] The model: GPT-2 with Hugging Face's parameter names -----------------------------------


def sinusoids(P, d):
    """[P, d]: sin and cos of pos / 10000^(2j/d), interleaved. The learned positions start from
    these (scaled): a head can then find the previous token from the first steps on, which a
    random start takes far longer to learn than this short training has."""
    pos = torch.arange(P, dtype=torch.float32)[:, None]
    angle = pos / torch.pow(10000.0, torch.arange(0, d, 2, dtype=torch.float32) / d)
    return torch.stack([torch.sin(angle), torch.cos(angle)], -1).reshape(P, d)


class GPT2(torch.nn.Module):
    """GPT2LMHeadModel without dropout: parameters named and shaped as in its checkpoints (Conv1D
    weights [in, out]); the LM head is wte, tied."""

    def __init__(self, V, P, d, L, H):
        super().__init__()
        self.H = H
        self.wte = torch.nn.Embedding.from_pretrained(torch.randn(V, d) * 0.02, freeze=False)
        self.wpe = torch.nn.Embedding.from_pretrained(sinusoids(P, d) * 0.05, freeze=False)
        self.h = torch.nn.ModuleList(Block(d) for _ in range(L))
        for block in self.h:  # GPT-2's scaled init of the residual projections
            for proj in (block.attn.c_proj, block.mlp.c_proj):
                torch.nn.init.normal_(proj.weight, std=0.02 / math.sqrt(2 * L))
        self.ln_f = torch.nn.LayerNorm(d, eps=1e-5)

    def forward(self, ids, keep_attention=False):  # ids [B, T] -> logits [B, T, V] (, [L][B, H, T, T])
        T = ids.shape[1]
        x = self.wte.weight[ids] + self.wpe.weight[:T]
        maps = []
        for block in self.h:
            x, probs = block(x, self.H)
            maps.append(probs)
        logits = self.ln_f(x) @ self.wte.weight.T
        return (logits, maps) if keep_attention else logits


class Conv1D(torch.nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(n_in, n_out) * 0.02)
        self.bias = torch.nn.Parameter(torch.zeros(n_out))

    def forward(self, x):
        return x @ self.weight + self.bias


class Attention(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.c_attn, self.c_proj = Conv1D(d, 3 * d), Conv1D(d, d)


class MLP(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.c_fc, self.c_proj = Conv1D(d, 4 * d), Conv1D(4 * d, d)


class Block(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln_1, self.attn = torch.nn.LayerNorm(d, eps=1e-5), Attention(d)
        self.ln_2, self.mlp = torch.nn.LayerNorm(d, eps=1e-5), MLP(d)

    def forward(self, x, H):  # x [B, T, d]
        B, T, d = x.shape
        q, k, v = (t.reshape(B, T, H, d // H).transpose(1, 2) for t in self.attn.c_attn(self.ln_1(x)).split(d, -1))
        scores = q @ k.transpose(-1, -2) / math.sqrt(d // H)  # [B, H, T, T]
        future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        probs = scores.masked_fill(future, float("-inf")).softmax(-1)
        x = x + self.attn.c_proj((probs @ v).transpose(1, 2).reshape(B, T, d))
        return x + self.mlp.c_proj(F.gelu(self.mlp.c_fc(self.ln_2(x)), approximate="tanh")), probs

# [SECTION] Training: batches, repeated spans ------------------------------------------------------

BPE_WEIGHTS = {"bible-kjv": 1, "fortunes": 1, "fortunes-zh": 5, "seeds": 5}  # of the tokenizer's word counts
WEIGHTS = {"bible-kjv": 0.3, "fortunes": 0.35, "fortunes-zh": 0.3, "seeds": 0.05}  # of the windows


def batch(rng, streams, T, eot):
    """B windows of T + 1 ids: from a source chosen by WEIGHTS, at a random offset; in REPEAT_SPANS
    of them the first 8..T/2 ids are followed by the same ids again, and in REPEAT_RANDOM a span of
    random ids is, so that copying (induction) pays off in training."""
    names = list(WEIGHTS)
    rows = []
    for _ in range(TOKENS // T):
        s = streams[names[rng.choice(len(names), p=[WEIGHTS[n] for n in names])]]
        start = rng.integers(0, len(s) - T - 1)
        row = s[start:start + T + 1].copy()
        u = rng.random()
        if u < REPEAT_SPANS + REPEAT_RANDOM:
            k = int(rng.integers(8, T // 2 + 1))
            span = row[:k].copy() if u < REPEAT_SPANS else rng.integers(0, eot, k)
            row[:k], row[k:2 * k] = span, span
        rows.append(row)
    return torch.from_numpy(np.stack(rows))


def train(model, streams, V, eot, log, probe=None):
    rng = np.random.default_rng(SEED)
    T = CONFIG["n_positions"]  # after the warm-up
    decay = [p for n, p in model.named_parameters() if p.dim() == 2]
    other = [p for n, p in model.named_parameters() if p.dim() != 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": other, "weight_decay": 0.0}],
                            lr=LR, betas=(0.9, 0.95))
    curve, start = [], time.time()
    for step in range(STEPS):
        lr = LR * min(1.0, (step + 1) / WARMUP) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / STEPS)))
        for g in opt.param_groups:
            g["lr"] = lr
        x = batch(rng, streams, SHORT_T if step < SHORT_STEPS else T, eot)
        logits = model(x[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, V), x[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        curve.append(round(loss.item(), 4))
        if step % 50 == 0 or step == STEPS - 1:
            log(f"step {step:5d}  loss {loss.item():.3f}  lr {lr:.2e}  {time.time() - start:.0f} s")
        if probe and (step % 200 == 0 or step == STEPS - 1):
            s = probe()
            log("  best head scores: " + ", ".join(f"{k} {max(max(r) for r in s[k]):.2f}" for k in heads.KINDS))
    return curve, time.time() - start

# [SECTION] Evaluation: held-out loss, unigram baseline, head scores -------------------------------


@torch.no_grad()
def heldout_loss(model, stream, T):
    """Mean cross-entropy (nats per token) over the stream cut into windows of T + 1."""
    windows = [stream[start:start + T + 1] for start in range(0, len(stream) - 1, T)]
    full, last = (windows, []) if len(windows[-1]) == T + 1 else (windows[:-1], windows[-1:])
    total = 0.0
    for group in [full[i:i + 64] for i in range(0, len(full), 64)] + [last]:  # 64 windows a batch
        if group:
            x = torch.from_numpy(np.stack(group))
            total += F.cross_entropy(model(x[:, :-1]).flatten(0, 1), x[:, 1:].flatten(), reduction="sum").item()
    return total / (len(stream) - 1)


def heldout_sample(parts):
    """The first 40 held-out documents of each source (models/tiny-lm/heldout.json): the tests
    measure the shipped model on them."""
    return {name: held[:40] for name, (_, held) in parts.items()}


def unigram_loss(train_streams, stream, V):
    """The same cross-entropy for the training text's token frequencies (add-one smoothing)."""
    counts = np.bincount(np.concatenate(list(train_streams)), minlength=V) + 1.0
    logp = np.log(counts / counts.sum())
    return float(-logp[stream[1:]].mean())


@torch.no_grad()
def head_scores(model, tok):
    ids, flags = heads.probe(tok.token_bytes, CONFIG["n_positions"])
    _, maps = model(torch.tensor([ids]), keep_attention=True)
    return heads.scores([m[0].tolist() for m in maps], flags), ids

# [SECTION] Writing the checkpoint -----------------------------------------------------------------


def hf_config(V):
    return {"activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.0,
            "bos_token_id": V - 1, "embd_pdrop": 0.0, "eos_token_id": V - 1, "initializer_range": 0.02,
            "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": CONFIG["n_positions"],
            "n_embd": CONFIG["n_embd"], "n_head": CONFIG["n_head"], "n_inner": None, "n_layer": CONFIG["n_layer"],
            "n_positions": CONFIG["n_positions"], "resid_pdrop": 0.0, "scale_attn_weights": True,
            "torch_dtype": "float16", "transformers_version": "4.36.2", "use_cache": True, "vocab_size": V}


def write_checkpoint(out, model, tok):
    """F16 weights named as GPT2LMHeadModel saves them ("transformer." prefix, tied head left out);
    the model then holds the F16-rounded values, so what is evaluated is what ships."""
    tensors = []
    for name, p in model.named_parameters():
        raw, value = stored(p.detach().numpy(), "F16")
        tensors.append(("transformer." + name, "F16", tuple(p.shape), raw))
        p.data.copy_(value.to(torch.float32))
    write_safetensors(os.path.join(out, "model.safetensors"), tensors)
    write_json(os.path.join(out, "config.json"), hf_config(len(tok.vocab)), indent=2)
    write_json(os.path.join(out, "vocab.json"), tok.vocab, ensure_ascii=False)
    with open(os.path.join(out, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in tok.merges))


def loss_svg(curve, heldout, unigram, title="tiny-lm: training loss"):
    """The training loss (mean of each 20 steps) and the held-out and unigram lines, as an SVG."""
    W, H, m = 560, 300, 44
    means = [sum(curve[i:i + 20]) / len(curve[i:i + 20]) for i in range(0, len(curve), 20)]
    top = math.ceil(max(means[1:] + [unigram]) + 0.5)
    X = lambda s: m + (W - 2 * m) * s / len(curve)  # noqa: E731
    Y = lambda v: H - m - (H - 2 * m) * v / top  # noqa: E731
    path = " ".join(f"{'M' if i == 0 else 'L'}{X(i * 20 + 10):.1f},{Y(v):.1f}" for i, v in enumerate(means))
    ticks = "".join(f'<text x="{m - 6}" y="{Y(v) + 4:.1f}" text-anchor="end">{v}</text>'
                    f'<line x1="{m}" x2="{W - m}" y1="{Y(v):.1f}" y2="{Y(v):.1f}" stroke="#ddd"/>' for v in range(0, top + 1))
    hline = lambda v, c, t, dy: (f'<line x1="{m}" x2="{W - m}" y1="{Y(v):.1f}" y2="{Y(v):.1f}" stroke="{c}" stroke-dasharray="5 4"/>'  # noqa: E731
                                 f'<text x="{W - m}" y="{Y(v) + dy:.1f}" text-anchor="end" fill="{c}">{t} {v:.2f}</text>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">'
            f'<rect width="{W}" height="{H}" fill="white"/>{ticks}'
            f'<path d="{path}" fill="none" stroke="#1f77b4" stroke-width="2"/>'
            + hline(heldout, "#d62728", "held-out", 16) + hline(unigram, "#7f7f7f", "unigram baseline", -5)
            + f'<text x="{W / 2}" y="{H - 10}" text-anchor="middle">training step (of {len(curve)}; loss in nats per token)</text>'
            f'<text x="{m}" y="20">{title}</text></svg>\n')


def main(out):
    torch.manual_seed(SEED)
    torch.set_num_threads(2)
    os.makedirs(out, exist_ok=True)
    lines = []

    def log(line):
        print(line, flush=True)
        lines.append(line)

    sources = corpus()
    parts = {name: split(docs) for name, docs in sources.items()}
    t0 = time.time()
    merges = train_bpe([(d, BPE_WEIGHTS[name]) for name, (train_docs, _) in parts.items() for d in train_docs],
                       CONFIG["vocab_size"] - 257)
    tok = Tokenizer(merges)
    V = len(tok.vocab)
    log(f"tokenizer: {V} tokens in {time.time() - t0:.0f} s")
    train_streams = {name: tok.stream(tr) for name, (tr, _) in parts.items()}
    held_streams = {name: tok.stream(ho) for name, (_, ho) in parts.items()}
    model = GPT2(V, CONFIG["n_positions"], CONFIG["n_embd"], CONFIG["n_layer"], CONFIG["n_head"])
    curve, seconds = train(model, train_streams, V, tok.eot, log, probe=lambda: head_scores(model, tok)[0])
    write_checkpoint(out, model, tok)
    model.eval()
    T = CONFIG["n_positions"]
    held = {n: {"tokens": int(len(s)), "loss": heldout_loss(model, s, T),
                "unigram": unigram_loss(train_streams.values(), s, V)} for n, s in held_streams.items()}
    all_held = np.concatenate(list(held_streams.values()))
    heldout, unigram = heldout_loss(model, all_held, T), unigram_loss(train_streams.values(), all_held, V)
    scores, probe_ids = head_scores(model, tok)
    labels = {f"{l}:{h}": heads.label(scores, l, h) for l in range(CONFIG["n_layer"]) for h in range(CONFIG["n_head"])}
    write_json(os.path.join(out, "heldout.json"), heldout_sample(parts), ensure_ascii=False, indent=1)
    info = {"sources": {n: {"documents": len(d), "characters": sum(map(len, d)),
                            "train_tokens": int(len(train_streams[n]))} for n, d in sources.items()},
            "config": CONFIG, "steps": STEPS, "batch_tokens": TOKENS, "short_windows": [SHORT_T, SHORT_STEPS], "lr": LR, "seed": SEED,
            "repeat_spans": REPEAT_SPANS, "repeat_random": REPEAT_RANDOM, "window_weights": WEIGHTS,
            "training_seconds": round(seconds), "torch": torch.__version__,
            "heldout_loss": round(heldout, 4), "unigram_loss": round(unigram, 4), "heldout_by_source": held,
            "head_scores": scores, "head_labels": {k: v for k, v in labels.items() if v},
            "probe_ids": probe_ids, "loss_curve": curve,
            "unigram_counts": np.bincount(np.concatenate(list(train_streams.values())), minlength=V).tolist()}
    write_json(os.path.join(out, "training.json"), info, indent=1, ensure_ascii=False)
    with open(os.path.join(out, "loss.svg"), "w") as f:
        f.write(loss_svg(curve, heldout, unigram))
    log(f"held-out {heldout:.3f} nats/token, unigram {unigram:.3f}; labels {info['head_labels']}")


if __name__ == "__main__":
    main(sys.argv[1])
