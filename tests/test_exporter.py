#!/usr/bin/python3
"""scripts/export_attention.py against PyTorch: a small nn.Transformer (d_model 16, 2 heads,
2 encoder + 2 decoder layers, seed 0, eval mode) is exported; the file's numbers must equal the
attention computed with numpy from the model's parameters, and the model's output rebuilt in
numpy from the file's weights (weights · V, out_proj, residual, LayerNorm, feed-forward, layer
after layer) must equal the module's own output: proof that each captured map is the one the
model used. Then `attnviz import` must load the file.

usage: /usr/bin/python3 tests/test_exporter.py build/attnviz
"""
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
from torch import nn

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "scripts"))
import export_attention  # noqa: E402

passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAIL: %s %s" % (name, detail))


# --- numpy reference ------------------------------------------------------------------------------

def np_params(mha):
    d = mha.embed_dim
    w = mha.in_proj_weight.detach().numpy().astype(np.float64)
    b = mha.in_proj_bias.detach().numpy().astype(np.float64)
    return (w[:d], w[d:2 * d], w[2 * d:], b[:d], b[d:2 * d], b[2 * d:],
            mha.out_proj.weight.detach().numpy().astype(np.float64), mha.out_proj.bias.detach().numpy().astype(np.float64))


def np_attention_weights(mha, xq, xkv, causal=False):
    """[head][T_q][T_k]: softmax(Q_h K_hᵀ / sqrt(d_k)) from the module's parameters, in float64."""
    wq, wk, _, bq, bk, _, _, _ = np_params(mha)
    H = mha.num_heads
    d_k = mha.embed_dim // H
    q, k = xq @ wq.T + bq, xkv @ wk.T + bk
    out = []
    for h in range(H):
        s = q[:, h * d_k:(h + 1) * d_k] @ k[:, h * d_k:(h + 1) * d_k].T / np.sqrt(d_k)
        if causal:
            s = np.where(np.triu(np.ones_like(s), 1) > 0, -np.inf, s)
        e = np.exp(s - s.max(axis=1, keepdims=True))
        out.append(e / e.sum(axis=1, keepdims=True))
    return np.array(out)


def np_attention_output(mha, weights, xkv):
    """The module's attention output rebuilt from given per-head weights: concat_h(A_h V_h) W_oᵀ + b_o."""
    _, _, wv, _, _, bv, wo, bo = np_params(mha)
    d_k = mha.embed_dim // mha.num_heads
    v = xkv @ wv.T + bv
    heads = [weights[h] @ v[:, h * d_k:(h + 1) * d_k] for h in range(mha.num_heads)]
    return np.concatenate(heads, axis=1) @ wo.T + bo


def np_norm(ln, x):
    w, b = ln.weight.detach().numpy().astype(np.float64), ln.bias.detach().numpy().astype(np.float64)
    mu = x.mean(axis=1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=1, keepdims=True)
    return (x - mu) / np.sqrt(var + ln.eps) * w + b


def np_feed_forward(layer, x):
    w1, b1 = layer.linear1.weight.detach().numpy().astype(np.float64), layer.linear1.bias.detach().numpy().astype(np.float64)
    w2, b2 = layer.linear2.weight.detach().numpy().astype(np.float64), layer.linear2.bias.detach().numpy().astype(np.float64)
    return np.maximum(x @ w1.T + b1, 0) @ w2.T + b2


def rebuild_output(model, src, tgt, encoder_w, decoder_w, cross_w):
    """nn.Transformer's forward (post-norm, ReLU) in numpy, every attention map taken from the
    given weights instead of being computed."""
    x = src
    for layer, w in zip(model.encoder.layers, encoder_w):
        x = np_norm(layer.norm1, x + np_attention_output(layer.self_attn, w, x))
        x = np_norm(layer.norm2, x + np_feed_forward(layer, x))
    memory = np_norm(model.encoder.norm, x)
    y = tgt
    for layer, w_self, w_cross in zip(model.decoder.layers, decoder_w, cross_w):
        y = np_norm(layer.norm1, y + np_attention_output(layer.self_attn, w_self, y))
        y = np_norm(layer.norm2, y + np_attention_output(layer.multihead_attn, w_cross, memory))
        y = np_norm(layer.norm3, y + np_feed_forward(layer, y))
    return np_norm(model.decoder.norm, y)


