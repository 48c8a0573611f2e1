#!/usr/bin/env node
// threads.mjs: the threaded module (attnviz-threads.js/.wasm: relaxed SIMD, Web Workers on shared
// memory). A page served with COOP and COEP (cross-origin isolated, as scripts/run.sh serves it)
// loads it and runs a live model on ?threads=N threads, the run off the frame loop; the same page
// served without those headers loads the one-thread relaxed module. Both give the same numbers:
// tiny-lm on a text of about 90 tokens, whose feed-forward products and heads are big enough to
// be split among the threads (kernels::kSplitWork).
//   node tests/browser/threads.mjs SITE_DIR ARTIFACT_DIR
import {
  check, clickWidget, cssScale, expect, finishSuite, isolation, openPage, requests, serveAndLaunch, shot, startSuiteOrEnd, state, until,
  waitFrames,
} from './harness.mjs';

const [siteDir, artifacts] = process.argv.slice(2);
if (!siteDir || !artifacts) {
  console.error('usage: node tests/browser/threads.mjs SITE_DIR ARTIFACT_DIR');
  process.exit(2);
}
const settled = (s) => s.model.active && !s.model.busy && s.model.run_revision === s.model.input_revision && s.model.figure;
const text = 'The cat sat on the mat. '.repeat(12).trim();
const hash = `#v=1&model=tiny-lm&view=steps&fps=1&text=${encodeURIComponent(text)}`;

const { browser, url } = await startSuiteOrEnd('browser-threads', siteDir, artifacts, { headers: isolation });
const plain = await serveAndLaunch(siteDir);

let threaded;
await check('served cross-origin isolated, the page loads the threaded module and runs tiny-lm on 2 threads', async () => {
  const page = await openPage(browser, `${url}?threads=2${hash}`);
  expect(await page.evaluate(() => self.crossOriginIsolated), 'the page is not cross-origin isolated');
  const s = await until(page, settled, 'tiny-lm loaded and run', 90000);
  const fetched = requests.map(([, u]) => u.split('/').pop());
  expect(fetched.includes('attnviz-threads.wasm') && fetched.includes('attnviz-threads.worker.js'), `fetched ${fetched.join(', ')}`);
  expect(s.isa === 'wasm-relaxed-simd' && s.threads === 2, `kernels ${s.isa}, ${s.threads} threads`);
  expect(s.model.figure.ids.length > 80, `${s.model.figure.ids.length} tokens`);
  await shot(page, 'threads-01-steps.png');
  threaded = s;
  // Typing on: the newest text's run, again off the frame loop.
  await clickWidget(page, 'model.text');
  await waitFrames(page, 3);
  await page.keyboard.press('Control+A');
  await page.keyboard.insertText('The dog');
  const again = await until(page, (x) => settled(x) && x.model.text === 'The dog', 'the new text run', 30000);
  await page.context().close();
  return `${s.isa} · ${s.threads} threads; ${s.model.figure.ids.length} tokens, then "${again.model.text}" (${again.model.figure.ids.length})`;
});

await check('the panel\'s Threads setting moves a page asked for 1 thread to 2, with the same numbers', async () => {
  const page = await openPage(browser, `${url}?threads=1${hash}`);
  let s = await until(page, settled, 'tiny-lm loaded and run', 90000);
  expect(s.threads === 1 && s.most_threads === 2, `${s.threads} threads, at most ${s.most_threads} (this machine: 2 cores)`);
  // The + at the setting's right end: 2 threads, and the model runs again on them.
  s = await state(page);
  const [x, y, w, h] = s.widgets['model.threads'];
  const k = await cssScale(page);
  await page.mouse.move((x + w - 3) / k, (y + h / 2) / k);
  await page.mouse.down();
  await waitFrames(page, 3);
  await page.mouse.up();
  const revision = s.model.input_revision;
  s = await until(page, (x) => x.threads === 2 && settled(x) && x.model.run_revision > revision, 'the setting at 2 threads, run again', 30000);
  await shot(page, 'threads-02-setting.png');
  // The next run (a space typed and taken back: the same text) uses 2 threads: the same numbers.
  const before = s.model.input_revision;
  await clickWidget(page, 'model.text');
  await page.keyboard.press('End');
  await page.keyboard.insertText(' ');
  await waitFrames(page, 2);
  await page.keyboard.press('Backspace');
  s = await until(page, (x) => settled(x) && x.model.text === text && x.model.run_revision >= before + 2, 'the run on 2 threads', 30000);
  expect(JSON.stringify(s.model.figure.q) === JSON.stringify(threaded.model.figure.q), 'another Q');
  expect(JSON.stringify(s.model.figure.top) === JSON.stringify(threaded.model.figure.top), 'other next tokens');
  await page.context().close();
  return `1 → ${s.threads} threads by the setting; the run took ${s.model.last_run_ms.toFixed(0)} ms, the same Q`;
});

await check('served without those headers, the one-thread relaxed module gives the same numbers', async () => {
  const page = await openPage(plain.browser, `${plain.url}?threads=2${hash}`);
  const s = await until(page, settled, 'tiny-lm loaded and run', 90000);
  expect(s.isa === 'wasm-relaxed-simd' && s.threads === 1, `kernels ${s.isa}, ${s.threads} threads`);
  expect(JSON.stringify(s.model.figure.ids) === JSON.stringify(threaded.model.figure.ids), 'other ids');
  expect(JSON.stringify(s.model.figure.top) === JSON.stringify(threaded.model.figure.top), 'other next tokens');
  expect(s.model.figure.q && JSON.stringify(s.model.figure.q) === JSON.stringify(threaded.model.figure.q), 'another Q');
  await page.context().close();
  return `next "${s.model.figure.top[0].token}" p = ${s.model.figure.top[0].p.toFixed(4)} in both`;
});

await plain.close();
await finishSuite('browser-threads');
