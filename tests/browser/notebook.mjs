#!/usr/bin/env node
// notebook.mjs: attnviz's notebook outputs in the browser (SPEC.md §7), with the network blocked.
//   node tests/browser/notebook.mjs OUT_DIR ARTIFACT_DIR MODEL_REFS
// OUT_DIR is what tests/notebook/test_notebook.py wrote: nbconvert's export of the executed
// example (notebook.html), the same outputs each in a sandboxed srcdoc frame under Colab's CSP
// (sandbox.html), the executed notebook signed and not (trusted.ipynb, untrusted.ipynb: reopened
// in Debian's Jupyter Notebook 6.4, started here), and the maps each figure was asked for
// (expected.json). And show_model() with a Hub id, $HF_ENDPOINT the stand-in Hub
// (tests/hub/hub_server.py) serving a random-weight model of MODEL_REFS.
// Every figure draws, shows the view asked for, its twin's table equals the map chosen (the
// first 64 × 64, to its two decimals), no request leaves the page but those nbconvert's own
// template makes, the outputs share one compiled app, a click pins a cell, and
// "Open in attnviz ↗" opens the whole app on the same data.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { decodePng, distinctColors } from './png.mjs';
import { artifactDir, check, expect, finishSuite, freePort, maxDiff, startSuiteOrEnd, waitForServer } from './harness.mjs';

const [outDir, artifacts, refs] = process.argv.slice(2);
if (!outDir || !artifacts || !refs) {
  console.error('usage: node tests/browser/notebook.mjs OUT_DIR ARTIFACT_DIR MODEL_REFS');
  process.exit(2);
}
const expected = JSON.parse(fs.readFileSync(path.join(outDir, 'expected.json'), 'utf8'));
const views = ['heatmap', 'lines', 'heatmap', 'model', 'heatmap'];  // as examples/attention.ipynb asks
const suite = await startSuiteOrEnd('notebook', outDir, artifacts);

// A page whose every request but its own address (or those `allowed` says) is refused and
// recorded; console errors kept.
async function openOffline(url, { viewport = { width: 1000, height: 900 }, allowed = (u) => u === url } = {}) {
  const context = await suite.browser.newContext({ viewport });
  const requests = [], errors = [];
  await context.route('**/*', (route) => {
    const u = route.request().url();
    if (allowed(u)) return route.continue();
    requests.push(u);
    return route.abort();
  });
  context.on('page', (p) => p.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); }));
  const page = await context.newPage();
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(String(e.message || e)));
  await page.goto(url);
  return { page, context, requests, errors };
}

// In a page or frame: each figure's view and twin (its table as numbers), by output.
const readFigures = (where) => where.evaluate(() => [...document.querySelectorAll('.attnviz-output')].map((el) => {
  const m = el.attnviz, ready = el.hasAttribute('data-attnviz-ready');
  const s = ready && m && m._attnviz_state ? JSON.parse(m.UTF8ToString(m._attnviz_state())) : null;
  const table = el.querySelector('.attnviz-twin table');
  return {
    ready, view: s && s.view, panels: s && s.panels, error: s && s.error, fonts: s && s.fonts,
    queries: s && s.queries ? s.queries.length : 0,
    rows: table ? [...table.querySelectorAll('tbody tr')].map((tr) => [...tr.querySelectorAll('td')].map((td) => Number(td.textContent))) : [],
  };
}));

// Output i's figure is drawn with the view asked for and a table of the map's size.
const shows = (f, i) => f && f.ready && f.view === views[i] && f.rows.length > 0 &&
                        (!expected[i].map || f.rows.length === expected[i].map.length);

// Waits until every figure of `where` is ready and shows what it should; returns them.
async function figuresDrawn(where, count, timeoutMs = 120000) {
  const deadline = Date.now() + timeoutMs;
  let figures = [];
  while (Date.now() < deadline) {
    figures = await readFigures(where);
    if (figures.length === count && figures.every((f, i) => shows(f, i))) return figures;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`figures not drawn: ${JSON.stringify(figures.map(({ rows, ...f }) => ({ ...f, rows: rows.length })))}`);
}

