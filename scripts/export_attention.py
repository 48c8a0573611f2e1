#!/usr/bin/python3
"""Export a model's attention weights as an attnviz import file (SPEC.md §3, docs/IMPORT.md).

Two sources:

1. A Hugging Face model (needs the `transformers` package and the model's files):
       /usr/bin/python3 scripts/export_attention.py bert-base-uncased "The cat sat." -o cat.json
       /usr/bin/python3 scripts/export_attention.py t5-small "translate English to German: The house" \\
           --target "Das Haus" -o house.json
   Decoder-only and encoder-only models give {"tokens", "attention"}; encoder-decoder models
   give encoder_tokens, decoder_tokens, encoder_attention, decoder_attention and cross_attention.

2. A torch.nn.Transformer (or its encoder / decoder layers) or one nn.MultiheadAttention, from
   Python:
       from export_attention import export_transformer, export_multihead_attention
       export_transformer(model, src_tokens, tgt_tokens, src_embeddings, tgt_embeddings, "out.json")
   The weights are those of each layer's own attention module, called on the input that layer
   sees (see export_transformer).

Numbers are written with 6 significant digits: a 12-layer × 12-head × 256-token file is about
120 MB (17 digits, as json.dumps writes them, would be 220 MB) and reads in well under a second
natively. torch and transformers are imported only when needed.
"""
import argparse
import json
import math
import sys

__all__ = ["export_hf", "export_transformer", "export_multihead_attention", "write_import"]


# --- Writing -----------------------------------------------------------------------------------

def _format_map(m):
    """One T_q×T_k map (nested lists or an array) as JSON text, 6 significant digits."""
    rows = []
    for row in m:
        rows.append("[" + ", ".join(_number(float(x)) for x in row) + "]")
    return "[" + ", ".join(rows) + "]"


def _number(x):
    if not math.isfinite(x):
        # The file would not be JSON; attnviz would name the place, but say it here first.
        raise ValueError("non-finite attention weight %r: the model's attention is not a softmax output" % x)
    if x == 0.0:
        return "0"
    return "%.6g" % x


def _stack_text(stack):
    """[layer][head][query][key] from a list of per-layer arrays [head][q][k] (or [1][head][q][k])."""
    layers = []
    for layer in stack:
        a = _to_numpy(layer)
        if a.ndim == 4:
            if a.shape[0] != 1:
                raise ValueError("expected a batch of one sequence, got a batch of %d" % a.shape[0])
            a = a[0]
        if a.ndim != 3:
            raise ValueError("expected [head][query][key] per layer, got shape %s" % (a.shape,))
        layers.append("[" + ", ".join(_format_map(h) for h in a) + "]")
    return "[" + ",\n ".join(layers) + "]"


def _to_numpy(x):
    if hasattr(x, "detach"):  # a torch tensor: float32 on the CPU (fp16 / bf16 models too)
        return x.detach().float().cpu().numpy()
    import numpy
    return numpy.asarray(x, dtype=numpy.float64)


def write_import(path, tokens=None, attention=None, *, encoder_tokens=None, decoder_tokens=None,
                 encoder_attention=None, decoder_attention=None, cross_attention=None, model=None):
    """Writes SPEC.md §3 JSON. Each *attention is a list (one per layer) of [head][q][k] arrays or
    tensors (a leading batch dimension of 1 is dropped)."""
    fields = []
    if model:
        fields.append('"model": ' + json.dumps(model, ensure_ascii=False))
    if attention is not None:
        fields.append('"tokens": ' + json.dumps(list(tokens), ensure_ascii=False))
        fields.append('"attention": ' + _stack_text(attention))
    else:
        if encoder_tokens is not None:
            fields.append('"encoder_tokens": ' + json.dumps(list(encoder_tokens), ensure_ascii=False))
        if decoder_tokens is not None:
            fields.append('"decoder_tokens": ' + json.dumps(list(decoder_tokens), ensure_ascii=False))
        for name, stack in (("encoder_attention", encoder_attention), ("decoder_attention", decoder_attention),
                            ("cross_attention", cross_attention)):
            if stack is not None:
                fields.append('"%s": %s' % (name, _stack_text(stack)))
    text = "{" + ",\n".join(fields) + "}\n"
    if path == "-":
        sys.stdout.write(text)
    else:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


# --- Hugging Face -------------------------------------------------------------------------------

def _need_transformers():
    try:
        import transformers  # noqa: F401
    except ImportError:
        sys.exit("export_attention.py: exporting a Hugging Face model needs the 'transformers' package, "
                 "which this Python does not have (pip install transformers). The torch.nn path "
                 "(export_transformer, export_multihead_attention) needs only torch.")
    return transformers


