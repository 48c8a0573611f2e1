// frame_time.mjs: steady-state frame time of the web build in headless Chromium (SwiftShader
// WebGL2, as the browser tests run), for T = 256, 1024 and 4096 tokens (d_model 512, 8 heads,
// seeded weights, embeddings generated from the tokens) in the lines, heatmap and steps views.
//   node bench/frame_time.mjs build-web/site [OUT_DIR] [T,T,...] [VIEW,VIEW,...]
// Each scene is loaded through the page's message handler (attnviz:set-scene, the same code a
// parent page's postMessage reaches), the view set with attnviz:set-view; then the bench waits
// for the on-demand work to finish (the lines view's top-k lists: lines_ready = 1; the heatmap's map) and
// measures three things:
// - idle: kFrames frames with the pointer still, read from the app's own frame times
//   (web/ui/frame_overlay.cpp, the numbers of the fps=1 overlay, in the state JSON): the median and
//   worst interval between frames (what a reader sees; ≥ 16.7 ms at 60 Hz), the CPU time of
//   building a frame, and how many frames were drawn (an unchanged frame is not: web/ui/app.cpp);
// - moving: the pointer moves every animation frame across what the view answers to (events
//   sent from inside the page), so every frame hovers something new: the interval then;
// - where the time goes: the ImGui draw lists' size (vertices, indices, line instances) and the
//   GPU's time, kGpuFrames frames with attnviz_gpu_sync on (each frame drawn and waited for:
//   the rasterization the interval otherwise hides; median).
// A view that fails (an error line, a crashed page, a timeout) is reported as skipped. Numbers
// never fail anything: this is not a test. Screenshots of each figure go to OUT_DIR.
import { openPage, serveAndLaunch, state } from '../tests/browser/harness.mjs';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const siteDir = process.argv[2] || 'build-web/site';
const outDir = process.argv[3] || '/tmp/attnviz-frame-time';
const sizes = (process.argv[4] || '256,1024,4096').split(',').map(Number);
const views = (process.argv[5] || 'lines,heatmap,steps').split(',');
const kFrames = 130;  // > the overlay's window of 120 frames, so it holds steady frames only
const kGpuFrames = 20;
const kMoveFrames = 24;

// The pointer moves every animation frame across what the view answers to (the query column,
// the map, the weights matrix): each frame hovers something new, as a reader exploring does.
// Events go from inside the page, a frame apart; returns the median and worst interval between
// those frames and how many the app drew.
async function moving(page, view, s) {
  let path;
  if (view === 'lines') {
    const a = s.query_rects[0], b = s.query_rects[s.query_rects.length - 1];
    path = [[a[0] + a[2] / 2, a[1] + a[3] / 2], [b[0] + b[2] / 2, b[1] + b[3] / 2]];
  } else {
    // Steps: the visible part of the first matrix on screen (the pipeline scrolls).
    const f = s.figure;
    const clip = (r) => {
      const x0 = Math.max(r[0], f[0]), y0 = Math.max(r[1], f[1]);
      const x1 = Math.min(r[0] + r[2], f[0] + f[2]), y1 = Math.min(r[1] + r[3], f[1] + f[3]);
      return x1 - x0 > 20 && y1 - y0 > 20 ? [x0, y0, x1 - x0, y1 - y0] : null;
    };
    const r = view === 'heatmap' ? s.grid : Object.values(s.steps || {}).map(clip).find((x) => x);
    if (!r) throw new Error(`nothing to move over: figure ${JSON.stringify(f)}, steps ${JSON.stringify(s.steps)}`);
    path = [[r[0] + r[2] * 0.05, r[1] + r[3] * 0.05], [r[0] + r[2] * 0.95, r[1] + r[3] * 0.95]];
  }
  const drawn0 = s.frame_time.drawn_total;
  const out = await page.evaluate(async ([p, n]) => {
    const canvas = document.querySelector('canvas');
    const frame = () => new Promise((resolve) => requestAnimationFrame(() => resolve(performance.now())));
    const times = [];
    for (let i = 0; i <= n; ++i) {
      const t = i / n, x = p[0][0] + (p[1][0] - p[0][0]) * t, y = p[0][1] + (p[1][1] - p[0][1]) * t;
      canvas.dispatchEvent(new MouseEvent('mousemove', { clientX: x, clientY: y, bubbles: true }));
      times.push(await frame());
    }
    const d = times.slice(1).map((v, i) => v - times[i]).sort((a, b) => a - b);
    return { median: d[Math.floor(d.length / 2)], worst: d[d.length - 1] };
  }, [path, kMoveFrames]);
  const after = await state(page);
  return { ...out, drawn: after.frame_time.drawn_total - drawn0 };
}

const words = ('the model reads every token of the sentence and each head of attention decides ' +
  'which earlier words matter most for the next one while the values carry what is passed on').split(' ');
function sceneOf(T) {
  const tokens = Array.from({ length: T }, (_, i) => words[i % words.length]);
  return { name: `bench T=${T}`, tokens, d_model: 512, heads: 8, weights: { seed: 1 }, positional: 'sinusoidal' };
}

async function send(page, message) {
  return page.evaluate((m) => {
    const reply = Module.ccall('attnviz_message', 'string', ['string'], [JSON.stringify(m)]);
    return reply ? JSON.parse(reply) : null;
  }, message);
}

async function untilState(page, pred, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  let s;
  while (Date.now() < deadline) {
    s = await state(page);
    if (pred(s)) return s;
    await page.waitForTimeout(200);
  }
  throw new Error(`timed out after ${timeoutMs / 1000} s (lines_ready ${s && s.lines_ready}, error "${s && s.error}")`);
}

fs.mkdirSync(outDir, { recursive: true });
const { url, browser, close } = await serveAndLaunch(siteDir);

