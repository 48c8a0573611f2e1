#!/usr/bin/python3
"""Writes tiny random-weight GPT-2, BERT and Marian checkpoints in the Hugging Face layout, each
with the float64 reference run of tests/model/reference.py, for the C++ model runtime's tests.

usage: /usr/bin/python3 tests/model/make_models.py OUTDIR

OUTDIR/cases.json lists the cases; OUTDIR/CASE/ holds config.json, model.safetensors (written
here: F32, F16 or BF16 weights, plus the buffers some versions saved), the tokenizer files
(gpt2 vocab.json + merges.txt, bert vocab.txt, marian source.spm + target.spm + vocab.json) and
expected.json, the float64 reference run of the weights as stored (f16/bf16 up-cast):
  case, model_type ("gpt2" | "bert" | "marian"), dtype ("F32" | "F16" | "BF16")
  gpt2, bert:  [text] (when the ids are its tokens as Hugging Face's tokenizer gives them), ids
               attention [L][H][T][T]; hidden [T][d] (gpt2 after ln_f); logits [V] (gpt2: last position)
  marian:      source_text, target_text, seed, encoder_ids (… </s>), decoder_ids (decoder_start, …),
               max_new, generated_ids (greedy from [decoder_start], recomputed each step, up to
               max_new tokens or </s>; decoder_start included; every step's top-2 gap > 1e-3),
               encoder_attention, decoder_attention, cross_attention [L][H][T_q][T_k],
               hidden [T_dec][d] (the decoder's), logits [V] (last decoder position)
  q: {stack: [L][H][T_q][d_head]}  each head's queries (X·W_q + b_q, before 1/√d_head)
  x: {stack: [L][T_q][d]}          the input the Q projection reads (gpt2: after ln_1; bert,
                                   marian: the residual stream; cross_attention: after the
                                   decoder's self-attention LayerNorm)
Fixed seeds, one thread: the same bytes every run. Run by CMake (target model_refs).

[SECTION] Tokenizers: byte-level BPE, WordPiece vocabulary, SentencePiece
[SECTION] Random weights
[SECTION] The families: config, weights, the tensors' names
[SECTION] Cases
"""
import io
import math
import os
import re
import sys
import unicodedata
from collections import Counter

import numpy as np
import sentencepiece as spm
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "training"))
from hf_files import TORCH_DTYPES, bpe_word, bytes_to_unicode, merge_pair, stored, write_json, write_safetensors  # noqa: E402

torch.set_num_threads(1)

# [SECTION] Tokenizers: byte-level BPE, WordPiece vocabulary, SentencePiece ---------------------------


# GPT-2's pre-tokenizer with Python's `re` (no \p{L}): exact for ASCII text, which is all the cases use.
GPT2_SPLIT = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?(?:[^\s\w]|_)+|\s+(?!\S)|\s+""")
BYTE_CHARS = bytes_to_unicode()


def gpt2_words(text):  # the pre-tokenized words in the byte alphabet
    return ["".join(BYTE_CHARS[b] for b in w.encode("utf-8")) for w in GPT2_SPLIT.findall(text)]


def train_bpe(text, n_merges):
    """The most frequent adjacent pair merged, n_merges times (ties: the smaller pair) -> merges."""
    words = [[list(w), n] for w, n in sorted(Counter(gpt2_words(text)).items())]
    merges = []
    for _ in range(n_merges):
        pairs = Counter()
        for symbols, n in words:
            for pair in zip(symbols, symbols[1:]):
                pairs[pair] += n
        if not pairs:
            break
        best = min(pairs, key=lambda pair: (-pairs[pair], pair))
        merges.append(best)
        for entry in words:
            entry[0] = merge_pair(entry[0], best)
    return merges


def gpt2_tokenizer(text, n_merges):
    """-> (vocab {token: id}, merges): 256 bytes, the merged tokens, <|endoftext|> last."""
    merges = train_bpe(text, n_merges)
    tokens = list(BYTE_CHARS.values()) + [a + b for a, b in merges] + ["<|endoftext|>"]
    vocab = {}
    for t in tokens:
        vocab.setdefault(t, len(vocab))
    return vocab, merges


def gpt2_encode(vocab, merges, text):
    """As GPT2Tokenizer: each word's pieces merged by the lowest-ranked pair first."""
    rank = {pair: r for r, pair in enumerate(merges)}
    ids = []
    for word in gpt2_words(text):
        symbols = bpe_word(list(word), rank)
        ids += [vocab[s] for s in symbols]
    return ids


def write_gpt2_tokenizer(folder, vocab, merges):
    write_json(os.path.join(folder, "vocab.json"), vocab, ensure_ascii=False)
    with open(os.path.join(folder, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))


BERT_CJK = "我们的注意力模型可视化中文是一个大人"
BERT_WORDS = ["the", "cat", "sat", "on", "mat", "model", "attention", "head", "layer", "token", "visual",
              "look", "at", "it", "##s", "##ing", "##ed", "##ize", "##er", "##ly", "##ation"]


