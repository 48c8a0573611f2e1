#!/usr/bin/env node
// lines_scale.mjs: the lines view at thousands of tokens, and the frame-time overlay.
//   node tests/browser/lines_scale.mjs SITE_DIR ARTIFACT_DIR
// A T = 2048 scene (4 heads: a long trace, scene.hpp) arrives through the page's message handler;
// its top-k lists build over many frames while the UI keeps drawing; then each query shows its
// top k keys (k·T·heads lines), the toolbar's top-k slider changes that, hovering a token shows
// only its lines, and the Display menu's "Show frame time" overlay reports a frame time.
import { differing } from './png.mjs';
import {
  check, clickWidget, expect, failSetup, finishSuite, moveAway, openPage, pointAt, shot, startSuite, state, until,
} from './harness.mjs';

const [siteDir, artifacts] = process.argv.slice(2);
if (!siteDir || !artifacts) {
  console.error('usage: node tests/browser/lines_scale.mjs SITE_DIR ARTIFACT_DIR');
  process.exit(2);
}

const T = 2048, HEADS = 4;
const BUDGET = 32768;  // kMaxOverviewLines (web/ui/lines_view.cpp): the overview's strongest lines
const overview = (k) => Math.min(k * T * HEADS, BUDGET);
const words = 'where does each word look when the sentence grows past a page of text'.split(' ');
const scene = {
  tokens: Array.from({ length: T }, (_, i) => words[i % words.length]), d_model: 256, heads: HEADS,
  weights: { seed: 3 }, positional: 'sinusoidal',
};
const send = (page, m) => page.evaluate((msg) => {
  const r = Module.ccall('attnviz_message', 'string', ['string'], [JSON.stringify(msg)]);
  return r ? JSON.parse(r) : null;
}, m);

