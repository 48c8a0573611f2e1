"""Reference forward passes of GPT-2, BERT, Marian, the Llama-like, ViT and the vision towers of
CLIP and SigLIP in float64 PyTorch, written from the architectures' definitions (Hugging Face
semantics), for checking attnviz's C++ model runtime. (The vision ones — vit_forward,
clip_vision_forward, siglip_vision_forward — take the processor's pixel values [C, H, W] instead
of ids; their checkpoints come from tests/model/make_vision_models.py.)

idefics3_forward (Idefics3 / SmolVLM: the vision tower on each view of
tests/model/image_reference.py's idefics3_process(), the pixel shuffle and projection, and
llama_like_forward over the ids with the image rows merged in) takes the ids and the views;
gemma3_forward (Gemma 3 with images: SigLIP on the one view of image_reference's process(), the
projector's average pooling, norm and product, and the Gemma 3 text model with each picture's
rows attending to one another both ways) likewise; qwen2_5_vl_forward (Qwen2.5-VL: its own tower
on the patches of image_reference's qwen2_vl_process(), windowed attention and 2-D rotations in
transformers' permuted order, the maps put back in the picture's row order, the merger, and a
Qwen2 with M-RoPE over the ids, its positions from qwen2_5_vl_rope_index) too.

Each forward takes `W`, a dict of float64 tensors named as in a Hugging Face checkpoint without
its head prefix (gpt2 "h.0.attn.c_attn.weight", bert "encoder.layer.0...", marian
"encoder.layers.0...", clip and siglip the tower's "encoder.layers.0..." without "vision_model."),
the config.json dict (clip: a CLIPModel's vision_config) and the token ids, and returns a dict:
  attention / encoder_attention, decoder_attention, cross_attention: [L, H, T_q, T_k]
  hidden: [T, d]   the last layer's output (gpt2 after ln_f; marian the decoder's; CLIP's vision
                   tower before post_layernorm, SigLIP's after it: their last_hidden_state)
  logits: [V]      the LM head at the last position (gpt2, marian); vit: [num_labels], the
                   classifier on the [CLS] row (ViTForImageClassification only)
  q: {stack: [L, H, T_q, d_head]}  each head's queries before the 1/sqrt(d_head) scaling
  x: {stack: [L, T_q, d]}          the input of each attention block as its Q projection reads it

Experiments (SPEC.md §5; `edits`, an Edits, default none): heads knocked out (their output,
probs·V before the output projection, zeroed or replaced by its mean over the query positions)
and hidden tokens (keys no query attends to, in gpt2's and bert's self-attention and marian's
encoder self and cross attention; a query left without keys gets a row of zeros). Generation:
gpt2_generate, with sample() picking each token as transformer.hpp's pick_token writes it.

The "why" views (SPEC.md §5 --lens, --attribute, --corrupted; gpt2 and the Llama-like): with
`hooks=Hooks(...)` gpt2_forward and llama_like_forward record the residual stream, each head's
context, v and each block's attention and MLP output, and patch heads' contexts and rows of the
stream; lens(), attribution() and patching() compute the three views from them, each asserting
its own invariants (the parts sum to the logit, a patched final row restores the clean run).

Imported by tests/model/make_models.py and tests/model/test_reference.py; no command line.
"""
import math
from dataclasses import dataclass, field

import numpy as np
import torch


@dataclass(frozen=True)
class Edits:
    knockout: frozenset = frozenset()  # {(stack, layer, head)} from 0; stack as transformer.hpp's
    mean: bool = False                  # mean ablation instead of zeros
    hidden: tuple = ()                  # hidden key positions from 0


NONE = Edits()


@dataclass
class Hooks:
    """What a decoder forward (gpt2_forward, llama_like_forward) records and patches when given one.
    Patches, set by the caller (tensors in float64):
      patch_context {(layer, head): [T, hd]}  that head's context (probs·V before the output
                    projection, after any knockout) replaced at every position
      patch_resid   {(r, position): [d]}      a row of the residual stream replaced: r = 0 the
                    embeddings (gemma's scaled), r = l + 1 the stream after layer l (r = L: the
                    stream before the final norm)
    Records, filled by the forward (fresh lists each run):
      resid     L + 1 × [T, d]       the stream: [0] the embeddings, [l + 1] after layer l (after
                                     both residual adds), as patched
      context   L × [H, T, hd]       each head's context as the output projection reads it
      v         L × [H, T, hd]       the values each head mixes (after repeat_kv)
      attn_out  L × [T, d]           context·W_Oᵀ + b_O, before any post-attention norm
      mlp_out   L × [T, d]           the MLP's output with its biases, before any post-feedforward norm"""
    patch_context: dict = field(default_factory=dict)
    patch_resid: dict = field(default_factory=dict)
    resid: list = field(default_factory=list)
    context: list = field(default_factory=list)
    v: list = field(default_factory=list)
    attn_out: list = field(default_factory=list)
    mlp_out: list = field(default_factory=list)

    def start(self):
        self.resid, self.context, self.v, self.attn_out, self.mlp_out = [], [], [], [], []


def hook_stream(hooks, r, x):  # x [T, d]: the stream at r, its patched rows replaced; recorded
    if hooks is None:
        return x
    rows = [(t, row) for (s, t), row in hooks.patch_resid.items() if s == r]
    if rows:
        x = x.clone()
        for t, row in rows:
            x[t] = row
    hooks.resid.append(x)
    return x


def hook_context(hooks, layer, context, v):  # context, v [H, T, hd] -> the context as patched; recorded
    if hooks is None:
        return context
    patches = [(h, c) for (l, h), c in hooks.patch_context.items() if l == layer]
    if patches:
        context = context.clone()
        for h, c in patches:
            context[h] = c
    hooks.context.append(context), hooks.v.append(v)
    return context


def hook_outputs(hooks, attn_out, mlp_out):
    if hooks is not None:
        hooks.attn_out.append(attn_out), hooks.mlp_out.append(mlp_out)

# [SECTION] The shared pieces ------------------------------------------------------------------


def layer_norm(x, w, b, eps):  # x [T, d]; biased variance, as torch.nn.LayerNorm
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * w + b


def gelu_tanh(x):  # "gelu_new" (GPT-2): the tanh approximation
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def gelu_erf(x):  # "gelu": exact
    return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))


def silu(x):  # "swish" / "silu"
    return x * torch.sigmoid(x)


def quick_gelu(x):  # CLIP's "quick_gelu": x·sigmoid(1.702·x)
    return x * torch.sigmoid(1.702 * x)


ACTIVATIONS = {"gelu_new": gelu_tanh, "gelu_pytorch_tanh": gelu_tanh, "gelu": gelu_erf, "swish": silu,
               "silu": silu, "relu": torch.relu, "quick_gelu": quick_gelu}


def linear(x, W, prefix):  # nn.Linear: weight [out, in], y = x·Wᵀ + b
    return x @ W[prefix + ".weight"].T + W[prefix + ".bias"]


def conv1d(x, W, prefix):  # GPT-2's Conv1D: weight [in, out], y = x·W + b
    return x @ W[prefix + ".weight"] + W[prefix + ".bias"]


def attend(q, k, v, n_heads, causal, hidden=(), knocked=(), mean=False):
    """q [T_q, d], k and v [T_k, d] -> (context [T_q, d], probs [H, T_q, T_k], q_heads [H, T_q, d_head]).
    hidden: key positions masked for every query; knocked: heads whose context is ablated."""
    T_q, d = q.shape
    T_k = k.shape[0]
    d_head = d // n_heads
    q_heads = q.reshape(T_q, n_heads, d_head).transpose(0, 1)  # [H, T_q, d_head]
    k_heads = k.reshape(T_k, n_heads, d_head).transpose(0, 1)  # [H, T_k, d_head]
    v_heads = v.reshape(T_k, n_heads, d_head).transpose(0, 1)
    scores = q_heads @ k_heads.transpose(1, 2) / math.sqrt(d_head)  # [H, T_q, T_k]
    masked = torch.zeros(T_q, T_k, dtype=torch.bool)
    if causal:  # query i sees keys 0..i
        masked = masked | torch.triu(torch.ones(T_q, T_k, dtype=torch.bool), diagonal=1)  # not in place: ONNX export traces it
    for j in hidden:
        masked[:, j] = True
    probs = torch.softmax(scores.masked_fill(masked, float("-inf")), dim=-1)
    probs = probs.masked_fill(masked.all(-1)[None, :, None], 0.0)  # no key: zeros, not NaN
    context = probs @ v_heads  # [H, T_q, d_head]
    for h in knocked:
        context[h] = context[h].mean(0, keepdim=True).expand(T_q, d_head) if mean else 0.0
    return context.transpose(0, 1).reshape(T_q, d), probs, q_heads  # heads concatenated


def knocked(edits, stack, layer):
    return [h for (s, l, h) in edits.knockout if (s, l) == (stack, layer)]


def sinusoidal_positions(n_positions, d):
    """MarianSinusoidalPositionalEmbedding's table [P, d]: angle[pos, j] = pos / 10000^(2·(j//2)/d);
    columns 0..d/2-1 hold sin of the even j's angles, columns d/2.. cos of the odd j's."""
    pos = torch.arange(n_positions, dtype=torch.float64)[:, None]
    j = torch.arange(d, dtype=torch.float64)[None, :]
    angle = pos / torch.pow(10000.0, 2 * torch.div(j, 2, rounding_mode="floor") / d)  # [P, d]
    half = (d + 1) // 2  # HF's sentinel
    out = torch.empty(n_positions, d, dtype=torch.float64)
    out[:, :half] = torch.sin(angle[:, 0::2])
    out[:, half:] = torch.cos(angle[:, 1::2])
    return out

# [SECTION] GPT-2: pre-LN decoder, causal self-attention, tied LM head -------------------------


