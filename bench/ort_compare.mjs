// ort_compare.mjs: the comparison of bench/ort_web.mjs (node) and bench/ort_chromium.mjs (a
// headless Chromium page), written once: attnviz's wasm modules and ONNX Runtime Web on the same
// inputs, the numbers compared first, then alternating rounds after that warm-up, medians
// printed. No node or DOM API here: the caller hands in ORT, the modules and a `log`.

export const D = 512, HEADS = 8;  // nn.MultiheadAttention(512, 8), as bench/ort/export_mha.py writes it

// (func (result v128) (f32x4.relaxed_madd (v128.const 0) (v128.const 0) (v128.const 0))): the
// probe web/site/attnviz-page.js validates to pick its build.
const zero = [0xfd, 0x0c, ...new Array(16).fill(0)];
export const relaxedProbe = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 0x60, 0, 1, 0x7b, 3, 2, 1, 0,
  10, 61, 1, 59, 0, ...zero, ...zero, ...zero, 0xfd, 0x85, 0x02, 0x0b]);

// A fixed LCG in [−1, 1): the same inputs for both runtimes.
function inputs(n, seed) {
  const a = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; ++i) { s = (Math.imul(s, 1664525) + 1013904223) >>> 0; a[i] = s / 2147483648 - 1; }
  return a;
}

const maxDiff = (a, b) => { let m = 0; for (let i = 0; i < a.length; ++i) m = Math.max(m, Math.abs(a[i] - b[i])); return m; };
const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];

// Runs ORT and every attnviz module alternately, so that a slow moment hits all: the medians,
// ORT's first. First a warm-up of the same rounds, untimed, until each runner has run for
// warmMs (and at least twice): V8 (Chromium's, and node's without --no-liftoff) starts a
// module's functions in its baseline compiler and moves the hot ones to its optimizing one in
// the background; measured in a page, attnviz's attention at T = 128 took 37, 24, 14 ms in its
// first runs and ~30 runs (300 ms) to settle at 7.3 ms. A single warm-up run measured that
// transition, not the code.
// settleMs: a pause before each timed run, so that it starts as a page's run after a pause does,
// its threads asleep. apart (threaded runs): each runner timed on its own, warm-up and rounds,
// one after the other. Alternating on 2 cores, a run found the other runtime's threads still
// spinning on a core (ORT's spin for a long while after a run): attnviz's attention layer at
// T = 512 took 35-37 ms on 2 threads beside ORT, 18.8 ms alone.
async function timeAlternating(runners, rounds, { warmMs = 1500, settleMs = 0, apart = false } = {}) {
  if (apart) {
    const each = [];
    for (const runner of runners) each.push((await timeAlternating([runner], rounds, { warmMs, settleMs }))[0]);
    return each;
  }
  const settle = () => settleMs > 0 && new Promise((done) => setTimeout(done, settleMs));
  const spent = runners.map(() => 0);
  for (let r = 0; r < 2 || Math.min(...spent) < warmMs; ++r)
    for (let i = 0; i < runners.length; ++i) {
      const t0 = performance.now();
      await runners[i]();
      spent[i] += performance.now() - t0;
    }
  const ms = runners.map(() => []);
  for (let r = 0; r < rounds; ++r)
    for (let i = 0; i < runners.length; ++i) {
      await settle();
      const t0 = performance.now();
      await runners[i]();
      ms[i].push(performance.now() - t0);
    }
  return ms.map(median);
}

const cols = (ms, flop) => ms.slice(1).map((m) => `${m.toFixed(1).padStart(9)} ${(m / ms[0]).toFixed(2).padStart(5)}` +
                                                 (flop ? ` ${(flop / m / 1e6).toFixed(1).padStart(6)}` : '')).join('');
const heads = (names, flop) => names.map((n) => ` ${(n + '_ms').padStart(10)} ratio${flop ? ' GFLOP/s' : ''}`).join('');

// attnviz's layer (weights.bin's floats, as export_mha.py writes them) in a module's heap.
export function mhaLayer(name, attn, weights, threads = 1) {
  const wptr = attn._malloc(weights.byteLength);
  attn.HEAPF32.set(weights, wptr / 4);
  const layer = attn._attn_mha_new(D, HEADS, wptr, threads);
  attn._free(wptr);
  const run = (kind, T, xq, xkv) => {
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
  };
  return { name, run, close: () => attn._attn_mha_delete(layer) };
}

