#!/usr/bin/env python3
"""`attnviz run` (SPEC.md §5) against the PyTorch references, and its one-line errors.

    /usr/bin/python3 tests/model/test_run.py build/attnviz build/model-refs

For every case folder that tests/model/make_models.py wrote (random-weight checkpoints in the
Hugging Face layout, with expected.json computed by tests/model/reference.py):
  1. `attnviz run CASE --ids … --json` gives the reference's attention (within 1e-4), hidden
     states and last-position logits (within 1e-3 of the largest), and top tokens that are the
     logits' argmax; its output opens as an import (`attnviz import FILE`);
  2. an encoder-decoder case without --ids translates greedily to the reference's tokens;
  3. `--text` runs through the folder's tokenizer (ids in the vocabulary, the family's specials).
Then bad models and bad input, each of which must exit 2 with one line naming the file and the
tensor or field: a missing file, an unknown model_type, a tensor of the wrong shape or dtype, a
missing tensor, an id outside the vocabulary, text longer than the positions.
Prints the largest differences seen; exits 1 on any failure.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

binary, refs = sys.argv[1], sys.argv[2]
failures = []
worst = {"attention": 0.0, "hidden": 0.0, "logits": 0.0}


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


# An empty Hub cache, offline: --list names the built-in models only, and a name that is no
# folder nor built-in model is looked for in that cache (SPEC.md §6; tests/hub/ fetches).
hub_env = dict(os.environ, HF_HUB_CACHE=tempfile.mkdtemp(prefix="attnviz-hub-"), HF_HUB_OFFLINE="1")


def run(args, expect_code=0):
    p = subprocess.run([binary, "run"] + args, capture_output=True, text=True, env=hub_env)
    if p.returncode != expect_code:
        fail(f"run {' '.join(args)}: exit {p.returncode}, expected {expect_code}: {p.stderr.strip()[:300]}")
    return p


def ids_arg(ids):
    return ",".join(str(i) for i in ids)


def compare(case, name, got, want, tol, relative):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        fail(f"{case}: {name}: shape {got.shape}, expected {want.shape}")
        return
    diff = float(np.max(np.abs(got - want))) if got.size else 0.0
    scale = float(np.max(np.abs(want))) if relative and want.size else 1.0
    err = diff / max(scale, 1e-12)
    key = name.split("[")[0] if name in worst else ("attention" if "attention" in name else name)
    worst[key] = max(worst.get(key, 0.0), err)
    if err > tol:
        fail(f"{case}: {name}: max difference {err:.3g} > {tol}")


cases = json.load(open(os.path.join(refs, "cases.json")))
if isinstance(cases, dict):
    cases = cases.get("cases", list(cases))
if not cases:
    fail("no cases in cases.json")
for case in cases:
    folder = os.path.join(refs, case)
    exp = json.load(open(os.path.join(folder, "expected.json")))
    encdec = "encoder_ids" in exp
    args = [folder, "--json", "--top", "3"]
    args += ["--source-ids", ids_arg(exp["encoder_ids"]), "--ids", ids_arg(exp["decoder_ids"])] if encdec else ["--ids", ids_arg(exp["ids"])]
    p = run(args)
    if p.returncode != 0:
        continue
    out = json.loads(p.stdout)
    stacks = ["encoder_attention", "decoder_attention", "cross_attention"] if encdec else ["attention"]
    for s in stacks:
        compare(case, s, out.get(s), exp[s], 1e-4, False)
    compare(case, "hidden", out["hidden"], exp["hidden"], 1e-3, True)
    if "logits" in exp:
        compare(case, "logits", out["logits"], exp["logits"], 1e-3, True)
        if out["top"][0]["id"] != int(np.argmax(out["logits"])):
            fail(f"{case}: top[0] is not the argmax of the logits")
        if abs(sum(t["p"] for t in out["top"]) - 1) < 1e-9 and len(out["logits"]) > 3:
            fail(f"{case}: top probabilities sum to 1 over 3 of {len(out['logits'])} tokens")
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        f.write(p.stdout)
    q = subprocess.run([binary, "import", f.name], capture_output=True, text=True)
    os.unlink(f.name)
    if q.returncode != 0:
        fail(f"{case}: the --json output does not open as an import: {q.stderr.strip()}")
    if encdec and "generated_ids" in exp:
        g = run([folder, "--source-ids", ids_arg(exp["encoder_ids"]), "--max-new", str(exp.get("max_new", 32)), "--json"])
        if g.returncode == 0 and json.loads(g.stdout)["decoder_ids"] != exp["generated_ids"]:
            fail(f"{case}: translation {json.loads(g.stdout)['decoder_ids']}, reference {exp['generated_ids']}")
    t = run([folder] + (["--source", "the rain", "--text", "it"] if encdec else ["--text", "the cat sat"]) + ["--json"])
    if t.returncode == 0:
        o = json.loads(t.stdout)
        ids = o["encoder_ids"] if encdec else o["ids"]
        if not ids or max(ids) >= json.load(open(os.path.join(folder, "config.json")))["vocab_size"]:
            fail(f"{case}: --text gave ids {ids}")
        if os.path.exists(os.path.join(folder, "tokenizer.json")) and "post_processor" in json.load(open(os.path.join(folder, "tokenizer.json"))) \
                and json.load(open(os.path.join(folder, "tokenizer.json")))["post_processor"] and ids[0] != 1:
            fail(f"{case}: --text: tokenizer.json's TemplateProcessing puts the BOS (1) first, got {ids[:3]}")

print("largest differences: " + ", ".join(f"{k} {v:.2g}" for k, v in worst.items()) + f" over {len(cases)} cases")

# --- bad models and bad input: exit 2, one line, naming the file and the field or tensor -----
work = tempfile.mkdtemp()


def copy_case(name):
    dst = os.path.join(work, name)
    shutil.copytree(os.path.join(refs, gpt2), dst)
    return dst


# read_tensors(path) -> {name: [dtype, shape, bytes]} in file order; write_tensors(path, that)
from transformers_oracle import read_tensors, write_tensors  # noqa: E402  (tests/model/, beside this file)


def bad(name, args, *must_contain):
    p = run(args, expect_code=2)
    lines = p.stderr.strip().splitlines()
    if p.returncode == 2 and (len(lines) != 1 or not all(m in lines[0] for m in must_contain)):
        fail(f"{name}: expected one line with {must_contain}, got {p.stderr.strip()!r}")
    elif p.returncode == 2:
        print(f"  {name}: {lines[0]}")


def f32_gpt2(case):
    if json.load(open(os.path.join(refs, case, "config.json")))["model_type"] != "gpt2":
        return False
    tensors = read_tensors(os.path.join(refs, case, "model.safetensors"))
    return all(t[0] == "F32" for k, t in tensors.items() if k.endswith("weight"))


gpt2 = next((c for c in cases if f32_gpt2(c)), None)
if gpt2 is None:
    fail("no F32 gpt2 case for the bad-input tests")
else:
    exp = json.load(open(os.path.join(refs, gpt2, "expected.json")))
    cfg = json.load(open(os.path.join(refs, gpt2, "config.json")))
    ids = ids_arg(exp["ids"])
    d = copy_case("no-config")
    os.remove(os.path.join(d, "config.json"))
    bad("missing config.json", [d, "--ids", ids], "no-config/config.json", "missing")
    d = copy_case("no-weights")
    os.remove(os.path.join(d, "model.safetensors"))
    bad("missing model.safetensors", [d, "--ids", ids], "no-weights/model.safetensors", "missing")
    bad("no such folder", [os.path.join(work, "nowhere"), "--ids", ids], "nowhere")
    d = copy_case("t5")
    json.dump(dict(cfg, model_type="t5"), open(os.path.join(d, "config.json"), "w"))
    bad("unknown model_type", [d, "--ids", ids], "t5/config.json", "model_type", '"t5" is not one of', "llama", "qwen3", "phi3")
    d = copy_case("no-heads")
    c = dict(cfg)
    del c["n_head"]
    json.dump(c, open(os.path.join(d, "config.json"), "w"))
    bad("missing n_head", [d, "--ids", ids], "no-heads/config.json", "n_head")
    d = copy_case("shape")
    st = os.path.join(d, "model.safetensors")
    tensors = read_tensors(st)
    name = next(k for k in tensors if k.endswith("h.1.attn.c_attn.weight"))
    dtype, shape, data = tensors[name]
    tensors[name] = [dtype, [shape[0], shape[1] // 3], data[: len(data) // 3]]
    write_tensors(st, tensors)
    bad("wrong shape", [d, "--ids", ids], "shape/model.safetensors", "h.1.attn.c_attn.weight", "expected shape",
        f"[{shape[0]}, {shape[1]}]", f"[{shape[0]}, {shape[1] // 3}]")
    d = copy_case("dtype")
    st = os.path.join(d, "model.safetensors")
    tensors = read_tensors(st)
    name = next(k for k in tensors if k.endswith("wte.weight"))
    tensors[name][0] = "I32"
    write_tensors(st, tensors)
    bad("wrong dtype", [d, "--ids", ids], "dtype/model.safetensors", "wte.weight", "I32")
    d = copy_case("missing-tensor")
    st = os.path.join(d, "model.safetensors")
    tensors = read_tensors(st)
    del tensors[next(k for k in tensors if k.endswith("h.0.ln_1.weight"))]
    write_tensors(st, tensors)
    bad("missing tensor", [d, "--ids", ids], "missing-tensor/model.safetensors", "h.0.ln_1.weight", "missing")
    d = copy_case("truncated")
    data = open(os.path.join(d, "model.safetensors"), "rb").read()
    open(os.path.join(d, "model.safetensors"), "wb").write(data[: len(data) // 2])
    bad("truncated checkpoint", [d, "--ids", ids], "truncated/model.safetensors")
    folder = os.path.join(refs, gpt2)
    bad("id outside the vocabulary", [folder, "--ids", f"1,{cfg['vocab_size']}"], "config.json", "vocab_size", str(cfg["vocab_size"]))
    bad("negative id", [folder, "--ids", "1,-3"], "config.json", "vocab_size")
    bad("ids too long", [folder, "--ids", ",".join(["1"] * (cfg["n_positions"] + 1))], "config.json", "n_positions")
    bad("text too long", [folder, "--text", "a b " * (cfg["n_positions"] + 1)], "config.json", "n_positions")
    bad("bad ids", [folder, "--ids", "1,x"], "--ids")
    bad("source for gpt2", [folder, "--source", "x"], "--source")
    bad("no input", [folder], "--text")
    p = subprocess.run([os.fsencode(binary), b"run", os.fsencode(folder), b"--text", b"caf\xe9 au lait"], capture_output=True)
    if p.returncode != 2 or len(p.stderr.strip().splitlines()) != 1 or b"--text" not in p.stderr:
        fail(f"text that is not UTF-8: exit {p.returncode}, {p.stderr!r}")
    else:
        print(f"  text that is not UTF-8: {p.stderr.decode().strip()}")

# --json's measured heads (SPEC §5): every head of the one stack, the five scores, the tags those
# clearing their thresholds give.
THRESHOLDS = {"previous_token": 0.5, "induction": 0.4, "sink": 0.3, "delimiter": 0.5, "duplicate_token": 0.4}
for case in cases:
    cfg = json.load(open(os.path.join(refs, case, "config.json")))
    if cfg["model_type"] == "marian":
        continue
    exp = json.load(open(os.path.join(refs, case, "expected.json")))
    out = json.loads(run([os.path.join(refs, case), "--ids", ids_arg(exp["ids"]), "--json"]).stdout or "{}")
    L, H = len(exp["attention"]), len(exp["attention"][0])
    heads = out.get("heads", [])
    ok = [(h["layer"], h["head"]) for h in heads] == [(l + 1, h + 1) for l in range(L) for h in range(H)]
    for h in heads:
        ok = ok and set(h["scores"]) == set(THRESHOLDS) and all(0 <= v <= 1 + 1e-6 for v in h["scores"].values())
        want = [k.replace("_", "-") for k in THRESHOLDS if h["scores"][k] >= THRESHOLDS[k]]
        ok = ok and sorted(h["tags"]) == sorted(want) and h["stack"] == "attention"
    if not ok:
        fail(f"{case}: --json heads: {heads[:2]}")
print(f"ok    --json heads: scores and tags on every non-marian case")

# --maps and --pool (SPEC §5, issue 47): every printed map, exact or pooled, is the reference's
# map or the maximum of the blocks it covers (block a: rows ⌊a·n/R⌋ … ⌊(a+1)·n/R⌋ − 1); named maps
# come as "maps"; past 512 tokens only those, from a run that kept no map, with the memory it kept.
def pooled(m, size):
    m = np.asarray(m, dtype=np.float64)
    R, C = min(size, m.shape[0]), min(size, m.shape[1])
    re = [m.shape[0] * a // R for a in range(R + 1)]
    ce = [m.shape[1] * b // C for b in range(C + 1)]
    return [[m[re[a]:re[a + 1], ce[b]:ce[b + 1]].max() for b in range(C)] for a in range(R)]


for case in cases:
    folder = os.path.join(refs, case)
    exp = json.load(open(os.path.join(folder, "expected.json")))
    encdec = "encoder_ids" in exp
    args = [folder, "--json"] + (["--source-ids", ids_arg(exp["encoder_ids"]), "--ids", ids_arg(exp["decoder_ids"])]
                                 if encdec else ["--ids", ids_arg(exp["ids"])])
    stacks = ["encoder_attention", "decoder_attention", "cross_attention"] if encdec else ["attention"]
    out = json.loads(run(args + ["--maps", "all", "--pool", "3"]).stdout or "{}")
    for s in stacks:
        compare(case, f"{s} --pool 3", out.get(s), [[pooled(m, 3) for m in layer] for layer in exp[s]], 1e-4, False)
    if out.get("pool", {}).get("reduce") != "max" or "memory" not in out:
        fail(f"{case}: --pool 3: pool {out.get('pool')}, memory {out.get('memory')}")
    L, H = len(exp[stacks[-1]]), len(exp[stacks[-1]][0])
    named = f"{stacks[-1]}:{L}:{H}" if encdec else f"{L}:{H},1:1"
    out = json.loads(run(args + ["--maps", named]).stdout or "{}")
    maps = out.get("maps", [])
    if any(s in out for s in stacks) or len(maps) != (1 if encdec or (L, H) == (1, 1) else 2):  # a head named twice: once
        fail(f"{case}: --maps {named}: keys {sorted(out)}, {len(maps)} maps")
    else:
        compare(case, f"--maps {named}", maps[0]["weights"], exp[stacks[-1]][L - 1][H - 1], 1e-4, False)
        if (maps[0]["stack"], maps[0]["layer"], maps[0]["head"]) != (stacks[-1], L, H):
            fail(f"{case}: --maps {named}: the first map is {maps[0]['stack']} {maps[0]['layer']}:{maps[0]['head']}")
print("ok    --maps all --pool 3 and named maps on every case")
llama = next((c for c in cases if json.load(open(os.path.join(refs, c, "config.json")))["model_type"] in ("llama", "qwen2", "mistral")), None)
if llama is None:
    fail("no Llama-like case for a long text")
else:
    folder = os.path.join(refs, llama)
    exp = json.load(open(os.path.join(folder, "expected.json")))
    long_ids = (exp["ids"] * (700 // len(exp["ids"]) + 1))[:700]
    p = run([folder, "--ids", ids_arg(long_ids), "--json", "--maps", "1:1", "--pool", "64"])
    out = json.loads(p.stdout or "{}")
    cfg = json.load(open(os.path.join(folder, "config.json")))
    every_map = cfg["num_hidden_layers"] * cfg["num_attention_heads"] * 700 * 700 * 4
    w = np.asarray(out.get("maps", [{}])[0].get("weights", []))
    if "attention" in out or w.shape != (64, 64) or not out.get("memory", {}).get("kept_bytes", every_map) < every_map / 20:
        fail(f"{llama}: 700 tokens: keys {sorted(out)}, map {w.shape}, memory {out.get('memory')} (every map: {every_map})")
    elif w[0, 63] != 0:
        fail(f"{llama}: 700 tokens: the causal map pooled has weight above the diagonal's blocks")
    else:
        print(f"ok    700 tokens, maps on demand: kept {out['memory']['kept_bytes']} bytes (every map: {every_map})")
    p = run([folder, "--ids", ids_arg(long_ids)])
    if "maps: on demand" not in p.stdout:
        fail(f"{llama}: 700 tokens: the summary does not say the maps are on demand: {p.stdout[:300]!r}")
    if gpt2 is not None:
        bad("--maps past the layers", [os.path.join(refs, gpt2), "--ids", "1,2", "--json", "--maps", "99:1"], "--maps", "99")
    bad("--maps malformed", [folder, "--ids", "1,2", "--maps", "x"], "--maps", "LAYER:HEAD")
    bad("--pool 0", [folder, "--ids", "1,2", "--pool", "0"], "--pool", "1 to 65536")

# The Llama-like families' own bad input: shards, rope_scaling, windows.
shards = next((c for c in cases if os.path.exists(os.path.join(refs, c, "model.safetensors.index.json"))), None)
if shards is None:
    fail("no sharded case for the bad-input tests")
else:
    ids = ids_arg(json.load(open(os.path.join(refs, shards, "expected.json")))["ids"])

    def copy_shards(name):
        dst = os.path.join(work, name)
        shutil.copytree(os.path.join(refs, shards), dst)
        return dst
    d = copy_shards("shard-missing")
    index = json.load(open(os.path.join(d, "model.safetensors.index.json")))
    last = sorted(set(index["weight_map"].values()))[-1]
    os.remove(os.path.join(d, last))
    bad("a shard missing", [d, "--ids", ids], "shard-missing/model.safetensors.index.json", "weight_map.", last, "missing")
    d = copy_shards("index-extra")
    index["weight_map"]["model.layers.0.self_attn.rotary_emb.inv_freq"] = last
    json.dump(index, open(os.path.join(d, "model.safetensors.index.json"), "w"))
    bad("an index naming a missing tensor", [d, "--ids", ids], f"index-extra/{last}", "model.layers.0.self_attn.rotary_emb.inv_freq", "missing")
    cfg = json.load(open(os.path.join(refs, shards, "config.json")))
    for name, change, must in (
            ("unsupported rope_scaling", {"rope_scaling": {"rope_type": "mrope", "factor": 2.0}}, ("rope_scaling.rope_type", "mrope")),
            ("rope_scaling without factor", {"rope_scaling": {"rope_type": "linear"}}, ("rope_scaling.factor", "missing")),
            ("kv heads not dividing", {"num_key_value_heads": 3}, ("num_key_value_heads",)),
            ("bad layer_types", {"model_type": "mistral", "sliding_window": 4, "layer_types": ["sliding_attention"]},
             ("layer_types", "2"))):
        d = copy_shards(name.replace(" ", "-"))
        json.dump(dict(cfg, **change), open(os.path.join(d, "config.json"), "w"))
        bad(name, [d, "--ids", ids], name.replace(" ", "-") + "/config.json", *must)
    d = copy_case("no-merges")
    os.remove(os.path.join(d, "merges.txt"))
    if not os.path.exists(os.path.join(d, "tokenizer.json")):
        bad("missing merges.txt", [d, "--ids", ids], "no-merges/merges.txt", "missing")

# Built-in models (SPEC.md §5): --list names every folder of models/, and a name runs the files
# compiled into the program exactly as the folder runs.
models = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models")
lines = [line.split("\t") for line in run(["--list"]).stdout.splitlines()]
names = sorted(d for d in os.listdir(models) if os.path.isdir(os.path.join(models, d)))
if sorted(parts[0] for parts in lines) != names or any(len(parts) != 3 for parts in lines):
    fail(f"--list: {lines}, models/ has {names}")
for name, model_type, _ in (parts for parts in lines if len(parts) == 3):
    if json.load(open(os.path.join(models, name, "config.json")))["model_type"] != model_type:
        fail(f"--list: {name} is not {model_type}")
    ids = (["--source-ids", "4,5,6", "--max-new", "4"] if model_type == "marian" else
           ["--image", os.path.join(models, name, "example-0.png")] if model_type == "vit" else ["--ids", "1,2,3"])
    by_name = run([name] + ids + ["--json"])
    by_folder = run([os.path.join(models, name)] + ids + ["--json"])
    if by_name.returncode or by_name.stdout != by_folder.stdout:
        fail(f"{name}: the built-in model does not run as models/{name} does")
    else:
        print(f"ok    built-in {name} ({model_type}) runs as models/{name}")
bad("no such built-in model", ["no-such-model", "--ids", "1"], "no-such-model", "attnviz run --list", "not in the cache")

# --threads: the same output, byte for byte, on 1, 2, 3 and 8 threads; 0 is refused. (These small
# models' products stay on one thread, below kernels::kSplitWork: the native suite's "threads:"
# cases split every product of every reference case.)
for name, args in (("tiny-lm", ["--ids", "1,2,3,4,5,6,7,8", "--generate", "3"]),
                   ("tiny-translator", ["--source-ids", "4,5,6", "--max-new", "4"])):
    outs = {n: run([name] + args + ["--json", "--threads", str(n)]).stdout for n in (1, 2, 3, 8)}
    if len(set(outs.values())) != 1 or not outs[1]:
        fail(f"{name}: --threads 1, 2, 3 and 8 give different output")
    else:
        print(f"ok    {name}: --threads 1, 2, 3 and 8 give the same output")
bad("--threads 0", ["tiny-lm", "--ids", "1", "--threads", "0"], "--threads", "from 1 to 1024")
shutil.rmtree(work)
shutil.rmtree(hub_env["HF_HUB_CACHE"])
print(f"{len(failures)} failures" if failures else "run: ok")
sys.exit(1 if failures else 0)
