#!/usr/bin/env python3
"""`attnviz run MODEL --image FILE --json` on vision models against the PyTorch reference, and
its one-line errors.

    /usr/bin/python3 tests/model/test_vision.py build/attnviz build/vision-refs

For every case folder that tests/model/make_vision_models.py wrote (random-weight ViT, CLIP and
SigLIP checkpoints in the Hugging Face layout — ViTModel, ViTForImageClassification,
CLIPVisionModel, CLIPModel, SiglipVisionModel with and without its pooling head —, a picture,
expected.json computed by tests/model/reference.py's vit_forward, clip_vision_forward or
siglip_vision_forward on the pixel values tests/model/image_reference.py's process() gives):
  `attnviz run CASE --image CASE/image.png --json` gives expected.json's model_type (config.json's),
  the tokens ("[CLS]" where the model has one — ViT, CLIP; not SigLIP —, then "p{row},{col}" in
  row order), "patches" {rows, cols, size, first}, the attention [L][H][T][T] within 1e-5, the
  hidden states [T][d] (the last_hidden_state: ViT after its final layernorm, CLIP before
  post_layernorm, SigLIP after it) and the classifier's logits within 1e-4 of the largest |value|
  (logits only where expected.json has them: ViTForImageClassification; none printed elsewhere),
  and its output opens as an import (`attnviz import FILE`).
The vision-language cases (Idefics3 split into 2 x 3 tiles, SmolVLM not split, Idefics3 with
<image> in the middle of the text; expected.json by tests/model/reference.py's idefics3_forward;
and Gemma 3 with images, Gemma3ForConditionalGeneration: "gemma3" in transformers 5's layout and
config, float32, the picture first, "gemma3-legacy" in the layout and config the Hub's
google/gemma-3-*-it files have, bfloat16, <start_of_image> mid-text; expected.json by
reference.py's gemma3_forward: one view, its 8 x 8 patches pooled to 16 rows, each picture's
rows attending to one another both ways past the causal limit and the sliding window; and
Qwen2.5-VL, Qwen2_5_VLForConditionalGeneration: "qwen2_5_vl" in transformers 5's layout and
config, float32, a 45 x 37 picture smart-resized to 48 x 40 (10 x 12 patches, 30 merged tokens)
before the text, "qwen2_5_vl-legacy" in the layout and config the Hub's Qwen2.5-VL-3B-Instruct
files have, bfloat16, 70 x 52 over max_pixels to 48 x 32 (8 x 12 patches, 24 tokens), its
<|image_pad|> mid-text; expected.json by reference.py's qwen2_5_vl_forward: the tower's windowed
attention in the picture's row order, M-RoPE positions from get_rope_index):
  `attnviz run CASE --image CASE/image.png --text TEXT --json` gives the ids and tokens of the
  prompt as the processor expands it and the tokenizer encodes it (exactly), "image_tokens" (the
  <image> / <image_soft_token> / <|image_pad|> positions from 0), "tiles" {rows, cols} (0, 0 not
  split; Gemma 3 and Qwen2.5-VL never split), "patches" (one view's grid, first 0), Qwen2.5-VL's
  "positions" [3][T] (time, height, width; exactly), the text model's attention [L][H][T][T]
  and each view's vision attention [view][L][H][P][P] (tiles row by row, then the global view)
  within 1e-5, the hidden states after the final norm and the last position's logits within 1e-4
  of the largest |value|; `--generate 2` greedy from there, its first token the logits' argmax.
Then ViT with two patches hidden (`--hide-token`): the reference's forward with those keys masked,
their columns 0.
Then bad input, each of which must exit 2 with nothing on stdout and one line on stderr naming the
file and the field: a missing picture, a text file as the picture (named .txt, and named .png), a
PNG whose header states 40 000 × 40 000 pixels and one of 0 × 0 (refused before decoding), a
patch_size not dividing image_size, a config.json without patch_size (transformers' default 16
does not fit this checkpoint's tensors), a missing preprocessor_config.json, --image given to a
text model (the built-in tiny-lm), --text given to a vision model, a processor with resample 0
(nearest: refused), a CLIPModel's config.json without vision_config (CLIPConfig would make a
default 768-wide tower that the file's tensors do not fit); for Idefics3: a config.json without
vision_config, a --text with two <image> (one picture), a tokenizer.json without the <image> token;
for Gemma 3: mm_tokens_per_image 15 (not a square: the projector pools to a square grid), a
tokenizer.json without the <start_of_image> token; and for Qwen2.5-VL: an mrope_section [2, 1, 2]
(not summing to head_dim / 2), a preprocessor_config.json with patch_size 8 (the tower's are 4),
a tokenizer.json without the <|image_pad|> token.
Prints one line per case and the largest differences seen; exits 1 on any failure.
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

import numpy as np

if len(sys.argv) != 3:
    sys.exit(__doc__)
binary, refs = sys.argv[1], sys.argv[2]
failures = []
worst = {"attention": 0.0, "hidden": 0.0, "logits": 0.0, "vision_attention": 0.0}
TOLERANCES = {"attention": (1e-5, False), "hidden": (1e-4, True), "logits": (1e-4, True),
              "vision_attention": (1e-5, False)}  # (tol, relative)


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


# An empty Hub cache, offline, as tests/model/test_run.py: a built-in model's name runs its files.
hub_env = dict(os.environ, HF_HUB_CACHE=tempfile.mkdtemp(prefix="attnviz-hub-"), HF_HUB_OFFLINE="1")


def run(args, expect_code=0):
    p = subprocess.run([binary, "run"] + args, capture_output=True, text=True, env=hub_env)
    if p.returncode != expect_code:
        fail(f"run {' '.join(args)}: exit {p.returncode}, expected {expect_code}: {p.stderr.strip()[:300]}")
    return p


def compare(case, name, got, want):
    """-> the error (absolute, or relative to the largest |want|), recorded in worst; fails past
    the tolerance, on a shape mismatch and on anything not finite."""
    tol, relative = TOLERANCES[name]
    try:
        got = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError):
        fail(f"{case}: {name}: not an array of numbers")
        return None
    want = np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        fail(f"{case}: {name}: shape {got.shape}, expected {want.shape}")
        return None
    diff = float(np.max(np.abs(got - want))) if got.size else 0.0
    scale = float(np.max(np.abs(want))) if relative and want.size else 1.0
    err = diff / max(scale, 1e-12)
    if not err <= tol:  # NaN fails too
        fail(f"{case}: {name}: max difference {err:.3g} > {tol}")
    if err == err:
        worst[name] = max(worst[name], err)
    return err


cases = json.load(open(os.path.join(refs, "cases.json")))
if not cases:
    fail("no cases in cases.json")
for case in cases:
    folder = os.path.join(refs, case)
    exp = json.load(open(os.path.join(folder, "expected.json")))
    vlm = "vision_attention" in exp  # Idefics3 / SmolVLM / Gemma 3: a text with the picture
    p = run([folder, "--image", os.path.join(folder, exp["image"])] + (["--text", exp["text"]] if vlm else []) + ["--json"])
    if p.returncode != 0:
        continue
    try:
        out = json.loads(p.stdout)
    except json.JSONDecodeError as e:
        fail(f"{case}: --json output is not JSON: {e}")
        continue
    bad_before = len(failures)
    if out.get("model_type") != exp["model_type"]:
        fail(f"{case}: model_type {out.get('model_type')!r}, expected {exp['model_type']!r}")
    tokens = out.get("tokens")
    if tokens != exp["tokens"]:
        if not isinstance(tokens, list):
            fail(f"{case}: tokens {tokens!r}")
        else:
            at = next((i for i, (a, b) in enumerate(zip(tokens, exp["tokens"])) if a != b), min(len(tokens), len(exp["tokens"])))
            fail(f"{case}: {len(tokens)} tokens, expected {len(exp['tokens'])}; token {at}: "
                 f"{tokens[at] if at < len(tokens) else None!r}, expected {exp['tokens'][at] if at < len(exp['tokens']) else None!r}")
    patches = out.get("patches")
    if not isinstance(patches, dict) or any(patches.get(k) != v for k, v in exp["patches"].items()):
        fail(f"{case}: patches {patches}, expected {exp['patches']}")
    errors = {name: compare(case, name, out.get(name), exp[name]) for name in ("attention", "hidden")}
    if vlm:
        for key in ("ids", "image_tokens", "tiles") + (("positions",) if "positions" in exp else ()):
            if out.get(key) != exp[key]:
                fail(f"{case}: {key} {str(out.get(key))[:200]}, expected {str(exp[key])[:200]}")
        errors["vision_attention"] = compare(case, "vision_attention", out.get("vision_attention"), exp["vision_attention"])
    if "logits" in exp:
        errors["logits"] = compare(case, "logits", out.get("logits"), exp["logits"])
        top = out.get("top")
        if isinstance(top, list) and top and isinstance(top[0], dict) and "id" in top[0] \
                and top[0]["id"] != int(np.argmax(exp["logits"])):
            fail(f"{case}: top[0] is label {top[0]['id']}, the logits' argmax is {int(np.argmax(exp['logits']))}")
    elif out.get("logits"):
        fail(f"{case}: a model without a classifier printed logits {out['logits'][:5]}")
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        f.write(p.stdout)
    q = subprocess.run([binary, "import", f.name], capture_output=True, text=True)
    os.unlink(f.name)
    if q.returncode != 0:
        fail(f"{case}: the --json output does not open as an import: {q.stderr.strip()[:300]}")
    if vlm:  # generation after the picture (the KV cache feeds the image rows in order): greedy, its
        # first token the reference logits' argmax; the whole sequence's maps begin with the prompt's
        g = run([folder, "--image", os.path.join(folder, exp["image"]), "--text", exp["text"], "--generate", "2", "--json"])
        if g.returncode == 0:
            gen = json.loads(g.stdout)
            T = len(exp["ids"])
            if len(gen.get("generated_ids", [])) < 1 or gen["generated_ids"][0] != int(np.argmax(exp["logits"])):
                fail(f"{case}: --generate: {gen.get('generated_ids')}, the first should be the logits' argmax {int(np.argmax(exp['logits']))}")
            elif gen["ids"][:T] != exp["ids"]:
                fail(f"{case}: --generate: the sequence does not start with the prompt's ids")
            else:
                errors["generate"] = compare(case, "attention", [[np.array(h)[:T, :T].tolist() for h in layer] for layer in gen["attention"]],
                                             exp["attention"])
    if len(failures) == bad_before:
        shown = ", ".join(f"{k} {v:.2g}" for k, v in errors.items() if v is not None)
        views = f", {len(exp['vision_attention'])} views ({exp['tiles']['rows']}x{exp['tiles']['cols']} tiles)" if vlm else ""
        print(f"ok    {case}: {len(exp['tokens'])} tokens ({exp['patches']['rows']}x{exp['patches']['cols']} patches{views}), {shown}")

print("largest differences: " + ", ".join(f"{k} {v:.2g}" for k, v in worst.items()) + f" over {len(cases)} cases")

# --- hidden patches (--hide-token, the Picture view's right-click): the reference's forward with
# those keys masked for every query ------------------------------------------------------------
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference  # noqa: E402
import torch  # noqa: E402
from test_reference import read_checkpoint  # noqa: E402

def case_of(model_type):
    """The first case of that model_type, or None."""
    return next((c for c in cases if json.load(open(os.path.join(refs, c, "config.json"))).get("model_type") == model_type), None)


def case_files(case, prefix):
    """(folder, expected.json, config.json, its tensors in float64 without `prefix`)."""
    folder = os.path.join(refs, case)
    W = {(n[len(prefix):] if n.startswith(prefix) else n): t.double() for n, t in read_checkpoint(folder).items()}
    return folder, json.load(open(os.path.join(folder, "expected.json"))), json.load(open(os.path.join(folder, "config.json"))), W


vit_case = case_of("vit")
if vit_case is None:
    fail("no ViT case for the hidden patches")
else:
    folder, exp, cfg, W = case_files(vit_case, "vit.")
    hidden = (exp["patches"]["first"] + 1, exp["patches"]["first"] + 6)  # from 0: two patches
    with torch.no_grad():
        want = reference.vit_forward(W, cfg, exp["pixel_values"], reference.Edits(hidden=hidden))
    p = run([folder, "--image", os.path.join(folder, exp["image"]), "--hide-token", ",".join(str(j + 1) for j in hidden), "--json"])
    if p.returncode == 0:
        out = json.loads(p.stdout)
        err = compare(f"{vit_case} hiding patches {hidden}", "attention", out.get("attention"), want["attention"].numpy())
        column = float(np.max(np.asarray(out["attention"])[..., list(hidden)]))
        if column != 0.0:
            fail(f"{vit_case}: hidden patches {hidden} still get weight {column}")
        elif err is not None:
            print(f"ok    {vit_case} with patches {hidden} hidden: attention {err:.2g}, their columns 0")

# --- Gemma 3 with a picture and a text past 512 tokens: the maps on demand (--maps) still see the
# picture's tokens both ways, as the reference's forward over the whole sequence ---------------
g3_case = case_of("gemma3")
if g3_case is None:
    fail("no Gemma 3 case for the long text")
else:
    folder, exp, cfg, W = case_files(g3_case, "model.")
    p = run([folder, "--image", os.path.join(folder, exp["image"]), "--text", "the cat sat on the mat. " * 60, "--maps", "1:2,2:1", "--json"])
    if p.returncode == 0:
        out = json.loads(p.stdout)
        with torch.no_grad():
            want = reference.gemma3_forward(W, cfg, out["ids"], torch.tensor(exp["pixel_values"], dtype=torch.float64))["attention"]
        errs = [compare(f"{g3_case} on {len(out['ids'])} tokens, map {m['layer']}:{m['head']}", "attention", m["weights"],
                        want[m["layer"] - 1][m["head"] - 1].numpy()) for m in out.get("maps", [])]
        if len(out["ids"]) <= 512 or len(errs) != 2:
            fail(f"{g3_case}: a long text of {len(out['ids'])} tokens printed {len(errs)} maps, expected 2 past 512 tokens")
        elif None not in errs:
            print(f"ok    {g3_case} on {len(out['ids'])} tokens (maps on demand): maps 1:2 and 2:1 within {max(errs):.2g}")


# --- bad input: exit 2, nothing on stdout, one line on stderr naming the file and the field -------
work = tempfile.mkdtemp(prefix="attnviz-vision-")


def bad(name, args, *must_contain):
    p = run(args, expect_code=2)
    lines = p.stderr.strip().splitlines()
    if p.returncode != 2:
        return
    if p.stdout.strip():
        fail(f"{name}: printed on stdout: {p.stdout.strip()[:200]!r}")
    elif len(lines) != 1 or not all(m in lines[0] for m in must_contain):
        fail(f"{name}: expected one line with {must_contain}, got {p.stderr.strip()!r}")
    else:
        print(f"  {name}: {lines[0]}")


vit = next((c for c in cases if json.load(open(os.path.join(refs, c, "expected.json"))).get("model_type") == "vit"
            and "logits" in json.load(open(os.path.join(refs, c, "expected.json")))), None)
if vit is None:
    fail("no ViTForImageClassification case for the bad-input tests")
else:
    folder = os.path.join(refs, vit)
    image = os.path.join(folder, json.load(open(os.path.join(folder, "expected.json")))["image"])

    def copy_case(name):
        dst = os.path.join(work, name)
        shutil.copytree(folder, dst)
        return dst

    bad("missing picture", [folder, "--image", os.path.join(work, "missing.png"), "--json"], "missing.png")
    notes = os.path.join(work, "notes.txt")
    with open(notes, "w") as f:
        f.write("This is a text file, not a picture.\n" * 4)
    bad("text file as the picture", [folder, "--image", notes, "--json"], "notes.txt")
    named_png = os.path.join(work, "not-a-picture.png")
    shutil.copy(notes, named_png)
    bad("text file named .png", [folder, "--image", named_png, "--json"], "not-a-picture.png")
    # A PNG whose header states 40 000 × 40 000 pixels (4.8 GB decoded), and one of 0 × 0: refused
    # from the header, before decoding
    def png_header(w, h):
        chunk = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
        return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(b"\0" * 16)) + chunk(b"IEND", b""))
    for name, (w, h), words in (("huge.png", (40000, 40000), "40000 × 40000 pixels: more than 100 million"),
                                ("empty.png", (0, 0), "0 × 0 pixels: an empty picture")):
        with open(os.path.join(work, name), "wb") as f:
            f.write(png_header(w, h))
        bad(f"a {w} × {h} PNG", [folder, "--image", os.path.join(work, name), "--json"], name, words)

    cfg = json.load(open(os.path.join(folder, "config.json")))
    d = copy_case("odd-patch-size")
    json.dump(dict(cfg, patch_size=5), open(os.path.join(d, "config.json"), "w"), indent=2)
    bad("patch_size not dividing image_size", [d, "--image", image, "--json"], "odd-patch-size/config.json", "patch_size")
    # No patch_size: ViTConfig's default (16) where attnviz takes it, and then the checkpoint's
    # tensors (this case's patches are 8 pixels) do not fit; or refused as missing. Either way
    # one line naming a file of the folder.
    d = copy_case("no-patch-size")
    json.dump({k: v for k, v in cfg.items() if k != "patch_size"}, open(os.path.join(d, "config.json"), "w"), indent=2)
    bad("config.json without patch_size", [d, "--image", image, "--json"], "no-patch-size/")
    d = copy_case("no-processor")
    os.remove(os.path.join(d, "preprocessor_config.json"))
    bad("missing preprocessor_config.json", [d, "--image", image, "--json"], "no-processor/preprocessor_config.json")

    bad("--image given to a text model", ["tiny-lm", "--image", image, "--json"], "--image")
    bad("--text given to a vision model", [folder, "--text", "a cat on a mat", "--json"], "vision model", "--image")

    d = copy_case("nearest")
    prep = json.load(open(os.path.join(d, "preprocessor_config.json")))
    prep["resample"] = 0
    json.dump(prep, open(os.path.join(d, "preprocessor_config.json"), "w"), indent=2)
    bad("resample 0 (nearest)", [d, "--image", image, "--json"], "nearest/preprocessor_config.json", "resample")

clip = case_of("clip")
if clip is None:
    fail("no CLIPModel case (model_type \"clip\") for the missing vision_config test")
else:
    d = os.path.join(work, "no-vision-config")
    shutil.copytree(os.path.join(refs, clip), d)
    with open(os.path.join(d, "config.json")) as f:
        cfg = json.load(f)
    del cfg["vision_config"]
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    bad("CLIPModel without vision_config", [d, "--image", os.path.join(d, "image.png"), "--json"],
        "no-vision-config/config.json", "vision_config")

def vlm_copy(case, name):
    """A copy of the case's folder named `name` to spoil, and its text."""
    dst = os.path.join(work, name)
    shutil.copytree(os.path.join(refs, case), dst)
    return dst, json.load(open(os.path.join(dst, "expected.json")))["text"]


