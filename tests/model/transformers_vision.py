#!/usr/bin/env python3
"""transformers' own vision classes as a second oracle of `attnviz run MODEL --image FILE`
(issue 50): the checkpoints tests/model/make_vision_models.py writes (ViT, CLIP, SigLIP, DINOv2
with and without registers; F32, F16 and BF16 files), loaded by transformers' classes and run
on the same pixel values.

    python3 tests/model/transformers_vision.py make REFS RECORDS   # needs transformers (≥ 5), torch
    python3 tests/model/transformers_vision.py check BINARY REFS RECORDS

`make` (where transformers is installed: the H200 host, ../shared/TOOLCHAIN.md; elsewhere it
says it is skipped and exits 0) loads every case folder of REFS with the class its config.json
names (`architectures`; a CLIPModel's file as CLIPVisionModel, as users load it), in float32 with
eager attention, runs it on expected.json's pixel_values (tests/model/image_reference.py's,
checked against PIL there) and writes RECORDS/CASE.json: the sha256 of the folder's
model.safetensors and image.png, every layer's attention [L][H][T][T] (output_attentions), the
last_hidden_state, the classifier's logits where there is one, and how far transformers' own
image processor (AutoImageProcessor, slow and fast where both exist) lands from those pixel
values. The records are kept in tests/model/transformers5-vision/.

The vision-language cases (Idefics3, SmolVLM, Gemma 3: Idefics3ForConditionalGeneration, …) run
on expected.json's ids and views (vlm_outputs): their records hold the text, the language
model's attention, last_hidden_state and last logits, and the tower's attention per view.
Qwen2.5-VL's (qwen2_5_vl_outputs) run on the ids and the picture's patches as its processor
flattens them, and their records hold the M-RoPE positions the language model got as well.

`check` runs `attnviz run CASE --image CASE/image.png [--text TEXT] --json` on each folder of REFS
that has a record and compares: the attention (and the tower's) within 1e-5, the hidden states and
logits within 1e-4 of the largest |value|, the positions (Qwen2.5-VL's) exactly. A folder whose
files are not the bytes the record was made from fails (the generator changed: make the records
again). Exits 1 on any failure.
"""
import hashlib
import json
import os
import subprocess
import sys

from transformers_oracle import rounded  # floats to 8 significant digits (beside this file)


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


# [SECTION] make: transformers runs the cases -----------------------------------------------------


def processor_gap(folder, pixel_values):
    """{"slow"|"fast": the largest |difference| between AutoImageProcessor's pixel values of
    image.png and ours, or the error it raised}."""
    from PIL import Image
    from transformers import AutoImageProcessor
    gaps = {}
    for kind, use_fast in (("slow", False), ("fast", True)):
        try:
            proc = AutoImageProcessor.from_pretrained(folder, use_fast=use_fast)
            got = proc(images=Image.open(os.path.join(folder, "image.png")), return_tensors="pt")["pixel_values"][0]
            gaps[kind] = {"class": type(proc).__name__,
                          "max_abs": float((got.double() - pixel_values[0].double()).abs().max())
                          if got.shape == pixel_values.shape[1:] else f"shape {list(got.shape)}"}
        except Exception as e:  # a processor class one version of transformers lacks
            gaps[kind] = {"error": f"{type(e).__name__}: {e}"[:200]}
    return gaps


def vlm_outputs(model, config, exp, torch):
    """A vision-language case (Idefics3, SmolVLM, Gemma 3) run by its class on expected.json's ids
    and views: {"attention": the language model's [L][H][T][T], "hidden": its last_hidden_state
    (after the final norm), "logits": the last position's, "vision_attention": the tower's
    [view][L][H][P][P]}. Idefics3's views go in as one picture's [1, n, C, S, S] (every pixel
    real); Gemma 3's as [n, C, S, S] with token_type_ids 1 at its image tokens (its both-ways mask)."""
    ids = torch.tensor([exp["ids"]])
    views = torch.tensor(exp["pixel_values"], dtype=torch.float32)
    if config["model_type"] == "gemma3":
        image_id = config.get("image_token_index", config.get("image_token_id", 262144))
        inputs = {"pixel_values": views, "token_type_ids": (ids == image_id).long()}
        tower = model.model.vision_tower
    else:
        inputs = {"pixel_values": views[None], "pixel_attention_mask": torch.ones(1, views.shape[0], *views.shape[2:], dtype=torch.bool)}
        tower = model.model.vision_model
    with torch.no_grad():
        o = model(input_ids=ids, output_attentions=True, **inputs)
        hidden = model.model(input_ids=ids, **inputs).last_hidden_state
        vision = tower(pixel_values=views, output_attentions=True).attentions  # the views as a batch
    return {"attention": [a[0].double().tolist() for a in o.attentions], "hidden": hidden[0].double().tolist(),
            "logits": o.logits[0, -1].double().tolist(),
            "vision_attention": [[a[v].double().tolist() for a in vision] for v in range(views.shape[0])]}


