"""Tests of attnviz._inputs.normalize: every accepted form, and every refusal."""
import pathlib
import sys
import time
import types

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from attnviz import _inputs  # noqa: E402

normalize = _inputs.normalize
EAGER = 'load the model with attn_implementation="eager" (sdpa and flash attention return no weights)'


def softmax(*shape, causal=False, seed=0):
    """Real attention weights: softmax of random logits over the last axis, float32."""
    logits = np.random.default_rng(seed).normal(scale=3.0, size=shape)
    if causal:
        q, k = shape[-2:]
        logits = np.where(np.tril(np.ones((q, k), bool), k - q), logits, -np.inf)
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)


def hf_layers(layers=3, batch=1, heads=4, q=5, k=None, seed=0):
    """outputs.attentions of a Hugging Face model: a tuple of [batch, heads, q, k]."""
    full = softmax(layers, batch, heads, q, k or q, causal=k is None, seed=seed)
    return tuple(full[i] for i in range(layers))


def words(n, prefix="t"):
    return [f"{prefix}{i}" for i in range(n)]


class Cache:
    """What a TransformerLens ActivationCache offers: keys() and [name]."""

    def __init__(self, patterns, extra=True):
        self.d = {f"blocks.{i}.attn.hook_pattern": p for i, p in enumerate(patterns)}
        if extra:
            self.d.update({"hook_embed": np.zeros((1, 5, 8)), "blocks.0.attn.hook_z": np.zeros(3)})

    def keys(self):
        return self.d.keys()

    def __getitem__(self, key):
        return self.d[key]


def only(stacks):
    assert len(stacks) == 1
    return stacks[0]


def check_maps(maps, expected):
    assert maps.dtype == np.float32 and maps.flags.c_contiguous
    np.testing.assert_array_equal(maps, np.asarray(expected, np.float32))


# ---- accepted forms


def test_tuple_of_batch_layers():
    layers = hf_layers()
    s = only(normalize(layers, words(5)))
    assert (s.name, s.queries, s.keys) == ("attention", words(5), words(5))
    check_maps(s.maps, np.stack([layer[0] for layer in layers]))


def test_list_of_layers_without_batch_float64():
    layers = [softmax(4, 6, 6, seed=i).astype(np.float64) for i in range(2)]
    s = only(normalize(layers, words(6)))
    check_maps(s.maps, np.stack(layers))


def test_nested_python_lists():
    layers = [softmax(2, 3, 3, seed=i).tolist() for i in range(2)]
    s = only(normalize(layers, words(3)))
    check_maps(s.maps, np.array(layers))


def test_3d_array_is_one_layer():
    a = softmax(4, 5, 5, causal=True)
    s = only(normalize(a, words(5)))
    check_maps(s.maps, a[None])


def test_4d_array_is_layers():
    a = softmax(3, 4, 5, 5, causal=True)
    check_maps(only(normalize(a, words(5))).maps, a)


def test_5d_array_with_batch_index():
    a = softmax(3, 2, 4, 5, 5, causal=True)
    check_maps(only(normalize(a, words(5))).maps, a[:, 0])
    check_maps(only(normalize(a, words(5), batch_index=1)).maps, a[:, 1])
    check_maps(only(normalize(a, words(5), batch_index=np.int64(1))).maps, a[:, 1])


def test_batch_index_picks_row_of_each_layer():
    layers = hf_layers(batch=3)
    s = only(normalize(layers, words(5), batch_index=2))
    check_maps(s.maps, np.stack([layer[2] for layer in layers]))


def test_output_is_a_copy():
    a = softmax(2, 3, 4, 4)
    s = only(normalize(a, words(4)))
    a[...] = 0
    assert s.maps.sum() > 0


def test_torch_tensors():
    torch = pytest.importorskip("torch")
    layers = hf_layers(batch=2)
    tensors = tuple(torch.tensor(layer, requires_grad=True) for layer in layers)
    s = only(normalize(tensors, words(5), batch_index=1))
    check_maps(s.maps, np.stack([layer[1] for layer in layers]))
    stacked = torch.stack(tensors)  # [layers, batch, heads, q, k]
    check_maps(only(normalize(stacked, words(5))).maps, np.stack([layer[0] for layer in layers]))


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float64"])
def test_torch_low_precision(dtype):
    torch = pytest.importorskip("torch")
    a = torch.tensor(softmax(2, 1, 3, 6, 6, causal=True)).to(getattr(torch, dtype))
    s = only(normalize(tuple(a), words(6)))
    check_maps(s.maps, a[:, 0].float().numpy())


