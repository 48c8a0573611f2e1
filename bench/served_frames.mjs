// served_frames.mjs: the page's frames while a served model's long text streams in (issue 51,
// docs/BENCHMARKS.md "A served model's long text"). Numbers only: not a test.
//   node bench/served_frames.mjs SITE_DIR [T,T,...]
// bench/serve_region.py --serve serves a Llama-shaped model (9 heads, 3 K/V heads, d_head 64, 2
// layers) and the page; the page opens a link with T words, so the server runs them, then the
// page asks for each layer's thumbnails and the shown layer's Q and K and computes its rows; then
// the other layer is chosen (its Q and K asked for). Measured inside the page: every interval
// between animation frames from the link's opening to the figure (and from the choice to the
// other layer shown), and the app's own CPU time of its frames (the frame-time overlay's numbers,
// the last 120 frames), in headless Chromium with SwiftShader; and the wasm heap at the end (it
// grows and never shrinks: the page's peak).
import { spawn } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { clickWidget, openPage, serveAndLaunch, state, waitFrames } from '../tests/browser/harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const siteDir = process.argv[2] || 'build-web/site';
const sizes = (process.argv[3] || '2048,8192').split(',').map(Number);
const proc = spawn('/usr/bin/python3', [path.join(here, 'serve_region.py'), '--serve', siteDir], { stdio: ['pipe', 'pipe', 'inherit'] });
const [port, key] = (await new Promise((resolve) => readline.createInterface({ input: proc.stdout }).once('line', resolve))).trim().split(' ');
const server = `http://127.0.0.1:${port}`;
const { browser, url, close } = await serveAndLaunch(siteDir);

// Animation-frame intervals inside the page until `done(state)`; the app's state then.
async function framesUntil(page, done, timeoutMs) {
  await page.evaluate(() => {
    window.__intervals = [];
    let last = performance.now();
    const tick = (t) => { window.__intervals.push(t - last); last = t; window.__raf = requestAnimationFrame(tick); };
    window.__raf = requestAnimationFrame(tick);
  });
  const start = Date.now();
  let s = await state(page);
  while (!done(s)) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out: ${JSON.stringify(s.served)} ${s.error}`);
    await new Promise((r) => setTimeout(r, 100));
    s = await state(page);
  }
  const intervals = await page.evaluate(() => { cancelAnimationFrame(window.__raf); return window.__intervals; });
  intervals.sort((a, b) => a - b);
  return { s, wall: Date.now() - start, frames: intervals.length, median: intervals[intervals.length >> 1], worst: intervals[intervals.length - 1],
    over50: intervals.filter((x) => x > 50).length };
}
const line = (what, r) => `| ${what} | ${(r.wall / 1000).toFixed(1)} s | ${r.frames} | ${r.median.toFixed(1)} ms | ${r.worst.toFixed(1)} ms | ${r.over50} | ${r.s.frame_time.cpu_median_ms.toFixed(1)} / ${r.s.frame_time.cpu_worst_ms.toFixed(1)} ms |`;

console.log('| T, what | wall | frames | median interval | worst interval | frames > 50 ms | app CPU per frame, median / worst (last 120) |');
console.log('|---|---:|---:|---:|---:|---:|---:|');
for (const T of sizes) {
  const text = Array.from({ length: T }, (_, i) => `w${(i * 7919) % 512}`).join(' ');
  // A link's text holds 4 096 bytes: the long one is pasted into the text box, as a reader does.
  const page = await openPage(browser, `${url}#v=1&server=${encodeURIComponent(server)}&key=${key}&text=w1%20w2&view=heatmap&fps=1`);
  await framesUntil(page, (s) => s.served && s.served.shown > 0 && !s.served.busy, 60000);
  await clickWidget(page, 'served.text');
  await waitFrames(page, 3);
  await page.keyboard.press('Control+A');
  await page.keyboard.insertText(text);
  const first = await framesUntil(page, (s) => s.served.tokens === T && s.served.shown === s.served.run && !s.served.busy, 600000);
  console.log(line(`${T}: the run, 2 layers' thumbnails, layer 1's Q and K (${first.s.served.tokens} tokens)`, first));
  await page.evaluate((h) => { location.hash = h; }, `#v=1&server=${encodeURIComponent(server)}&key=${key}&view=heatmap&fps=1&map=attention:2:1`);
  const other = await framesUntil(page, (s) => s.import && s.import.layer === 1 && !s.served.busy, 600000);
  console.log(line(`${T}: layer 2 chosen, its Q and K asked for and shown`, other));
  const heap = await page.evaluate(() => (typeof Module !== 'undefined' && Module.HEAPU8 ? Module.HEAPU8.length : 0));
  console.log(`| ${T}: the wasm heap after both layers (its peak) | ${(heap / 2 ** 20).toFixed(0)} MB | | | | | |`);
  await page.close();
}
await close();
proc.stdin.end();
