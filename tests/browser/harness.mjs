// harness.mjs: what every browser test file shares: a static server (scripts/serve.py) on a
// free port, headless Chromium with SwiftShader WebGL2, page helpers that read the app state
// (Module._attnviz_state, main/test_hook.cpp) and point at its widgets, and the check list.
//   const suite = await startSuite(SITE_DIR, ARTIFACT_DIR);   // suite.url, suite.browser
//   await check('name', async () => { ...; return 'note'; });
//   await finishSuite('browser');                               // prints the tally, exits
import { chromium } from 'playwright-core';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { decodePng, patch } from './png.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const serveScript = path.resolve(here, '../../scripts/serve.py');
export let artifactDir = '.';
let started = Date.now();
let server, browser;

// [server] -----------------------------------------------------------------------------------
export async function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

export async function waitForServer(url, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try { if ((await fetch(url)).ok) return; } catch { /* not up yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`server at ${url} did not start`);
}

// [page helpers] -----------------------------------------------------------------------------
export const consoleErrors = [];
export const requests = [];  // [check, url] of every request the pages made

// ATTNVIZ_BUILD=simd128 (for the benchmarks): the pages are told the browser lacks relaxed SIMD,
// so attnviz-page.js loads the SIMD128 build (attnviz.wasm) instead of attnviz-relaxed.wasm.
export const forceSimd128 = process.env.ATTNVIZ_BUILD === 'simd128' ? () => { WebAssembly.validate = () => false; } : null;

export async function openPage(browser, url, options = {}) {
  const context = await browser.newContext({
    viewport: options.viewport || { width: 1280, height: 800 },
    deviceScaleFactor: options.deviceScaleFactor || 1,
    hasTouch: !!options.hasTouch,
  });
  const init = options.initScript || forceSimd128;
  if (init) await context.addInitScript(init);  // runs before the page's scripts
  const page = await context.newPage();
  page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(`[${currentCheck}] ${m.text()}`); });
  page.on('pageerror', (e) => consoleErrors.push(`[${currentCheck}] ${String(e.message || e)}`));
  page.on('request', (r) => requests.push([currentCheck, r.url()]));
  await page.goto(url);
  await page.waitForFunction(() => window.attnvizReady === true, null, { timeout: 90000 });
  await waitFrames(page, 3);
  return page;
}

export async function state(page) {
  return page.evaluate(() => JSON.parse(Module.UTF8ToString(Module._attnviz_state())));
}

export async function waitFrames(page, n) {
  const start = (await state(page)).frame;
  await page.waitForFunction(
    (target) => JSON.parse(Module.UTF8ToString(Module._attnviz_state())).frame >= target,
    start + n, { timeout: 30000, polling: 50 });
}

// Waits until predicate(state) holds (checked every few frames), returning that state.
export async function until(page, predicate, what, timeoutMs = 20000) {
  const deadline = Date.now() + timeoutMs;
  let s;
  while (Date.now() < deadline) {
    s = await state(page);
    if (predicate(s)) return s;
    await page.waitForTimeout(80);
  }
  throw new Error(`timed out waiting for ${what}; state: ${JSON.stringify(summary(s))}`);
}

export function summary(s) {
  if (!s) return s;
  const { frame, view, kind, queries, keys, hover, pinned, error, lines_drawn, ui_scale, theme } = s;
  const short = (a) => (Array.isArray(a) && a.length > 40 ? [...a.slice(0, 20), `… ${a.length} in all`] : a);
  return { frame, view, kind, queries: short(queries), keys: short(keys), hover, pinned, error, lines_drawn, ui_scale, theme };
}

// App coordinates are framebuffer pixels; the mouse works in CSS pixels.
export async function cssScale(page) {
  return page.evaluate(() => {
    const c = document.getElementById('canvas');
    return c.width / c.getBoundingClientRect().width;
  });
}

export async function pointAt(page, rect, click = false) {
  const k = await cssScale(page);
  const x = (rect[0] + rect[2] / 2) / k, y = (rect[1] + rect[3] / 2) / k;
  await page.mouse.move(x, y);
  if (click) await page.mouse.click(x, y);
  await waitFrames(page, 2);
}

// Clicks a widget where it is drawn. A popup or modal is laid out in a first, hidden frame before
// its size is known (ImGui's auto-fit), and placed again in the next: the widget's rectangle is
// read until two frames agree, so the click lands where a reader would see it.
export async function clickWidget(page, name) {
  let s = await state(page);
  for (let tries = 0; s.widgets[name] && tries < 10; ++tries) {
    await waitFrames(page, 2);
    const next = await state(page);
    const same = next.widgets[name] && next.widgets[name].every((v, i) => v === s.widgets[name][i]);
    s = next;
    if (same) break;
  }
  if (!s.widgets[name]) throw new Error(`no widget "${name}" on screen (have: ${Object.keys(s.widgets).join(', ')})`);
  await pointAt(page, s.widgets[name], true);
}

// Screenshot kept as an artifact, decoded for pixel checks. Screenshot pixels = app pixels
// (the canvas fills the page, and the screenshot is taken at the device pixel ratio).
export async function shot(page, name) {
  const file = path.join(artifactDir, name);
  const buffer = await page.screenshot({ path: file });
  return decodePng(buffer);
}

// Opens the Export menu (retrying: a click can land while a popup is closing), picks an item,
// and returns the downloaded file (kept as ARTIFACTS/prefix + its name) with the app state after
// the export; `menuShot`: a file name for a screenshot of the open menu.
export async function exportFile(page, item, { prefix = '', menuShot = null } = {}) {
  for (let attempt = 0; ; ++attempt) {
    if (!(await state(page)).widgets[item]) await clickWidget(page, 'export');
    try {
      await until(page, (x) => x.widgets[item], `${item} in the Export menu`, 4000);
      if (menuShot) await shot(page, menuShot);
      break;
    } catch (e) {
      if (attempt === 3) throw e;
      await moveAway(page);
    }
  }
  const before = (await state(page)).export.count;
  const [download] = await Promise.all([page.waitForEvent('download', { timeout: 60000 }), clickWidget(page, item)]);
  const name = download.suggestedFilename();
  const file = path.join(artifactDir, prefix + name);
  await download.saveAs(file);
  const s = await until(page, (x) => x.export.count > before, 'the export record');
  expect(s.export.error === '', `export error: ${s.export.error}`);
  await moveAway(page);
  return { name, file, bytes: fs.readFileSync(file), s };
}

// Draws an SVG file in a page of its own size (info: its width and height) and returns the
// decoded screenshot, kept as ARTIFACTS/name.
export async function drawSvg(browser, file, info, name) {
  const context = await browser.newContext({ viewport: { width: Math.ceil(info.width), height: Math.ceil(info.height) } });
  const page = await context.newPage();
  await page.goto('data:image/svg+xml;base64,' + fs.readFileSync(file).toString('base64'));
  const buffer = await page.screenshot({ path: path.join(artifactDir, name) });
  await context.close();
  return decodePng(buffer);
}

export async function moveAway(page) {
  const s = await state(page);
  const k = await cssScale(page);
  // The bottom-right corner of the figure area: empty in every view.
  await page.mouse.move((s.figure[0] + s.figure[2] - 12) / k, (s.figure[1] + s.figure[3] - 12) / k);
  await waitFrames(page, 2);
}

// Opens the preset list (retrying: a click can land while the list is closing) and picks one.
export async function pickPreset(page, name) {
  for (let attempt = 0; attempt < 4; ++attempt) {
    if (!(await state(page)).widgets[`preset.${name}`]) await clickWidget(page, 'preset');
    try {
      await until(page, (x) => x.widgets[`preset.${name}`], `preset ${name} in the list`, 4000);
      // ImGui places a popup on its second frame (the first measures it): click where it settled.
      await waitFrames(page, 2);
      await clickWidget(page, `preset.${name}`);
      await until(page, (x) => !x.widgets[`preset.${name}`], 'the list to close', 4000);
      return;
    } catch (e) {
      if (attempt === 3) throw e;
      await moveAway(page);
    }
  }
}

export const spread = ([r, g, b]) => Math.max(r, g, b) - Math.min(r, g, b);
export const luminance = ([r, g, b]) => 0.2126 * r + 0.7152 * g + 0.0722 * b;

// Inner patch of a heatmap cell, clear of the number printed in its centre and of grid lines.
export function cellPatch(s, q, k) {
  const [gx, gy, gw, gh] = s.grid;
  const cw = gw / s.keys.length, ch = gh / s.queries.length;
  return [gx + k * cw + cw * 0.12, gy + q * ch + ch * 0.12, Math.max(cw * 0.22, 3), Math.max(ch * 0.22, 3)];
}

// A masked cell is hatched in two neutral greys; a weight (even 0) is a saturated colormap colour.
export function looksMasked(image, rect) {
  const px = patch(image, rect);
  const grey = px.every((p) => spread(p) < 24);
  const tones = new Set(px.map((p) => Math.round(luminance(p) / 8))).size;
  return grey && tones >= 2;
}

// [checks] -------------------------------------------------------------------------------------
const results = [];  // one boolean per check
export let currentCheck = 'setup';
export async function check(name, fn) {
  const t0 = Date.now();
  currentCheck = name;
  try {
    const note = await fn();
    results.push(true);
    console.log(`ok    ${name}${note ? ` (${note})` : ''} [${((Date.now() - t0) / 1000).toFixed(1)}s]`);
  } catch (e) {
    results.push(false);
    console.log(`FAIL  ${name}: ${e.message}`);
  }
}
export function expect(condition, message) { if (!condition) throw new Error(message); }

// The largest difference between two matrices (arrays of rows); Infinity when their shapes differ.
export function maxDiff(a, b) {
  if (!a || !b || a.length !== b.length) return Infinity;
  let d = 0;
  for (let i = 0; i < a.length; ++i) {
    if (a[i].length !== b[i].length) return Infinity;
    for (let j = 0; j < a[i].length; ++j) d = Math.max(d, Math.abs(a[i][j] - b[i][j]));
  }
  return d;
}

// The two headers that make a page cross-origin isolated (scripts/run.sh sends them): it then
// loads the threaded module (docs/WEB.md).
export const isolation = ['Cross-Origin-Opener-Policy: same-origin', 'Cross-Origin-Embedder-Policy: require-corp'];

// Serves `root` with scripts/serve.py (extra response headers as "Name: value" strings) on a free
// port and starts Debian's headless Chromium (WebGL2 on SwiftShader): the suites' setup and the
// benchmarks'. close() stops both.
export async function serveAndLaunch(root, headers = []) {
  const port = await freePort();
  const args = [serveScript, root, '--port', String(port)];
  for (const h of headers) args.push('--header', h);
  const server = spawn('python3', args, { stdio: 'ignore' });
  const origin = `http://127.0.0.1:${port}`;
  const url = `${origin}/index.html`;
  await waitForServer(url, 10000);
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--no-first-run', '--disable-background-networking',
           '--disable-component-update', '--disable-sync', '--disable-quic', '--use-angle=swiftshader',
           '--enable-unsafe-swiftshader'],
  });
  return { origin, url, port, browser, server, close: async () => { await browser.close(); server.kill(); } };
}

// Serves siteDir (with extra response headers, "Name: value" strings) and starts Chromium.
export async function startSuite(siteDir, artifacts, { headers = [] } = {}) {
  artifactDir = artifacts;
  fs.mkdirSync(artifactDir, { recursive: true });
  started = Date.now();
  const s = await serveAndLaunch(siteDir, headers);
  server = s.server, browser = s.browser;
  return { origin: s.origin, url: s.url, browser: s.browser, port: s.port };
}

// startSuite for a suite named `name` whose checks all need it: if the setup fails, the failure
// is reported and the suite ends there (finishSuite), rather than every check failing after it.
export async function startSuiteOrEnd(name, siteDir, artifacts, options) {
  try {
    return await startSuite(siteDir, artifacts, options);
  } catch (e) {
    failSetup(e);
    return finishSuite(name);
  }
}

// Records a failure outside any check (setup went wrong).
export function failSetup(e) {
  results.push(false);
  console.log(`FAIL  setup: ${e.message}`);
}

// Closes the browser and the server, prints "NAME: N passed, M failed", exits.
// Closes the browser and stops the server (finishSuite does; benchmarks call it alone).
export async function stopSuite() {
  if (browser) await browser.close();
  if (server) server.kill();
  browser = server = undefined;
}
export async function finishSuite(name) {
  await stopSuite();
  const passed = results.filter(Boolean).length, failed = results.length - passed;
  console.log(`screenshots in ${artifactDir}; ${((Date.now() - started) / 1000).toFixed(0)}s`);
  console.log(`${name}: ${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}