def vlm_spoil(case, name, file, change):
    """A copy with one of its JSON files (`file`: config.json, tokenizer.json, preprocessor_config.json)
    changed by change(dict); -> (folder, text)."""
    d, text = vlm_copy(case, name)
    data = json.load(open(os.path.join(d, file)))
    change(data)
    json.dump(data, open(os.path.join(d, file), "w"), indent=2)
    return d, text


def without_token(content):
    return lambda tok: tok.update(added_tokens=[t for t in tok["added_tokens"] if t["content"] != content])


idefics3 = case_of("idefics3")
if idefics3 is None:
    fail("no Idefics3 case (model_type \"idefics3\") for its bad-input tests")
else:
    d, text = vlm_spoil(idefics3, "vlm-no-vision-config", "config.json", lambda cfg: cfg.pop("vision_config"))
    bad("Idefics3 without vision_config", [d, "--image", os.path.join(d, "image.png"), "--text", text, "--json"],
        "vlm-no-vision-config/config.json", "vision_config")
    d, text = vlm_copy(idefics3, "vlm-two-images")
    bad("a text with two <image>", [d, "--image", os.path.join(d, "image.png"), "--text", "<image>A cat<image>", "--json"],
        "--text", "one picture")
    d, text = vlm_spoil(idefics3, "vlm-no-image-token", "tokenizer.json", without_token("<image>"))
    bad("tokenizer.json without <image>", [d, "--image", os.path.join(d, "image.png"), "--text", text, "--json"],
        "vlm-no-image-token/tokenizer.json", "<image>")

