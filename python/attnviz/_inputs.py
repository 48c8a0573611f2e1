"""Attention weights in, checked stacks out.

`normalize` accepts, as `attention` (decoder-only or encoder-only models):
  1. a tuple or list with one entry per layer (Hugging Face's `outputs.attentions`), each
     `[batch, heads, q, k]` (`batch_index` picks the row) or `[heads, q, k]`;
  2. one array: `[heads, q, k]` (one layer), `[layers, heads, q, k]` or
     `[layers, batch, heads, q, k]` (`torch.stack(outputs.attentions)`);
  3. a TransformerLens `ActivationCache` (anything with `keys()` holding
     `blocks.{L}.attn.hook_pattern`, each `[batch, heads, q, k]` or `[heads, q, k]`);
  4. a Hugging Face model output: its `attentions`, or its `encoder_attentions`,
     `decoder_attentions` and `cross_attentions` (then `tokens` are the source tokens and
     `target_tokens` the decoder's).
The keywords `encoder_attentions`, `decoder_attentions` and `cross_attentions` take forms 1-2.
Arrays are numpy arrays, nested lists or torch tensors (duck-typed: torch is never imported).
Weights must be softmax outputs: finite, in [0, 1] and each row summing to 1 (or 0, a fully
masked row), within 1e-2. Every error is a ValueError starting with the argument's name.
"""
import dataclasses

import numpy as np

MAX_TOKENS, MAX_LAYERS, MAX_HEADS, MAX_VALUES = 4096, 256, 256, 2**26
TOLERANCE = 1e-2
_EAGER = 'load the model with attn_implementation="eager" (sdpa and flash attention return no weights)'
_SOFTMAX = "expected softmax outputs (attention weights, not scores or logits)"
_ENCDEC = ("encoder_attentions", "decoder_attentions", "cross_attentions")


@dataclasses.dataclass
class Stack:
    name: str  # "attention", "encoder_attention", "decoder_attention" or "cross_attention"
    queries: list[str]  # T_q tokens
    keys: list[str]  # T_k tokens
    maps: np.ndarray  # float32, C-contiguous, [layers, heads, T_q, T_k]


def _array(x, name):
    """A numpy array of floats from a torch tensor, a numpy array or nested lists."""
    if hasattr(x, "detach"):
        x = x.detach().to("cpu")
        if not x.is_floating_point():
            dtype = str(x.dtype).replace("torch.", "")
            raise ValueError(f"{name}: expected floating-point attention weights, got {dtype}")
        return x.float().numpy()
    try:
        a = np.asarray(x)
    except ValueError as e:  # ragged nested lists
        raise ValueError(f"{name}: expected a rectangular array of floats ({e})") from None
    if a.dtype.kind != "f":
        raise ValueError(f"{name}: expected floating-point attention weights, got {a.dtype}")
    return a


def _pick(batch_index, size):
    if not 0 <= batch_index < size:
        raise ValueError(f"batch_index: {batch_index} is out of range for a batch of {size}")
    return batch_index


def _from_layers(entries, names, batch_index):
    """Form 1: one entry per layer, each [batch, heads, q, k] or [heads, q, k]."""
    layers, first = [], None
    for entry, name in zip(entries, names):
        if entry is None:
            raise ValueError(f"{name} is None: {_EAGER}")
        a = _array(entry, name)
        if a.ndim not in (3, 4):
            raise ValueError(f"{name}: expected [batch, heads, q, k] or [heads, q, k], "
                             f"got a {a.ndim}-D array of shape {list(a.shape)}")
        if first is None:
            first = a.shape
        elif a.shape != first:
            axes = "[batch, heads, q, k]" if len(first) == 4 else "[heads, q, k]"
            raise ValueError(f"{name}: expected {axes} = {list(first)} like {names[0]}, "
                             f"got {list(a.shape)}")
        layers.append(a[_pick(batch_index, a.shape[0])] if a.ndim == 4 else a)
    return layers


def _from_array(x, name, batch_index):
    """Form 2: one array of [heads, q, k], [layers, heads, q, k] or [layers, batch, heads, q, k]."""
    a = _array(x, name)
    if a.ndim == 3:
        return a[None]
    if a.ndim == 5:
        a = a[:, _pick(batch_index, a.shape[1])]
    elif a.ndim != 4:
        raise ValueError(f"{name}: expected [heads, q, k], [layers, heads, q, k] or "
                         f"[layers, batch, heads, q, k], got a {a.ndim}-D array of shape {list(a.shape)}")
    return a


