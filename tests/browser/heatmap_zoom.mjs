#!/usr/bin/env node
// heatmap_zoom.mjs: the heatmap at scale (web/ui/heatmap_view.cpp, core/figure/display_map.hpp) in
// headless Chromium: wheel zoom about the cursor, labels once cells are readable, numbers in
// big cells, drag to pan, double-click and "Fit" to reset, ctrl + wheel (a pinch) in a
// figure-only page while the plain wheel is left to the page, a two-finger touch pinch about its
// centre and a two-finger pan (CDP touch events), and T = 8192 with 8 heads: the
// map fills in progressively to 100 % with the memory it states, and zooms to labelled cells.
//   node tests/browser/heatmap_zoom.mjs SITE_DIR ARTIFACT_DIR
// Ends with "heatmap-zoom: N passed, M failed"; exits non-zero on any failure.
import {
  check, clickWidget, consoleErrors, cssScale, expect, finishSuite, moveAway, openPage, shot, startSuiteOrEnd,
  state, until, waitFrames,
} from './harness.mjs';
import { distinctColors } from './png.mjs';

const [siteDir, artifacts] = process.argv.slice(2);
if (!siteDir || !artifacts) {
  console.error('usage: node tests/browser/heatmap_zoom.mjs SITE_DIR ARTIFACT_DIR');
  process.exit(2);
}

const tokens = (n) => Array.from({ length: n }, (_, i) => `t${i}`);

// A message as the parent page would post it (web/state/link_state.cpp handle_message), sent straight
// to the app's hook; returns the reply.
async function message(page, msg) {
  const reply = await page.evaluate((m) => Module.ccall('attnviz_message', 'string', ['string'], [JSON.stringify(m)]), msg);
  return reply ? JSON.parse(reply) : null;
}

// The map coordinate (key, query) under a point of the grid, from the state.
const mapAt = (s, x, y) => [s.heatmap.view_x + (x - s.grid[0]) / s.heatmap.cell, s.heatmap.view_y + (y - s.grid[1]) / s.heatmap.cell];

// Wheel notches at app pixel (x, y); negative dy zooms in. Optional modifier held down.
async function wheelAt(page, x, y, dy, times, modifier) {
  const k = await cssScale(page);
  await page.mouse.move(x / k, y / k);
  if (modifier) await page.keyboard.down(modifier);
  for (let i = 0; i < times; ++i) {
    await page.mouse.wheel(0, dy);
    await waitFrames(page, 2);
  }
  if (modifier) await page.keyboard.up(modifier);
  await waitFrames(page, 2);
}

const { browser, url } = await startSuiteOrEnd('heatmap-zoom', siteDir, artifacts);
let page;

await check('300 tokens, 4 heads, masked: the whole map, every n-th label, complete', async () => {
  page = await openPage(browser, url);
  const r1 = await message(page, { type: 'attnviz:set-scene', id: 1, scene: { kind: 'masked', tokens: tokens(300), d_model: 64, heads: 4, weights: { seed: 3 } } });
  expect(r1 && r1.type === 'attnviz:ok', `set-scene: ${JSON.stringify(r1)}`);
  const r2 = await message(page, { type: 'attnviz:set-view', id: 2, view: 'heatmap', head: 2 });
  expect(r2 && r2.type === 'attnviz:ok', `set-view: ${JSON.stringify(r2)}`);
  await until(page, (x) => x.view === 'heatmap' && x.heatmap.progress === 1 && x.grid[2] > 0, 'the map complete');
  await waitFrames(page, 2);  // the tiles are uploaded when the frame that completed the map draws
  const s = await state(page);
  expect(s.heatmap.zoom === 1 && s.heatmap.rows[0] === 0 && s.heatmap.rows[1] === 300 && s.heatmap.cols[1] === 300,
         `whole map: ${JSON.stringify(s.heatmap)}`);
  expect(s.heatmap.labels_q > 5 && s.heatmap.labels_q < 300, `every n-th query label: ${s.heatmap.labels_q}`);
  expect(s.heatmap.numbers === 0, 'numbers in tiny cells');
  expect(s.heatmap.display_bytes >= 300 * 300 && s.heatmap.display_bytes < 300 * 300 * 1.4,
         `display bytes ${s.heatmap.display_bytes}: one byte a cell and a pyramid`);
  expect(s.heatmap.tiles >= 1 && s.heatmap.gpu_bytes === s.heatmap.tiles * 65536, `tiles ${s.heatmap.tiles}`);
  const img = await shot(page, 'z1-whole-300.png');
  expect(distinctColors(img, s.grid) > 3, 'the heatmap is blank');
  return `${s.heatmap.labels_q} row labels, level ${s.heatmap.level}, ${s.heatmap.tiles} tiles`;
});