def spy(module, record):
    """Make module's calls hand their arguments to record(module, args, kwargs) before running (an
    instance attribute over forward: no forward hook with kwargs needed, any torch). -> the undo."""
    forward = module.forward

    def spied(*args, **kwargs):
        record(module, args, kwargs)
        return forward(*args, **kwargs)
    module.forward = spied
    return lambda: delattr(module, "forward")


def qwen2_5_vl_block_maps(attn, args, kwargs, torch):
    """One vision block's attention probabilities [H, N, N], in the tower's (window) order, from the
    arguments its Qwen2_5_VLVisionAttention got: the tower's attentions are not returned (the eager
    path softmaxes each cu_seqlens chunk apart and keeps only the output), so they are computed again
    as it does: qkv cut (N, 3, H, hd), q and k rotated in float32 by position_embeddings' cos, sin
    (or, before transformers 4.54, cos and sin of cat(rotary_pos_emb, rotary_pos_emb)), rotate-half,
    softmax(q·kᵀ·hd^-0.5) within each chunk, zero across chunks."""
    x = args[0] if args else kwargs["hidden_states"]
    cu = kwargs["cu_seqlens"] if "cu_seqlens" in kwargs else args[1]
    cos_sin = kwargs.get("position_embeddings")
    if cos_sin is None:
        angles = kwargs.get("rotary_pos_emb", args[2] if len(args) > 2 else None)
        angles = torch.cat([angles, angles], dim=-1)
        cos_sin = (angles.cos(), angles.sin())
    N, H = x.shape[0], attn.num_heads
    q, k = attn.qkv(x).reshape(N, 3, H, -1).permute(1, 0, 2, 3)[:2].float()  # [N, H, hd] each
    hd = q.shape[-1]
    cos, sin = (t.float().unsqueeze(-2) for t in cos_sin)

    def rotate_half(y):
        return torch.cat([-y[..., hd // 2:], y[..., :hd // 2]], dim=-1)
    q, k = ((y * cos + rotate_half(y) * sin).transpose(0, 1) for y in (q, k))  # [H, N, hd]
    probs = torch.zeros(H, N, N)
    bounds = torch.as_tensor(cu).tolist()
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        probs[:, lo:hi, lo:hi] = torch.softmax(q[:, lo:hi] @ k[:, lo:hi].transpose(1, 2) * hd ** -0.5, dim=-1)
    return probs


def qwen2_5_vl_inputs(config, exp, torch):
    """expected.json's picture [1][C][H][W] as Qwen2_5_VLForConditionalGeneration takes it: pixel_values
    [grid_t·grid_h·grid_w, C·t·p·p], the patches flattened as Qwen2VLImageProcessor._preprocess does
    (reference.qwen2_vl_flatten_patches: the frame repeated temporal_patch_size times, merge-block
    order), and image_grid_thw [[grid_t, grid_h, grid_w]]. -> (inputs, vcfg, (grid_t, grid_h, grid_w))."""
    import reference  # beside this file, as transformers_oracle
    vcfg = reference.qwen2_5_vl_vision_config(config)
    flat, grid = reference.qwen2_vl_flatten_patches(exp["pixel_values"][0], vcfg["patch_size"],
                                                    vcfg["temporal_patch_size"], vcfg["spatial_merge_size"])
    return {"pixel_values": flat.float(), "image_grid_thw": torch.tensor([list(grid)])}, vcfg, grid


def qwen2_5_vl_unpermute(maps, vcfg, grid, torch):
    """maps [L, H, N, N] in the tower's window order -> the picture's row order (patch (r, c) at
    r·cols + c, as attnviz prints them): the place of each patch after forward's window permutation
    (reference.qwen2_5_vl_patch_grid's merge-block rows and columns, permuted by
    qwen2_5_vl_window_index s² patches a merged token, as qwen2_5_vl_vision_forward undoes it)."""
    import reference
    grid_t, grid_h, grid_w = grid
    rows, cols = reference.qwen2_5_vl_patch_grid(vcfg, grid_h, grid_w)
    window_index, _ = reference.qwen2_5_vl_window_index(vcfg, grid_t, grid_h, grid_w)
    unit = vcfg["spatial_merge_size"] ** 2
    order = (rows * grid_w + cols).reshape(-1, unit)[window_index].reshape(-1)
    back = torch.argsort(order)
    return maps[:, :, back][:, :, :, back]


def qwen2_5_vl_outputs(model, config, exp, torch):
    """A Qwen2.5-VL case run by Qwen2_5_VLForConditionalGeneration on expected.json's ids and picture
    (qwen2_5_vl_inputs; mm_token_type_ids 1 at the image tokens where forward takes them: transformers
    5 computes the M-RoPE positions only with them) -> vlm_outputs' dict with vision_attention
    [1][L_v][H_v][P][P] (qwen2_5_vl_block_maps per block, put in the picture's row order) and
    "positions" [3][T]: the position_ids the language model got (the last three rows: time, height,
    width), None if it got none (it made its own, 1-D)."""
    import inspect
    ids = torch.tensor([exp["ids"]])
    inputs, vcfg, grid = qwen2_5_vl_inputs(config, exp, torch)
    if "mm_token_type_ids" in inspect.signature(model.forward).parameters:
        inputs["mm_token_type_ids"] = (ids == config.get("image_token_id", 151655)).int()
    base = model.model
    tower = base.visual if hasattr(base, "visual") else model.visual  # transformers 5: model.model.visual
    maps, got = [], {}
    undo = [spy(b.attn, lambda m, a, k: maps.append(qwen2_5_vl_block_maps(m, a, k, torch))) for b in tower.blocks]
    undo.append(spy(getattr(base, "language_model", base), lambda m, a, k: got.update(positions=k.get("position_ids"))))
    try:
        with torch.no_grad():
            o = model(input_ids=ids, output_attentions=True, **inputs)
    finally:
        for u in undo:
            u()
    with torch.no_grad():
        hidden = base(input_ids=ids, **inputs).last_hidden_state
    T, N = ids.shape[1], grid[0] * grid[1] * grid[2]
    assert all(a.shape[-2:] == (T, T) for a in o.attentions), f"attentions {[tuple(a.shape) for a in o.attentions]}"
    assert len(maps) == vcfg["depth"] and all(m.shape[-1] == N for m in maps), f"{len(maps)} tower maps"
    positions = got.get("positions")
    return {"attention": [a[0].double().tolist() for a in o.attentions], "hidden": hidden[0].double().tolist(),
            "logits": o.logits[0, -1].double().tolist(),
            "vision_attention": [qwen2_5_vl_unpermute(torch.stack(maps), vcfg, grid, torch).double().tolist()],
            "positions": positions[-3:, 0].tolist() if positions is not None and positions.dim() == 3 else None}


def make(refs, out):
    try:
        import torch
        import transformers
    except ImportError as e:
        print(f"transformers_vision: skipped ({e}): it runs where transformers is installed")
        return 0
    print(f"transformers {transformers.__version__}, torch {torch.__version__}")
    os.makedirs(out, exist_ok=True)
    made, failed = [], []
    for name in json.load(open(os.path.join(refs, "cases.json"))):
        folder = os.path.join(refs, name)
        try:
            config = json.load(open(os.path.join(folder, "config.json")))
            exp = json.load(open(os.path.join(folder, "expected.json")))
            # CLIPModel's checkpoint opens as its vision tower, as users load it for images
            arch = config["architectures"][0]
            cls = getattr(transformers, "CLIPVisionModel" if arch == "CLIPModel" else arch)
            model, info = cls.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager",
                                              output_loading_info=True)
            if info.get("missing_keys") or info.get("mismatched_keys"):
                raise ValueError(f"loading: {info}")
            model.eval()
            qwen = config["model_type"] == "qwen2_5_vl"  # the Hub's older files have no text_config
            if "text_config" in config or qwen:  # a vision-language model: a text with the picture
                run = (qwen2_5_vl_outputs if qwen else vlm_outputs)(model, config, exp, torch)
                record = {"case": name, "transformers": transformers.__version__, "class": cls.__name__, "text": exp["text"],
                          "sha256": {f: sha256(os.path.join(folder, f)) for f in ("model.safetensors", "image.png", "tokenizer.json")},
                          "unexpected_keys": sorted(info.get("unexpected_keys") or []),
                          **{k: rounded(v) for k, v in run.items()}}
                with open(os.path.join(out, name + ".json"), "w") as f:
                    json.dump(record, f, separators=(",", ":"))
                    f.write("\n")
                made.append(name)
                print(f"made {name}: {cls.__name__}, T={len(record['hidden'])}, {len(record['vision_attention'])} views")
                continue
            pixel_values = torch.tensor(exp["pixel_values"], dtype=torch.float32)[None]
            with torch.no_grad():
                o = model(pixel_values=pixel_values, output_attentions=True, output_hidden_states=True)
            if hasattr(o, "logits"):  # the classifier's model: its base model's last_hidden_state
                base = getattr(model, model.base_model_prefix)
                with torch.no_grad():
                    hidden = base(pixel_values=pixel_values).last_hidden_state
            else:
                hidden = o.last_hidden_state
            record = {"case": name, "transformers": transformers.__version__, "class": cls.__name__,
                      "sha256": {f: sha256(os.path.join(folder, f)) for f in ("model.safetensors", "image.png")},
                      "unexpected_keys": sorted(info.get("unexpected_keys") or []),
                      "processor": processor_gap(folder, pixel_values),
                      "attention": rounded([a[0].double().tolist() for a in o.attentions]),
                      "hidden": rounded(hidden[0].double().tolist())}
            if hasattr(o, "logits"):
                record["logits"] = rounded(o.logits[0].double().tolist())
            with open(os.path.join(out, name + ".json"), "w") as f:
                json.dump(record, f, separators=(",", ":"))
                f.write("\n")
            made.append(name)
            print(f"made {name}: {cls.__name__}, T={len(record['hidden'])}, processor {record['processor']}")
        except Exception as e:  # one family's failure leaves the others' records
            failed.append(name)
            print(f"FAILED {name}: {type(e).__name__}: {e}")
    print(f"{len(made)} records made, {len(failed)} failed: {failed}")
    return 0

# [SECTION] check: attnviz run against transformers' numbers ---------------------------------------

TOLERANCES = {"attention": (1e-5, False), "hidden": (1e-4, True), "logits": (1e-4, True),
              "vision_attention": (1e-5, False), "positions": (0.0, False)}  # (tol, relative); positions exactly


def check(binary, refs, records):
    import numpy as np
    names = sorted(f[:-5] for f in os.listdir(records) if f.endswith(".json"))
    failures, version = [], ""
    for name in names:
        record = json.load(open(os.path.join(records, name + ".json")))
        version = record["transformers"]
        folder = os.path.join(refs, name)
        changed = [f for f, h in record["sha256"].items()
                   if not os.path.exists(os.path.join(folder, f)) or sha256(os.path.join(folder, f)) != h]
        if changed:
            failures.append(name)
            print(f"FAIL {name}: {', '.join(changed)} not the bytes the record was made from "
                  "(make_vision_models.py changed: make the records again)")
            continue
        text = ["--text", record["text"]] if "text" in record else []  # a vision-language case: its text too
        p = subprocess.run([binary, "run", folder, "--image", os.path.join(folder, "image.png")] + text + ["--json"],
                           capture_output=True, text=True)
        if p.returncode != 0:
            failures.append(name)
            print(f"FAIL {name}: exit {p.returncode}: {p.stderr.strip()[:200]}")
            continue
        out = json.loads(p.stdout)
        diffs, ok = {}, True
        for key, (tol, relative) in TOLERANCES.items():
            if record.get(key) is None:  # not this family's, or transformers gave none (positions)
                continue
            got, want = np.asarray(out.get(key, []), dtype=np.float64), np.asarray(record[key], dtype=np.float64)
            d = float(np.max(np.abs(got - want))) / (float(np.max(np.abs(want))) if relative else 1.0) \
                if got.shape == want.shape else float("inf")
            diffs[key] = d
            ok = ok and d <= tol  # NaN fails too
        print(f"{'ok  ' if ok else 'FAIL'} {name} ({record['class']}): "
              + "  ".join(f"{k} {v:.2g}" for k, v in diffs.items()))
        if not ok:
            failures.append(name)
    if not names:
        failures.append("no records")
    print(f"{len(names) - len(failures)} of {len(names)} vision cases agree with transformers {version}'s classes, "
          f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "make":
        sys.exit(make(sys.argv[2], sys.argv[3]))
    if len(sys.argv) == 5 and sys.argv[1] == "check":
        sys.exit(check(sys.argv[2], sys.argv[3], sys.argv[4]))
    sys.exit(__doc__)
