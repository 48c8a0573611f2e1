#!/usr/bin/python3
"""attnviz against llama.cpp on the same GGUF files, side by side in one run (issue 48's speed
and memory): SmolLM2-135M's shape (llama: 30 layers, d 576, 9 heads / 3 KV, d_ff 1536, vocab
49152, tied) with random weights in Q8_0 and in Q4_0, written here (tests/model/gguf_files.py's
container; the two formats quantized with numpy, as ggml's quantize_row_*_ref do), or with
--shape llama-3.2-1b / llama-3.2-3b Llama-3.2-1B's (16 layers, d 2048, 32 heads / 8 KV) or 3B's
(28 layers, d 3072, 24 heads / 8 KV; both d_ff 8192, vocab 128256, tied), also in Q4_K_M and
Q5_K_M as llama.cpp lays them out (Q4_K or Q5_K, and Q6_K for attn_v, every other
ffn_down and the tied token_embd): random blocks, each block's bytes drawn at random and its
scales d and dmin set so that the weights are about 1/√d_in, as no quantizer is fast enough in
Python for 3.2 B numbers; then
  attnviz:   build/attn_bench_model --gguf FILE --T T --threads N (the forward, every map kept)
  llama.cpp: bench/llama_cpp_prompt.mjs (node-llama-cpp's prebuilt CPU binary, the prompt as one
             batch, F32 KV cache), the same ids and threads.
The K-quants are not written here (their quantizers are per block in Python: minutes for 135 M
numbers). Prints RESULT lines; docs/BENCHMARKS.md keeps them with the machine.

usage: /usr/bin/python3 bench/gguf_llama_cpp.py [--T 128] [--threads 1] [--reps 5] [--types Q8_0,Q4_0]
       /usr/bin/python3 bench/gguf_llama_cpp.py --shape llama-3.2-3b --types Q4_K_M [--T 16] [--no-llama-cpp]
"""
import argparse
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "model"))
import gguf_files as G  # noqa: E402

# D, LAYERS, HEADS, KV, HD, FF, VOCAB, RoPE base
SHAPES = {"smollm2-135m": (576, 30, 9, 3, 64, 1536, 49152, 100000.0),
          "llama-3.2-1b": (2048, 16, 32, 8, 64, 8192, 128256, 500000.0),
          "llama-3.2-3b": (3072, 28, 24, 8, 128, 8192, 128256, 500000.0)}


def random_k_blocks(rows, n, kind, rng):
    """rows × n numbers of Q4_K, Q5_K or Q6_K as random blocks: every byte random but the scales,
    set so that the numbers are about ±2/√n (Q4_K, Q5_K: d·scale·q − dmin·min centred; Q6_K:
    d·scale·(q − 32))."""
    blocks = rows * n // 256
    if kind in ("Q4_K", "Q5_K"):
        top = 15 if kind == "Q4_K" else 31  # the largest q
        out = rng.integers(0, 256, (blocks, 144 if kind == "Q4_K" else 176), dtype=np.uint8)
        d = 2 / (63 * top * np.sqrt(n))
        out[:, 0:2] = np.frombuffer(np.float16(d).tobytes(), np.uint8)
        out[:, 2:4] = np.frombuffer(np.float16(top / 2 * d).tobytes(), np.uint8)
    else:
        out = rng.integers(0, 256, (blocks, 210), dtype=np.uint8)
        out[:, 208:210] = np.frombuffer(np.float16(2 / (128 * 32 * np.sqrt(n))).tobytes(), np.uint8)
    return out.tobytes()


def quantize(x, kind):
    """x [rows, n] -> raw bytes of Q8_0 or Q4_0, blocks of 32 (ggml's reference quantizers, vectorized)."""
    b = x.reshape(-1, 32).astype(np.float32)
    if kind == "Q8_0":
        d = np.abs(b).max(1) / 127
        q = np.rint(b / np.where(d == 0, 1, d)[:, None]).astype(np.int8)
        out = np.zeros((len(b), 34), np.uint8)
        out[:, :2] = d.astype("<f2").view(np.uint8).reshape(-1, 2)
        out[:, 2:] = q.view(np.uint8)
        return out.tobytes()
    m = b[np.arange(len(b)), np.abs(b).argmax(1)]
    d = m / -8
    q = np.minimum(15, (b * np.where(d == 0, 0, 1 / np.where(d == 0, 1, d))[:, None] + 8.5).astype(np.int8)).astype(np.uint8)
    out = np.zeros((len(b), 18), np.uint8)
    out[:, :2] = d.astype("<f2").view(np.uint8).reshape(-1, 2)
    out[:, 2:] = q[:, :16] | (q[:, 16:] << 4)
    return out.tobytes()


