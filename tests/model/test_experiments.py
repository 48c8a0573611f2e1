#!/usr/bin/env python3
"""`attnviz run`'s experiments (SPEC.md §5: --knockout, --knockout-mode, --hide-token,
--generate with --temperature, --top-k, --seed) against tests/model/reference.py.

    /usr/bin/python3 tests/model/test_experiments.py build/attnviz build/model-refs [models]

For every random-weight case folder of tests/model/make_models.py, and the shipped tiny-lm and
tiny-translator when `models` is given:
  1. heads knocked out (zero and mean) and a hidden token: attention within 1e-4, hidden states
     and logits within 1e-3 of the largest, as the plain runs in test_run.py; and the logits
     must move away from the unedited run's (so the check can fail);
  2. gpt2: --generate, greedy and sampled (temperature, top-k, seed): the reference's tokens,
     the whole sequence recomputed per token; the same seed gives the same tokens twice, and
     another seed other tokens somewhere over the cases;
  3. bad experiment options exit 2 with one line naming the option.
Prints the largest differences; exits 1 on any failure.
"""
import json
import os
import subprocess
import sys

import numpy as np
import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import reference  # noqa: E402
from test_reference import read_safetensors  # noqa: E402

torch.set_num_threads(1)
binary, refs = sys.argv[1], sys.argv[2]
shipped = sys.argv[3] if len(sys.argv) > 3 else None
failures, worst = [], {"attention": 0.0, "hidden": 0.0, "logits": 0.0, "moved": float("inf")}
PREFIX = {"gpt2": "transformer.", "bert": "bert.", "marian": "model."}
STACKS = {"gpt2": ["attention"], "bert": ["attention"],
          "marian": ["encoder_attention", "decoder_attention", "cross_attention"]}


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def run(args, expect=0):
    p = subprocess.run([binary, "run"] + args, capture_output=True, text=True)
    if p.returncode != expect:
        fail(f"run {' '.join(args)}: exit {p.returncode}, expected {expect}: {p.stderr.strip()[:300]}")
        return None
    return p


def csv(values):
    return ",".join(str(v) for v in values)


def difference(got, want, relative):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        return float("inf")
    diff = float(np.max(np.abs(got - want))) if got.size else 0.0
    return diff / max(float(np.max(np.abs(want))), 1e-12) if relative else diff


def load(folder):
    cfg = json.load(open(os.path.join(folder, "config.json")))
    prefix = PREFIX.get(cfg["model_type"], "model.")  # the Llama-like: "model."
    index = os.path.join(folder, "model.safetensors.index.json")
    files = sorted(set(json.load(open(index))["weight_map"].values())) if os.path.exists(index) else ["model.safetensors"]
    W = {}
    for f in files:
        W.update({n[len(prefix):] if n.startswith(prefix) else n: t.double()
                  for n, t in read_safetensors(os.path.join(folder, f)).items()})
    return cfg, W


def reference_run(cfg, W, ids, source_ids, edits):
    with torch.no_grad():
        if cfg["model_type"] == "gpt2":
            return reference.gpt2_forward(W, cfg, ids, edits)
        if cfg["model_type"] == "bert":
            return reference.bert_forward(W, cfg, ids, edits)
        if cfg["model_type"] in reference.LLAMA_LIKE:
            return reference.llama_like_forward(W, cfg, ids, edits)
        return reference.marian_forward(W, cfg, source_ids, ids, edits)


def shape(cfg):  # per stack: (layers, heads)
    t = cfg["model_type"]
    if t == "gpt2":
        return [(cfg["n_layer"], cfg["n_head"])]
    if t == "bert" or t in reference.LLAMA_LIKE:
        return [(cfg["num_hidden_layers"], cfg["num_attention_heads"])]
    return [(cfg["encoder_layers"], cfg["encoder_attention_heads"]),
            (cfg["decoder_layers"], cfg["decoder_attention_heads"]),
            (cfg["decoder_layers"], cfg["decoder_attention_heads"])]


def knockout_arg(cfg, heads):  # {(stack, layer, head)} from 0 -> "[STACK:]L:H,…"
    names = STACKS.get(cfg["model_type"], ["attention"])
    return csv((f"{names[s]}:" if s else "") + f"{l + 1}:{h + 1}" for s, l, h in sorted(heads))


def check_edits(label, folder, ids, source_ids):
    """Knockouts and a hidden token: attnviz run against the reference with the same edits."""
    cfg, W = load(folder)
    family = cfg["model_type"]
    dims = shape(cfg)
    # the first head of the first layer and the last head of the last layer of every stack
    heads = frozenset([(s, 0, 0) for s in range(len(dims))] + [(s, L - 1, H - 1) for s, (L, H) in enumerate(dims)])
    encdec = family == "marian"
    base = ([folder, "--json", "--source-ids", csv(source_ids), "--ids", csv(ids)] if encdec
            else [folder, "--json", "--ids", csv(ids)])
    plain = reference_run(cfg, W, ids, source_ids, reference.NONE)
    hide = len(source_ids if encdec else ids) // 2  # from 0
    for mode, edits in (("zero", reference.Edits(heads, False, ())),
                        ("mean", reference.Edits(heads, True, ())),
                        ("zero + hidden", reference.Edits(heads, False, (hide,))),
                        ("hidden", reference.Edits(frozenset(), False, (hide,)))):
        args = base + (["--knockout", knockout_arg(cfg, edits.knockout)] if edits.knockout else [])
        args += ["--knockout-mode", "mean"] if edits.mean else []
        args += ["--hide-token", str(hide + 1)] if edits.hidden else []
        p = run(args)
        if not p:
            continue
        out, want = json.loads(p.stdout), reference_run(cfg, W, ids, source_ids, edits)
        for s in STACKS.get(family, ["attention"]):
            d = difference(out[s], want[s], False)
            worst["attention"] = max(worst["attention"], d)
            if d > 1e-4:
                fail(f"{label} {mode}: {s} differs by {d:.3g}")
        d = difference(out["hidden"], want["hidden"], True)
        worst["hidden"] = max(worst["hidden"], d)
        if d > 1e-3:
            fail(f"{label} {mode}: hidden differs by {d:.3g}")
        if "logits" in want:
            d = difference(out["logits"], want["logits"], True)
            worst["logits"] = max(worst["logits"], d)
            if d > 1e-3:
                fail(f"{label} {mode}: logits differ by {d:.3g}")
        # the edit changed the run (else the comparison above could not fail)
        key = "logits" if "logits" in want else "hidden"
        moved = difference(want[key], plain[key], True)
        if edits.mean and not edits.hidden and len(ids) == 1:
            continue  # one row is its own mean
        worst["moved"] = min(worst["moved"], moved)
        if moved < 1e-4:
            fail(f"{label} {mode}: the edit leaves the reference's {key} unchanged ({moved:.2g})")
        if edits.hidden and any(abs(float(np.asarray(out[s])[..., hide].max())) != 0.0
                                for s in STACKS.get(family, ["attention"]) if s != "decoder_attention"):
            fail(f"{label} {mode}: a hidden key still has weight")