let zoomed;
await check('wheel zooms about the cursor; labels of every visible row; numbers once cells are big', async () => {
  let s = await state(page);
  const x = s.grid[0] + s.grid[2] * 0.3, y = s.grid[1] + s.grid[3] * 0.6;
  const before = mapAt(s, x, y);
  await wheelAt(page, x, y, -300, 4);
  s = await state(page);
  expect(s.heatmap.zoom > 4, `zoom ${s.heatmap.zoom}`);
  const after = mapAt(s, x, y);
  expect(Math.abs(after[0] - before[0]) < 0.5 && Math.abs(after[1] - before[1]) < 0.5,
         `the cell under the cursor moved: ${before} → ${after}`);
  const rows = s.heatmap.rows[1] - s.heatmap.rows[0];
  expect(rows < 80 && s.heatmap.rows[0] > 0, `visible rows ${s.heatmap.rows}`);
  expect(s.heatmap.labels_q >= rows - 1, `${s.heatmap.labels_q} labels for ${rows} visible rows (cell ${s.heatmap.cell})`);
  expect(s.heatmap.level === 0, `level ${s.heatmap.level}`);
  await shot(page, 'z2-zoomed-labels.png');
  await wheelAt(page, x, y, -300, 6);
  s = await state(page);
  expect(s.heatmap.zoom <= s.heatmap.max_zoom + 1e-3, `zoom ${s.heatmap.zoom} beyond ${s.heatmap.max_zoom}`);
  expect(s.heatmap.numbers > 0, `no numbers at cell ${s.heatmap.cell}`);
  const img = await shot(page, 'z3-zoomed-numbers.png');
  expect(distinctColors(img, s.grid) > 3, 'the zoomed heatmap is blank');
  zoomed = s;
  return `zoom ${s.heatmap.zoom.toFixed(1)}, rows ${s.heatmap.rows}, ${s.heatmap.numbers} numbers`;
});

await check('drag pans the map; tooltip of a cell', async () => {
  let s = zoomed;
  const k = await cssScale(page);
  const cx = (s.grid[0] + s.grid[2] / 2) / k, cy = (s.grid[1] + s.grid[3] / 2) / k;
  await page.mouse.move(cx, cy);
  await page.mouse.down();
  for (let i = 1; i <= 5; ++i) { await page.mouse.move(cx + 40 * i, cy + 20 * i); await waitFrames(page, 1); }
  await page.mouse.up();
  await waitFrames(page, 3);
  s = await state(page);
  const dx = s.heatmap.view_x - zoomed.heatmap.view_x, dy = s.heatmap.view_y - zoomed.heatmap.view_y;
  const want = 200 * k / s.heatmap.cell;
  expect(Math.abs(dx + want) < 0.6 && Math.abs(dy + want / 2) < 0.6, `panned by ${dx}, ${dy}; expected ${-want}, ${-want / 2}`);
  expect(s.heatmap.zoom === zoomed.heatmap.zoom, 'the drag zoomed');
  await waitFrames(page, 4);
  await shot(page, 'z4-panned-tooltip.png');
  return `view moved ${dx.toFixed(2)}, ${dy.toFixed(2)} cells`;
});

