#!/usr/bin/env python3
"""SentencePiece references for the suite's Unigram test (tests/test_tokenizers.cpp), from
Debian's python3-sentencepiece:

    /usr/bin/python3 tests/model/spm_reference.py OUTDIR

Trains small Unigram models, deterministically (one thread, fixed texts), on GPL-3's text and
Chinese and English sentences (tests/model/make_models.py's), and writes to OUTDIR:
  nfkc.spm, identity.spm      nmt_nfkc (Marian's default) and identity normalization
  nfkc.tokenizer.json          the nfkc model as tokenizer.json (Unigram, Precompiled charsmap)
  source.spm, vocab.json       a Marian pair: pieces mapped to vocab.json's ids as MarianTokenizer does
  spm.json                     {"texts": [...], "nfkc": [[ids]], "identity": [[ids]], "marian": [[ids]]}
                               for the texts of tests/model/tokenizer_texts.json
"""
import base64
import io
import json
import os
import sys

import sentencepiece as spm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_models  # noqa: E402  (its texts and Marian's vocab.json rules)


def train(lines, vocab_size, rule):
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=model, vocab_size=vocab_size,
                                   model_type="unigram", character_coverage=1.0, num_threads=1,
                                   hard_vocab_limit=False, minloglevel=2, normalization_rule_name=rule)
    return model.getvalue()


def fields(data):
    """(field number, wire type, value) of a protobuf message, top level."""
    i = 0
    while i < len(data):
        key, i = varint(data, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, i = varint(data, i)
        elif wire == 2:
            n, i = varint(data, i)
            value, i = data[i:i + n], i + n
        elif wire == 5:
            value, i = data[i:i + 4], i + 4
        elif wire == 1:
            value, i = data[i:i + 8], i + 8
        else:
            raise ValueError(f"wire type {wire}")
        yield field, wire, value


def varint(data, i):
    v = shift = 0
    while True:
        b = data[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, i


def tokenizer_json(model):
    """The model as Hugging Face's tokenizer.json (what its SentencePiece converter writes for T5)."""
    sp = spm.SentencePieceProcessor(model_proto=model)
    normalizer = next(v for f, w, v in fields(model) if f == 3)
    charsmap = next((v for f, w, v in fields(normalizer) if f == 2), b"")
    vocab = [[sp.id_to_piece(i), sp.get_score(i)] for i in range(sp.get_piece_size())]
    special = [{"id": i, "content": sp.id_to_piece(i), "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
                "special": True} for i in range(sp.get_piece_size()) if sp.is_control(i)]
    return {"version": "1.0", "added_tokens": special,
            "normalizer": {"type": "Sequence", "normalizers": [
                {"type": "Precompiled", "precompiled_charsmap": base64.b64encode(charsmap).decode()},
                {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]},
            "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
                {"type": "WhitespaceSplit"}, {"type": "Metaspace", "replacement": "\u2581", "add_prefix_space": True}]},
            "model": {"type": "Unigram", "unk_id": sp.unk_id(), "vocab": vocab}}


def main(out):
    os.makedirs(out, exist_ok=True)
    with open("/usr/share/common-licenses/GPL-3", encoding="utf-8") as f:
        lines = [line.strip() for line in f.read().split("\n") if len(line.strip()) > 20][:200]
    corpus = make_models.CHINESE * 3 + make_models.ENGLISH + lines
    texts = json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "tokenizer_texts.json"), encoding="utf-8"))
    result = {"texts": texts}
    for name, rule in (("nfkc", "nmt_nfkc"), ("identity", "identity")):
        model = train(corpus, 400, rule)
        open(os.path.join(out, name + ".spm"), "wb").write(model)
        sp = spm.SentencePieceProcessor(model_proto=model)
        result[name] = [sp.encode(t) for t in texts]
        if name == "nfkc":
            json.dump(tokenizer_json(model), open(os.path.join(out, "nfkc.tokenizer.json"), "w"), ensure_ascii=False)
    source, _, vocab = make_models.marian_tokenizers(lines)
    open(os.path.join(out, "source.spm"), "wb").write(source)
    json.dump(vocab, open(os.path.join(out, "vocab.json"), "w"), ensure_ascii=False)
    result["marian"] = [make_models.spm_encode(source, vocab, t) for t in texts]
    json.dump(result, open(os.path.join(out, "spm.json"), "w"), ensure_ascii=False)


if __name__ == "__main__":
    main(sys.argv[1])