// Self, causal and cross attention at each T: `sessions` holds ORT's session per kind, `layers`
// mhaLayer's of each attnviz module.
export async function compareMha({ ort, sessions, layers, Ts, rounds, log, settleMs = 0, apart = false }) {
  const runOrt = async (kind, T, xq, xkv) => {
    const t = (a) => new ort.Tensor('float32', a, [T, 1, D]);
    const feeds = kind === 'cross' ? { xq: t(xq), xkv: t(xkv) } : { x: t(xq) };
    if (kind === 'causal') {
      const mask = new Float32Array(T * T);
      for (let i = 0; i < T; ++i) for (let j = i + 1; j < T; ++j) mask[i * T + j] = -Infinity;
      feeds.mask = new ort.Tensor('float32', mask, [T, T]);
    }
    const r = await sessions[kind].run(feeds);
    return { y: r.y.data, w: r.w.data };
  };
  log(`# kind    T     ort_ms${heads(layers.map((l) => l.name), true)}  max|Δy|   max|Δw|`);
  for (const T of Ts) {
    for (const kind of ['self', 'causal', 'cross']) {
      const xq = inputs(T * D, 1 + T), xkv = inputs(T * D, 7 + T);
      const a = await runOrt(kind, T, xq, xkv);
      let dy = 0, dw = 0;
      for (const l of layers) {  // the numbers first (and the warm-up)
        const b = l.run(kind, T, xq, xkv);
        dy = Math.max(dy, maxDiff(a.y, b.y)), dw = Math.max(dw, maxDiff(a.w, b.w));
      }
      const ms = await timeAlternating([() => runOrt(kind, T, xq, xkv), ...layers.map((l) => () => l.run(kind, T, xq, xkv))], rounds, { settleMs, apart });
      // Projections 4·T·d² and two T×T×d products (causal: half), multiply-adds ×2.
      const flop = 2 * (4 * T * D * D + (kind === 'causal' ? 1 : 2) * T * T * D);
      log(`RESULT ${kind.padEnd(6)} ${String(T).padStart(5)} ${ms[0].toFixed(1).padStart(9)}${cols(ms, flop)}  ` +
          `${dy.toExponential(1)}  ${dw.toExponential(1)}`);
    }
  }
}

// attnviz's model (gpt2: V tokens, L layers × H heads) in a module: `folder` is its path in the
// module's file system (node: the disk; a page: files written to its FS). A vision model (S: its
// pictures' side, p its patches'; V its labels) runs on pixel values (3 × S × S) instead of ids.
export function modelRunner(name, attn, folder, { V, L, H, S = 0, p = 0 }, threads = 1) {
  const handle = attn.ccall('attn_model_new', 'number', ['string', 'number'], [folder, threads]);
  if (!handle) throw new Error(`attnviz could not load ${folder}`);
  const run = (input) => {
    const T = S ? 1 + (S / p) ** 2 : input.length;
    const pin = attn._malloc(4 * input.length), plog = attn._malloc(4 * V), patt = attn._malloc(4 * L * H * T * T);
    (S ? attn.HEAPF32 : attn.HEAP32).set(input, pin / 4);
    if (S) attn._attn_model_run_pixels(handle, pin, S, S, plog, patt);
    else attn._attn_model_run(handle, pin, T, plog, patt);
    const heap = attn.HEAPF32;  // after the run: the heap may have grown
    const out = { logits: heap.slice(plog / 4, plog / 4 + V), attention: heap.slice(patt / 4, patt / 4 + L * H * T * T) };
    for (const ptr of [pin, plog, patt]) attn._free(ptr);
    return out;
  };
  return { name, run, close: () => attn._attn_model_delete(handle) };
}

// A whole model at T: `session` ORT's (ids → logits at the last position, every layer's
// attention: bench/ort/export_model.py), `models` [{name, run(ids) → {logits, attention}}]. A
// vision model (S > 0: bench/ort/export_vit.py) on one picture's pixel values, 3 × S × S in
// [−1, 1): T is its tokens.
export async function compareModel({ ort, session, models, label, T, V, S = 0, rounds, log, first, settleMs = 0, apart = false }) {
  if (first) log(`# model          T     ort_ms${heads(models.map((m) => m.name), false)}  max|Δlogits|/max|logit|  max|Δattention|`);
  const input = S ? inputs(3 * S * S, 11) : Array.from({ length: T }, (_, i) => (i * 7919 + 13) % V);  // ids spread over the vocabulary
  const feed = S ? { pixel_values: new ort.Tensor('float32', input, [1, 3, S, S]) }
    : { ids: new ort.Tensor('int64', BigInt64Array.from(input.map(BigInt)), [T]) };
  const ortRun = async () => {
    const r = await session.run(feed);
    return { logits: r.logits.data, attention: r.attention.data };
  };
  const a = await ortRun();
  const top = Math.max(...Array.from(a.logits, Math.abs));
  let dl = 0, da = 0;
  for (const m of models) {
    const b = m.run(input);
    dl = Math.max(dl, maxDiff(a.logits, b.logits) / top), da = Math.max(da, maxDiff(a.attention, b.attention));
  }
  const ms = await timeAlternating([ortRun, ...models.map((m) => () => m.run(input))], rounds, { settleMs, apart });
  log(`RESULT ${label.padEnd(14)} ${String(T).padStart(4)} ${ms[0].toFixed(1).padStart(9)}${cols(ms, 0)}  ` +
      `${dl.toExponential(1).padStart(22)}  ${da.toExponential(1)}`);
}
