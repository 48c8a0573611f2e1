"""The page as the front end of a model that PyTorch runs (issue 51): attnviz.serve() and
attnviz.live(). docs/NOTEBOOK.md, "A big model on your GPUs", says how to use them.

An attention function registered in transformers' AttentionInterface (attn_implementation
"attnviz") computes each layer's output and keeps, per layer, what any of its maps is
recomputed from, on the model's own devices: the heads' Q and K as the scores read them
(projected, normed, rotated: what the model hands the function) and each row's softmax
statistics, its maximum m and sum l. A map's entries are then
    weight(i, j) = exp(s(i, j) - m_i) / l_i,   s = cap(scaling * q_i . k_j), masked: -inf
for just the entries a question asks for, never layers x heads x T^2 at once. As each band of
weights is computed, it is also folded into every head's 64 x 64 blocks (the maximum of each):
the model view's thumbnails, ready when the run is.

A server in the user's process (a thread) answers the page's questions over HTTP:
    GET  /api/info                                          the model: layers, heads, limits
    POST /api/run      {"text": "...", "knockout": [[l, h]]} runs it (those heads' outputs zeroed);
                                                            the tokens and next tokens
    POST /api/generate {"text": "...", "tokens": N, "knockout": …}
                                                            the text continued by N tokens (greedy)
    GET  /api/maps     ?run=R                               every map, the import file (SPEC §3)
    GET  /api/region   ?run=R&layer=[&head=][&r0=&r1=&c0=&c1=]&rows=&cols=[&reduce=max|mean]
                                                            a region pooled (every head, the
                                                            whole map where not named)
    GET  /api/row      ?run=R&layer=&head=&q=               one query's exact weights
    GET  /api/qk       ?run=R&layer=[&head=]                Q and K of a head (or every head),
                                                            what scales and masks a score, and
                                                            each key's value norm |v_j W_o^h|
(layers and heads counted from 0; binary answers are .safetensors files, F32 but for Q and K,
which keep the model's 16-bit dtype: the numbers are the model's own). It
serves the app itself at / (the web build in the package), so a page at the same address asks
it with no cross-origin request.

Security: it listens on 127.0.0.1 unless told otherwise; every /api request carries the
random token of the URL (header X-Attnviz-Token); a request with an Origin header is answered
only for a loopback origin or one of `origins`; the Host must be a loopback name (no DNS
rebinding) when it listens on loopback; the page sends text and numbers, never code or a path;
one answer holds at most 4096^2 numbers of maps, or 2^26 of Q and K.

[SECTION] What each attention call keeps
[SECTION] Questions: a region, pooled or exact; a row; a head's Q and K
[SECTION] The model's side: runs (of several ranks: rank 0 serves, every rank runs)
[SECTION] The server
"""
import bisect
import hmac
import http.server
import json
import math
import pathlib
import secrets
import struct
import threading
import urllib.parse
import warnings

import torch

from ._figure import APP

# [SECTION] What each attention call keeps ---------------------------------------------------


