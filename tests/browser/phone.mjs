#!/usr/bin/env node
// phone.mjs: the app on phones and tablets (issue "Phones, touch and assistive technology" §1),
// in headless Chromium with touch, at 360×640, 640×360, 390×844, 768×1024 and 1024×768: every
// token of the Lines and Heatmap views inside the figure, no caption over another, the figure
// full width and the controls in a drawer below 700 CSS px, controls at least 40 CSS px tall,
// a finger's drag scrolls the drawer, a tap hovers and pins a token.
//   node tests/browser/phone.mjs SITE_DIR ARTIFACT_DIR
import {
  check, expect, finishSuite, openPage, startSuiteOrEnd, state, until, waitFrames, cssScale, shot,
} from './harness.mjs';

const [siteDir, artifacts] = process.argv.slice(2);
if (!siteDir || !artifacts) {
  console.error('usage: node tests/browser/phone.mjs SITE_DIR ARTIFACT_DIR');
  process.exit(2);
}
const { browser, url } = await startSuiteOrEnd('phone', siteDir, artifacts);
const VIEWPORTS = [[360, 640], [640, 360], [390, 844], [768, 1024], [1024, 768]];
const open = (hash, [width, height]) => openPage(browser, `${url}#${hash}`, { viewport: { width, height }, hasTouch: true });

const inside = (r, box) => r[0] >= box[0] - 0.5 && r[1] >= box[1] - 0.5 && r[0] + r[2] <= box[0] + box[2] + 0.5 &&
  r[1] + r[3] <= box[1] + box[3] + 0.5;
const overlap = (a, b) => a[0] < b[0] + b[2] && b[0] < a[0] + a[2] && a[1] < b[1] + b[3] && b[1] < a[1] + a[3];

// A finger: a tap on an app rectangle (display units), or a drag from one point to another.
async function tap(page, rect) {
  const k = await cssScale(page);
  await page.touchscreen.tap((rect[0] + rect[2] / 2) / k, (rect[1] + rect[3] / 2) / k);
  await waitFrames(page, 4);
}
async function tapWidget(page, name) {
  const s = await state(page);
  expect(s.widgets[name], `no widget "${name}" (have: ${Object.keys(s.widgets).join(', ')})`);
  await tap(page, s.widgets[name]);
}
async function drag(page, x, y0, y1) {
  const client = await page.context().newCDPSession(page);
  const point = (y) => [{ x, y, id: 1 }];
  await client.send('Input.dispatchTouchEvent', { type: 'touchStart', touchPoints: point(y0) });
  for (let i = 1; i <= 12; ++i) {
    await client.send('Input.dispatchTouchEvent', { type: 'touchMove', touchPoints: point(y0 + (y1 - y0) * i / 12) });
    await waitFrames(page, 1);
  }
  await client.send('Input.dispatchTouchEvent', { type: 'touchEnd', touchPoints: [] });
  await waitFrames(page, 3);
}

// Every token box inside the figure, and no two captions overlapping.
function layoutProblems(s) {
  const problems = [];
  s.query_rects.forEach((r, i) => { if (!inside(r, s.figure)) problems.push(`query ${i} ${r.map(Math.round)} outside ${s.figure}`); });
  s.key_rects.forEach((r, i) => { if (!inside(r, s.figure)) problems.push(`key ${i} ${r.map(Math.round)} outside ${s.figure}`); });
  const captions = Object.entries(s.widgets).filter(([name]) => name.startsWith('caption.'));
  for (let i = 0; i < captions.length; ++i)
    for (let j = i + 1; j < captions.length; ++j)
      if (overlap(captions[i][1], captions[j][1])) problems.push(`${captions[i][0]} overlaps ${captions[j][0]}`);
  return { problems, captions: captions.length };
}

for (const size of VIEWPORTS) {
  const [w, h] = size;
  const narrow = w < 700;
  await check(`${w}×${h}: every token and the frame-time overlay inside the figure, no caption over another${narrow ? ', the figure full width' : ''}`, async () => {
    const notes = [];
    for (const view of ['lines', 'heatmap']) {
      for (const preset of ['i-am-good-cross', 'multi-head-rain', 'long-text']) {
        const page = await open(`v=1&preset=${preset}&view=${view}&fps=1`, size);  // with the frame-time overlay
        const s = await until(page, (x) => x.widgets.frame_overlay, 'the frame-time overlay');
        await shot(page, `${w}x${h}-${preset}-${view}.png`);
        const { problems, captions } = layoutProblems(s);
        expect(!problems.length, `${preset} ${view}: ${problems.join('; ')}`);
        expect(s.query_rects.length && s.key_rects.length, `${preset} ${view}: no tokens`);
        expect(inside(s.widgets.frame_overlay, s.figure), `${preset} ${view}: the frame-time overlay ${s.widgets.frame_overlay} leaves the figure`);
        const k = s.ui_scale;
        if (narrow) {
          expect(s.widgets['drawer.open'] && !s.widgets.preset, `${preset}: the controls are not in a drawer`);
          expect(s.figure[2] >= w * k - 40 * k, `${preset}: the figure is ${s.figure[2]} wide of ${w * k}`);
        } else {
          expect(s.widgets.preset && !s.widgets['drawer.open'], `${preset}: no side panel at ${w} px`);
        }
        notes.push(`${preset}/${view} ${captions} captions`);
        await page.context().close();
      }
    }
    return notes.join(', ');
  });
}