def bert_vocab():
    """[PAD] [UNK] [CLS] [SEP] [MASK], single characters (ASCII, some CJK), ##continuations, words."""
    chars = list("abcdefghijklmnopqrstuvwxyz0123456789") + list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~") + list(BERT_CJK)
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + chars + ["##" + c for c in "abcdefghijklmnopqrstuvwxyz0123456789"]
    return {t: i for i, t in enumerate(dict.fromkeys(tokens + BERT_WORDS))}


def bert_encode(vocab, text):
    """As BertTokenizer with do_lower_case: lower case, accents stripped, punctuation and CJK
    characters split off, WordPiece longest match first; [CLS] … [SEP]."""
    text = "".join(f" {c} " if 0x4E00 <= ord(c) <= 0x9FFF else c for c in text)
    words = []
    for w in text.lower().split():
        w = "".join(c for c in unicodedata.normalize("NFD", w) if unicodedata.category(c) != "Mn")
        words += [p for p in re.split(r"([!-/:-@\[-`{-~])", w) if p]
    ids = [vocab["[CLS]"]]
    for w in words:
        pieces, start = [], 0
        while start < len(w):
            end = len(w)
            while end > start and ("##" if start else "") + w[start:end] not in vocab:
                end -= 1
            if end == start:
                pieces = [vocab["[UNK]"]]
                break
            pieces.append(vocab[("##" if start else "") + w[start:end]])
            start = end
        ids += pieces
    return ids + [vocab["[SEP]"]]


CHINESE = """我们可以看到模型的注意力。
注意力图显示每个词看向哪些词。
这个模型很小，但是它的权重是随机的。
今天天气很好，我们去公园散步。
机器翻译把中文句子翻译成英文句子。
每一层有几个注意力头，每个头有自己的查询和键。
编码器读取源语言，解码器生成目标语言。
我喜欢学习新的东西，也喜欢看书。
这是一个测试，用来检查程序是否正确。
小猫坐在垫子上看着我们。""".split("\n")

ENGLISH = """We can see the attention of the model.
The attention map shows which words each word looks at.
This model is small, but its weights are random.
The weather is nice today, we go for a walk in the park.
Machine translation turns Chinese sentences into English sentences.
Each layer has a few attention heads, each head has its own queries and keys.
The encoder reads the source language and the decoder writes the target language.
The cat sat on the mat and looked at us.""".split("\n")


def train_spm(lines, vocab_size):
    """A unigram SentencePiece model (nmt_nfkc, the default) -> its serialized bytes."""
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=model, vocab_size=vocab_size,
                                   model_type="unigram", character_coverage=1.0, num_threads=1,
                                   hard_vocab_limit=False, minloglevel=2)
    return model.getvalue()


def marian_tokenizers(license_lines):
    """-> (source.spm bytes, target.spm bytes, vocab {piece: id}) as MarianTokenizer's vocab.json:
    </s> 0, <unk> 1, the pieces of both models, <pad> last."""
    source = train_spm(CHINESE * 3 + ENGLISH + license_lines, 320)
    target = train_spm(ENGLISH * 3 + license_lines, 220)
    pieces = ["</s>", "<unk>"]
    for model in (source, target):
        sp = spm.SentencePieceProcessor(model_proto=model)
        pieces += [sp.id_to_piece(i) for i in range(sp.get_piece_size()) if not sp.is_control(i) and not sp.is_unknown(i)]
    vocab = {p: i for i, p in enumerate(dict.fromkeys(pieces + ["<pad>"]))}
    return source, target, vocab


def spm_encode(model, vocab, text):  # pieces -> vocab.json's ids (unknown pieces: <unk>)
    sp = spm.SentencePieceProcessor(model_proto=model)
    return [vocab.get(p, vocab["<unk>"]) for p in sp.encode(text, out_type=str)]

# [SECTION] Random weights --------------------------------------------------------------------------


class RandomWeights:
    """Tensors drawn in a fixed order from one seeded generator, rounded to the case's dtype.
    `tensors` holds what the file gets (name, dtype, shape, raw); `W` the stored values in
    float64 by their names without prefix, for the reference."""

    def __init__(self, seed, dtype, prefix):
        self.rng, self.dtype, self.prefix = np.random.default_rng(seed), dtype, prefix
        self.tensors, self.W = [], {}

    def add(self, name, values, file_name=None, dtype=None):
        raw, value = stored(values, dtype or self.dtype)
        self.tensors.append((file_name or self.prefix + name, dtype or self.dtype, np.shape(values), raw))
        self.W[name] = value
        return value

    def normal(self, name, shape, std, mean=0.0):
        return self.add(name, mean + std * self.rng.standard_normal(shape))

    def linear(self, name, n_in, n_out, conv1d=False):  # nn.Linear [out, in]; GPT-2's Conv1D [in, out]
        self.normal(name + ".weight", (n_in, n_out) if conv1d else (n_out, n_in), 1.2 / math.sqrt(n_in))
        self.normal(name + ".bias", (n_out,), 0.1)

    def layer_norm(self, name, d):
        self.normal(name + ".weight", (d,), 0.1, mean=1.0)
        self.normal(name + ".bias", (d,), 0.1)

    def raw(self, file_name, dtype, shape, data):  # a buffer the runtime must ignore
        self.tensors.append((file_name, dtype, shape, data))

