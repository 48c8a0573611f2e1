"""Trains attnviz's built-in translator, models/tiny-translator: Marian's architecture (encoder
self-attention, decoder causal self-attention, cross attention) on a generated task whose
alignment is known: numbers and dates between English words, Chinese and digits.

  /usr/bin/python3 training/tiny_translator.py OUT_FOLDER

Writes OUT_FOLDER/{config.json, model.safetensors (F16), vocab.json, source.spm, target.spm,
training.json, heldout.json}. docs/MODELS.md describes the task and the result.

[SECTION] The task: four kinds of pairs, each output piece with the source text it comes from
[SECTION] Tokenizers: SentencePiece Unigram, digits split
[SECTION] The model: Marian with Hugging Face's parameter names
[SECTION] Training, with guided alignment on one head
[SECTION] Evaluation: exact translations, alignment
[SECTION] Writing the checkpoint
"""
import calendar
import io
import math
import os
import sys
import time

import numpy as np
import sentencepiece as spm
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_files import stored, write_json, write_safetensors  # noqa: E402

CONFIG = dict(d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
              decoder_attention_heads=4, encoder_ffn_dim=256, decoder_ffn_dim=256, max_position_embeddings=64)
STEPS, BATCH, LR, WARMUP = 3000, 64, 2e-3, 200
ALIGN_LAYER, ALIGN_HEAD, ALIGN_WEIGHT = 1, 0, 0.5  # guided alignment (0-based decoder layer, head)
HELDOUT, SEED = 500, 2026

# [SECTION] The task: four kinds of pairs, each output piece with the source text it comes from ---
#
# A pair is built from segments: the source as [(text, unit)] and the target as [(text, units)],
# where a target segment names the source units it comes from (None: punctuation, no source).
# The reference alignment of a target token is every source token that overlaps the characters
# of the units its own characters come from.

ZH_DIGITS = "零一二三四五六七八九"
ZH_UNITS = {1000: "千", 100: "百", 10: "十"}
EN_ONES = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split()
EN_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
EN_ORDINAL = {1: "first", 2: "second", 3: "third", 4: "fourth", 5: "fifth", 6: "sixth", 7: "seventh", 8: "eighth",
              9: "ninth", 10: "tenth", 11: "eleventh", 12: "twelfth", 13: "thirteenth", 14: "fourteenth",
              15: "fifteenth", 16: "sixteenth", 17: "seventeenth", 18: "eighteenth", 19: "nineteenth",
              20: "twentieth", 30: "thirtieth"}
MONTHS = list(calendar.month_name)[1:]


def zh_number(n):
    """1..9999 in Chinese numerals -> (source segments, target digit segments). A nonzero digit
    comes from its numeral (the implicit one of 十二 from 十); zeros between nonzero digits from
    their 零, trailing zeros from the unit of the last nonzero digit (三百 -> 300)."""
    digits = [int(c) for c in str(n)]
    k = len(digits)
    src, unit_of, last_unit, zeros = [], {}, None, []
    for i, d in enumerate(digits):
        place = 10 ** (k - 1 - i)
        if d == 0:
            zeros.append(i)
            continue
        if zeros:  # zeros between nonzero digits: one 零
            src.append(("零", len(src)))
            unit_of.update((j, len(src) - 1) for j in zeros)
            zeros = []
        implicit_one = place == 10 and d == 1 and i == 0  # 十二, not 一十二
        if not implicit_one:
            src.append((ZH_DIGITS[d], len(src)))
            unit_of[i] = len(src) - 1
        if place > 1:
            src.append((ZH_UNITS[place], len(src)))
            last_unit = len(src) - 1
            if implicit_one:
                unit_of[i] = last_unit
    unit_of.update((j, last_unit) for j in zeros)  # trailing zeros
    return src, [(str(d), [unit_of[i]]) for i, d in enumerate(digits)]


