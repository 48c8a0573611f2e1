#!/usr/bin/env node
// figures.mjs: a screenshot of every figure the app draws, and a pixel comparison against an
// earlier set (issue 12's rule: a refactor changes no figure). Every built-in preset × view
// (lines, heatmap, steps) × theme (dark, light), figure-only (panels=0); the model files in
// tests/data/ui_import_*.json through ?import= in the model view (with the panels) and the
// heatmap, lines and Steps views (figure-only), both themes; and a few more with the panels.
//   node tests/browser/figures.mjs SITE_DIR OUT_DIR [--compare REF_DIR] [--only SUBSTRING]
// Each figure is opened from a link in a fresh page (1280 × 800 CSS px, device scale 1; the mouse
// never enters the page), waited for by the app's own state (the map complete, the lines' top-k
// lists ready, fonts loaded, an import parsed), then the canvas is captured until two captures a
// few frames apart are identical, and written to OUT_DIR/NAME.png.
// --compare: each PNG against REF_DIR/NAME.png; a pixel differs when any channel differs by more
// than 8/255; a figure fails when more than 0.5 % of its pixels differ (or its size changed, or
// the reference is missing), and OUT_DIR/NAME.diff.png shows where (red on the faded reference).
// Ends with "figures: N passed, M failed"; exits non-zero on any failure.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { decodePng } from './png.mjs';
import { check, expect, failSetup, finishSuite, openPage, startSuite, state, summary, waitFrames } from './harness.mjs';

const usage = 'usage: node tests/browser/figures.mjs SITE_DIR OUT_DIR [--compare REF_DIR] [--only SUBSTRING]';
const args = process.argv.slice(2);
const positional = [];
let refDir = null, only = null;
for (let i = 0; i < args.length; ++i) {
  if (args[i] === '--compare') refDir = args[++i];
  else if (args[i] === '--only') only = args[++i];
  else positional.push(args[i]);
}
const [siteDir, outDir] = positional;
if (!siteDir || !outDir || positional.length > 2 || (args.includes('--compare') && !refDir) ||
    (args.includes('--only') && !only)) {
  console.error(usage);
  process.exit(2);
}
if (refDir && !fs.existsSync(refDir)) {
  console.error(`figures: no reference folder ${refDir}`);
  process.exit(2);
}

const TOLERANCE = 8;        // per channel, of 255
const MAX_DIFFERING = 0.005;  // fraction of a figure's pixels

const here = path.dirname(fileURLToPath(import.meta.url));
const data = path.resolve(here, '../data');

// [the figures] ------------------------------------------------------------------------------
const presets = ['five-tokens', 'i-am-good', 'i-am-good-cross', 'wo-ai-ni', 'masked-apple', 'cross-rain',
                 'multi-head-rain', 'long-text'];
const views = ['lines', 'heatmap', 'steps'];
const themes = ['dark', 'light'];
// Model files, copied into SITE_DIR/figures-import/ for ?import=; map: the one each view opens.
const imports = [
  { name: 'gpt', file: 'ui_import_gpt.json', map: { heatmap: 'attention:2:3', lines: 'attention:3:2', steps: 'attention:1:4' } },
  { name: 'bert', file: 'ui_import_bert.json', map: { heatmap: 'attention:2:2', lines: 'attention:1:3', steps: 'attention:2:1' } },
  { name: 't5', file: 'ui_import_t5.json',
    map: { model: 'cross_attention:1:1', heatmap: 'cross_attention:2:2', lines: 'decoder_attention:1:2', steps: 'cross_attention:1:1' } },
];
const importViews = ['model', 'heatmap', 'lines', 'steps'];

const cases = [];
for (const preset of presets)
  for (const view of views)
    for (const theme of themes)
      cases.push({ name: `${preset}-${view}-${theme}`, preset, view, theme, panels: 0 });
// The model view (layers × heads thumbnails) is drawn only with the panels: figure-only, a link
// with view=model shows the Steps view of the open map (as of this script's first baseline), kept
// as one figure of its own.
for (const im of imports)
  for (const view of importViews)
    for (const theme of themes)
      cases.push({ name: `import-${im.name}-${view}-${theme}`, import: im, view, theme, panels: view === 'model' ? 1 : 0 });
