#!/usr/bin/env node
// import_e2e.mjs: a BERT-sized import file (12 layers × 12 heads × 256², bench/make_bert_import.py)
// opened through the app's own path, timed from the file going in to the first frame of the
// model view (docs/BENCHMARKS.md, "Opening a model's attention"). Run by hand, never a test:
//   node bench/import_e2e.mjs [--file BIG.json] [--reps 3] [--native build] [--web build-web] [--out DIR]
// - native: `attnviz render BIG.json --view model --png OUT.png`, the whole process (read, the
//   import-or-scene decision, the reader, the model view's state, an EGL context, the thumbnail
//   atlas, one frame drawn off screen, the PNG written); wall time per run.
// - Chromium (headless, SwiftShader): the page opened and ready, then the file chosen in its file
//   input (#attnviz-file, what "Open model attention…" clicks). Timed in the page from the
//   input's change event to the first animation frame after which the app's state shows the
//   import in the model view (the frame that parsed it also drew it: thumbnails in one go), so
//   the end is late by at most one frame. Playwright's copy of the file into the browser comes
//   before the change event and is not counted. Each run is split at the page's hand-over of the
//   bytes (ccall attnviz_import_bytes) and at the last frame before the one that parses.
// - the steps without the GPU, natively and as wasm under node: attn_bench_open (bench/bench_open.cpp)
//   when it is built (cmake --build DIR --target attn_bench_open).
// Prints one line per run and a summary with the machine's load before and after.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openPage, startSuite, state, stopSuite } from '../tests/browser/harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');
const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
};
const out = path.resolve(option('--out', '/tmp/attnviz-import-e2e'));
const file = path.resolve(option('--file', path.join(out, 'bert.json')));
const reps = Math.max(1, Number(option('--reps', '3')));
const nativeDir = path.resolve(root, option('--native', 'build'));
const webDir = path.resolve(root, option('--web', 'build-web'));
const only = option('--only', '');  // "native" or "chromium": one side alone
fs.mkdirSync(out, { recursive: true });

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const load = () => os.loadavg().map((x) => x.toFixed(2)).join(' ');

if (!fs.existsSync(file)) {
  console.log(`writing ${file} (bench/make_bert_import.py)`);
  const made = spawnSync('/usr/bin/python3', [path.join(here, 'make_bert_import.py'), file], { stdio: 'inherit' });
  if (made.status !== 0) process.exit(1);
}
const bytes = fs.statSync(file).size;
console.log(`file ${file}: ${(bytes / 1e6).toFixed(1)} MB; ${os.cpus()[0].model}, ${os.cpus().length} CPUs; load ${load()}`);

const summary = [];

// [native] -------------------------------------------------------------------------------------
function native() {
  const exe = path.join(nativeDir, 'attnviz');
  if (!fs.existsSync(exe)) { console.log(`native: no ${exe}, skipped`); return; }
  const png = path.join(out, 'model-native.png');
  const ms = [], cpu = [];
  for (let r = 0; r < reps; ++r) {
    fs.rmSync(png, { force: true });
    // /usr/bin/time adds the CPU time (user + sys, every thread: llvmpipe draws on several),
    // steadier than wall time on a shared machine.
    const t0 = process.hrtime.bigint();
    const run = spawnSync('/usr/bin/time', ['-f', 'cpu %U %S', exe, 'render', file, '--view', 'model', '--png', png],
                          { encoding: 'utf8' });
    const t = Number(process.hrtime.bigint() - t0) / 1e6;
    const times = /cpu ([\d.]+) ([\d.]+)\s*$/.exec(run.stderr || '');
    if (run.status !== 0 || !fs.existsSync(png) || !times) {
      console.log(`native: attnviz render failed (${run.status}): ${(run.stderr || '').trim()}`);
      return;
    }
    const c = 1e3 * (Number(times[1]) + Number(times[2]));
    ms.push(t);
    cpu.push(c);
    console.log(`native   run ${r + 1}: ${t.toFixed(0)} ms, CPU ${c.toFixed(0)} ms (attnviz render --view model --png)`);
  }
  summary.push(`native   attnviz render, file → PNG of the model view: median ${median(ms).toFixed(0)} ms of ${reps}, ` +
               `CPU ${median(cpu).toFixed(0)} ms (target ≤ 1500)`);
}

