#!/usr/bin/python3
"""GGUF files opened by `attnviz run FILE.gguf` (SPEC.md §5), against two oracles.

Each case writes a tiny random-weight model of one architecture as llama.cpp's converter would
(tests/model/gguf_files.py: its tensor names, metadata keys, Q and K rows paired for llama,
Gemma's norms stored as 1 + w, llama 3's scaling as rope_freqs), its weights in a mix of ggml's
block formats, and a tokenizer in the metadata (SentencePiece BPE with byte fallback, or byte-
level BPE with a named pre-tokenizer). Then:
  1. attnviz's maps, hidden states and logits equal the float64 reference forward
     (tests/model/reference.py, written from transformers' modeling files) on the weights
     dequantized as ggml does: the figure is the model's;
  2. llama.cpp itself (npm node-llama-cpp's prebuilt binary, tests/model/llama_cpp_oracle.mjs)
     on the same file: the same logits (F32 weights: to 1e-5, GPT-2's 1e-3: llama.cpp's GELU is
     a table of fp16 values; block formats: within what its rounding of the activations to 8
     bits before each product explains, printed per case) and
     the same token ids for the tokenizer test's texts, Chinese and code; and npm's
     @huggingface/gguf reads the same architecture and tensor types as attnviz;
  3. bad files exit 2 with one line naming the file and the key or tensor.
Step 2 needs NODE_MODULES (tests/model/llama_cpp/node_modules: scripts/setup.sh installs it);
without the argument it is skipped, and says so.

usage: /usr/bin/python3 tests/model/test_gguf.py ATTNVIZ [NODE_MODULES]
For the page's test (tests/browser/model.mjs), the same files and reference:
       /usr/bin/python3 tests/model/test_gguf.py --write DIR CASE...   (DIR/CASE.gguf)
       /usr/bin/python3 tests/model/test_gguf.py --reference CASE IDS  ({"attention": [L][H][T][T]} on stdout)
"""
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import sentencepiece as spm
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gguf_files as G  # noqa: E402
import make_models  # noqa: E402
import reference  # noqa: E402

torch.set_num_threads(1)
FAILURES = []


def fail(message):
    FAILURES.append(message)
    print("FAIL " + message)


# [SECTION] Tokenizers ---------------------------------------------------------------------------

def license_text():
    with open("/usr/share/common-licenses/GPL-3", encoding="utf-8") as f:
        return f.read()


CHAT_TOKENS = ["<|end|>", "<|endoftext|>", "<|user|>", "<|assistant|>", "<|system|>"]  # phi3's (llama.cpp looks them up)


def spm_tokenizer(lines):
    """A SentencePiece BPE with byte fallback (Llama 2's kind) as llama.cpp's converter writes it."""
    import io
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=model, vocab_size=800, model_type="bpe",
                                   byte_fallback=True, character_coverage=1.0, num_threads=1, minloglevel=2,
                                   unk_id=0, bos_id=1, eos_id=2, user_defined_symbols=CHAT_TOKENS)
    sp = spm.SentencePieceProcessor(model_proto=model.getvalue())
    n = sp.get_piece_size()
    types = [2 if sp.is_unknown(i) else 3 if sp.is_control(i) else 6 if sp.is_byte(i) else
             4 if sp.id_to_piece(i) in CHAT_TOKENS else 1 for i in range(n)]
    meta = [("tokenizer.ggml.model", G.STRING, "llama"),
            ("tokenizer.ggml.tokens", G.ARRAY, (G.STRING, [sp.id_to_piece(i) for i in range(n)])),
            ("tokenizer.ggml.scores", G.ARRAY, (G.F32, [float(sp.get_score(i)) for i in range(n)])),
            ("tokenizer.ggml.token_type", G.ARRAY, (G.I32, types)),
            ("tokenizer.ggml.bos_token_id", G.U32, 1), ("tokenizer.ggml.eos_token_id", G.U32, 2),
            ("tokenizer.ggml.unknown_token_id", G.U32, 0), ("tokenizer.ggml.add_bos_token", G.BOOL, True),
            ("tokenizer.ggml.add_eos_token", G.BOOL, False)]
    return n, meta, 1