def test_numpy_float16():
    a = softmax(2, 3, 6, 6).astype(np.float16)
    check_maps(only(normalize(a, words(6))).maps, a.astype(np.float32))


@pytest.mark.parametrize("batch", [True, False])
def test_transformer_lens_cache(batch):
    layers = hf_layers(batch=2)
    patterns = layers if batch else [layer[1] for layer in layers]
    s = only(normalize(Cache(patterns), words(5), batch_index=1))
    check_maps(s.maps, np.stack([layer[1] for layer in layers]))


def test_transformer_lens_cache_of_torch_tensors():
    torch = pytest.importorskip("torch")
    layers = hf_layers()
    s = only(normalize(Cache([torch.tensor(layer) for layer in layers]), words(5)))
    check_maps(s.maps, np.stack([layer[0] for layer in layers]))


def test_transformer_lens_cache_gap():
    cache = Cache(hf_layers(layers=3))
    del cache.d["blocks.1.attn.hook_pattern"]
    with pytest.raises(ValueError, match=r"^attention: .*missing \[1\]"):
        normalize(cache)


def test_transformer_lens_cache_without_patterns():
    with pytest.raises(ValueError, match=r"^attention: .*hook_pattern"):
        normalize(Cache([]))


def test_transformer_lens_cache_layer_named_in_errors():
    layers = list(hf_layers())
    layers[2] = layers[2].copy()
    layers[2][0, 1, 3, 0] = np.nan
    with pytest.raises(ValueError) as e:
        normalize(Cache(layers))
    assert str(e.value) == 'attention["blocks.2.attn.hook_pattern"]: NaN at [h, q, k] = [1, 3, 0] (0-based)'


def test_hf_output_decoder_only():
    layers = hf_layers()
    out = types.SimpleNamespace(logits=None, attentions=layers)
    s = only(normalize(out, words(5)))
    check_maps(s.maps, np.stack([layer[0] for layer in layers]))


def test_hf_output_without_attentions():
    out = types.SimpleNamespace(logits=np.zeros(3), attentions=None)
    with pytest.raises(ValueError, match=r"^attention: .*output_attentions=True"):
        normalize(out, words(5))


def test_hf_output_with_none_layers():
    out = types.SimpleNamespace(attentions=(None,) * 4)
    with pytest.raises(ValueError) as e:
        normalize(out)
    assert str(e.value) == f"attention[0] is None: {EAGER}"


def encoder_decoder(source=6, target=4, batch=1):
    enc = hf_layers(layers=2, batch=batch, q=source, k=source, seed=1)
    dec = hf_layers(layers=3, batch=batch, q=target, seed=2)
    cross = hf_layers(layers=3, batch=batch, q=target, k=source, seed=3)
    return enc, dec, cross


def test_hf_output_encoder_decoder():
    enc, dec, cross = encoder_decoder(batch=2)
    out = types.SimpleNamespace(encoder_attentions=enc, decoder_attentions=dec, cross_attentions=cross)
    stacks = normalize(out, words(6, "s"), target_tokens=words(4, "d"), batch_index=1)
    assert [s.name for s in stacks] == ["encoder_attention", "decoder_attention", "cross_attention"]
    assert (stacks[0].queries, stacks[0].keys) == (words(6, "s"), words(6, "s"))
    assert (stacks[1].queries, stacks[1].keys) == (words(4, "d"), words(4, "d"))
    assert (stacks[2].queries, stacks[2].keys) == (words(4, "d"), words(6, "s"))
    for s, layers in zip(stacks, (enc, dec, cross)):
        check_maps(s.maps, np.stack([layer[1] for layer in layers]))


def test_hf_output_encoder_decoder_without_attentions():
    out = types.SimpleNamespace(encoder_attentions=None, decoder_attentions=None, cross_attentions=None)
    with pytest.raises(ValueError, match=r"^attention: .*output_attentions=True"):
        normalize(out)


def test_encoder_decoder_keywords_in_order():
    enc, dec, cross = encoder_decoder()
    stacks = normalize(cross_attentions=np.stack(cross), decoder_attentions=dec, encoder_attentions=enc,
                       tokens=words(6), target_tokens=words(4, "d"))
    assert [s.name for s in stacks] == ["encoder_attention", "decoder_attention", "cross_attention"]
    check_maps(stacks[2].maps, np.stack(cross)[:, 0])


def test_encoder_decoder_keywords_some():
    enc, _, cross = encoder_decoder()
    stacks = normalize(cross_attentions=cross, tokens=words(6), target_tokens=words(4))
    assert [s.name for s in stacks] == ["cross_attention"]
    stacks = normalize(encoder_attentions=enc)
    assert [s.name for s in stacks] == ["encoder_attention"]
    assert stacks[0].queries == ["1", "2", "3", "4", "5", "6"]


