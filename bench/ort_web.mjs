// ort_web.mjs: attnviz's attention in wasm against ONNX Runtime Web's, side by side in one node
// process (issue "Speed against the runtime browsers use"; bench/ort_chromium.mjs: the same in a
// headless Chromium page; bench/ort_compare.mjs: what both run). nn.MultiheadAttention(512, 8) as
// PyTorch exports it (bench/ort/export_mha.py), self, causal and cross, at T = 128, 512 and 2048,
// every head's weights returned by both. First the numbers are compared (the largest difference
// printed); then the two run alternately, after a warm-up, and the medians are printed.
// Numbers only: this is not a test.
//   /usr/bin/python3 bench/ort/export_mha.py /tmp/attnviz-ort
//   (cd bench/ort && npm install)                       # onnxruntime-web 1.30.0
//   cmake --build build-web --target attn_mha_node attn_mha_node_relaxed   # build-web/attn_mha_node{,_relaxed}.js
//   node --no-experimental-fetch --no-liftoff --experimental-wasm-relaxed-simd bench/ort_web.mjs [/tmp/attnviz-ort] [ROUNDS] [T,… ("": none)] [FOLDER:T:ONNX …]
// Whole models (gpt2): each FOLDER:T:ONNX runs the folder's model at T in both runtimes, the
// ONNX graph written by bench/ort/export_model.py FOLDER T ONNX (the logits at the last position
// and every layer's attention).
// attnviz runs twice: SIMD128 and relaxed SIMD (the latter where node validates it: node 20 needs
// --experimental-wasm-relaxed-simd), each beside ORT in the same rounds.
// --no-liftoff: V8 runs the modules from its optimizing compiler from the start;
// --no-experimental-fetch: Emscripten 3.1.6 reads its .wasm with fetch when node has one.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { compareMha, compareModel, mhaLayer, modelRunner, relaxedProbe } from './ort_compare.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const dir = process.argv[2] || '/tmp/attnviz-ort';
const rounds = +(process.argv[3] || 5);
const Ts = (process.argv[4] ?? '128,512,2048').split(',').filter(Boolean).map(Number);
const models = process.argv.slice(5).map((a) => { const [folder, T, onnx] = a.split(':'); return { folder, T: +T, onnx }; });
const require = createRequire(import.meta.url);
const ort = require(path.join(here, 'ort/node_modules/onnxruntime-web'));
ort.env.wasm.numThreads = 1;  // one thread, as attnviz's module (no SharedArrayBuffer in a blog page)
const log = (line) => console.log(line);

const variants = [['simd128', 'attn_mha_node.js']];
if (WebAssembly.validate(relaxedProbe)) variants.push(['relaxed', 'attn_mha_node_relaxed.js']);
const attns = [];
for (const [name, file] of variants) attns.push({ name, attn: await require(path.resolve(here, '../build-web', file))() });
log(`# machine: ${os.cpus()[0].model}, ${os.cpus().length} cores; node ${process.version}; onnxruntime-web ${ort.env.versions?.web || '1.30.0'}, wasm, 1 thread`);
log(`# attnviz modules: ${variants.map(([n, f]) => `${n} (${f})`).join(', ')}; ratio = attnviz / ORT`);

if (Ts.length) {
  const wbytes = fs.readFileSync(path.join(dir, 'weights.bin'));
  const weights = new Float32Array(wbytes.buffer, wbytes.byteOffset, wbytes.length / 4);
  const layers = attns.map(({ name, attn }) => mhaLayer(name, attn, weights));
  const sessions = {};
  for (const kind of ['self', 'causal', 'cross'])
    sessions[kind] = await ort.InferenceSession.create(path.join(dir, `${kind}.onnx`), { executionProviders: ['wasm'] });
  await compareMha({ ort, sessions, layers, Ts, rounds, log });
  for (const l of layers) l.close();
}

// [whole models] ------------------------------------------------------------------------------
for (const [i, { folder, T, onnx }] of models.entries()) {
  const session = await ort.InferenceSession.create(onnx, { executionProviders: ['wasm'] });
  const config = JSON.parse(fs.readFileSync(path.join(folder, 'config.json')));
  const V = config.vocab_size, L = config.n_layer ?? config.num_hidden_layers, H = config.n_head ?? config.num_attention_heads;
  const runs = attns.map(({ name, attn }) => modelRunner(name, attn, path.resolve(folder), { V, L, H }));
  await compareModel({ ort, session, models: runs, label: path.basename(path.resolve(folder)), T, V, rounds, log, first: i === 0 });
  for (const r of runs) r.close();
}