def _from_cache(cache, name, batch_index):
    """Form 3: a TransformerLens ActivationCache's blocks.{L}.attn.hook_pattern."""
    found = set()
    for key in cache.keys():
        if isinstance(key, str) and key.startswith("blocks.") and key.endswith(".attn.hook_pattern"):
            layer = key[len("blocks."):-len(".attn.hook_pattern")]
            if layer.isdigit():
                found.add(int(layer))
    if not found:
        raise ValueError(f"{name}: the cache holds no blocks.{{L}}.attn.hook_pattern "
                         "(run_with_cache with a names_filter that keeps them)")
    missing = sorted(set(range(max(found) + 1)) - found)
    if missing:
        raise ValueError(f"{name}: the cache has hook_pattern for layers {sorted(found)}: expected "
                         f"consecutive layers from 0, missing {missing}")
    keys = [f"blocks.{layer}.attn.hook_pattern" for layer in range(len(found))]
    names = [f'{name}["{k}"]' for k in keys]
    return _from_layers([cache[k] for k in keys], names, batch_index), names


def _layers(x, name, batch_index):
    """One stack (forms 1-3): its layers, each layer's name for messages (None: one array), shape."""
    if isinstance(x, (tuple, list)):
        if not x:
            raise ValueError(f"{name}: no layers")
        names = [f"{name}[{i}]" for i in range(len(x))]
        layers = _from_layers(x, names, batch_index)
    elif callable(getattr(x, "keys", None)):
        layers, names = _from_cache(x, name, batch_index)
    else:
        layers = _from_array(x, name, batch_index)
        return layers, None, layers.shape
    return layers, names, (len(layers),) + layers[0].shape


def check_limits(shapes):
    """Refuse from their shapes ({argument: [layers, heads, q, k]}) stacks the app would refuse."""
    for name, shape in shapes.items():
        layers, heads, q, k = shape
        if 0 in shape:
            raise ValueError(f"{name}: empty attention ([layers, heads, q, k] = {list(shape)})")
        if layers > MAX_LAYERS:
            raise ValueError(f"{name}: {layers} layers is over the limit of {MAX_LAYERS}")
        if heads > MAX_HEADS:
            raise ValueError(f"{name}: {heads} heads is over the limit of {MAX_HEADS} per layer")
        for n, what in ((q, "queries"), (k, "keys")):
            if n > MAX_TOKENS:
                raise ValueError(f"{name}: {n} {what} is over the limit of {MAX_TOKENS} tokens per sequence")
    total = sum(int(np.prod(shape)) for shape in shapes.values())
    if total > MAX_VALUES:
        raise ValueError(f"{' + '.join(shapes)}: {total:,} values ([layers, heads, q, k] = "
                         f"{' + '.join(str(list(s)) for s in shapes.values())}) is over the limit of "
                         f"2**26 = {MAX_VALUES:,} in all stacks together")


def _where(name, names, index):
    """'attention[2]: ... [h, q, k] = [3, 5, 1]' for a layer list, or '[layer, h, q, k]' for an array."""
    index = [int(i) for i in index]
    axes = ["h", "q", "k"][: len(index) - 1]
    if names is None:
        return name, f"[layer, {', '.join(axes)}] = {index} (0-based)"
    return names[index[0]], f"[{', '.join(axes)}] = {index[1:]} (0-based)"


def _check_values(maps, name, names):
    """Finite, in [0, 1] and rows summing to 1 or 0, within TOLERANCE; vectorized."""
    if not (maps.min() >= -TOLERANCE and maps.max() <= 1 + TOLERANCE):  # a NaN fails both
        bad = ~np.isfinite(maps)
        if bad.any():
            index = np.unravel_index(np.argmax(bad), maps.shape)
            label, at = _where(name, names, index)
            kind = "NaN" if np.isnan(maps[index]) else ("inf" if maps[index] > 0 else "-inf")
            raise ValueError(f"{label}: {kind} at {at}")
        index = np.unravel_index(np.argmax((maps < -TOLERANCE) | (maps > 1 + TOLERANCE)), maps.shape)
        label, at = _where(name, names, index)
        raise ValueError(f"{label}: {maps[index]:.6g} at {at} is outside [0, 1]: {_SOFTMAX}")
    sums = maps.sum(axis=-1)
    bad = (np.abs(sums - 1) > TOLERANCE) & (np.abs(sums) > TOLERANCE)
    if bad.any():
        index = np.unravel_index(np.argmax(bad), sums.shape)
        label, at = _where(name, names, index)
        raise ValueError(f"{label}: row {at} sums to {sums[index]:.6g} over the keys, not 1 "
                         f"(nor 0, a fully masked row): {_SOFTMAX}")