gemma3 = case_of("gemma3")
if gemma3 is None:
    fail("no Gemma 3 case (model_type \"gemma3\") for its bad-input tests")
else:
    d, text = vlm_spoil(gemma3, "gemma3-mm-tokens-15", "config.json", lambda cfg: cfg.update(mm_tokens_per_image=15))
    bad("Gemma 3 with mm_tokens_per_image 15", [d, "--image", os.path.join(d, "image.png"), "--text", text, "--json"],
        "gemma3-mm-tokens-15/config.json", "mm_tokens_per_image")
    d, text = vlm_spoil(gemma3, "gemma3-no-boi-token", "tokenizer.json", without_token("<start_of_image>"))
    bad("tokenizer.json without <start_of_image>", [d, "--image", os.path.join(d, "image.png"), "--text", text, "--json"],
        "gemma3-no-boi-token/tokenizer.json", "<start_of_image>")

qwen = case_of("qwen2_5_vl")
if qwen is None:
    fail("no Qwen2.5-VL case (model_type \"qwen2_5_vl\") for its bad-input tests")
else:
    def bad_mrope(cfg):
        rope = (cfg["text_config"].get("rope_parameters") if "text_config" in cfg else None) or cfg["rope_scaling"]
        rope["mrope_section"] = [2, 1, 2]
    for what, name, file, spoil, field in [
            ("Qwen2.5-VL with mrope_section [2, 1, 2]", "qwen-bad-mrope", "config.json", bad_mrope, "mrope_section"),
            ("Qwen2.5-VL's processor with patch_size 8", "qwen-patch-8", "preprocessor_config.json",
             lambda prep: prep.update(patch_size=8), "patch_size"),
            ("tokenizer.json without <|image_pad|>", "qwen-no-image-pad", "tokenizer.json", without_token("<|image_pad|>"),
             "<|image_pad|>")]:
        d, text = vlm_spoil(qwen, name, file, spoil)
        bad(what, [d, "--image", os.path.join(d, "image.png"), "--text", text, "--json"], f"{name}/{file}", field)
    # a picture whose smart resize is past attnviz's 128 patches a side: the line says what makes fewer
    from PIL import Image
    thin = os.path.join(work, "thin.png")
    Image.new("RGB", (40000, 300), (200, 30, 30)).save(thin)
    bad("a picture 184 patches wide for Qwen2.5-VL", [os.path.join(refs, qwen), "--image", thin, "--text", "hi", "--json"],
        "preprocessor_config.json", "128 a side", "max_pixels")

shutil.rmtree(work)
shutil.rmtree(hub_env["HF_HUB_CACHE"])
print(f"{len(failures)} failures" if failures else "vision: ok")
sys.exit(1 if failures else 0)
