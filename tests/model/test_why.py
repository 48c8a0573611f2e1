#!/usr/bin/env python3
"""`attnviz run`'s "why" views (SPEC.md §5: --lens, --attribute, --contrast, --corrupted) and its
token probabilities (--probs) against tests/model/reference.py's lens(), attribution() and patching().

    /usr/bin/python3 tests/model/test_why.py build/attnviz build/model-refs [models]
    /usr/bin/python3 tests/model/test_why.py --self-check build/model-refs [models]

For every decoder-only case folder of tests/model/make_models.py (gpt2 and the Llama-like; bert
and marian only for the errors), and the shipped tiny-circuits (an induction prompt) and tiny-lm
when `models` is given, on T ≈ 10 tokens (phi3: 18, past its original 16 positions):
  1. `run FOLDER --ids IDS --lens --attribute '#A' --contrast '#B' --corrupted-ids IDS2 --probs --json`
     (the shipped models: --text, token texts and --corrupted TEXT; their ids, target and contrast
     are read back from the output), A and B the ids whose logit moves most up and down between
     the two runs, and `--attribute '#TARGET'` alone (no contrast, the model's own prediction):
     - the JSON's shapes: lens [L+1][T] of {top [[id, p] × 5], target, target_rank, target_p};
       attribution {target, contrast, total, embed, heads [L][H], mlps [L], bias, sources
       [L][H][T]}; patching {heads [L][H], resid [L+1][T], clean, corrupted};
     - probs [T]: null, then {id, p, rank, top [[id, p] × 10]}, row t the reference lens' last
       layer at t − 1 read at ids[t], p within 1e-4, near-ties as the lens';
     - lens p within 1e-4; top ids, target and target_rank the reference's except among ids whose
       reference p are within 1e-5 of each other (near-ties; for the rank: within 1e-5 of its p, relative);
     - attribution parts within 1e-4·(1 + |total|) of the reference's; attnviz's own parts sum to
       its total within 1e-4·max(1, |total|), its sources to its heads likewise;
     - patching ratios within 1e-3, clean and corrupted logit differences within 1e-4·(1 + |LD|);
     - sanity: the lens' row L target at T - 1 is the argmax of attnviz's own "logits", and its
       patching resid[L][T - 1] is 1 within 1e-5;
  2. bad input exits 2 with one line on stderr naming the option: a target text of two tokens
     (naming them), --corrupted-ids of another length, --corrupted without --contrast, an
     --attribute id outside the vocabulary, --lens on bert (no LM head) and on marian, --probs on
     bert and on marian.
--self-check runs the reference alone on the same cases (no binary): its own assertions (parts sum
to the logit to 1e-9, sources to heads, patched final row = 1, equal rows patch to 0, one changed
embedding patched back = 1) and that the hooks record and patch without changing the run.
Prints the largest differences; exits 1 on any failure.
"""
import json
import os
import subprocess
import sys
import time

import numpy as np
import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import reference  # noqa: E402
from reference_why import load  # noqa: E402

torch.set_num_threads(1)
args = sys.argv[1:]
self_check = "--self-check" in args
if self_check:
    args.remove("--self-check")
    binary, refs, shipped = None, args[0], (args[1] if len(args) > 1 else None)
else:
    binary, refs, shipped = args[0], args[1], (args[2] if len(args) > 2 else None)
failures = []
worst = {"probs p": 0.0, "lens p": 0.0, "attribution": 0.0, "own sum": 0.0, "patching": 0.0}