def write_model(path, kind, shape):
    D, LAYERS, HEADS, KV, HD, FF, VOCAB, THETA = SHAPES[shape]
    rng = np.random.default_rng(1)
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{i:02X}>" for i in range(256)]
    tokens += [f"\u2581t{i}" for i in range(VOCAB - len(tokens))]
    meta = [("general.architecture", G.STRING, "llama"), ("general.name", G.STRING, f"{shape}-shape-{kind}"),
            ("llama.context_length", G.U32, 8192), ("llama.embedding_length", G.U32, D), ("llama.block_count", G.U32, LAYERS),
            ("llama.feed_forward_length", G.U32, FF), ("llama.attention.head_count", G.U32, HEADS),
            ("llama.attention.head_count_kv", G.U32, KV), ("llama.rope.freq_base", G.F32, THETA),
            ("llama.attention.layer_norm_rms_epsilon", G.F32, 1e-5), ("llama.rope.dimension_count", G.U32, HD),
            ("tokenizer.ggml.model", G.STRING, "llama"), ("tokenizer.ggml.tokens", G.ARRAY, (G.STRING, tokens)),
            ("tokenizer.ggml.scores", G.ARRAY, (G.F32, [-float(i) for i in range(VOCAB)])),
            ("tokenizer.ggml.token_type", G.ARRAY, (G.I32, [2, 3, 3] + [6] * 256 + [1] * (VOCAB - 259))),
            ("tokenizer.ggml.bos_token_id", G.U32, 1), ("tokenizer.ggml.eos_token_id", G.U32, 2)]
    shapes = [("token_embd.weight", (VOCAB, D)), ("output_norm.weight", (D,))]
    for i in range(LAYERS):
        p = f"blk.{i}."
        shapes += [(p + "attn_norm.weight", (D,)), (p + "attn_q.weight", (HEADS * HD, D)), (p + "attn_k.weight", (KV * HD, D)),
                   (p + "attn_v.weight", (KV * HD, D)), (p + "attn_output.weight", (D, HEADS * HD)), (p + "ffn_norm.weight", (D,)),
                   (p + "ffn_gate.weight", (FF, D)), (p + "ffn_up.weight", (FF, D)), (p + "ffn_down.weight", (D, FF))]
    tensors = []
    for name, dims in shapes:
        if len(dims) == 1:
            x = (1 + 0.1 * rng.standard_normal(dims)).astype(np.float32)
            tensors.append((name, "F32", dims, x.astype("<f4").tobytes()))
        elif kind in ("Q4_K_M", "Q5_K_M"):  # llama.cpp's choice: Q6_K for attn_v, the tied table and every other ffn_down
            layer = int(name.split(".")[1]) if name.startswith("blk.") else -1
            six = "attn_v" in name or name.startswith("token_embd") or ("ffn_down" in name and layer % 2 == 0)
            k = "Q6_K" if six else kind[:4]
            tensors.append((name, k, dims, random_k_blocks(dims[0], dims[1], k, rng)))
        else:
            x = (rng.standard_normal(dims) / np.sqrt(dims[1])).astype(np.float32)
            tensors.append((name, kind, dims, quantize(x, kind)))
    G.write_gguf(path, meta, tensors)


def results(command):
    p = subprocess.run(command, capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"{' '.join(command)}: {p.stderr.strip()[-500:]}")
    return [line for line in p.stdout.splitlines() if line.startswith("RESULT")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--T", type=int, default=128)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--types", default="Q8_0,Q4_0")
    ap.add_argument("--shape", default="smollm2-135m", choices=sorted(SHAPES))
    ap.add_argument("--no-llama-cpp", action="store_true", help="attnviz alone")
    ap.add_argument("--bench", default=os.path.join(ROOT, "build", "attn_bench_model"))
    ap.add_argument("--modules", default=os.path.join(ROOT, "tests", "model", "llama_cpp", "node_modules"))
    a = ap.parse_args()
    for kind in a.types.split(","):
        path = f"/tmp/attn_bench_{a.shape}_{kind}.gguf"
        if not os.path.exists(path):  # in a child: Linux keeps a process's peak RSS across exec, and
            # the writer's arrays would show in the bench's peak (ru_maxrss)
            subprocess.run([sys.executable, __file__, "--write", path, kind, a.shape], check=True)
        print(f"{kind}: {os.path.getsize(path) / 1e6:.1f} MB file")
        for line in results([a.bench, "--gguf", path, "--T", str(a.T), "--threads", str(a.threads), "--reps", str(a.reps)]):
            print(f"  attnviz   {line}")
        if a.no_llama_cpp:
            continue
        for line in results(["node", os.path.join(HERE, "llama_cpp_prompt.mjs"), a.modules, path, str(a.T), str(a.threads), str(a.reps)]):
            print(f"  llama.cpp {line}")


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--write":
        write_model(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        main()
