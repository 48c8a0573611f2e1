"""attnviz.serve() (issue 51): a model PyTorch runs, its attention kept by attnviz's attention
function and asked for over HTTP, against attnviz's own runtime on the same checkpoint.

    python3 tests/serve/test_serve.py build/attnviz build/model-refs [build-web/site]

For each case (tests/serve/torch_llama.py: a Llama-shaped and a Mistral-shaped model with a
sliding window, their masks in sdpa's and eager's forms):
  - the served function's output equals eager attention's (the model's logits, 1e-5);
  - /api/maps equals `attnviz run --ids … --json`'s maps (1e-5), /api/row its rows, /api/region
    a pooling (max and mean) of them, /api/qk the heads' rotated Q and K;
  - a text past 512 tokens: /api/maps refuses, regions and rows still answer, exactly.
And the guards: a wrong or missing token, another Origin, another Host, a question too big, a
run that is gone, a body that is not the text; a server restarted on its port; two clients at once.
"""
import json
import os
import struct
import subprocess
import sys
import threading
import urllib.request

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, HERE)
import torch_llama  # noqa: E402  (puts the stand-in transformers on the path when there is none)
import attnviz  # noqa: E402
from attnviz import _serve  # noqa: E402
from answers import request, tensors  # noqa: E402

CASES = [("llama_l2_h4kv2_d32_f32", "sdpa"), ("mistral_l2_h4kv2_d32_f32_window", "sdpa"), ("mistral_l2_h4kv2_d32_f32_window", "eager")]
TEXT = "The cat sat on the mat, and the dog sat on the log."
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def attnviz_run(binary, folder, ids):
    out = subprocess.run([binary, "run", folder, "--ids", ",".join(map(str, ids)), "--maps", "all", "--json"],
                         capture_output=True, text=True, check=True)
    return np.array(json.loads(out.stdout)["attention"], dtype=np.float64)