await check('double-click and the Fit button show the whole map again', async () => {
  let s = await state(page);
  const k = await cssScale(page);
  // ImGui 1.86 samples the button once a frame, and a double click is two presses within 0.3 s
  // of its time: the four events go from inside the page, an animation frame apart (no round
  // trip to the test between them). Where frames are so slow that the presses still end up
  // more than 0.3 s apart, no user could double-click either: the check says so and uses Fit.
  expect(s.heatmap.zoom > 1, `zoomed in before the double-click: ${s.heatmap.zoom}`);
  const x = (s.grid[0] + 20) / k, y = (s.grid[1] + 20) / k;
  await page.mouse.move(x, y);
  await waitFrames(page, 2);
  const gapMs = await page.evaluate(async ([cx, cy]) => {
    const canvas = document.querySelector('canvas');
    const frame = () => new Promise((resolve) => requestAnimationFrame(() => resolve()));
    const send = (type) => canvas.dispatchEvent(new MouseEvent(type, {
      clientX: cx, clientY: cy, button: 0, buttons: type === 'mousedown' ? 1 : 0, bubbles: true, cancelable: true }));
    let first = 0, second = 0;
    for (const type of ['mousedown', 'mouseup', 'mousedown', 'mouseup']) {
      if (type === 'mousedown') (first ? (second = performance.now()) : (first = performance.now()));
      send(type);
      await frame();  // one app frame each: the GLFW backend latches a press until the next frame
    }
    return second - first;
  }, [x, y]);
  let note = '';
  if (gapMs < 250) {
    s = await until(page, (st) => st.heatmap.zoom === 1, `zoom 1 after a double-click (presses ${gapMs.toFixed(0)} ms apart)`, 3000);
    note = `presses ${gapMs.toFixed(0)} ms apart`;
  } else {
    note = `double-click not checked: presses ${gapMs.toFixed(0)} ms apart`;
    await clickWidget(page, 'heatmap.fit');
    s = await until(page, (st) => st.heatmap.zoom === 1, 'zoom 1 after Fit', 3000);
  }
  expect(s.heatmap.view_x === 0 && s.heatmap.view_y === 0 && s.heatmap.rows[1] === 300, `view ${JSON.stringify(s.heatmap)}`);
  await wheelAt(page, s.grid[0] + s.grid[2] * 0.8, s.grid[1] + s.grid[3] * 0.8, -300, 3);
  s = await state(page);
  expect(s.heatmap.zoom > 1 && s.widgets['heatmap.fit'], `zoomed with a Fit button: ${s.heatmap.zoom}`);
  await clickWidget(page, 'heatmap.fit');
  // The frame that takes the click has drawn its button already; the next one leaves it out.
  s = await until(page, (x) => x.heatmap.zoom === 1 && !x.widgets['heatmap.fit'], 'zoom 1 after Fit, and no Fit button');
  expect(!s.widgets['heatmap.fit'], 'Fit still shown at zoom 1');
  await wheelAt(page, s.grid[0] + 10, s.grid[1] + 10, 300, 2);  // zooming out stops at the whole map
  s = await state(page);
  expect(s.heatmap.zoom === 1, `zoom ${s.heatmap.zoom}`);
  return note;
});

await check('figure only: the plain wheel is the page\'s, ctrl + wheel (a pinch) zooms', async () => {
  const p = await openPage(browser, `${url}#v=1&view=heatmap&panels=0`);
  await message(p, { type: 'attnviz:set-scene', id: 1, scene: { tokens: tokens(200), d_model: 32, heads: 2, weights: { seed: 5 } } });
  await message(p, { type: 'attnviz:set-view', id: 2, view: 'heatmap' });
  let s = await until(p, (x) => x.view === 'heatmap' && x.heatmap.progress === 1 && !x.panels, 'figure-only heatmap');
  const x = s.grid[0] + s.grid[2] / 2, y = s.grid[1] + s.grid[3] / 2;
  await wheelAt(p, x, y, -300, 3);
  s = await state(p);
  expect(s.heatmap.zoom === 1, `the plain wheel zoomed a figure-only map: ${s.heatmap.zoom}`);
  await wheelAt(p, x, y, -60, 4, 'Control');
  s = await state(p);
  expect(s.heatmap.zoom > 1.5, `ctrl + wheel did not zoom: ${s.heatmap.zoom}`);
  await shot(p, 'z5-figure-only-pinched.png');
  await p.context().close();
  return `ctrl + wheel → zoom ${s.heatmap.zoom.toFixed(2)}`;
});

// Two touch points through CDP (Input.dispatchTouchEvent), CSS pixels: from `from` to `to`
// ([[x0, y0], [x1, y1]] each) in `steps` moves, then lifted.
async function twoFingers(page, from, to, steps) {
  const cdp = await page.context().newCDPSession(page);
  const points = (f) => f.map(([x, y], id) => ({ x, y, id, radiusX: 4, radiusY: 4, force: 1 }));
  await cdp.send('Input.dispatchTouchEvent', { type: 'touchStart', touchPoints: points(from) });
  await waitFrames(page, 1);
  for (let i = 1; i <= steps; ++i) {
    const t = i / steps;
    const at = from.map(([x, y], n) => [x + (to[n][0] - x) * t, y + (to[n][1] - y) * t]);
    await cdp.send('Input.dispatchTouchEvent', { type: 'touchMove', touchPoints: points(at) });
    await waitFrames(page, 1);
  }
  await cdp.send('Input.dispatchTouchEvent', { type: 'touchEnd', touchPoints: [] });
  await waitFrames(page, 3);
  await cdp.detach();
}