def check_generation(label, folder, ids, seeds_differ):
    cfg, W = load(folder)
    mean = reference.Edits(frozenset([(0, 0, 0)]), True, ())  # generated by recomputing, not from the cache
    for temperature, top_k, seed, edits in ((0.0, 0, 0, reference.NONE), (0.9, 0, 7, reference.NONE),
                                            (1.3, 5, 11, reference.NONE), (1.3, 5, 12, reference.NONE),
                                            (0.9, 0, 7, mean), (0.0, 0, 0, reference.Edits(frozenset([(0, 0, 0)]), False, (0,)))):
        want, _ = reference.gpt2_generate(W, cfg, ids, 8, temperature, top_k, seed, edits)
        args = [folder, "--json", "--ids", csv(ids), "--generate", "8"]
        if temperature > 0:
            args += ["--temperature", str(temperature), "--top-k", str(top_k), "--seed", str(seed)]
        if edits.knockout:
            args += ["--knockout", "1:1", "--knockout-mode", "mean" if edits.mean else "zero"]
        if edits.hidden:
            args += ["--hide-token", "1"]
        p, q = run(args), run(args)
        if not p or not q:
            continue
        out = json.loads(p.stdout)
        got = out["ids"]
        if got != want:
            fail(f"{label}: --generate T={temperature} k={top_k} seed={seed}: {got[len(ids):]}, reference {want[len(ids):]}")
        if json.loads(q.stdout)["ids"] != got:
            fail(f"{label}: the same seed gave other tokens")
        if out.get("generated_ids") != got[len(ids):] or len(out.get("generated_top", [])) != len(got) - len(ids):
            fail(f"{label}: generated_ids / generated_top do not match the generated tokens")
        if not edits.knockout:
            seeds_differ.setdefault(seed, []).append(tuple(got))


def check_bad_options(folder):
    for args, must in ((["--text", "a b", "--knockout", "9:1"], "--knockout"),
                       (["--text", "a b", "--knockout", "1:x"], "--knockout"),
                       (["--text", "a b", "--knockout-mode", "half"], "--knockout-mode"),
                       (["--text", "a b", "--hide-token", "0"], "--hide-token"),
                       (["--text", "a b", "--hide-token", "40"], "--hide-token"),
                       (["--text", "a b", "--generate", "0"], "--generate"),
                       (["--text", "a b", "--generate", "2", "--temperature", "-1"], "--temperature"),
                       (["--text", "a b", "--generate", "2", "--seed", "x"], "--seed")):
        p = run([folder] + args, expect=2)
        if p and (must not in p.stderr or p.stderr.count("\n") != 1):
            fail(f"bad option {args}: expected one line naming {must}, got {p.stderr!r}")


cases = json.load(open(os.path.join(refs, "cases.json")))
seeds_differ = {}
for case in cases:
    folder = os.path.join(refs, case)
    exp = json.load(open(os.path.join(folder, "expected.json")))
    if "encoder_ids" in exp:
        check_edits(case, folder, exp["decoder_ids"], exp["encoder_ids"])
    else:
        check_edits(case, folder, exp["ids"], [])
        if json.load(open(os.path.join(folder, "config.json")))["model_type"] == "gpt2":
            check_generation(case, folder, exp["ids"], seeds_differ)
if shipped:
    lm, translator = os.path.join(shipped, "tiny-lm"), os.path.join(shipped, "tiny-translator")
    p = run([lm, "--json", "--text", "The cat sat on the mat. The cat sat"])
    if p:
        ids = json.loads(p.stdout)["ids"]
        check_edits("tiny-lm", lm, ids, [])
        check_generation("tiny-lm", lm, ids, seeds_differ)
    p = run([translator, "--json", "--source", "1999年12月31日"])
    if p:
        out = json.loads(p.stdout)
        check_edits("tiny-translator", translator, out["decoder_ids"], out["encoder_ids"])
    check_bad_options(lm)
if seeds_differ.get(11) == seeds_differ.get(12):
    fail("seeds 11 and 12 gave the same tokens in every case")

print("largest differences: " + ", ".join(f"{k} {v:.2g}" for k, v in worst.items() if k != "moved") +
      f"; smallest change an edit made: {worst['moved']:.2g}; {len(cases)} cases" + (" + the shipped models" if shipped else ""))
print(f"{'FAILED: ' + str(len(failures)) if failures else 'all passed'}")
sys.exit(1 if failures else 0)
