#!/usr/bin/env python3
"""transformers' own model classes as the oracle of `attnviz run` (issue 46): random-weight
checkpoints written by transformers itself (`save_pretrained`, so config.json is in the form
today's transformers writes: rope_parameters, layer_types, dtype), and the numbers its eager
forward gives for them.

    python3 tests/model/transformers_oracle.py make OUT        # needs transformers (≥ 5) and torch
    python3 tests/model/transformers_oracle.py check BINARY DIR # needs numpy only

`make` writes OUT/CASE/{config.json, model.safetensors, expected.json} for every case below;
expected.json holds the ids, every layer's attention [L][H][T][T] (eager, output_attentions),
the hidden state after the final norm, the last position's logits, a greedy continuation
computed with transformers' KV cache, and for mixtures of experts each layer's router logits.
Where transformers is absent, `make` says so and exits 0 (skipped): it runs on the machine that
has it (the H200 host, TOOLCHAIN.md), and the folders it writes are kept in
tests/model/transformers5/ for `check`, which runs everywhere.

`check` runs `attnviz run CASE --ids … --json` (and `--generate`) on each folder and prints one
row per case: the largest difference in attention, hidden and logits, and whether the greedy
tokens agree; a case whose family attnviz refuses is listed as refused with its message (and
fails unless the case says it is not supported yet). Exits 1 on any failure.
"""
import json
import os
import subprocess
import sys

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
]
GENERATE = 6

# [SECTION] make: transformers writes the checkpoints and computes the numbers -----------------


def randomize(model, model_type, seed):
    """Every parameter drawn again (transformers' init leaves norms at 1 and sinks at 0, which
    would hide a reader that skips them): norm weights near 1 (Gemma's near 0: it scales by
    1 + w), matrices N(0, 1.2/√in), biases and sinks N(0, 0.1) and N(0, 1)."""
    import torch
    g = torch.Generator().manual_seed(seed)
    gemma = model_type.startswith("gemma")
    with torch.no_grad():
        for name, p in model.named_parameters():
            r = torch.randn(p.shape, generator=g, dtype=torch.float64)
            if "norm" in name and p.dim() == 1:
                v = 0.1 * r + (0.0 if gemma else 1.0)
            elif name.endswith("sinks"):
                v = r
            elif p.dim() == 1 or name.endswith("_bias"):
                v = 0.1 * r
            elif "embed" in name or "lm_head" in name:
                v = 0.5 * r
            else:
                fan_in = p.shape[-1] if not name.endswith(("gate_up_proj", "down_proj")) or p.dim() == 2 else p.shape[-2]
                v = r * 1.2 / fan_in ** 0.5
            p.copy_(v.to(p.dtype))


def make(out):
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
        try:
            kwargs = dict(BASE)
            kwargs.update(case["cfg"])
            cfg = AutoConfig.for_model(case["type"], **kwargs)
            torch.manual_seed(1000 + k)
            model = AutoModelForCausalLM.from_config(cfg, attn_implementation="eager")
            randomize(model, case["type"], 1000 + k)
            model.eval()
            folder = os.path.join(out, name)
            model.save_pretrained(folder)
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
            with open(os.path.join(folder, "expected.json"), "w") as f:
                json.dump(expected, f, separators=(",", ":"))
            made.append(name)
            print(f"made {name}: T={len(ids)}, gap {min(gaps):.3g}")
        except Exception as e:  # one family's failure leaves the others' cases
            failed.append(name)
            print(f"FAILED {name}: {type(e).__name__}: {e}")
    with open(os.path.join(out, "cases.json"), "w") as f:
        json.dump(made, f, indent=1)
    print(f"{len(made)} cases made, {len(failed)} failed: {failed}")
    return 0

# [SECTION] check: attnviz run against what transformers computed ------------------------------

def write_tokenizer(folder, V):
    """A tokenizer.json naming token i "t{i}" (the checkpoints are run on ids; attnviz names tokens)."""
    path = os.path.join(folder, "tokenizer.json")
    if not os.path.exists(path):
        with open(path, "w") as f:
            json.dump({"version": "1.0", "added_tokens": [], "normalizer": None, "pre_tokenizer": None,
                       "post_processor": None, "decoder": None,
                       "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                                 "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                                 "vocab": {f"t{i}": i for i in range(V)}, "merges": []}}, f)


def check(binary, folder):
    import numpy as np
    cases = json.load(open(os.path.join(folder, "cases.json")))
    rows, failures = [], []
    for name in cases:
        d = os.path.join(folder, name)
        exp = json.load(open(os.path.join(d, "expected.json")))
        write_tokenizer(d, json.load(open(os.path.join(d, "config.json")))["vocab_size"])
        ids = ",".join(str(i) for i in exp["ids"])
        p = subprocess.run([binary, "run", d, "--ids", ids, "--json"], capture_output=True, text=True)
        if p.returncode != 0:
            rows.append((name, "refused: " + p.stderr.strip()[:120]))
            failures.append(name)
            continue
        out = json.loads(p.stdout)
        diffs = {}
        for key, relative in (("attention", False), ("hidden", True), ("logits", True)):
            got, want = np.asarray(out[key], dtype=np.float64), np.asarray(exp[key], dtype=np.float64)
            if got.shape != want.shape:
                diffs[key] = float("inf")
                continue
            diffs[key] = float(np.max(np.abs(got - want))) / (float(np.max(np.abs(want))) if relative else 1.0)
        ok = diffs["attention"] <= 1e-4 and diffs["hidden"] <= 1e-3 and diffs["logits"] <= 1e-3
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
                           f"logits {diffs['logits']:.2g}  greedy {greedy}" + ("" if ok else "  FAIL")))
        if not ok:
            failures.append(name)
    width = max(len(r[0]) for r in rows)
    for name, text in rows:
        print(f"{name:<{width}}  {text}")
    print(f"{len(rows) - len(failures)} of {len(rows)} cases agree with transformers {exp.get('transformers', '')}")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "make":
        sys.exit(make(sys.argv[2]))
    if len(sys.argv) == 4 and sys.argv[1] == "check":
        sys.exit(check(sys.argv[2], sys.argv[3]))
    sys.exit(__doc__)