def bpe_tokenizer(text, pre, bos_text="<|begin_of_text|>", add_bos=True):
    """Byte-level BPE (GPT-2's alphabet, merges learned here), <|begin_of_text|> as BOS (GPT-2:
    <|endoftext|>, not added)."""
    vocab, merges = make_models.gpt2_tokenizer(text, 260)
    tokens = sorted(vocab, key=vocab.get)
    tokens += [] if bos_text in vocab else [bos_text]  # GPT-2's <|endoftext|> is the vocabulary's last
    bos = tokens.index(bos_text)
    types = [3 if t.startswith("<|") else 1 for t in tokens]
    meta = [("tokenizer.ggml.model", G.STRING, "gpt2"), ("tokenizer.ggml.pre", G.STRING, pre),
            ("tokenizer.ggml.tokens", G.ARRAY, (G.STRING, tokens)),
            ("tokenizer.ggml.token_type", G.ARRAY, (G.I32, types)),
            ("tokenizer.ggml.merges", G.ARRAY, (G.STRING, [a + " " + b for a, b in merges])),
            ("tokenizer.ggml.bos_token_id", G.U32, bos), ("tokenizer.ggml.eos_token_id", G.U32, bos),
            ("tokenizer.ggml.add_bos_token", G.BOOL, add_bos)]
    return len(tokens), meta, bos


# [SECTION] Cases ----------------------------------------------------------------------------------

# Types per tensor: "default" for the 2-D weights, then by GGUF name part (ffn_down, output, token_embd).
CASES = [
    dict(case="llama_q4_k_m_llama3", arch="llama", type="llama", tok="spm", L=2,
         types={"default": "Q4_K", "ffn_down": "Q6_K", "output": "Q6_K", "attn_v": "Q6_K"},
         llama3=dict(factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, original_max_position_embeddings=16), theta=500000.0),
    dict(case="llama_f32", arch="llama", type="llama", tok="llama-bpe", L=2, types={"default": "F32", "token_embd": "F32"}),
    dict(case="qwen2_q8_0_q5", arch="qwen2", type="qwen2", tok="qwen2", L=2, bias=("qkv",),
         types={"default": "Q8_0", "attn_q": "Q5_0", "attn_k": "Q5_1", "ffn_up": "Q4_1", "token_embd": "Q8_0"}),
    dict(case="qwen3_q2_k_q3_k", arch="qwen3", type="qwen3", tok="qwen2", L=2, types={"default": "Q3_K", "ffn_gate": "Q2_K", "attn_o": "Q2_K"}),
    dict(case="gemma2_q5_k_iq4_nl", arch="gemma2", type="gemma2", tok="spm", L=2, window=4,
         types={"default": "Q5_K", "ffn_down": "IQ4_NL", "token_embd": "Q8_0"}),
    dict(case="gemma3_mxfp4_q4_0", arch="gemma3", type="gemma3_text", tok="spm", L=6, window=5, theta=1000000.0,
         types={"default": "MXFP4", "attn_q": "Q4_0", "attn_k": "BF16", "ffn_up": "F16", "token_embd": "Q4_0"}),
    dict(case="phi3_q8_0", arch="phi3", type="phi3", tok="spm", L=2, window=2047, types={"default": "Q8_0", "token_embd": "F16"}),
    # GPT-2 as GPT2Model writes it: its Conv1D weights transposed to [out, in], output.weight beside token_embd
    dict(case="gpt2_q8_0_q4_k", arch="gpt2", type="gpt2", tok="gpt2", L=2,
         types={"default": "Q8_0", "ffn_up": "Q4_K", "attn_qkv": "F16", "token_embd": "Q8_0", "output": "Q6_K", "position_embd": "F32"}),
    dict(case="gpt2_f32", arch="gpt2", type="gpt2", tok="gpt2", L=2, types={"default": "F32"}),
]
D, H, KV, HD, D_FF, P, T = 256, 4, 2, 64, 512, 64, 12
LAYER_PARTS = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
               "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output", "self_attn.qkv_proj": "attn_qkv",
               "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm", "mlp.gate_proj": "ffn_gate",
               "mlp.up_proj": "ffn_up", "mlp.gate_up_proj": "ffn_up", "mlp.down_proj": "ffn_down",
               "pre_feedforward_layernorm": "ffn_norm", "post_feedforward_layernorm": "post_ffw_norm"}