function stepsWithoutGpu(label, command, commandArgs) {
  const run = spawnSync(command, [...commandArgs, file, '--reps', String(reps)], { encoding: 'utf8', env: { ...process.env, NODE_PATH: '/usr/share/nodejs' } });
  const line = (run.stdout || '').split('\n').find((l) => l.startsWith('RESULT'));
  if (run.status !== 0 || !line) { console.log(`${label}: attn_bench_open failed: ${(run.stderr || '').trim()}`); return; }
  summary.push(`${label} ${line.slice(7)}`);
}

// [chromium] -----------------------------------------------------------------------------------
async function chromium() {
  const site = path.join(webDir, 'site');
  if (!fs.existsSync(path.join(site, 'attnviz.js'))) { console.log(`chromium: no ${site}, skipped`); return; }
  const { url, browser } = await startSuite(site, path.join(out, 'chromium'));
  const ms = [];
  try {
    for (let r = 0; r < reps; ++r) {
      const page = await openPage(browser, url);
      await page.evaluate(() => {
        const t = window.importE2e = { start: 0, malloc: 0, malloced: 0, bytes: 0, copied: 0, lastFrame: 0, end: 0 };
        const malloc = Module._malloc;
        Module._malloc = function (n) {
          if (n > 1e6 && !t.malloc) t.malloc = performance.now();
          const p = malloc(n);
          if (n > 1e6 && !t.malloced) t.malloced = performance.now();
          return p;
        };
        // Where the time goes: the page hands the bytes over with ccall('attnviz_import_bytes')
        // once FileReader has them and they are in the wasm heap; the app copies them, waits two
        // frames ("parsing…"), then parses and draws in one frame.
        const ccall = Module.ccall;
        Module.ccall = function (name, ...rest) {
          if (name === 'attnviz_import_bytes') t.bytes = performance.now();
          const result = ccall.call(this, name, ...rest);
          if (name === 'attnviz_import_bytes') t.copied = performance.now();
          return result;
        };
        // Capture phase: stamped before the page's own handler starts reading the file.
        document.addEventListener('change', () => {
          t.start = performance.now();
          const poll = () => {
            const s = JSON.parse(Module.UTF8ToString(Module._attnviz_state()));
            if (s.import.active && s.view === 'model') t.end = performance.now();
            else if (s.error) t.error = s.error;
            else {
              t.lastFrame = performance.now();
              requestAnimationFrame(poll);
            }
          };
          requestAnimationFrame(poll);
        }, { capture: true, once: true });
      });
      await page.setInputFiles('#attnviz-file', file);
      await page.waitForFunction(() => window.importE2e.end > 0 || window.importE2e.error, null,
        { timeout: 180000, polling: 200 });
      const result = await page.evaluate(() => window.importE2e);
      if (result.error) { console.log(`chromium: the app says: ${result.error}`); return; }
      const s = await state(page);
      const st = s.import.stacks[0];
      const t = result.end - result.start;
      ms.push(t);
      const part = (a, b) => (result[b] - result[a]).toFixed(0);
      console.log(`chromium run ${r + 1}: ${t.toFixed(0)} ms (${st.layers} layers × ${st.heads} heads, T ${st.T_q}): ` +
                  `FileReader ${part('start', 'malloc')}, malloc ${part('malloc', 'malloced')}, into the heap ${part('malloced', 'bytes')}, ` +
                  `copied by the app ${part('bytes', 'copied')}, ` +
                  `frames until the parse ${part('copied', 'lastFrame')}, the frame that parses and draws ${part('lastFrame', 'end')}`);
      await page.screenshot({ path: path.join(out, 'model-chromium.png') });
      await page.context().close();
    }
  } finally {
    await stopSuite();
  }
  summary.push(`chromium file input → first frame of the model view: median ${median(ms).toFixed(0)} ms of ${reps} (target ≤ 4000)`);
}

try {
  if (only !== 'chromium') {
    native();
    const open = path.join(nativeDir, 'attn_bench_open');
    if (fs.existsSync(open)) stepsWithoutGpu('native   steps:', open, []);
  }
  if (only !== 'native') {
    await chromium();
    const open = path.join(webDir, 'attn_bench_open.js');
    if (fs.existsSync(open)) stepsWithoutGpu('wasm     steps:', 'node', ['--no-experimental-fetch', open]);
  }
} catch (e) {
  console.log(`failed: ${e.stack || e}`);
  process.exitCode = 1;
}
console.log('\n' + summary.join('\n') + `\nload after: ${load()}`);
process.exit(process.exitCode || 0);