const rows = [];
let page = null;
const pageErrors = [];
async function freshPage() {
  if (page) await page.context().close().catch(() => {});
  page = await openPage(browser, url);
  page.on('pageerror', (e) => pageErrors.push(String(e.message || e)));
  page.on('crash', () => pageErrors.push('the page crashed'));
  await page.mouse.move(5, 795);  // bottom left, over the controls: no token hovered
}

for (const T of sizes) {
  await freshPage();
  const t0 = Date.now();
  const loaded = await send(page, { type: 'attnviz:set-scene', scene: sceneOf(T) });
  if (!loaded || loaded.type !== 'attnviz:ok') throw new Error(`T=${T}: set-scene: ${JSON.stringify(loaded)}`);
  const computeS = (Date.now() - t0) / 1000;
  for (const view of views) {
    const row = { T, view, compute_s: computeS };
    try {
      pageErrors.length = 0;
      const set = await send(page, { type: 'attnviz:set-view', view });
      if (!set || set.type !== 'attnviz:ok') throw new Error(`set-view: ${JSON.stringify(set)}`);
      const t1 = Date.now();
      await untilState(page, (s) => s.view === view && (view !== 'lines' || s.lines_ready >= 1) && (view !== 'heatmap' || s.heatmap.progress === 1) && s.queries.length === T, 300000);
      row.ready_s = (Date.now() - t1) / 1000;
      const start = (await state(page)).frame;  // frames are slow in software WebGL: wait for them, not for a clock
      await untilState(page, (x) => x.frame >= start + kFrames, 900000);
      const s = await state(page);
      if (s.error) throw new Error(`error line: ${s.error}`);
      if (pageErrors.length) throw new Error(pageErrors.join('; '));
      Object.assign(row, s.frame_time, { lines: view === 'lines' ? s.lines_drawn : '' });
      await page.screenshot({ path: path.join(outDir, `frame-${T}-${view}.png`) });
      const mv = await moving(page, view, s);
      row.move_median_ms = mv.median, row.move_worst_ms = mv.worst, row.move_drawn = mv.drawn;
      await page.mouse.move(5, 795);
      const hasGpu = await page.evaluate(() => typeof Module._attnviz_gpu_sync === 'function');
      if (hasGpu) {
        await page.evaluate(() => Module._attnviz_gpu_sync(1));
        const g0 = (await state(page)).frame;
        const g = await untilState(page, (x) => x.frame >= g0 + kGpuFrames + 1, 900000);
        await page.evaluate(() => Module._attnviz_gpu_sync(0));
        row.gpu_ms = g.frame_time.gpu_median_ms;
      }
    } catch (e) {
      row.skipped = String(e.message || e).split('\n')[0].slice(0, 160);
      await freshPage().catch(() => {});  // a crashed page can take no more views
      if (view !== views[views.length - 1]) {
        const again = await send(page, { type: 'attnviz:set-scene', scene: sceneOf(T) }).catch((x) => ({ error: String(x) }));
        if (!again || again.type !== 'attnviz:ok') row.skipped += ` (reloading failed: ${JSON.stringify(again)})`;
      }
    }
    rows.push(row);
    const r = row;
    console.log(r.skipped ? `T=${T} ${view}: skipped: ${r.skipped}`
      : `T=${T} ${view}: ${r.median_ms.toFixed(1)} ms median, ${r.worst_ms.toFixed(1)} worst, CPU ${r.cpu_median_ms.toFixed(1)} ms, ` +
        `GPU ${r.gpu_ms === undefined ? '?' : r.gpu_ms.toFixed(1)} ms, ${r.vertices ?? '?'} vertices ${r.indices ?? '?'} indices ` +
        `(ready after ${r.ready_s.toFixed(1)} s); moving: ${r.move_median_ms.toFixed(1)} ms median, ${r.move_worst_ms.toFixed(1)} worst, ` +
        `${r.move_drawn} of ${kMoveFrames} drawn; idle: ${r.drawn ?? '?'} of 120 drawn`);
  }
}
const version = browser.version();
await close();

const cpu = os.cpus()[0];
console.log(`\nFrame time, headless Chromium ${version} (SwiftShader WebGL2), 1280×800 at 1×; ${cpu ? cpu.model : '?'}, ${os.cpus().length} cores`);
console.log(`scene: d_model 512, 8 heads, seeded weights, sinusoidal positions; medians and worst of the last 120 frames once the view's work is done`);
console.log(`load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')} (1, 5, 15 min) at the end`);
console.log('| T | view | idle: frame ms (median) | idle: worst ms | idle: frames drawn | moving: frame ms (median / worst) | CPU ms a frame (median / worst) | GPU ms a drawn frame (synced) | ImGui vertices / indices | lines drawn | ready after |');
console.log('|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const r of rows) {
  if (r.skipped) { console.log(`| ${r.T} | ${r.view} | skipped: ${r.skipped.replace(/\|/g, '/')} | | | | | | | | |`); continue; }
  console.log(`| ${r.T} | ${r.view} | ${r.median_ms.toFixed(1)} | ${r.worst_ms.toFixed(1)} | ${r.drawn ?? ''} of 120 | ` +
              `${r.move_median_ms.toFixed(0)} / ${r.move_worst_ms.toFixed(0)} (${r.move_drawn} of ${kMoveFrames} drawn) | ` +
              `${r.cpu_median_ms.toFixed(1)} / ${r.cpu_worst_ms.toFixed(1)} | ${r.gpu_ms === undefined ? '' : r.gpu_ms.toFixed(1)} | ` +
              `${r.vertices ?? ''} / ${r.indices ?? ''} | ${r.lines} | ${r.ready_s.toFixed(1)} s |`);
}
console.log(`screenshots in ${outDir}`);