# [SECTION] The families: config, weights, the tensors' names ---------------------------------------


def gpt2_config(case, V):
    d = case["d"]
    return {"_name_or_path": case.get("name_or_path"), "activation_function": case.get("activation", "gelu_new"),
            "architectures": ["GPT2LMHeadModel" if case["prefix"] else "GPT2Model"], "attn_pdrop": 0.1,
            "bos_token_id": V - 1, "embd_pdrop": 0.1, "eos_token_id": V - 1, "initializer_range": 0.02,
            "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": case["P"], "n_embd": d,
            "n_head": case["H"], "n_inner": case.get("n_inner"), "n_layer": case["L"], "n_positions": case["P"],
            "reorder_and_upcast_attn": False, "resid_pdrop": 0.1, "scale_attn_by_inverse_layer_idx": False,
            "scale_attn_weights": True, "torch_dtype": str(TORCH_DTYPES[case["dtype"]])[6:],
            "transformers_version": "4.36.2", "use_cache": True, "vocab_size": V}


def gpt2_weights(case, cfg):
    d, P, V = cfg["n_embd"], cfg["n_positions"], cfg["vocab_size"]
    d_ff = cfg["n_inner"] or 4 * d
    w = RandomWeights(case["seed"], case["dtype"], "transformer." if case["prefix"] else "")
    w.normal("wte.weight", (V, d), 0.5)
    w.normal("wpe.weight", (P, d), 0.2)
    causal = np.tril(np.ones((1, 1, P, P)))
    for i in range(cfg["n_layer"]):
        p = f"h.{i}."
        w.layer_norm(p + "ln_1", d)
        if case.get("buffers"):  # attn.bias (the causal mask) and attn.masked_bias, as older versions saved
            kind = case["buffers"]
            if kind in ("U8", "BOOL"):
                w.raw(w.prefix + p + "attn.bias", kind, causal.shape, causal.astype(np.uint8).tobytes())
            else:
                w.add(p + "attn.bias", causal, file_name=w.prefix + p + "attn.bias", dtype=kind)
            w.add(p + "attn.masked_bias", np.float32(-1e4), file_name=w.prefix + p + "attn.masked_bias")
        w.linear(p + "attn.c_attn", d, 3 * d, conv1d=True)
        w.linear(p + "attn.c_proj", d, d, conv1d=True)
        w.layer_norm(p + "ln_2", d)
        w.linear(p + "mlp.c_fc", d, d_ff, conv1d=True)
        w.linear(p + "mlp.c_proj", d_ff, d, conv1d=True)
    w.layer_norm("ln_f", d)
    return w


def bert_config(case, V):
    return {"_name_or_path": case.get("name_or_path"),
            "architectures": ["BertForMaskedLM" if case["prefix"] else "BertModel"],
            "attention_probs_dropout_prob": 0.1, "classifier_dropout": None, "gradient_checkpointing": False,
            "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": case["d"], "initializer_range": 0.02,
            "intermediate_size": case["d_ff"], "layer_norm_eps": 1e-12, "max_position_embeddings": case["P"],
            "model_type": "bert", "num_attention_heads": case["H"], "num_hidden_layers": case["L"],
            "pad_token_id": 0, "position_embedding_type": "absolute",
            "torch_dtype": str(TORCH_DTYPES[case["dtype"]])[6:], "transformers_version": "4.36.2",
            "type_vocab_size": 2, "use_cache": True, "vocab_size": V}


def bert_weights(case, cfg):
    d, P, V, d_ff = cfg["hidden_size"], cfg["max_position_embeddings"], cfg["vocab_size"], cfg["intermediate_size"]
    w = RandomWeights(case["seed"], case["dtype"], "bert." if case["prefix"] else "")
    words = 0.5 * w.rng.standard_normal((V, d))
    words[cfg["pad_token_id"]] = 0  # as Hugging Face initializes the padding row
    w.add("embeddings.word_embeddings.weight", words)
    w.normal("embeddings.position_embeddings.weight", (P, d), 0.3)
    w.normal("embeddings.token_type_embeddings.weight", (2, d), 0.3)
    w.layer_norm("embeddings.LayerNorm", d)
    if case.get("position_ids"):  # the buffer some versions saved: I64 [1, P]
        w.raw(w.prefix + "embeddings.position_ids", "I64", (1, P), np.arange(P, dtype="<i8").reshape(1, P).tobytes())
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        for name in ("query", "key", "value"):
            w.linear(p + "attention.self." + name, d, d)
        w.linear(p + "attention.output.dense", d, d)
        w.layer_norm(p + "attention.output.LayerNorm", d)
        w.linear(p + "intermediate.dense", d, d_ff)
        w.linear(p + "output.dense", d_ff, d)
        w.layer_norm(p + "output.LayerNorm", d)
    w.linear("pooler.dense", d, d)
    if case["prefix"]:  # BertForMaskedLM's head: the runtime ignores it
        for name, shape in (("cls.predictions.bias", (V,)), ("cls.predictions.transform.dense.weight", (d, d)),
                            ("cls.predictions.transform.dense.bias", (d,)),
                            ("cls.predictions.transform.LayerNorm.weight", (d,)),
                            ("cls.predictions.transform.LayerNorm.bias", (d,))):
            w.add(name, 0.1 * w.rng.standard_normal(shape), file_name=name)
    return w