def pool(m, rows, cols, reduce):
    R, C = min(rows, m.shape[0]), min(cols, m.shape[1])
    re = [m.shape[0] * a // R for a in range(R + 1)]
    ce = [m.shape[1] * b // C for b in range(C + 1)]
    f = np.max if reduce == "max" else np.mean
    return np.array([[f(m[re[a]:re[a + 1], ce[b]:ce[b + 1]]) for b in range(C)] for a in range(R)])


def softmax_map(scores, causal, window):
    """The weights of T x T scores under a causal mask and a sliding window."""
    T = scores.shape[0]
    allowed = np.tril(np.ones((T, T), bool)) if causal else np.ones((T, T), bool)
    if window:
        allowed &= ~np.tril(np.ones((T, T), bool), -window)
    s = np.where(allowed, scores, -np.inf)
    w = np.exp(s - s.max(1, keepdims=True))
    return w / w.sum(1, keepdims=True)


def sixteen_bits():
    """Q and K of a 16-bit model go as they are: F16 and BF16 bits, read back equal."""
    x = torch.randn(3, 5)
    for dtype, name in ((torch.float16, "F16"), (torch.bfloat16, "BF16")):
        blob = _serve.safetensors({"x": x.to(dtype)}, keep_16_bits=True)
        got = tensors(blob)[0]["x"]
        header = json.loads(blob[8:8 + struct.unpack("<Q", blob[:8])[0]])
        check(header["x"]["dtype"] == name and np.array_equal(got, x.to(dtype).float().numpy()), f"{name} tensors kept in their bits")


def limits():
    """Whole maps only while every map fits one answer: a 70B's 80 x 64 heads up to 57 tokens, an
    8B's 32 x 32 up to 128, a small model's up to 512."""
    got = [_serve.maps_up_to(80, 64), _serve.maps_up_to(32, 32), _serve.maps_up_to(2, 4), _serve.maps_up_to(0, 0)]
    check(got == [57, 128, 512, 512] and 80 * 64 * 57 ** 2 <= _serve.MOST_NUMBERS < 80 * 64 * 58 ** 2,
          f"whole maps up to {got} tokens (80 x 64, 32 x 32, 2 x 4 heads, not known)")


def mask_patterns():
    """A layer's mask goes to the page as causal and window, or is refused (padding)."""
    q, k = torch.zeros(2, 6, 4), torch.zeros(1, 6, 4)
    i, j = torch.arange(6)[:, None], torch.arange(6)[None, :]
    for mask, want in (((j <= i) & (j > i - 3), (True, 3)), (j <= i, (True, 0)), (torch.ones(6, 6, dtype=torch.bool), (False, 0)),
                       ((j <= i) & (j != 2) | (i == j), None)):
        kept = _serve.Kept(q, k, None, None, 0.5, None, None, mask, False, 3)
        check(kept.mask_pattern() == want, f"a mask read as causal and window: {want}")


def naive_pattern(T_q, T_k, causal, window):
    """bool [T_q, T_k]: query i (at position i + T_k - T_q) sees key j, written out."""
    ok = torch.ones(T_q, T_k, dtype=torch.bool)
    for i in range(T_q):
        p = i + T_k - T_q
        if causal:
            ok[i, p + 1:] = False
        if window:
            ok[i, :max(0, p - window + 1)] = False
    return ok


def band_masks():
    """Kept.mask_ on bands of rows and keys (one pattern per row only where the rows' limits
    differ), against the pattern written out: fewer queries than keys (a generated text's last
    rows), windows shorter and longer than a band, bands off the diagonal."""
    wrong = []
    for T_q, T_k in ((300, 300), (120, 300)):
        for causal, window in ((True, 0), (True, 7), (True, 90), (False, 0), (False, 40), (True, 400)):
            kept = _serve.Kept(torch.zeros(1, T_q, 2), torch.zeros(1, T_k, 2), None, None, 1.0, None, None, None, causal, window)
            want = naive_pattern(T_q, T_k, causal, window)
            for r0, r1, c0, c1 in ((0, T_q, 0, T_k), (10, 50, 0, T_k), (60, 61, 5, 200), (33, 90, 100, 180), (0, 7, 250, T_k)):
                got = kept.mask_(torch.zeros(r1 - r0, c1 - c0), r0, r1, c0, c1).isfinite()
                if not torch.equal(got, want[r0:r1, c0:c1]):
                    wrong.append((T_q, T_k, causal, window, r0, r1, c0, c1))
    check(not wrong, f"a band's mask is the pattern written out, 60 bands ({wrong[:3]})")


def many_bands():
    """A region taller than one band (2^22 weights): the bands' pooled blocks, and a causal band's
    keys past its last row skipped (their blocks hold 0), against the whole map of the same
    statistics (Kept.weights, one call) pooled naively. A block in the wrong place would be off by
    a weight, not by the rounding of a product."""
    gen = torch.Generator().manual_seed(51)
    T, H, D = 2500, 2, 8
    for causal, window in ((True, 0), (True, 300), (False, 0)):
        q, k = torch.randn(H, T, D, generator=gen) * 2, torch.randn(1, T, D, generator=gen) * 2
        kept = _serve.Kept(q, k, None, None, D ** -0.5, None, None, None, causal, window)
        s = (q @ k[0].T * D ** -0.5).masked_fill(~naive_pattern(T, T, causal, window), float("-inf"))  # [H, T, T]
        kept.m = s.amax(-1)
        kept.l = torch.exp(s - kept.m[..., None]).sum(-1)
        whole = (torch.exp(s[1] - kept.m[1, :, None]) / kept.l[1, :, None]).double().numpy()
        for r0, r1, c0, c1, rows, cols, reduce in ((0, T, 0, T, 64, 64, "max"), (0, T, 0, T, 1000, 700, "max"),
                                                   (900, T, 5, 2300, 37, 41, "mean"), (0, T, 0, T, 3000, 3000, "mean")):
            got = _serve.pooled(kept, 1, r0, r1, c0, c1, rows, cols, reduce)[0].numpy()
            want = pool(whole[r0:r1, c0:c1], rows, cols, reduce)
            d = float(np.abs(got - want).max())
            check(got.shape == want.shape and d < 1e-5,  # float32 products of another shape: scores to ~1e-7 of 20
                  f"a region of {r1 - r0} rows, {-(-(r1 - r0) // ((1 << 22) // (c1 - c0)))} bands, causal {causal}, window {window}, "
                  f"pooled to {rows} x {cols} by {reduce} ({d:.1e})")


def served_case(binary, folder, mask):
    name = f"{os.path.basename(folder)} ({mask} mask)"
    model, tokenizer = torch_llama.load(folder, mask)
    ids = tokenizer(TEXT)["input_ids"]
    with torch.no_grad():
        eager = model(ids).logits
    served = attnviz.serve(model, tokenizer, max_tokens=1024, quiet=True)
    try:
        with torch.no_grad():
            through = model(ids).logits
        check(float((through - eager).abs().max()) < 1e-5, f"{name}: the served function's logits are eager attention's")
        status, body = request(served, "/api/info")
        info = json.loads(body)
        check(status == 200 and info["layers"] == model.config.num_hidden_layers and info["heads"] == model.config.num_attention_heads,
              f"{name}: /api/info {info}")
        status, body = request(served, "/api/run", {"text": TEXT})
        run = json.loads(body)
        check(status == 200 and run["ids"] == ids[0].tolist() and run["causal"] and len(run["top"]) == 10,
              f"{name}: /api/run: {len(run.get('ids', []))} tokens, causal, top 10")
        p = torch.softmax(eager[0, -1], -1)
        check(abs(run["top"][0]["p"] - float(p.max())) < 1e-6 and run["top"][0]["id"] == int(p.argmax()), f"{name}: the next token's p")
        reference = attnviz_run(binary, folder, run["ids"])
        status, body = request(served, f"/api/maps?run={run['run']}")
        maps, meta = tensors(body)
        diff = float(np.abs(maps["attention"] - reference).max())
        check(status == 200 and maps["attention"].shape == reference.shape and diff < 1e-5,
              f"{name}: /api/maps equals attnviz run's maps ({diff:.1e})")
        check(json.loads(meta["tokens"]) == run["tokens"], f"{name}: the maps' tokens")
        T = len(run["ids"])
        L, H = reference.shape[:2]
        status, body = request(served, f"/api/row?run={run['run']}&layer={L - 1}&head={H - 1}&q=7")
        row = tensors(body)[0]["weights"]
        check(float(np.abs(row - reference[L - 1, H - 1, 7]).max()) < 1e-5, f"{name}: /api/row")
        for reduce in ("max", "mean"):
            q = f"run={run['run']}&layer=1&head=2&r0=3&r1={T}&c0=1&c1={T - 2}&rows=4&cols=5&reduce={reduce}"
            status, body = request(served, "/api/region?" + q)
            got, meta = tensors(body)
            want = pool(reference[1, 2, 3:T, 1:T - 2], 4, 5, reduce)
            d = float(np.abs(got["values"] - want).max())
            check(status == 200 and got["values"].shape == (4, 5) and d < 1e-5, f"{name}: /api/region pooled by {reduce} ({d:.1e})")
        check(json.loads(meta["row_edges"]) == [3 + (T - 3) * a // 4 for a in range(5)], f"{name}: the region's row edges")
        status, body = request(served, f"/api/qk?run={run['run']}&layer=0&head=3")
        qk = tensors(body)[0]
        check(qk["q"].shape == (T, model.config.head_dim) and qk["k"].shape == (T, model.config.head_dim), f"{name}: /api/qk's shapes")
        scores = qk["q"].astype(np.float64) @ qk["k"].astype(np.float64).T * model.config.head_dim ** -0.5
        window = model.config.sliding_window or 0
        w = softmax_map(scores, True, window)
        check(float(np.abs(w - reference[0, 3]).max()) < 1e-5, f"{name}: Q and K give the head's map")
        # Every head's Q and K and what a score is: the page computes a layer's maps from them.
        status, body = request(served, f"/api/qk?run={run['run']}&layer={L - 1}")
        qk, meta = tensors(body)
        KV = model.config.num_key_value_heads
        check(status == 200 and qk["q"].shape == (H, T, model.config.head_dim) and qk["k"].shape == (KV, T, model.config.head_dim)
              and meta["causal"] == "1" and int(meta["window"]) == window and json.loads(meta["sinks"]) == [],
              f"{name}: /api/qk of every head: causal, window {meta.get('window')}")
        d = max(float(np.abs(softmax_map(qk["q"][h].astype(np.float64) @ qk["k"][h // (H // KV)].astype(np.float64).T
                                         * float(meta["scaling"]), meta["causal"] == "1", int(meta["window"]))
                             - reference[L - 1, h]).max()) for h in range(H))
        check(d < 1e-5, f"{name}: every head's map from /api/qk's Q, K, scaling and mask ({d:.1e})")
        # Each key's value norm |v_j W_o^h| (Explain's value-weighted reading), from the layer's
        # own v_proj and o_proj in float64
        attention = next(m for m in model.modules() if isinstance(m, torch_llama.Attention) and m.layer_idx == L - 1)
        got_v = []
        hook = attention.v_proj.register_forward_hook(lambda m, i, o: got_v.append(o[0].double()))
        with torch.no_grad():
            model(ids)
        hook.remove()
        D = model.config.head_dim
        v = got_v[0].view(T, KV, D)
        w_o = attention.o_proj.weight.detach().double()
        want = np.stack([(v[:, h // (H // KV)] @ w_o[:, h * D:(h + 1) * D].T).norm(dim=-1).numpy() for h in range(H)])
        d = float(np.abs(qk["value_norms"] - want).max() / np.abs(want).max())
        check(qk["value_norms"].shape == (H, T) and d < 1e-5, f"{name}: /api/qk's value norms are |v_j W_o^h| ({d:.1e} of the largest)")
        status, body = request(served, f"/api/region?run={run['run']}&layer={L - 1}&rows=6&cols=6")
        every = tensors(body)[0]["values"]
        d = max(float(np.abs(every[h] - pool(reference[L - 1, h], 6, 6, "max")).max()) for h in range(H))
        check(status == 200 and every.shape == (H, 6, 6) and d < 1e-5, f"{name}: /api/region of every head, the whole map ({d:.1e})")
    finally:
        served.stop()


def knockout(binary, folder):
    """A run with heads knocked out (their output zeroed before o_proj) against attnviz run --knockout."""
    model, tokenizer = torch_llama.load(folder)
    served = attnviz.serve(model, tokenizer, quiet=True)
    try:
        status, body = request(served, "/api/run", {"text": TEXT, "knockout": [[0, 1], [1, 3], [0, 1]]})
        run = json.loads(body)
        check(status == 200 and run["knockout"] == [[0, 1], [1, 3]], f"knockout: the run says its heads {run.get('knockout')}")
        out = subprocess.run([binary, "run", folder, "--ids", ",".join(map(str, run["ids"])), "--knockout", "1:2,2:4", "--maps", "all", "--json"],
                             capture_output=True, text=True, check=True)
        ref = json.loads(out.stdout)
        maps = tensors(request(served, f"/api/maps?run={run['run']}")[1])[0]["attention"]
        d = float(np.abs(maps - np.array(ref["attention"])).max())
        p = abs(run["top"][0]["p"] - ref["top"][0]["p"])
        plain = json.loads(request(served, "/api/run", {"text": TEXT})[1])
        check(d < 1e-5 and p < 1e-5 and run["top"][0]["id"] == ref["top"][0]["id"] and abs(plain["top"][0]["p"] - run["top"][0]["p"]) > 1e-4,
              f"knockout: maps {d:.1e} and next token p {p:.1e} from attnviz run --knockout 1:2,2:4 (without: p {plain['top'][0]['p']:.4f})")
        for bad, what in (([[2, 0]], b"3:1 is not"), ([[0]], b"knockout: expected"), ("1:2", b"knockout: expected")):
            status, body = request(served, "/api/run", {"text": TEXT, "knockout": bad})
            check(status == 400 and what in body, f"knockout {bad!r}: 400 ({body!r})")
    finally:
        served.stop()


def generation(binary, folder):
    """/api/generate: greedy tokens after the text, as attnviz run --generate gives them (its KV
    cache against a whole forward a token), the text continued; a knockout applies; bad counts refused."""
    model, tokenizer = torch_llama.load(folder)
    served = attnviz.serve(model, tokenizer, quiet=True)
    try:
        for knockout, flag in (([], []), ([[1, 0]], ["--knockout", "2:1"])):
            status, body = request(served, "/api/generate", {"text": TEXT, "tokens": 5, "knockout": knockout})
            got = json.loads(body)
            ids = tokenizer(TEXT)["input_ids"][0].tolist()
            out = subprocess.run([binary, "run", folder, "--ids", ",".join(map(str, ids)), "--generate", "5", "--json"] + flag,
                                 capture_output=True, text=True, check=True)
            want = json.loads(out.stdout)["generated_ids"]
            check(status == 200 and got["ids"] == want and got["text"] == TEXT + tokenizer.decode(want),
                  f"generate 5 tokens{' with 2:1 knocked out' if knockout else ''}: {got.get('ids')} as attnviz run --generate: {want}")
        for tokens, status_wanted in ((0, 400), (65, 400), ("5", 400), (60, 413)):
            status, body = request(served, "/api/generate", {"text": TEXT, "tokens": tokens})
            check(status == status_wanted, f"generate {tokens!r} tokens: {status} ({body[:70]!r})")
    finally:
        served.stop()


def long_text(binary, folder):
    """Past 512 tokens: no whole-map file; regions and rows exact against the eager forward's."""
    model, tokenizer = torch_llama.load(folder)
    served = attnviz.serve(model, tokenizer, max_tokens=2048, quiet=True)
    try:
        text = " ".join(f"word{i % 37} and" for i in range(300))
        status, body = request(served, "/api/run", {"text": text})
        run = json.loads(body)
        T = len(run["ids"])
        status, body = request(served, f"/api/maps?run={run['run']}")
        check(T > 512 and status == 413 and b"ask for regions" in body, f"long text: {T} tokens, /api/maps refuses: {body[:80]!r}")
        captured = []
        model.set_attn_implementation("eager")
        original = torch_llama.eager_attention_forward

        def keep(*a, **k):
            out, w = original(*a, **k)
            captured.append(w[0].double().numpy())
            return out, w
        torch_llama.eager_attention_forward = keep
        with torch.no_grad():
            model(torch.tensor([run["ids"]]))
        torch_llama.eager_attention_forward = original
        model.set_attn_implementation("attnviz")
        status, body = request(served, f"/api/region?run={run['run']}&layer=1&head=1&r0=0&r1={T}&c0=0&c1={T}&rows=64&cols=64")
        got = tensors(body)[0]["values"]
        d = float(np.abs(got - pool(captured[1][1], 64, 64, "max")).max())
        check(status == 200 and got.shape == (64, 64) and d < 1e-5, f"long text: the whole map pooled to 64 x 64 ({d:.1e})")
        status, body = request(served, f"/api/region?run={run['run']}&layer=0&head=0&r0={T - 20}&r1={T - 4}&c0=100&c1=140&rows=4096&cols=4096")
        got = tensors(body)[0]["values"]
        d = float(np.abs(got - captured[0][0][T - 20:T - 4, 100:140]).max())
        check(got.shape == (16, 40) and d < 1e-5, f"long text: an exact zoom, 16 x 40 ({d:.1e})")
    finally:
        served.stop()


def guards(folder, site):
    model, tokenizer = torch_llama.load(folder)
    served = attnviz.serve(model, tokenizer, origins=["https://attnviz.example"], quiet=True, site=site)
    try:
        run = json.loads(request(served, "/api/run", {"text": TEXT})[1])
        status, body = request(served, "/api/info", token=False)
        check(status == 401 and b"token" in body, f"no token: 401 ({body!r})")
        check(request(served, "/api/info", token="x" * 32)[0] == 401, "a wrong token: 401")
        check(request(served, "/api/info?token=" + served.token, token=False)[0] == 401, "the token in the query, not the header: 401")
        check(request(served, "/api/info", headers={"Origin": "http://evil.example"})[0] == 403, "another origin: 403")
        check(request(served, "/api/info", headers={"Origin": "null"})[0] == 403, "origin null: 403")
        check(request(served, "/api/info", headers={"Origin": "https://attnviz.example"})[0] == 200, "an origin given to serve(): 200")
        check(request(served, "/api/info", headers={"Origin": "http://localhost:9000"})[0] == 200, "a loopback origin (an SSH-forwarded port): 200")
        check(request(served, "/api/info", headers={"Host": "evil.example:80"})[0] == 403, "another Host (DNS rebinding): 403")
        req = urllib.request.Request(served.address + "/api/run", method="OPTIONS",
                                     headers={"Origin": "https://attnviz.example", "Access-Control-Request-Method": "POST"})
        with urllib.request.urlopen(req, timeout=10) as r:
            check(r.status == 204 and r.headers["Access-Control-Allow-Origin"] == "https://attnviz.example"
                  and "X-Attnviz-Token" in r.headers["Access-Control-Allow-Headers"], "a preflight from an allowed origin")
        status, body = request(served, f"/api/region?run={run['run']}&layer=0&head=0&r0=0&r1=3&c0=0&c1=3&rows=5000&cols=5000")
        check(status == 400 and b"rows" in body, f"a question past 4096 x 4096: 400 ({body!r})")
        check(request(served, f"/api/row?run={run['run'] + 5}&layer=0&head=0&q=0")[0] == 409, "a run that is not: 409")
        second = json.loads(request(served, "/api/run", {"text": "A dog."})[1])
        check(request(served, f"/api/row?run={run['run']}&layer=0&head=0&q=0")[0] == 200, "the run before the last still answers (two pages)")
        third = json.loads(request(served, "/api/run", {"text": "A bird."})[1])
        check(request(served, f"/api/row?run={run['run']}&layer=0&head=0&q=0")[0] == 409 and
              request(served, f"/api/row?run={third['run']}&layer=0&head=0&q=0")[0] == 200 and second["run"] + 1 == third["run"],
              "two runs kept: the third's forgets the first")
        run = third
        check(request(served, f"/api/row?run={run['run']}&layer=9&head=0&q=0")[0] == 400, "a layer the model has not: 400")
        check(request(served, "/api/run", b"{not json")[0] == 400, "a body that is not JSON: 400")
        check(request(served, "/api/run", {"text": "word " * 400})[0] == 413, "a text past the model's positions: 413")
        check(request(served, "/api/../etc/passwd")[0] == 404 and request(served, "/config.json")[0] == 404, "no file but the app's")
        if site:
            status, body = request(served, "/", token=False)
            check(status == 200 and b'data-build="attnviz"' in body, "/ is the app's page (the plain build)")
        # Two clients at once: every answer whole and right.
        want = request(served, f"/api/region?run={run['run']}&layer=1&head=1&r0=0&r1=10&c0=0&c1=10&rows=3&cols=3")[1]
        answers = []
        threads = [threading.Thread(target=lambda: answers.append(request(served, f"/api/region?run={run['run']}&layer=1&head=1&r0=0&r1=10&c0=0&c1=10&rows=3&cols=3")[1]))
                   for _ in range(8)]
        [t.start() for t in threads]
        [t.join() for t in threads]
        check(len(answers) == 8 and all(a == want for a in answers), "eight requests at once: the same answer each")
        port = served.port
    finally:
        served.stop()
    try:
        attnviz.serve(model, tokenizer, key="short", quiet=True)
        check(False, "a key too short is refused")
    except ValueError as e:
        check("key" in str(e), f"a key too short is refused: {e}")
    again = attnviz.serve(model, tokenizer, port=port, quiet=True)
    try:
        status, _ = request(again, "/api/run", {"text": TEXT})
        check(status == 200 and again.port == port, "a server restarted on its port answers")
    finally:
        again.stop()


def main():
    binary, refs = sys.argv[1], sys.argv[2]
    site = sys.argv[3] if len(sys.argv) > 3 and os.path.isdir(sys.argv[3]) else None
    sixteen_bits()
    limits()
    mask_patterns()
    band_masks()
    many_bands()
    for case, mask in CASES:
        served_case(binary, os.path.join(refs, case), mask)
    knockout(binary, os.path.join(refs, "llama_l2_h4kv2_d32_f32"))
    generation(binary, os.path.join(refs, "llama_l2_h4kv2_d32_f32"))
    long_text(binary, os.path.join(refs, "llama_l2_h4kv2_d32_f32"))
    guards(os.path.join(refs, "llama_l2_h4kv2_d32_f32"), site)
    print(f"{len(failures)} failures")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
