"""attnviz.serve() under tensor parallelism (issue 51): every rank runs its share of the heads,
rank 0 serves and gathers the heads; the page's questions are answered as for one process.

    python3 tests/serve/test_serve_tp.py build/attnviz build/model-refs

Two ranks on the CPU (torch.distributed, gloo), each with the Llama and the Mistral of
torch_llama.py split as transformers' tp_plan splits a Llama: q_proj, k_proj and v_proj by their
output rows (rank r holds query heads 2r, 2r + 1 and K/V head r), o_proj by its input columns with
the ranks' partial outputs summed after it (an all-reduce: "rowwise"); the rest whole on each.
Checked on the same checkpoint as attnviz run:
  - the split model's logits are the whole model's (the split is right);
  - /api/info names the model's heads; /api/maps is attnviz run's every map (1e-5), every head
    gathered in the model's order; /api/qk a layer's Q and K of every head, their maps attnviz
    run's, and each key's value norm that of the whole model's (1e-5);
  - heads knocked out on any rank (/api/run's knockout) give attnviz run --knockout's maps;
  - /api/generate gives attnviz run --generate's ids;
  - the server stopped: the other rank's serve() returns.
"""
import json
import os
import socket
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, HERE)
import torch_llama  # noqa: E402  (puts the stand-in transformers on the path when there is none)
import attnviz  # noqa: E402
from answers import request, tensors  # noqa: E402

TEXT = "The cat sat on the mat, and the dog sat on the log."
WORLD = 2


class RowParallel(torch.nn.Linear):
    """A rank's share of o_proj (its heads' input columns); the ranks' partial outputs summed."""

    def forward(self, x):
        y = super().forward(x)
        dist.all_reduce(y)
        return y


def split_heads(model, rank):
    """Each attention module of `model` cut to rank `rank`'s heads, as tp_plan "colwise" (q, k, v)
    and "rowwise" (o) cut them; the config keeps the model's numbers, as transformers' does."""
    for m in [m for m in model.modules() if isinstance(m, torch_llama.Attention)]:
        D, H, KV = m.config.head_dim, m.config.num_attention_heads, m.config.num_key_value_heads
        h, kv = H // WORLD, KV // WORLD

        def rows(linear, n):
            part = torch.nn.Linear(linear.in_features, n * D, bias=False)
            part.weight.data = linear.weight.data[rank * n * D:(rank + 1) * n * D].clone()
            return part
        o = RowParallel(h * D, m.o_proj.out_features, bias=False)
        o.weight.data = m.o_proj.weight.data[:, rank * h * D:(rank + 1) * h * D].clone()
        m.q_proj, m.k_proj, m.v_proj, m.o_proj = rows(m.q_proj, h), rows(m.k_proj, kv), rows(m.v_proj, kv), o