def en_number(n):
    """0..9999 in English words (American: no "and") -> (source, target digits). A digit comes
    from the word that says it (both digits of a teen or of fifty from that word); a zero its
    group does not say comes from the scale word before it (three hundred five -> 305)."""
    if n == 0:
        return [("zero", 0)], [("0", [0])]
    digits = [int(c) for c in str(n)]
    k = len(digits)
    src, unit_of, scale = [], {}, None

    def word(text):
        if src:
            src.append((" ", None))
        src.append((text, len(src)))
        return len(src) - 1

    for i, d in enumerate(digits):
        place = 10 ** (k - 1 - i)
        if place >= 100:
            if d:
                unit_of[i] = word(EN_ONES[d])
                scale = word("thousand" if place == 1000 else "hundred")
            else:
                unit_of[i] = scale
            continue
        rest, last = int("".join(map(str, digits[i:]))), k - 1  # the last one or two digits
        if rest == 0:
            unit_of.update((j, scale) for j in range(i, k))
        elif rest < 20:
            w = word(EN_ONES[rest])
            unit_of.update((j, w) for j in range(i, k))
            if place == 10 and d == 0:
                unit_of[i] = scale
        else:
            unit_of[i] = unit_of[last] = word(EN_TENS[rest // 10])
            if rest % 10:
                src.append(("-", None))
                src.append((EN_ONES[rest % 10], len(src)))
                unit_of[last] = len(src) - 1
        break
    return src, [(str(d), [unit_of[i]]) for i, d in enumerate(digits)]


def en_ordinal(day):
    """1..31 -> source segments and the units of the day's two digits (zero-padded)."""
    if day in EN_ORDINAL:
        return [(EN_ORDINAL[day], 0)], [0, 0]
    return [(EN_TENS[day // 10], 0), ("-", None), (EN_ORDINAL[day % 10], 2)], [0, 2]


def offset(segments, by):  # renumber a segment list's units
    return [(t, None if u is None else u + by) for t, u in segments]


def pair(kind, rng):
    """-> (source segments, target segments) of one generated pair."""
    if kind == "zh-number":
        return zh_number(int(rng.integers(1, 10000)))
    if kind == "en-number":
        return en_number(int(rng.integers(0, 10000)))
    year, month = int(rng.integers(1900, 2100)), int(rng.integers(1, 13))
    day = int(rng.integers(1, calendar.monthrange(year, month)[1] + 1))
    if kind == "en-date":  # twenty-third of November 2026 -> 2026-11-23
        day_src, day_units = en_ordinal(day)
        src = day_src + [(" of ", None), (MONTHS[month - 1], 10), (" ", None)]
        src += [(c, 20 + j) for j, c in enumerate(str(year))]
        tgt = [(c, [20 + j]) for j, c in enumerate(str(year))] + [("-", None)]
        tgt += [(c, [10]) for c in f"{month:02d}"] + [("-", None)]
        tgt += [(c, [u]) for c, u in zip(f"{day:02d}", day_units)]
        return src, tgt
    # zh-date: 1999年12月31日 -> December 31, 1999
    src = [(c, 20 + j) for j, c in enumerate(str(year))] + [("年", None)]
    src += [(c, 10 + j) for j, c in enumerate(str(month))] + [("月", 12)]
    src += [(c, 30 + j) for j, c in enumerate(str(day))] + [("日", None)]
    month_units = [10 + j for j in range(len(str(month)))] + [12]
    tgt = [(MONTHS[month - 1], month_units), (" ", None)]
    tgt += [(c, [30 + j]) for j, c in enumerate(str(day))] + [(", ", None)]
    tgt += [(c, [20 + j]) for j, c in enumerate(str(year))]
    return src, tgt


KINDS = ("zh-number", "en-number", "en-date", "zh-date")


def spans(segments):
    """-> (text, {unit: (start, end)}) of source segments."""
    text, where = "", {}
    for t, u in segments:
        if u is not None:
            where[u] = (len(text), len(text) + len(t))
        text += t
    return text, where


def target_spans(segments):
    """-> (text, [(start, end, [units])]) of target segments."""
    text, out = "", []
    for t, units in segments:
        if units:
            out.append((len(text), len(text) + len(t), units))
        text += t
    return text, out

# [SECTION] Tokenizers: SentencePiece Unigram, digits split ---------------------------------------


def train_spm(lines, vocab_size, whole=()):
    """A Unigram model; digits always alone, and the strings `whole` always one piece each
    (user-defined symbols): on this small, repetitive text the Unigram trainer otherwise keeps
    letters and few words, and a number word or Chinese numeral should be one source token."""
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=model, vocab_size=vocab_size,
                                   model_type="unigram", character_coverage=1.0, num_threads=1, split_digits=True,
                                   hard_vocab_limit=False, minloglevel=2, user_defined_symbols=list(whole))
    return model.getvalue()


class Tokenizers:
    """MarianTokenizer's layout: source.spm, target.spm and one vocab.json (</s> 0, <unk> 1, the
    pieces of both models, <pad> last); a sequence ends with </s>."""

    def __init__(self, source, target):
        self.source_model, self.target_model = source, target
        self.source = spm.SentencePieceProcessor(model_proto=source)
        self.target = spm.SentencePieceProcessor(model_proto=target)
        pieces = ["</s>", "<unk>"]
        for sp in (self.source, self.target):
            pieces += [sp.id_to_piece(i) for i in range(sp.get_piece_size()) if not sp.is_control(i) and not sp.is_unknown(i)]
        self.vocab = {p: i for i, p in enumerate(dict.fromkeys(pieces + ["<pad>"]))}
        self.pieces = list(self.vocab)
        self.eos, self.pad = 0, len(self.vocab) - 1

    def encode(self, sp, text):
        """-> (ids + [</s>], each piece's character span in `text`)."""
        pieces = sp.encode(text, out_type=str)
        ids, spans_, at = [], [], 0
        for p in pieces:
            surface = p.replace("\u2581", " ")
            if at == 0 and surface.startswith(" ") and not text.startswith(" "):
                surface = surface[1:]  # the dummy prefix
            spans_.append((at, at + len(surface)))
            at += len(surface)
            ids.append(self.vocab.get(p, 1))
        assert at == len(text), (text, pieces)
        return ids + [self.eos], spans_

    def decode(self, ids):
        return "".join(self.pieces[i] for i in ids if i not in (self.eos, self.pad)).replace("\u2581", " ").strip()


def example(tok, src_segments, tgt_segments):
    """-> (source ids, target ids, alignment [target token][source token] as 0/1 rows; an all-zero
    row: the token comes from no source unit)."""
    src_text, unit_span = spans(src_segments)
    tgt_text, tgt_units = target_spans(tgt_segments)
    src_ids, src_pieces = tok.encode(tok.source, src_text)
    tgt_ids, tgt_pieces = tok.encode(tok.target, tgt_text)
    align = np.zeros((len(tgt_ids), len(src_ids)), dtype=np.float32)
    for t, (a, b) in enumerate(tgt_pieces):
        for start, end, units in tgt_units:
            if start < b and a < end:  # this target piece says (part of) these units
                for u in units:
                    ua, ub = unit_span[u]
                    for s, (sa, sb) in enumerate(src_pieces):
                        if sa < ub and ua < sb:
                            align[t, s] = 1
    return src_ids, tgt_ids, align, src_text, tgt_text

# [SECTION] The model: Marian with Hugging Face's parameter names ---------------------------------


def sinusoidal(P, d):  # MarianSinusoidalPositionalEmbedding: sin of the even angles, then cos of the odd
    pos = torch.arange(P, dtype=torch.float64)[:, None]
    j = torch.arange(d, dtype=torch.float64)[None, :]
    angle = pos / torch.pow(10000.0, 2 * torch.div(j, 2, rounding_mode="floor") / d)
    return torch.cat([torch.sin(angle[:, 0::2]), torch.cos(angle[:, 1::2])], 1).float()


class MarianAttention(torch.nn.Module):
    def __init__(self, d, H):
        super().__init__()
        self.H = H
        self.k_proj, self.v_proj, self.q_proj, self.out_proj = (torch.nn.Linear(d, d) for _ in range(4))

    def forward(self, x, kv, mask):  # x [B, Tq, d], kv [B, Tk, d], mask [B or 1, 1, Tq or 1, Tk] True = hidden
        B, Tq, d = x.shape
        heads = lambda t: t.reshape(B, -1, self.H, d // self.H).transpose(1, 2)  # noqa: E731
        q, k, v = heads(self.q_proj(x)), heads(self.k_proj(kv)), heads(self.v_proj(kv))
        probs = (q @ k.transpose(-1, -2) / math.sqrt(d // self.H)).masked_fill(mask, float("-inf")).softmax(-1)
        return self.out_proj((probs @ v).transpose(1, 2).reshape(B, Tq, d)), probs


class Layer(torch.nn.Module):
    def __init__(self, d, H, d_ff, cross):
        super().__init__()
        self.self_attn, self.self_attn_layer_norm = MarianAttention(d, H), torch.nn.LayerNorm(d)
        if cross:
            self.encoder_attn, self.encoder_attn_layer_norm = MarianAttention(d, H), torch.nn.LayerNorm(d)
        self.fc1, self.fc2, self.final_layer_norm = torch.nn.Linear(d, d_ff), torch.nn.Linear(d_ff, d), torch.nn.LayerNorm(d)

    def forward(self, x, self_mask, memory=None, cross_mask=None):  # post-LN, as Marian
        a, _ = self.self_attn(x, x, self_mask)
        x = self.self_attn_layer_norm(x + a)
        probs = None
        if memory is not None:
            a, probs = self.encoder_attn(x, memory, cross_mask)
            x = self.encoder_attn_layer_norm(x + a)
        return self.final_layer_norm(x + self.fc2(F.silu(self.fc1(x)))), probs


class Stack(torch.nn.Module):
    def __init__(self, n, d, H, d_ff, cross):
        super().__init__()
        self.layers = torch.nn.ModuleList(Layer(d, H, d_ff, cross) for _ in range(n))


class Marian(torch.nn.Module):
    """MarianMTModel without dropout: shared embeddings × √d, sinusoidal positions, the tied head
    with final_logits_bias."""

    def __init__(self, V):
        super().__init__()
        c = CONFIG
        d = c["d_model"]
        self.shared = torch.nn.Parameter(torch.randn(V, d) * d ** -0.5)
        self.encoder = Stack(c["encoder_layers"], d, c["encoder_attention_heads"], c["encoder_ffn_dim"], False)
        self.decoder = Stack(c["decoder_layers"], d, c["decoder_attention_heads"], c["decoder_ffn_dim"], True)
        self.register_buffer("positions", sinusoidal(c["max_position_embeddings"], d))
        self.final_logits_bias = torch.nn.Parameter(torch.zeros(1, V))

    def embed(self, ids):
        return self.shared[ids] * math.sqrt(CONFIG["d_model"]) + self.positions[:ids.shape[1]]

    def forward(self, src, src_pad, dec):  # src [B, S], src_pad [B, S] True = padding, dec [B, T]
        memory = self.embed(src)
        key_mask = src_pad[:, None, None, :]
        for layer in self.encoder.layers:
            memory, _ = layer(memory, key_mask)
        T = dec.shape[1]
        future = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)[None, None]
        y, cross = self.embed(dec), []
        for layer in self.decoder.layers:
            y, probs = layer(y, future, memory, key_mask)
            cross.append(probs)
        return y @ self.shared.T + self.final_logits_bias, cross

# [SECTION] Training, with guided alignment on one head --------------------------------------------


def make_batch(examples, pad):
    S = max(len(e[0]) for e in examples)
    T = max(len(e[1]) for e in examples)
    src = torch.full((len(examples), S), pad)
    dec = torch.full((len(examples), T), pad)  # [decoder_start = pad, y_1 .. y_{n-1}]
    out = torch.full((len(examples), T), -100)  # [y_1 .. y_n = </s>]
    align = torch.zeros(len(examples), T, S)
    for b, (s, t, a, *_) in enumerate(examples):
        src[b, :len(s)] = torch.tensor(s)
        dec[b, 1:len(t)] = torch.tensor(t[:-1])
        out[b, :len(t)] = torch.tensor(t)
        align[b, :len(t), :len(s)] = torch.from_numpy(a)
    return src, src == pad, dec, out, align


def generate(rng, tok, n, exclude):
    out = []
    while len(out) < n:
        s, t = pair(KINDS[int(rng.integers(0, len(KINDS)))], rng)
        e = example(tok, s, t)
        if e[3] not in exclude:
            out.append(e)
    return out


def train(model, tok, exclude, log):
    rng = np.random.default_rng(SEED + 1)
    opt = torch.optim.AdamW(model.parameters(), lr=LR, betas=(0.9, 0.98), weight_decay=0.01)
    curve, start = [], time.time()
    for step in range(STEPS):
        lr = LR * min(1.0, (step + 1) / WARMUP) * 0.5 * (1 + math.cos(math.pi * step / STEPS))
        for g in opt.param_groups:
            g["lr"] = lr
        src, src_pad, dec, out, align = make_batch(generate(rng, tok, BATCH, exclude), tok.pad)
        logits, cross = model(src, src_pad, dec)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), out.reshape(-1), ignore_index=-100)
        # guided alignment (as Marian's --guided-alignment): cross-entropy of the reference
        # alignment, normalised per row, against one head's cross attention
        rows = align.sum(-1, keepdim=True)
        ref = align / rows.clamp(min=1)
        p = cross[ALIGN_LAYER][:, ALIGN_HEAD]  # [B, T, S]
        guided = -(ref * torch.log(p.clamp(min=1e-9))).sum() / (rows > 0).sum().clamp(min=1)
        total = loss + ALIGN_WEIGHT * guided
        opt.zero_grad(set_to_none=True)
        total.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        curve.append(round(loss.item(), 4))
        if step % 100 == 0 or step == STEPS - 1:
            log(f"step {step:5d}  loss {loss.item():.4f}  guided {guided.item():.3f}  {time.time() - start:.0f} s")
    return curve, time.time() - start

# [SECTION] Evaluation: exact translations, alignment ---------------------------------------------


@torch.no_grad()
def greedy(model, tok, src_ids, max_new=24):
    src = torch.tensor([src_ids])
    ids = [tok.pad]
    for _ in range(max_new):
        logits, _ = model(src, torch.zeros_like(src, dtype=torch.bool), torch.tensor([ids]))
        ids.append(int(logits[0, -1].argmax()))
        if ids[-1] == tok.eos:
            break
    return ids


@torch.no_grad()
def evaluate(model, tok, heldout):
    """-> exact-match rate of greedy translations; per decoder layer and head, the share of aligned
    target tokens whose strongest source token (teacher-forced cross attention row) is one the
    reference alignment names."""
    exact = 0
    L, H = CONFIG["decoder_layers"], CONFIG["decoder_attention_heads"]
    hits, total = np.zeros((L, H)), 0
    for s, t, a, src_text, tgt_text in heldout:
        exact += tok.decode(greedy(model, tok, s)) == tgt_text
        src, src_pad, dec, _, _ = make_batch([(s, t, a)], tok.pad)
        _, cross = model(src, src_pad, dec)
        for row in range(len(t)):
            if a[row].any():
                total += 1
                for layer in range(L):
                    for head in range(H):
                        hits[layer, head] += a[row, int(cross[layer][0, head, row].argmax())] > 0
    return exact / len(heldout), (hits / max(total, 1)).tolist(), total

# [SECTION] Writing the checkpoint -----------------------------------------------------------------


def hf_config(V):
    c = CONFIG
    pad = V - 1
    return {"activation_dropout": 0.0, "activation_function": "swish", "add_bias_logits": False,
            "add_final_layer_norm": False, "architectures": ["MarianMTModel"], "attention_dropout": 0.0,
            "bad_words_ids": [[pad]], "bos_token_id": 0, "classif_dropout": 0.0, "classifier_dropout": 0.0,
            "d_model": c["d_model"], "decoder_attention_heads": c["decoder_attention_heads"],
            "decoder_ffn_dim": c["decoder_ffn_dim"], "decoder_layerdrop": 0.0, "decoder_layers": c["decoder_layers"],
            "decoder_start_token_id": pad, "decoder_vocab_size": V, "dropout": 0.0,
            "encoder_attention_heads": c["encoder_attention_heads"], "encoder_ffn_dim": c["encoder_ffn_dim"],
            "encoder_layerdrop": 0.0, "encoder_layers": c["encoder_layers"], "eos_token_id": 0,
            "forced_eos_token_id": 0, "init_std": 0.02, "is_encoder_decoder": True, "max_length": 64,
            "max_position_embeddings": c["max_position_embeddings"], "model_type": "marian",
            "normalize_before": False, "normalize_embedding": False, "num_beams": 1,
            "num_hidden_layers": c["encoder_layers"], "pad_token_id": pad, "scale_embedding": True,
            "share_encoder_decoder_embeddings": True, "static_position_embeddings": True,
            "torch_dtype": "float16", "transformers_version": "4.36.2", "use_cache": True, "vocab_size": V}


def write_checkpoint(out, model, tok):
    """F16 weights named as MarianMTModel saves them ("model." prefix; embed_tokens and lm_head
    repeat the shared table); the sinusoidal positions are left out, so the runtime computes them
    exactly as training did. The model then holds the rounded values: what is evaluated ships."""
    tensors = []

    def add(name, value):
        raw, rounded = stored(value.detach().numpy(), "F16")
        tensors.append((name, "F16", tuple(value.shape), raw))
        return rounded.to(torch.float32)

    for name, p in model.named_parameters():
        hf = {"shared": "model.shared.weight", "final_logits_bias": "final_logits_bias"}.get(name, "model." + name)
        p.data.copy_(add(hf, p))
    for side in ("encoder", "decoder"):
        add(f"model.{side}.embed_tokens.weight", model.shared)
    add("lm_head.weight", model.shared)
    write_safetensors(os.path.join(out, "model.safetensors"), sorted(tensors))
    write_json(os.path.join(out, "config.json"), hf_config(len(tok.vocab)), indent=2)
    write_json(os.path.join(out, "vocab.json"), tok.vocab, ensure_ascii=False, indent=1)
    for name, data in (("source.spm", tok.source_model), ("target.spm", tok.target_model)):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


def main(out):
    torch.manual_seed(SEED)
    torch.set_num_threads(2)
    os.makedirs(out, exist_ok=True)

    def log(line):
        print(line, flush=True)

    rng = np.random.default_rng(SEED)
    corpus = [pair(KINDS[i % len(KINDS)], rng) for i in range(20000)]
    words = EN_ONES + EN_TENS[2:] + list(EN_ORDINAL.values()) + ["hundred", "thousand", "of"] + MONTHS
    whole = list(ZH_DIGITS + "十百千年月日") + ["\u2581" + w for w in words] + EN_ONES[1:10] + list(EN_ORDINAL.values())[:9]
    source = train_spm([spans(s)[0] for s, _ in corpus], 200, whole=whole)
    target = train_spm([target_spans(t)[0] for _, t in corpus], 40, whole=["\u2581" + m for m in MONTHS])
    tok = Tokenizers(source, target)
    log(f"vocabulary: {len(tok.vocab)} pieces")
    heldout = generate(np.random.default_rng(SEED + 2), tok, HELDOUT, set())
    model = Marian(len(tok.vocab))
    curve, seconds = train(model, tok, {e[3] for e in heldout}, log)
    write_checkpoint(out, model, tok)
    model.eval()
    exact, align, total = evaluate(model, tok, heldout)
    log(f"held-out: exact {exact:.4f}; guided head alignment {align[ALIGN_LAYER][ALIGN_HEAD]:.4f} over {total} tokens")
    write_json(os.path.join(out, "heldout.json"), [{"source": e[3], "target": e[4], "source_ids": e[0],
                                                    "target_ids": e[1], "alignment": e[2].astype(int).tolist()}
                                                   for e in heldout], ensure_ascii=False)
    write_json(os.path.join(out, "training.json"),
               {"config": CONFIG, "steps": STEPS, "batch": BATCH, "lr": LR, "seed": SEED,
                "guided_alignment": {"layer": ALIGN_LAYER, "head": ALIGN_HEAD, "weight": ALIGN_WEIGHT},
                "training_seconds": round(seconds), "torch": torch.__version__, "kinds": KINDS,
                "heldout_cases": HELDOUT, "exact": exact, "alignment_by_head": align, "aligned_tokens": total,
                "loss_curve": curve}, indent=1, ensure_ascii=False)


if __name__ == "__main__":
    main(sys.argv[1])