def gguf_name(case, name):
    """transformers' name (without "model.") -> llama.cpp's."""
    if name.startswith("layers."):
        _, i, rest = name.split(".", 2)
        part, suffix = rest.rsplit(".", 1)
        if part == "post_attention_layernorm":
            g = "post_attention_norm" if case["type"].startswith("gemma") else "ffn_norm"
        else:
            g = LAYER_PARTS[part]
        return f"blk.{i}.{g}.{suffix}"
    return {"embed_tokens.weight": "token_embd.weight", "norm.weight": "output_norm.weight", "lm_head.weight": "output.weight"}[name]


def type_of(case, gname, shape):
    if len(shape) == 1:
        return "F32"
    part = gname.split(".")[-2] if gname.startswith("blk.") else gname.split(".")[0]
    part = "attn_o" if part == "attn_output" else part
    return case["types"].get(part, case["types"]["default"])


def rope_freqs(theta, dim, s):  # convert_hf_to_gguf.py's LlamaModel.generate_extra_tensors
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    lo_wl, hi_wl = s["original_max_position_embeddings"] / s["low_freq_factor"], s["original_max_position_embeddings"] / s["high_freq_factor"]
    out = []
    for freq in freqs.tolist():
        wavelen = 2 * math.pi / freq
        if wavelen < hi_wl:
            out.append(1.0)
        elif wavelen > lo_wl:
            out.append(s["factor"])
        else:
            smooth = (s["original_max_position_embeddings"] / wavelen - s["low_freq_factor"]) / (s["high_freq_factor"] - s["low_freq_factor"])
            out.append(1 / ((1 - smooth) / s["factor"] + smooth))
    return np.array(out, np.float32)


GPT2_NAMES = {"wte": "token_embd", "wpe": "position_embd", "ln_f": "output_norm", "ln_1": "attn_norm", "attn.c_attn": "attn_qkv",
              "attn.c_proj": "attn_output", "ln_2": "ffn_norm", "mlp.c_fc": "ffn_up", "mlp.c_proj": "ffn_down"}