def attnviz_json(binary, folder, ids, *more):
    out = subprocess.run([binary, "run", folder, "--ids", ",".join(map(str, ids)), "--json", *more],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def value_norms(model, ids, layer):
    """[H, T] |v_j W_o^h| of the whole model's layer, in float64 from its own v_proj and o_proj."""
    attention = next(m for m in model.modules() if isinstance(m, torch_llama.Attention) and m.layer_idx == layer)
    got = []
    hook = attention.v_proj.register_forward_hook(lambda m, i, o: got.append(o[0].double()))
    with torch.no_grad():
        model(ids)
    hook.remove()
    c = model.config
    D, H, KV = c.head_dim, c.num_attention_heads, c.num_key_value_heads
    v, w_o = got[0].view(-1, KV, D), attention.o_proj.weight.detach().double()
    return np.stack([(v[:, h // (H // KV)] @ w_o[:, h * D:(h + 1) * D].T).norm(dim=-1).numpy() for h in range(H)])


def rank_main(rank, binary, folder, port, report):
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    results = []

    def check(ok, what):
        results.append([bool(ok), what])
    try:
        name = os.path.basename(folder)
        model, tokenizer = torch_llama.load(folder)
        ids = tokenizer(TEXT)["input_ids"]
        with torch.no_grad():
            whole = model(ids).logits
        L = model.config.num_hidden_layers
        norms = value_norms(model, ids, L - 1)
        split_heads(model, rank)
        served = attnviz.serve(model, tokenizer, quiet=True)  # the other rank: returns once rank 0 stops
        if rank != 0:
            check(served is None, f"{name}: rank {rank}'s serve() returned when rank 0 stopped")
            return
        try:
            status, body = request(served, "/api/info")
            info = json.loads(body)
            check(info["heads"] == model.config.num_attention_heads, f"{name}: /api/info names the model's {info['heads']} heads")
            status, body = request(served, "/api/run", {"text": TEXT})
            run = json.loads(body)
            check(status == 200 and run["ids"] == ids[0].tolist() and run["heads"] == model.config.num_attention_heads,
                  f"{name}: /api/run on 2 ranks: {run.get('heads')} heads")
            p = torch.softmax(whole[0, -1], -1)
            check(abs(run["top"][0]["p"] - float(p.max())) < 1e-5 and run["top"][0]["id"] == int(p.argmax()),
                  f"{name}: the split model's next token is the whole model's")
            reference = np.array(attnviz_json(binary, folder, run["ids"], "--maps", "all")["attention"])
            maps = tensors(request(served, f"/api/maps?run={run['run']}")[1])[0]["attention"]
            d = float(np.abs(maps - reference).max()) if maps.shape == reference.shape else float("inf")
            check(d < 1e-5, f"{name}: /api/maps of every head gathered from 2 ranks is attnviz run's ({d:.1e})")
            qk, meta = tensors(request(served, f"/api/qk?run={run['run']}&layer={L - 1}")[1])
            H, KV = model.config.num_attention_heads, model.config.num_key_value_heads
            s = np.stack([qk["q"][h].astype(np.float64) @ qk["k"][h // (H // KV)].astype(np.float64).T * float(meta["scaling"])
                          for h in range(H)])
            T = s.shape[-1]
            window = int(meta["window"])
            allowed = np.tril(np.ones((T, T), bool)) & (np.arange(T)[None, :] > np.arange(T)[:, None] - (window or T + 1))
            s = np.where(allowed, s, -np.inf)
            w = np.exp(s - s.max(-1, keepdims=True))
            w /= w.sum(-1, keepdims=True)
            d = float(np.abs(w - reference[L - 1]).max())
            check(qk["q"].shape[0] == H and qk["k"].shape[0] == KV and d < 1e-5,
                  f"{name}: /api/qk's {H} heads' Q and {KV} K heads give attnviz run's maps ({d:.1e})")
            d = float(np.abs(qk["value_norms"] - norms).max() / np.abs(norms).max())
            check(d < 1e-5, f"{name}: the gathered value norms are the whole model's ({d:.1e} of the largest)")
            status, body = request(served, "/api/run", {"text": TEXT, "knockout": [[1, 0], [1, 3], [0, 2]]})
            out = json.loads(body)
            knocked = tensors(request(served, f"/api/maps?run={out['run']}")[1])[0]["attention"]
            want = np.array(attnviz_json(binary, folder, run["ids"], "--knockout", "2:1,2:4,1:3", "--maps", "all")["attention"])
            d = float(np.abs(knocked - want).max())
            check(d < 1e-5, f"{name}: heads 2:1 (rank 0), 2:4 and 1:3 (rank 1) knocked out: attnviz run --knockout's maps ({d:.1e})")
            status, body = request(served, "/api/generate", {"text": TEXT, "tokens": 3})
            got = json.loads(body)["ids"]
            want = attnviz_json(binary, folder, run["ids"], "--generate", "3")["generated_ids"]
            check(got == want, f"{name}: /api/generate on 2 ranks: {got}, attnviz run {want}")
        finally:
            served.stop()
    except Exception as e:  # noqa: BLE001 (said, and the case fails)
        check(False, f"rank {rank}: {type(e).__name__}: {e}")
    finally:
        with open(f"{report}.{rank}", "w") as f:
            json.dump(results, f)
        dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    binary, refs = sys.argv[1], sys.argv[2]
    if not dist.is_available():
        print("skip: this torch has no torch.distributed")
        return
    failures = 0
    for case in ("llama_l2_h4kv2_d32_f32", "mistral_l2_h4kv2_d32_f32_window"):
        with tempfile.TemporaryDirectory() as work:
            report = os.path.join(work, "report")
            mp.spawn(rank_main, args=(binary, os.path.join(refs, case), free_port(), report), nprocs=WORLD)
            for rank in range(WORLD):
                with open(f"{report}.{rank}") as f:
                    for ok, what in json.load(f):
                        print(("ok   " if ok else "FAIL ") + what)
                        failures += not ok
    print(f"{failures} failures")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
