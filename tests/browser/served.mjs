#!/usr/bin/env node
// served.mjs: the page as the front end of a model PyTorch runs (issue 51; attnviz.serve(),
// web/state/served_state.hpp), against tests/serve/serve_model.py (a Llama-shaped model in plain
// torch, its attention through attnviz's function). Checked: a link's server= and key= connect
// the page (served under a strict CSP whose connect-src names the server) and its maps equal
// `attnviz run --ids` on the same checkpoint (1e-5); an edited text runs there again; two pages at
// once; a wrong key is said and nothing shown; the server stopped and started again on its port
// with its key: the page asks again and shows the next text; the page attnviz.serve() itself
// serves at its address (server=.), the plain SIMD build.
//   node tests/browser/served.mjs SITE_DIR ARTIFACT_DIR MODEL_REFS ATTNVIZ
import { execFileSync, spawn } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import {
  check, clickWidget, expect, finishSuite, freePort, maxDiff, moveAway, openPage, shot, startSuiteOrEnd, state, until,
} from './harness.mjs';

const [siteDir, artifacts, refs, attnviz] = process.argv.slice(2);
if (!siteDir || !artifacts || !refs || !attnviz) {
  console.error('usage: node tests/browser/served.mjs SITE_DIR ARTIFACT_DIR MODEL_REFS ATTNVIZ');
  process.exit(2);
}
const here = path.dirname(fileURLToPath(import.meta.url));
const folder = path.join(refs, 'llama_l2_h4kv2_d32_f32');

// The server: [port, key, process]; the same port and key when given (a restart).
async function startServer(port, key) {
  const args = [path.resolve(here, '../serve/serve_model.py'), folder, '--port', String(port), '--site', siteDir];
  if (key) args.push('--key', key);
  const proc = spawn('/usr/bin/python3', args, { stdio: ['pipe', 'pipe', 'inherit'] });
  const line = await new Promise((resolve) => readline.createInterface({ input: proc.stdout }).once('line', resolve));
  const [p, k] = line.trim().split(' ');
  return { port: Number(p), key: k, proc, address: `http://127.0.0.1:${p}` };
}
function stopServer(server) {
  server.proc.stdin.end();
  return new Promise((resolve) => server.proc.once('exit', resolve));
}
const reference = (ids) => JSON.parse(execFileSync(attnviz, ['run', folder, '--ids', ids.join(','), '--json'], { encoding: 'utf8' }));
// The maps shown are the server's run: the page's state has its tokens, the server's its ids.
async function serverIds(server, text) {
  const r = await fetch(`${server.address}/api/run`, { method: 'POST', headers: { 'X-Attnviz-Token': server.key }, body: JSON.stringify({ text }) });
  return (await r.json()).ids;
}

let server = await startServer(await freePort());
const csp = `Content-Security-Policy: default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; connect-src 'self' ${server.address}`;
const { browser, url } = await startSuiteOrEnd('browser-served', siteDir, artifacts, { headers: [csp] });
// The figure shows the run of `text` (not the last figure kept while a server was lost).
const shownRun = (s, text) => s.served && s.served.text === text && !s.served.busy && !s.served.lost && s.import && s.import.shown &&
  s.served.run > 0 && s.served.shown === s.served.run && s.import.stacks[0].T_q === s.served.tokens;
const link = (key, text, extra = '') => `#v=1&server=${encodeURIComponent(server.address)}&key=${key}&text=${encodeURIComponent(text)}&view=heatmap&map=attention:2:3${extra}`;