def reference_weights(model, src, tgt):
    """Every layer's attention in numpy, layer inputs computed in numpy too (independent of the exporter)."""
    enc, dec, cross = [], [], []
    x = src
    for layer in model.encoder.layers:
        w = np_attention_weights(layer.self_attn, x, x)
        enc.append(w)
        x = np_norm(layer.norm1, x + np_attention_output(layer.self_attn, w, x))
        x = np_norm(layer.norm2, x + np_feed_forward(layer, x))
    memory = np_norm(model.encoder.norm, x)
    y = tgt
    for layer in model.decoder.layers:
        w = np_attention_weights(layer.self_attn, y, y, causal=True)
        dec.append(w)
        y = np_norm(layer.norm1, y + np_attention_output(layer.self_attn, w, y))
        c = np_attention_weights(layer.multihead_attn, y, memory)
        cross.append(c)
        y = np_norm(layer.norm2, y + np_attention_output(layer.multihead_attn, c, memory))
        y = np_norm(layer.norm3, y + np_feed_forward(layer, y))
    return enc, dec, cross


FAKE_TRANSFORMERS = r'''
"""A stand-in for the transformers API that export_attention.py uses (tests only)."""
import torch

asked_eager = []


class Output:
    def __init__(self, **fields):
        self.__dict__.update(fields)


class Encoding(dict):
    __getattr__ = dict.__getitem__


def attentions(layers, heads, T_q, T_k, seed, causal=False):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(layers):
        s = torch.randn(1, heads, T_q, T_k, generator=g)
        if causal:
            s = s.masked_fill(torch.triu(torch.ones(T_q, T_k, dtype=torch.bool), 1), float("-inf"))
        out.append(torch.softmax(s, dim=-1).half())  # an fp16 model
    return tuple(out)


class Tokenizer:
    vocab = ["<pad>", "</s>", "Hello", "Ġworld", "▁Das", "▁Haus", "▁The", "▁house"]

    def __init__(self, seq2seq):
        self.seq2seq = seq2seq

    def __call__(self, text=None, text_target=None, return_tensors=None):
        ids = [self.vocab.index(w) for w in (text if text is not None else text_target).split()]
        if self.seq2seq:
            ids.append(1)
        ids = torch.tensor([ids])
        return Encoding(input_ids=ids, attention_mask=torch.ones_like(ids))

    def convert_ids_to_tokens(self, ids):
        return [self.vocab[int(i)] for i in ids]


class AutoTokenizer:
    @staticmethod
    def from_pretrained(name):
        return Tokenizer(name.startswith("fake-t5"))


class AutoConfig:
    @staticmethod
    def from_pretrained(name):
        return Output(is_encoder_decoder=name.startswith("fake-t5"))


class DecoderOnly(torch.nn.Module):
    def forward(self, input_ids, attention_mask=None, output_attentions=False, return_dict=True):
        T = input_ids.shape[1]
        return Output(attentions=attentions(3, 2, T, T, seed=0, causal=True) if output_attentions else None)


class Seq2Seq(torch.nn.Module):
    def prepare_decoder_input_ids_from_labels(self, labels):
        return torch.cat([torch.zeros_like(labels[:, :1]), labels[:, :-1]], dim=1)

    def forward(self, input_ids, attention_mask=None, decoder_input_ids=None, output_attentions=False, return_dict=True):
        S, T = input_ids.shape[1], decoder_input_ids.shape[1]
        return Output(encoder_attentions=attentions(2, 4, S, S, seed=1), decoder_attentions=attentions(2, 4, T, T, seed=2, causal=True),
                      cross_attentions=attentions(2, 4, T, S, seed=3))


def _load(cls, attn_implementation=None):
    if attn_implementation != "eager":
        raise RuntimeError("attention weights need attn_implementation='eager'")
    return cls()


class AutoModel:
    @staticmethod
    def from_pretrained(name, attn_implementation=None):
        return _load(DecoderOnly, attn_implementation)


class AutoModelForSeq2SeqLM:
    @staticmethod
    def from_pretrained(name, attn_implementation=None):
        return _load(Seq2Seq, attn_implementation)
'''


def run_import(attnviz, path):
    r = subprocess.run([attnviz, "import", path], capture_output=True, text=True)
    return r.returncode, r.stdout.strip(), r.stderr.strip()