try {
  const { url, browser } = await startSuite(siteDir, artifacts);
  let page;

  await check(`T = ${T}: loads; the top-k lists build over many frames while the UI keeps drawing`, async () => {
    page = await openPage(browser, url);
    await moveAway(page);
    const reply = await send(page, { type: 'attnviz:set-scene', scene });
    expect(reply && reply.type === 'attnviz:ok', `set-scene: ${JSON.stringify(reply)}`);
    const first = await state(page);
    // The progress as each frame leaves it: read in the page once per animation frame until done.
    const seen = await page.evaluate(async (timeoutMs) => {
      const out = [];
      const deadline = performance.now() + timeoutMs;
      for (;;) {
        const ready = JSON.parse(Module.UTF8ToString(Module._attnviz_state())).lines_ready;
        out.push(ready);
        if (ready >= 1 || performance.now() > deadline) return out;
        await new Promise((r) => requestAnimationFrame(r));
      }
    }, 180000);
    const s = await state(page);
    expect(s.lines_ready >= 1, `not ready after 180 s: ${s.lines_ready}`);
    expect(s.queries.length === T && s.heads === HEADS && s.error === '', `scene ${s.queries.length} × ${s.heads}: ${s.error}`);
    const partial = seen.filter((r) => r > 0 && r < 1);
    expect(partial.length >= 2, `progress seen: ${seen.slice(0, 12).join(', ')}`);
    expect(s.frame - first.frame >= 4, `only ${s.frame - first.frame} frames while building`);
    return `${s.frame - first.frame} frames while building, progress seen at ${partial.length} frames`;
  });

  await check('auto top-k: 3 lines per query and head; legible compact columns', async () => {
    const s = await state(page);
    expect(s.top_k === 0, `top_k ${s.top_k}`);
    expect(s.lines_drawn === 3 * T * HEADS, `lines ${s.lines_drawn}, want ${3 * T * HEADS}`);
    // Compact rails: one thin row per token, all inside the figure.
    const [fx, fy, fw, fh] = s.figure;
    const last = s.query_rects[T - 1], firstRect = s.query_rects[0];
    expect(firstRect[1] >= fy && last[1] + last[3] <= fy + fh + 1, `query column ${firstRect[1]}…${last[1] + last[3]} outside ${fy}…${fy + fh}`);
    expect(last[3] < 1, `row height ${last[3]}`);
    await shot(page, 'scale-01-overview.png');
    return `${s.lines_drawn} lines`;
  });

  await check('the top-k slider changes the lines drawn', async () => {
    let s = await state(page);
    const r = s.widgets.topk;
    expect(r, `no top-k slider (widgets: ${Object.keys(s.widgets).join(', ')})`);
    // Where ImGui's slider puts value v of 0…32: the grab's centre runs over the frame less a
    // grab (≥ 10 px) and 2 px of padding at each end.
    const at = (v) => {
      const grab = Math.max((r[2] - 4) / 33, 10);
      return [r[0] + 2 + grab / 2 + (v / 32) * (r[2] - 4 - grab) - 1, r[1], 2, r[3]];
    };
    await pointAt(page, at(30), true);
    await moveAway(page);
    s = await until(page, (x) => x.top_k > 3, 'a larger k');
    s = await until(page, (x) => x.lines_drawn === overview(x.top_k), `min(k·T·heads, budget) lines (k ${s.top_k})`, 60000);
    const k = s.top_k;
    await pointAt(page, at(1), true);
    await moveAway(page);
    s = await until(page, (x) => x.top_k >= 1 && x.top_k <= 2 && x.lines_drawn === overview(x.top_k), 'k 1 or 2', 60000);
    expect(s.lines_drawn < 3 * T * HEADS, `lines ${s.lines_drawn}`);
    await shot(page, `scale-02-k${s.top_k}.png`);
    // The small k stays: software WebGL draws 32 K lines slowly (seconds a frame on a busy machine).
    return `k ${k}: ${overview(k)} lines; k ${s.top_k}: ${overview(s.top_k)}`;
  });

  await check('hovering a query or a key shows only its lines, labelled; the figure changes', async () => {
    const before = await shot(page, 'scale-03-before-hover.png');
    let s = await state(page);
    await pointAt(page, s.query_rects[700]);
    s = await until(page, (x) => x.hover && x.hover.side === 'query' && Math.abs(x.hover.index - 700) <= 1, 'query 700 hovered');
    expect(s.lines_drawn === s.top_k * HEADS, `lines while hovering ${s.lines_drawn}, want ${s.top_k * HEADS}`);
    const hovered = await shot(page, 'scale-04-hover-query.png');
    const changed = differing(before, hovered, s.figure);
    expect(changed > 2000, `only ${changed} pixels changed`);
    await pointAt(page, s.key_rects[1500]);
    s = await until(page, (x) => x.hover && x.hover.side === 'key', 'a key hovered');
    expect(s.lines_drawn > 0 && s.lines_drawn <= 32 * HEADS, `lines while hovering a key ${s.lines_drawn}`);
    await shot(page, 'scale-05-hover-key.png');
    await moveAway(page);
    s = await until(page, (x) => !x.hover && x.lines_drawn === overview(x.top_k), 'all lines back');
    return `query ${700}: ${s.top_k * HEADS} lines`;
  });

  await check('shift-click sums queries in a long trace', async () => {
    let s = await state(page);
    await page.keyboard.down('Shift');
    await pointAt(page, s.query_rects[100], true);
    await pointAt(page, s.query_rects[1800], true);
    await page.keyboard.up('Shift');
    await moveAway(page);
    s = await until(page, (x) => x.lines_drawn === 2 * x.top_k * HEADS, 'two queries\' lines');
    await shot(page, 'scale-06-sum.png');
    await pointAt(page, s.query_rects[100], true);  // a plain click pins, clearing the set
    await pointAt(page, s.query_rects[100], true);  // and unpins
    await moveAway(page);
    s = await until(page, (x) => !x.pinned && x.lines_drawn === overview(x.top_k), 'all lines back');
    return `${2 * s.top_k * HEADS} lines from two queries`;
  });

  await check('the frame-time overlay toggles from the Display menu and reports a frame time', async () => {
    let s = await state(page);
    expect(!s.frame_time.shown && !s.widgets.frame_overlay, 'overlay shown by default');
    const off = await shot(page, 'scale-07-no-overlay.png');
    // Opens the Display menu, retrying: a click can land on a slow frame and miss the popup.
    const openDisplay = async () => {
      for (let attempt = 0; attempt < 4; ++attempt) {
        if (!(await state(page)).widgets['display.fps']) await clickWidget(page, 'display');
        try {
          return await until(page, (x) => x.widgets['display.fps'], 'the Display menu', 8000);
        } catch (e) {
          if (attempt === 3) throw e;
          await moveAway(page);
        }
      }
    };
    await openDisplay();
    await clickWidget(page, 'display.fps');
    await page.keyboard.press('Escape');
    await moveAway(page);
    s = await until(page, (x) => x.frame_time.shown && x.widgets.frame_overlay, 'the overlay');
    s = await until(page, (x) => x.frame_time.frames >= 20, '20 frames timed', 180000);
    const ft = s.frame_time;
    expect(ft.frames >= 20 && ft.median_ms > 0 && ft.worst_ms >= ft.median_ms && ft.fps > 0 && ft.cpu_median_ms > 0,
           `frame time ${JSON.stringify(ft)}`);
    const on = await shot(page, 'scale-08-overlay.png');
    const changed = differing(off, on, s.widgets.frame_overlay);
    expect(changed > 200, `the overlay's corner changed only ${changed} pixels`);
    expect(s.link.includes('fps=1'), `link ${s.link}`);
    await openDisplay();
    await clickWidget(page, 'display.fps');
    await page.keyboard.press('Escape');
    s = await until(page, (x) => !x.frame_time.shown && !x.widgets.frame_overlay, 'the overlay gone');
    return `${ft.median_ms.toFixed(1)} ms median, worst ${ft.worst_ms.toFixed(1)}, CPU ${ft.cpu_median_ms.toFixed(1)} ms`;
  });

  await check('a link with fps=1 opens with the overlay; a small preset draws every line', async () => {
    const p = await openPage(browser, `${url}#v=1&preset=i-am-good&fps=1`);
    const s = await until(p, (x) => x.frame_time.shown && x.widgets.frame_overlay && x.frame_time.frames > 5, 'the overlay', 60000);
    expect(s.lines_drawn === 9 && s.top_k === 0, `lines ${s.lines_drawn}`);
    await shot(p, 'scale-09-small-with-overlay.png');
    await p.context().close();
  });
} catch (e) {
  failSetup(e);
}
await finishSuite('lines-scale');