def make_gpt2_case(case, folder, tokenizers):
    """GPT2Model's file (convert_hf_to_gguf.py): GPT-2's names mapped, each Conv1D weight
    transposed to [out, in], the tied embedding written again as output.weight."""
    V, tok_meta, bos = tokenizers[case["tok"]]
    mk = dict(case=case["case"], type="gpt2", L=case["L"], H=H, d=D, P=P, T=T, dtype="F32", prefix=False,
              seed=sum(map(ord, case["case"])))
    cfg = make_models.gpt2_config(mk, V)
    cfg["n_inner"] = D_FF
    weights = make_models.gpt2_weights(mk, cfg)
    tensors, W = [], {}
    for name, value in list(weights.W.items()) + [("lm_head.weight", weights.W["wte.weight"])]:
        part, suffix = name.rsplit(".", 1)
        if name == "lm_head.weight":
            g = "output.weight"
        elif part.startswith("h."):
            _, i, rest = part.split(".", 2)
            g = f"blk.{i}.{GPT2_NAMES[rest]}.{suffix}"
        else:
            g = f"{GPT2_NAMES[part]}.{suffix}"
        x = value.to(torch.float32).numpy()
        conv1d = part.startswith("h.") and suffix == "weight" and x.ndim == 2
        stored = np.ascontiguousarray(x.T) if conv1d else x
        kind = type_of(case, g, stored.shape)
        raw = G.quantize(stored if stored.ndim == 2 else stored[None, :], kind)
        deq = G.dequantize(raw, kind, x.size).reshape(stored.shape)
        W[name] = torch.tensor(deq.T if conv1d else deq, dtype=torch.float64)
        tensors.append((g, kind, stored.shape, raw))
    meta = [("general.architecture", G.STRING, "gpt2"), ("general.name", G.STRING, case["case"]),
            ("gpt2.context_length", G.U32, P), ("gpt2.embedding_length", G.U32, D), ("gpt2.block_count", G.U32, case["L"]),
            ("gpt2.feed_forward_length", G.U32, D_FF), ("gpt2.attention.head_count", G.U32, H),
            ("gpt2.attention.layer_norm_epsilon", G.F32, cfg["layer_norm_epsilon"])]
    path = os.path.join(folder, case["case"] + ".gguf")
    G.write_gguf(path, meta + tok_meta, tensors)
    ids = [bos] + make_models.random_ids(mk["seed"], T - 1, V, exclude={bos})
    return path, cfg, W, ids, V