const text1 = 'The cat sat on the mat.';
const page = await openPage(browser, url + link(server.key, text1));
await check('a link\'s server= and key= connect the page; its map is attnviz run\'s on the same checkpoint', async () => {
  const s = await until(page, (x) => shownRun(x, text1), 'the served figure', 60000);
  expect(s.served.model === 'llama_l2_h4kv2_d32_f32' && s.served.error === '', `served ${JSON.stringify(s.served)}`);
  const ref = reference(await serverIds(server, text1));
  const d = maxDiff(s.import.shown, ref.attention[1][2]);
  expect(d < 1e-5, `layer 2, head 3 differs from attnviz run by ${d}`);
  expect(s.served.top.length === 10 && Math.abs(s.served.top[0].p - ref.top[0].p) < 1e-5, `next token ${JSON.stringify(s.served.top[0])} vs ${JSON.stringify(ref.top[0])}`);
  expect(/[#&]server=/.test(s.link) && /[#&]key=/.test(s.link), `link ${s.link}`);
  await moveAway(page);
  await shot(page, 'served-01-heatmap.png');
  return `${s.served.tokens} tokens, ${d.toExponential(1)} from attnviz run; next "${s.served.top[0].token}" ${s.served.top[0].p.toFixed(3)}`;
});

const text2 = 'A dog and a cat sat on the mat, and the dog slept.';
await check('an edited text runs on the server again; the map chosen stays', async () => {
  await page.evaluate((h) => { location.hash = h; }, link(server.key, text2));
  const s = await until(page, (x) => shownRun(x, text2), 'the second run', 60000);
  expect(s.import.layer === 1 && s.import.head === 2, `map ${s.import.layer}:${s.import.head}`);
  const ref = reference(await serverIds(server, text2));
  const d = maxDiff(s.import.shown, ref.attention[1][2]);
  expect(d < 1e-5, `differs by ${d}`);
  return `run ${s.served.run}, ${s.served.tokens} tokens, ${d.toExponential(1)}`;
});

await check('a short text\'s Steps and Q–K space: the shown layer\'s Q and K come after its maps', async () => {
  await page.evaluate((h) => { location.hash = h; }, link(server.key, text2).replace('view=heatmap', 'view=steps'));
  let s = await until(page, (x) => shownRun(x, text2) && x.view === 'steps' && x.served.layers_here.includes(1) && x.steps.q &&
    x.steps.k && x.steps.weights && !x.steps.x && !x.steps.v, 'Steps from the served Q and K', 60000);
  const ref = reference(await serverIds(server, text2));
  const d = maxDiff(s.import.shown, ref.attention[1][2]);  // now computed in the page from Q and K
  expect(d < 1e-5 && s.served.error === '', `layer 2, head 3 from the served Q and K differs from attnviz run by ${d}`);
  await moveAway(page);
  await shot(page, 'served-08-short-steps.png');
  await page.evaluate((h) => { location.hash = h; }, link(server.key, text2).replace('view=heatmap', 'view=qk'));
  s = await until(page, (x) => x.view === 'qk' && x.query_rects.length === x.queries.length && x.queries.length === s.served.tokens,
    'the Q–K space of the served head', 30000);
  await moveAway(page);
  await shot(page, 'served-09-short-qk.png');
  // Explain: the weights, the value-weighted reading (the keys' value norms the server sent) and the rollout
  await page.evaluate((h) => { location.hash = h; }, link(server.key, text2).replace('view=heatmap', 'view=explain'));
  s = await until(page, (x) => x.view === 'explain' && [0, 1, 2].every((k) => x.widgets[`explain.map.${k}`]), 'Explain\'s three maps', 30000);
  await moveAway(page);
  await shot(page, 'served-10-short-explain.png');
  return `Steps from Q, map ${d.toExponential(1)} from attnviz run; the Q–K space; Explain's three maps`;
});

// attnviz run's map L:H (from 1) of the ids, whole or pooled to 64 x 64 blocks.
const referenceMap = (ids, map, pool) => JSON.parse(execFileSync(attnviz, ['run', folder, '--ids', ids.join(','), '--maps', map,
  ...(pool ? ['--pool', '64'] : []), '--json'], { encoding: 'utf8', maxBuffer: 1 << 28 })).maps[0].weights;
const longRows = (s, map) => Math.max(...Object.entries(s.import.long_rows).map(([q, row]) => maxDiff([row], [map[Number(q)]])));
const longText = Array.from({ length: 120 }, (_, i) => `word${i % 37} and`).join(' ');
await check('a text past 512 tokens: the server pools every map for the grid, the page computes the layer shown from its Q and K; another layer asked for', async () => {
  await page.evaluate((h) => { location.hash = h; }, link(server.key, longText));
  let s = await until(page, (x) => x.served && x.served.text === longText && x.served.shown === x.served.run && !x.served.busy &&
    x.import && x.import.maps_on_demand && x.import.long_rows, 'the long text', 120000);
  const ids = await serverIds(server, longText);
  const T = ids.length;
  expect(T > 512 && s.served.tokens === T && s.import.layer === 1 && s.import.head === 2, `T ${T}, map ${s.import.layer}:${s.import.head}`);
  const rows = longRows(s, referenceMap(ids, '2:3'));
  const thumbnail = maxDiff(s.import.thumbnail, referenceMap(ids, '2:3', true));
  expect(rows < 1e-5 && thumbnail < 1e-5, `rows ${rows}, thumbnail ${thumbnail}`);
  await moveAway(page);
  await shot(page, 'served-05-long-heatmap.png');
  await page.evaluate((h) => { location.hash = h; }, link(server.key, longText).replace('map=attention:2:3', 'map=attention:1:2'));
  s = await until(page, (x) => x.import.layer === 0 && x.served.layers_here.includes(0) && x.served.asked_layer === -1 && !x.served.busy,
    'layer 1 asked for', 60000);
  const other = longRows(s, referenceMap(ids, '1:2'));
  expect(other < 1e-5, `layer 1 head 2's rows differ by ${other}`);
  await page.evaluate((h) => { location.hash = h; }, link(server.key, longText).replace('view=heatmap', 'view=model'));
  await until(page, (x) => x.view === 'model', 'the model view');
  await moveAway(page);
  await shot(page, 'served-06-long-model.png');
  return `${T} tokens: rows of 2:3 ${rows.toExponential(1)} and 1:2 ${other.toExponential(1)} from attnviz run, its 64 x 64 thumbnail ${thumbnail.toExponential(1)}`;
});

await check('heads knocked out by a link run so on the server; Restore all runs the text whole again', async () => {
  await page.evaluate((h) => { location.hash = h; }, link(server.key, text2, '&knockout=1:2,2:1'));
  let s = await until(page, (x) => shownRun(x, text2) && x.served.knockout === '1:2,2:1', 'the run with heads knocked out', 60000);
  const ids = await serverIds(server, text2);
  const knocked = JSON.parse(execFileSync(attnviz, ['run', folder, '--ids', ids.join(','), '--knockout', '1:2,2:1', '--json'], { encoding: 'utf8' }));
  const d = maxDiff(s.import.shown, knocked.attention[1][2]);
  const p = Math.abs(s.served.top[0].p - knocked.top[0].p);
  expect(d < 1e-5 && p < 1e-5, `map 2:3 differs from attnviz run --knockout by ${d}, the next token's p by ${p}`);
  expect(decodeURIComponent(s.link).includes('knockout=1:2,2:1'), `link ${s.link}`);
  await clickWidget(page, 'view.model');
  await moveAway(page);
  await shot(page, 'served-07-knockout-model.png');
  await clickWidget(page, 'model.restore');
  s = await until(page, (x) => shownRun(x, text2) && x.served.knockout === '', 'the run whole again', 60000);
  const ref = reference(ids);
  const whole = maxDiff(s.import.shown, ref.attention[1][2]);
  expect(whole < 1e-5 && Math.abs(s.served.top[0].p - ref.top[0].p) < 1e-5, `restored: differs by ${whole}`);
  expect(maxDiff(knocked.attention[1][2], ref.attention[1][2]) > 1e-3, 'the knockout changed nothing');
  return `${d.toExponential(1)} from attnviz run --knockout 1:2,2:1; the next token "${knocked.top[0].token}" ${knocked.top[0].p.toFixed(3)} knocked out, "${ref.top[0].token}" ${ref.top[0].p.toFixed(3)} restored`;
});

await check('Generate: the server continues the text by 8 greedy tokens, and the longer text runs', async () => {
  await page.evaluate((h) => { location.hash = h; }, link(server.key, text1));
  await until(page, (x) => shownRun(x, text1), 'text one', 60000);
  await clickWidget(page, 'served.generate');
  // the link follows the text a moment after the figure (it is written a few times a second)
  const linked = (x, t) => decodeURIComponent(x.link).includes(`text=${t}`) || x.link.includes(encodeURIComponent(t));
  const s = await until(page, (x) => x.served.text.startsWith(text1) && x.served.text !== text1 && shownRun(x, x.served.text) &&
    linked(x, x.served.text), 'the continued text, in the figure and the link', 60000);
  const r = await fetch(`${server.address}/api/generate`, { method: 'POST', headers: { 'X-Attnviz-Token': server.key }, body: JSON.stringify({ text: text1, tokens: 8 }) });
  const want = (await r.json()).text;
  expect(s.served.text === want, `the page's text ${JSON.stringify(s.served.text)}, the server's ${JSON.stringify(want)}`);
  const d = maxDiff(s.import.shown, reference(await serverIds(server, want)).attention[1][2]);
  expect(d < 1e-5, `the continued text's map differs from attnviz run by ${d}`);
  expect(linked(s, want), `link ${s.link}`);
  return `${JSON.stringify(want.slice(text1.length))} added, ${s.served.tokens} tokens, ${d.toExponential(1)}`;
});

await check('two pages at once: each shows its own text', async () => {
  const other = await openPage(browser, url + link(server.key, 'Two pages ask at once.'));
  await page.evaluate((h) => { location.hash = h; }, link(server.key, text1));
  const [a, b] = await Promise.all([until(page, (x) => shownRun(x, text1), 'page one', 60000),
    until(other, (x) => shownRun(x, 'Two pages ask at once.'), 'page two', 60000)]);
  expect(a.import.stacks[0].T_q !== b.import.stacks[0].T_q, "the same tokens on both pages");
  await other.close();
  return `runs ${a.served.run} and ${b.served.run}`;
});

await check('a wrong key: the panel says so, and no figure comes', async () => {
  const wrong = await openPage(browser, url + link('not-the-key-0123456789', text1));
  const s = await until(wrong, (x) => x.served && /token: missing or wrong/.test(x.served.error), 'the refusal', 30000);
  expect(!s.import || !s.import.shown, 'a figure was shown');
  expect(s.served.awaiting_figure, 'the canvas draws the scene behind the link, not the server\'s state');
  await moveAway(wrong);
  await shot(wrong, 'served-02-wrong-key.png');
  await wrong.close();
  return s.served.error;
});

await check('the server stopped and started again on its port with its key: the page asks again', async () => {
  const { port, key } = server;
  await stopServer(server);
  const text3 = 'The server came back.';
  await page.evaluate((h) => { location.hash = h; }, link(key, text3));
  const lost = await until(page, (x) => x.served && x.served.lost, 'the server lost', 30000);
  await shot(page, 'served-03-lost.png');
  server = await startServer(port, key);
  const s = await until(page, (x) => shownRun(x, text3), 'the run after the restart', 60000);
  const ref = reference(await serverIds(server, text3));
  const d = maxDiff(s.import.shown, ref.attention[1][2]);
  expect(d < 1e-5, `differs by ${d}`);
  return `lost ("${lost.served.error}"), then run ${s.served.run}: ${d.toExponential(1)}`;
});

await check('the page attnviz.serve() serves at its own address (server=.) runs the plain build and connects', async () => {
  const own = await openPage(browser, `${server.address}/#v=1&server=.&key=${server.key}&text=${encodeURIComponent(text1)}&view=model&panels=1`);
  const s = await until(own, (x) => shownRun(x, text1), 'the figure at the server\'s address', 60000);
  const wasm = await own.evaluate(() => performance.getEntriesByType('resource').map((e) => e.name).filter((n) => n.endsWith('.wasm')));
  expect(wasm.length === 1 && wasm[0].endsWith('/attnviz.wasm'), `wasm ${wasm}`);
  await moveAway(own);
  await shot(own, 'served-04-own-page-model.png');
  await own.close();
  return `${s.served.tokens} tokens at ${server.address}, ${wasm[0].split('/').pop()}`;
});

await stopServer(server);
await finishSuite('browser-served');
