// ort_web.mjs: attnviz's attention in wasm against ONNX Runtime Web's, side by side in one node
// process (issue "Speed against the runtime browsers use"). nn.MultiheadAttention(512, 8) as
// PyTorch exports it (bench/ort/export_mha.py), self, causal and cross, at T = 128, 512 and 2048,
// every head's weights returned by both. First the numbers are compared (the largest difference
// printed); then the two run alternately, after a warm-up, and the medians are printed.
// Numbers only: this is not a test.
//   /usr/bin/python3 bench/ort/export_mha.py /tmp/attnviz-ort
//   (cd bench/ort && npm install)                       # onnxruntime-web 1.30.0
//   cmake --build build-web --target attn_mha_wasm       # build-web/attn_mha_wasm.js
//   node --no-experimental-fetch --no-liftoff bench/ort_web.mjs [/tmp/attnviz-ort] [ROUNDS] [T,… ("": none)] [FOLDER:T:ONNX …]
// Whole models (gpt2): each FOLDER:T:ONNX runs the folder's model at T in both runtimes, the
// ONNX graph written by bench/ort/export_gpt2.py FOLDER T ONNX (the logits at the last position
// and every layer's attention).
// --no-liftoff: V8 runs both modules from its optimizing compiler from the start;
// --no-experimental-fetch: Emscripten 3.1.6 reads its .wasm with fetch when node has one.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const dir = process.argv[2] || '/tmp/attnviz-ort';
const rounds = +(process.argv[3] || 5);
const Ts = (process.argv[4] ?? '128,512,2048').split(',').filter(Boolean).map(Number);
const models = process.argv.slice(5).map((a) => { const [folder, T, onnx] = a.split(':'); return { folder, T: +T, onnx }; });
const require = createRequire(import.meta.url);
const ort = require(path.join(here, 'ort/node_modules/onnxruntime-web'));
// attnviz's two modules (SIMD128; relaxed SIMD where this node validates it: run node with
// --experimental-wasm-relaxed-simd), each timed beside ORT in the same rounds.
// The probe (as web/site/attnviz-page.js's): (func (result v128) f32x4.relaxed_madd of three v128.const 0).
const v128zero = [0xfd, 0x0c, ...new Array(16).fill(0)];
const relaxedProbe = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 0x60, 0, 1, 0x7b, 3, 2, 1, 0,
  10, 61, 1, 59, 0, ...v128zero, ...v128zero, ...v128zero, 0xfd, 0x85, 0x02, 0x0b]);
const variants = [['simd128', 'attn_mha_wasm.js']];
if (WebAssembly.validate(relaxedProbe)) variants.push(['relaxed', 'attn_mha_wasm_relaxed.js']);
const D = 512, HEADS = 8;

ort.env.wasm.numThreads = 1;  // one thread, as attnviz's module (no SharedArrayBuffer in a blog page)
// Each module with attnviz's layer from weights.bin in its heap.
const wbytes = fs.readFileSync(path.join(dir, 'weights.bin'));
const attns = [];
for (const [name, file] of variants) {
  const attn = await require(path.resolve(here, '../build-web', file))();
  const wptr = attn._malloc(wbytes.length);
  attn.HEAPF32.set(new Float32Array(wbytes.buffer, wbytes.byteOffset, wbytes.length / 4), wptr / 4);
  attns.push({ name, attn, layer: attn._attn_mha_new(D, HEADS, wptr) });
  attn._free(wptr);
}

// splitmix64-free inputs: a fixed LCG in [−1, 1), the same for both runtimes.
function inputs(n, seed) {
  const a = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; ++i) { s = (Math.imul(s, 1664525) + 1013904223) >>> 0; a[i] = s / 2147483648 - 1; }
  return a;
}

const sessions = {};
for (const kind of ['self', 'causal', 'cross'])
  sessions[kind] = await ort.InferenceSession.create(path.join(dir, `${kind}.onnx`), { executionProviders: ['wasm'] });

async function runOrt(kind, T, xq, xkv) {
  const t = (a) => new ort.Tensor('float32', a, [T, 1, D]);
  const feeds = kind === 'cross' ? { xq: t(xq), xkv: t(xkv) } : { x: t(xq) };
  if (kind === 'causal') {
    const mask = new Float32Array(T * T);
    for (let i = 0; i < T; ++i) for (let j = i + 1; j < T; ++j) mask[i * T + j] = -Infinity;
    feeds.mask = new ort.Tensor('float32', mask, [T, T]);
  }
  const r = await sessions[kind].run(feeds);
  return { y: r.y.data, w: r.w.data };
}

function runAttn({ attn, layer }, kind, T, xq, xkv) {
  const n = T * D;
  const pq = attn._malloc(4 * n), pkv = kind === 'cross' ? attn._malloc(4 * n) : pq;
  const pout = attn._malloc(4 * n), pw = attn._malloc(4 * HEADS * T * T);
  attn.HEAPF32.set(xq, pq / 4);
  if (kind === 'cross') attn.HEAPF32.set(xkv, pkv / 4);
  attn._attn_mha_run(layer, pq, T, pkv, T, kind === 'causal' ? 1 : 0, pout, pw);
  const heap = attn.HEAPF32;  // after the run: the heap may have grown
  const y = heap.slice(pout / 4, pout / 4 + n), w = heap.slice(pw / 4, pw / 4 + HEADS * T * T);
  for (const p of new Set([pq, pkv, pout, pw])) attn._free(p);
  return { y, w };
}

