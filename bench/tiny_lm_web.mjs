// tiny_lm_web.mjs: the built-in tiny-lm run on every keystroke in the page (headless Chromium):
// for each character typed into a text of about T tokens, how many frames the run takes (1: the
// recompute fits the frame that saw the key) and the worst CPU time of building a frame from
// the key to the new figure (the frame-time overlay's number: the model's run and the UI's drawing,
// without SwiftShader's rasterization, which a GPU does in a few ms). Numbers only, not a test.
//   node bench/tiny_lm_web.mjs build-web/site [T] [KEYS] [sync]
// sync: the app waits for the GPU after each frame (attnviz_gpu_sync), so SwiftShader's
// rasterization of one frame no longer runs on the same two cores as the next frame's work:
// the CPU numbers are then the app's own, as beside a real GPU.
import { openPage, startSuite, state, stopSuite, waitFrames } from '../tests/browser/harness.mjs';
import path from 'node:path';

const siteDir = path.resolve(process.argv[2] || 'build-web/site');
const targetT = +(process.argv[3] || 128), keys = +(process.argv[4] || 24), sync = process.argv[5] === 'sync';
const settled = (s) => s.model.active && !s.model.busy && s.model.run_revision === s.model.input_revision && s.model.figure;

const { browser, url } = await startSuite(siteDir, '/tmp/attnviz-tiny-lm-web');
// A text of about T tokens: English prose with some Chinese, as the model was trained on.
const sentence = 'The rain fell on the quiet town, and the children watched it from the window. 春眠不觉晓，处处闻啼鸟。 ';
let page, s;
for (let words = sentence; ; words += sentence) {
  page = await openPage(browser, `${url}#v=1&model=tiny-lm&view=lines&text=${encodeURIComponent(words)}`);
  for (s = await state(page); !settled(s); s = await state(page)) await page.waitForTimeout(50);
  if (s.model.figure.ids.length >= targetT - 8) break;
  await page.context().close();
}
const T0 = s.model.figure.ids.length;
const k = await page.evaluate(() => window.devicePixelRatio || 1);
const box = s.widgets['model.text'];
await page.mouse.click((box[0] + box[2] / 2) / k, (box[1] + box[3] / 2) / k);
await waitFrames(page, 3);
await page.keyboard.press('End');
if (sync) await page.evaluate(() => Module._attnviz_gpu_sync(1));

// Per key: the frame counter before it, then frames until settled, and that frame's CPU time.
const frames = [], cpu = [];
for (let i = 0; i < keys; ++i) {
  const before = await state(page);
  await page.keyboard.insertText('abcdefghij '[i % 11]);
  let after = await state(page);
  while (after.model.input_revision === before.model.input_revision || !settled(after)) {
    await page.waitForTimeout(5);
    after = await state(page);
  }
  // The run's frames (the app counts them), and the worst CPU time of every frame since the key
  // (the frame-time window's newest entries): the frame that ran the model and redrew.
  const since = after.frame - before.frame, recent = after.frame_time.cpu_recent_ms;
  if (since > recent.length) throw new Error(`${since} frames since the key: more than the window`);
  frames.push(after.model.last_run_frames);
  cpu.push(Math.max(...recent.slice(recent.length - since)));
}
s = await state(page);
await stopSuite();
const sorted = (a) => [...a].sort((x, y) => x - y);
const median = (a) => sorted(a)[Math.floor(a.length / 2)];
console.log(`RESULT model=tiny-lm ${s.model.summary} kernels=${s.isa}`);
console.log(`RESULT T=${T0}..${s.model.figure.ids.length} keys=${keys}${sync ? ' gpu_sync=1' : ''}`);
console.log(`RESULT frames_per_run median=${median(frames)} max=${Math.max(...frames)} (${frames.join(' ')})`);
console.log(`RESULT cpu_frame_ms median=${median(cpu).toFixed(1)} max=${Math.max(...cpu).toFixed(1)}`);