def test_encoder_decoder_token_mismatch():
    enc, dec, cross = encoder_decoder()
    with pytest.raises(ValueError, match=r"^target_tokens: 5 tokens, but decoder_attentions has 4 queries"):
        normalize(encoder_attentions=enc, decoder_attentions=dec, tokens=words(6), target_tokens=words(5))
    with pytest.raises(ValueError, match=r"^tokens: 7 tokens, but encoder_attentions has 6 queries"):
        normalize(encoder_attentions=enc, cross_attentions=cross, tokens=words(7), target_tokens=words(4))
    short = tuple(layer[..., :5] / layer[..., :5].sum(-1, keepdims=True) for layer in cross)
    with pytest.raises(ValueError, match=r"^tokens: 6 tokens .*numbered.*, but cross_attentions has 5 keys"):
        normalize(encoder_attentions=enc, cross_attentions=short, target_tokens=words(4))


def test_attention_with_cross_attentions():
    _, _, cross = encoder_decoder()
    with pytest.raises(ValueError, match=r"^attention: .*cross_attentions.*not both"):
        normalize(hf_layers(), cross_attentions=cross)


def test_missing_target_tokens():
    enc, dec, cross = encoder_decoder()
    with pytest.raises(ValueError, match=r"^target_tokens: required with decoder_attentions"):
        normalize(encoder_attentions=enc, decoder_attentions=dec, tokens=words(6))
    with pytest.raises(ValueError, match=r"^target_tokens: required with cross_attentions"):
        normalize(cross_attentions=cross, tokens=words(6))


def test_target_tokens_without_decoder():
    with pytest.raises(ValueError, match=r"^target_tokens: given, but"):
        normalize(hf_layers(), words(5), target_tokens=words(5))


def test_nothing_given():
    with pytest.raises(ValueError, match=r"^attention: nothing given"):
        normalize(None, words(3))


# ---- tokens


def test_tokens_none_numbered_from_one():
    s = only(normalize(softmax(1, 2, 4, 4)))
    assert s.queries == s.keys == ["1", "2", "3", "4"]


def test_tokens_tuple_and_numpy_str():
    s = only(normalize(softmax(1, 2, 3, 3), ("a", "b", "c")))
    assert s.keys == ["a", "b", "c"]
    s = only(normalize(softmax(1, 2, 3, 3), np.array(["a", "b", "c"])))
    assert s.queries == ["a", "b", "c"] and all(type(t) is str for t in s.queries)


def test_tokens_mismatch_message():
    with pytest.raises(ValueError) as e:
        normalize(softmax(12, 12, 6, 6), words(5))
    assert str(e.value) == "tokens: 5 tokens, but attention has 6 queries and 6 keys ([layers, heads, q, k] = [12, 12, 6, 6])"


def test_tokens_not_str():
    with pytest.raises(ValueError, match=r"^tokens\[1\]: expected a str, got int"):
        normalize(softmax(1, 1, 3, 3), ["a", 2, "c"])
    with pytest.raises(ValueError, match=r"^tokens: expected a list of str, got str"):
        normalize(softmax(1, 1, 3, 3), "abc")


def test_self_attention_must_be_square():
    with pytest.raises(ValueError, match=r"^attention: self-attention .* = \[1, 2, 3, 4\]"):
        normalize(softmax(1, 2, 3, 4))


# ---- shapes and batch_index


def test_mismatched_layer_shapes():
    layers = list(hf_layers(layers=4, heads=12, q=7))
    layers[3] = hf_layers(layers=1, heads=12, q=6)[0]
    with pytest.raises(ValueError) as e:
        normalize(layers)
    assert str(e.value) == "attention[3]: expected [batch, heads, q, k] = [1, 12, 7, 7] like attention[0], got [1, 12, 6, 6]"


def test_mismatched_heads_without_batch():
    with pytest.raises(ValueError, match=r"^attention\[1\]: expected \[heads, q, k\] = \[4, 3, 3\] like attention\[0\], got \[2, 3, 3\]"):
        normalize([softmax(4, 3, 3), softmax(2, 3, 3)])


@pytest.mark.parametrize("shape", [(5, 5), (2, 1, 1, 2, 5, 5)])
def test_wrong_ndim_array(shape):
    with pytest.raises(ValueError, match=r"^attention: expected \[heads, q, k\], \[layers, heads, q, k\] or \[layers, batch, heads, q, k\], got a"):
        normalize(softmax(*shape))