cases.push({ name: 'import-gpt-model-figure-only-dark', import: imports[0], view: 'model', theme: 'dark', panels: 0 });
// The panels too, for a few figures: the controls, the toolbar, the description.
cases.push({ name: 'panels-i-am-good-lines-dark', preset: 'i-am-good', view: 'lines', theme: 'dark', panels: 1 });
cases.push({ name: 'panels-multi-head-rain-heatmap-light', preset: 'multi-head-rain', view: 'heatmap', theme: 'light', panels: 1 });
cases.push({ name: 'panels-wo-ai-ni-steps-dark', preset: 'wo-ai-ni', view: 'steps', theme: 'dark', panels: 1 });
cases.push({ name: 'panels-long-text-heatmap-dark', preset: 'long-text', view: 'heatmap', theme: 'dark', panels: 1 });
cases.push({ name: 'panels-import-t5-heatmap-dark', import: imports[2], view: 'heatmap', theme: 'dark', panels: 1 });

function linkOf(c, url) {
  if (c.preset) return `${url}#v=1&preset=${c.preset}&view=${c.view}&theme=${c.theme}&panels=${c.panels}`;
  const map = c.import.map[c.view];
  return `${url}?import=figures-import/${c.import.name}.json#v=1&view=${c.view}${map ? `&map=${map}` : ''}` +
         `&theme=${c.theme}&panels=${c.panels}`;
}

// [waiting for a figure] -----------------------------------------------------------------------
// Until predicate(state) holds, polled in the page once a frame's worth of time (no fixed sleep).
async function waitState(page, predicate, what, timeoutMs) {
  try {
    await page.waitForFunction(predicate, null, { timeout: timeoutMs, polling: 50 });
  } catch (e) {
    throw new Error(`timed out waiting for ${what}; state: ${JSON.stringify(summary(await state(page)))}`);
  }
  return state(page);
}

// The figure the link asks for, complete: view, theme and panels as linked, no error, no font
// still loading, the import parsed and its map open, the heatmap's map at 100 %, the lines'
// top-k lists built. long-text (1440 tokens, 8 heads) builds over many frames in software WebGL.
async function waitForFigure(page, c) {
  const timeout = c.preset === 'long-text' ? 240000 : 60000;
  const want = { view: c.view, theme: c.theme, panels: !!c.panels, preset: c.preset || null,
                 map: c.import ? c.import.map[c.view] || null : null };
  const s = await waitState(page, `(() => {
    const want = ${JSON.stringify(want)};
    const s = JSON.parse(Module.UTF8ToString(Module._attnviz_state()));
    if (s.error !== '') return true;  // reported below
    if (s.view !== want.view || s.theme !== want.theme || s.panels !== want.panels) return false;
    if (s.fonts.font_pending) return false;
    if (want.preset && (s.preset !== want.preset || !s.showing_preset)) return false;
    if (!want.preset && (!s.import.active || s.import.load)) return false;
    if (want.map) {
      const [stack, layer, head] = want.map.split(':');
      const st = s.import.stacks[s.import.stack];
      if (!st || st.name !== stack || s.import.layer !== layer - 1 || s.import.head !== head - 1) return false;
    }
    if (s.view === 'heatmap' && s.heatmap.progress !== 1) return false;
    if (s.view === 'lines' && s.lines_ready < 1) return false;
    return true;
  })()`, `${c.name} complete`, timeout);
  expect(s.error === '', `error line: ${s.error}`);
  return s;
}

// Captures the canvas until two captures at least a few frames apart are pixel-identical: the
// figure has stopped changing (the tiles uploaded, the cached lines layer drawn).
async function stableShot(page, timeoutMs) {
  const canvas = page.locator('#canvas');
  const deadline = Date.now() + timeoutMs;
  await waitFrames(page, 3);
  let previous = await canvas.screenshot();
  for (;;) {
    await waitFrames(page, 3);
    const next = await canvas.screenshot();
    if (next.equals(previous) || decodePng(next).data.equals(decodePng(previous).data)) return next;
    if (Date.now() > deadline) throw new Error('the figure kept changing between captures');
    previous = next;
  }
}

// [comparing] ----------------------------------------------------------------------------------
function compareImages(a, b) {
  if (a.width !== b.width || a.height !== b.height) return { sizeMismatch: true, fraction: 1, count: a.width * a.height };
  let count = 0;
  const mask = new Uint8Array(a.width * a.height);
  for (let i = 0, n = a.width * a.height; i < n; ++i) {
    const o = i * 4;
    if (Math.abs(a.data[o] - b.data[o]) > TOLERANCE || Math.abs(a.data[o + 1] - b.data[o + 1]) > TOLERANCE ||
        Math.abs(a.data[o + 2] - b.data[o + 2]) > TOLERANCE || Math.abs(a.data[o + 3] - b.data[o + 3]) > TOLERANCE) {
      mask[i] = 1;
      ++count;
    }
  }
  return { count, fraction: count / (a.width * a.height), mask };
}

