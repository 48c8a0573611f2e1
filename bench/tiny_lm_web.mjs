// tiny_lm_web.mjs: a built-in model (tiny-lm, or model=NAME) run on every keystroke in the page (headless Chromium):
// for each character typed into a text of at most T tokens, how many frames the run takes (1: the
// recompute fits the frame that saw the key) and how long that frame took: by the app's clock
// (the frame-time overlay's number: the model's run and the UI's drawing, without the GL calls
// and SwiftShader's rasterization, which a GPU does in a few ms) and, from a Chrome trace, its
// wall time and its main thread's CPU time. Numbers only, not a test.
//   node bench/tiny_lm_web.mjs build-web/site [T] [KEYS] [sync] [pace=MS] [model=NAME] [threads=N] [link=PARAMS]
// sync: the app waits for the GPU after each frame (attnviz_gpu_sync), so SwiftShader's
// rasterization of one frame no longer runs beside the next frame's work.
// pace: milliseconds between keys (150: a person typing about 7 characters a second).
// link: more of the link's parameters, as `lens=1&attribution=1` (the why views after each run).
import { isolation, openPage, startSuite, state, stopSuite, waitFrames } from '../tests/browser/harness.mjs';
import path from 'node:path';

const siteDir = path.resolve(process.argv[2] || 'build-web/site');
const targetT = +(process.argv[3] || 128), keys = +(process.argv[4] || 24), options = process.argv.slice(5);
const sync = options.includes('sync');
const pace = +(options.find((o) => o.startsWith('pace='))?.slice(5) ?? 150);
const model = options.find((o) => o.startsWith('model='))?.slice(6) ?? 'tiny-lm';
const extra = options.find((o) => o.startsWith('link='))?.slice(5) ?? '';
const settled = (s) => s.model.active && !s.model.busy && s.model.run_revision === s.model.input_revision && s.model.figure;

// threads=N: the page served cross-origin isolated, so it loads the threaded module (?threads=N),
// whose runs leave the frame loop: the key's frame no longer holds the run.
const threads = +(options.find((o) => o.startsWith('threads='))?.slice(8) ?? 0);
const { browser, url } = await startSuite(siteDir, '/tmp/attnviz-tiny-lm-web', { headers: threads ? isolation : [] });
// A text of about T tokens: English prose with some Chinese, as the model was trained on.
const sentence = 'The rain fell on the quiet town, and the children watched it from the window. 春眠不觉晓，处处闻啼鸟。 ';
// Whole sentences until the text reaches T, then cut to the share of characters that gives about
// T − 12 tokens, so that the text stays within T while the keys are typed.
const open = async (words) => {
  const p = await openPage(browser, `${url}${threads ? `?threads=${threads}` : ''}#v=1&model=${model}&view=lines${extra ? `&${extra}` : ''}&text=${encodeURIComponent(words)}`);
  let st;
  for (st = await state(p); !settled(st); st = await state(p)) await p.waitForTimeout(50);
  return [p, st];
};
let page, s, words = sentence;
for (;; words += sentence) {
  [page, s] = await open(words);
  if (s.model.figure.ids.length >= targetT) break;
  await page.context().close();
}
await page.context().close();
[page, s] = await open(words.slice(0, Math.floor(words.length * (targetT - 12) / s.model.figure.ids.length)));
const T0 = s.model.figure.ids.length;
const k = await page.evaluate(() => window.devicePixelRatio || 1);
const box = s.widgets['model.text'];
await page.mouse.click((box[0] + box[2] / 2) / k, (box[1] + box[3] / 2) / k);
await waitFrames(page, 3);
await page.keyboard.press('End');
if (sync) await page.evaluate(() => Module._attnviz_gpu_sync(1));

