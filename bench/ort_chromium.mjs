// ort_chromium.mjs: bench/ort_web.mjs's attention rows in a headless Chromium page, where a
// reader's browser runs them: ONNX Runtime Web (its wasm build, one thread) and attnviz's two
// modules (SIMD128 and relaxed SIMD, built for the web as ES modules) on the same inputs in the
// same page, alternating (bench/ort_compare.mjs). Numbers only: this is not a test.
//   /usr/bin/python3 bench/ort/export_mha.py /tmp/attnviz-ort
//   (cd bench/ort && npm install)                       # onnxruntime-web 1.30.0
//   cmake --build build-web --target attn_mha_web attn_mha_web_relaxed
//   node bench/ort_chromium.mjs [/tmp/attnviz-ort] [ROUNDS] [T,… ("": none)] [FOLDER:T:ONNX …]
// Whole models (gpt2), as bench/ort_web.mjs takes them: the folder's files are served, fetched
// by the page and written into each attnviz module's file system, which loads them as the app does.
// A ViT folder (bench/ort/export_vit.py) runs on a picture's pixel values (its T is ignored).
// THREADS=N (N ≥ 2): the page served cross-origin isolated (COOP + COEP), ORT on numThreads = N,
// and attnviz's threaded relaxed module (cmake --build build-web/threads --target
// attn_mha_web_relaxed: the page's build makes build-web/threads/) on N threads, instead.
// SETTLE_MS=M: a pause of M ms before each timed run (each runtime's threads asleep when it starts).
// On threads each runtime is timed on its own, one after the other (ort_compare.mjs: apart).
import { isolation, serveAndLaunch } from '../tests/browser/harness.mjs';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const threads = Math.max(1, Number(process.env.THREADS || 1));
const settleMs = Math.max(0, Number(process.env.SETTLE_MS || 0));
const dir = path.resolve(process.argv[2] || '/tmp/attnviz-ort');
const rounds = +(process.argv[3] || 5);
const Ts = (process.argv[4] ?? '128,512,2048').split(',').filter(Boolean).map(Number);
const models = process.argv.slice(5).map((a, i) => {
  const [folder, T, onnx] = a.split(':');
  const config = JSON.parse(fs.readFileSync(path.join(folder, 'config.json')));
  const S = config.model_type === 'vit' ? config.image_size : 0, p = config.patch_size;  // a vision model: T is its tokens
  return { dir: `m${i}`, folder: path.resolve(folder), label: path.basename(path.resolve(folder)), T: S ? 1 + (S / p) ** 2 : +T, onnx,
           files: fs.readdirSync(folder).filter((f) => fs.statSync(path.join(folder, f)).isFile()),
           shape: { V: S ? Object.keys(config.id2label).length : config.vocab_size, L: config.n_layer ?? config.num_hidden_layers,
                    H: config.n_head ?? config.num_attention_heads, S, p } };
});

// A served folder: ORT's wasm build, attnviz's web modules, the comparison, the ONNX files.
const root = '/tmp/attnviz-ort-page';
fs.rmSync(root, { recursive: true, force: true });
fs.mkdirSync(root);
const dist = path.join(here, 'ort/node_modules/onnxruntime-web/dist');
const files = [[dist, 'ort.wasm.min.mjs'], [dist, 'ort-wasm-simd-threaded.mjs'], [dist, 'ort-wasm-simd-threaded.wasm'],
               [here, 'ort_compare.mjs']];
if (Ts.length) files.push([dir, 'weights.bin'], [dir, 'self.onnx'], [dir, 'causal.onnx'], [dir, 'cross.onnx']);  // the layers' rows
if (threads === 1)
  for (const name of ['attn_mha_web', 'attn_mha_web_relaxed']) files.push([path.resolve(here, '../build-web'), `${name}.mjs`],
                                                                        [path.resolve(here, '../build-web'), `${name}.wasm`]);