// The twin's table against the map asked for: two decimals, after F16.
function tablesMatch(figures, indices) {
  const notes = [];
  for (const i of indices) {
    const want = expected[i].map, got = figures[i].rows;
    expect(got.length > 0 && got[0], `output ${i + 1}: no table (${JSON.stringify(got).slice(0, 200)})`);
    expect(got.length === want.length && got[0].length === want[0].length,
           `output ${i + 1}: table ${got.length}×${got[0].length}, expected ${want.length}×${want[0].length}`);
    let worst = 0;
    for (let q = 0; q < want.length; ++q)
      for (let k = 0; k < want[q].length; ++k)  // a masked cell's text is no number: its weight is 0
        worst = Math.max(worst, Number.isNaN(got[q][k]) ? (want[q][k] === 0 ? 0 : Infinity) : Math.abs(got[q][k] - want[q][k]));
    expect(worst <= 0.0055,  // the table's rounding (0.005), F16's (2.4e-4), expected.json's (5e-7)
           `output ${i + 1}: the twin's table is ${worst.toFixed(4)} off the map asked for`);
    notes.push(`${want.length}×${want[0].length} ±${worst.toFixed(4)}`);
  }
  return notes.join(', ');
}

// nbconvert's template loads its own scripts and styles from CDNs (require.js, MathJax): those
// are its requests, not the figures'. Any other request is a figure's.
const html = fs.readFileSync(path.join(outDir, 'notebook.html'), 'utf8');
const templateUrls = new Set([...html.matchAll(/(?:src|href)="(https?:[^"]+)"/g)].map((m) => m[1].replace(/&amp;/g, '&')));
const withData = expected.map((e, i) => i).filter((i) => expected[i].map);

let exported;
await check('nbconvert\'s export, offline: every figure draws the view and map asked for; the twins\' tables are the maps', async () => {
  exported = await openOffline(`${suite.origin}/notebook.html`);
  const figures = await figuresDrawn(exported.page, expected.length);
  const apps = await exported.page.evaluate(() => Object.keys(window.attnvizNotebookApps || {}).length);
  expect(apps === 1, `the outputs decoded and compiled the app ${apps} times, not once`);
  // The encoder-decoder example's Chinese tokens: its output carries the CJK font, none is missing.
  const deadline = Date.now() + 20000;
  let f = figures[2];
  while (Date.now() < deadline && (f.fonts.missing || f.fonts.font_pending)) f = (await readFigures(exported.page))[2];
  expect(!f.fonts.missing && !f.fonts.font_pending, `output 3's fonts: ${JSON.stringify(f.fonts)}`);
  return tablesMatch(figures, withData) + `; live model: ${figures[4].queries} tokens; the app compiled once`;
});

await check('no request leaves the notebook page but the template\'s own', async () => {
  const own = exported.requests.filter((u) => !templateUrls.has(u));
  expect(own.length === 0, `requests: ${own.join(', ')}`);
  const csp = exported.errors.filter((e) => /Content Security Policy|attnviz:/.test(e));
  expect(csp.length === 0, `errors: ${csp.join(' | ')}`);
  return `template's blocked: ${exported.requests.length}`;
});

await check('the figures are drawn (a screenshot of each output)', async () => {
  const outputs = await exported.page.$$('.attnviz-output');
  const notes = [];
  for (let i = 0; i < outputs.length; ++i) {
    await outputs[i].scrollIntoViewIfNeeded();
    const image = decodePng(await outputs[i].screenshot({ path: path.join(artifactDir, `notebook-output-${i + 1}.png`) }));
    const colors = distinctColors(image, [0, 0, image.width, image.height]);
    expect(colors > 20, `output ${i + 1} looks blank (${colors} colours)`);
    notes.push(colors);
  }
  return `distinct colours ${notes.join(', ')}`;
});

await check('a click on a cell of the first figure pins it: the twin reads that cell out', async () => {
  const el = (await exported.page.$$('.attnviz-output'))[0];
  await el.scrollIntoViewIfNeeded();
  const at = await el.evaluate((e) => {
    const m = e.attnviz, s = JSON.parse(m.UTF8ToString(m._attnviz_state())), r = s.figure;
    const c = e.querySelector('canvas'), box = c.getBoundingClientRect(), k = c.width / box.width;
    return [box.x + (r[0] + r[2] * 0.6) / k, box.y + (r[1] + r[3] * 0.8) / k];
  });
  const twin = () => el.evaluate((e) => {
    const m = e.attnviz, s = JSON.parse(m.UTF8ToString(m._attnviz_state()));
    return { cell: s.pinned_cell, text: e.querySelector('.attnviz-twin p').textContent };
  });
  await exported.page.mouse.click(at[0], at[1]);
  const said = /“[^”]+” to “[^”]+”: (\d\.\d\d|masked)\./;  // the twin's words for one cell
  const deadline = Date.now() + 10000;
  let t = await twin();
  while (Date.now() < deadline && !said.test(t.text)) { await new Promise((r) => setTimeout(r, 200)); t = await twin(); }
  expect(said.test(t.text) && t.cell, `pinned ${JSON.stringify(t.cell)}, the twin says: ${t.text}`);
  await exported.page.mouse.click(at[0], at[1]);  // and lets go
  return `${JSON.stringify(t.cell)}: ${t.text}`;
});

await check('"Open in attnviz ↗" opens the whole app on the same data in a new tab', async () => {
  const el = (await exported.page.$$('.attnviz-output'))[0];
  await el.scrollIntoViewIfNeeded();
  const at = await el.evaluate((e) => {
    const m = e.attnviz, s = JSON.parse(m.UTF8ToString(m._attnviz_state())), r = s.widgets['strip.open'];
    const c = e.querySelector('canvas'), box = c.getBoundingClientRect(), k = c.width / box.width;
    return r && [box.x + (r[0] + r[2] / 2) / k, box.y + (r[1] + r[3] / 2) / k];
  });
  expect(at, 'no "Open in attnviz" in the strip');
  const [popup] = await Promise.all([exported.context.waitForEvent('page'), exported.page.mouse.click(at[0], at[1])]);
  const deadline = Date.now() + 90000;
  let f = [];
  while (Date.now() < deadline && !(shows(f[0], 0) && f[0].panels)) {
    f = await readFigures(popup).catch(() => []);
    await new Promise((r) => setTimeout(r, 250));
  }
  expect(f[0] && f[0].panels === true, `the new tab: ${JSON.stringify(f[0] && { ...f[0], rows: f[0].rows.length })}`);
  await popup.screenshot({ path: path.join(artifactDir, 'notebook-open-full.png') });
  return `${popup.url().slice(0, 12)}…: panels shown, view ${f[0].view}; ` + tablesMatch([{ rows: f[0].rows }], [0]);
});

await check('Colab\'s situation: each output in a sandboxed srcdoc frame (allow-scripts only) under a CSP that allows no request', async () => {
  const sandboxed = await openOffline(`${suite.origin}/sandbox.html`, { viewport: { width: 1000, height: 700 } });
  const frames = await sandboxed.page.$$('iframe');
  const figures = [];
  for (let i = 0; i < frames.length; ++i) {
    await frames[i].scrollIntoViewIfNeeded();
    const frame = await frames[i].contentFrame();
    const deadline = Date.now() + 120000;
    let f = [];
    while (Date.now() < deadline && !shows(f[0], i)) {
      f = await readFigures(frame);
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(f[0] && f[0].ready, `frame ${i + 1} did not draw: ${JSON.stringify(f[0] && { ...f[0], rows: f[0].rows.length })}`);
    figures.push(f[0]);
  }
  await sandboxed.page.screenshot({ path: path.join(artifactDir, 'notebook-sandboxed.png') });
  expect(sandboxed.requests.length === 0, `requests: ${sandboxed.requests.join(', ')}`);
  const bad = sandboxed.errors.filter((e) => /Content Security Policy|attnviz:|Refused/.test(e));
  expect(bad.length === 0, `errors: ${bad.join(' | ')}`);
  return tablesMatch(figures, withData);
});

// Debian's Jupyter Notebook 6.4 on the saved notebook: its kernels from test_notebook.py's venv,
// its notary's database where the trusted copy was signed.
const jupyterDir = path.resolve(outDir, 'jupyter');
const port = await freePort();
const jupyter = spawn('jupyter', ['notebook', '--allow-root', '--no-browser', '--ip', '127.0.0.1', '--port', String(port),
                                  '--NotebookApp.token=', '--NotebookApp.password=', '--notebook-dir', path.resolve(outDir)], {
  stdio: ['ignore', 'ignore', fs.openSync(path.join(artifacts, 'jupyter.log'), 'w')],
  env: { ...process.env, JUPYTER_PATH: jupyterDir, JUPYTER_DATA_DIR: path.join(jupyterDir, 'data'),
         JUPYTER_CONFIG_DIR: path.join(jupyterDir, 'config'), JUPYTER_RUNTIME_DIR: path.join(jupyterDir, 'run') },
});
const jupyterOrigin = `http://127.0.0.1:${port}`;
const ownOrigin = (u) => u.startsWith(jupyterOrigin + '/');

await check('Jupyter Notebook reopens the saved notebook offline: every figure draws, its twin\'s table is the map', async () => {
  await waitForServer(`${jupyterOrigin}/api`, 30000);
  const reopened = await openOffline(`${jupyterOrigin}/notebooks/trusted.ipynb`, { allowed: ownOrigin });
  const figures = await figuresDrawn(reopened.page, expected.length);
  await reopened.page.screenshot({ path: path.join(artifactDir, 'notebook-jupyter.png') });
  expect(reopened.requests.length === 0, `requests off the server: ${reopened.requests.join(', ')}`);
  await reopened.context.close();
  return tablesMatch(figures, withData);
});

await check('an untrusted notebook runs no output\'s script: each output says how to see it', async () => {
  const untrusted = await openOffline(`${jupyterOrigin}/notebooks/untrusted.ipynb`, { allowed: ownOrigin });
  const notes = () => untrusted.page.evaluate(() => [...document.querySelectorAll('.output_html')]
    .filter((o) => /trust the notebook/.test(o.textContent)).length);
  const deadline = Date.now() + 30000;
  while (Date.now() < deadline && await notes() < expected.length) await new Promise((r) => setTimeout(r, 250));
  const n = await notes(), drawn = await untrusted.page.evaluate(() => document.querySelectorAll('canvas').length);
  await untrusted.page.screenshot({ path: path.join(artifactDir, 'notebook-untrusted.png') });
  await untrusted.context.close();
  expect(n === expected.length && drawn === 0, `${n} notes, ${drawn} canvases`);
  return `${n} outputs say so`;
});
jupyter.kill();

await check('show_model with a Hub id: the output fetches it from $HF_ENDPOINT (a stand-in Hub) and runs it', async () => {
  const hubServer = spawn('python3', [path.resolve(path.dirname(new URL(import.meta.url).pathname), '../hub/hub_server.py'),
                                      `attnviz-test/gpt2=${path.join(refs, 'gpt2_l3_h4_d32_f16')}`], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const line = await new Promise((resolve) => readline.createInterface({ input: hubServer.stdout }).once('line', resolve));
    const [endpoint, cdn] = line.trim().split(' ');
    const file = path.resolve(outDir, 'hub.html');
    const made = spawn(path.resolve(outDir, 'venv/bin/python'), ['-c',
      'import attnviz, sys; attnviz.save_html(attnviz.show_model("attnviz-test/gpt2", "The cat sat on the mat", map="attention:2:3"), sys.argv[1])', file],
      { env: { ...process.env, HF_ENDPOINT: endpoint }, stdio: 'inherit' });
    expect(await new Promise((resolve) => made.on('exit', resolve)) === 0, 'show_model failed');
    const hubPage = await openOffline(`${suite.origin}/hub.html`,
                                      { allowed: (u) => u.endsWith('/hub.html') || u.startsWith(endpoint) || u.startsWith(cdn) });
    const deadline = Date.now() + 90000;
    let s = null;
    while (Date.now() < deadline && !(s && s.model && s.model.active && !s.model.busy && s.model.figure)) {
      s = await hubPage.page.evaluate(() => {
        const e = document.querySelector('.attnviz-output[data-attnviz-ready]');
        return e ? JSON.parse(e.attnviz.UTF8ToString(e.attnviz._attnviz_state())) : null;
      });
      await new Promise((r) => setTimeout(r, 250));
    }
    await hubPage.page.screenshot({ path: path.join(artifactDir, 'notebook-hub.png') });
    expect(s && s.model.hub === 'attnviz-test/gpt2' && s.model.model_type === 'gpt2',
           `model ${JSON.stringify(s && { hub: s.model.hub, type: s.model.model_type, error: s.error })}`);
    expect(hubPage.requests.length === 0, `other requests: ${hubPage.requests.join(', ')}`);
    await hubPage.context.close();
    return `${s.model.summary}; ${s.queries.length} tokens`;
  } finally {
    hubServer.kill();
  }
});

// A vision model by Hub id on a picture (attnviz.show_model(..., image=...)): a random-weight
// DINOv2 (tests/model/make_vision_models.py) served by the stand-in Hub, the picture inside the
// output; the output opens the Picture view and its maps equal the float64 reference's.
await check('show_model on a picture: a vision model from the stand-in Hub runs on the picture the output carries', async () => {
  const vision = path.resolve(outDir, 'vision');
  execFileSync('/usr/bin/python3', [path.resolve(path.dirname(new URL(import.meta.url).pathname), '../model/make_vision_models.py'), vision]);
  const folder = path.join(vision, 'dinov2');
  const expected = JSON.parse(fs.readFileSync(path.join(folder, 'expected.json'), 'utf8'));
  const hubServer = spawn('python3', [path.resolve(path.dirname(new URL(import.meta.url).pathname), '../hub/hub_server.py'),
                                      `attnviz-test/dinov2=${folder}`], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const line = await new Promise((resolve) => readline.createInterface({ input: hubServer.stdout }).once('line', resolve));
    const [endpoint, cdn] = line.trim().split(' ');
    const file = path.resolve(outDir, 'picture.html');
    const made = spawn(path.resolve(outDir, 'venv/bin/python'), ['-c',
      'import attnviz, sys; attnviz.save_html(attnviz.show_model("attnviz-test/dinov2", image=sys.argv[2]), sys.argv[1])', file,
      path.join(folder, 'image.png')], { env: { ...process.env, HF_ENDPOINT: endpoint }, stdio: 'inherit' });
    expect(await new Promise((resolve) => made.on('exit', resolve)) === 0, 'show_model failed');
    const pagePicture = await openOffline(`${suite.origin}/picture.html`,
                                          { allowed: (u) => u.endsWith('/picture.html') || u.startsWith(endpoint) || u.startsWith(cdn) });
    const deadline = Date.now() + 90000;
    let s = null;
    while (Date.now() < deadline && !(s && s.model && s.model.picture && !s.model.busy && s.view === 'image' && s.import && s.import.shown)) {
      s = await pagePicture.page.evaluate(() => {
        const e = document.querySelector('.attnviz-output[data-attnviz-ready]');
        return e ? JSON.parse(e.attnviz.UTF8ToString(e.attnviz._attnviz_state())) : null;
      });
      await new Promise((r) => setTimeout(r, 250));
    }
    await pagePicture.page.screenshot({ path: path.join(artifactDir, 'notebook-picture.png') });
    expect(s && s.model.model_type === 'dinov2' && s.view === 'image' && s.import && s.import.shown,
           `state ${JSON.stringify(s && { type: s.model.model_type, view: s.view, picture: s.model.picture, error: s.error })}`);
    const worst = maxDiff(s.import.shown, expected.attention[s.import.layer][s.import.head]);
    expect(worst < 1e-5, `map ${s.import.layer + 1}:${s.import.head + 1} differs from the reference by ${worst}`);
    expect(pagePicture.requests.length === 0, `other requests: ${pagePicture.requests.join(', ')}`);
    await pagePicture.context.close();
    return `${s.model.summary}; ${s.queries.length} tokens; largest difference ${worst.toExponential(1)}`;
  } finally {
    hubServer.kill();
  }
});

await finishSuite('browser-notebook');