// Per key, typed at a person's pace (PACE ms apart; the loop reads the state only after that, as
// reading it is work on the page's main thread): the frames until the run is shown (the app
// counts them) and the worst CPU time of a frame since the key (the frame-time window's newest
// entries, the app's clock: wall time). A trace of the same frames (Chrome's FireAnimationFrame
// events, between marks the loop sets before each key) gives the frame's wall time and its thread
// time: the CPU the page's main thread itself spent, without the time the two cores spent on
// other processes (SwiftShader's rasterization, the compositor, this script).
const cdp = await page.context().newCDPSession(page);
const events = [];
cdp.on('Tracing.dataCollected', (e) => events.push(...e.value));
const traced = new Promise((resolve) => cdp.once('Tracing.tracingComplete', resolve));
await cdp.send('Tracing.start', { categories: 'devtools.timeline,blink.user_timing', transferMode: 'ReportEvents' });
const frames = [], cpu = [];
for (let i = 0; i < keys; ++i) {
  const before = await state(page);
  await page.evaluate((n) => performance.mark(`attnviz-key-${n}`), i);
  await page.keyboard.insertText('abcdefghij '[i % 11]);
  await page.waitForTimeout(pace);
  let after = await state(page);
  while (after.model.input_revision === before.model.input_revision || !settled(after)) {
    await page.waitForTimeout(20);
    after = await state(page);
  }
  const since = after.frame - before.frame, recent = after.frame_time.cpu_recent_ms;
  if (since > recent.length) throw new Error(`${since} frames since the key: more than the window`);
  frames.push(after.model.last_run_frames);
  cpu.push(Math.max(...recent.slice(recent.length - since)));
}
await page.evaluate(() => performance.mark('attnviz-key-end'));
await cdp.send('Tracing.end');
await traced;
// Per key, the run's frame: the one with the longest thread time in the 300 ms after the text
// field's input event. (ImGui takes the character in the first frame after the event, after
// that frame's model step, so the model runs in the next; the lines' lists then build over a few
// short frames, and the twin is rebuilt once typing pauses for 0.4 s.)
const markAt = (name) => events.find((e) => e.name === name)?.ts;
const fired = events.filter((e) => e.name === 'FireAnimationFrame' && e.ph === 'X');
const inputs = events.filter((e) => e.name === 'EventDispatch' && e.args?.data?.type === 'input');
const wall = [], thread = [];
for (let i = 0; i < keys; ++i) {
  const a = markAt(`attnviz-key-${i}`), b = markAt(i + 1 < keys ? `attnviz-key-${i + 1}` : 'attnviz-key-end');
  const input = inputs.find((e) => e.ts >= a && e.ts < b);
  const own = input ? fired.filter((e) => e.ts > input.ts && e.ts < Math.min(b, input.ts + 300e3)) : [];
  if (a === undefined || b === undefined || !own.length) throw new Error(`key ${i}: no traced frame after its input event`);
  const run = own.reduce((x, y) => (y.tdur > x.tdur ? y : x));
  wall.push(run.dur / 1000), thread.push(run.tdur / 1000);
}
s = await state(page);
await stopSuite();
const sorted = (a) => [...a].sort((x, y) => x - y);
const median = (a) => sorted(a)[Math.floor(a.length / 2)];
console.log(`RESULT model=${model} ${s.model.summary} kernels=${s.isa} threads=${s.threads}`);
const T1 = s.model.figure.ids.length;
console.log(`RESULT T=${T0}..${T1}${T1 > targetT ? ` (past ${targetT})` : ''} keys=${keys} pace=${pace}ms${sync ? ' gpu_sync=1' : ''}`);
console.log(`RESULT frames_per_run median=${median(frames)} max=${Math.max(...frames)} (${frames.join(' ')})`);
const stat = (a) => `median=${median(a).toFixed(1)} max=${Math.max(...a).toFixed(1)}`;
console.log(`RESULT cpu_frame_ms (the app's clock, the worst frame since the key${pace >= 400 ? ', with the twin\'s at the pause' : ''}) ${stat(cpu)}`);
const over = (a) => a.filter((x) => x > 16).length;
console.log(`RESULT traced run frame: wall_ms ${stat(wall)} (${over(wall)} over 16) thread_ms ${stat(thread)} (${over(thread)} over 16)`);