def marian_config(case, V):
    pad = V - 1
    return {"_name_or_path": case.get("name_or_path"), "activation_dropout": 0.0, "activation_function": "swish",
            "add_bias_logits": False, "add_final_layer_norm": False,
            "architectures": ["MarianMTModel" if case["prefix"] else "MarianModel"], "attention_dropout": 0.0,
            "bad_words_ids": [[pad]], "bos_token_id": 0, "classif_dropout": 0.0, "classifier_dropout": 0.0,
            "d_model": case["d"], "decoder_attention_heads": case["dec_H"], "decoder_ffn_dim": case["dec_ff"],
            "decoder_layerdrop": 0.0, "decoder_layers": case["dec_L"], "decoder_start_token_id": pad,
            "decoder_vocab_size": V, "dropout": 0.1, "encoder_attention_heads": case["enc_H"],
            "encoder_ffn_dim": case["enc_ff"], "encoder_layerdrop": 0.0, "encoder_layers": case["enc_L"],
            "eos_token_id": 0, "forced_eos_token_id": 0, "init_std": 0.02, "is_encoder_decoder": True,
            "max_length": 512, "max_position_embeddings": case["P"], "model_type": "marian",
            "normalize_before": False, "normalize_embedding": False, "num_hidden_layers": case["enc_L"],
            "pad_token_id": pad, "scale_embedding": True, "share_encoder_decoder_embeddings": True,
            "static_position_embeddings": True, "torch_dtype": str(TORCH_DTYPES[case["dtype"]])[6:],
            "transformers_version": "4.36.2", "use_cache": True, "vocab_size": V}


def marian_weights(case, cfg, seed):
    d, P, V = cfg["d_model"], cfg["max_position_embeddings"], cfg["vocab_size"]
    prefix = "model." if case["prefix"] else ""
    w = RandomWeights(seed, case["dtype"], prefix)
    shared = w.rng.standard_normal((V, d)) / math.sqrt(d)  # × √d_model when used
    shared[cfg["pad_token_id"]] = 0  # as Hugging Face initializes the padding row
    w.add("shared.weight", shared)
    for side in ("encoder", "decoder"):
        w.add(side + ".embed_tokens.weight", shared, file_name=prefix + side + ".embed_tokens.weight")
        if case["positions"]:
            w.add(side + ".embed_positions.weight", reference.sinusoidal_positions(P, d).numpy())
        heads, n_layers, d_ff = (cfg[side + k] for k in ("_attention_heads", "_layers", "_ffn_dim"))
        for i in range(n_layers):
            p = f"{side}.layers.{i}."
            blocks = ("self_attn", "encoder_attn") if side == "decoder" else ("self_attn",)
            for block in blocks:
                for proj in ("k_proj", "v_proj", "q_proj", "out_proj"):
                    w.linear(f"{p}{block}.{proj}", d, d)
                w.layer_norm(f"{p}{block}_layer_norm", d)
            w.linear(p + "fc1", d, d_ff)
            w.linear(p + "fc2", d_ff, d)
            w.layer_norm(p + "final_layer_norm", d)
    if case["prefix"]:  # MarianMTModel: the tied head and the logits' bias
        w.add("lm_head.weight", shared, file_name="lm_head.weight")
        bias = 0.1 * w.rng.standard_normal((1, V))
        bias[0, cfg["eos_token_id"]] += case.get("eos_bias", 0.0)  # makes greedy decoding stop at </s>
        w.add("final_logits_bias", bias, file_name="final_logits_bias")
    return w

def llama_config(case, V):
    """config.json of a Llama-like family: the case's sizes, its family's own fields (case["extra"])."""
    t = case["type"]
    gemma = t in ("gemma2", "gemma3_text")
    cfg = {"_name_or_path": case.get("name_or_path"), "model_type": t, "vocab_size": V, "hidden_size": case["d"],
           "num_hidden_layers": case["L"], "num_attention_heads": case["H"], "num_key_value_heads": case["KV"],
           "intermediate_size": case["d_ff"], "max_position_embeddings": case["P"], "rms_norm_eps": 1e-6,
           "rope_theta": case.get("theta", 10000.0), "tie_word_embeddings": case.get("tied", gemma),
           "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": str(TORCH_DTYPES[case["dtype"]])[6:],
           "transformers_version": "4.56.0", "use_cache": True,
           ("hidden_activation" if gemma else "hidden_act"): "gelu_pytorch_tanh" if gemma else "silu"}
    if "head_dim" in case:
        cfg["head_dim"] = case["head_dim"]
    cfg.update(case.get("extra", {}))
    return cfg


