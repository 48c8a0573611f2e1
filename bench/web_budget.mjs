#!/usr/bin/env node
// web_budget.mjs: the web build's budget, measured (run by hand; docs/BENCHMARKS.md).
//   NODE_PATH=tests/browser/node_modules node bench/web_budget.mjs [SITE_DIR] [LOADS]
// 1. Sizes of each build's wasm + js (attnviz: SIMD128; attnviz-relaxed: relaxed SIMD): raw,
//    gzip -9 and brotli q11 (node's zlib), and the first-frame font package attnviz.data beside
//    them (the lazy CJK fonts are left out).
//    Budget: wasm + js ≤ 1.5 MB raw and ≤ 500 KB brotli.
// 2. First frame in headless Chromium on localhost: from navigation start to the moment the
//    page sets window.attnvizReady (index.html, at the app's first frame). Cold: a fresh
//    browser context each load (empty HTTP cache). Warm: reloads in one context that has
//    loaded the page once, served with Cache-Control: max-age=600 as a blog host would.
//    Chromium loads the relaxed build; ATTNVIZ_BUILD=simd128 makes it load the SIMD128 one.
//    Median of LOADS (default 7) each. Budget: warm ≤ 1 s.
// The server is a small static server in this file (not scripts/serve.py, which sends
// no-cache), so that the warm loads really come from the cache.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { createRequire } from 'node:module';
import { forceSimd128 } from '../tests/browser/harness.mjs';

const require = createRequire(import.meta.url);
const here = path.dirname(new URL(import.meta.url).pathname);
let chromium;
try {
  ({ chromium } = require('playwright-core'));
} catch {
  ({ chromium } = require(path.join(here, '../tests/browser/node_modules/playwright-core')));
}

const site = path.resolve(process.argv[2] || 'build-web/site');
const loads = Number(process.argv[3] || 7);
const KB = 1024;

// [sizes] ---------------------------------------------------------------------------------------
function sizes(file) {
  const bytes = fs.readFileSync(path.join(site, file));
  return {
    file, raw: bytes.length,
    gzip: zlib.gzipSync(bytes, { level: 9 }).length,
    brotli: zlib.brotliCompressSync(bytes, {
      params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: bytes.length },
    }).length,
  };
}
const kb = (n) => `${(n / KB).toFixed(0)} KB`;
console.log(`# web budget: ${site}`);
console.log(`# machine: ${os.cpus()[0].model}, ${os.cpus().length} cores, ${os.type()} ${os.release()}, node ${process.version}`);
console.log('file                    raw        gzip -9    brotli 11');
const row = (f) => console.log(`${f.file.padEnd(22)}  ${kb(f.raw).padStart(9)}  ${kb(f.gzip).padStart(9)}  ${kb(f.brotli).padStart(9)}`);
// A reader downloads one build: attnviz-relaxed where the browser has relaxed SIMD, else attnviz.
for (const build of ['attnviz', 'attnviz-relaxed']) {
  const files = [`${build}.wasm`, `${build}.js`].map(sizes);
  const code = files.reduce((a, f) => ({ raw: a.raw + f.raw, gzip: a.gzip + f.gzip, brotli: a.brotli + f.brotli }),
    { raw: 0, gzip: 0, brotli: 0 });
  for (const f of [...files, { ...code, file: `${build}: wasm + js` }]) row(f);
  console.log(`budget ${build} wasm + js: raw ${kb(code.raw)} ≤ 1536 KB ${code.raw <= 1536 * KB ? 'met' : 'MISSED'}; ` +
              `brotli ${kb(code.brotli)} ≤ 500 KB ${code.brotli <= 500 * KB ? 'met' : 'MISSED'}`);
}
row(sizes('attnviz.data'));

// [server] --------------------------------------------------------------------------------------
const types = { '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm', '.data': 'application/octet-stream',
                '.ttf': 'font/ttf' };
const server = http.createServer((req, res) => {
  const name = decodeURIComponent(new URL(req.url, 'http://x').pathname).replace(/^\/+/, '') || 'index.html';
  const file = path.join(site, name);
  if (!file.startsWith(site) || !fs.existsSync(file) || fs.statSync(file).isDirectory()) {
    res.writeHead(404);
    res.end();
    return;
  }
  const body = fs.readFileSync(file);
  res.writeHead(200, { 'Content-Type': types[path.extname(file)] || 'application/octet-stream',
                       'Content-Length': body.length, 'Cache-Control': 'max-age=600' });
  res.end(body);
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${server.address().port}/index.html`;

// [first frame] ---------------------------------------------------------------------------------
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--no-first-run', '--disable-background-networking', '--disable-component-update',
         '--disable-sync', '--disable-quic', '--use-angle=swiftshader', '--enable-unsafe-swiftshader'],
});
// performance.now() when index.html sets window.attnvizReady: measured from navigation start.
const recordReady = () => {
  Object.defineProperty(window, 'attnvizReady', {
    configurable: true,
    set(v) { if (v && window.__readyAt === undefined) window.__readyAt = performance.now(); },
    get() { return window.__readyAt !== undefined; },
  });
};
async function firstFrame(page) {
  await page.goto(url);
  await page.waitForFunction(() => window.__readyAt !== undefined, null, { timeout: 120000, polling: 20 });
  return page.evaluate(() => {
    const resources = performance.getEntriesByType('resource');
    const cached = resources.filter((e) => e.transferSize === 0 && e.decodedBodySize > 0).length;
    // When the last of wasm, js and data had arrived: the rest is compiling and the first frame.
    const loaded = Math.max(0, ...resources.filter((e) => /attnviz(-relaxed)?\.(wasm|js|data)$/.test(e.name)).map((e) => e.responseEnd));
    return { ms: window.__readyAt, cached, loaded };
  });
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const newPage = async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  await context.addInitScript(recordReady);
  if (forceSimd128) await context.addInitScript(forceSimd128);
  return [context, await context.newPage()];
};

const cold = [], warm = [], coldLoaded = [], warmLoaded = [];
let warmCached = 0;
for (let i = 0; i < loads; ++i) {
  const [context, page] = await newPage();
  const r = await firstFrame(page);
  cold.push(r.ms);
  coldLoaded.push(r.loaded);
  await context.close();
}
{
  const [context, page] = await newPage();
  await firstFrame(page);  // fills the cache
  for (let i = 0; i < loads; ++i) {
    const r = await firstFrame(page);
    warm.push(r.ms);
    warmLoaded.push(r.loaded);
    warmCached = r.cached;
  }
  await context.close();
}
await browser.close();
server.close();
const ms = (xs) => xs.map((x) => x.toFixed(0)).join(' ');
console.log(`first frame, cold cache: median ${median(cold).toFixed(0)} ms (${ms(cold)})`);
console.log(`first frame, warm cache: median ${median(warm).toFixed(0)} ms (${ms(warm)}; ${warmCached} resources from the cache)`);
console.log(`files in hand (wasm, js, data all arrived): cold median ${median(coldLoaded).toFixed(0)} ms, ` +
            `warm median ${median(warmLoaded).toFixed(0)} ms; the rest is compiling the wasm, starting, and the first frame`);
console.log(`budget first frame warm ≤ 1000 ms: ${median(warm) <= 1000 ? 'met' : 'MISSED'} ` +
            '(SwiftShader: WebGL2 drawn by the CPU)');