def _from_pretrained(cls, name):
    # Attention weights come only from the "eager" implementation: newer transformers default
    # to SDPA / flash attention, which never form the weights. Older versions lack the argument.
    try:
        return cls.from_pretrained(name, attn_implementation="eager")
    except TypeError:
        return cls.from_pretrained(name)


def export_hf(model_name, text, path, target=None):
    """Runs a Hugging Face model once on `text` (and `target`, the decoder's text, for
    encoder-decoder models) with output_attentions=True and writes its attention."""
    transformers = _need_transformers()
    import torch

    tokenizer = transformers.AutoTokenizer.from_pretrained(model_name)
    config = transformers.AutoConfig.from_pretrained(model_name)
    inputs = tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        if getattr(config, "is_encoder_decoder", False):
            model = _from_pretrained(transformers.AutoModelForSeq2SeqLM, model_name).eval()
            if target is None:
                sys.exit("export_attention.py: %s is an encoder-decoder model: give the decoder's text "
                         "with --target" % model_name)
            try:
                labels = tokenizer(text_target=target, return_tensors="pt").input_ids
            except TypeError:  # transformers before 4.22
                with tokenizer.as_target_tokenizer():
                    labels = tokenizer(target, return_tensors="pt").input_ids
            # The decoder reads the target shifted right (it starts from the start token), as in
            # training; the model's own helper knows its start token.
            if hasattr(model, "prepare_decoder_input_ids_from_labels"):
                decoder_ids = model.prepare_decoder_input_ids_from_labels(labels=labels)
            else:
                start = model.config.decoder_start_token_id
                if start is None:
                    sys.exit("export_attention.py: %s names no decoder_start_token_id" % model_name)
                decoder_ids = torch.cat([torch.full_like(labels[:, :1], start), labels[:, :-1]], dim=1)
            out = model(**inputs, decoder_input_ids=decoder_ids, output_attentions=True, return_dict=True)
            if out.encoder_attentions is None or out.cross_attentions is None:
                sys.exit("export_attention.py: %s returned no attention weights" % model_name)
            write_import(path, model=model_name,
                         encoder_tokens=tokenizer.convert_ids_to_tokens(inputs["input_ids"][0]),
                         decoder_tokens=tokenizer.convert_ids_to_tokens(decoder_ids[0]),
                         encoder_attention=out.encoder_attentions, decoder_attention=out.decoder_attentions,
                         cross_attention=out.cross_attentions)
        else:
            model = _from_pretrained(transformers.AutoModel, model_name).eval()
            out = model(**inputs, output_attentions=True, return_dict=True)
            if out.attentions is None:
                sys.exit("export_attention.py: %s returned no attention weights" % model_name)
            write_import(path, model=model_name, tokens=tokenizer.convert_ids_to_tokens(inputs["input_ids"][0]),
                         attention=out.attentions)


# --- torch.nn -------------------------------------------------------------------------------------

def _weights(mha, query, key, attn_mask=None, key_padding_mask=None):
    """Per-head weights of nn.MultiheadAttention on these inputs: [batch][head][T_q][T_k]."""
    _, w = mha(query, key, key, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
               need_weights=True, average_attn_weights=False)
    return w


def _batched(x, batch_first):
    """[T, d] → [T, 1, d] or [1, T, d] as the module expects; [.., .., d] is left as is."""
    if x.dim() == 2:
        return x.unsqueeze(0) if batch_first else x.unsqueeze(1)
    return x


def _encoder_layers(model):
    enc = getattr(model, "encoder", None)
    return list(enc.layers) if enc is not None else []