def gpt2_forward(W, cfg, ids, edits=NONE, hooks=None):
    T, eps = len(ids), cfg["layer_norm_epsilon"]
    act = ACTIVATIONS[cfg["activation_function"]]
    if hooks is not None:
        hooks.start()
    x = hook_stream(hooks, 0, W["wte.weight"][ids] + W["wpe.weight"][:T])  # [T, d]
    maps, qs, xs = [], [], []
    for i in range(cfg["n_layer"]):
        p = f"h.{i}."
        a = layer_norm(x, W[p + "ln_1.weight"], W[p + "ln_1.bias"], eps)  # [T, d]
        q, k, v = conv1d(a, W, p + "attn.c_attn").chunk(3, dim=-1)  # [T, 3d] -> 3 × [T, d]
        context, probs, q_heads = attend(q, k, v, cfg["n_head"], True, edits.hidden, knocked(edits, 0, i), edits.mean)
        if hooks is not None:  # [T, H·hd] <-> [H, T, hd]
            H, d = cfg["n_head"], context.shape[1]
            split = lambda y: y.reshape(T, H, d // H).transpose(0, 1)  # noqa: E731
            context = hook_context(hooks, i, split(context), split(v)).transpose(0, 1).reshape(T, d)
        o = conv1d(context, W, p + "attn.c_proj")
        x = x + o
        m = layer_norm(x, W[p + "ln_2.weight"], W[p + "ln_2.bias"], eps)
        f = conv1d(act(conv1d(m, W, p + "mlp.c_fc")), W, p + "mlp.c_proj")  # [T, d_ff] -> [T, d]
        x = hook_stream(hooks, i + 1, x + f)
        hook_outputs(hooks, o, f)
        maps.append(probs), qs.append(q_heads), xs.append(a)
    x = layer_norm(x, W["ln_f.weight"], W["ln_f.bias"], eps)
    logits = x[-1] @ W["wte.weight"].T  # [V]
    return {"attention": torch.stack(maps), "hidden": x, "logits": logits,
            "q": {"attention": torch.stack(qs)}, "x": {"attention": torch.stack(xs)}}

# [SECTION] BERT: post-LN encoder, embeddings with LayerNorm, no mask ---------------------------


def bert_forward(W, cfg, ids, edits=NONE):
    T, eps = len(ids), cfg["layer_norm_eps"]
    act = ACTIVATIONS[cfg["hidden_act"]]
    e = "embeddings."
    x = W[e + "word_embeddings.weight"][ids] + W[e + "position_embeddings.weight"][:T] \
        + W[e + "token_type_embeddings.weight"][0]  # token_type_ids all 0
    x = layer_norm(x, W[e + "LayerNorm.weight"], W[e + "LayerNorm.bias"], eps)  # [T, d]
    maps, qs, xs = [], [], []
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        q = linear(x, W, p + "attention.self.query")  # [T, d]
        k = linear(x, W, p + "attention.self.key")
        v = linear(x, W, p + "attention.self.value")
        context, probs, q_heads = attend(q, k, v, cfg["num_attention_heads"], False, edits.hidden, knocked(edits, 0, i), edits.mean)
        maps.append(probs), qs.append(q_heads), xs.append(x)
        x = layer_norm(x + linear(context, W, p + "attention.output.dense"),
                       W[p + "attention.output.LayerNorm.weight"], W[p + "attention.output.LayerNorm.bias"], eps)
        h = act(linear(x, W, p + "intermediate.dense"))  # [T, d_ff]
        x = layer_norm(x + linear(h, W, p + "output.dense"),
                       W[p + "output.LayerNorm.weight"], W[p + "output.LayerNorm.bias"], eps)
    return {"attention": torch.stack(maps), "hidden": x,
            "q": {"attention": torch.stack(qs)}, "x": {"attention": torch.stack(xs)}}

# [SECTION] ViT: pre-LN encoder over patches, a [CLS] row, a classifier on it --------------------


def conv_patches(pixel_values, weight, bias=None):
    """pixel_values [C, H, W], weight [d, C, p, p] -> [N, d]: a Conv2d with kernel = stride = p
    (ViT's, CLIP's and SigLIP's patch embedding) as a product, each patch's pixels in the kernel's
    order (channel, row, column); patches in row order (flatten(2).transpose(1, 2) of the conv's
    [d, H/p, W/p]). bias None: CLIP's (bias=False)."""
    d, C, p, _ = weight.shape
    x = torch.as_tensor(pixel_values, dtype=torch.float64)
    R, K = x.shape[1] // p, x.shape[2] // p
    x = x[:, :R * p, :K * p]  # the stride drops what is left over (DINOv2 reads any size)
    cells = x.reshape(C, R, p, K, p).permute(1, 3, 0, 2, 4).reshape(R * K, C * p * p)  # [N, C·p·p]
    out = cells @ weight.reshape(d, C * p * p).T
    return out if bias is None else out + bias


def vit_patches(W, cfg, pixel_values):
    """pixel_values [C, H, W] -> [N, d]: ViT's patch projection (with its bias), conv_patches."""
    return conv_patches(pixel_values, W["embeddings.patch_embeddings.projection.weight"],
                        W["embeddings.patch_embeddings.projection.bias"])


def vit_forward(W, cfg, pixel_values, edits=NONE):
    """ViTModel / ViTForImageClassification at the trained size (no position interpolation):
    pixel_values [C, H, W] as the image processor hands them (float32 values, any array) ->
    attention [L, H, T, T] (T = 1 + (H/p)·(W/p), [CLS] first), hidden [T, d] after the final
    `layernorm`, logits [num_labels] (the classifier on the [CLS] row; only when W has it),
    q, x: the queries before scaling and the layernorm_before output the Q projection reads."""
    eps = cfg["layer_norm_eps"]
    act = ACTIVATIONS[cfg["hidden_act"]]
    e = "embeddings."
    size, p = cfg["image_size"], cfg["patch_size"]
    values = torch.as_tensor(pixel_values, dtype=torch.float64)
    assert tuple(values.shape) == (cfg.get("num_channels", 3), size, size), f"pixel_values {tuple(values.shape)}"
    x = torch.cat([W[e + "cls_token"].reshape(1, -1), vit_patches(W, cfg, values)])  # [T, d]
    assert x.shape[0] == 1 + (size // p) ** 2
    x = x + W[e + "position_embeddings"][0]
    maps, qs, xs = [], [], []
    for i in range(cfg["num_hidden_layers"]):
        lp = f"encoder.layer.{i}."
        a = layer_norm(x, W[lp + "layernorm_before.weight"], W[lp + "layernorm_before.bias"], eps)
        s = lp + "attention.attention."
        q, k, v = (a @ W[s + n + ".weight"].T + W.get(s + n + ".bias", 0.0) for n in ("query", "key", "value"))
        context, probs, q_heads = attend(q, k, v, cfg["num_attention_heads"], False, edits.hidden,
                                         knocked(edits, 0, i), edits.mean)
        maps.append(probs), qs.append(q_heads), xs.append(a)
        x = x + linear(context, W, lp + "attention.output.dense")
        m = layer_norm(x, W[lp + "layernorm_after.weight"], W[lp + "layernorm_after.bias"], eps)
        x = x + linear(act(linear(m, W, lp + "intermediate.dense")), W, lp + "output.dense")
    x = layer_norm(x, W["layernorm.weight"], W["layernorm.bias"], eps)
    out = {"attention": torch.stack(maps), "hidden": x, "q": {"attention": torch.stack(qs)},
           "x": {"attention": torch.stack(xs)}}
    if "classifier.weight" in W:
        out["logits"] = linear(x[0], W, "classifier")  # [num_labels]
    return out

# [SECTION] CLIP's and SigLIP's vision towers: ViT's pre-LN layers under other names ---------------


def vision_tower_layers(W, cfg, x, edits=NONE):
    """CLIPEncoder / SiglipEncoder (the same CLIPEncoderLayer): for each layer i,
    x = x + out_proj(attention(layer_norm1(x))); x = x + fc2(act(fc1(layer_norm2(x)))), the
    scores scaled by head_dim^-0.5, no mask. W: "encoder.layers.{i}.…" (the tower's names
    without "vision_model."). -> (x, maps, qs, xs) as vit_forward keeps them."""
    eps, H = cfg["layer_norm_eps"], cfg["num_attention_heads"]
    act = ACTIVATIONS[cfg["hidden_act"]]
    maps, qs, xs = [], [], []
    for i in range(cfg["num_hidden_layers"]):
        lp = f"encoder.layers.{i}."
        a = layer_norm(x, W[lp + "layer_norm1.weight"], W[lp + "layer_norm1.bias"], eps)
        q, k, v = (linear(a, W, lp + f"self_attn.{n}_proj") for n in ("q", "k", "v"))
        context, probs, q_heads = attend(q, k, v, H, False, edits.hidden, knocked(edits, 0, i), edits.mean)
        maps.append(probs), qs.append(q_heads), xs.append(a)
        x = x + linear(context, W, lp + "self_attn.out_proj")
        m = layer_norm(x, W[lp + "layer_norm2.weight"], W[lp + "layer_norm2.bias"], eps)
        x = x + linear(act(linear(m, W, lp + "mlp.fc1")), W, lp + "mlp.fc2")
    return x, maps, qs, xs


def tower_pixels(cfg, pixel_values):
    size = cfg["image_size"]
    values = torch.as_tensor(pixel_values, dtype=torch.float64)
    assert tuple(values.shape) == (cfg.get("num_channels", 3), size, size), f"pixel_values {tuple(values.shape)}"
    return values


def clip_vision_forward(W, cfg, pixel_values, edits=NONE):
    """CLIPVisionModel (CLIPVisionTransformer; a CLIPModel's vision_model) at the trained size:
    cfg the CLIPVisionConfig's fields (a CLIPModel's "vision_config"), W the tower's tensors
    without "vision_model.". Embeddings: [class_embedding; the patch conv (no bias)] +
    position_embedding (N + 1 rows, [CLS] first), then pre_layrnorm; the layers
    (vision_tower_layers, QuickGELU). -> attention [L, H, T, T] (T = 1 + N), hidden [T, d] the
    last_hidden_state CLIPVisionModel returns: the last layer's output, with NO norm
    (post_layernorm is applied to the pooled [CLS] only, which attnviz does not show); q, x as
    vit_forward's."""
    eps = cfg["layer_norm_eps"]
    values = tower_pixels(cfg, pixel_values)
    e = "embeddings."
    x = torch.cat([W[e + "class_embedding"].reshape(1, -1), conv_patches(values, W[e + "patch_embedding.weight"])])
    assert x.shape[0] == 1 + (cfg["image_size"] // cfg["patch_size"]) ** 2 == W[e + "position_embedding.weight"].shape[0]
    x = x + W[e + "position_embedding.weight"]
    x = layer_norm(x, W["pre_layrnorm.weight"], W["pre_layrnorm.bias"], eps)  # sic: transformers' name
    x, maps, qs, xs = vision_tower_layers(W, cfg, x, edits)
    return {"attention": torch.stack(maps), "hidden": x, "q": {"attention": torch.stack(qs)},
            "x": {"attention": torch.stack(xs)}}


def siglip_vision_forward(W, cfg, pixel_values, edits=NONE):
    """SiglipVisionModel (SiglipVisionTransformer) at the trained size: cfg the
    SiglipVisionConfig's fields, W the tower's tensors without "vision_model.". Embeddings: the
    patch conv (with its bias) + position_embedding (N rows: no [CLS]), no norm; the layers
    (vision_tower_layers, tanh-GELU); then post_layernorm on every row. -> attention [L, H, N, N],
    hidden [N, d] the last_hidden_state (post-layernormed; the attention-pooling head, when
    vision_use_head, reads it and is not run here); q, x as vit_forward's."""
    eps = cfg["layer_norm_eps"]
    values = tower_pixels(cfg, pixel_values)
    e = "embeddings."
    x = conv_patches(values, W[e + "patch_embedding.weight"], W[e + "patch_embedding.bias"])
    assert x.shape[0] == (cfg["image_size"] // cfg["patch_size"]) ** 2 == W[e + "position_embedding.weight"].shape[0]
    x = x + W[e + "position_embedding.weight"]
    x, maps, qs, xs = vision_tower_layers(W, cfg, x, edits)
    x = layer_norm(x, W["post_layernorm.weight"], W["post_layernorm.bias"], eps)
    return {"attention": torch.stack(maps), "hidden": x, "q": {"attention": torch.stack(qs)},
            "x": {"attention": torch.stack(xs)}}

# [SECTION] DINOv2: ViT with LayerScale, positions that follow the picture, registers ----------------


def dinov2_positions(table, rows, cols, height, width, antialias):
    """Dinov2Embeddings.interpolate_pos_encoding: table [1 + M, d] ([CLS] first, then a √M × √M
    grid) -> [1 + rows·cols, d]; as is where the picture gives M patches and is square, else the
    grid through torch's bicubic interpolate to rows × cols (align_corners=False; antialias for
    dinov2_with_registers)."""
    M, d = table.shape[0] - 1, table.shape[1]
    if rows * cols == M and height == width:
        return table
    side = int(M ** 0.5)
    grid = table[1:].reshape(1, side, side, d).permute(0, 3, 1, 2)
    grid = torch.nn.functional.interpolate(grid, size=(rows, cols), mode="bicubic", align_corners=False,
                                           antialias=antialias)
    return torch.cat([table[:1], grid.permute(0, 2, 3, 1).reshape(rows * cols, d)])


def dinov2_forward(W, cfg, pixel_values, edits=NONE):
    """Dinov2Model / Dinov2ForImageClassification, and their _with_registers kin (cfg's
    model_type), on pixel_values [C, H, W] of any size: the [CLS] and the patch conv, positions
    added (dinov2_positions); the registers (num_register_tokens) after the [CLS], with none;
    each layer x = x + λ₁ ⊙ dense(attention(norm1(x))); x = x + λ₂ ⊙ mlp(norm2(x)), the MLP
    fc2(act(fc1)) or, use_swiglu_ffn, weights_out(silu(x₁) ⊙ x₂) of weights_in's halves; the final
    layernorm. -> attention [L, H, T, T], hidden [T, d], logits (the classifier on [CLS] ‖ the
    patches' mean; only when W has it), q, x as vit_forward's."""
    eps, H = cfg["layer_norm_eps"], cfg["num_attention_heads"]
    registers = cfg["num_register_tokens"] if cfg["model_type"] == "dinov2_with_registers" else 0
    values = torch.as_tensor(pixel_values, dtype=torch.float64)
    e, p = "embeddings.", cfg["patch_size"]
    patches = conv_patches(values, W[e + "patch_embeddings.projection.weight"], W[e + "patch_embeddings.projection.bias"])
    rows, cols = values.shape[1] // p, values.shape[2] // p
    x = torch.cat([W[e + "cls_token"].reshape(1, -1), patches])
    x = x + dinov2_positions(W[e + "position_embeddings"][0], rows, cols, values.shape[1], values.shape[2], registers > 0)
    if registers:
        x = torch.cat([x[:1], W[e + "register_tokens"][0], x[1:]])
    maps, qs, xs = [], [], []
    for i in range(cfg["num_hidden_layers"]):
        lp = f"encoder.layer.{i}."
        a = layer_norm(x, W[lp + "norm1.weight"], W[lp + "norm1.bias"], eps)
        q, k, v = (linear(a, W, lp + "attention.attention." + n) for n in ("query", "key", "value"))
        context, probs, q_heads = attend(q, k, v, H, False, edits.hidden, knocked(edits, 0, i), edits.mean)
        maps.append(probs), qs.append(q_heads), xs.append(a)
        x = x + linear(context, W, lp + "attention.output.dense") * W[lp + "layer_scale1.lambda1"]
        m = layer_norm(x, W[lp + "norm2.weight"], W[lp + "norm2.bias"], eps)
        if cfg["use_swiglu_ffn"]:
            x1, x2 = linear(m, W, lp + "mlp.weights_in").chunk(2, dim=-1)
            y = linear(silu(x1) * x2, W, lp + "mlp.weights_out")
        else:
            y = linear(ACTIVATIONS[cfg["hidden_act"]](linear(m, W, lp + "mlp.fc1")), W, lp + "mlp.fc2")
        x = x + y * W[lp + "layer_scale2.lambda1"]
    x = layer_norm(x, W["layernorm.weight"], W["layernorm.bias"], eps)
    out = {"attention": torch.stack(maps), "hidden": x, "q": {"attention": torch.stack(qs)},
           "x": {"attention": torch.stack(xs)}}
    if "classifier.weight" in W:
        out["logits"] = linear(torch.cat([x[0], x[1 + registers:].mean(0)]), W, "classifier")
    return out

# [SECTION] Marian: post-LN encoder-decoder, scaled embeddings + sinusoids, SiLU ------------------

MARIAN_EPS = 1e-5  # nn.LayerNorm's default; Marian's config has no eps


def marian_embed(W, cfg, ids, side):  # side "encoder" | "decoder" -> [T, d]
    T, d = len(ids), cfg["d_model"]
    scale = math.sqrt(d) if cfg["scale_embedding"] else 1.0
    stored = W.get(side + ".embed_positions.weight")
    positions = stored if stored is not None else sinusoidal_positions(cfg["max_position_embeddings"], d)
    return W["shared.weight"][ids] * scale + positions[:T]


def marian_attention(x_q, x_kv, W, p, n_heads, causal, hidden=(), knocked_heads=(), mean=False):
    # p: "...self_attn." or "...encoder_attn."
    q = linear(x_q, W, p + "q_proj")  # [T_q, d]
    k, v = linear(x_kv, W, p + "k_proj"), linear(x_kv, W, p + "v_proj")  # [T_k, d]
    context, probs, q_heads = attend(q, k, v, n_heads, causal, hidden, knocked_heads, mean)
    return linear(context, W, p + "out_proj"), probs, q_heads


def marian_forward(W, cfg, encoder_ids, decoder_ids, edits=NONE):
    act = ACTIVATIONS[cfg["activation_function"]]
    ln = lambda x, name: layer_norm(x, W[name + ".weight"], W[name + ".bias"], MARIAN_EPS)  # noqa: E731
    out = {"q": {}, "x": {}}
    collected = {s: ([], [], []) for s in ("encoder_attention", "decoder_attention", "cross_attention")}

    def keep(stack, probs, q_heads, x_q):
        for store, value in zip(collected[stack], (probs, q_heads, x_q)):
            store.append(value)

    memory = marian_embed(W, cfg, encoder_ids, "encoder")  # [T_enc, d]; no embedding LayerNorm
    for i in range(cfg["encoder_layers"]):
        p = f"encoder.layers.{i}."
        a, probs, q_heads = marian_attention(memory, memory, W, p + "self_attn.", cfg["encoder_attention_heads"], False,
                                             edits.hidden, knocked(edits, 0, i), edits.mean)
        keep("encoder_attention", probs, q_heads, memory)
        memory = ln(memory + a, p + "self_attn_layer_norm")
        memory = ln(memory + linear(act(linear(memory, W, p + "fc1")), W, p + "fc2"), p + "final_layer_norm")

    y = marian_embed(W, cfg, decoder_ids, "decoder")  # [T_dec, d]
    for i in range(cfg["decoder_layers"]):
        p = f"decoder.layers.{i}."
        a, probs, q_heads = marian_attention(y, y, W, p + "self_attn.", cfg["decoder_attention_heads"], True,
                                             (), knocked(edits, 1, i), edits.mean)
        keep("decoder_attention", probs, q_heads, y)
        y = ln(y + a, p + "self_attn_layer_norm")
        # cross-attention: queries from the decoder, keys and values from the encoder's output
        a, probs, q_heads = marian_attention(y, memory, W, p + "encoder_attn.", cfg["decoder_attention_heads"], False,
                                             edits.hidden, knocked(edits, 2, i), edits.mean)
        keep("cross_attention", probs, q_heads, y)
        y = ln(y + a, p + "encoder_attn_layer_norm")
        y = ln(y + linear(act(linear(y, W, p + "fc1")), W, p + "fc2"), p + "final_layer_norm")

    for stack, (maps, qs, xs) in collected.items():
        out[stack], out["q"][stack], out["x"][stack] = torch.stack(maps), torch.stack(qs), torch.stack(xs)
    bias = W.get("final_logits_bias", torch.zeros(1, cfg["vocab_size"], dtype=torch.float64))
    out["hidden"] = y
    out["logits"] = y[-1] @ W["shared.weight"].T + bias[0]  # tied head: [V]
    return out


def marian_greedy(W, cfg, encoder_ids, max_new):
    """Greedy decoding from [decoder_start], the whole sequence recomputed each step (no cache),
    until eos or max_new tokens. Returns (ids incl. decoder_start, the smallest top-2 logit gap)."""
    ids, min_gap = [cfg["decoder_start_token_id"]], float("inf")
    for _ in range(max_new):
        logits = marian_forward(W, cfg, encoder_ids, ids)["logits"]
        top2 = torch.topk(logits, 2).values
        min_gap = min(min_gap, float(top2[0] - top2[1]))
        ids.append(int(torch.argmax(logits)))
        if ids[-1] == cfg["eos_token_id"]:
            break
    return ids, min_gap

# [SECTION] The Llama-like: RMSNorm, rotary positions, grouped-query attention, gated MLPs ---------
# llama, mistral, qwen2, qwen3, gemma2, gemma3_text, phi3 as transformers' modeling files define
# them (eval, eager attention); the family's differences are read from cfg here, independently
# of the C++ runtime's ModelConfig.

LLAMA_LIKE = ("llama", "mistral", "qwen2", "qwen3", "gemma2", "gemma3_text", "phi3", "qwen3_moe", "gpt_oss")


def moe_layer(cfg, i):
    """Whether layer i has experts: gpt_oss every layer; qwen3_moe the layers i with
    (i + 1) % decoder_sparse_step == 0 that mlp_only_layers does not name."""
    t = cfg["model_type"]
    if t == "gpt_oss":
        return True
    return t == "qwen3_moe" and i not in cfg.get("mlp_only_layers", []) and (i + 1) % cfg.get("decoder_sparse_step", 1) == 0


def experts_mlp(W, cfg, p, x, act):
    """A mixture of experts on x [T, d] (as Qwen3MoeSparseMoeBlock and GptOssMLP compute it):
    the router's top k per token, each expert's MLP on it times its weight, summed."""
    t, k = cfg["model_type"], cfg["num_experts_per_tok"]
    if t == "gpt_oss":
        logits = x @ W[p + "mlp.router.weight"].T + W[p + "mlp.router.bias"]
        top, idx = torch.topk(logits, k, dim=-1)
        weights = torch.softmax(top, dim=-1)
    else:
        probs = torch.softmax(x @ W[p + "mlp.gate.weight"].T, dim=-1)
        weights, idx = torch.topk(probs, k, dim=-1)
        if cfg.get("norm_topk_prob"):
            weights = weights / weights.sum(-1, keepdim=True)
    out = torch.zeros_like(x)
    for token in range(x.shape[0]):
        for j in range(k):
            e, xt = int(idx[token, j]), x[token]
            if t == "gpt_oss":  # gate | up interleaved, clamped, (up + 1)·gate·σ(1.702·gate)
                gu = xt @ W[p + "mlp.experts.gate_up_proj"][e] + W[p + "mlp.experts.gate_up_proj_bias"][e]
                gate, up = gu[0::2].clamp(max=7.0), gu[1::2].clamp(-7.0, 7.0)
                y = ((up + 1) * gate * torch.sigmoid(gate * 1.702)) @ W[p + "mlp.experts.down_proj"][e] \
                    + W[p + "mlp.experts.down_proj_bias"][e]
            else:
                q = p + f"mlp.experts.{e}."
                y = (act(xt @ W[q + "gate_proj.weight"].T) * (xt @ W[q + "up_proj.weight"].T)) @ W[q + "down_proj.weight"].T
            out[token] += weights[token, j] * y
    return out


def rms_norm(x, w, eps, plus_one=False):  # LlamaRMSNorm; Gemma's scales by (1 + w)
    y = x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps)
    return y * (1.0 + w) if plus_one else y * w


def rope_inv_freq(cfg, rope, dim, seq_len):
    """modeling_rope_utils.py's ROPE_INIT_FUNCTIONS: (inv_freq [dim/2], attention_factor).
    rope: {"theta", "scaling" (rope_scaling or None)}."""
    base = rope["theta"]
    P = cfg["max_position_embeddings"]
    i = torch.arange(0, dim, 2, dtype=torch.float64)
    default = 1.0 / base ** (i / dim)
    sc = rope["scaling"]
    kind = (sc or {}).get("rope_type", (sc or {}).get("type", "default"))
    if kind == "default":
        return default, 1.0
    if kind == "linear":
        return default / sc["factor"], 1.0
    if kind == "dynamic":
        L = max(seq_len, P)
        base = base * ((sc["factor"] * L / P) - (sc["factor"] - 1)) ** (dim / (dim - 2))
        return 1.0 / base ** (i / dim), 1.0
    if kind == "llama3":
        factor, lo, hi, old = sc["factor"], sc["low_freq_factor"], sc["high_freq_factor"], sc["original_max_position_embeddings"]
        wavelen = 2 * math.pi / default
        out = torch.where(wavelen > old / lo, default / factor, default)
        smooth = (old / wavelen - lo) / (hi - lo)
        smoothed = (1 - smooth) * out / factor + smooth * out
        medium = (wavelen >= old / hi) & (wavelen <= old / lo)
        return torch.where(medium, smoothed, out), 1.0
    if kind == "yarn":
        factor = sc["factor"]  # as given (transformers 5; before, P / original replaced it)
        original = sc.get("original_max_position_embeddings") or P

        def mscale(scale, m=1.0):
            return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0
        att = sc.get("attention_factor")
        if att is None:
            att = mscale(factor, sc["mscale"]) / mscale(factor, sc["mscale_all_dim"]) \
                if sc.get("mscale") and sc.get("mscale_all_dim") else mscale(factor)
        beta_fast, beta_slow = sc.get("beta_fast") or 32, sc.get("beta_slow") or 1

        def correction_dim(rotations):
            return dim * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(base))
        low, high = correction_dim(beta_fast), correction_dim(beta_slow)
        if sc.get("truncate", True):
            low, high = math.floor(low), math.ceil(high)
        low, high = max(low, 0), min(high, dim - 1)
        if low == high:
            high += 0.001
        ramp = ((torch.arange(dim // 2, dtype=torch.float64) - low) / (high - low)).clamp(0, 1)
        pos_freqs = base ** (i / dim)
        extrapolation = 1 - ramp
        inv = (1.0 / (factor * pos_freqs)) * (1 - extrapolation) + (1.0 / pos_freqs) * extrapolation
        return inv, att
    if kind == "longrope":
        original = cfg.get("original_max_position_embeddings")
        factor = P / original if original else sc.get("factor", 1.0)
        original = original or P
        att = sc.get("attention_factor")
        if att is None:
            att = 1.0 if factor <= 1 else math.sqrt(1 + math.log(factor) / math.log(original))
        ext = torch.tensor(sc["long_factor"] if seq_len > original else sc["short_factor"], dtype=torch.float64)
        return 1.0 / (ext * base ** (i / dim)), att
    raise ValueError(kind)


def rotate(x, inv_freq, att, first=0):  # x [H, T, hd]: the first 2·len(inv_freq) dims, rotate-half
    rot = 2 * len(inv_freq)
    pos = torch.arange(first, first + x.shape[1], dtype=torch.float64)[:, None]
    freqs = pos * inv_freq[None, :]  # [T, rot/2]
    emb = torch.cat([freqs, freqs], dim=-1)
    cos, sin = emb.cos() * att, emb.sin() * att
    x_rot, x_pass = x[..., :rot], x[..., rot:]
    half = rot // 2
    rotated = torch.cat([-x_rot[..., half:], x_rot[..., :half]], dim=-1)
    return torch.cat([x_rot * cos + rotated * sin, x_pass], dim=-1)


def mrope_rotate(x, inv_freq, att, positions, section):
    """apply_multimodal_rotary_pos_emb (Qwen2.5-VL's M-RoPE, not interleaved): x [H, T, hd] rotated
    rotate-half style over the whole head, position streams positions [3, T] (0 time, 1 height,
    2 width). Qwen2_5_VLRotaryEmbedding gives each stream its own angles pos_s·inv_freq, cat(freqs,
    freqs) -> [3, T, hd]; mrope_section * 2 then cuts the hd dims into chunks taken in turn from
    streams 0, 1, 2, 0, 1, 2: frequency j (and its partner j + hd/2) turns by the stream whose
    section holds j (section [2, 1, 1]: j = 0, 1 time, 2 height, 3 width)."""
    hd = x.shape[-1]
    assert 2 * len(inv_freq) == hd and sum(section) == hd // 2, f"mrope_section {section} for heads of {hd}"
    pos = torch.as_tensor(positions, dtype=torch.float64)  # [3, T]
    freqs = pos[:, :, None] * inv_freq[None, None, :]  # [3, T, hd/2]
    emb = torch.cat([freqs, freqs], dim=-1)  # [3, T, hd]
    cos, sin = emb.cos() * att, emb.sin() * att
    def by_section(table):  # noqa: E306  the chunks of mrope_section * 2, the i-th from stream i % 3
        return torch.cat([m[i % 3] for i, m in enumerate(table.split(list(section) * 2, dim=-1))], dim=-1)
    cos, sin = by_section(cos), by_section(sin)  # [T, hd]
    rotated = torch.cat([-x[..., hd // 2:], x[..., :hd // 2]], dim=-1)
    return x * cos + rotated * sin


def layer_kinds(cfg):
    """Per layer: the sliding window (0: full attention), as each family's config class fills
    layer_types when config.json has none."""
    t, L = cfg["model_type"], cfg["num_hidden_layers"]
    window = cfg.get("sliding_window")
    if t in ("qwen2", "qwen3") and not cfg.get("use_sliding_window", False):
        return [0] * L
    if "layer_types" in cfg:
        return [window if k == "sliding_attention" else 0 for k in cfg["layer_types"]]
    if t in ("mistral", "phi3"):
        return [window or 0] * L
    if t in ("qwen2", "qwen3"):
        return [window if window and i >= cfg.get("max_window_layers", 28) else 0 for i in range(L)]
    if t == "gemma2":
        return [cfg.get("sliding_window", 4096) if (i + 1) % 2 else 0 for i in range(L)]
    if t == "gemma3_text":
        pattern = cfg.get("sliding_window_pattern", 6)
        return [cfg.get("sliding_window", 4096) if (i + 1) % pattern else 0 for i in range(L)]
    return [0] * L


def llama_like_head(W, cfg):  # the unembedding [V, d]: lm_head, or the tied embed_tokens
    gemma = cfg["model_type"] in ("gemma2", "gemma3_text")
    return W["lm_head.weight"] if "lm_head.weight" in W and not cfg.get("tie_word_embeddings", gemma) \
        else W["embed_tokens.weight"]


def final_softcap(cfg):  # gemma2's tanh(z / cap)·cap on the logits; None elsewhere
    t = cfg["model_type"]
    return cfg.get("final_logit_softcapping", 30.0 if t == "gemma2" else None) if t in ("gemma2", "gemma3_text") else None


def causal_masked(T, window=0, allowed=None):
    """[T, T] bool, True where query i may not read key j: the causal mask (j > i), the sliding
    window's (j <= i - window, when window), then OR'ed with `allowed` ([T, T] bool: pairs let
    through whatever the causal and window masks say; Gemma 3's image blocks, as masking_utils'
    or_mask_function): masked & ~allowed."""
    qi, kj = torch.arange(T)[:, None], torch.arange(T)[None, :]
    masked = kj > qi
    if window:
        masked = masked | (kj <= qi - window)
    if allowed is not None:
        masked = masked & ~allowed
    return masked


def llama_like_forward(W, cfg, ids, edits=NONE, hooks=None, embeds=None, allowed=None, raw_rows=None, positions=None):
    """embeds [T, d]: the input rows in place of embed_tokens[ids] (Idefics3's merged image
    rows; gemma's scaling still applies); ids then only give T. allowed [T, T] bool: query-key
    pairs OR'ed into every layer's causal (and sliding) mask (causal_masked; Gemma 3's image
    blocks). raw_rows [T] bool: rows of embeds that enter the stream as given, without gemma's
    √d scaling (Gemma 3's image rows, scattered in after the scaled embedding). positions [3, T]:
    each token's (time, height, width) positions, rotated by M-RoPE (mrope_rotate with
    cfg["mrope_section"]; Qwen2.5-VL) instead of 0..T-1."""
    t = cfg["model_type"]
    gemma, T = t in ("gemma2", "gemma3_text"), len(ids)
    d, H = cfg["hidden_size"], cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads") or H
    hd = cfg.get("head_dim") or d // H
    eps = cfg.get("rms_norm_eps", 1e-6)
    act = ACTIVATIONS[cfg.get("hidden_activation", "gelu_pytorch_tanh") if gemma else cfg.get("hidden_act", "silu")]
    norm = lambda x, name: rms_norm(x, W[name + ".weight"], eps, gemma)  # noqa: E731
    def lin(x, name):  # noqa: E306  nn.Linear with or without a bias
        y = x @ W[name + ".weight"].T
        return y + W[name + ".bias"] if name + ".bias" in W else y
    rot_dim = int(hd * cfg.get("partial_rotary_factor", 1.0))
    global_rope = {"theta": cfg.get("rope_theta", 10000.0), "scaling": cfg.get("rope_scaling")}
    local_rope = {"theta": cfg.get("rope_local_base_freq", 10000.0), "scaling": None}
    scaling = cfg.get("query_pre_attn_scalar", 256) ** -0.5 if gemma else hd ** -0.5
    softcap = cfg.get("attn_logit_softcapping", 50.0 if t == "gemma2" else None) if gemma else None
    windows = layer_kinds(cfg)

    if hooks is not None:
        hooks.start()
    x = W["embed_tokens.weight"][ids] if embeds is None else embeds  # [T, d]
    if gemma:
        scaled = x * torch.tensor(d ** 0.5, dtype=torch.float32).to(torch.float64)
        x = scaled if raw_rows is None else torch.where(raw_rows[:, None], x, scaled)
    x = hook_stream(hooks, 0, x)
    maps, qs, xs, unrotated = [], [], [], []
    for i in range(cfg["num_hidden_layers"]):
        p = f"layers.{i}."
        a = norm(x, p + "input_layernorm")
        if t == "phi3":
            q, k, v = lin(a, p + "self_attn.qkv_proj").split([H * hd, KV * hd, KV * hd], dim=-1)
        else:
            q, k, v = (lin(a, p + f"self_attn.{n}_proj") for n in "qkv")
        q = q.reshape(T, H, hd).transpose(0, 1)  # [H, T, hd]
        k = k.reshape(T, KV, hd).transpose(0, 1)
        v = v.reshape(T, KV, hd).transpose(0, 1)
        if t in ("qwen3", "gemma3_text", "qwen3_moe"):
            q, k = norm(q, p + "self_attn.q_norm"), norm(k, p + "self_attn.k_norm")
        unrotated.append(q)
        rope = local_rope if t == "gemma3_text" and windows[i] else global_rope
        inv, att = rope_inv_freq(cfg, rope, rot_dim, T)
        if positions is None:
            q, k = rotate(q, inv, att), rotate(k, inv, att)
        else:
            q, k = (mrope_rotate(y, inv, att, positions, cfg["mrope_section"]) for y in (q, k))
        k, v = k.repeat_interleave(H // KV, dim=0), v.repeat_interleave(H // KV, dim=0)  # repeat_kv
        scores = q @ k.transpose(1, 2) * scaling  # [H, T, T]
        if softcap:
            scores = torch.tanh(scores / softcap) * softcap
        masked = causal_masked(T, windows[i], allowed)
        for j in edits.hidden:
            masked[:, j] = True
        scores = scores.masked_fill(masked, float("-inf"))
        if p + "self_attn.sinks" in W:  # gpt_oss: a logit of no key in every row, its column dropped
            sink = W[p + "self_attn.sinks"][:, None, None].expand(H, T, 1)
            probs = torch.softmax(torch.cat([scores, sink], dim=-1), dim=-1)[..., :-1]
        else:
            probs = torch.softmax(scores, dim=-1)
        probs = probs.masked_fill(masked.all(-1)[None, :, None], 0.0)
        context = probs @ v  # [H, T, hd]
        for h in knocked(edits, 0, i):
            context[h] = context[h].mean(0, keepdim=True).expand(T, hd) if edits.mean else 0.0
        context = hook_context(hooks, i, context, v)
        o = lin(context.transpose(0, 1).reshape(T, H * hd), p + "self_attn.o_proj")
        attn_out = o
        if gemma:
            o = norm(o, p + "post_attention_layernorm")
        x = x + o
        maps.append(probs), qs.append(q), xs.append(a)
        m = norm(x, p + ("pre_feedforward_layernorm" if gemma else "post_attention_layernorm"))
        if moe_layer(cfg, i):
            f = experts_mlp(W, cfg, p, m, act)
        else:
            if t == "phi3":
                gate, up = lin(m, p + "mlp.gate_up_proj").chunk(2, dim=-1)
            else:
                gate, up = lin(m, p + "mlp.gate_proj"), lin(m, p + "mlp.up_proj")
            f = lin(act(gate) * up, p + "mlp.down_proj")
        hook_outputs(hooks, attn_out, f)
        if gemma:
            f = norm(f, p + "post_feedforward_layernorm")
        x = hook_stream(hooks, i + 1, x + f)
    x = norm(x, "norm")
    head = llama_like_head(W, cfg)
    logits = x[-1] @ head.T
    final_cap = final_softcap(cfg)
    if final_cap:
        logits = torch.tanh(logits / final_cap) * final_cap
    return {"attention": torch.stack(maps), "hidden": x, "logits": logits,
            "q": {"attention": torch.stack(qs)}, "x": {"attention": torch.stack(xs)},
            "q_unrotated": {"attention": torch.stack(unrotated)}}

# [SECTION] Idefics3 / SmolVLM: a SigLIP-like tower per view, pixel shuffle, a Llama over both -----
# modeling_idefics3.py (Idefics3ForConditionalGeneration; modeling_smolvlm.py's SmolVLM is the same
# computation: its inputs_merger fills the <image> rows block by block, in the same order).

IDEFICS3_VISION_DEFAULTS = {  # Idefics3VisionConfig's (SmolVLMVisionConfig's are the same)
    "hidden_size": 1152, "intermediate_size": 3072, "num_hidden_layers": 12, "num_attention_heads": 16,
    "num_channels": 3, "image_size": 224, "patch_size": 32, "hidden_act": "gelu_pytorch_tanh",
    "layer_norm_eps": 1e-6}


def idefics3_vision_config(cfg):
    """config.json's vision_config with Idefics3VisionConfig's defaults where a field is absent."""
    return dict(IDEFICS3_VISION_DEFAULTS, **cfg["vision_config"])


def idefics3_position_ids(rows, cols, side):
    """Idefics3VisionEmbeddings' position ids of a rows x cols patch grid (every patch real), as
    transformers computes them: float32 fractional coordinates k/rows, k/cols bucketized against
    the boundaries arange(1/side, 1, 1/side) (right=True); -> [rows·cols], row-major. (For
    rows = cols = side this is 0..side²-1 when float32 rounding lets it: side 4, 26, 32 are;
    side 27, 19, 23, 25 are not.)"""
    boundaries = torch.arange(1 / side, 1.0, 1 / side)
    h = torch.bucketize(torch.arange(0, 1 - 1e-6, 1 / rows), boundaries, right=True)
    w = torch.bucketize(torch.arange(0, 1 - 1e-6, 1 / cols), boundaries, right=True)
    return (h[:, None] * side + w[None, :]).flatten()


def idefics3_vision_forward(W, vcfg, pixel_values):
    """Idefics3VisionTransformer on one view: pixel_values [C, S, S] (S = image_size), W the
    tower's tensors without "model.vision_model.", vcfg the filled vision config. The patch conv
    with its bias, + position_embedding[position ids] (idefics3_position_ids), the pre-LN layers
    (vision_tower_layers: q/k/v/out with biases, no mask), post_layernorm. -> attention [L, H, P, P],
    hidden [P, d_vision] (the last_hidden_state)."""
    values = tower_pixels(vcfg, pixel_values)
    e, p = "embeddings.", vcfg["patch_size"]
    x = conv_patches(values, W[e + "patch_embedding.weight"], W[e + "patch_embedding.bias"])
    rows, cols = values.shape[1] // p, values.shape[2] // p
    x = x + W[e + "position_embedding.weight"][idefics3_position_ids(rows, cols, vcfg["image_size"] // p)]
    x, maps, _, _ = vision_tower_layers(W, vcfg, x)
    x = layer_norm(x, W["post_layernorm.weight"], W["post_layernorm.bias"], vcfg["layer_norm_eps"])
    return {"attention": torch.stack(maps), "hidden": x}


def pixel_shuffle(x, s):
    """Idefics3Connector.pixel_shuffle on one view: x [G·G, d] (a G x G grid, row-major) ->
    [(G/s)², s²·d]: output row (i, j) of the (G/s) x (G/s) grid, row-major, holds the s x s
    block of rows i·s.., columns j·s.. of the grid, its s² vectors concatenated in row-major order
    within the block (block row major, then block column, then the d features)."""
    n, d = x.shape
    G = int(round(n ** 0.5))
    assert G * G == n and G % s == 0, f"{n} rows: not a square grid divisible by {s}"
    grid = x.reshape(G, G, d)
    out = torch.empty((G // s) ** 2, s * s * d, dtype=x.dtype)
    for i in range(G // s):
        for j in range(G // s):
            block = [grid[i * s + a, j * s + b] for a in range(s) for b in range(s)]
            out[i * (G // s) + j] = torch.cat(block)
    return out


def idefics3_forward(W, cfg, ids, views):
    """Idefics3ForConditionalGeneration / SmolVLMForConditionalGeneration (eval, eager): cfg
    config.json's dict, W the checkpoint's tensors without the "model." prefix ("vision_model.…",
    "connector.…", "text_model.…"; "lm_head.weight" as stored, or none when tied), ids the whole
    prompt's ids, views [n, C, S, S] the image processor's views in order (tiles row by row, then
    the global view). Each view through the vision tower alone, then the connector
    (pixel_shuffle by scale_factor, modality_projection.proj without bias) -> image_seq_len rows
    of d_text each; the ids' embeddings with the image_token_id positions replaced, in order, by
    those rows (inputs_merger); then the Llama text model over the whole sequence (causal), its
    final norm and the LM head (lm_head, or embed_tokens when tied).
    -> attention [L, H, T, T] (the text model's), hidden [T, d_text] after the final norm,
    logits [V] at the last position, vision_attention [n, L_v, H_v, P, P], vision_hidden
    [n, P, d_vision] (post_layernorm'd), image_features [n, image_seq_len, d_text]."""
    vcfg, tcfg = idefics3_vision_config(cfg), dict(cfg["text_config"])
    tcfg.setdefault("tie_word_embeddings", cfg.get("tie_word_embeddings", False))
    sub = lambda prefix: {n[len(prefix):]: t for n, t in W.items() if n.startswith(prefix)}  # noqa: E731
    Wv, Wt = sub("vision_model."), sub("text_model.")
    if "lm_head.weight" in W:
        Wt["lm_head.weight"] = W["lm_head.weight"]
    proj = W["connector.modality_projection.proj.weight"]  # [d_text, s²·d_vision]
    maps, hidden, features = [], [], []
    for view in views:
        run = idefics3_vision_forward(Wv, vcfg, view)
        maps.append(run["attention"]), hidden.append(run["hidden"])
        features.append(pixel_shuffle(run["hidden"], cfg.get("scale_factor", 2)) @ proj.T)
    rows = torch.cat(features)  # [n·image_seq_len, d_text], the views in order
    image = torch.tensor([i == cfg["image_token_id"] for i in ids])
    assert int(image.sum()) == rows.shape[0], f"{int(image.sum())} <image> tokens for {rows.shape[0]} image rows"
    x = Wt["embed_tokens.weight"][ids].clone()
    x[image] = rows
    out = llama_like_forward(Wt, tcfg, ids, embeds=x)
    return {"attention": out["attention"], "hidden": out["hidden"], "logits": out["logits"],
            "vision_attention": torch.stack(maps), "vision_hidden": torch.stack(hidden),
            "image_features": torch.stack(features)}

# [SECTION] Gemma 3 with images: a SigLIP tower, pooled and projected, a Gemma 3 over both --------
# modeling_gemma3.py (Gemma3ForConditionalGeneration, Gemma3Model, Gemma3MultiModalProjector,
# token_type_ids_mask_function / create_causal_mask_mapping) and masking_utils.py (or_masks).

GEMMA3_TEXT_DEFAULTS = {  # Gemma3TextConfig's, for the fields the forward reads
    "vocab_size": 262208, "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
    "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh",
    "max_position_embeddings": 131072, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
    "rope_local_base_freq": 10000.0, "rope_scaling": None, "query_pre_attn_scalar": 256, "sliding_window": 4096,
    "sliding_window_pattern": 6, "tie_word_embeddings": True}
SIGLIP_VISION_DEFAULTS = {  # SiglipVisionConfig's
    "hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "num_attention_heads": 12,
    "num_channels": 3, "image_size": 224, "patch_size": 16, "hidden_act": "gelu_pytorch_tanh", "layer_norm_eps": 1e-6}


def gemma3_text_config(cfg):
    """A Gemma3Config's text_config as llama_like_forward reads it: Gemma3TextConfig's defaults
    where a field is absent (rope_theta 1e6, not Llama's 1e4); transformers 5's rope_parameters
    {"full_attention": {rope_type, rope_theta, factor…}, "sliding_attention": {…}} turned into
    rope_theta + rope_scaling (the full layers') and rope_local_base_freq (the sliding layers',
    default rotation only); no logit soft-caps: Gemma3ForConditionalGeneration applies no
    final_logit_softcapping (only Gemma3ForCausalLM does), and Gemma3Attention never passes
    attn_logit_softcapping to the attention."""
    t = dict(GEMMA3_TEXT_DEFAULTS, **cfg.get("text_config", {}))
    t["model_type"] = "gemma3_text"
    rp = t.pop("rope_parameters", None)
    if rp:
        full, sliding = (rp.get("full_attention"), rp.get("sliding_attention")) if "full_attention" in rp \
            or "sliding_attention" in rp else (rp, None)
        full = full or {"rope_type": "default"}
        t["rope_theta"] = full.get("rope_theta", t["rope_theta"])
        kind = full.get("rope_type", full.get("type", "default"))
        t["rope_scaling"] = None if kind == "default" else {k: v for k, v in full.items() if k != "rope_theta"}
        if sliding:
            assert sliding.get("rope_type", "default") == "default", f"sliding rope {sliding}"
            t["rope_local_base_freq"] = sliding.get("rope_theta", t["rope_local_base_freq"])
    t["tie_word_embeddings"] = cfg.get("tie_word_embeddings", t["tie_word_embeddings"])
    t["final_logit_softcapping"] = None
    t["attn_logit_softcapping"] = None
    return t


def gemma3_vision_config(cfg):
    """config.json's vision_config with SiglipVisionConfig's defaults where a field is absent
    (the Hub's gemma-3 files give neither layer_norm_eps nor hidden_act)."""
    return dict(SIGLIP_VISION_DEFAULTS, **cfg["vision_config"])


def gemma3_image_blocks(ids, image_token_id):
    """[T, T] bool: True where query i and key j are both image tokens (token_type_ids 1: the
    processor marks the image_token_index positions, not <start_of_image> / <end_of_image>) of
    the same unbroken run of them, i.e. of the same picture; what create_causal_mask_mapping ORs
    into the full and the sliding masks alike (an image token reads its whole picture, later
    rows and rows outside the sliding window included; a picture never reads a later one)."""
    T = len(ids)
    run, runs = -1, []
    for j, i in enumerate(ids):
        if i == image_token_id:
            if j == 0 or ids[j - 1] != image_token_id:
                run += 1
            runs.append(run)
        else:
            runs.append(None)
    allowed = torch.zeros(T, T, dtype=torch.bool)
    for q in range(T):
        for k in range(T):
            allowed[q, k] = runs[q] is not None and runs[q] == runs[k]
    return allowed


def gemma3_projector(x, W, vcfg, mm_tokens):
    """Gemma3MultiModalProjector on one picture: x [P, d_v] the tower's last_hidden_state, a
    G x G grid row-major (G = image_size / patch_size) -> [mm_tokens, d_text]: each k x k block
    of the grid averaged (nn.AvgPool2d(k, stride k), k = G / √mm_tokens) into a √mm x √mm grid,
    row-major; mm_soft_emb_norm (Gemma's RMSNorm, (1 + w), eps = the vision config's
    layer_norm_eps); then · mm_input_projection_weight [d_v, d_text] (a plain product, not a
    Linear's transpose)."""
    P, dv = x.shape
    G = vcfg["image_size"] // vcfg["patch_size"]
    side = int(mm_tokens ** 0.5)
    assert G * G == P and side * side == mm_tokens and G % side == 0, \
        f"{P} patches cannot pool to {mm_tokens} tokens"
    k = G // side
    pooled = x.reshape(side, k, side, k, dv).mean(dim=(1, 3)).reshape(mm_tokens, dv)
    normed = rms_norm(pooled, W["multi_modal_projector.mm_soft_emb_norm.weight"], vcfg["layer_norm_eps"], plus_one=True)
    return normed @ W["multi_modal_projector.mm_input_projection_weight"]


def gemma3_forward(W, cfg, ids, views):
    """Gemma3ForConditionalGeneration (eval, eager): cfg config.json's dict, W the tensors as
    Gemma3Model names them ("vision_tower.vision_model.…", "multi_modal_projector.…",
    "language_model.…" + Gemma3TextModel's names: a transformers 5 file's names without "model.",
    or the Hub's older files' "language_model.model.…" etc. after _checkpoint_conversion_mapping;
    the LM head is embed_tokens, tied), ids the whole prompt's ids, views [n, C, S, S] one view per
    picture. Each view through SiglipVisionModel (siglip_vision_forward: post_layernorm on every
    row), then gemma3_projector -> mm_tokens_per_image rows; the ids' embeddings × √d_text
    (Gemma3TextScaledWordEmbedding), the image_token_index rows then replaced in order by the
    projector's rows, unscaled (masked_scatter); the Gemma 3 text model over the whole sequence,
    each layer's causal or sliding mask OR'ed with gemma3_image_blocks; the final norm; the tied
    head, no soft-cap.
    -> attention [L, H, T, T], hidden [T, d_text] after the final norm, logits [V] at the last
    position, vision_attention [n, L_v, H_v, P, P], vision_hidden [n, P, d_v] (post_layernorm'd),
    image_features [n, mm_tokens_per_image, d_text]."""
    vcfg, tcfg = gemma3_vision_config(cfg), gemma3_text_config(cfg)
    sub = lambda prefix: {n[len(prefix):]: t for n, t in W.items() if n.startswith(prefix)}  # noqa: E731
    Wv, Wt = sub("vision_tower.vision_model."), sub("language_model.")
    mm = cfg.get("mm_tokens_per_image", 256)
    maps, hidden, features = [], [], []
    for view in views:
        run = siglip_vision_forward(Wv, vcfg, view)
        maps.append(run["attention"]), hidden.append(run["hidden"])
        features.append(gemma3_projector(run["hidden"], W, vcfg, mm))
    rows = torch.cat(features)  # [n·mm, d_text], the pictures in order
    image_id = cfg.get("image_token_index", cfg.get("image_token_id", 262144))
    image = torch.tensor([i == image_id for i in ids])
    assert int(image.sum()) == rows.shape[0], f"{int(image.sum())} image tokens for {rows.shape[0]} image rows"
    V = Wt["embed_tokens.weight"].shape[0]
    x = Wt["embed_tokens.weight"][[0 if i == image_id and i >= V else i for i in ids]].clone()  # OOV -> pad 0
    x[image] = rows
    out = llama_like_forward(Wt, tcfg, ids, embeds=x, allowed=gemma3_image_blocks(ids, image_id), raw_rows=image)
    return {"attention": out["attention"], "hidden": out["hidden"], "logits": out["logits"],
            "vision_attention": torch.stack(maps), "vision_hidden": torch.stack(hidden),
            "image_features": torch.stack(features)}

# [SECTION] Qwen2.5-VL: a windowed rotary tower, its patches merged, a Qwen2 with M-RoPE --------------
# modeling_qwen2_5_vl.py (Qwen2_5_VLForConditionalGeneration, Qwen2_5_VLModel.get_rope_index,
# Qwen2_5_VisionTransformerPretrainedModel: rot_pos_emb, get_window_index, forward; Qwen2_5_VLPatchMerger;
# apply_multimodal_rotary_pos_emb) and image_processing_qwen2_vl.py (the patches' order).

QWEN2_5_VL_VISION_DEFAULTS = {  # Qwen2_5_VLVisionConfig's
    "depth": 32, "hidden_size": 3584, "hidden_act": "silu", "intermediate_size": 3420, "num_heads": 16,
    "in_channels": 3, "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2, "tokens_per_second": 4,
    "window_size": 112, "out_hidden_size": 3584, "fullatt_block_indexes": [7, 15, 23, 31]}
QWEN2_5_VL_TEXT_DEFAULTS = {  # Qwen2_5_VLTextConfig's, for the fields the forward reads
    "vocab_size": 152064, "hidden_size": 8192, "intermediate_size": 29568, "num_hidden_layers": 80,
    "num_attention_heads": 64, "num_key_value_heads": 8, "hidden_act": "silu", "max_position_embeddings": 32768,
    "rms_norm_eps": 1e-5, "tie_word_embeddings": False, "use_sliding_window": False, "sliding_window": 4096,
    "max_window_layers": 80, "rope_theta": 1000000.0}
QWEN2_5_VL_VISION_EPS = 1e-6  # Qwen2RMSNorm(…, eps=1e-6) in the blocks and ln_q: not a config field


def qwen2_5_vl_text_config(cfg):
    """The language model's config as llama_like_forward reads it: transformers 5's text_config, or
    the Hub's older files' fields at the top level (Qwen2_5_VLConfig hands its kwargs to the text
    config), Qwen2_5_VLTextConfig's defaults where absent; model_type "qwen2" (the q, k, v biases
    and no o bias follow from W); head_dim hidden_size / num_attention_heads (Qwen2_5_VLAttention's);
    the rotation the default one at rope_parameters' rope_theta (or the top level's; rope_scaling's
    type "mrope" is turned into "default"), its mrope_section kept; tie_word_embeddings the top
    level's where the fields are nested."""
    nested = "text_config" in cfg
    fields = cfg["text_config"] if nested else {k: v for k, v in cfg.items() if k != "vision_config"}
    t = dict(QWEN2_5_VL_TEXT_DEFAULTS, **fields)
    rope = t.pop("rope_parameters", None) or t.pop("rope_scaling", None) or {}
    t.pop("rope_scaling", None)
    kind = rope.get("rope_type", rope.get("type", "default"))
    assert kind in ("default", "mrope"), f"rope {rope}: only the default rotation (mrope) is written here"
    t["rope_theta"] = rope.get("rope_theta", t["rope_theta"])
    t["rope_scaling"] = None
    t["mrope_section"] = list(rope["mrope_section"])
    t.pop("head_dim", None)
    if nested and "tie_word_embeddings" in cfg:
        t["tie_word_embeddings"] = cfg["tie_word_embeddings"]
    t["model_type"] = "qwen2"
    return t


def qwen2_5_vl_vision_config(cfg):
    """config.json's vision_config with Qwen2_5_VLVisionConfig's defaults where a field is absent."""
    return dict(QWEN2_5_VL_VISION_DEFAULTS, **cfg["vision_config"])


def qwen2_vl_flatten_patches(pixel_values, patch_size, temporal_patch_size, merge_size):
    """The image processor's last step (Qwen2VLImageProcessor._preprocess) on one picture:
    pixel_values [C, H, W] -> ([N, C·t·p·p], (grid_t, grid_h, grid_w)). The picture is one frame,
    padded to temporal_patch_size frames by repeating it; then reshape to (grid_t, t, C, grid_h/m,
    m, p, grid_w/m, m, p) and transpose (…, 4, 7, 5, 8, 3, 2, 6, 9): the patches in merge-block
    order (the m x m blocks row-major, each block's patches row-major), each patch's values in
    (channel, frame, row, column) order, as patch_embed's Conv3d weight [d, C, t, p, p] reads them."""
    x = torch.as_tensor(np.asarray(pixel_values), dtype=torch.float64)[None, None]  # [batch 1, frames 1, C, H, W]
    if x.shape[1] % temporal_patch_size:
        x = torch.cat([x, x[:, -1:].repeat(1, temporal_patch_size - x.shape[1] % temporal_patch_size, 1, 1, 1)], dim=1)
    C, p, m = x.shape[2], patch_size, merge_size
    grid_t, grid_h, grid_w = x.shape[1] // temporal_patch_size, x.shape[3] // p, x.shape[4] // p
    assert (grid_h * p, grid_w * p) == tuple(x.shape[3:]) and grid_h % m == 0 and grid_w % m == 0, \
        f"{tuple(x.shape[3:])} pixels: not whole merged blocks of {p * m}"
    x = x.reshape(1, grid_t, temporal_patch_size, C, grid_h // m, m, p, grid_w // m, m, p)
    x = x.permute(0, 1, 4, 7, 5, 8, 3, 2, 6, 9)
    return x.reshape(grid_t * grid_h * grid_w, C * temporal_patch_size * p * p), (grid_t, grid_h, grid_w)


def qwen2_5_vl_patch_grid(vcfg, grid_h, grid_w):
    """rot_pos_emb's hpos_ids, wpos_ids: each patch's row and column in the processor's merge-block
    order (arange(h) expanded over the columns, reshaped (h/s, s, w/s, s), permuted (0, 2, 1, 3),
    flattened; the columns likewise). -> (rows [N], cols [N]) LongTensors."""
    s = vcfg["spatial_merge_size"]
    hpos = torch.arange(grid_h).unsqueeze(1).expand(-1, grid_w)
    hpos = hpos.reshape(grid_h // s, s, grid_w // s, s).permute(0, 2, 1, 3).flatten()
    wpos = torch.arange(grid_w).unsqueeze(0).expand(grid_h, -1)
    wpos = wpos.reshape(grid_h // s, s, grid_w // s, s).permute(0, 2, 1, 3).flatten()
    return hpos, wpos


def qwen2_5_vl_rotary(vcfg, rows, cols):
    """Qwen2_5_VisionRotaryEmbedding(head_dim / 2) as rot_pos_emb uses it: inv_freq = 1 /
    10000^(arange(0, dim, 2) / dim) with dim = head_dim / 2 (head_dim / 4 frequencies), a table of
    pos·inv_freq up to the grid's larger side, each patch's [table[row], table[col]] -> [N, head_dim / 2]
    (the forward then doubles it, cat(freqs, freqs), for rotate_half)."""
    dim = vcfg["hidden_size"] // vcfg["num_heads"] // 2
    inv_freq = 1.0 / (10000.0 ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    table = torch.outer(torch.arange(int(max(rows.max(), cols.max())) + 1, dtype=torch.float64), inv_freq)
    return table[torch.stack([rows, cols], dim=-1)].flatten(1)


def qwen2_5_vl_window_index(vcfg, grid_t, grid_h, grid_w):
    """get_window_index for one picture, as transformers writes it: the merged grid (grid_h/s x
    grid_w/s tokens) padded with -100 to whole windows of vit_merger_window_size = window_size // s
    // patch_size merged tokens a side (a whole window of padding where it divides), reshaped to the
    windows row-major, each window's tokens row-major, the padding dropped. -> (window_index
    [n_merged]: the merged token at each place of the new order, cu_window_seqlens [0, …] the
    windows' ends in patches (s² a merged token), with repeats where a window is all padding)."""
    s = vcfg["spatial_merge_size"]
    ws = vcfg["window_size"] // s // vcfg["patch_size"]
    llm_h, llm_w = grid_h // s, grid_w // s
    index = torch.arange(grid_t * llm_h * llm_w).reshape(grid_t, llm_h, llm_w)
    pad_h, pad_w = ws - llm_h % ws, ws - llm_w % ws
    num_h, num_w = (llm_h + pad_h) // ws, (llm_w + pad_w) // ws
    padded = torch.nn.functional.pad(index, (0, pad_w, 0, pad_h), "constant", -100)
    padded = padded.reshape(grid_t, num_h, ws, num_w, ws).permute(0, 1, 3, 2, 4).reshape(grid_t, num_h * num_w, ws, ws)
    seqlens = (padded != -100).sum([2, 3]).reshape(-1)
    padded = padded.reshape(-1)
    window_index = padded[padded != -100]
    cu_window_seqlens = [0] + (seqlens.cumsum(0) * s * s).tolist()
    return window_index, cu_window_seqlens


def qwen2_5_vl_vision_forward(W, vcfg, pixel_values):
    """Qwen2_5_VisionTransformerPretrainedModel (eval, eager) on one picture: pixel_values [C, H, W]
    (image_reference.qwen2_vl_process()'s), W the tower's tensors without "visual." / "model.visual.",
    vcfg the filled vision config. The processor's patches (qwen2_vl_flatten_patches: merge-block
    order) through patch_embed (the bias-free Conv3d as a product), rotary angles per patch
    (qwen2_5_vl_rotary); then, as forward() does, the sequence permuted window by window
    (qwen2_5_vl_window_index, s² patches a merged token) and the angles with it; each block
    x += proj(attention(norm1(x))), x += down(act(gate(norm2(x))) · up(norm2(x))), RMSNorm eps 1e-6,
    qkv one Linear cut (3, heads, head_dim), q and k rotated rotate-half style, the scores scaled
    by head_dim^-0.5, softmax within each cu_seqlens segment (the chunks the eager path splits:
    windows, or the whole picture in fullatt_block_indexes' layers); the merger (ln_q per patch,
    each merged token's s² patches side by side, mlp.0, exact GELU, mlp.2) and argsort(window_index)
    back to the merged tokens' row order.
    -> attention [L, H, P, P] and hidden [P, d] (the last block's output; the tower has no final
    norm) both in the picture's row order (patch (r, c) at r·cols + c, not transformers' order),
    features [P / s², out_hidden_size] (the merged tokens row-major), grid (grid_h, grid_w)."""
    d, H = vcfg["hidden_size"], vcfg["num_heads"]
    hd, s = d // H, vcfg["spatial_merge_size"]
    act = ACTIVATIONS[vcfg["hidden_act"]]
    flat, (grid_t, grid_h, grid_w) = qwen2_vl_flatten_patches(pixel_values, vcfg["patch_size"],
                                                              vcfg["temporal_patch_size"], s)
    assert grid_t == 1, "one picture: one frame"
    x = flat @ W["patch_embed.proj.weight"].reshape(d, -1).T  # [N, d], Conv3d with kernel = stride, no bias
    rows, cols = qwen2_5_vl_patch_grid(vcfg, grid_h, grid_w)
    rotary = qwen2_5_vl_rotary(vcfg, rows, cols)
    window_index, cu_window = qwen2_5_vl_window_index(vcfg, grid_t, grid_h, grid_w)
    cu_window = torch.unique_consecutive(torch.tensor(cu_window))
    N, unit = x.shape[0], s * s
    x = x.reshape(N // unit, unit, -1)[window_index].reshape(N, -1)
    rotary = rotary.reshape(N // unit, unit, -1)[window_index].reshape(N, -1)
    order = (rows * grid_w + cols).reshape(N // unit, unit)[window_index].reshape(N)  # each place's patch (r·cols + c)
    emb = torch.cat([rotary, rotary], dim=-1)
    cos, sin = emb.cos()[:, None], emb.sin()[:, None]  # [N, 1, hd]
    cu_full = torch.tensor([0, grid_t * grid_h * grid_w])

    def rotate_half(y):
        return torch.cat([-y[..., hd // 2:], y[..., :hd // 2]], dim=-1)

    maps = []
    for i in range(vcfg["depth"]):
        b = f"blocks.{i}."
        cu = cu_full if i in vcfg["fullatt_block_indexes"] else cu_window
        a = rms_norm(x, W[b + "norm1.weight"], QWEN2_5_VL_VISION_EPS)
        q, k, v = linear(a, W, b + "attn.qkv").reshape(N, 3, H, hd).permute(1, 0, 2, 3).unbind(0)  # [N, H, hd]
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        q, k, v = (y.transpose(0, 1) for y in (q, k, v))  # [H, N, hd]
        probs = torch.zeros(H, N, N, dtype=torch.float64)
        context = torch.zeros(H, N, hd, dtype=torch.float64)
        for lo, hi in zip(cu[:-1].tolist(), cu[1:].tolist()):  # each chunk on its own
            w = torch.softmax(q[:, lo:hi] @ k[:, lo:hi].transpose(1, 2) * hd ** -0.5, dim=-1)
            probs[:, lo:hi, lo:hi], context[:, lo:hi] = w, w @ v[:, lo:hi]
        x = x + linear(context.transpose(0, 1).reshape(N, d), W, b + "attn.proj")
        m = rms_norm(x, W[b + "norm2.weight"], QWEN2_5_VL_VISION_EPS)
        x = x + linear(act(linear(m, W, b + "mlp.gate_proj")) * linear(m, W, b + "mlp.up_proj"), W, b + "mlp.down_proj")
        maps.append(probs)
    merged = rms_norm(x, W["merger.ln_q.weight"], QWEN2_5_VL_VISION_EPS).reshape(N // unit, unit * d)
    merged = linear(gelu_erf(linear(merged, W, "merger.mlp.0")), W, "merger.mlp.2")
    features = merged[torch.argsort(window_index)]
    back = torch.argsort(order)  # the place of patch r·cols + c in the permuted sequence
    attention = torch.stack(maps)[:, :, back][:, :, :, back]
    return {"attention": attention, "hidden": x[back], "features": features, "grid": (grid_h, grid_w)}


def qwen2_5_vl_rope_index(ids, image_token_id, merged_rows, merged_cols):
    """Qwen2_5_VLModel.get_rope_index for pictures (images: grid_t 1, time index 0) of merged_rows x
    merged_cols tokens -> LongTensor [3, T] (time, height, width). Each text run counts on from
    st_idx (the largest position so far + 1, 0 at the start) in all three streams; a picture's
    run of image tokens, token k, is (st_idx, st_idx + k // merged_cols, st_idx + k % merged_cols)
    with st_idx where its text run left off; the next text starts past the largest of those
    (st_idx + max(merged_rows, merged_cols))."""
    T, n = len(ids), merged_rows * merged_cols
    chunks, st = [], 0
    while image_token_id in ids[st:]:
        ed = ids.index(image_token_id, st)
        assert ids[ed:ed + n] == [image_token_id] * n, f"a picture's run of {n} image tokens from {ed}"
        st_idx = int(chunks[-1].max()) + 1 if chunks else 0
        chunks.append(torch.arange(ed - st).view(1, -1).expand(3, -1) + st_idx)
        t_index = torch.zeros(n, dtype=torch.long)
        h_index = torch.arange(merged_rows).view(-1, 1).expand(-1, merged_cols).flatten()
        w_index = torch.arange(merged_cols).view(1, -1).expand(merged_rows, -1).flatten()
        chunks.append(torch.stack([t_index, h_index, w_index]) + (ed - st) + st_idx)
        st = ed + n
    if st < T:
        st_idx = int(chunks[-1].max()) + 1 if chunks else 0
        chunks.append(torch.arange(T - st).view(1, -1).expand(3, -1) + st_idx)
    return torch.cat(chunks, dim=1)


def qwen2_5_vl_forward(W, cfg, ids, pixel_values):
    """Qwen2_5_VLForConditionalGeneration (eval, eager) on one picture: cfg config.json's dict
    (transformers 5's nested text_config, or the Hub's older flat fields), W the tensors as
    Qwen2_5_VLModel names them ("visual.…", "language_model.…": a transformers 5 file's names
    without "model.", or the Hub's older "visual.…" and "model.…" -> "language_model.…" after
    _checkpoint_conversion_mapping; "lm_head.weight" unless tied), ids the whole prompt's ids (the
    picture's run of image_token_id after its vision_start_token_id), pixel_values [C, H, W] of the
    picture as the processor resized it. The tower (qwen2_5_vl_vision_forward) -> one row per merged
    token; the ids' embeddings with the image_token_id rows replaced in order (masked_scatter);
    position_ids from qwen2_5_vl_rope_index; the Qwen2 text model (causal, M-RoPE by mrope_section),
    its final norm, the LM head.
    -> attention [L, H, T, T], hidden [T, d_text] after the final norm, logits [V] at the last
    position, vision_attention [1, L_v, H_v, P, P] and vision_hidden [1, P, d_v] in the picture's
    row order, image_features [1, P / s², d_text], positions [3, T]."""
    vcfg, tcfg = qwen2_5_vl_vision_config(cfg), qwen2_5_vl_text_config(cfg)
    sub = lambda prefix: {n[len(prefix):]: t for n, t in W.items() if n.startswith(prefix)}  # noqa: E731
    Wv, Wt = sub("visual."), sub("language_model.")
    if "lm_head.weight" in W:
        Wt["lm_head.weight"] = W["lm_head.weight"]
    tower = qwen2_5_vl_vision_forward(Wv, vcfg, pixel_values)
    features, (grid_h, grid_w) = tower["features"], tower["grid"]
    s = vcfg["spatial_merge_size"]
    image_id = cfg.get("image_token_id", 151655)
    image = torch.tensor([i == image_id for i in ids])
    assert int(image.sum()) == features.shape[0], f"{int(image.sum())} image tokens for {features.shape[0]} image rows"
    first = ids.index(image_id)
    assert first > 0 and ids[first - 1] == cfg.get("vision_start_token_id", 151652), \
        "get_rope_index counts the pictures by the vision_start_token_id before each"
    x = Wt["embed_tokens.weight"][ids].clone()
    x[image] = features
    positions = qwen2_5_vl_rope_index(ids, image_id, grid_h // s, grid_w // s)
    out = llama_like_forward(Wt, tcfg, ids, embeds=x, positions=positions)
    return {"attention": out["attention"], "hidden": out["hidden"], "logits": out["logits"],
            "vision_attention": tower["attention"][None], "vision_hidden": tower["hidden"][None],
            "image_features": features[None], "positions": positions}

# [SECTION] The why views: the logit lens, direct logit attribution, activation patching --------
# SPEC.md §5 (--lens, --attribute, --contrast, --corrupted); the decoder-only families only
# (gpt2 and LLAMA_LIKE). The definitions these follow are the contract attnviz implements:
#   z(x)         the LM head on final_norm(x) for one row x of the stream, as the forward's logits
#                (gemma: (1 + w) norms; gemma2: the final soft-cap)
#   lens         [L + 1][T]: row l from resid[l]; top 5 of softmax(z) (ties: the smaller id), the
#                target = argmax z at row L (the model's prediction there), its rank and p per row
#   attribution  at T - 1, u = W_U[a] - W_U[b]: each part through the final norm with its scale
#                frozen on the whole stream (and gemma's sandwich norms frozen on their whole
#                input), so the parts sum to z_a - z_b before any soft-cap
#   patching     (LD(corrupted run patched with the clean run's head context or stream row)
#                - LD_corrupted) / (LD_clean - LD_corrupted), LD = z_a - z_b at T - 1 (capped)


def decoder_forward(cfg):
    t = cfg["model_type"]
    if t == "gpt2":
        return gpt2_forward
    if t in LLAMA_LIKE:
        return llama_like_forward
    raise ValueError(f"{t}: not a decoder-only model with an LM head")


def unembedding(W, cfg):
    """The final norm and the LM head as the forward applies them: a dict with kind ("layer" |
    "rms"), scale (γ, or RMSNorm's w or gemma's 1 + w), shift (β or None), eps, head [V, d], cap."""
    t = cfg["model_type"]
    if t == "gpt2":
        return {"kind": "layer", "scale": W["ln_f.weight"], "shift": W["ln_f.bias"], "eps": cfg["layer_norm_epsilon"],
                "head": W["wte.weight"], "cap": None}
    gemma = t in ("gemma2", "gemma3_text")
    return {"kind": "rms", "scale": 1.0 + W["norm.weight"] if gemma else W["norm.weight"], "shift": None,
            "eps": cfg.get("rms_norm_eps", 1e-6), "head": llama_like_head(W, cfg), "cap": final_softcap(cfg)}


def lens_logits(W, cfg, x, capped=True):
    """x [..., d] rows of the stream -> z [..., V]: the final norm (per row, as the forward) and
    the LM head; gemma2's soft-cap unless capped=False."""
    t = cfg["model_type"]
    if t == "gpt2":
        y = layer_norm(x, W["ln_f.weight"], W["ln_f.bias"], cfg["layer_norm_epsilon"])
    else:
        y = rms_norm(x, W["norm.weight"], cfg.get("rms_norm_eps", 1e-6), t in ("gemma2", "gemma3_text"))
    z = y @ unembedding(W, cfg)["head"].T
    cap = final_softcap(cfg)
    return torch.tanh(z / cap) * cap if cap and capped else z


def ranked(z):  # z [V] -> ids by z descending, the smaller id first on ties
    return np.lexsort((np.arange(len(z)), -z.numpy()))


def lens(W, cfg, ids, edits=NONE, k=5):
    """-> [L + 1][T] of {"top": [[id, p] × k], "target", "target_rank", "target_p"} (the JSON's
    "lens"), and the float64 p [L + 1, T, V] it was read from."""
    hooks = Hooks()
    out = decoder_forward(cfg)(W, cfg, ids, edits, hooks=hooks)
    z = lens_logits(W, cfg, torch.stack(hooks.resid))  # [L + 1, T, V]
    assert float((z[-1, -1] - out["logits"]).abs().max()) <= 1e-9 * (1 + float(out["logits"].abs().max())), \
        "the lens' last row is not the forward's logits"
    p = torch.softmax(z, dim=-1)
    rows = []
    for l in range(z.shape[0]):
        row = []
        for t in range(z.shape[1]):
            target = int(ranked(z[-1, t])[0])
            zt = z[l, t]
            rank = 1 + int((zt > zt[target]).sum()) + int((zt[:target] == zt[target]).sum())
            row.append({"top": [[int(j), float(p[l, t, j])] for j in ranked(zt)[:k]], "target": target,
                        "target_rank": rank, "target_p": float(p[l, t, target])})
        rows.append(row)
    assert all(r["target_rank"] == 1 for r in rows[-1])
    return rows, p


def out_projection(W, cfg, layer):
    """-> (W_O [H·hd, d] with head h's rows h·hd:(h+1)·hd, b_O [d] or None, the post-attention
    norm's scale g and the post-feedforward norm's (gemma's sandwich; None elsewhere))."""
    t = cfg["model_type"]
    if t == "gpt2":
        p = f"h.{layer}.attn.c_proj."
        return W[p + "weight"], W[p + "bias"], None, None  # Conv1D: [H·hd, d] already
    p = f"layers.{layer}."
    post = (1.0 + W[p + "post_attention_layernorm.weight"], 1.0 + W[p + "post_feedforward_layernorm.weight"]) \
        if t in ("gemma2", "gemma3_text") else (None, None)
    return (W[p + "self_attn.o_proj.weight"].T, W.get(p + "self_attn.o_proj.bias"), *post)


def attribution(W, cfg, ids, target, contrast=None):
    """Direct logit attribution at the last position (the JSON's "attribution"): {"target",
    "contrast", "total", "embed", "heads" [L][H], "mlps" [L], "bias", "sources" [L][H][T]}.
    Asserts that embed + Σ heads + Σ mlps + bias is the (pre-cap) logit difference to 1e-9
    relative and that each head's sources sum to it."""
    hooks = Hooks()
    probs = decoder_forward(cfg)(W, cfg, ids, hooks=hooks)["attention"]  # [L, H, T, T]
    U = unembedding(W, cfg)
    u = U["head"][target] - (U["head"][contrast] if contrast is not None else 0.0)
    x = hooks.resid[-1][-1]  # the whole stream at T - 1, the final norm's input
    if U["kind"] == "layer":  # F(c) = γ ⊙ (c - mean c) / sqrt(var x + eps)
        inv = 1.0 / torch.sqrt(((x - x.mean()) ** 2).mean() + U["eps"])
        D = lambda c: ((c - c.mean(-1, keepdim=True)) * inv * U["scale"]) @ u  # noqa: E731
    else:  # F(c) = g ⊙ c / sqrt(mean x² + eps)
        inv = torch.rsqrt((x * x).mean() + U["eps"])
        D = lambda c: (c * inv * U["scale"]) @ u  # noqa: E731
    eps = cfg.get("rms_norm_eps", 1e-6)
    L, (H, T, hd) = len(hooks.context), hooks.context[0].shape
    embed = float(D(hooks.resid[0][-1]))
    heads, mlps, sources, bias = [], [], [], 0.0
    for l in range(L):
        W_O, b_O, g_attn, g_ff = out_projection(W, cfg, l)
        o, m = hooks.attn_out[l][-1], hooks.mlp_out[l][-1]
        P_attn = (lambda c: c) if g_attn is None else \
            (lambda c, s=torch.rsqrt((o * o).mean() + eps), g=g_attn: c * s * g)
        P_ff = (lambda c: c) if g_ff is None else (lambda c, s=torch.rsqrt((m * m).mean() + eps), g=g_ff: c * s * g)
        row, src = [], []
        for h in range(H):
            W_h = W_O[h * hd:(h + 1) * hd]  # [hd, d]
            row.append(float(D(P_attn(hooks.context[l][h][-1] @ W_h))))
            per = probs[l, h, -1][:, None] * hooks.v[l][h]  # [T, hd]: each source's share of the context
            src.append([float(s) for s in D(P_attn(per @ W_h))])
            assert abs(sum(src[-1]) - row[-1]) <= 1e-9 * (1 + abs(row[-1])), f"layer {l} head {h}: the sources do not sum to the head"
        heads.append(row), sources.append(src)
        mlps.append(float(D(P_ff(m))))
        if b_O is not None:
            bias += float(D(P_attn(b_O)))
    if U["shift"] is not None:
        bias += float(U["shift"] @ u)
    z = lens_logits(W, cfg, x, capped=False)
    total = float(z[target] - (z[contrast] if contrast is not None else 0.0))
    parts = embed + sum(map(sum, heads)) + sum(mlps) + bias
    assert abs(parts - total) <= 1e-9 * max(1.0, abs(total)), f"the parts sum to {parts!r}, the logit is {total!r}"
    return {"target": int(target), "contrast": None if contrast is None else int(contrast), "total": total,
            "embed": embed, "heads": heads, "mlps": mlps, "bias": bias, "sources": sources}


def patching(W, cfg, clean, corrupted, target, contrast):
    """Activation patching (the JSON's "patching"): {"heads" [L][H], "resid" [L + 1][T], "clean",
    "corrupted"}, each (LD(corrupted run, one head's context or one stream row from the clean
    run) - LD_corrupted) / (LD_clean - LD_corrupted), LD = z_target - z_contrast at T - 1 as the
    model outputs them. Asserts the properties any implementation must have (see below)."""
    assert len(clean) == len(corrupted), "clean and corrupted ids of different lengths"
    forward = decoder_forward(cfg)
    recorded = Hooks()
    ld = lambda out: float(out["logits"][target] - out["logits"][contrast])  # noqa: E731
    ld_clean = ld(forward(W, cfg, clean, hooks=recorded))
    ld_corrupted = ld(forward(W, cfg, corrupted))
    if ld_clean == ld_corrupted:
        raise ValueError("the clean and the corrupted runs have the same logit difference")
    ratio = lambda hooks: (ld(forward(W, cfg, corrupted, hooks=hooks)) - ld_corrupted) / (ld_clean - ld_corrupted)  # noqa: E731
    L, (H, T, _) = len(recorded.context), recorded.context[0].shape
    heads = [[ratio(Hooks(patch_context={(l, h): recorded.context[l][h]})) for h in range(H)] for l in range(L)]
    resid = [[ratio(Hooks(patch_resid={(r, t): recorded.resid[r][t]})) for t in range(T)] for r in range(L + 1)]
    # the final stream at T - 1 is the clean logits; earlier rows of it reach no later position
    assert abs(resid[L][T - 1] - 1) <= 1e-9, resid[L][T - 1]
    assert all(abs(resid[L][t]) <= 1e-12 for t in range(T - 1)), resid[L]
    # before the first position where the ids differ, both runs' streams are the same
    first = next((t for t in range(T) if clean[t] != corrupted[t]), T)
    assert all(abs(resid[r][t]) <= 1e-12 for r in range(L + 1) for t in range(first)), "a patch of equal rows moved"
    assert all(abs(resid[0][t]) <= 1e-12 for t in range(T) if clean[t] == corrupted[t]), "an equal embedding moved"
    changed = [t for t in range(T) if clean[t] != corrupted[t]]
    if len(changed) == 1:  # the one different embedding patched back is the clean run
        assert abs(resid[0][changed[0]] - 1) <= 1e-9, resid[0]
    return {"heads": heads, "resid": resid, "clean": ld_clean, "corrupted": ld_corrupted}

# [SECTION] Generation: sampling as transformer.hpp's pick_token --------------------------------

MASK64 = (1 << 64) - 1


class SplitMix64:
    def __init__(self, seed):
        self.state = seed & MASK64

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def unit(self):  # uniform in [0, 1): the top 53 bits
        return (self.next() >> 11) * 2.0 ** -53


def sample(logits, temperature, top_k, rng):
    """The argmax (temperature <= 0; the smallest id on ties); else the top_k largest logits
    (all when top_k <= 0; ties: smaller id first), p ∝ exp((l - l_max)/temperature), and the first
    whose running sum exceeds u·Σp, u from one draw of rng."""
    values = [float(v) for v in logits]
    if temperature <= 0:
        return max(range(len(values)), key=lambda i: (values[i], -i))
    order = sorted(range(len(values)), key=lambda i: (-values[i], i))
    if top_k > 0:
        order = order[:top_k]
    p = [math.exp((values[i] - values[order[0]]) / temperature) for i in order]
    u, running = rng.unit() * sum(p), 0.0
    for i, pi in zip(order, p):
        running += pi
        if running > u:
            return i
    return order[-1]


def gpt2_generate(W, cfg, ids, n, temperature=0.0, top_k=0, seed=0, edits=NONE):
    """n tokens after ids (fewer at eos or the last position), the whole sequence recomputed per
    token. -> (ids + generated, [the logits of each step])."""
    ids, steps, rng = list(ids), [], SplitMix64(seed)
    while len(steps) < n and len(ids) < cfg["n_positions"]:
        steps.append(gpt2_forward(W, cfg, ids, edits)["logits"])
        ids.append(sample(steps[-1], temperature, top_k, rng))
        if ids[-1] == cfg.get("eos_token_id", -1):
            break
    return ids, steps