await check('390×844: the drawer opens over the figure, scrolls under a finger, and closes; its controls are 40 px tall', async () => {
  const page = await open('v=1&preset=i-am-good-cross&view=lines', [390, 844]);
  const k = await cssScale(page);
  await tapWidget(page, 'drawer.open');
  let s = await until(page, (x) => x.widgets['drawer.close'] && x.widgets.preset, 'the drawer');
  await shot(page, 'drawer-open.png');
  expect(s.widgets.preset[0] < 40 * k && s.widgets.preset[2] > 300 * k, `the scene list at ${s.widgets.preset}: not full width`);
  const small = Object.entries(s.widgets).filter(([name, r]) => !name.startsWith('caption.') && r[3] < 40 * k - 0.5);
  expect(!small.length, `controls under 40 CSS px: ${small.map(([n, r]) => `${n} ${(r[3] / k).toFixed(1)}`).join(', ')}`);
  const before = s.widgets['kind.cross'][1];
  await drag(page, 200, 700, 300);
  s = await state(page);
  const moved = before - s.widgets['kind.cross'][1];
  expect(moved > 200 * k, `a 400 px drag scrolled the drawer by ${moved / k} px`);
  expect(s.widgets['drawer.close'] === undefined || s.widgets['drawer.close'][1] < 0, 'the drawer did not scroll its top away');
  await shot(page, 'drawer-scrolled.png');
  await drag(page, 200, 200, 800);
  await drag(page, 200, 200, 800);
  await tapWidget(page, 'drawer.close');
  s = await until(page, (x) => !x.widgets.preset && x.widgets['drawer.open'], 'the drawer to close');
  return `scrolled ${(moved / k).toFixed(0)} px; ${Object.keys(s.widgets).length} widgets after closing`;
});

await check('390×844: the toolbar is one row of 40 px controls; Options holds the view\'s settings', async () => {
  const page = await open('v=1&preset=i-am-good-cross&view=lines', [390, 844]);
  const k = await cssScale(page);
  let s = await state(page);
  const bar = ['drawer.open', 'view.menu', 'view.options', 'export'].map((n) => s.widgets[n]);
  expect(bar.every(Boolean), `toolbar: ${Object.keys(s.widgets)}`);
  expect(bar.every((r) => r[3] >= 40 * k - 0.5), `toolbar heights ${bar.map((r) => r[3] / k)}`);
  expect(bar.every((r) => Math.abs(r[1] - bar[0][1]) < 1), 'the toolbar wrapped');
  await tapWidget(page, 'view.options');
  s = await until(page, (x) => x.widgets.threshold, 'the options popup');
  await shot(page, 'options.png');
  expect(inside(s.widgets.threshold, [0, 0, 390 * k, 844 * k]), 'the threshold slider is off screen');
  await tapWidget(page, 'view.menu');  // the first tap outside the popup closes it
  if (!(await state(page)).widgets['view.heatmap']) await tapWidget(page, 'view.menu');
  s = await until(page, (x) => x.widgets['view.heatmap'], 'the view menu');
  await tapWidget(page, 'view.heatmap');
  s = await until(page, (x) => x.view === 'heatmap', 'the heatmap');
  return 'options and the view menu work by touch';
});

await check('390×844: a tap on a token hovers and pins it; a tap on it again lets go', async () => {
  const page = await open('v=1&preset=i-am-good-cross&view=lines', [390, 844]);
  let s = await state(page);
  await tap(page, s.query_rects[2]);
  s = await until(page, (x) => x.pinned && x.pinned.index === 2, 'the pin');
  expect(s.pinned.side === 'query' && s.hover && s.hover.index === 2, `pinned ${JSON.stringify(s.pinned)} hover ${JSON.stringify(s.hover)}`);
  await shot(page, 'tap-pinned.png');
  await tap(page, s.query_rects[2]);
  s = await until(page, (x) => !x.pinned, 'the pin to go');
  return 'pinned “good”, then released';
});

