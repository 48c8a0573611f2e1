#!/usr/bin/env python3
"""transformers' own model classes as the oracle of `attnviz run` (issue 46): checkpoints in the
form transformers itself writes (`save_pretrained`: config.json with rope_parameters,
layer_types, dtype; its tensor names and shapes), their weights drawn by name (draw), loaded
back with `from_pretrained`, and the numbers its eager forward gives.

    python3 tests/model/transformers_oracle.py make RECORDS        # needs transformers (≥ 5), torch, numpy
    python3 tests/model/transformers_oracle.py write RECORDS OUT   # numpy: the folders again
    python3 tests/model/transformers_oracle.py check BINARY OUT    # numpy: attnviz run against them

`make` (on a machine with transformers: the H200 host, TOOLCHAIN.md; elsewhere it says it is
skipped and exits 0) writes RECORDS/CASE.json for every case below: the config.json transformers
wrote, the tensors' names, dtypes and shapes, the seed, and what transformers computed (the ids,
every layer's attention [L][H][T][T] from output_attentions, the hidden state after the final
norm, the last position's logits, a greedy continuation with its KV cache and one recomputed,
router logits for mixtures of experts). The records are kept in tests/model/transformers5/;
`write` makes the checkpoint folders from them anywhere (the weights drawn again, bit for bit).

`check` runs `attnviz run CASE --ids … --json` (and `--generate`) on each folder and prints one
row per case: the largest difference in attention, hidden and logits, and whether the greedy
tokens agree (a near tie is not compared). A family attnviz does not run yet is listed as such
when its case says so (pending), and fails otherwise. Exits 1 on any failure.
"""
import json
import os
import struct
import subprocess
import sys
import zlib

# [SECTION] The cases ---------------------------------------------------------------------------
# Small shapes (vocab 256, hidden 64, 4 query heads on 2 key/value heads, head_dim 16), every
# form of rope_parameters attnviz reads, windows shorter than the text, and each family's own
# fields set away from their defaults so that a reader that ignores one is caught.

BASE = dict(vocab_size=256, hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
            intermediate_size=96, num_hidden_layers=2, max_position_embeddings=64, tie_word_embeddings=False,
            bos_token_id=1, eos_token_id=2, pad_token_id=0)

