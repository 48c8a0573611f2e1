# Writes the tests/data/import_*.json files (run with /usr/bin/python3; needs numpy).
# The files are committed; this is how they were made.
import json, os, numpy as np
here = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(7)
def softmax_maps(L, H, Tq, Tk, causal=False):
    out = []
    for l in range(L):
        layer = []
        for h in range(H):
            s = rng.normal(size=(Tq, Tk)) * 1.5
            if causal:
                s[np.triu_indices(Tq, 1)] = -np.inf
            w = np.exp(s - s.max(1, keepdims=True)); w /= w.sum(1, keepdims=True)
            w = np.round(w, 4)
            # fix the rounding so each row sums to 1 exactly in 4 decimals
            for r in range(Tq):
                j = int(np.argmax(w[r])); w[r, j] = round(1 - (w[r].sum() - w[r, j]), 4)
            layer.append(w.tolist())
        out.append(layer)
    return out
def dump(name, obj):
    with open(os.path.join(here, name), 'w') as f:
        f.write(json.dumps(obj, ensure_ascii=False) + '\n')
dec = ["The", "Ġcat", "Ġsat", "Ġdown", "."]
dump('import_decoder.json', {"model": "tiny-gpt (test data)", "tokens": dec, "attention": softmax_maps(2, 2, 5, 5, causal=True)})
enc = ["[CLS]", "un", "##believ", "##able", "[SEP]"]
dump('import_encoder.json', {"tokens": enc, "attention": softmax_maps(2, 3, 5, 5)})
src, tgt = ["▁Das", "▁Haus", "</s>"], ["<pad>", "▁The", "▁house"]
dump('import_encdec.json', {"model": "tiny-t5 (test data)", "encoder_tokens": src, "decoder_tokens": tgt,
    "encoder_attention": softmax_maps(2, 2, 3, 3), "decoder_attention": softmax_maps(2, 2, 3, 3, causal=True),
    "cross_attention": softmax_maps(2, 2, 3, 3)})
b = softmax_maps(2, 2, 4, 4)
dump('import_batch.json', {"tokens": ["Ġa", "Ġb", "Ġc", "Ġd"], "attention": [[layer] for layer in b]})
allm = softmax_maps(2, 2, 4, 4)
toks = ["[CLS]", "hi", "[SEP]", "yo"]
A = np.array(allm)
dump('import_bertviz.json', {"attention": [
    {"name": "All", "attn": allm, "left_text": toks, "right_text": toks},
    {"name": "Sentence A -> Sentence A", "attn": A[:, :, :3, :3].tolist(), "left_text": toks[:3], "right_text": toks[:3]},
    {"name": "Sentence B -> Sentence A", "attn": A[:, :, 3:, :3].tolist(), "left_text": toks[3:], "right_text": toks[:3]}],
    "default_filter": "0", "display_mode": "dark", "root_div_id": "bertviz-0123", "include_layers": [0, 1],
    "include_heads": [0, 1], "total_heads": 2})
dump('import_bertviz_encdec.json', {"attention": [
    {"name": "Encoder", "attn": softmax_maps(1, 2, 3, 3), "left_text": src, "right_text": src},
    {"name": "Decoder", "attn": softmax_maps(1, 2, 2, 2, causal=True), "left_text": tgt[:2], "right_text": tgt[:2]},
    {"name": "Cross", "attn": softmax_maps(1, 2, 2, 3), "left_text": tgt[:2], "right_text": src}],
    "default_filter": "0", "display_mode": "light", "root_div_id": "bertviz-4567", "include_layers": [0],
    "include_heads": [0, 1], "total_heads": 2})
# bad files, written by hand-ish so each line is predictable
t3 = ["a", "b", "c"]
good = softmax_maps(2, 2, 3, 3)
bad = json.loads(json.dumps(good)); bad[0][1] = bad[0][1][:2]
dump('import_bad_shape.json', {"tokens": t3, "attention": bad})
bad = json.loads(json.dumps(good)); bad[1] = bad[1][:1]
dump('import_bad_ragged.json', {"tokens": t3, "attention": bad})
bad = json.loads(json.dumps(good)); bad[1][0][2] = [0.5, 0.2, 0.1]
dump('import_bad_rowsum.json', {"tokens": t3, "attention": bad})
with open(os.path.join(here, 'import_bad_nonfinite.json'), 'w') as f:
    f.write('{"tokens": ["a", "b"],\n "attention": [[[[1, 0], [0.5, NaN]]]]}\n')
with open(os.path.join(here, 'import_bad_syntax.json'), 'w') as f:
    f.write('{"tokens": ["a", "b"],\n "attention": [[[[1, 0], [0.5, 0.5]]]]\n')
dump('import_bad_layout.json', {"text": "a b", "tokens": ["a", "b"], "attn": [[[[1, 0], [0.5, 0.5]]]]})