def main():
    attnviz = sys.argv[1] if len(sys.argv) > 1 else "build/attnviz"
    have_transformers = importlib.util.find_spec("transformers") is not None  # before the stand-in is imported
    tmp = tempfile.mkdtemp(prefix="attnviz-exporter-")

    # --- nn.Transformer ------------------------------------------------------------------------
    torch.manual_seed(0)
    model = nn.Transformer(d_model=16, nhead=2, num_encoder_layers=2, num_decoder_layers=2,
                           dim_feedforward=32, dropout=0.1).eval()
    src_tokens = ["▁Das", "▁Haus", "▁ist", "▁klein", "</s>"]
    tgt_tokens = ["<s>", "▁The", "▁house", "▁is"]
    src = torch.randn(len(src_tokens), 16)
    tgt = torch.randn(len(tgt_tokens), 16)
    path = os.path.join(tmp, "transformer.json")
    model.train()  # the exporter runs in eval mode (no dropout) and gives the model back as it was
    export_attention.export_transformer(model, src_tokens, tgt_tokens, src, tgt, path, name="tiny nn.Transformer")
    check("the model is back in training mode", model.training)
    model.eval()
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    check("file layout", sorted(data) == ["cross_attention", "decoder_attention", "decoder_tokens", "encoder_attention",
                                          "encoder_tokens", "model"], str(sorted(data)))
    check("tokens", data["encoder_tokens"] == src_tokens and data["decoder_tokens"] == tgt_tokens)
    enc, dec, cross = (np.array(data[k], dtype=np.float64) for k in ("encoder_attention", "decoder_attention", "cross_attention"))
    check("shapes", enc.shape == (2, 2, 5, 5) and dec.shape == (2, 2, 4, 4) and cross.shape == (2, 2, 4, 5),
          "%s %s %s" % (enc.shape, dec.shape, cross.shape))

    src64, tgt64 = src.numpy().astype(np.float64), tgt.numpy().astype(np.float64)
    ref_enc, ref_dec, ref_cross = reference_weights(model, src64, tgt64)
    for name, got, want in (("encoder", enc, ref_enc), ("decoder", dec, ref_dec), ("cross", cross, ref_cross)):
        diff = max(np.abs(got[l] - want[l]).max() for l in range(2))
        print("exporter: %s attention, max |file - numpy| = %.2g" % (name, diff))
        check("%s attention equals numpy's" % name, diff < 5e-6, "max diff %.3g" % diff)
    check("decoder self-attention is causal", all(np.all(np.triu(dec[l, h], 1) == 0) for l in range(2) for h in range(2)))
    check("rows sum to 1", all(np.allclose(a.sum(axis=-1), 1, atol=1e-5) for a in (enc, dec, cross)))
    check("heads differ (per-head weights, not the average)", np.abs(enc[0, 0] - enc[0, 1]).max() > 1e-3)

    with torch.no_grad():
        mask = model.generate_square_subsequent_mask(len(tgt_tokens))
        module_out = model(src.unsqueeze(1), tgt.unsqueeze(1), tgt_mask=mask)[:, 0, :].numpy().astype(np.float64)
    rebuilt = rebuild_output(model, src64, tgt64, enc, dec, cross)
    diff = np.abs(rebuilt - module_out).max()
    print("exporter: decoder output rebuilt from the file's weights, max |rebuilt - module| = %.2g" % diff)
    check("the module's output rebuilt from the captured weights", diff < 1e-4, "max diff %.3g" % diff)
    # The same check with the heads averaged must fail: it can tell right weights from wrong ones.
    avg = lambda w: np.repeat(w.mean(axis=1, keepdims=True), 2, axis=1)  # noqa: E731
    wrong = np.abs(rebuild_output(model, src64, tgt64, avg(enc), avg(dec), avg(cross)) - module_out).max()
    check("averaged heads do not rebuild the output", wrong > 1e-2, "diff only %.3g" % wrong)

    code, out, err = run_import(attnviz, path)
    check("attnviz import loads the export", code == 0, err)
    check("attnviz import summary", "3 stacks of attention" in out and "cross_attention: 2 layers × 2 heads, 4 queries" in out,
          out)

    # --- norm_first and batch_first are followed too --------------------------------------------
    torch.manual_seed(1)
    pre = nn.Transformer(d_model=16, nhead=4, num_encoder_layers=1, num_decoder_layers=3, dim_feedforward=32,
                         norm_first=True, batch_first=True).eval()
    path_pre = os.path.join(tmp, "prenorm.json")
    export_attention.export_transformer(pre, ["a", "b", "c"], ["x", "y"], torch.randn(3, 16), torch.randn(2, 16), path_pre)
    code, out, err = run_import(attnviz, path_pre)
    check("pre-norm, batch-first export loads", code == 0 and "decoder_attention: 3 layers × 4 heads" in out, out + err)

    # --- one nn.MultiheadAttention ---------------------------------------------------------------
    torch.manual_seed(2)
    mha = nn.MultiheadAttention(16, 4).eval()
    x = torch.randn(6, 16)
    path_mha = os.path.join(tmp, "mha.json")
    tokens = ["The", "Ġcat", "Ġsat", "Ġon", "Ġthe", "Ġmat"]
    export_attention.export_multihead_attention(mha, tokens, x, path_mha, causal=True)
    with open(path_mha, encoding="utf-8") as f:
        m = json.load(f)
    got = np.array(m["attention"], dtype=np.float64)[0]
    want = np_attention_weights(mha, x.numpy().astype(np.float64), x.numpy().astype(np.float64), causal=True)
    check("MultiheadAttention weights equal numpy's", np.abs(got - want).max() < 5e-6, "%.3g" % np.abs(got - want).max())
    code, out, err = run_import(attnviz, path_mha)
    check("MultiheadAttention export loads", code == 0 and "1 layer × 4 heads, 6 tokens" in out, out + err)
    path_x = os.path.join(tmp, "mha_cross.json")
    export_attention.export_multihead_attention(mha, ["q1", "q2"], torch.randn(2, 16), path_x, key_tokens=tokens, kv=x)
    code, out, err = run_import(attnviz, path_x)
    check("MultiheadAttention cross export loads", code == 0 and "2 queries (q1 q2) × 6 keys" in out, out + err)

    # --- The Hugging Face path, on a stand-in `transformers` ------------------------------------
    # The real package is not installed here. A stand-in with the documented surface
    # (AutoConfig / AutoTokenizer / AutoModel / AutoModelForSeq2SeqLM .from_pretrained,
    # tokenizer(...) and convert_ids_to_tokens, output_attentions=True outputs with a batch of
    # one, prepare_decoder_input_ids_from_labels) runs the script's own code path end to end.
    fake_dir = os.path.join(tmp, "fake")
    os.makedirs(os.path.join(fake_dir, "transformers"))
    with open(os.path.join(fake_dir, "transformers", "__init__.py"), "w") as f:
        f.write(FAKE_TRANSFORMERS)
    env = dict(os.environ, PYTHONPATH=fake_dir)
    script = os.path.join(here, "..", "scripts", "export_attention.py")
    sys.path.insert(0, fake_dir)
    import transformers as fake  # noqa: E402  (the stand-in, for the expected numbers)
    sys.path.remove(fake_dir)
    path_gpt = os.path.join(tmp, "hf_gpt.json")
    r = subprocess.run([sys.executable, script, "fake-gpt", "Hello Ġworld", "-o", path_gpt], capture_output=True, text=True, env=env)
    check("HF decoder-only: exit 0", r.returncode == 0, r.stderr)
    if r.returncode == 0:
        with open(path_gpt, encoding="utf-8") as f:
            d = json.load(f)
        want = np.array([a[0].numpy() for a in fake.attentions(3, 2, 2, 2, seed=0, causal=True)])
        check("HF decoder-only: tokens", d["tokens"] == ["Hello", "Ġworld"] and d["model"] == "fake-gpt", str(d.get("tokens")))
        check("HF decoder-only: the model's attentions, batch dimension dropped",
              np.abs(np.array(d["attention"]) - want).max() < 5e-6)
        code, out, err = run_import(attnviz, path_gpt)
        check("HF decoder-only: attnviz import loads it", code == 0 and "3 layers × 2 heads, 2 tokens" in out, out + err)
    path_t5 = os.path.join(tmp, "hf_t5.json")
    r = subprocess.run([sys.executable, script, "fake-t5", "▁Das ▁Haus", "--target", "▁The ▁house", "-o", path_t5],
                       capture_output=True, text=True, env=env)
    check("HF encoder-decoder: exit 0", r.returncode == 0, r.stderr)
    if r.returncode == 0:
        with open(path_t5, encoding="utf-8") as f:
            d = json.load(f)
        check("HF encoder-decoder: encoder tokens end with </s>", d["encoder_tokens"] == ["▁Das", "▁Haus", "</s>"],
              str(d["encoder_tokens"]))
        check("HF encoder-decoder: decoder tokens are the target shifted right",
              d["decoder_tokens"] == ["<pad>", "▁The", "▁house"], str(d["decoder_tokens"]))
        want_cross = np.array([a[0].numpy() for a in fake.attentions(2, 4, 3, 3, seed=3)])
        check("HF encoder-decoder: cross attentions", np.abs(np.array(d["cross_attention"]) - want_cross).max() < 5e-6)
        code, out, err = run_import(attnviz, path_t5)
        check("HF encoder-decoder: attnviz import loads it", code == 0 and "3 stacks of attention" in out, out + err)
    r = subprocess.run([sys.executable, script, "fake-t5", "▁Das"], capture_output=True, text=True, env=env)
    check("HF encoder-decoder without --target: a clear message",
          r.returncode != 0 and "give the decoder's text with --target" in r.stderr, r.stderr)

    # --- Hugging Face without transformers: a clear message, not a traceback -------------------
    if not have_transformers:
        r = subprocess.run([sys.executable, os.path.join(here, "..", "scripts", "export_attention.py"), "gpt2", "Hi"],
                           capture_output=True, text=True)
        check("no transformers: exit non-zero", r.returncode != 0)
        check("no transformers: says what is missing",
              "needs the 'transformers' package" in r.stderr and "Traceback" not in r.stderr, r.stderr)
    else:
        print("exporter: transformers is installed; the missing-package message is not checked")

    print("exporter: %d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