# The shipped models' prompts: (text, target token, contrast token, corrupted text) and, for
# --self-check (no binary to tokenize), the ids attnviz gives them (BOS first in tiny-circuits).
SHIPPED = {
    "tiny-circuits": ("Zq%k8wJ Zq%k8w", "J", "Q", "Zq%k8wQ Zq%k8w",  # induction: J after "Zq%k8w" again
                      [511, 57, 80, 4, 74, 23, 86, 41, 220, 57, 80, 4, 74, 23, 86], 41, 48,
                      [511, 57, 80, 4, 74, 23, 86, 48, 220, 57, 80, 4, 74, 23, 86]),
    "tiny-lm": ("The cat sat on the mat. The cat sat", " on", " in", "The dog sat on the mat. The dog sat",
                [440, 3583, 3018, 452, 267, 295, 319, 13, 930, 3583, 3018], 452, 323,
                [440, 4596, 3018, 452, 267, 295, 319, 13, 930, 4596, 3018]),
}


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def run(argv, expect=0):
    p = subprocess.run([binary, "run"] + argv, capture_output=True, text=True)
    if p.returncode != expect:
        fail(f"run {' '.join(argv)}: exit {p.returncode}, expected {expect}: {p.stderr.strip()[:300]}")
        return None
    return p


def csv(values):
    return ",".join(str(v) for v in values)


def dims(value, shape):  # whether a nested list has the shape (None: any length)
    if not shape:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, list) and (shape[0] is None or len(value) == shape[0]) and all(dims(v, shape[1:]) for v in value)


def note(key, value):
    worst[key] = max(worst[key], value)

# [SECTION] The reference: its views, and --self-check's checks of the hooks --------------------


def views(cfg, W, ids, corrupted, a, b, plain=None):
    """The reference's lens (rows and p), attribution with and without the contrast (of `plain`,
    by default the model's prediction at the last position), patching."""
    with torch.no_grad():
        rows, p = reference.lens(W, cfg, ids)
        plain = rows[-1][-1]["target"] if plain is None else plain
        return {"lens": rows, "p": p, "attribution": reference.attribution(W, cfg, ids, a, b),
                "plain": reference.attribution(W, cfg, ids, plain, None), "target": plain,
                "patching": reference.patching(W, cfg, ids, corrupted, a, b)}