def test_wrong_ndim_layer():
    with pytest.raises(ValueError, match=r"^attention\[0\]: expected \[batch, heads, q, k\] or \[heads, q, k\], got a 2-D array of shape \[5, 5\]"):
        normalize([softmax(5, 5)])


def test_ragged_nested_lists():
    with pytest.raises(ValueError, match=r"^attention\[0\]: expected a rectangular array"):
        normalize([[[[1.0, 0.0], [1.0]]]])


def test_no_layers():
    with pytest.raises(ValueError, match=r"^attention: no layers"):
        normalize(())


def test_batch_index_out_of_range():
    with pytest.raises(ValueError) as e:
        normalize(hf_layers(batch=2), batch_index=3)
    assert str(e.value) == "batch_index: 3 is out of range for a batch of 2"
    with pytest.raises(ValueError, match=r"^batch_index: 2 is out of range for a batch of 2"):
        normalize(softmax(3, 2, 4, 5, 5), batch_index=2)
    with pytest.raises(ValueError, match=r"^batch_index: -1 is out of range"):
        normalize(hf_layers(batch=2), batch_index=-1)


def test_batch_index_not_int():
    for bad in (1.0, "0", True):
        with pytest.raises(ValueError, match=r"^batch_index: expected an int"):
            normalize(hf_layers(), batch_index=bad)


def test_batch_index_applies_to_every_stack():
    enc, dec, cross = encoder_decoder(batch=2)
    with pytest.raises(ValueError, match=r"^batch_index: 2 is out of range for a batch of 2"):
        normalize(encoder_attentions=enc, decoder_attentions=dec, target_tokens=words(4), batch_index=2)


# ---- dtypes


def test_none_layer_message():
    layers = list(hf_layers(layers=5))
    layers[3] = None
    with pytest.raises(ValueError) as e:
        normalize(tuple(layers))
    assert str(e.value) == f"attention[3] is None: {EAGER}"
    with pytest.raises(ValueError) as e:
        normalize(cross_attentions=(None, None), tokens=words(5), target_tokens=words(5))
    assert str(e.value) == f"cross_attentions[0] is None: {EAGER}"


def test_int_numpy_refused():
    with pytest.raises(ValueError) as e:
        normalize([np.ones((1, 2, 3, 3), np.int64)])
    assert str(e.value) == "attention[0]: expected floating-point attention weights, got int64"


def test_bool_and_int_lists_refused():
    with pytest.raises(ValueError, match=r"^attention: expected floating-point attention weights, got bool"):
        normalize(np.eye(3, dtype=bool)[None])
    with pytest.raises(ValueError, match=r"^attention\[0\]: expected floating-point attention weights, got int"):
        normalize([[[[1, 0], [0, 1]]]])


def test_int_torch_refused():
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError) as e:
        normalize([torch.ones(1, 2, 3, 3, dtype=torch.int64)])
    assert str(e.value) == "attention[0]: expected floating-point attention weights, got int64"
    with pytest.raises(ValueError, match=r"^attention: expected floating-point attention weights, got bool"):
        normalize(torch.ones(2, 3, 3, dtype=torch.bool))


# ---- values


@pytest.mark.parametrize("value, word", [(np.nan, "NaN"), (np.inf, "inf"), (-np.inf, "-inf")])
def test_non_finite_in_layer(value, word):
    layers = [layer.copy() for layer in hf_layers(layers=3, heads=5, q=7)]
    layers[2][0, 4, 6, 2] = value
    with pytest.raises(ValueError) as e:
        normalize(layers)
    assert str(e.value) == f"attention[2]: {word} at [h, q, k] = [4, 6, 2] (0-based)"


def test_non_finite_in_array():
    a = softmax(3, 5, 7, 7)
    a[1, 2, 3, 4] = np.nan
    with pytest.raises(ValueError) as e:
        normalize(a)
    assert str(e.value) == "attention: NaN at [layer, h, q, k] = [1, 2, 3, 4] (0-based)"


def test_non_finite_in_torch_bfloat16():
    torch = pytest.importorskip("torch")
    a = torch.tensor(softmax(2, 3, 4, 4)).to(torch.bfloat16)
    a[1, 0, 2, 3] = float("nan")
    with pytest.raises(ValueError, match=r"^attention: NaN at \[layer, h, q, k\] = \[1, 0, 2, 3\]"):
        normalize(a)


def test_raw_scores_refused():
    scores = np.random.default_rng(0).normal(size=(2, 1, 3, 5, 5)).astype(np.float32)
    with pytest.raises(ValueError, match=r"^attention\[0\]: .* at \[h, q, k\] = .* is outside \[0, 1\]: expected softmax outputs"):
        normalize(tuple(scores))