CASES = [
    dict(case="llama-default", type="llama", T=12, cfg={}),
    dict(case="llama-llama3", type="llama", T=12, cfg=dict(rope_parameters=dict(
        rope_type="llama3", rope_theta=500000.0, factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
        original_max_position_embeddings=16))),
    dict(case="llama-linear", type="llama", T=12, cfg=dict(rope_parameters=dict(rope_type="linear", rope_theta=10000.0, factor=4.0))),
    dict(case="llama-dynamic-past", type="llama", T=40, cfg=dict(max_position_embeddings=32, rope_parameters=dict(
        rope_type="dynamic", rope_theta=10000.0, factor=2.0))),
    dict(case="llama-yarn", type="llama", T=12, cfg=dict(rope_parameters=dict(
        rope_type="yarn", rope_theta=10000.0, factor=4.0, original_max_position_embeddings=16))),
    dict(case="llama-yarn-beta-notrunc", type="llama", T=12, cfg=dict(rope_parameters=dict(
        rope_type="yarn", rope_theta=150000.0, factor=8.0, beta_fast=16.0, beta_slow=2.0, truncate=False,
        attention_factor=1.25))),
    dict(case="llama-default-past", type="llama", T=24, cfg=dict(max_position_embeddings=16, attention_bias=True,
                                                                  mlp_bias=True, tie_word_embeddings=True)),
    dict(case="mistral-window", type="mistral", T=14, cfg=dict(sliding_window=5)),
    dict(case="qwen2-theta-window", type="qwen2", T=12, cfg=dict(
        rope_parameters=dict(rope_type="default", rope_theta=1000000.0), use_sliding_window=True, sliding_window=4,
        max_window_layers=1)),
    dict(case="qwen3-qknorm", type="qwen3", T=12, cfg=dict(rope_parameters=dict(rope_type="default", rope_theta=1000000.0))),
    dict(case="gemma2-softcap", type="gemma2", T=12, cfg=dict(
        sliding_window=4, attn_logit_softcapping=1.5, final_logit_softcapping=2.0, query_pre_attn_scalar=12,
        tie_word_embeddings=True)),
    dict(case="gemma3-per-type", type="gemma3_text", T=12, cfg=dict(
        num_hidden_layers=3, layer_types=["sliding_attention", "sliding_attention", "full_attention"],
        sliding_window=5, query_pre_attn_scalar=16, tie_word_embeddings=True,
        rope_parameters=dict(full_attention=dict(rope_type="linear", rope_theta=1000000.0, factor=2.0),
                             sliding_attention=dict(rope_type="default", rope_theta=100.0)))),
    dict(case="phi3-longrope-long", type="phi3", T=20, cfg=dict(
        partial_rotary_factor=0.5, original_max_position_embeddings=16, sliding_window=None,
        rope_parameters=dict(rope_type="longrope", rope_theta=10000.0, partial_rotary_factor=0.5,
                             original_max_position_embeddings=16,
                             short_factor=[1.0, 1.25, 1.5, 2.0], long_factor=[2.0, 3.0, 4.0, 6.0]))),
    dict(case="phi3-longrope-short", type="phi3", T=12, cfg=dict(
        partial_rotary_factor=0.5, original_max_position_embeddings=16, sliding_window=8,
        rope_parameters=dict(rope_type="longrope", rope_theta=10000.0, partial_rotary_factor=0.5,
                             original_max_position_embeddings=16,
                             short_factor=[1.0, 1.25, 1.5, 2.0], long_factor=[2.0, 3.0, 4.0, 6.0]))),
    dict(case="smollm3-nope", type="smollm3", T=12, cfg=dict(
        num_hidden_layers=3, no_rope_layers=[1, 0, 1], rope_parameters=dict(rope_type="default", rope_theta=2000000.0))),
    dict(case="olmo2", type="olmo2", T=12, cfg=dict(rms_norm_eps=1e-5)),
    dict(case="granite-multipliers", type="granite", T=12, cfg=dict(
        embedding_multiplier=12.0, attention_multiplier=0.05, residual_multiplier=0.3, logits_scaling=4.0)),
    dict(case="cohere2-parallel", type="cohere2", T=12, cfg=dict(
        num_hidden_layers=3, layer_types=["sliding_attention", "sliding_attention", "full_attention"],
        sliding_window=4, logit_scale=0.0625, layer_norm_eps=1e-5, tie_word_embeddings=True)),
    dict(case="glm4-partial", type="glm4", T=12, cfg=dict(
        attention_bias=True, partial_rotary_factor=0.5,
        rope_parameters=dict(rope_type="default", rope_theta=10000.0, partial_rotary_factor=0.5))),
    dict(case="qwen3_moe-top2", type="qwen3_moe", T=12, cfg=dict(
        num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32, norm_topk_prob=False)),
    dict(case="qwen3_moe-norm-sparse", type="qwen3_moe", T=12, cfg=dict(
        num_hidden_layers=3, num_experts=6, num_experts_per_tok=3, moe_intermediate_size=24, norm_topk_prob=True,
        decoder_sparse_step=2, mlp_only_layers=[2])),
    dict(case="gpt_oss-sinks", type="gpt_oss", T=12, cfg=dict(
        num_local_experts=4, num_experts_per_tok=2, layer_types=["sliding_attention", "full_attention"],
        sliding_window=4, attention_bias=True,
        rope_parameters=dict(rope_type="yarn", rope_theta=150000.0, factor=32.0, beta_fast=32.0, beta_slow=1.0,
                             original_max_position_embeddings=4096, truncate=False))),
    dict(case="exaone4", type="exaone4", T=12, cfg=dict(
        num_hidden_layers=4, sliding_window=4, sliding_window_pattern=4)),
    dict(case="seed_oss", type="seed_oss", T=12, cfg=dict(attention_bias=True, attention_out_bias=False)),
    # gpt-oss with its experts in MXFP4, as the Hub's checkpoints hold them (quantized here by
    # mxfp4_quantize; transformers loads them with Mxfp4Config(dequantize=True)). Last: the seeds
    # of the cases before it stay.
    dict(case="gpt_oss-mxfp4", type="gpt_oss", T=12, mxfp4=True, cfg=dict(
        num_local_experts=4, num_experts_per_tok=2, layer_types=["sliding_attention", "full_attention"],
        sliding_window=4, attention_bias=True)),
]
GENERATE = 6
MXFP4_CONFIG = {"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                                                    "model.embed_tokens", "lm_head"]}
# Families attnviz does not run yet: their cases are listed, and their refusal is not a failure.
PENDING = {c["case"]: c["pending"] for c in CASES if "pending" in c}

# [SECTION] make: transformers writes the checkpoints and computes the numbers -----------------


def draw(name, shape, seed, model_type):
    """A tensor's values, from its name as saved, its shape and the case's seed alone (numpy, no
    torch), so that `write` makes here the very checkpoint `make` made there: SplitMix64 of
    (seed, crc32(name), index), its top 24 bits a uniform u in [-1, 1) exact in float32; norm
    weights 1 + 0.1u (Gemma's 0.1u: it scales by 1 + w), biases 0.1u, sinks 2u, tables 0.8u,
    matrices 2u/√in (transformers' init would leave norms at 1 and sinks at 0, hiding a reader
    that skips them)."""
    import numpy as np
    n = int(np.prod(shape)) if shape else 1
    with np.errstate(over="ignore"):
        key = np.uint64((seed << 32) ^ zlib.crc32(name.encode()))
        z = key + np.arange(1, n + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    u = ((z >> np.uint64(40)).astype(np.float64) / 2.0 ** 23 - 1.0).reshape(shape)
    leaf = name.rsplit(".", 1)[-1] if name.endswith(".weight") or name.endswith(".bias") else name
    if "norm" in name and len(shape) == 1:
        v = 0.1 * u + (0.0 if model_type.startswith("gemma") else 1.0)
    elif name.endswith("sinks"):
        v = 2.0 * u
    elif len(shape) == 1 or name.endswith("bias"):
        v = 0.1 * u
    elif "embed" in name or "lm_head" in name:
        v = 0.8 * u
    else:
        fan_in = shape[-2] if len(shape) == 3 else shape[-1]  # gpt_oss's experts: [E, in, out]
        v = u * 2.0 / fan_in ** 0.5
    del leaf
    return v.astype(np.float32)


def read_tensors(path):
    """{name: [dtype, shape, bytes]} of a safetensors file, in its order (the metadata left out)."""
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    items = sorted(((k, v) for k, v in header.items() if k != "__metadata__"), key=lambda kv: kv[1]["data_offsets"][0])
    return {k: [v["dtype"], v["shape"], data[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]]] for k, v in items}


def write_tensors(path, tensors):
    """A safetensors file of {name: [dtype, shape, bytes]}, in that order."""
    header, blobs, offset = {}, [], 0
    for name, (dtype, shape, data) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


E2M1 = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)