const crcTable = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; ++k) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(buffer) {
  let c = 0xffffffff;
  for (const byte of buffer) c = crcTable[(c ^ byte) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
// An 8-bit RGB PNG of width × height from rgb (3 bytes a pixel), unfiltered rows.
function encodePng(width, height, rgb) {
  const chunk = (type, body) => {
    const head = Buffer.alloc(8);
    head.writeUInt32BE(body.length, 0);
    head.write(type, 4, 'latin1');
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), body])), 0);
    return Buffer.concat([head, body, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; ihdr[9] = 2;  // 8 bits, RGB; compression, filter, interlace 0
  const raw = Buffer.alloc(height * (width * 3 + 1));
  for (let y = 0; y < height; ++y) rgb.copy(raw, y * (width * 3 + 1) + 1, y * width * 3, (y + 1) * width * 3);
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr),
                        chunk('IDAT', zlib.deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
}

// The reference faded to a quarter of its contrast, the differing pixels in red.
function diffImage(ref, mask) {
  const rgb = Buffer.alloc(ref.width * ref.height * 3);
  for (let i = 0; i < ref.width * ref.height; ++i) {
    const o = i * 4;
    if (mask[i]) { rgb[i * 3] = 255; rgb[i * 3 + 1] = 0; rgb[i * 3 + 2] = 0; continue; }
    const l = 0.2126 * ref.data[o] + 0.7152 * ref.data[o + 1] + 0.0722 * ref.data[o + 2];
    rgb[i * 3] = rgb[i * 3 + 1] = rgb[i * 3 + 2] = Math.round(160 + l / 4);
  }
  return encodePng(ref.width, ref.height, rgb);
}

// [run] ------------------------------------------------------------------------------------------
const importDir = path.join(siteDir, 'figures-import');
let suite;
try {
  fs.mkdirSync(outDir, { recursive: true });
  fs.mkdirSync(importDir, { recursive: true });
  for (const im of imports) fs.copyFileSync(path.join(data, im.file), path.join(importDir, `${im.name}.json`));
  suite = await startSuite(siteDir, outDir);
} catch (e) {
  failSetup(e);
  fs.rmSync(importDir, { recursive: true, force: true });
  await finishSuite('figures');
}

const selected = cases.filter((c) => !only || c.name.includes(only));
const seen = new Set();
for (const c of selected) {
  await check(c.name, async () => {
    const page = await openPage(suite.browser, linkOf(c, suite.url));
    try {
      const s = await waitForFigure(page, c);
      const png = await stableShot(page, c.preset === 'long-text' ? 120000 : 30000);
      const file = path.join(outDir, `${c.name}.png`);
      fs.writeFileSync(file, png);
      seen.add(`${c.name}.png`);
      const img = decodePng(png);
      expect(img.width === 1280 && img.height === 800, `canvas captured at ${img.width} × ${img.height}`);
      const note = `${s.queries.length}×${s.keys.length} tokens, ${s.heads} head${s.heads > 1 ? 's' : ''}`;
      if (!refDir) return note;
      const refFile = path.join(refDir, `${c.name}.png`);
      expect(fs.existsSync(refFile), `no reference ${refFile}`);
      const ref = decodePng(fs.readFileSync(refFile));
      const d = compareImages(img, ref);
      expect(!d.sizeMismatch, `size ${img.width} × ${img.height}, reference ${ref.width} × ${ref.height}`);
      const pct = `${(100 * d.fraction).toFixed(3)} % of pixels differ (${d.count})`;
      if (d.fraction > MAX_DIFFERING) {
        fs.writeFileSync(path.join(outDir, `${c.name}.diff.png`), diffImage(ref, d.mask));
        throw new Error(`${pct}, limit ${100 * MAX_DIFFERING} %; see ${c.name}.diff.png`);
      }
      return pct;
    } finally {
      await page.context().close();
    }
  });
}
// A reference figure this run no longer draws is a figure lost.
if (refDir && !only) {
  for (const f of fs.readdirSync(refDir).filter((x) => x.endsWith('.png') && !x.endsWith('.diff.png')))
    if (!seen.has(f) && !selected.some((c) => `${c.name}.png` === f))
      await check(`reference ${f}`, async () => { throw new Error('in the reference set but not drawn here'); });
}
fs.rmSync(importDir, { recursive: true, force: true });
await finishSuite('figures');