def test_row_not_summing_to_one():
    a = softmax(2, 3, 4, 4)
    a[1, 2, 3] *= 0.5
    with pytest.raises(ValueError, match=r"^attention: row \[layer, h, q\] = \[1, 2, 3\] \(0-based\) sums to 0\.5 over the keys.*softmax"):
        normalize(a)


def test_transposed_map_refused():
    a = softmax(1, 2, 6, 6, causal=True)
    with pytest.raises(ValueError, match=r"^attention\[0\]: row \[h, q\] = .* sums to"):
        normalize(tuple(np.swapaxes(a, -1, -2)[:, None]))


def test_fully_masked_row_and_tolerance_accepted():
    a = softmax(2, 3, 4, 4, causal=True)
    a[1, 2, 0] = 0  # a fully masked row sums to 0
    a[0, 0, 3] *= 1.009  # within 1e-2
    a[0, 1, 2, 1] += a[0, 1, 2, 0] + 0.005  # a small negative weight, the row still sums to 1
    a[0, 1, 2, 0] = -0.005
    check_maps(only(normalize(a)).maps, a)


def test_bfloat16_rounding_accepted():
    torch = pytest.importorskip("torch")
    a = torch.tensor(softmax(2, 4, 256, 256)).to(torch.bfloat16)
    check_maps(only(normalize(a)).maps, a.float().numpy())


def test_torch_never_imported():
    import subprocess

    code = ("import sys, numpy as np; from attnviz import _inputs; "
            "_inputs.normalize(np.full((1, 2, 3, 3), 1 / 3)); assert 'torch' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=pathlib.Path(__file__).resolve().parents[1])


# ---- limits


def test_limit_layers():
    layers = [softmax(1, 2, 2, seed=i) for i in range(257)]
    with pytest.raises(ValueError, match=r"^attention: 257 layers is over the limit of 256"):
        normalize(layers)
    assert only(normalize(layers[:256])).maps.shape == (256, 1, 2, 2)


def test_limit_heads():
    with pytest.raises(ValueError, match=r"^attention: 257 heads is over the limit of 256"):
        normalize(np.broadcast_to(np.float32(0.5), (1, 257, 2, 2)))


def test_limit_tokens():
    # A zero-stride view: 5000 x 5000 without 100 MB; refused from its shape before any copy.
    big = np.broadcast_to(np.float32(1 / 5000), (1, 1, 5000, 5000))
    with pytest.raises(ValueError, match=r"^attention: 5000 queries is over the limit of 4096 tokens per sequence"):
        normalize(big)
    cross = np.broadcast_to(np.float32(1 / 5000), (1, 1, 3, 5000))
    with pytest.raises(ValueError, match=r"^cross_attentions: 5000 keys is over the limit of 4096"):
        normalize(cross_attentions=cross, target_tokens=words(3))


def test_limit_values():
    big = np.broadcast_to(np.float32(1 / 4096), (5, 1, 4096, 4096))  # 83,886,080 values
    with pytest.raises(ValueError, match=r"^attention: 83,886,080 values .* over the limit of 2\*\*26 = 67,108,864"):
        normalize(big)
    enc = np.broadcast_to(np.float32(1 / 4096), (3, 1, 4096, 4096))
    cross = np.broadcast_to(np.float32(1 / 4096), (2, 1, 16, 4096))
    dec = np.broadcast_to(np.float32(1 / 16), (2, 1, 16, 16))
    _inputs.check_limits({"encoder_attentions": enc.shape, "cross_attentions": cross.shape})
    with pytest.raises(ValueError, match=r"^encoder_attentions \+ decoder_attentions \+ cross_attentions: 67,240,448 values"):
        _inputs.check_limits({"encoder_attentions": (4, 1, 4096, 4096), "decoder_attentions": dec.shape,
                              "cross_attentions": cross.shape})


def test_limit_exactly_2_26_values_passes_shape_check():
    _inputs.check_limits({"attention": (4, 1, 4096, 4096)})
    with pytest.raises(ValueError, match=r"empty"):
        _inputs.check_limits({"attention": (0, 1, 4, 4)})


def test_speed_of_checks():
    a = np.broadcast_to(softmax(1, 4, 1024, 1024), (16, 4, 1024, 1024))  # 2**26 values
    start = time.perf_counter()
    s = only(normalize(a))
    assert time.perf_counter() - start < 3
    assert s.maps.shape == (16, 4, 1024, 1024)