def check_hooks(label, cfg, W, ids):
    """Recording changes nothing; patching a head or a row with its own value changes nothing."""
    forward = reference.decoder_forward(cfg)
    with torch.no_grad():
        plain, hooks = forward(W, cfg, ids), reference.Hooks()
        hooked = forward(W, cfg, ids, hooks=hooks)
        for key in ("attention", "hidden", "logits"):
            if not torch.equal(plain[key], hooked[key]):
                fail(f"{label}: recording changes {key}")
        L, (H, T, hd) = len(hooks.context), hooks.context[0].shape
        if len(hooks.resid) != L + 1 or len(hooks.attn_out) != L or len(hooks.mlp_out) != L or len(hooks.v) != L:
            fail(f"{label}: hooks recorded {len(hooks.resid)} streams, {len(hooks.attn_out)} attention outputs")
        final = reference.lens_logits(W, cfg, hooks.resid[-1][-1])
        if float((final - plain["logits"]).abs().max()) > 1e-12 * (1 + float(plain["logits"].abs().max())):
            fail(f"{label}: the last stream's logits are not the forward's")
        same = forward(W, cfg, ids, hooks=reference.Hooks(patch_context={(L - 1, H - 1): hooks.context[L - 1][H - 1]},
                                                          patch_resid={(L // 2, T // 2): hooks.resid[L // 2][T // 2]}))
        if not torch.equal(same["logits"], plain["logits"]):
            fail(f"{label}: patching with the run's own values changes the logits")
        zero = forward(W, cfg, ids, hooks=reference.Hooks(patch_context={(0, 0): torch.zeros(T, hd)}))
        knocked = forward(W, cfg, ids, reference.Edits(frozenset([(0, 0, 0)])))
        if float((zero["logits"] - knocked["logits"]).abs().max()) > 1e-12 * (1 + float(knocked["logits"].abs().max())):
            fail(f"{label}: a zero patch is not a zero knockout")
        if torch.equal(zero["logits"], plain["logits"]):
            fail(f"{label}: a zero patch leaves the logits unchanged")

# [SECTION] attnviz against the reference -------------------------------------------------------


def compare_lens(label, got, want, p, L, T):
    if not dims([[[e[1] for e in r.get("top", [])] + [r.get("target_p"), r.get("target"), r.get("target_rank")]
                  for r in row] for row in got], [L + 1, T, None]) \
            or any(len(r.get("top", [])) != 5 or any(not isinstance(e, list) or len(e) != 2 for e in r["top"]) for row in got for r in row):
        fail(f"{label}: lens is not [{L + 1}][{T}] of {{top [[id, p] × 5], target, target_rank, target_p}}")
        return
    P = p.numpy()
    for l in range(L + 1):
        for t in range(T):
            g, w, q = got[l][t], want[l][t], P[l, t]
            if g["target"] != w["target"] and abs(q[g["target"]] - q[w["target"]]) > 1e-5:
                fail(f"{label}: lens[{l}][{t}] target {g['target']}, reference {w['target']}")
                continue
            pt = q[g["target"]]
            note("lens p", abs(g["target_p"] - pt))
            if abs(g["target_p"] - pt) > 1e-4:
                fail(f"{label}: lens[{l}][{t}] target_p {g['target_p']:.6g}, reference {pt:.6g}")
            tie = 1e-5 * pt  # relative: a near-uniform row's p are all close in absolute terms
            lo, hi = 1 + int((q > pt + tie).sum()), int((q >= pt - tie).sum())
            if not lo <= g["target_rank"] <= hi:
                fail(f"{label}: lens[{l}][{t}] target_rank {g['target_rank']}, reference {w['target_rank']}")
            if len({e[0] for e in g["top"]}) != 5:
                fail(f"{label}: lens[{l}][{t}] top repeats an id: {g['top']}")
            for (gid, gp), (wid, _) in zip(g["top"], w["top"]):
                if not 0 <= gid < len(q):
                    fail(f"{label}: lens[{l}][{t}] top id {gid} outside the vocabulary")
                    break
                note("lens p", abs(gp - q[gid]))
                if abs(gp - q[gid]) > 1e-4:
                    fail(f"{label}: lens[{l}][{t}] p of {gid} {gp:.6g}, reference {q[gid]:.6g}")
                if gid != wid and abs(q[gid] - q[wid]) > 1e-5:
                    fail(f"{label}: lens[{l}][{t}] top ids {[e[0] for e in g['top']]}, reference {[e[0] for e in w['top']]}")
                    break


def compare_probs(label, got, ids, p, L):
    """--probs: [T] of null, then {id, p, rank, top [[id, p] × 10]}: row t read at t − 1 of the
    last layer's lens p (the model's own prediction there)."""
    T = len(ids)
    if not isinstance(got, list) or len(got) != T or got[0] is not None \
            or any(not isinstance(r, dict) or len(r.get("top", [])) != min(10, p.shape[-1]) for r in got[1:]):
        fail(f"{label}: probs is not [{T}] of null, then {{id, p, rank, top [[id, p] × 10]}}")
        return
    P = p.numpy()
    for t in range(1, T):
        g, q = got[t], P[L, t - 1]
        if g["id"] != ids[t]:
            fail(f"{label}: probs[{t}] id {g['id']}, the text's {ids[t]}")
            continue
        pt = q[ids[t]]
        note("probs p", abs(g["p"] - pt))
        if abs(g["p"] - pt) > 1e-4:
            fail(f"{label}: probs[{t}] p {g['p']:.6g}, reference {pt:.6g}")
        tie = 1e-5 * pt
        lo, hi = 1 + int((q > pt + tie).sum()), int((q >= pt - tie).sum())
        if not lo <= g["rank"] <= hi:
            fail(f"{label}: probs[{t}] rank {g['rank']}, reference {lo}…{hi}")
        want = reference.ranked(torch.from_numpy(q))[:len(g["top"])]
        for (gid, gp), wid in zip(g["top"], want):
            note("probs p", abs(gp - q[gid]))
            if abs(gp - q[gid]) > 1e-4 or (gid != wid and abs(q[gid] - q[wid]) > 1e-5):
                fail(f"{label}: probs[{t}] top {[e[0] for e in g['top']]}, reference {list(want)}")
                break


def compare_attribution(label, got, want, L, H, T):
    shapes = {"total": [], "embed": [], "bias": [], "heads": [L, H], "mlps": [L], "sources": [L, H, T]}
    if not isinstance(got, dict) or any(not dims(got.get(k), s) for k, s in shapes.items()) \
            or not {"target", "contrast"} <= set(got):
        fail(f"{label}: attribution is not {{target, contrast, total, embed, heads [{L}][{H}], mlps [{L}], bias, sources [{L}][{H}][{T}]}}")
        return
    if (got["target"], got["contrast"]) != (want["target"], want["contrast"]):
        fail(f"{label}: attribution of {got['target']} vs {got['contrast']}, reference {want['target']} vs {want['contrast']}")
        return
    tol = 1e-4 * (1 + abs(want["total"]))
    for k in shapes:
        d = float(np.max(np.abs(np.asarray(got[k], dtype=np.float64) - np.asarray(want[k], dtype=np.float64))))
        note("attribution", d / (1 + abs(want["total"])))
        if d > tol:
            fail(f"{label}: attribution {k} differs by {d:.3g} > {tol:.3g}")
    own = got["embed"] + float(np.sum(got["heads"])) + float(np.sum(got["mlps"])) + got["bias"]
    note("own sum", abs(own - got["total"]) / max(1.0, abs(got["total"])))
    if abs(own - got["total"]) > 1e-4 * max(1.0, abs(got["total"])):
        fail(f"{label}: attnviz's parts sum to {own:.6g}, its total is {got['total']:.6g}")
    d = float(np.max(np.abs(np.sum(got["sources"], axis=-1) - np.asarray(got["heads"]))))
    if d > 1e-4 * max(1.0, abs(got["total"])):
        fail(f"{label}: attnviz's sources do not sum to its heads (by {d:.3g})")


def compare_patching(label, got, want, L, H, T):
    if not isinstance(got, dict) or not dims(got.get("heads"), [L, H]) or not dims(got.get("resid"), [L + 1, T]) \
            or not dims(got.get("clean"), []) or not dims(got.get("corrupted"), []):
        fail(f"{label}: patching is not {{heads [{L}][{H}], resid [{L + 1}][{T}], clean, corrupted}}")
        return
    for k in ("clean", "corrupted"):
        if abs(got[k] - want[k]) > 1e-4 * (1 + abs(want[k])):
            fail(f"{label}: patching {k} {got[k]:.6g}, reference {want[k]:.6g}")
    for k in ("heads", "resid"):
        d = float(np.max(np.abs(np.asarray(got[k], dtype=np.float64) - np.asarray(want[k]))))
        note("patching", d)
        if d > 1e-3:
            fail(f"{label}: patching {k} differs by {d:.3g}")
    if abs(got["resid"][L][T - 1] - 1) > 1e-5:
        fail(f"{label}: patching the final stream at the last position gives {got['resid'][L][T - 1]}, not 1")


def check_case(label, folder, cfg, W, ids, corrupted, a, b, plain_args=None, why_args=None):
    """Runs attnviz (unless --self-check) and compares; why_args / plain_args: the command's
    arguments when given as text (the shipped models), else the '#ID' forms."""
    started = time.time()
    if not self_check:
        why_args = (why_args or ["--ids", csv(ids), "--lens", "--attribute", f"#{a}", "--contrast", f"#{b}",
                                 "--corrupted-ids", csv(corrupted)]) + ["--probs"]
        p = run([folder] + why_args + ["--json"])
        if p is None:
            return
        out = json.loads(p.stdout)
        if why_args[0] == "--text":  # read back what the text became
            attr = out.get("attribution") if isinstance(out.get("attribution"), dict) else {}
            ids, a, b = out.get("ids"), attr.get("target"), attr.get("contrast")
            c = run([folder, "--text", why_args[why_args.index("--corrupted") + 1], "--json"])
            if c is None or not ids or a is None or b is None:
                fail(f"{label}: no ids, attribution target or contrast in the output")
                return
            corrupted = json.loads(c.stdout)["ids"]
            if len(corrupted) != len(ids):
                fail(f"{label}: the corrupted text is {len(corrupted)} tokens, the clean {len(ids)}")
                return
    want = views(cfg, W, ids, corrupted, a, b, a if plain_args else None)
    if self_check:
        check_hooks(label, cfg, W, ids)
        pt = want["patching"]
        changed = [t for t in range(len(ids)) if ids[t] != corrupted[t]]
        print(f"{label}: T {len(ids)}, target {a} vs {b}: total {want['attribution']['total']:.4g}, LD clean "
              f"{pt['clean']:.4g} corrupted {pt['corrupted']:.4g}, heads' largest ratio {np.max(pt['heads']):.3g}, "
              f"resid[0] at the changed positions {[round(pt['resid'][0][t], 3) for t in changed]}, {time.time() - started:.1f} s")
        return
    L, H, T = len(want["attribution"]["heads"]), len(want["attribution"]["heads"][0]), len(ids)
    compare_lens(label, out.get("lens"), want["lens"], want["p"], L, T)
    compare_probs(label, out.get("probs"), ids, want["p"], L)
    compare_attribution(label, out.get("attribution"), want["attribution"], L, H, T)
    compare_patching(label, out.get("patching"), want["patching"], L, H, T)
    if isinstance(out.get("lens"), list) and len(out["lens"]) == L + 1 and len(out["lens"][L]) == T \
            and out["lens"][L][T - 1].get("target") != int(np.argmax(out["logits"])):
        fail(f"{label}: the lens' last target {out['lens'][L][T - 1].get('target')} is not the argmax of its logits")
    # the model's own prediction, without a contrast
    plain_args = plain_args or ["--ids", csv(ids), "--attribute", f"#{want['target']}"]
    p = run([folder] + plain_args + ["--json"])
    if p:
        compare_attribution(label + " (no contrast)", json.loads(p.stdout).get("attribution"), want["plain"], L, H, T)

# [SECTION] Cases: the random checkpoints, the shipped models, bad input ------------------------


def corrupt(ids, V):
    """Other ids at position 1 and T - 2 (position 0 alone when T = 1): the first stays, so the
    runs agree there."""
    positions = sorted({min(1, len(ids) - 1), max(len(ids) - 2, 0)})
    out = list(ids)
    for t in positions:
        out[t] = (ids[t] + 1 + 37 * t) % V
    return out


def pick_pair(cfg, W, ids, corrupted):
    """The ids whose logit rises most and falls most from the corrupted to the clean run."""
    forward = reference.decoder_forward(cfg)
    with torch.no_grad():
        moved = (forward(W, cfg, ids)["logits"] - forward(W, cfg, corrupted)["logits"]).numpy()
    return int(np.argmax(moved)), int(np.argmin(moved))


cases = json.load(open(os.path.join(refs, "cases.json")))
kinds = {c: json.load(open(os.path.join(refs, c, "config.json")))["model_type"] for c in cases}
decoders = [c for c in cases if kinds[c] == "gpt2" or kinds[c] in reference.LLAMA_LIKE]
started = time.time()
for case in decoders:
    folder = os.path.join(refs, case)
    cfg, W = load(folder)
    ids = json.load(open(os.path.join(folder, "expected.json")))["ids"][:18 if kinds[case] == "phi3" else 10]
    corrupted = corrupt(ids, cfg["vocab_size"])
    a, b = pick_pair(cfg, W, ids, corrupted)
    check_case(case, folder, cfg, W, ids, corrupted, a, b)

if shipped:
    for name, (text, target, contrast, corrupted_text, ids, a, b, corrupted) in SHIPPED.items():
        folder = os.path.join(shipped, name)
        cfg, W = load(folder)
        check_case(name, folder, cfg, W, ids, corrupted, a, b,
                   plain_args=["--text", text, "--attribute", target],
                   why_args=["--text", text, "--lens", "--attribute", target, "--contrast", contrast, "--corrupted", corrupted_text])

if not self_check:
    def bad(folder, argv, names, also=()):
        """Exit 2, one line on stderr naming one of `names` and every string of `also`."""
        p = run([folder] + argv, expect=2)
        if p and (not any(n in p.stderr for n in names) or p.stderr.count("\n") != 1 or "unknown option" in p.stderr
                  or any(s.lower() not in p.stderr.lower() for s in also)):
            fail(f"bad input {argv}: expected one line naming {' or '.join(names)} {list(also)}, got {p.stderr!r}")

    first = {k: next(c for c in cases if kinds[c] == k) for k in ("gpt2", "llama", "bert", "marian")}
    gpt2, llama = os.path.join(refs, first["gpt2"]), os.path.join(refs, first["llama"])
    two = run([gpt2, "--text", "Zq", "--json"])  # two tokens in the random gpt2 vocabulary
    if two and len(json.loads(two.stdout)["ids"]) == 2:
        bad(gpt2, ["--text", "Zq Zq", "--attribute", "Zq"], ["--attribute"], ["Z", "q"])
    else:
        fail("'Zq' is not two tokens in " + first["gpt2"])
    bad(llama, ["--ids", "1,2,3", "--attribute", "#5", "--contrast", "#6", "--corrupted-ids", "1,2"], ["--corrupted-ids"])
    bad(llama, ["--ids", "1,2,3", "--attribute", "#5", "--corrupted-ids", "1,2,4"], ["--contrast", "--corrupted-ids"])
    bad(gpt2, ["--text", "Zq Zq", "--attribute", "Z", "--corrupted", "Zq Zq"], ["--contrast", "--corrupted"])
    bad(llama, ["--ids", "1,2,3", "--attribute", "#99999"], ["--attribute"])
    bad(os.path.join(refs, first["bert"]), ["--ids", "2,127,3", "--lens"], ["--lens"], ["LM head"])
    bad(os.path.join(refs, first["bert"]), ["--ids", "2,127,3", "--probs"], ["--probs"], ["LM head"])
    marian = os.path.join(refs, first["marian"])
    exp = json.load(open(os.path.join(marian, "expected.json")))
    bad(marian, ["--source-ids", csv(exp["encoder_ids"]), "--ids", csv(exp["decoder_ids"]), "--lens"], ["--lens"])
    bad(marian, ["--source-ids", csv(exp["encoder_ids"]), "--ids", csv(exp["decoder_ids"]), "--probs"], ["--probs"], ["decoder-only"])
    if shipped:  # a text of two tokens in a trained vocabulary: " the cat" is "Ġthe" "Ġcat"
        bad(os.path.join(shipped, "tiny-lm"), ["--text", "The cat sat", "--attribute", " the cat"], ["--attribute"], ["the", "cat"])

print(("self-check, the reference alone: " if self_check else "largest differences: " +
       ", ".join(f"{k} {v:.2g}" for k, v in worst.items()) + "; ") +
      f"{len(decoders)} decoder cases" + (" + tiny-circuits, tiny-lm" if shipped else "") + f", {time.time() - started:.0f} s")
print(f"{'FAILED: ' + str(len(failures)) if failures else 'all passed'}")
sys.exit(1 if failures else 0)