// Touch events that get past the app to the document (the app stops a gesture's at the canvas's
// parent) and whether their default was prevented.
async function countTouches(page) {
  await page.evaluate(() => {
    window.touchSeen = { moves: 0, prevented: 0 };
    if (window.touchListener) return;
    window.touchListener = (e) => { window.touchSeen.moves += 1; if (e.defaultPrevented) window.touchSeen.prevented += 1; };
    document.addEventListener('touchmove', window.touchListener, { passive: true });
  });
}

await check('touch: two fingers pinch the map about their centre and pan it; elsewhere touches stay the page\'s', async () => {
  const p = await openPage(browser, url, { hasTouch: true });
  await message(p, { type: 'attnviz:set-scene', id: 1, scene: { kind: 'masked', tokens: tokens(300), d_model: 64, heads: 4, weights: { seed: 3 } } });
  await message(p, { type: 'attnviz:set-view', id: 2, view: 'heatmap', head: 1 });
  let s = await until(p, (x) => x.view === 'heatmap' && x.heatmap.progress === 1 && x.grid[2] > 0, 'the heatmap');
  expect(s.heatmap.zoom === 1, `zoom ${s.heatmap.zoom} at the start`);
  const k = await cssScale(p);
  // The centre off the middle, so that a zoom about the wrong point shows.
  const cx = s.grid[0] + s.grid[2] * 0.35, cy = s.grid[1] + s.grid[3] * 0.6;
  const before = mapAt(s, cx, cy);
  const c = [cx / k, cy / k], d0 = 20, d1 = 60;  // fingers 40 → 120 CSS px apart: ×3
  await countTouches(p);
  await twoFingers(p, [[c[0] - d0, c[1]], [c[0] + d0, c[1]]], [[c[0] - d1, c[1]], [c[0] + d1, c[1]]], 8);
  s = await state(p);
  expect(Math.abs(s.heatmap.zoom - 3) < 0.15, `zoom ${s.heatmap.zoom} after spreading two fingers ×3`);
  const after = mapAt(s, cx, cy);
  expect(Math.abs(after[0] - before[0]) < 0.5 && Math.abs(after[1] - before[1]) < 0.5,
         `the cell under the pinch centre moved: ${before.map((v) => v.toFixed(2))} → ${after.map((v) => v.toFixed(2))}`);
  let seen = await p.evaluate(() => window.touchSeen);
  expect(seen.moves === 0, `${seen.moves} of the pinch's touch moves reached the page`);
  await shot(p, 'z5b-touch-pinched.png');
  // Both fingers move together: the map follows them, the zoom stays.
  const pinched = s;
  await twoFingers(p, [[c[0] - 30, c[1]], [c[0] + 30, c[1]]], [[c[0] - 30 + 60, c[1] + 30], [c[0] + 30 + 60, c[1] + 30]], 6);
  s = await state(p);
  const dx = s.heatmap.view_x - pinched.heatmap.view_x, dy = s.heatmap.view_y - pinched.heatmap.view_y;
  const want = 60 * k / s.heatmap.cell;
  expect(Math.abs(s.heatmap.zoom - pinched.heatmap.zoom) < 1e-3, `the pan zoomed: ${pinched.heatmap.zoom} → ${s.heatmap.zoom}`);
  expect(Math.abs(dx + want) < 0.3 && Math.abs(dy + want / 2) < 0.3, `panned by ${dx.toFixed(2)}, ${dy.toFixed(2)}; expected ${(-want).toFixed(2)}, ${(-want / 2).toFixed(2)}`);
  // Two fingers that land beside the map (the side panel) are the page's: nothing zooms.
  await countTouches(p);
  const px = 40 / k, py = 400 / k;
  await twoFingers(p, [[px - 10, py], [px + 10, py]], [[px - 30, py], [px + 30, py]], 4);
  s = await state(p);
  seen = await p.evaluate(() => window.touchSeen);
  expect(Math.abs(s.heatmap.zoom - pinched.heatmap.zoom) < 1e-3, `a pinch beside the map zoomed it: ${s.heatmap.zoom}`);
  expect(seen.moves > 0 && seen.prevented === 0, `beside the map: ${JSON.stringify(seen)}`);
  // Another view: the pinch is the page's too.
  await message(p, { type: 'attnviz:set-view', id: 3, view: 'lines' });
  await until(p, (x) => x.view === 'lines', 'the lines view');
  await countTouches(p);
  await twoFingers(p, [[c[0] - d0, c[1]], [c[0] + d0, c[1]]], [[c[0] - d1, c[1]], [c[0] + d1, c[1]]], 4);
  seen = await p.evaluate(() => window.touchSeen);
  expect(seen.moves > 0 && seen.prevented === 0, `lines view: ${JSON.stringify(seen)}`);
  await p.context().close();
  return `pinch ×3 → zoom ${pinched.heatmap.zoom.toFixed(2)}, centre cell kept; pan ${dx.toFixed(2)}, ${dy.toFixed(2)} cells`;
});