class Kept:
    """One attention call's: q [H, T_q, D], k [KV, T_k, D] (as the scores read them), each row's
    max m and sum l [H, T_q] (float32; a row with no key: m 0, l 0), and what masks a score."""

    def __init__(self, q, k, m, l, scaling, softcap, sink, mask, causal, window):
        self.q, self.k, self.m, self.l = q, k, m, l
        self.scaling, self.softcap, self.sink = scaling, softcap, sink  # sink: [H] float32 or None
        self.mask = mask        # bool [T_q, T_k] (True: attends) or None: `causal` and `window` say
        self.causal, self.window = causal, window  # window: the function's sliding_window (0: none)
        self.heads, self.T_q, self.d_head = q.shape[0], q.shape[1], q.shape[2]
        self.kv_heads, self.T_k = k.shape[0], k.shape[1]
        self.thumbnails = None  # float32 [H, R, C]: every map pooled to THUMBNAIL_BLOCKS² (max), as the forward went
        self.value_norms = None  # float32 [H, T_k]: |v_j W_o^h|, what each key hands on through head h (_value_norms)

    def allowed(self, r0, r1, c0, c1):
        """bool [r1 - r0, c1 - c0]: which scores count (query i is at position T_k - T_q + i)."""
        if self.mask is not None:
            return self.mask[r0:r1, c0:c1]
        return self.pattern(self.causal, self.window, r0, r1, c0, c1)

    def pattern(self, causal, window, r0, r1, c0, c1):
        """bool [r1 - r0, c1 - c0]: the causal mask (and sliding window) alone."""
        device = self.q.device
        i = torch.arange(r0, r1, device=device)[:, None] + (self.T_k - self.T_q)
        j = torch.arange(c0, c1, device=device)[None, :]
        ok = torch.ones(r1 - r0, c1 - c0, dtype=torch.bool, device=device)
        if causal:
            ok &= j <= i
        if window:
            ok &= j > i - window
        return ok

    def mask_pattern(self):
        """(causal, window) when the mask is the causal one and a sliding window, else None
        (padding, an image's bidirectional block: the page cannot rebuild it from two numbers)."""
        if self.mask is None:
            return self.causal, self.window
        for causal, window in ((True, self.window), (True, 0), (False, 0)):
            if torch.equal(self.mask, self.pattern(causal, window, 0, self.T_q, 0, self.T_k)):
                return causal, window
        return None

    def scores(self, h, r0, r1, c0, c1, out=None):
        """float32 [rows, keys]: head h's scaled, capped scores, -inf where masked; h None:
        every head's, [H, rows, keys] (query head h reads K head h // (H / KV)). out: a float32
        [rows, keys] to compute one head's in (a band's, used again: no new pages to fault in)."""
        group = self.heads // self.kv_heads
        if h is None:
            q = self.q[:, r0:r1].float().view(self.kv_heads, group, r1 - r0, self.d_head)
            k = self.k[:, c0:c1].float()
            s = (q @ k[:, None].transpose(2, 3)).view(self.heads, r1 - r0, c1 - c0).mul_(self.scaling)
        else:
            s = torch.matmul(self.q[h, r0:r1].float(), self.k[h // group, c0:c1].float().T, out=out).mul_(self.scaling)
        if self.softcap:
            s.div_(self.softcap).tanh_().mul_(self.softcap)
        return self.mask_(s, r0, r1, c0, c1)

    def mask_(self, s, r0, r1, c0, c1):
        """s [..., rows, keys] of rows r0 ... r1 - 1 and keys c0 ... c1 - 1, -inf where masked, in
        place. The causal pattern and window: rows differ only on the keys between their first and
        last row's limits (a band's n keys a limit); on every other key one row's pattern is every
        row's. A band's pattern of rows x keys was 3 new bool tensors of 4 MB, every band, whose
        pages this CPU faulted in each time."""
        if self.mask is not None:
            return s.masked_fill_(~self.mask[r0:r1, c0:c1], float("-inf"))
        off = self.T_k - self.T_q  # query i is at position i + off
        limits = ([(r0 + off + 1, r1 + off)] if self.causal else []) + \
            ([(r0 + off - self.window + 1, r1 + off - self.window)] if self.window else [])
        if not limits:
            return s
        mixed = []  # key ranges where rows differ, within c0 ... c1 - 1, merged
        for a, b in sorted((max(a, c0), min(b, c1)) for a, b in limits):
            if a >= b:
                continue
            if mixed and a <= mixed[-1][1]:
                mixed[-1] = (mixed[-1][0], max(b, mixed[-1][1]))
            else:
                mixed.append((a, b))
        first = self.pattern(self.causal, self.window, r0, r0 + 1, c0, c1)  # [1, keys]: row r0's
        at = c0
        for a, b in mixed + [(c1, c1)]:
            if a > at:
                s[..., at - c0:a - c0].masked_fill_(~first[:, at - c0:a - c0], float("-inf"))
            if b > a:
                s[..., a - c0:b - c0].masked_fill_(~self.pattern(self.causal, self.window, r0, r1, a, b), float("-inf"))
            at = b
        return s

    def keys_seen(self, r1):
        """The end of the keys any of the rows before r1 may see: past the last row's position where
        the mask is the causal one, else every key."""
        return min(self.T_k, r1 + self.T_k - self.T_q) if self.mask is None and self.causal else self.T_k

    def weights(self, h, r0, r1, c0, c1):
        """float32 [rows, keys]: the exact weights of that region, exp(s - m) / l."""
        return self.weights_of(h, r0, r1, self.scores(h, r0, r1, c0, c1))

    def weights_of(self, h, r0, r1, s):
        """float32 [rows, n]: scores s [rows, n] of head h's rows r0 ... r1 - 1 as weights, exp(s - m) / l,
        in s's place (every caller's s is its own: a band's buffer, or a fold's result)."""
        m = self.m[h, r0:r1, None]
        inv = torch.where(self.l[h, r0:r1] > 0, 1.0 / self.l[h, r0:r1].clamp_min(1e-30), 0.0)[:, None]
        return s.sub_(m).exp_().mul_(inv)


def _output_weight(module, H, D):
    """The attention module's output projection as [H, D, d_model] (head h's rows of W_o: its
    output o_h goes on as o_h W_o^h), or None where it has none we know: a Linear o_proj, out_proj
    or dense (weight [d_model, H·D]: transposed), or GPT-2's Conv1D c_proj (weight [H·D, d_model]).
    Under tensor parallelism each rank's module holds its own heads' rows."""
    for name in ("o_proj", "out_proj", "dense", "c_proj"):
        w = getattr(getattr(module, name, None), "weight", None)
        w = w.to_local() if hasattr(w, "to_local") else w  # a DTensor (tensor parallelism): this rank's rows
        if not isinstance(w, torch.Tensor) or w.dim() != 2:
            continue
        if isinstance(getattr(module, name), torch.nn.Linear) and w.shape[1] == H * D:
            return w.detach().T.reshape(H, D, -1)
        if not isinstance(getattr(module, name), torch.nn.Linear) and w.shape[0] == H * D:
            return w.detach().reshape(H, D, -1)
    return None


def _value_norms(module, v):
    """float32 [H, T_k]: |v_j W_o^h| of each head h and key j (Kobayashi et al. 2020's norm, as
    attnviz's own runs keep it: core/model/attention_maps.hpp value_norms), from v [H, T_k, D]
    after repeat_kv; None where the module's W_o is not known. A head at a time (T_k x d_model)."""
    H, _, D = v.shape
    w_o = _output_weight(module, H, D)
    if w_o is None:
        return None
    return torch.stack([torch.linalg.vector_norm(v[h].float() @ w_o[h].float(), dim=-1) for h in range(H)])


def _mask_of(attention_mask, T_q, T_k):
    """transformers' mask for one sequence as bool [T_q, T_k] (True: attends): boolean (sdpa's
    form) or additive floats (eager's); None stays None (causal, sdpa's skipped mask)."""
    if attention_mask is None:
        return None
    mask = attention_mask[0, 0] if attention_mask.dim() == 4 else attention_mask
    mask = mask[-T_q:, :T_k]
    return mask if mask.dtype == torch.bool else mask > torch.finfo(mask.dtype).min / 2


def _repeat_kv(x, group):  # [KV, T, D] -> [KV * group, T, D]: query head h reads KV head h // group
    return x if group == 1 else x.repeat_interleave(group, dim=0)


class Recorder:
    """The attention function and what it kept, per layer, of the last run."""

    ROWS_AT_ONCE = 1 << 24  # scores held at once: heads x rows x keys

    def __init__(self, rank=0, world=1, heads=0):
        self.layers = {}      # layer index -> Kept
        self.recording = False
        self.knockout = {}    # layer index -> heads whose output is zeroed (the run's experiment)
        # Tensor parallelism (Ranks): this rank's attention holds heads rank·H_here … where
        # H_here·world is the model's `heads` (the knockout's heads are the model's)
        self.rank, self.world, self.heads = rank, world, heads

    def attention(self, module, query, key, value, attention_mask, dropout=0.0, scaling=None, sliding_window=None,
                  softcap=None, s_aux=None, **kwargs):
        """transformers' attention function: query [B, H, T_q, D], key and value [B, KV, T_k, D]
        (before repeat_kv) -> (output [B, T_q, H, D], None). Batch 0 is kept."""
        B, H, T_q, D = query.shape
        KV, T_k = key.shape[1], key.shape[2]
        scaling = D ** -0.5 if scaling is None else scaling
        causal = attention_mask is None and getattr(module, "is_causal", True) and T_q > 1
        out = torch.empty(B, H, T_q, value.shape[-1], dtype=query.dtype, device=query.device)
        stats = []
        for b in range(B):
            mask = _mask_of(attention_mask if attention_mask is None else attention_mask[b:b + 1], T_q, T_k)
            sink = None if s_aux is None else s_aux.float()
            kept = Kept(query[b], key[b], None, None, scaling, softcap, sink, mask, causal, sliding_window or 0)
            m = torch.empty(H, T_q, device=query.device)
            l = torch.empty(H, T_q, device=query.device)
            v = _repeat_kv(value[b], H // KV)
            keep = b == 0 and self.recording
            if keep:  # the model view's thumbnails, folded from each band's weights as they are computed
                row_blocks = Blocks(0, T_q, min(THUMBNAIL_BLOCKS, T_q), query.device)
                col_blocks = Blocks(0, T_k, min(THUMBNAIL_BLOCKS, T_k), query.device)
                kept.thumbnails = torch.zeros(H, len(row_blocks.edges) - 1, len(col_blocks.edges) - 1, device=query.device)
            rows = max(1, self.ROWS_AT_ONCE // max(1, H * T_k))
            for r0 in range(0, T_q, rows):  # a band of rows of every head: never T_q x T_k x H at once
                r1 = min(T_q, r0 + rows)
                s = kept.scores(None, r0, r1, 0, T_k)  # [H, rows, T_k]
                top = s.amax(-1)
                if sink is not None:
                    top = torch.maximum(top, sink[:, None])
                top = torch.where(torch.isfinite(top), top, torch.zeros((), device=top.device))
                e = torch.exp(s - top[..., None])
                total = e.sum(-1) + (torch.exp(sink[:, None] - top) if sink is not None else 0.0)
                w = e / torch.where(total > 0, total, torch.ones((), device=total.device))[..., None]
                out[b, :, r0:r1] = (w.to(value.dtype) @ v)
                m[:, r0:r1], l[:, r0:r1] = top, total
                if keep:
                    fold_rows(kept.thumbnails, col_blocks.fold_last(w, "max"), row_blocks.of[r0:r1], "max")
            if keep:
                kept.m, kept.l = m, l
                kept.value_norms = _value_norms(module, v)
                stats.append(kept)
        layer = getattr(module, "layer_idx", len(self.layers))
        first = self.rank * H if self.world > 1 and H * self.world == self.heads else 0  # this rank's first head
        for h in self.knockout.get(layer, ()):  # knocked out: the head contributes nothing (before o_proj)
            if first <= h < first + H:
                out[:, h - first] = 0
        if stats:
            self.layers[layer] = stats[0]
        return out.transpose(1, 2).contiguous(), None


# [SECTION] Questions: a region, pooled or exact; a row; a head's Q and K -----------------------

MOST_NUMBERS = 4096 * 4096  # in one answer of maps
MOST_QK = 1 << 26           # in one answer of Q and K: a layer of a 70B at 4 096 tokens, an 8B's at 8 192
THUMBNAIL_BLOCKS = 64       # the page's model view: every map pooled to 64 x 64 (core's kThumbnailBlocks)
MAPS_UP_TO = 512            # tokens: past this, /api/maps refuses (ask regions), as attnviz run does; fewer
                            # where every map would pass MOST_NUMBERS (maps_up_to)


def maps_up_to(layers, heads):
    """The tokens up to which /api/maps sends every map whole: MAPS_UP_TO, or fewer where layers x
    heads x T^2 would pass MOST_NUMBERS (a 70B's 80 x 64 heads: 57; an 8B's 32 x 32: 128); past
    them the page asks its questions (a long text's)."""
    maps = layers * heads
    return MAPS_UP_TO if maps <= 0 else max(1, min(MAPS_UP_TO, math.isqrt(MOST_NUMBERS // maps)))


def edges(first, n, blocks):
    """Block b covers first + n*b//blocks ... (core/model/attention_maps.cpp's edges)."""
    return [first + n * b // blocks for b in range(blocks + 1)]


class Blocks:
    """Positions first ... first + n - 1 cut into `blocks` contiguous blocks at edges(): folds a
    tensor's dimension of those positions into one number per block, the max or the sum, by one
    gather (a shorter block repeats its last position, left out of a sum)."""

    def __init__(self, first, n, blocks, device):
        self.edges = edges(first, n, blocks)
        starts = torch.tensor(self.edges[:-1])
        self.widths = torch.tensor([self.edges[b + 1] - self.edges[b] for b in range(blocks)])
        t = torch.arange(int(self.widths.max()))
        self.index = (starts[:, None] + torch.minimum(t[None, :], self.widths[:, None] - 1) - first).to(device)
        self.valid = (t[None, :] < self.widths[:, None]).to(device)
        self.of = torch.repeat_interleave(torch.arange(blocks), self.widths).to(device)  # each position's block

    def fold_last(self, x, reduce, out=None, first_blocks=None):
        """x [..., n] -> [..., blocks]; or of the first blocks alone, x then holding just their
        positions. out: a float32 [..., blocks * widest] to gather into."""
        index, valid = self.index[:first_blocks], self.valid[:first_blocks]
        g = (torch.index_select(x, -1, index.flatten(), out=out) if out is not None else x[..., index]).view(
            *x.shape[:-1], *index.shape)  # [..., blocks, widest]
        return g.amax(-1) if reduce == "max" else (g.mul_(valid) if out is not None else g * valid).sum(-1)


def fold_rows(out, folded, row_block, reduce):
    """Adds rows folded [..., n, C] into out [..., R, C] at their blocks (row_block: n indices)."""
    with warnings.catch_warnings():  # torch 1.13 calls index_reduce_ beta
        warnings.simplefilter("ignore", UserWarning)
        if reduce == "max":
            out.index_reduce_(-2, row_block, folded, "amax", include_self=True)
        else:
            out.index_add_(-2, row_block, folded)


def pooled(kept, head, r0, r1, c0, c1, rows, cols, reduce="max"):
    """The region pooled to at most rows x cols blocks, each the max or mean of the exact weights
    it covers: (values float32 [R, C] on the CPU, row edges, col edges). Computed a band of rows
    at a time (2^22 weights), each band folded into the blocks its rows and keys belong to. The
    max: a row's weights are exp(s - m) / l of its scores, increasing in s with one m and l a row,
    so a block's largest weight in a row is its largest score's: the scores are folded first and
    only the folded ones exponentiated (rows x C exps, not rows x keys)."""
    R, C = max(1, min(rows, r1 - r0)), max(1, min(cols, c1 - c0))
    device = kept.q.device
    row_blocks, col_blocks = Blocks(r0, r1 - r0, R, device), Blocks(c0, c1 - c0, C, device)
    out = torch.zeros(R, C, device=device)
    band = max(1, (1 << 22) // max(1, c1 - c0))
    # A band's scores and their gather, in two buffers used by every band: a band's new tensors
    # were 2^22 floats each, whose pages the CPU faulted in again and again (1.8 s against 0.35 s).
    rows_at_once = min(band, r1 - r0)
    scores = torch.empty(rows_at_once * (c1 - c0), device=device)
    gathered = torch.empty(rows_at_once * col_blocks.index.numel(), device=device)
    for i0 in range(r0, r1, band):
        i1 = min(i0 + band, r1)
        # A causal band sees no key past its last row's: the blocks that start past it hold 0 for
        # its rows (weights of masked keys), as `out` does already, and are not computed (half the
        # work of a whole causal map).
        blocks = bisect.bisect_left(col_blocks.edges, kept.keys_seen(i1), 0, C)
        if blocks == 0:
            continue
        n, end = i1 - i0, col_blocks.edges[blocks]
        s = kept.scores(head, i0, i1, c0, end, out=scores[:n * (end - c0)].view(n, end - c0))
        if reduce == "max":
            folded = kept.weights_of(head, i0, i1, col_blocks.fold_last(
                s, "max", gathered[:n * blocks * col_blocks.index.shape[1]].view(n, -1), blocks))  # [n, blocks]
        else:
            folded = col_blocks.fold_last(kept.weights_of(head, i0, i1, s), reduce, gathered[:n * blocks * col_blocks.index.shape[1]].view(n, -1), blocks)
        fold_rows(out[:, :blocks], folded, row_blocks.of[i0 - r0:i1 - r0], reduce)
    if reduce == "mean":
        out /= (row_blocks.widths[:, None] * col_blocks.widths[None, :]).to(device, torch.float32)
    return out.cpu(), row_blocks.edges, col_blocks.edges


SIXTEEN_BITS = {torch.float16: "F16", torch.bfloat16: "BF16"}


def safetensors(tensors, metadata=None, keep_16_bits=False):
    """A .safetensors file of tensors (name -> tensor), the header's metadata strings: float32,
    but F16 and BF16 tensors stay so where keep_16_bits (their bits, exact, half the bytes)."""
    header, blobs, at = {}, [], 0
    if metadata:
        header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    for name, t in tensors.items():
        t = t.detach().to("cpu").contiguous()
        dtype = SIXTEEN_BITS.get(t.dtype) if keep_16_bits else None
        if dtype:
            data = t.view(torch.int16).reshape(-1).numpy().view("u1")
        else:
            dtype, data = "F32", t.to(torch.float32).contiguous().reshape(-1).numpy().view("u1")
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [at, at + len(data)]}
        blobs.append(data)
        at += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    # The file written once, where it stays (a copy per step was 4 MB to 25 MB of new pages each).
    out = bytearray(8 + len(text) + at)
    struct.pack_into("<Q", out, 0, len(text))
    out[8:8 + len(text)] = text
    at = 8 + len(text)
    for data in blobs:
        out[at:at + len(data)] = memoryview(data)
        at += len(data)
    return out


# [SECTION] The model's side: runs -----------------------------------------------------------


class Asked(Exception):
    """A question the server will not answer: HTTP status and one line."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


def _register(model, recorder):
    """attn_implementation "attnviz" for `model`, through transformers' AttentionInterface."""
    from transformers import AttentionInterface
    AttentionInterface.register("attnviz", recorder.attention)
    try:  # the sdpa mask (boolean, or None where causal says it all) for the new name
        from transformers import AttentionMaskInterface
        from transformers.masking_utils import sdpa_mask
        AttentionMaskInterface.register("attnviz", sdpa_mask)
    except ImportError:
        pass
    if hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation("attnviz")
    else:
        model.config._attn_implementation = "attnviz"


def _ranks():
    """(rank, world size) of torch.distributed where it is initialized (torchrun), else (0, 1)."""
    import torch.distributed as dist
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def _broadcast(command):
    """Rank 0's command (a dict of JSON values, None: stop) as every rank gets it."""
    import torch.distributed as dist
    box = [command]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def _config_number(config, *names):
    for owner in (config, getattr(config, "text_config", None)):
        for name in names:
            value = getattr(owner, name, None) if owner is not None else None
            if isinstance(value, int) and value > 0:
                return value
    return 0


class Session:
    """One model and tokenizer, and the last run's kept attention. Every use holds the lock."""

    def __init__(self, model, tokenizer, name=None, max_tokens=None, keep_runs=2):
        self.model, self.tokenizer = model, tokenizer
        self.keep_runs = max(1, keep_runs)  # runs answered (two pages at once each ask of their own)
        config = getattr(model, "config", None)
        self.name = name or getattr(config, "_name_or_path", "") or type(model).__name__
        self.layers = _config_number(config, "num_hidden_layers", "n_layer")
        self.heads = _config_number(config, "num_attention_heads", "n_head")
        self.d_model = _config_number(config, "hidden_size", "n_embd")
        self.max_tokens = max_tokens or _config_number(config, "max_position_embeddings", "n_positions") or 131072
        self.kv_heads = _config_number(config, "num_key_value_heads") or self.heads
        self.rank, self.world = _ranks()
        self.recorder = Recorder(self.rank, self.world, self.heads)
        self.lock = threading.Lock()
        self.run_id, self.runs = 0, {}  # run -> (tokens, layers: index -> Kept)
        _register(model, self.recorder)

    def info(self):
        return {"attnviz": 1, "model": self.name, "layers": self.layers, "heads": self.heads,
                "max_tokens": self.max_tokens, "maps_up_to": maps_up_to(self.layers, self.heads), "most_numbers": MOST_NUMBERS}

    def _device(self):
        device = getattr(self.model, "device", None)
        return device if device is not None else next(self.model.parameters()).device

    def _ids(self, text, more=0):
        """The text's ids (1-D), checked to fit the model's positions with `more` after them."""
        ids = self.tokenizer(text, return_tensors="pt")["input_ids"][0]
        if len(ids) == 0:
            raise Asked(400, "text: it makes no token")
        if len(ids) + more > self.max_tokens:
            raise Asked(413, f"text: {len(ids)} tokens{f' and {more} more' if more else ''}, past the model's {self.max_tokens}")
        return ids

    def _forward(self, ids, knockout, record):
        """The model on ids [T] with those heads knocked out; the lock held. Of several ranks
        (rank 0 serves), every rank runs it: rank 0 sends them the command first."""
        for layer, head in knockout:
            if not (0 <= layer < self.layers and 0 <= head < self.heads):
                raise Asked(400, f"knockout: {layer + 1}:{head + 1} is not in the model's {self.layers} layers x {self.heads} heads")
        if self.world > 1:
            _broadcast({"ids": [int(i) for i in ids], "knockout": [list(p) for p in knockout], "record": record})
        return self._forward_here(ids, knockout, record)

    def _forward_here(self, ids, knockout, record):
        """The model on ids [T] on this rank; recorded: the layers kept, every rank's heads put
        together on rank 0 (gathered)."""
        self.recorder.layers, self.recorder.recording = {}, record
        for layer, head in knockout:
            self.recorder.knockout.setdefault(layer, set()).add(head)
        try:
            with torch.no_grad():
                out = self.model(input_ids=ids[None].to(self._device()), use_cache=False)
        finally:
            self.recorder.recording, self.recorder.knockout = False, {}
        if record and self.world > 1:
            self.recorder.layers = self.gathered(self.recorder.layers)
        return out

    def gathered(self, layers):
        """Every rank's heads of each kept layer, put together in the model's head order on rank 0
        (tensor parallelism: rank r's attention holds query heads r·H/W … (r+1)·H/W − 1 and K/V
        heads r·KV/W …, so head h still reads K/V head h // (H / KV)); a layer whose every head is
        here stays. A collective: every rank calls it after the same run. -> rank 0: layer -> Kept
        of every head; another rank: {}."""
        import torch.distributed as dist

        def cat(t):  # [n, ...] of each rank -> [W·n, ...]
            if t is None:
                return None
            parts = [torch.empty_like(t) for _ in range(self.world)]
            dist.all_gather(parts, t.contiguous())
            return torch.cat(parts)
        whole = {}
        for layer, k in sorted(layers.items()):
            if k.heads == self.heads:  # not split by heads (each rank runs the whole model)
                whole[layer] = k
                continue
            if k.heads * self.world != self.heads or k.kv_heads * self.world != self.kv_heads:
                raise Asked(500, f"model: layer {layer + 1} has {k.heads} heads and {k.kv_heads} K/V heads on each of {self.world} "
                                 f"ranks, not the model's {self.heads} and {self.kv_heads} split evenly")
            g = Kept(cat(k.q), cat(k.k), cat(k.m), cat(k.l), k.scaling, k.softcap, cat(k.sink), k.mask, k.causal, k.window)
            g.thumbnails, g.value_norms = cat(k.thumbnails), cat(k.value_norms)
            whole[layer] = g
        return whole if self.rank == 0 else {}

    def follow(self):
        """A rank other than 0: runs each text rank 0 runs (its commands), until it stops."""
        while True:
            command = _broadcast(None)
            if command is None:
                return
            try:
                self._forward_here(torch.tensor(command["ids"]), [tuple(p) for p in command["knockout"]], command["record"])
            except Asked as e:  # rank 0 meets the same and says it
                warnings.warn(f"attnviz: rank {self.rank}: {e}")
            self.recorder.layers = {}

    def close(self):
        """Of several ranks: the others stop following."""
        if self.world > 1 and self.rank == 0:
            with self.lock:
                _broadcast(None)
                self.world = 1  # (once)

    def generate(self, text, tokens, knockout=()):
        """The text continued by `tokens` tokens, each the likeliest (a whole forward a token, as
        the page then runs the text): {"text", "ids", "tokens"} of what was added."""
        ids = self._ids(text, tokens)
        prompt = len(ids)
        with self.lock:
            for _ in range(tokens):
                logits = getattr(self._forward(ids, knockout, False), "logits", None)
                if logits is None:
                    raise Asked(400, "generate: the model gives no logits")
                ids = torch.cat([ids, logits[0, -1].argmax().view(1).to(ids.device)])
        added = [int(i) for i in ids[prompt:]]
        # What the added tokens add to the text, as the tokenizer writes the whole (a piece alone
        # may lose its leading space).
        before, after = self.tokenizer.decode(ids[:prompt].tolist()), self.tokenizer.decode(ids.tolist())
        more = after[len(before):] if after.startswith(before) else self.tokenizer.decode(added)
        return {"text": text + more, "ids": added, "tokens": [str(t) for t in self.tokenizer.convert_ids_to_tokens(added)]}

    def run(self, text, top=10, knockout=()):
        """knockout: (layer, head) pairs from 0 whose output is zeroed in this run."""
        ids = self._ids(text)
        with self.lock:
            out = self._forward(ids, knockout, True)
            if len(self.recorder.layers) == 0:
                raise Asked(500, "model: no attention call reached attnviz's function (is attn_implementation \"attnviz\"?)")
            self.run_id += 1
            ids = [int(i) for i in ids]
            tokens = [str(t) for t in self.tokenizer.convert_ids_to_tokens(ids)]
            layers = self.recorder.layers
            self.runs[self.run_id] = (tokens, layers)
            for old in sorted(self.runs)[:-self.keep_runs]:
                del self.runs[old]
            self.recorder.layers = {}
            first = layers[min(layers)]
            answer = {"run": self.run_id, "tokens": tokens, "ids": ids, "layers": len(layers), "heads": first.heads,
                      "kv_heads": first.kv_heads, "d_head": first.d_head, "d_model": self.d_model or first.heads * first.d_head,
                      "causal": _causal(first), "windows": [k.window for _, k in sorted(layers.items())],
                      "knockout": sorted([list(pair) for pair in set(map(tuple, knockout))]), "top": []}
            logits = getattr(out, "logits", None)
            if logits is not None:
                p = torch.softmax(logits[0, -1].float(), -1)
                values, order = p.topk(min(top, p.numel()))
                answer["top"] = [{"id": int(i), "token": str(self.tokenizer.convert_ids_to_tokens([int(i)])[0]), "p": float(v)}
                                 for v, i in zip(values, order)]
            return answer

    def _run(self, query):
        """(tokens, layers) of the run a question names (an older one is gone)."""
        run = _int(query, "run", 1)
        if run not in self.runs:
            raise Asked(409, f"run: {run} is gone (the server keeps its last {self.keep_runs}, up to {self.run_id})")
        return self.runs[run]

    def kept(self, query):
        """The layer a question names, of the run it names."""
        layers = self._run(query)[1]
        return layers[_int(query, "layer", 0, len(layers) - 1)]

    def maps(self, query):
        with self.lock:
            tokens, kept = self._run(query)
            most = maps_up_to(len(kept), next(iter(kept.values())).heads if kept else 0)
            if len(tokens) > most:
                raise Asked(413, f"run: {len(tokens)} tokens: past {most}, ask for regions")
            layers = [torch.stack([k.weights(h, 0, k.T_q, 0, k.T_k) for h in range(k.heads)]) for _, k in sorted(kept.items())]
            return safetensors({"attention": torch.stack(layers)},
                               {"tokens": json.dumps(tokens, ensure_ascii=False), "model": self.name})

    def region(self, query):
        """values [R, C] of one head, or [H, R, C] of every head where none is named (the model
        view's thumbnails of a layer in one answer)."""
        with self.lock:
            k = self.kept(query)
            heads = [_int(query, "head", 0, k.heads - 1)] if "head" in query else list(range(k.heads))
            r0, r1 = _int(query, "r0", 0, k.T_q - 1, 0), _int(query, "r1", 1, k.T_q, k.T_q)
            c0, c1 = _int(query, "c0", 0, k.T_k - 1, 0), _int(query, "c1", 1, k.T_k, k.T_k)
            if r1 <= r0 or c1 <= c0:
                raise Asked(400, "region: r0 < r1 and c0 < c1")
            rows, cols = _int(query, "rows", 1, 4096), _int(query, "cols", 1, 4096)
            if len(heads) * min(rows, r1 - r0) * min(cols, c1 - c0) > MOST_NUMBERS:
                raise Asked(413, f"region: {len(heads)} heads of {rows} x {cols}, past {MOST_NUMBERS} numbers")
            reduce = query.get("reduce", ["max"])[0]
            if reduce not in ("max", "mean"):
                raise Asked(400, f"reduce: max or mean, not {reduce!r}")
            whole = (r0, r1, c0, c1) == (0, k.T_q, 0, k.T_k)
            if whole and reduce == "max" and rows == cols == THUMBNAIL_BLOCKS and k.thumbnails is not None:
                values = k.thumbnails[heads].cpu()  # folded as the forward went: the same blocks
                re, ce = edges(0, k.T_q, values.shape[1]), edges(0, k.T_k, values.shape[2])
            else:
                maps = [pooled(k, h, r0, r1, c0, c1, rows, cols, reduce) for h in heads]
                values = torch.stack([m[0] for m in maps]) if len(maps) > 1 else maps[0][0][None]
                re, ce = maps[0][1], maps[0][2]
            values = values[0] if "head" in query else values
            return safetensors({"values": values}, {"row_edges": json.dumps(re), "col_edges": json.dumps(ce), "reduce": reduce})

    def row(self, query):
        with self.lock:
            k = self.kept(query)
            head, q = _int(query, "head", 0, k.heads - 1), _int(query, "q", 0, k.T_q - 1)
            return safetensors({"weights": k.weights(head, q, q + 1, 0, k.T_k)[0]})

    def qk(self, query):
        """One head's q [T_q, D] and k [T_k, D], or where no head is named every head's, q
        [H, T_q, D] and k [KV, T_k, D] (query head h reads K head h // (H / KV)): the page
        computes that layer's rows itself as attnviz's kernel does (a long text's Lines, heatmap
        and Steps). The metadata says what a score is: scaling, softcap, sinks (per head, or
        empty), and the mask as causal and window (refused where it is none of those). Where the
        module's W_o is known, value_norms [H, T_k] (or [T_k]): |v_j W_o^h|, Explain's
        value-weighted reading."""
        with self.lock:
            k = self.kept(query)
            if "head" in query:
                head = _int(query, "head", 0, k.heads - 1)
                tensors = {"q": k.q[head], "k": k.k[head // (k.heads // k.kv_heads)]}
                if k.value_norms is not None:
                    tensors["value_norms"] = k.value_norms[head]
            else:
                tensors = {"q": k.q, "k": k.k}
                if k.value_norms is not None:
                    tensors["value_norms"] = k.value_norms
            numbers = sum(t.numel() for t in tensors.values())
            if numbers > MOST_QK:
                raise Asked(413, f"qk: {numbers} numbers, past {MOST_QK} (ask for one head)")
            pattern = k.mask_pattern()
            if pattern is None:
                raise Asked(422, "qk: this layer's mask is not a causal one (padding or a bidirectional block), "
                                 "which the page cannot rebuild; ask for regions")
            sinks = [] if k.sink is None else [float(v) for v in k.sink]
            return safetensors(tensors, {"scaling": repr(float(k.scaling)), "softcap": repr(float(k.softcap or 0)),
                                         "sinks": json.dumps(sinks), "causal": int(pattern[0]), "window": pattern[1],
                                         "heads": k.heads, "kv_heads": k.kv_heads}, keep_16_bits=True)


def _causal(k):
    """Whether a layer's attention is a decoder's (no query sees a later key)."""
    return bool(k.causal or (k.mask is not None and not bool(k.mask.triu(1 + k.T_k - k.T_q).any())))


def _int(query, name, lo, hi=None, default=None):
    if default is not None and name not in query:
        return default
    try:
        value = int(query[name][0])
    except (KeyError, IndexError, ValueError):
        raise Asked(400, f"{name}: expected a whole number") from None
    if value < lo or (hi is not None and value > hi):
        raise Asked(400, f"{name}: {value} is outside {lo} … {hi}")
    return value


# [SECTION] The server ------------------------------------------------------------------------

LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")
MOST_BODY = 1 << 20  # bytes of a POST
MOST_GENERATED = 64  # tokens one /api/generate adds
# What / serves: the web build in the package, as the site has it (the plain SIMD build).
SITE_FILES = {"": "index.html", "index.html": "index.html", "attnviz-page.js": "attnviz-page.js", "attnviz.css": "attnviz.css",
              "favicon.svg": "favicon.svg", "attnviz.js": "attnviz.js", "attnviz.wasm": "attnviz.wasm",
              "attnviz.data": "attnviz.data", "fonts/cjk-common.ttf": "fonts/cjk-common.ttf"}
TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml",
         ".wasm": "application/wasm", ".data": "application/octet-stream", ".ttf": "font/ttf"}


def _hostname(value):
    """'host:port' or a URL's netloc -> the host name, lower case, brackets kept for IPv6."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[:value.find("]") + 1]
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class Handler(http.server.BaseHTTPRequestHandler):
    server_version = "attnviz"
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet: a notebook's output is no log
        pass

    def _origin_ok(self):
        origin = self.headers.get("Origin")
        if origin is None:
            return True
        if origin in self.server.origins:
            return True
        parsed = urllib.parse.urlsplit(origin)
        return parsed.scheme == "http" and _hostname(parsed.netloc) in LOOPBACK

    def _host_ok(self):
        if not self.server.loopback_only:
            return True
        return _hostname(self.headers.get("Host", "")) in LOOPBACK

    def _cors(self):
        origin = self.headers.get("Origin")
        if origin is not None and self._origin_ok():
            self.send_header("Access-Control-Allow-Origin", origin)
            self.send_header("Vary", "Origin")

    def _send(self, status, body, kind="application/json"):
        if isinstance(body, (dict, list)):
            body = json.dumps(body, ensure_ascii=False).encode()
        self.send_response(status)
        self._cors()
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def _refuse(self, status, message):
        self._send(status, {"error": message})

    def do_OPTIONS(self):  # a cross-origin page's preflight (the token is a custom header)
        if not (self._host_ok() and self._origin_ok()):
            return self._refuse(403, "origin: not allowed")
        self.send_response(204)
        self._cors()
        self.send_header("Access-Control-Allow-Methods", "GET, POST")
        self.send_header("Access-Control-Allow-Headers", "X-Attnviz-Token, Content-Type")
        self.send_header("Access-Control-Allow-Private-Network", "true")
        self.send_header("Access-Control-Max-Age", "600")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        self._answer("GET")

    def do_POST(self):
        self._answer("POST")

    def _answer(self, method):
        if not self._host_ok():
            return self._refuse(403, "host: not a loopback name")
        if not self._origin_ok():
            return self._refuse(403, "origin: not allowed")
        url = urllib.parse.urlsplit(self.path)
        path = url.path.lstrip("/")
        if not path.startswith("api/"):
            return self._site(method, path)
        token = self.headers.get("X-Attnviz-Token", "")
        if not hmac.compare_digest(token.encode(), self.server.token.encode()):
            return self._refuse(401, "token: missing or wrong (the URL attnviz.serve() printed has it)")
        query = urllib.parse.parse_qs(url.query)
        session = self.server.session
        try:
            if method == "POST" and path in ("api/run", "api/generate"):
                return self._send(200, self._post(session, path))
            answers = {"api/info": lambda q: session.info(), "api/maps": session.maps, "api/region": session.region,
                       "api/row": session.row, "api/qk": session.qk}
            if method != "GET" or path not in answers:
                raise Asked(404, f"{method} /{path}: no such question")
            answer = answers[path](query)
            if isinstance(answer, (bytes, bytearray)):
                return self._send(200, answer, "application/octet-stream")
            return self._send(200, answer)
        except Asked as e:
            return self._refuse(e.status, str(e))
        except Exception as e:  # the model raised: say what, keep serving
            return self._refuse(500, f"{type(e).__name__}: {e}")

    def _post(self, session, path):
        length = int(self.headers.get("Content-Length", "0"))
        if length > MOST_BODY:
            raise Asked(413, f"text: {length} bytes, past {MOST_BODY}")
        try:
            body = json.loads(self.rfile.read(length).decode("utf-8"))
            text, knockout = body["text"], body.get("knockout", [])
        except (ValueError, KeyError, TypeError, AttributeError):
            raise Asked(400, "body: expected {\"text\": \"…\"}") from None
        if not isinstance(text, str):
            raise Asked(400, "text: expected a string")
        if not (isinstance(knockout, list) and len(knockout) <= 4096 and all(
                isinstance(p, list) and len(p) == 2 and all(type(v) is int for v in p) for p in knockout)):
            raise Asked(400, "knockout: expected [[layer, head], …] counted from 0")
        knockout = [tuple(p) for p in knockout]
        if path == "api/run":
            return session.run(text, knockout=knockout)
        tokens = body.get("tokens")
        if type(tokens) is not int or not 1 <= tokens <= MOST_GENERATED:
            raise Asked(400, f"tokens: expected a whole number from 1 to {MOST_GENERATED}")
        return session.generate(text, tokens, knockout)

    def _site(self, method, path):
        name = SITE_FILES.get(path)
        file = self.server.site / name if name else None
        if method != "GET" or file is None or not file.is_file():
            return self._refuse(404, f"/{path}: not found")
        body = file.read_bytes()
        if name == "index.html":  # the plain build: the package holds that one
            body = body.replace(b'<script src="attnviz-page.js">', b'<script src="attnviz-page.js" data-build="attnviz">')
        self._send(200, body, TYPES.get(pathlib.PurePosixPath(name).suffix, "application/octet-stream"))


class Served:
    """A running server: .url (the page, token and all), .stop()."""

    def __init__(self, session, host, port, origins, site, key=None):
        self.session = session
        self.httpd = http.server.ThreadingHTTPServer((host, port), Handler)
        self.httpd.daemon_threads = True
        self.httpd.session, self.httpd.origins = session, set(origins)
        self.httpd.token = key or secrets.token_urlsafe(24)
        self.httpd.loopback_only = host in LOOPBACK
        self.httpd.site = pathlib.Path(site)
        self.host, self.port = host, self.httpd.server_address[1]
        self.token = self.httpd.token
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="attnviz-serve", daemon=True)
        self.thread.start()

    @property
    def address(self):
        host = "127.0.0.1" if self.host in ("", "0.0.0.0") else self.host
        return f"http://{'[' + host + ']' if ':' in host else host}:{self.port}"

    def page_url(self, **link):
        """The app at this address, connected to this server (link parameters may follow)."""
        from ._figure import link_hash
        return f"{self.address}/#" + link_hash(dict(link, panels=True), server=".", key=self.token)

    url = property(page_url)

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.session.close()

    def __repr__(self):
        return f"attnviz serving {self.session.name} at {self.url}"

    def _repr_html_(self):  # attnviz.live(): the app in the output, at the server's own address
        import html
        return (f'<iframe src="{html.escape(self.url)}" style="width:100%;height:{self.height}px;border:0" '
                f'allow="clipboard-write"></iframe>')

    height = 720


def serve(model, tokenizer, *, host="127.0.0.1", port=0, origins=(), key=None, name=None, max_tokens=None, keep_runs=2,
          site=None, quiet=False):
    """Serves `model` (a transformers model, or any module whose attention calls the attention
    interface) to attnviz's page; prints and returns the server (its .url opens the page).
    key: the token (letters, digits, - and _; default a new random one: a server started again
    with its key and port keeps its pages). keep_runs: the runs answered (pages at once).
    Under torchrun (torch.distributed initialized), call it on every rank: rank 0 serves and
    returns the server; every other rank runs each text rank 0 runs (its share of the heads, which
    rank 0 gathers) and returns None once rank 0's server stops."""
    if key is not None and not (16 <= len(key) <= 256 and all(c.isalnum() or c in "-_" for c in key)):
        raise ValueError("key: 16 to 256 letters, digits, - and _")
    session = Session(model, tokenizer, name=name, max_tokens=max_tokens, keep_runs=keep_runs)
    if session.rank != 0:  # several ranks (torchrun): rank 0 serves, this one runs what it runs
        session.follow()
        return None
    served = Served(session, host, port, origins, site or APP, key)
    if not quiet:
        print(f"attnviz: {served.session.name} at {served.url}")
    return served


def live(model, tokenizer, *, height=720, **kwargs):
    """serve(), shown in the notebook's output as the whole app connected to it."""
    served = serve(model, tokenizer, quiet=True, **kwargs)
    served.height = height
    return served