def capture_transformer(model, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None):
    """Runs an nn.Transformer layer by layer on src [T_src, d] and tgt [T_tgt, d] embeddings and
    returns (encoder, decoder, cross, output): three lists of [head][q][k] tensors, one per layer,
    and the model's output computed by its own layers.

    Each layer's attention module is called again with need_weights=True on exactly the input the
    layer gives it (after norm1 / norm2 when norm_first), with the layer's masks; the layer itself
    then computes its output, which feeds the next layer. Eval mode: dropout is off.
    tgt_mask defaults to the causal mask (decoder self-attention)."""
    import torch

    batch_first = getattr(model, "batch_first", False)
    src, tgt = _batched(src, batch_first), _batched(tgt, batch_first)
    T_tgt = tgt.shape[1] if batch_first else tgt.shape[0]
    if tgt_mask is None:
        tgt_mask = torch.triu(torch.full((T_tgt, T_tgt), float("-inf")), diagonal=1)
    encoder, decoder, cross = [], [], []
    with torch.no_grad():
        x = src
        for layer in model.encoder.layers:
            sa_in = layer.norm1(x) if layer.norm_first else x
            encoder.append(_weights(layer.self_attn, sa_in, sa_in, src_mask)[0])
            x = layer(x, src_mask=src_mask)
        memory = model.encoder.norm(x) if model.encoder.norm is not None else x

        y = tgt
        for layer in model.decoder.layers:
            sa_in = layer.norm1(y) if layer.norm_first else y
            decoder.append(_weights(layer.self_attn, sa_in, sa_in, tgt_mask)[0])
            # The cross-attention's input: what the layer has after its self-attention block.
            sa_out = layer.dropout1(layer.self_attn(sa_in, sa_in, sa_in, attn_mask=tgt_mask, need_weights=False)[0])
            x1 = y + sa_out if layer.norm_first else layer.norm1(y + sa_out)
            ca_in = layer.norm2(x1) if layer.norm_first else x1
            cross.append(_weights(layer.multihead_attn, ca_in, memory, memory_mask)[0])
            y = layer(y, memory, tgt_mask=tgt_mask, memory_mask=memory_mask)
        output = model.decoder.norm(y) if model.decoder.norm is not None else y

        # The layer-by-layer run must be the model's own forward pass, or the weights belong to
        # some other computation (a subclass with a different forward, say).
        whole = model(src, tgt, src_mask=src_mask, tgt_mask=tgt_mask, memory_mask=memory_mask)
        if not torch.allclose(whole, output, atol=1e-5, rtol=1e-4):
            raise RuntimeError("the layer-by-layer run differs from model(src, tgt) by %.3g: this model's "
                               "forward is not nn.Transformer's" % (whole - output).abs().max().item())
    return encoder, decoder, cross, output


def export_transformer(model, src_tokens, tgt_tokens, src_embeddings, tgt_embeddings, path,
                       src_mask=None, tgt_mask=None, memory_mask=None, name=None):
    """Writes the encoder self-attention, the decoder's causal self-attention and the decoder's
    cross-attention of every layer of an nn.Transformer (eval mode) for one sequence pair.
    src_embeddings: [T_src, d_model], tgt_embeddings: [T_tgt, d_model] (the model's inputs, i.e.
    already embedded and position-encoded), as torch tensors or arrays."""
    import torch

    src = torch.as_tensor(src_embeddings, dtype=torch.float32)
    tgt = torch.as_tensor(tgt_embeddings, dtype=torch.float32)
    if len(src_tokens) != src.shape[-2] or len(tgt_tokens) != tgt.shape[-2]:
        raise ValueError("expected one embedding row per token: %d source tokens, %d rows; %d target tokens, %d rows"
                         % (len(src_tokens), src.shape[-2], len(tgt_tokens), tgt.shape[-2]))
    was_training = model.training
    model.eval()
    try:
        encoder, decoder, cross, _ = capture_transformer(model, src, tgt, src_mask, tgt_mask, memory_mask)
    finally:
        model.train(was_training)
    write_import(path, model=name or type(model).__name__, encoder_tokens=src_tokens, decoder_tokens=tgt_tokens,
                 encoder_attention=encoder, decoder_attention=decoder, cross_attention=cross)


def export_multihead_attention(mha, tokens, x, path, key_tokens=None, kv=None, attn_mask=None, causal=False,
                               name=None):
    """One nn.MultiheadAttention as a one-layer file. Self-attention on x [T, d] (causal=True
    adds the causal mask), or, with key_tokens and kv [T_k, d], cross-attention from x to kv."""
    import torch

    x = _batched(torch.as_tensor(x, dtype=torch.float32), mha.batch_first)
    with torch.no_grad():
        if kv is None:
            T = len(tokens)
            if causal and attn_mask is None:
                attn_mask = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
            w = _weights(mha, x, x, attn_mask)[0]
            write_import(path, model=name or "MultiheadAttention", tokens=tokens, attention=[w])
        else:
            kv = _batched(torch.as_tensor(kv, dtype=torch.float32), mha.batch_first)
            w = _weights(mha, x, kv, attn_mask)[0]
            write_import(path, model=name or "MultiheadAttention", encoder_tokens=key_tokens, decoder_tokens=tokens,
                         cross_attention=[w])


# --- Command line ------------------------------------------------------------------------------

def main(argv=None):
    parser = argparse.ArgumentParser(description="Export a Hugging Face model's attention for attnviz "
                                                 "(attnviz import FILE, or drop the file on the page).")
    parser.add_argument("model", help="a Hugging Face model name or folder, e.g. bert-base-uncased, gpt2, t5-small")
    parser.add_argument("text", help="the input text (the encoder's, for encoder-decoder models)")
    parser.add_argument("--target", help="encoder-decoder models: the decoder's text")
    parser.add_argument("-o", "--output", default="-", help="output file (default: stdout)")
    args = parser.parse_args(argv)
    export_hf(args.model, args.text, args.output, target=args.target)


if __name__ == "__main__":
    main()