await check('390×844: a tap on a heatmap cell pins it and its values stay shown; a second tap lets go', async () => {
  const page = await open('v=1&preset=i-am-good-cross&view=heatmap', [390, 844]);
  let s = await state(page);
  const g = s.grid, cell = g[2] / s.keys.length;
  const rect = [g[0] + cell * 1, g[1] + cell * 2, cell, cell];  // query 2 ("good"), key 1 (很)
  await tap(page, rect);
  s = await until(page, (x) => x.pinned_cell[0] === 2 && x.pinned_cell[1] === 1, 'the pinned cell');
  await shot(page, 'tap-cell.png');
  const zoom = s.heatmap.zoom;
  await tap(page, rect);
  s = await until(page, (x) => x.pinned_cell[0] === -1, 'the cell to be let go');
  expect(s.heatmap.zoom === zoom, 'the taps zoomed the map');
  return `pinned (2, 1), then released; twin “${s.twin}”`;
});

await check('390×844: a tap on a text box focuses the text field inside the tap (a phone opens its keyboard), and typing edits the text', async () => {
  const page = await open('v=1&preset=i-am-good-cross&view=lines', [390, 844]);
  await tapWidget(page, 'drawer.open');
  await until(page, (x) => x.widgets['input.target'], 'the drawer');
  // Frames counted by requestAnimationFrame; the focus must come before the next one.
  await page.evaluate(() => {
    window.frames_ = 0;
    const tick = () => { window.frames_ += 1; requestAnimationFrame(tick); };
    requestAnimationFrame(tick);
    window.addEventListener('touchend', () => { window.tapFrame = window.frames_; }, true);
    const field = document.getElementById('attnviz-text');
    field.addEventListener('focus', () => { if (window.focusFrame === undefined) window.focusFrame = window.frames_; });
    window.blurs = 0;
    field.addEventListener('blur', () => { window.blurs += 1; });
  });
  let s = await state(page);
  const r = s.widgets['input.target'];
  await tap(page, [r[0] + r[2] - 12, r[1], 8, r[3]]);  // at the end of the text
  await waitFrames(page, 4);
  const frames = await page.evaluate(() => [window.tapFrame, window.focusFrame, document.activeElement.id, window.blurs]);
  expect(frames[2] === 'attnviz-text', `the focus is on #${frames[2]}`);
  expect(frames[0] === frames[1], `the field took the focus ${frames[1] - frames[0]} frames after the tap`);
  expect(frames[3] === 0, `the field lost the focus ${frames[3]} times (a phone's keyboard would close)`);
  await page.keyboard.type(' too');
  s = await until(page, (x) => x.queries.join(' ').endsWith('too'), 'the typed word in the figure');
  return `focused in the tap's own event; queries now ${s.queries.join(' ')}`;
});

await check('390×844: the tiles mode lays the map, the pseudocode and the tile\'s matrices out down the page, no caption over another', async () => {
  const page = await open('v=1&preset=masked-apple&view=steps&tiles=2x2&tile_step=4', [390, 844]);
  const s = await until(page, (x) => x.steps['tiles.map'] && x.steps['tile.o'], 'the tiles on a phone');
  const map = s.steps['tiles.map'], code = s.steps['tiles.code'];
  expect(code[1] >= map[1] + map[3], `the pseudocode ${code} is not under the map ${map}`);
  expect(map[0] + map[2] <= s.figure[0] + s.figure[2], `the map ${map} leaves the figure ${s.figure}`);
  const captions = Object.entries(s.widgets).filter(([k]) => k.startsWith('caption.')).map(([, r]) => r);
  for (let i = 0; i < captions.length; ++i)
    for (let j = i + 1; j < captions.length; ++j) expect(!overlap(captions[i], captions[j]), `captions ${captions[i]} and ${captions[j]} overlap`);
  await shot(page, 'phone-tiles.png');
  await page.context().close();
  return `${captions.length} captions`;
});

await check('390×844: the Q–K space fits the phone: points and labels inside the figure, a tap on a query pins it, 中文 statements', async () => {
  const page = await open('v=1&preset=masked-apple&view=qk&lang=zh', [390, 844]);
  let s = await until(page, (x) => x.view === 'qk' && x.query_rects.length === 4 && x.lang === 'zh', 'the plane on a phone');
  for (const r of [...s.query_rects, ...s.key_rects]) expect(inside(r, s.figure), `a point ${r} leaves the figure ${s.figure}`);
  const captions = Object.entries(s.widgets).filter(([k]) => k.startsWith('caption.')).map(([, r]) => r);
  for (let i = 0; i < captions.length; ++i) {
    expect(inside(captions[i], s.figure), `caption ${captions[i]} leaves the figure`);
    for (let j = i + 1; j < captions.length; ++j) expect(!overlap(captions[i], captions[j]), `captions ${captions[i]} and ${captions[j]} overlap`);
  }
  await tap(page, s.query_rects[3]);
  s = await until(page, (x) => x.pinned && x.pinned.side === 'query' && x.pinned.index === 3, 'the tapped query pinned');
  expect(/苹果/.test(s.steps_said) && /离键/.test(s.steps_said), `said: ${s.steps_said}`);
  await shot(page, 'phone-qk-zh.png');
  await page.context().close();
  return s.steps_said.slice(-30);
});

await finishSuite('phone');