def make_case(case, folder, tokenizers):
    if case["type"] == "gpt2":
        return make_gpt2_case(case, folder, tokenizers)
    V, tok_meta, bos = tokenizers[case["tok"]]
    t = case["type"]
    mk = dict(case=case["case"], type=t, L=case["L"], H=H, KV=KV, d=D, head_dim=HD, d_ff=D_FF, P=P, T=T, dtype="F32",
              prefix=True, tied=t.startswith("gemma"), seed=abs(hash(case["case"])) % 1000, bias=case.get("bias", ()),
              theta=case.get("theta", 10000.0), extra={})
    if t.startswith("gemma"):
        mk["extra"] = {"query_pre_attn_scalar": HD, "sliding_window": case["window"]}
        if t == "gemma3_text":
            mk["extra"]["rope_local_base_freq"] = 10000.0
    if t == "phi3":
        mk["extra"] = {"sliding_window": case["window"]}
    if "llama3" in case:
        mk["extra"] = {"rope_scaling": dict(rope_type="llama3", **case["llama3"])}
    cfg = make_models.llama_config(mk, V)
    rng_seed = sum(map(ord, case["case"]))
    mk["seed"] = rng_seed
    weights = make_models.llama_weights(mk, cfg)
    gemma = t.startswith("gemma")
    tensors, W = [], {}
    for name, value in weights.W.items():
        g = gguf_name(case, name)
        x = value.to(torch.float32).numpy()
        if gemma and name.endswith("norm.weight"):
            x = (np.float32(1) + x).astype(np.float32)  # the converter's +1
        kind = type_of(case, g, x.shape)
        stored = G.pair_rows(x, H if "attn_q." in g else KV) if case["arch"] == "llama" and (".attn_q.weight" in g or ".attn_k.weight" in g) else x
        raw = G.quantize(stored.reshape(stored.shape[0], -1) if stored.ndim == 2 else stored[None, :], kind)
        deq = G.dequantize(raw, kind, x.size).reshape(x.shape)
        if case["arch"] == "llama" and (".attn_q.weight" in g or ".attn_k.weight" in g):  # back to transformers' rows
            heads = H if "attn_q." in g else KV
            deq = deq.reshape(heads, HD // 2, 2, D).swapaxes(1, 2).reshape(x.shape)
        W[name] = torch.tensor(deq, dtype=torch.float64) - (1.0 if gemma and name.endswith("norm.weight") else 0.0)
        tensors.append((g, kind, x.shape, raw))
    arch = case["arch"]
    meta = [("general.architecture", G.STRING, arch), ("general.name", G.STRING, case["case"]),
            (f"{arch}.context_length", G.U32, P), (f"{arch}.embedding_length", G.U32, D),
            (f"{arch}.block_count", G.U32, case["L"]), (f"{arch}.feed_forward_length", G.U32, D_FF),
            (f"{arch}.attention.head_count", G.U32, H), (f"{arch}.attention.head_count_kv", G.U32, KV),
            (f"{arch}.attention.key_length", G.U32, HD), (f"{arch}.attention.value_length", G.U32, HD),
            (f"{arch}.rope.dimension_count", G.U32, HD), (f"{arch}.rope.freq_base", G.F32, cfg["rope_theta"]),
            (f"{arch}.attention.layer_norm_rms_epsilon", G.F32, cfg["rms_norm_eps"])]
    if gemma or t == "phi3":
        meta.append((f"{arch}.attention.sliding_window", G.U32, case["window"]))
    if t == "gemma2":
        meta += [("gemma2.attn_logit_softcapping", G.F32, 50.0), ("gemma2.final_logit_softcapping", G.F32, 30.0)]
    if "llama3" in case:
        factors = rope_freqs(cfg["rope_theta"], HD, case["llama3"])
        tensors.insert(0, ("rope_freqs.weight", "F32", factors.shape, factors.astype("<f4").tobytes()))
    path = os.path.join(folder, case["case"] + ".gguf")
    G.write_gguf(path, meta + tok_meta, tensors)
    ids = [bos] + make_models.random_ids(mk["seed"], T - 1, V, exclude={0, 1, 2, bos})
    return path, cfg, W, ids, V


# [SECTION] The checks -----------------------------------------------------------------------------

def run(attnviz, args):
    p = subprocess.run([attnviz, "run"] + args, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def max_diff(got, want, relative):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape:
        return float("inf")
    d = np.abs(got - want).max() if got.size else 0.0
    return d / max(np.abs(want).max(), 1e-30) if relative else d


def check_reference(attnviz, path, cfg, W, ids, case):
    code, out, err = run(attnviz, [path, "--ids", ",".join(map(str, ids)), "--json"])
    if code:
        fail(f"{case}: attnviz run exited {code}: {err.strip()}")
        return None
    got = json.loads(out)
    if cfg["model_type"] == "gpt2":  # its logits from output.weight (the file's own LM head), not the embedding's table
        want = reference.gpt2_forward(W, cfg, ids)
        want["logits"] = want["hidden"][-1] @ W["lm_head.weight"].T
    else:
        want = reference.llama_like_forward(W, cfg, ids)
    a = max_diff(got["attention"], want["attention"].numpy(), False)
    h = max_diff(got["hidden"], want["hidden"].numpy(), True)
    lg = max_diff(got["logits"], want["logits"].numpy(), True)
    print(f"{case}: against the reference forward: attention {a:.2g}, hidden {h:.2g}, logits {lg:.2g} "
          f"(types {got.get('gguf', {}).get('types')})")
    if a > 1e-4 or h > 1e-3 or lg > 1e-3:
        fail(f"{case}: attnviz differs from the reference forward on the dequantized weights")
    if got.get("model_type") != cfg["model_type"] or got.get("gguf", {}).get("architecture") != case_arch(case):
        fail(f"{case}: model_type {got.get('model_type')} / gguf {got.get('gguf')}")
    return got


def case_arch(case_name):
    return next(c["arch"] for c in CASES if c["case"] == case_name)


def oracle(modules, path, request):
    p = subprocess.run(["node", os.path.join(HERE, "llama_cpp_oracle.mjs"), modules, path, json.dumps(request)],
                       capture_output=True, text=True, timeout=300)
    if p.returncode:
        raise RuntimeError(p.stderr.strip()[-400:])
    return json.loads(p.stdout)


def check_llama_cpp(attnviz, modules, path, ids, V, got, case, texts):
    try:
        o = oracle(modules, path, {"ids": ids, "texts": texts, "vocab": V})
    except Exception as e:  # noqa: BLE001
        fail(f"{case}: llama.cpp did not run: {e}")
        return
    names = {v: k for k, v in G.GGML_TYPES.items()}
    hf = {names[int(t)]: n for t, n in o["hf_gguf"]["types"].items()}
    if o["hf_gguf"]["architecture"] != got["gguf"]["architecture"] or hf != got["gguf"]["types"]:
        fail(f"{case}: @huggingface/gguf reads {o['hf_gguf']}, attnviz {got['gguf']}")
    last = np.array(o["logits"][-1], np.float64)
    d = max_diff(got["logits"], last, True)
    f32 = all(k in ("F32",) for k in got["gguf"]["types"])
    # GPT-2's GELU in llama.cpp reads a table of fp16 values (ggml's GGML_GELU_FP16): 2.3e-4 on
    # gpt2_f32, 3.1e-5 against the reference forward given that GELU (measured 2026-11-29)
    gelu = case_arch(case) == "gpt2"
    bound = (1e-3 if gelu else 1e-5) if f32 else 5e-2
    print(f"{case}: against llama.cpp: last position's logits {d:.2g} (max |Δ| / max |logit|; bound {bound:g}"
          f"{(': its GELU read from a table of fp16 values' if gelu else '') if f32 else ': its activations rounded to 8 bits before each product'})")
    if d > bound:
        fail(f"{case}: logits differ from llama.cpp's by {d:.3g} > {bound}")
    wrong = 0
    for text, want in zip(texts, o["tokens"]):
        code, out, err = run(attnviz, [path, "--text", text, "--json"])
        if code == 2 and want == [] and "empty" in err:  # no tokens (GPT-2 adds no BOS): refused, as it should be
            continue
        if code:
            fail(f"{case}: --text {text!r}: exit {code}: {err.strip()}")
            continue
        ids_got = json.loads(out)["ids"]
        if case_arch(case) != "gpt2":
            ids_got = ids_got[1:]  # without the BOS attnviz adds (add_bos_token; GPT-2 adds none)
        if ids_got != want:
            wrong += 1
            if wrong <= 3:
                fail(f"{case}: {text!r}: attnviz {ids_got} vs llama.cpp {want}")
    print(f"{case}: token ids equal llama.cpp's on {len(texts) - wrong} of {len(texts)} texts")


def check_errors(attnviz, folder, good):
    data = open(good, "rb").read()

    def expect(name, content, needles):
        path = os.path.join(folder, name)
        with open(path, "wb") as f:
            f.write(content)
        code, out, err = run(attnviz, [path, "--ids", "1,2", "--json"])
        line = err.strip()
        if code != 2 or "\n" in line or not line.startswith(path) or not all(n in line for n in needles):
            fail(f"bad file {name}: exit {code}, {line!r} (wanted exit 2, one line naming {needles})")
        else:
            print(f"bad file {name}: {line}")

    expect("truncated.gguf", data[:len(data) // 2], ["past the end"])
    expect("not_gguf.gguf", b"GGML" + data[4:], ["not a GGUF file"])
    # a string claiming 4 GB: the first key's length
    expect("huge_string.gguf", data[:24] + (4 << 30).to_bytes(8, "little") + data[32:], ["4294967296 bytes"])
    key = b"general.architecture" + (8).to_bytes(4, "little") + (5).to_bytes(8, "little")
    arch = data.replace(key + b"llama", key + b"llamo")
    expect("unknown_arch.gguf", arch, ["general.architecture", "llamo"])
    # the first tensor (token_embd … ) given type 16 (IQ2_XXS), then 999
    name = b"token_embd.weight"
    at = data.index(name) + len(name)
    n_dims = int.from_bytes(data[at:at + 4], "little")
    type_at = at + 4 + 8 * n_dims
    expect("iq2_xxs.gguf", data[:type_at] + (16).to_bytes(4, "little") + data[type_at + 4:], ["token_embd.weight", "IQ2_XXS"])
    expect("offset.gguf", data[:type_at + 4] + (1 << 40).to_bytes(8, "little") + data[type_at + 12:], ["token_embd.weight", "past the end"])


def tokenizers_and_texts():
    """The cases' tokenizers (trained on the GPL's text: the same every run) and the texts the
    llama.cpp check tokenizes."""
    text = license_text()
    lines = [line.strip() for line in text.split("\n") if len(line.strip()) > 20][:300]
    with open(os.path.join(HERE, "tokenizer_texts.json"), encoding="utf-8") as f:
        texts = [t for t in json.load(f) if isinstance(t, str)]
    texts += ["注意力机制让模型看见上下文。", "def attend(q, k):\n    return softmax(q @ k.T) @ v  # 42"]
    tokenizers = {"spm": spm_tokenizer(lines + texts), "llama-bpe": bpe_tokenizer(text, "llama-bpe"),
                  "qwen2": bpe_tokenizer(text, "qwen2"), "gpt2": bpe_tokenizer(text, "gpt-2", "<|endoftext|>", False)}
    return tokenizers, texts


def case_named(name):
    case = next((c for c in CASES if c["case"] == name), None)
    if case is None:
        sys.exit(f"no case {name!r}: {', '.join(c['case'] for c in CASES)}")
    return case


def write_cases(folder, names):
    """--write: the named cases' files, for the page's test."""
    os.makedirs(folder, exist_ok=True)
    tokenizers, _ = tokenizers_and_texts()
    for name in names:
        make_case(case_named(name), folder, tokenizers)


def print_reference(name, ids):
    """--reference: the float64 reference forward on the case's dequantized weights (the file
    --write writes), on the given ids."""
    case = case_named(name)
    tokenizers, _ = tokenizers_and_texts()
    folder = tempfile.mkdtemp(prefix="attnviz-gguf-")
    try:
        _, cfg, W, _, _ = make_case(case, folder, tokenizers)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    with torch.no_grad():
        run = reference.llama_like_forward(W, cfg, ids)
    print(json.dumps({"attention": run["attention"].tolist()}))


def main(attnviz, modules):
    have_oracle = bool(modules)
    if modules and not os.path.isdir(os.path.join(modules, "node-llama-cpp")):
        sys.exit(f"{modules}: node-llama-cpp is not installed there (scripts/setup.sh installs it)")
    tokenizers, texts = tokenizers_and_texts()
    folder = tempfile.mkdtemp(prefix="attnviz-gguf-")
    try:
        for case in CASES:
            path, cfg, W, ids, V = make_case(case, folder, tokenizers)
            got = check_reference(attnviz, path, cfg, W, ids, case["case"])
            if got and have_oracle:
                check_llama_cpp(attnviz, modules, path, ids, V, got, case["case"], texts)
        if not have_oracle:
            print("llama.cpp: skipped (no NODE_MODULES given)")
        check_errors(attnviz, folder, os.path.join(folder, CASES[1]["case"] + ".gguf"))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if FAILURES:
        sys.exit(f"{len(FAILURES)} GGUF check(s) failed")
    print("gguf: ok")


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "--write":
        write_cases(sys.argv[2], sys.argv[3:])
    elif len(sys.argv) == 4 and sys.argv[1] == "--reference":
        print_reference(sys.argv[2], [int(i) for i in sys.argv[3].split(",")])
    elif len(sys.argv) in (2, 3) and not sys.argv[1].startswith("--"):
        main(sys.argv[1], sys.argv[2] if len(sys.argv) == 3 else None)
    else:
        sys.exit(__doc__)