def _tokens(value, name):
    if value is None:
        return None
    if isinstance(value, np.ndarray) and value.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array of str, got shape {list(value.shape)}")
    if not isinstance(value, (list, tuple, np.ndarray)):
        raise ValueError(f"{name}: expected a list of str, got {type(value).__name__}")
    for i, t in enumerate(value):
        if not isinstance(t, str):  # numpy's str_ is a str
            raise ValueError(f"{name}[{i}]: expected a str, got {type(t).__name__} {t!r}")
    return [str(t) for t in value]


def _from_output(output):
    """Form 4: a Hugging Face model output's attentions ({argument: value})."""
    if getattr(output, "attentions", None) is not None:
        return {"attention": output.attentions}
    given = {k: getattr(output, k) for k in _ENCDEC if getattr(output, k, None) is not None}
    if not given:
        raise ValueError("attention: the model output holds no attention weights: pass "
                         f"output_attentions=True to the model and {_EAGER}")
    return given


def _resolve_tokens(words, needs, shapes):
    """Each of tokens and target_tokens checked against the stacks that use it (None: numbered)."""
    for which, value in words.items():
        uses = [need for need in needs if need[0] == which]
        if value is not None and not uses:
            raise ValueError(f"{which}: given, but no attention given has them as queries or keys")
        note = ""
        if value is None and uses:
            if which == "target_tokens":
                raise ValueError(f"target_tokens: required with {uses[0][2]} (the decoder's tokens)")
            value = words[which] = [str(i) for i in range(1, uses[0][1] + 1)]
            note = f" (tokens=None: numbered after {uses[0][2]})"
        for _, n, arg, has in uses:
            if len(value) != n:
                raise ValueError(f"{which}: {len(value)} tokens{note}, but {arg} has {has} "
                                 f"([layers, heads, q, k] = {list(shapes[arg])})")
    return words


def normalize(attention=None, tokens=None, *, target_tokens=None, encoder_attentions=None,
              decoder_attentions=None, cross_attentions=None, batch_index=0):
    """Checked stacks: [attention], or those given of encoder, decoder and cross attention."""
    if isinstance(batch_index, bool) or not isinstance(batch_index, (int, np.integer)):
        raise ValueError(f"batch_index: expected an int, got {batch_index!r}")
    given = {k: v for k, v in zip(_ENCDEC, (encoder_attentions, decoder_attentions, cross_attentions))
             if v is not None}
    if attention is not None and given:
        raise ValueError(f"attention: give either attention or {', '.join(given)}, not both")
    if attention is not None:
        is_output = any(hasattr(attention, a) for a in ("attentions",) + _ENCDEC)
        given = _from_output(attention) if is_output else {"attention": attention}
    if not given:
        raise ValueError("attention: nothing given: pass attention (or encoder_attentions, "
                         "decoder_attentions and cross_attentions for an encoder-decoder model)")
    layers = {arg: _layers(value, arg, batch_index) for arg, value in given.items()}
    shapes = {arg: shape for arg, (_, _, shape) in layers.items()}
    check_limits(shapes)

    roles = {"attention": ("tokens", "tokens"), "encoder_attentions": ("tokens", "tokens"),
             "decoder_attentions": ("target_tokens",) * 2, "cross_attentions": ("target_tokens", "tokens")}
    needs = []  # (tokens' argument, count, stack's argument, what the stack has)
    for arg in given:
        (q_arg, k_arg), (_, _, q, k) = roles[arg], shapes[arg]
        if q_arg == k_arg:
            if q != k:
                raise ValueError(f"{arg}: self-attention has as many queries as keys, got "
                                 f"[layers, heads, q, k] = {list(shapes[arg])}")
            needs.append((q_arg, q, arg, f"{q} queries and {k} keys"))
        else:
            needs += [(q_arg, q, arg, f"{q} queries"), (k_arg, k, arg, f"{k} keys")]
    words = {"tokens": _tokens(tokens, "tokens"), "target_tokens": _tokens(target_tokens, "target_tokens")}
    words = _resolve_tokens(words, needs, shapes)

    stacks = []
    for arg, (source, names, shape) in layers.items():
        maps = np.empty(shape, np.float32)
        with np.errstate(over="ignore"):  # float64 beyond float32 becomes inf, refused below
            for i, layer in enumerate(source):
                maps[i] = layer
        _check_values(maps, arg, names)
        q_arg, k_arg = roles[arg]
        name = "attention" if arg == "attention" else arg[:-1]
        stacks.append(Stack(name, list(words[q_arg]), list(words[k_arg]), maps))
    return stacks