await check('T = 8192, 8 heads: the map fills in to 100 % with its memory stated, then zooms to labels', async () => {
  const t0 = Date.now();
  const r = await message(page, { type: 'attnviz:set-scene', id: 3, scene: { tokens: tokens(8192), d_model: 512, heads: 8, weights: { seed: 1 } } });
  expect(r && r.type === 'attnviz:ok', `set-scene: ${JSON.stringify(r).slice(0, 300)}`);
  const computed = Date.now() - t0;
  await message(page, { type: 'attnviz:set-view', id: 4, view: 'heatmap', head: 4 });
  let s = await until(page, (x) => x.view === 'heatmap' && x.heatmap.progress > 0 && x.heatmap.progress < 1, 'the map filling in', 60000);
  const partial = await shot(page, 'z6-8192-filling.png');
  const seen = [s.heatmap.progress];
  const t1 = Date.now();
  s = await until(page, (x) => { seen.push(x.heatmap.progress); return x.heatmap.progress === 1; }, 'the map complete', 300000);
  const filled = Date.now() - t1;
  expect(seen.every((v, i) => i === 0 || v >= seen[i - 1]), 'progress went back');
  expect(s.error === '' && s.queries.length === 8192 && s.heads === 8, `error "${s.error}"`);
  expect(s.heatmap.display_bytes < 100e6, `display ${s.heatmap.display_bytes} bytes`);
  expect(s.heatmap.trace_bytes < 200e6, `trace ${s.heatmap.trace_bytes} bytes: more than the long trace should hold`);
  const heap = await page.evaluate(() => Module.HEAPU8.length);
  // 8 heads × 8192² floats would be 2 GB: the heap stays far below.
  expect(heap < 1.2e9, `wasm heap ${heap}`);
  const mem = await page.evaluate(() => (performance.memory ? performance.memory.usedJSHeapSize : 0));
  expect(s.heatmap.level > 0 && s.heatmap.tiles <= 96, `level ${s.heatmap.level}, tiles ${s.heatmap.tiles}`);
  await moveAway(page);
  const img = await shot(page, 'z7-8192-whole.png');
  expect(distinctColors(img, s.grid) >= 1, 'blank');
  expect(consoleErrors.length === 0, `console errors: ${consoleErrors.join(' | ')}`);
  // Zoom far into the middle: labels and the finest level.
  const x = s.grid[0] + s.grid[2] * 0.5, y = s.grid[1] + s.grid[3] * 0.5;
  for (let i = 0; i < 8 && (await state(page)).heatmap.cell < 20; ++i) await wheelAt(page, x, y, -500, 2);
  s = await state(page);
  expect(s.heatmap.level === 0 && s.heatmap.labels_q >= 10 && s.heatmap.labels_k >= 5,
         `zoomed: level ${s.heatmap.level}, labels ${s.heatmap.labels_q}/${s.heatmap.labels_k}, cell ${s.heatmap.cell}`);
  expect(s.heatmap.rows[0] > 3000 && s.heatmap.rows[1] < 5200, `rows ${s.heatmap.rows}`);
  await shot(page, 'z8-8192-zoomed.png');
  await moveAway(page);
  return `set-scene ${(computed / 1000).toFixed(1)} s, fill ${(filled / 1000).toFixed(1)} s, display ${(s.heatmap.display_bytes / 1e6).toFixed(0)} MB, ` +
         `trace ${(s.heatmap.trace_bytes / 1e6).toFixed(0)} MB, wasm heap ${(heap / 1e6).toFixed(0)} MB, JS heap ${(mem / 1e6).toFixed(0)} MB, ` +
         `partial shot ${partial.width}×${partial.height}`;
});

await finishSuite('heatmap-zoom');