def llama_weights(case, cfg):
    t = cfg["model_type"]
    gemma = t in ("gemma2", "gemma3_text")
    d, V, H, KV, d_ff = cfg["hidden_size"], cfg["vocab_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["intermediate_size"]
    hd = cfg.get("head_dim") or d // H
    w = RandomWeights(case["seed"], case["dtype"], "model." if case["prefix"] else "")
    bias = case.get("bias", ())  # which projections carry a bias: "qkv", "o", "mlp"

    def rms(name, n):  # Gemma's weights are offsets from 1
        w.normal(name + ".weight", (n,), 0.1, mean=0.0 if gemma else 1.0)

    def linear(name, n_in, n_out, with_bias):
        w.normal(name + ".weight", (n_out, n_in), 1.2 / math.sqrt(n_in))
        if with_bias:
            w.normal(name + ".bias", (n_out,), 0.1)

    w.normal("embed_tokens.weight", (V, d), 0.5 / (math.sqrt(d) if gemma else 1.0))
    for i in range(cfg["num_hidden_layers"]):
        p = f"layers.{i}."
        rms(p + "input_layernorm", d)
        if t == "phi3":
            linear(p + "self_attn.qkv_proj", d, (H + 2 * KV) * hd, False)
        else:
            linear(p + "self_attn.q_proj", d, H * hd, "qkv" in bias)
            linear(p + "self_attn.k_proj", d, KV * hd, "qkv" in bias)
            linear(p + "self_attn.v_proj", d, KV * hd, "qkv" in bias)
        linear(p + "self_attn.o_proj", H * hd, d, "o" in bias)
        if t in ("qwen3", "gemma3_text", "qwen3_moe"):
            rms(p + "self_attn.q_norm", hd)
            rms(p + "self_attn.k_norm", hd)
        if t == "gpt_oss":
            w.normal(p + "self_attn.sinks", (H,), 1.0)
        rms(p + "post_attention_layernorm", d)
        if gemma:
            rms(p + "pre_feedforward_layernorm", d)
            rms(p + "post_feedforward_layernorm", d)
        E = cfg.get("num_local_experts", 0)
        if t == "gpt_oss":  # the router with a bias, the experts as banks [E, in, out]
            linear(p + "mlp.router", d, E, True)
            w.normal(p + "mlp.experts.gate_up_proj", (E, d, 2 * d_ff), 1.2 / math.sqrt(d))
            w.normal(p + "mlp.experts.gate_up_proj_bias", (E, 2 * d_ff), 0.1)
            w.normal(p + "mlp.experts.down_proj", (E, d_ff, d), 1.2 / math.sqrt(d_ff))
            w.normal(p + "mlp.experts.down_proj_bias", (E, d), 0.1)
        elif reference.moe_layer(cfg, i):
            ff = cfg["moe_intermediate_size"]
            linear(p + "mlp.gate", d, E, False)
            for e in range(E):
                linear(p + f"mlp.experts.{e}.gate_proj", d, ff, False)
                linear(p + f"mlp.experts.{e}.up_proj", d, ff, False)
                linear(p + f"mlp.experts.{e}.down_proj", ff, d, False)
        elif t == "phi3":
            linear(p + "mlp.gate_up_proj", d, 2 * d_ff, False)
            linear(p + "mlp.down_proj", d_ff, d, False)
        else:
            linear(p + "mlp.gate_proj", d, d_ff, "mlp" in bias)
            linear(p + "mlp.up_proj", d, d_ff, "mlp" in bias)
            linear(p + "mlp.down_proj", d_ff, d, "mlp" in bias)
    rms("norm", d)
    if case["prefix"] and not cfg["tie_word_embeddings"]:
        w.normal("lm_head.weight", (V, d), 0.5 / math.sqrt(d))
        w.tensors[-1] = ("lm_head.weight",) + w.tensors[-1][1:]  # never under the prefix
    return w


# [SECTION] Cases ----------------------------------------------------------------------------------

GPT2_CASES = [
    dict(case="gpt2_l2_h2_d16_f32", L=2, H=2, d=16, P=32, dtype="F32", prefix=True, buffers="F32", seed=1,
         name_or_path="attnviz/tiny-gpt2", text="The licenses for most software are designed to take away your freedom."),
    dict(case="gpt2_l3_h4_d32_f16", L=3, H=4, d=32, P=64, dtype="F16", prefix=False, buffers="BOOL", seed=2, T=20),
    dict(case="gpt2_l2_h3_d24_bf16_gelu", L=2, H=3, d=24, P=32, dtype="BF16", prefix=True, seed=3, n_inner=40,
         activation="gelu", text="You can apply it to your programs, too."),
    dict(case="gpt2_l2_h2_d16_t1", L=2, H=2, d=16, P=16, dtype="F32", prefix=False, buffers="U8", seed=4, T=1),
    dict(case="gpt2_l1_h1_d8_f16_prefix", L=1, H=1, d=8, P=16, dtype="F16", prefix=True, seed=5, T=7),
]
BERT_CASES = [
    dict(case="bert_l2_h2_d16_f32", L=2, H=2, d=16, d_ff=64, P=32, dtype="F32", prefix=False, position_ids=True,
         seed=11, name_or_path="attnviz/tiny-bert", text="The cat sat on the mat, looking at 我们!"),
    dict(case="bert_l3_h4_d32_f16_mlm", L=3, H=4, d=32, d_ff=48, P=64, dtype="F16", prefix=True, seed=12,
         text="Visualizing attention: each head's tokens, layer by layer."),
    dict(case="bert_l2_h3_d24_bf16_mlm", L=2, H=3, d=24, d_ff=96, P=32, dtype="BF16", prefix=True, seed=13, T=9),
]
MARIAN_CASES = [
    dict(case="marian_e2_d1_h2_d16_f32", enc_L=2, dec_L=1, enc_H=2, dec_H=2, d=16, enc_ff=32, dec_ff=32, P=64,
         dtype="F32", prefix=True, positions=True, seed=21, name_or_path="attnviz/tiny-opus-mt-zh-en",
         source_text="我们可以看到模型的注意力。", target_text="We can see the attention"),
    dict(case="marian_e1_d2_h4h2_d32_bf16", enc_L=1, dec_L=2, enc_H=4, dec_H=2, d=32, enc_ff=64, dec_ff=48, P=32,
         dtype="BF16", prefix=False, positions=False, seed=22,
         source_text="The cat sat on the mat.", target_text="The cat"),
    dict(case="marian_e3_d2_h2h4_d24_f32_nopos", enc_L=3, dec_L=2, enc_H=2, dec_H=4, d=24, enc_ff=40, dec_ff=40,
         P=48, dtype="F32", prefix=True, positions=False, seed=36, eos_bias=2.8,
         source_text="小猫坐在垫子上。 Attention!", target_text="The small cat sits on the mat"),
]
# The Llama-like: GQA ratios 1, several and H; every rope_scaling type; windows shorter than the
# text; soft caps that bite; partial rotary; F32, F16, BF16; one file and shards; tied and untied.
LLAMA_CASES = [
    dict(case="llama_l2_h4kv2_d32_f32", type="llama", L=2, H=4, KV=2, d=32, d_ff=48, P=64, T=14, dtype="F32",
         prefix=True, tied=True, seed=41, name_or_path="attnviz/tiny-llama"),
    dict(case="llama_l2_h4kv4_d32_bf16_linear_bias_shards", type="llama", L=2, H=4, KV=4, d=32, d_ff=40, P=64, T=12,
         dtype="BF16", prefix=True, tied=False, seed=42, shards=2, bias=("qkv", "o", "mlp"),
         extra={"attention_bias": True, "mlp_bias": True, "rope_scaling": {"rope_type": "linear", "factor": 2.0}}),
    dict(case="llama_l2_h4kv1_d24_f16_llama3_headdim", type="llama", L=2, H=4, KV=1, d=24, head_dim=8, d_ff=40, P=64,
         T=10, dtype="F16", prefix=True, tied=False, seed=43, theta=500000.0,
         extra={"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                 "original_max_position_embeddings": 16}}),
    dict(case="llama_l1_h2kv1_d16_f32_dynamic", type="llama", L=1, H=2, KV=1, d=16, d_ff=24, P=16, T=9, dtype="F32",
         prefix=False, tied=True, seed=44, extra={"rope_scaling": {"type": "dynamic", "factor": 2.0}}),
    dict(case="llama_l2_h4kv2_d32_f32_yarn", type="llama", L=2, H=4, KV=2, d=32, d_ff=48, P=64, T=12, dtype="F32",
         prefix=True, tied=True, seed=45,
         extra={"rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16}}),
    dict(case="mistral_l2_h4kv2_d32_f32_window", type="mistral", L=2, H=4, KV=2, d=32, d_ff=48, P=64, T=14,
         dtype="F32", prefix=True, tied=False, seed=46, extra={"sliding_window": 4}),
    dict(case="qwen2_l2_h4kv2_d32_bf16_window", type="qwen2", L=2, H=4, KV=2, d=32, d_ff=48, P=64, T=12,
         dtype="BF16", prefix=True, tied=True, seed=47, bias=("qkv",), theta=1000000.0,
         extra={"use_sliding_window": True, "sliding_window": 3, "max_window_layers": 1}),
    dict(case="qwen3_l2_h4kv2_d24_f32_qknorm", type="qwen3", L=2, H=4, KV=2, d=24, head_dim=16, d_ff=40, P=64,
         T=12, dtype="F32", prefix=True, tied=True, seed=48, theta=1000000.0,
         extra={"attention_bias": False, "use_sliding_window": True, "sliding_window": 5,
                "layer_types": ["sliding_attention", "full_attention"]}),
    dict(case="gemma2_l3_h4kv2_d32_f32_softcap", type="gemma2", L=3, H=4, KV=2, d=32, head_dim=16, d_ff=48, P=64,
         T=12, dtype="F32", prefix=True, seed=49,
         extra={"query_pre_attn_scalar": 12, "attn_logit_softcapping": 1.5, "final_logit_softcapping": 2.0,
                "sliding_window": 4}),
    dict(case="gemma3_l3_h2kv1_d32_bf16_local_rope", type="gemma3_text", L=3, H=2, KV=1, d=32, head_dim=16, d_ff=48,
         P=64, T=12, dtype="BF16", prefix=True, seed=50, theta=1000000.0,
         extra={"query_pre_attn_scalar": 16, "sliding_window": 5, "sliding_window_pattern": 2,
                "rope_local_base_freq": 100.0, "rope_scaling": {"rope_type": "linear", "factor": 2.0},
                "final_logit_softcapping": None, "attn_logit_softcapping": None}),
    dict(case="gpt_oss_l2_h4kv2_d32_f32_sinks_experts", type="gpt_oss", L=2, H=4, KV=2, d=32, head_dim=8, d_ff=24, P=64,
         T=12, dtype="F32", prefix=True, tied=False, seed=52, bias=("qkv", "o"),
         extra={"attention_bias": True, "num_local_experts": 4, "num_experts_per_tok": 2, "sliding_window": 4,
                "layer_types": ["sliding_attention", "full_attention"],
                "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16, "truncate": False}}),
    dict(case="qwen3_moe_l3_h4kv2_d24_bf16_experts", type="qwen3_moe", L=3, H=4, KV=2, d=24, head_dim=8, d_ff=40, P=64,
         T=12, dtype="BF16", prefix=True, tied=True, seed=53,
         extra={"num_local_experts": 5, "num_experts_per_tok": 2, "moe_intermediate_size": 16, "norm_topk_prob": True,
                "decoder_sparse_step": 1, "mlp_only_layers": [1]}),
    dict(case="phi3_l2_h4kv2_d32_f16_longrope_partial", type="phi3", L=2, H=4, KV=2, d=32, d_ff=40, P=64, T=20,
         dtype="F16", prefix=True, tied=False, seed=51,
         extra={"partial_rotary_factor": 0.5, "original_max_position_embeddings": 16, "sliding_window": 8,
                "rope_scaling": {"type": "longrope", "short_factor": [1.0, 1.5], "long_factor": [2.0, 3.5]}}),
]
MAX_NEW = 6  # marian's greedy decoding
MIN_GAP = 1e-3  # a greedy step's top-2 logit gap at least this, so float32 picks the same token


def as_lists(run):
    """The reference's tensors -> nested lists of Python floats (JSON writes their repr)."""
    if isinstance(run, dict):
        return {k: as_lists(v) for k, v in run.items()}
    return run.tolist()


def random_ids(seed, T, V, exclude):
    rng = np.random.default_rng(seed)
    ids = []
    while len(ids) < T:
        i = int(rng.integers(0, V))
        if i not in exclude:
            ids.append(i)
    return ids


def case_folder(out, case, config, weights):
    folder = os.path.join(out, case["case"])
    os.makedirs(folder, exist_ok=True)
    if config["_name_or_path"] is None:
        del config["_name_or_path"]
    write_json(os.path.join(folder, "config.json"), config, indent=2, sort_keys=True)
    write_safetensors(os.path.join(folder, "model.safetensors"), weights.tensors)
    return folder


def expected_json(folder, case, model_type, inputs, run):
    """{"case", "model_type", "dtype", [text], ids (or encoder_ids, decoder_ids, …), the maps,
    "hidden", ["logits"], "q": {stack: …}, "x": {stack: …}}"""
    out = {"case": case["case"], "model_type": model_type, "dtype": case["dtype"]}
    out.update(inputs)
    out.update(as_lists(run))
    write_json(os.path.join(folder, "expected.json"), out, separators=(",", ":"))


def make_gpt2(out, license_text):
    vocab, merges = gpt2_tokenizer(license_text, 220)
    V = len(vocab)
    for case in GPT2_CASES:
        cfg = gpt2_config(case, V)
        weights = gpt2_weights(case, cfg)
        folder = case_folder(out, case, dict(cfg), weights)
        write_gpt2_tokenizer(folder, vocab, merges)
        if "text" in case:
            inputs = {"text": case["text"], "ids": gpt2_encode(vocab, merges, case["text"])}
        else:
            inputs = {"ids": random_ids(case["seed"], case["T"], V, exclude={V - 1})}
        expected_json(folder, case, "gpt2", inputs, reference.gpt2_forward(weights.W, cfg, inputs["ids"]))
        yield case["case"]


def make_bert(out):
    vocab = bert_vocab()
    V = len(vocab)
    for case in BERT_CASES:
        cfg = bert_config(case, V)
        weights = bert_weights(case, cfg)
        folder = case_folder(out, case, dict(cfg), weights)
        with open(os.path.join(folder, "vocab.txt"), "w", encoding="utf-8") as f:
            f.write("".join(t + "\n" for t in vocab))
        write_json(os.path.join(folder, "tokenizer_config.json"),
                   {"do_lower_case": True, "model_max_length": case["P"], "tokenizer_class": "BertTokenizer"}, indent=2)
        if "text" in case:
            inputs = {"text": case["text"], "ids": bert_encode(vocab, case["text"])}
        else:  # [CLS] random tokens [SEP]
            inputs = {"ids": [2] + random_ids(case["seed"], case["T"] - 2, V, exclude={0, 1, 2, 3, 4}) + [3]}
        expected_json(folder, case, "bert", inputs, reference.bert_forward(weights.W, cfg, inputs["ids"]))
        yield case["case"]


def make_marian(out, license_lines):
    source, target, vocab = marian_tokenizers(license_lines)
    V = len(vocab)
    for case in MARIAN_CASES:
        cfg = marian_config(case, V)
        encoder_ids = spm_encode(source, vocab, case["source_text"]) + [cfg["eos_token_id"]]
        decoder_ids = [cfg["decoder_start_token_id"]] + spm_encode(target, vocab, case["target_text"])
        for seed in range(case["seed"], case["seed"] + 100):  # a seed whose greedy path has no near-tie
            weights = marian_weights(case, cfg, seed)
            generated, gap = reference.marian_greedy(weights.W, cfg, encoder_ids, MAX_NEW)
            if gap > MIN_GAP and cfg["pad_token_id"] not in generated[1:]:
                break
        else:
            raise RuntimeError(f"{case['case']}: no seed without a near-tie in 100")
        folder = case_folder(out, case, dict(cfg), weights)
        for name, data in (("source.spm", source), ("target.spm", target)):
            with open(os.path.join(folder, name), "wb") as f:
                f.write(data)
        write_json(os.path.join(folder, "vocab.json"), vocab, indent=2)
        write_json(os.path.join(folder, "tokenizer_config.json"),
                   {"model_max_length": 512, "pad_token": "<pad>", "eos_token": "</s>", "unk_token": "<unk>",
                    "separate_vocabs": False, "source_lang": "zh", "target_lang": "en",
                    "tokenizer_class": "MarianTokenizer"}, indent=2)
        inputs = {"source_text": case["source_text"], "target_text": case["target_text"], "seed": seed,
                  "encoder_ids": encoder_ids, "decoder_ids": decoder_ids,
                  "max_new": MAX_NEW, "generated_ids": generated}
        expected_json(folder, case, "marian", inputs,
                      reference.marian_forward(weights.W, cfg, encoder_ids, decoder_ids))
        yield case["case"]


def write_shards(folder, tensors, n):
    """model-0000k-of-0000n.safetensors and model.safetensors.index.json, in place of one file."""
    os.remove(os.path.join(folder, "model.safetensors"))
    size = (len(tensors) + n - 1) // n
    weight_map = {}
    for k in range(n):
        name = f"model-{k + 1:05d}-of-{n:05d}.safetensors"
        part = tensors[k * size:(k + 1) * size]
        write_safetensors(os.path.join(folder, name), part)
        weight_map.update({t[0]: name for t in part})
    write_json(os.path.join(folder, "model.safetensors.index.json"),
               {"metadata": {"total_size": sum(len(t[3]) for t in tensors)}, "weight_map": weight_map}, indent=2)


def write_bpe_tokenizer_json(folder, vocab, merges, bos):
    """The byte-level BPE as a tokenizer.json (the Llama-like families ship no other tokenizer file)."""
    write_json(os.path.join(folder, "tokenizer.json"),
               {"version": "1.0", "added_tokens": [], "normalizer": None,
                "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
                "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": bos, "type_id": 0}},
                                                                           {"Sequence": {"id": "A", "type_id": 0}}],
                                   "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
                                   "special_tokens": {bos: {"id": bos, "ids": [1], "tokens": [bos]}}},
                "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
                "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                          "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                          "vocab": vocab, "merges": [a + " " + b for a, b in merges]}}, indent=1)


def make_llama_like(out, license_text):
    vocab, merges = gpt2_tokenizer(license_text, 220)
    V = len(vocab)
    bos = next(t for t, i in vocab.items() if i == 1)
    for case in LLAMA_CASES:
        cfg = llama_config(case, V)
        weights = llama_weights(case, cfg)
        folder = case_folder(out, case, dict(cfg), weights)
        if case.get("shards"):
            write_shards(folder, weights.tensors, case["shards"])
        write_bpe_tokenizer_json(folder, vocab, merges, bos)
        inputs = {"ids": [1] + random_ids(case["seed"], case["T"] - 1, V, exclude={0, 1, 2})}
        expected_json(folder, case, case["type"], inputs, reference.llama_like_forward(weights.W, cfg, inputs["ids"]))
        yield case["case"]


def main(out):
    os.makedirs(out, exist_ok=True)
    with open("/usr/share/common-licenses/GPL-3", encoding="utf-8") as f:
        license_text = f.read()
    license_lines = [line.strip() for line in license_text.split("\n") if len(line.strip()) > 20][:200]
    cases = list(make_gpt2(out, license_text)) + list(make_bert(out)) + list(make_marian(out, license_lines)) \
        + list(make_llama_like(out, license_text))
    write_json(os.path.join(out, "cases.json"), cases, indent=2)  # written last: CMake's stamp


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