else for (const ext of ['mjs', 'wasm', 'worker.js']) files.push([path.resolve(here, '../build-web/threads'), `attn_mha_web_relaxed.${ext}`]);
for (const m of models) files.push([path.dirname(m.onnx), path.basename(m.onnx)]);
for (const [from, name] of files) {
  if (!fs.existsSync(path.join(from, name))) { console.error(`${path.join(from, name)} is missing (see the header)`); process.exit(2); }
  fs.symlinkSync(path.join(from, name), path.join(root, name));
}
for (const m of models) fs.symlinkSync(m.folder, path.join(root, m.dir));
fs.writeFileSync(path.join(root, 'index.html'), `<!doctype html><meta charset="utf-8"><title>attnviz vs ORT</title>
<script type="module">
import * as ort from './ort.wasm.min.mjs';
import { compareMha, compareModel, mhaLayer, modelRunner, relaxedProbe } from './ort_compare.mjs';
const log = (line) => console.log(line);
const settleMs = ${settleMs}, apart = ${threads > 1};  // (ort_compare.mjs: threads, each runtime timed on its own)
try {
  ort.env.wasm.numThreads = ${threads};
  ort.env.wasm.wasmPaths = new URL('./', location.href).href;
  const builds = ${threads} > 1 ? [['relaxed-threads', 'attn_mha_web_relaxed']] : [['simd128', 'attn_mha_web']];
  if (${threads} === 1 && WebAssembly.validate(relaxedProbe)) builds.push(['relaxed', 'attn_mha_web_relaxed']);
  const attns = [];
  for (const [name, file] of builds) attns.push({ name, attn: await (await import('./' + file + '.mjs')).default() });
  log('# ' + navigator.userAgent.match(/Chrome\\/[0-9.]+/)[0] + '; onnxruntime-web ' + ort.env.versions.web + ', wasm, ${threads} thread(s); attnviz ${threads} thread(s)');
  log('# attnviz modules: ' + builds.map(([n, f]) => n + ' (' + f + ')').join(', ') + '; ratio = attnviz / ORT');
  const Ts = ${JSON.stringify(Ts)}, models = ${JSON.stringify(models.map(({ folder, ...m }) => ({ ...m, onnx: path.basename(m.onnx) })))};
  if (Ts.length) {
    const weights = new Float32Array(await (await fetch('weights.bin')).arrayBuffer());
    const layers = attns.map(({ name, attn }) => mhaLayer(name, attn, weights, ${threads}));
    const sessions = {};
    for (const kind of ['self', 'causal', 'cross'])
      sessions[kind] = await ort.InferenceSession.create(kind + '.onnx', { executionProviders: ['wasm'] });
    await compareMha({ ort, sessions, layers, Ts, rounds: ${rounds}, log, settleMs, apart });
    for (const l of layers) l.close();
  }
  for (const [i, m] of models.entries()) {
    const session = await ort.InferenceSession.create(m.onnx, { executionProviders: ['wasm'] });
    const runs = [];
    for (const { name, attn } of attns) {
      attn.FS.mkdir('/' + m.dir);
      for (const f of m.files) attn.FS.writeFile('/' + m.dir + '/' + f, new Uint8Array(await (await fetch(m.dir + '/' + f)).arrayBuffer()));
      runs.push(modelRunner(name, attn, '/' + m.dir, m.shape, ${threads}));
      for (const f of m.files) attn.FS.unlink('/' + m.dir + '/' + f);  // loaded: the weights are the module's own now
    }
    await compareModel({ ort, session, models: runs, label: m.label, T: m.T, V: m.shape.V, S: m.shape.S, rounds: ${rounds}, log, first: i === 0, settleMs, apart });
    for (const r of runs) r.close();
  }
} catch (e) { log('ERROR ' + (e.stack || e)); }
window.benchDone = true;
</script>`);

const { url, browser, close } = await serveAndLaunch(root, threads > 1 ? isolation : []);
console.log(`# machine: ${os.cpus()[0].model}, ${os.cpus().length} cores; headless Chromium ${browser.version()}`);
const page = await browser.newPage();
let failed = false;
page.on('console', (m) => { console.log(m.text()); failed ||= m.text().startsWith('ERROR'); });
page.on('pageerror', (e) => { console.log(`ERROR ${e.message}`); failed = true; });
await page.goto(url);
await page.waitForFunction(() => window.benchDone === true, null, { timeout: 1800000, polling: 1000 });
await close();
process.exit(failed ? 1 : 0);