const maxDiff = (a, b) => { let m = 0; for (let i = 0; i < a.length; ++i) m = Math.max(m, Math.abs(a[i] - b[i])); return m; };
const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
// Runs ORT and every attnviz module alternately, after the first (checked) run that warms them
// up: returns the medians, ORT's first.
async function timeAlternating(runners) {
  const ms = runners.map(() => []);
  for (let r = 0; r < rounds; ++r)  // alternating, so that a slow moment hits all
    for (let i = 0; i < runners.length; ++i) {
      const t0 = performance.now();
      await runners[i]();
      ms[i].push(performance.now() - t0);
    }
  return ms.map(median);
}
const cols = (ms, flop) => ms.slice(1).map((m) => `${m.toFixed(1).padStart(9)} ${(m / ms[0]).toFixed(2).padStart(5)}` +
                                                 (flop ? ` ${(flop / m / 1e6).toFixed(1).padStart(6)}` : '')).join('');
const heads = (flop) => variants.map(([name]) => ` ${(name + '_ms').padStart(10)} ratio${flop ? ' GFLOP/s' : ''}`).join('');
const cpu = os.cpus()[0].model;
console.log(`# machine: ${cpu}, ${os.cpus().length} cores; node ${process.version}; onnxruntime-web ${ort.env.versions?.web || '1.30.0'}, wasm, 1 thread`);
console.log(`# attnviz modules: ${variants.map(([n, f]) => `${n} (${f})`).join(', ')}; ratio = attnviz / ORT`);
if (Ts.length) console.log(`# kind    T     ort_ms${heads(true)}  max|Δy|   max|Δw|`);
for (const T of Ts) {
  for (const kind of ['self', 'causal', 'cross']) {
    const xq = inputs(T * D, 1 + T), xkv = inputs(T * D, 7 + T);
    const a = await runOrt(kind, T, xq, xkv);
    let dy = 0, dw = 0;
    for (const m of attns) {  // the numbers first (and the warm-up)
      const b = runAttn(m, kind, T, xq, xkv);
      dy = Math.max(dy, maxDiff(a.y, b.y)), dw = Math.max(dw, maxDiff(a.w, b.w));
    }
    const ms = await timeAlternating([() => runOrt(kind, T, xq, xkv), ...attns.map((m) => () => runAttn(m, kind, T, xq, xkv))]);
    // Projections 4·T·d² and two T×T×d products (causal: half), multiply-adds ×2.
    const flop = 2 * (4 * T * D * D + (kind === 'causal' ? 1 : 2) * T * T * D);
    console.log(`RESULT ${kind.padEnd(6)} ${String(T).padStart(5)} ${ms[0].toFixed(1).padStart(9)}${cols(ms, flop)}  ` +
                `${dy.toExponential(1)}  ${dw.toExponential(1)}`);
  }
}
for (const m of attns) m.attn._attn_mha_delete(m.layer);

// [whole models] ------------------------------------------------------------------------------
if (models.length) console.log(`# model          T     ort_ms${heads(false)}  max|Δlogits|/max|logit|  max|Δattention|`);
for (const { folder, T, onnx } of models) {
  const session = await ort.InferenceSession.create(onnx, { executionProviders: ['wasm'] });
  const config = JSON.parse(fs.readFileSync(path.join(folder, 'config.json')));
  const V = config.vocab_size, L = config.n_layer, H = config.n_head;
  const ids = Array.from({ length: T }, (_, i) => (i * 7919 + 13) % V);  // spread over the vocabulary
  const ortRun = async () => {
    const r = await session.run({ ids: new ort.Tensor('int64', BigInt64Array.from(ids.map(BigInt)), [T]) });
    return { logits: r.logits.data, attention: r.attention.data };
  };
  const attnRuns = attns.map(({ attn }) => {
    const handle = attn.ccall('attn_model_new', 'number', ['string'], [path.resolve(folder)]);
    if (!handle) throw new Error(`attnviz could not load ${folder}`);
    const run = () => {
      const pids = attn._malloc(4 * T), plog = attn._malloc(4 * V), patt = attn._malloc(4 * L * H * T * T);
      attn.HEAP32.set(ids, pids / 4);
      attn._attn_model_run(handle, pids, T, plog, patt);
      const heap = attn.HEAPF32;
      const out = { logits: heap.slice(plog / 4, plog / 4 + V), attention: heap.slice(patt / 4, patt / 4 + L * H * T * T) };
      for (const p of [pids, plog, patt]) attn._free(p);
      return out;
    };
    return { run, close: () => attn._attn_model_delete(handle) };
  });
  const a = await ortRun();
  const top = Math.max(...Array.from(a.logits, Math.abs));
  let dl = 0, da = 0;
  for (const { run } of attnRuns) {
    const b = run();
    dl = Math.max(dl, maxDiff(a.logits, b.logits) / top), da = Math.max(da, maxDiff(a.attention, b.attention));
  }
  const ms = await timeAlternating([ortRun, ...attnRuns.map((r) => r.run)]);
  console.log(`RESULT ${path.basename(path.resolve(folder)).padEnd(14)} ${String(T).padStart(4)} ${ms[0].toFixed(1).padStart(9)}` +
              `${cols(ms, 0)}  ${dl.toExponential(1).padStart(22)}  ${da.toExponential(1)}`);
  for (const r of attnRuns) r.close();
}