def mxfp4_quantize(tensors):
    """gpt-oss's expert banks (F32 [n, in, out], named mlp.experts.{gate_up,down}_proj) in place as
    MXFP4, laid out as the Hub's checkpoints and transformers' convert_moe_packed_tensors read
    them: NAME_blocks [n, out, in/32, 16] (two E2M1 codes a byte, the low nibble first) and
    NAME_scales [n, out, in/32] (E8M0: 2^(s − 127)), each group of 32 scaled so its largest
    magnitude is at most 6, each value to the nearest code. Returns the dequantized banks
    {name: [n, in, out] float32} (what MXFP4 holds)."""
    import numpy as np
    values = np.array(E2M1, dtype=np.float64)
    dequantized = {}
    for name in [k for k in tensors if k.endswith(("mlp.experts.gate_up_proj", "mlp.experts.down_proj"))]:
        dtype, shape, data = tensors.pop(name)
        n, d_in, d_out = shape
        w = np.frombuffer(data, dtype="<f4").reshape(shape).astype(np.float64).transpose(0, 2, 1)  # [n, out, in]
        groups = w.reshape(n, d_out, d_in // 32, 32)
        amax = np.abs(groups).max(-1)
        s = np.clip(np.ceil(np.log2(np.maximum(amax, 1e-30) / 6.0)), -127, 127)
        scaled = groups / np.exp2(s)[..., None]
        codes = np.abs(scaled[..., None] - values[:8]).argmin(-1) + 8 * (scaled < 0)  # sign bit: codes 8…15
        blocks = (codes[..., 0::2] | (codes[..., 1::2] << 4)).astype(np.uint8)
        tensors[name + "_blocks"] = ["U8", [n, d_out, d_in // 32, 16], blocks.tobytes()]
        tensors[name + "_scales"] = ["U8", [n, d_out, d_in // 32], (s + 127).astype(np.uint8).tobytes()]
        dequantized[name] = (values[codes] * np.exp2(s)[..., None]).reshape(n, d_out, d_in).transpose(0, 2, 1).astype(np.float32)
    return dequantized


def tensors_of(path):
    """[[name, dtype, shape], …] of a safetensors file, in its order."""
    return [[k, dtype, shape] for k, (dtype, shape, _) in read_tensors(path).items()]


def write_checkpoint(path, tensors, seed, model_type):
    """model.safetensors of the drawn values (F32, as transformers saved them)."""
    for name, dtype, _ in tensors:
        if dtype != "F32":
            raise ValueError(f"{name}: {dtype}: the cases are F32")
    write_tensors(path, {name: ["F32", shape, draw(name, shape, seed, model_type).astype("<f4").tobytes()]
                         for name, _, shape in tensors})


def make(out, only=()):
    try:
        import torch
        import transformers
        from transformers import AutoConfig, AutoModelForCausalLM
    except ImportError as e:
        print(f"transformers_oracle: skipped ({e}): it runs where transformers is installed")
        return 0
    print(f"transformers {transformers.__version__}, torch {torch.__version__}")
    torch.set_num_threads(min(8, os.cpu_count() or 1))
    os.makedirs(out, exist_ok=True)
    made, failed = [], []
    for k, case in enumerate(CASES):
        name = case["case"]
        if only and name not in only:
            continue
        try:
            kwargs = dict(BASE)
            kwargs.update(case["cfg"])
            cfg = AutoConfig.for_model(case["type"], **kwargs)
            seed = 1000 + k
            folder = os.path.join(out, name)
            # transformers writes the checkpoint (its config.json, its tensor names and shapes),
            # the tensors are drawn again by name (draw), and transformers loads the folder back
            # as a user's from_pretrained does.
            AutoModelForCausalLM.from_config(cfg).save_pretrained(folder)
            tensors = tensors_of(os.path.join(folder, "model.safetensors"))
            write_checkpoint(os.path.join(folder, "model.safetensors"), tensors, seed, case["type"])
            extra = {}
            if case.get("mxfp4"):
                quantized = read_tensors(os.path.join(folder, "model.safetensors"))
                mxfp4_quantize(quantized)
                write_tensors(os.path.join(folder, "model.safetensors"), quantized)
                with open(os.path.join(folder, "config.json")) as f:
                    c = json.load(f)
                c["quantization_config"] = MXFP4_CONFIG
                with open(os.path.join(folder, "config.json"), "w") as f:
                    json.dump(c, f, indent=2)
                from transformers import Mxfp4Config
                extra["quantization_config"] = Mxfp4Config(dequantize=True)
            model, info = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager", output_loading_info=True,
                                                               **extra)
            if info.get("missing_keys") or info.get("unexpected_keys") or info.get("mismatched_keys"):
                raise ValueError(f"loading back: {info}")
            # transformers dequantizes MXFP4 to BF16, exactly (every E2M1·2^s is a BF16 number); in
            # F32 the experts' activations are not rounded to BF16 either, as attnviz's are not
            model = model.float()
            dtypes = sorted({str(p.dtype) for p in model.parameters()})
            if dtypes != ["torch.float32"]:
                raise ValueError(f"loaded as {dtypes}, not float32")
            model.eval()
            g = torch.Generator().manual_seed(2000 + k)
            ids = [1] + [int(i) for i in torch.randint(3, cfg.vocab_size, (case["T"] - 1,), generator=g)]
            x = torch.tensor([ids])
            moe = case["type"] in ("qwen3_moe", "gpt_oss")
            with torch.no_grad():
                extra = {"output_router_logits": True} if moe else {}
                o = model(x, output_attentions=True, output_hidden_states=True, **extra)
                hidden = model.model(x).last_hidden_state  # after the final norm
                # Greedy with transformers' KV cache, a token at a time.
                step = model(x, use_cache=True)
                past, generated, gaps = step.past_key_values, [], []
                for _ in range(GENERATE):
                    last = step.logits[0, -1].double()
                    top2 = torch.topk(last, 2).values
                    gaps.append(float(top2[0] - top2[1]))
                    nxt = int(torch.argmax(last))
                    generated.append(nxt)
                    step = model(torch.tensor([[nxt]]), past_key_values=past, use_cache=True)
                    past = step.past_key_values
                # Greedy again, the whole sequence recomputed at each step: where the rotation
                # depends on the length (dynamic past max_position_embeddings, longrope past the
                # original length) transformers' cache keeps the keys as first rotated, and
                # attnviz rotates them again, as recomputing does.
                recomputed = list(ids)
                for _ in range(GENERATE):
                    recomputed.append(int(torch.argmax(model(torch.tensor([recomputed])).logits[0, -1])))
            expected = {
                "case": name, "model_type": case["type"], "transformers": transformers.__version__,
                "ids": ids, "eos": cfg.eos_token_id,
                "attention": [a[0].double().tolist() for a in o.attentions],
                "hidden": hidden[0].double().tolist(),
                "logits": o.logits[0, -1].double().tolist(),
                "generated_ids": generated, "generated_gap": min(gaps),
                "generated_recomputed": recomputed[len(ids):],
            }
            if moe and getattr(o, "router_logits", None):
                expected["router_logits"] = [r.double().reshape(len(ids), -1).tolist() if r is not None else None
                                             for r in o.router_logits]
            with open(os.path.join(folder, "config.json")) as f:
                config = json.load(f)
            record = {"case": name, "model_type": case["type"], "seed": seed, "config": config, "tensors": tensors,
                      "mxfp4": bool(case.get("mxfp4")), "expected": rounded(expected)}
            with open(os.path.join(out, name + ".json"), "w") as f:
                json.dump(record, f, separators=(",", ":"))
                f.write("\n")
            made.append(name)
            print(f"made {name}: T={len(ids)}, gap {min(gaps):.3g}")
        except Exception as e:  # one family's failure leaves the others' cases
            failed.append(name)
            print(f"FAILED {name}: {type(e).__name__}: {e}")
    print(f"{len(made)} cases made, {len(failed)} failed: {failed}")
    return 0


def rounded(x):
    """Floats to 8 significant digits (the checks' tolerances are 1e-4 and 1e-3)."""
    if isinstance(x, float):
        return float(f"{x:.8g}")
    if isinstance(x, list):
        return [rounded(v) for v in x]
    if isinstance(x, dict):
        return {k: rounded(v) for k, v in x.items()}
    return x

# [SECTION] write: the records back into checkpoint folders --------------------------------------


def write(records, out):
    """OUT/CASE/{config.json, model.safetensors, expected.json, tokenizer.json} for every record
    RECORDS/CASE.json, and OUT/cases.json (written last)."""
    os.makedirs(out, exist_ok=True)
    cases = []
    for file in sorted(os.listdir(records)):
        if not file.endswith(".json"):
            continue
        with open(os.path.join(records, file)) as f:
            r = json.load(f)
        folder = os.path.join(out, r["case"])
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump(r["config"], f, indent=2)
        with open(os.path.join(folder, "expected.json"), "w") as f:
            json.dump(r["expected"], f)
        write_checkpoint(os.path.join(folder, "model.safetensors"), r["tensors"], r["seed"], r["model_type"])
        write_tokenizer(folder, r["config"]["vocab_size"])
        cases.append(r["case"])
        if r.get("mxfp4"):  # the experts as MXFP4; beside it, its twin with them dequantized to F32
            import shutil
            twin = folder + "-dequantized"
            shutil.copytree(folder, twin, dirs_exist_ok=True)
            tensors = read_tensors(os.path.join(folder, "model.safetensors"))
            for k, w in mxfp4_quantize(tensors).items():
                twin_tensors = read_tensors(os.path.join(twin, "model.safetensors"))
                twin_tensors[k] = ["F32", list(w.shape), w.astype("<f4").tobytes()]
                write_tensors(os.path.join(twin, "model.safetensors"), twin_tensors)
            write_tensors(os.path.join(folder, "model.safetensors"), tensors)
            c = dict(r["config"])
            c.pop("quantization_config", None)
            with open(os.path.join(twin, "config.json"), "w") as f:
                json.dump(c, f, indent=2)
            cases.append(r["case"] + "-dequantized")
    with open(os.path.join(out, "cases.json"), "w") as f:
        json.dump(cases, f, indent=1)
    return 0

# [SECTION] check: attnviz run against what transformers computed ------------------------------

def write_tokenizer(folder, V):
    """A tokenizer.json naming token i "t{i}" (the checks run ids; the app takes text: "t1 t23 t45")."""
    path = os.path.join(folder, "tokenizer.json")
    if not os.path.exists(path):
        with open(path, "w") as f:
            json.dump({"version": "1.0", "added_tokens": [], "normalizer": None,
                       "pre_tokenizer": {"type": "WhitespaceSplit"}, "post_processor": None, "decoder": None,
                       "model": {"type": "WordLevel", "vocab": {f"t{i}": i for i in range(V)}, "unk_token": "t0"}}, f)


def r_config(folder):
    with open(os.path.join(folder, "config.json")) as f:
        return json.load(f)


def experts_difference(router_logits, routed, config):
    """The largest difference between attnviz's [[expert, weight], …] per token of each layer
    with experts and what transformers' router logits give (the same experts, or inf)."""
    import numpy as np
    k = config["num_experts_per_tok"]
    if len(routed) != len(router_logits):
        return float("inf")
    worst = 0.0
    for logits, layer in zip(router_logits, routed):
        for z, got in zip(np.asarray(logits), layer):
            top = np.argsort(-z, kind="stable")[:k]
            if config["model_type"] == "gpt_oss":  # top k of the logits, softmax over them
                w = np.exp(z[top] - z[top].max())
                w /= w.sum()
            else:  # softmax over all, the top k, renormalized with norm_topk_prob
                p = np.exp(z - z.max())
                p /= p.sum()
                w = p[top] / (p[top].sum() if config.get("norm_topk_prob") else 1.0)
            if [e for e, _ in got] != [int(e) for e in top]:
                return float("inf")
            worst = max(worst, float(np.max(np.abs(np.asarray([x for _, x in got]) - w))))
    return worst


def bad_inputs(binary, folder):
    """Broken copies of the cases, each refused with exit 2 and one line naming the file and the
    field or tensor. Returns the names of those that were not."""
    import shutil
    import tempfile
    failed = []
    work = tempfile.mkdtemp(prefix="attnviz-bad-")  # every broken copy, removed at the end

    def broken(case, edit_config=None, edit_tensors=None):
        d = os.path.join(work, f"{len(os.listdir(work))}-{case}")
        shutil.copytree(os.path.join(folder, case), d)
        if edit_config:
            c = r_config(d)
            edit_config(c)
            with open(os.path.join(d, "config.json"), "w") as f:
                json.dump(c, f)
        if edit_tensors:  # {name: [dtype, shape, bytes]} edited, then laid out again
            tensors = read_tensors(os.path.join(d, "model.safetensors"))
            edit_tensors(tensors)
            write_tensors(os.path.join(d, "model.safetensors"), tensors)
        return d

    def expect(label, d, text):
        p = subprocess.run([binary, "run", d, "--ids", "1,5,7", "--json"], capture_output=True, text=True)
        line = p.stderr.strip()
        if p.returncode != 2 or "\n" in line or text not in line:
            failed.append(label)
            print(f"FAIL bad input {label}: exit {p.returncode}: {line[:200]}")

    def sinks_short(tensors):  # 3 sinks for 4 heads
        t = tensors["model.layers.0.self_attn.sinks"]
        t[1], t[2] = [3], t[2][:12]

    expect("sinks of the wrong length", broken("gpt_oss-sinks", edit_tensors=sinks_short),
           "model.layers.0.self_attn.sinks: expected shape [4], got [3]")
    expect("more experts than the router names", broken("qwen3_moe-top2", lambda c: c.update(num_local_experts=5)),
           "model.layers.0.mlp.gate.weight: expected shape [5, 64], got [4, 64]")
    expect("more experts per token than exist", broken("gpt_oss-sinks", lambda c: c.update(num_experts_per_tok=9)),
           "config.json: num_experts_per_tok: expected at most num_local_experts (4), got 9")
    expect("an unknown rope_type", broken("llama-default", lambda c: c["rope_parameters"].update(rope_type="ntk")),
           "config.json: rope_parameters.rope_type: \"ntk\" is not one of default, linear, dynamic, llama3, yarn, longrope")
    expect("a field the rope type does not read", broken("llama-linear", lambda c: c["rope_parameters"].update(beta_fast=4)),
           "config.json: rope_parameters.beta_fast: is not read by attnviz's \"linear\" rotation")
    expect("no_rope_layers where the family has none", broken("llama-default", lambda c: c.update(no_rope_layers=[1, 0])),
           "config.json: no_rope_layers: changes the attention, and attnviz's llama does not read it")
    def blocks_short(tensors):  # MXFP4 blocks of 3 experts for 4
        t = tensors["model.layers.0.mlp.experts.gate_up_proj_blocks"]
        t[1], t[2] = [3] + t[1][1:], t[2][:len(t[2]) * 3 // 4]

    expect("MXFP4 blocks of the wrong shape", broken("gpt_oss-mxfp4", edit_tensors=blocks_short),
           "model.layers.0.mlp.experts.gate_up_proj_blocks: expected shape [4, 192, 2, 16], got [3, 192, 2, 16]")
    expect("a quantization attnviz does not read", broken("gpt_oss-mxfp4", lambda c: c["quantization_config"].update(quant_method="gptq")),
           "config.json: quantization_config.quant_method: \"gptq\": attnviz reads gpt-oss's MXFP4 experts, or unquantized weights")
    expect("a quantization on a family without it", broken("llama-default", lambda c: c.update(quantization_config={"quant_method": "awq"})),
           "config.json: quantization_config: changes the attention, and attnviz's llama does not read it")
    print(f"bad inputs: {9 - len(failed)} of 9 refused in one line")
    shutil.rmtree(work)
    return failed


def check(binary, folder):
    import numpy as np
    cases = json.load(open(os.path.join(folder, "cases.json")))
    rows, failures, outputs = [], [], {}
    for name in cases:
        d = os.path.join(folder, name)
        exp = json.load(open(os.path.join(d, "expected.json")))
        write_tokenizer(d, json.load(open(os.path.join(d, "config.json")))["vocab_size"])
        ids = ",".join(str(i) for i in exp["ids"])
        p = subprocess.run([binary, "run", d, "--ids", ids, "--json"], capture_output=True, text=True)
        if p.returncode != 0:
            pending = PENDING.get(name)
            rows.append((name, (f"not run yet ({pending})" if pending else "FAIL refused: ") + p.stderr.strip()[:100]))
            if not pending or "model_type" not in p.stderr:
                failures.append(name)
            continue
        out = json.loads(p.stdout)
        outputs[name] = out
        with open(os.path.join(d, "run.json"), "w") as f:  # the output opens as an import (sinks: rows sum to 1 − sink)
            f.write(p.stdout)
        imported = subprocess.run([binary, "import", os.path.join(d, "run.json")], capture_output=True, text=True)
        diffs = {}
        for key, relative in (("attention", False), ("hidden", True), ("logits", True)):
            got, want = np.asarray(out[key], dtype=np.float64), np.asarray(exp[key], dtype=np.float64)
            if got.shape != want.shape:
                diffs[key] = float("inf")
                continue
            diffs[key] = float(np.max(np.abs(got - want))) / (float(np.max(np.abs(want))) if relative else 1.0)
        ok = diffs["attention"] <= 1e-4 and diffs["hidden"] <= 1e-3 and diffs["logits"] <= 1e-3
        extra = "" if imported.returncode == 0 else "  does not open as an import: " + imported.stderr.strip()[:100]
        ok = ok and imported.returncode == 0
        if "router_logits" in exp:  # the experts each token took, against the top k of transformers' router logits
            routed = [layer for layer in out.get("experts", []) if layer and layer[0]]
            worst = experts_difference(exp["router_logits"], routed, r_config(d))
            extra += f"  experts {worst:.2g}"
            ok = ok and worst <= 1e-4
        if exp["model_type"] == "gpt_oss":  # the sinks' weights: 1 − Σ of each row of transformers' maps
            want = 1 - np.asarray(exp["attention"]).sum(-1)
            got = np.asarray(out.get("sinks", []), dtype=np.float64)
            worst = float(np.max(np.abs(got - want))) if got.shape == want.shape else float("inf")
            extra += f"  sinks {worst:.2g}"
            ok = ok and worst <= 1e-4
        greedy = "near tie"
        if exp["generated_gap"] > 1e-3:
            g = subprocess.run([binary, "run", d, "--ids", ids, "--generate", str(len(exp["generated_ids"])), "--json"],
                               capture_output=True, text=True)
            got = json.loads(g.stdout).get("generated_ids") if g.returncode == 0 else None
            want = exp.get("generated_recomputed", exp["generated_ids"])
            if exp["eos"] in want:  # attnviz stops at the end-of-sequence token
                want = want[:want.index(exp["eos"]) + 1]
            greedy = "same" if got == want else f"differs: {got} vs {want}"
            ok = ok and got == want
        rows.append((name, f"attention {diffs['attention']:.2g}  hidden {diffs['hidden']:.2g}  "
                           f"logits {diffs['logits']:.2g}{extra}  greedy {greedy}" + ("" if ok else "  FAIL")))
        if not ok:
            failures.append(name)
    for name in cases:  # MXFP4 experts run as their exact dequantization does, bit for bit
        if name.endswith("-dequantized") and name in outputs and name[:-len("-dequantized")] in outputs:
            q, t = outputs[name[:-len("-dequantized")]], outputs[name]
            same = all(q[k] == t[k] for k in ("attention", "hidden", "logits", "sinks", "experts"))
            rows.append((name[:-len("-dequantized")] + " = " + name, "bit for bit" if same else "differ  FAIL"))
            if not same:
                failures.append(name)
    failures += bad_inputs(binary, folder)
    width = max(len(r[0]) for r in rows)
    for name, text in rows:
        print(f"{name:<{width}}  {text}")
    pending = sum(1 for name, text in rows if text.startswith("not run yet"))
    print(f"{len(rows) - len(failures) - pending} of {len(rows)} cases agree with transformers {exp.get('transformers', '')}, "
          f"{pending} not run yet (pending), {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "make":  # make OUT [CASE …]
        sys.exit(make(sys.argv[2], sys.argv[3:]))
    if len(sys.argv) == 4 and sys.argv[1] == "write":
        sys.exit(write(sys.argv[2], sys.argv[3]))
    if len(sys.argv) == 4 and sys.argv[1] == "check":
        sys.exit(check(sys.argv[2], sys.argv[3]))
    sys.exit(__doc__)
