// model_memory_web.mjs: a big BF16 checkpoint opened in the page, in headless Chromium, through a
// real File (the folder dialog's input, as a reader chooses a folder): the wasm heap it takes
// (memory.buffer.byteLength once the first figure is shown: wasm memory never shrinks, so that is
// the peak) against the checkpoint's bytes, and the time from opening to that first figure at
// T = 64 (the model's tokenizer gives the text 64 ids). Numbers only: this is not a test.
//   node bench/model_memory_web.mjs build-web/site FOLDER|FILE.gguf [FOLDER|FILE.gguf…]
// FOLDER: from bench/shape_checkpoint.py (config.json, model.safetensors, tokenizer.json).
// FILE.gguf: one file chosen (Open a model…), as bench/gguf_llama_cpp.py writes them; its text is
// a short sentence (the file's own tokenizer gives it its ids).
//   node bench/model_memory_web.mjs build-web/site --picture PICTURE FOLDER
// A vision-language model's folder (shape_checkpoint.py smolvlm-256m): after its first figure (the
// text alone), PICTURE opened: the views through the tower and the text's run with them, timed
// (with its phases: the tower, then the language model) and the heap measured again.
import { forceSimd128, serveAndLaunch, state } from '../tests/browser/harness.mjs';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '../tests/browser/package.json'));
const { Tokenizer } = require('tokenizers');
const args = process.argv.slice(2);
const pictureAt = args.indexOf('--picture');
const picture = pictureAt >= 0 ? path.resolve(args.splice(pictureAt, 2)[1]) : null;
const [siteArg, ...folders] = args;
if (!siteArg || !folders.length) { console.error('usage: node bench/model_memory_web.mjs SITE_DIR FOLDER [FOLDER…]'); process.exit(2); }
const siteDir = path.resolve(siteArg);

// Words of a plain sentence, as many as give `T` ids with the tokenizer's special tokens.
async function textOf(folder, T) {
  const tok = Tokenizer.fromFile(path.join(folder, 'tokenizer.json'));
  const words = ('The quick brown fox jumps over the lazy dog while the rain falls on the quiet town, and the children ' +
    'watch from the window as the clouds move slowly across the grey sky above the old stone bridge by the river. ').repeat(4).split(' ');
  for (let n = 1; n <= words.length; ++n) {
    const text = words.slice(0, n).join(' ');
    const ids = (await tok.encode(text, null, { addSpecialTokens: true })).getIds();
    if (ids.length === T) return text;
    if (ids.length > T) break;
  }
  throw new Error(`no prefix of the sentence has ${T} ids`);
}

const { url, browser, close } = await serveAndLaunch(siteDir);
for (const folder of folders.map((f) => path.resolve(f))) {
  const gguf = folder.endsWith('.gguf');
  const checkpoint = fs.statSync(gguf ? folder : path.join(folder, 'model.safetensors')).size;
  const text = gguf ? 'The quick brown fox jumps over the lazy dog.' : await textOf(folder, 64);
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  if (forceSimd128) await context.addInitScript(forceSimd128);
  const page = await context.newPage();
  await page.goto(`${url}#v=1&view=lines&text=${encodeURIComponent(text)}`);
  await page.waitForFunction(() => window.attnvizReady === true, null, { timeout: 90000 });
  const heap = () => page.evaluate(() => Module.HEAPU8.buffer.byteLength);
  const before = await heap();
  const t0 = Date.now();
  await page.setInputFiles(gguf ? '#attnviz-file' : '#attnviz-folder', folder);
  const phases = {};
  let s;
  // loading: the weights (ModelLoad's progress 0 … 0.9), then the head probe's run (0.9 … 1)
  const phaseOf = (m) => m.reading ? 'reading' : m.loading !== null ? (m.loading < 0.9 ? 'weights' : 'probe') :
    m.running !== null ? 'running' : m.figure ? 'done' : 'waiting';
  for (;;) {
    s = await state(page);
    const phase = phaseOf(s.model);
    if (!phases[phase]) phases[phase] = (Date.now() - t0) / 1000;
    if ((phase === 'done' && !s.model.busy) || s.error) break;
    if (Date.now() - t0 > 900000) throw new Error(`timed out: ${JSON.stringify(s.model).slice(0, 300)}`);
    await page.waitForTimeout(50);
  }
  const seconds = (Date.now() - t0) / 1000;
  const after = await heap();
  const name = path.basename(folder, '.gguf');
  if (s.error || !s.model.figure) {
    console.log(`RESULT ${name} error=${s.error}`);
  } else {
    console.log(`RESULT ${name} T=${s.model.figure.ids.length} ${s.model.summary} kernels=${s.isa}`);
    console.log(`RESULT ${name} checkpoint_bytes=${checkpoint} heap_before=${before} heap_after=${after} ` +
                `ratio=${(after / checkpoint).toFixed(3)} (after − before: ${((after - before) / checkpoint).toFixed(3)}) ` +
                `windows=${s.model.windows} first_figure_s=${seconds.toFixed(2)}`);
    console.log(`RESULT ${name} phases_s ${Object.entries(phases).map(([k, v]) => `${k}=${v.toFixed(2)}`).join(' ')}`);
    // the map shown, as a sanity check of the numbers (rows sum to 1, none NaN)
    const rows = s.import.shown || [];
    const sums = rows.map((r) => r.reduce((a, b) => a + b, 0));
    console.log(`RESULT ${name} map ${s.import.layer + 1}:${s.import.head + 1} rows=${rows.length} ` +
                `nan=${rows.flat().filter((x) => !Number.isFinite(x)).length} ` +
                `row_sums=${Math.min(...sums).toFixed(6)}…${Math.max(...sums).toFixed(6)}`);
    // what the reader sees then (after the numbers: the frames it waits for are not timed)
    await page.waitForTimeout(1500);
    await page.screenshot({ path: `/tmp/${name}-lines.png` });
    if (picture) {  // the picture with the same text: its views through the tower, then the text
      const t1 = Date.now();
      await page.setInputFiles('#attnviz-file', picture);
      let towerDone = null, p;
      for (;;) {
        p = await state(page);
        if (towerDone === null && p.model.running !== null && p.model.running >= 0.5) towerDone = (Date.now() - t1) / 1000;
        if ((p.model.picture && !p.model.busy && p.model.figure && p.model.figure.ids.length > s.model.figure.ids.length) || p.error) break;
        if (Date.now() - t1 > 900000) throw new Error('timed out on the picture');
        await page.waitForTimeout(50);
      }
      const total = (Date.now() - t1) / 1000, heapPicture = await heap();
      console.log(`RESULT ${name} picture ${path.basename(picture)} error=${p.error || '-'} T=${p.model.figure.ids.length} ` +
                  `seconds=${total.toFixed(2)} (the tower ≈ ${towerDone === null ? '?' : towerDone.toFixed(2)}) heap=${heapPicture} ` +
                  `heap − checkpoint = ${((heapPicture - checkpoint) / 2 ** 20).toFixed(0)} MiB`);
      await page.waitForTimeout(1500);
      await page.screenshot({ path: `/tmp/${name}-picture.png` });
    }
  }
  await context.close();
}
await close();
