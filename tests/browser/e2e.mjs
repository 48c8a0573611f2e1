#!/usr/bin/env node
// e2e.mjs: the web build end to end in Debian's headless Chromium (SwiftShader WebGL2).
//   node tests/browser/e2e.mjs SITE_DIR ARTIFACT_DIR
// Serves SITE_DIR with scripts/serve.py on a free port, drives the page like a user (mouse on
// the canvas, keys, text through the page's text field), and checks canvas pixels from
// screenshots (kept in ARTIFACT_DIR) together with the app state the page exposes
// (Module._attnviz_state, main/test_hook.cpp). Prints one line per check and ends with
// "browser: N passed, M failed"; exits non-zero on any failure.
import path from 'node:path';
import { decodePng, differing, distinctColors, patch, pixel } from './png.mjs';
import {
  artifactDir, cellPatch, check, clickWidget, consoleErrors, currentCheck, cssScale, expect, failSetup, finishSuite,
  looksMasked, luminance, moveAway, openPage, pickPreset, pointAt, requests, shot, spread, startSuite,
  state, summary, until, waitFrames,
} from './harness.mjs';

const [siteDir, artifacts] = process.argv.slice(2);
if (!siteDir || !artifacts) {
  console.error('usage: node tests/browser/e2e.mjs SITE_DIR ARTIFACT_DIR');
  process.exit(2);
}

try {
  const { url, browser } = await startSuite(siteDir, artifacts);
  let page;

  await check('first frame: i-am-good as lines', async () => {
    const t0 = Date.now();
    page = await openPage(browser, url);
    const s = await state(page);
    expect(s.preset === 'i-am-good', `preset ${s.preset}`);
    expect(s.view === 'lines' && s.kind === 'self', `view ${s.view}, kind ${s.kind}`);
    expect(JSON.stringify(s.queries) === '["I","am","good"]', `queries ${s.queries}`);
    expect(s.lines_drawn === 9, `lines drawn ${s.lines_drawn}, want 9`);
    const img = await shot(page, '01-lines.png');
    // The strongest line (I → I, weight 0.98) is drawn in the head colour between the columns.
    const [qx, qy, qw, qh] = s.query_rects[0], [kx] = s.key_rects[0];
    const mid = pixel(img, (qx + qw + kx) / 2, qy + qh / 2);
    expect(spread(mid) > 60 && luminance(mid) > 60, `no line at the I → I midpoint (${(qx + qw + kx) / 2}, ${qy + qh / 2}): ${mid}`);
    expect(distinctColors(img, s.figure) > 8, 'the figure is blank');
    // The first frame needs no lazily loaded font (fonts/cjk-*.ttf).
    const early = requests.filter(([, u]) => u.includes('/fonts/'));
    expect(early.length === 0, `fonts fetched before any CJK text: ${early.map(([, u]) => u)}`);
    // Chromium validates relaxed SIMD: the page loads the build with the fused multiply-add.
    const wasm = requests.filter(([, u]) => u.endsWith('.wasm')).map(([, u]) => path.basename(u));
    expect(s.isa === 'wasm-relaxed-simd' && wasm.join() === 'attnviz-relaxed.wasm', `kernels ${s.isa}, fetched ${wasm}`);
    return `first frame after ${((Date.now() - t0) / 1000).toFixed(1)}s (${s.isa})`;
  });

  await check('a browser without relaxed SIMD gets the SIMD128 build, and the same figure', async () => {
    const first = await state(page);
    const plain = await openPage(browser, url, { initScript: () => { WebAssembly.validate = () => false; } });
    const s = await state(plain);
    const wasm = requests.filter(([c, u]) => c === currentCheck && u.endsWith('.wasm')).map(([, u]) => path.basename(u));
    expect(s.isa === 'wasm-simd128' && wasm.join() === 'attnviz.wasm', `kernels ${s.isa}, fetched ${wasm}`);
    expect(s.lines_drawn === 9 && s.twin === first.twin, `lines ${s.lines_drawn}, twin "${s.twin}" against "${first.twin}"`);
    await shot(plain, '01b-lines-simd128.png');
    await plain.context().close();
    return s.twin;
  });

  await check('every preset loads and draws', async () => {
    let s = await state(page);
    const names = [];
    await clickWidget(page, 'preset');
    s = await until(page, (x) => Object.keys(x.widgets).some((w) => w.startsWith('preset.')), 'the preset list');
    // The seeds' scenes; the live scenes (preset.live.*, a built-in model) are builtin.mjs's.
    const presets = Object.keys(s.widgets).filter((w) => w.startsWith('preset.') && !w.startsWith('preset.live.')).map((w) => w.slice(7));
    await page.keyboard.press('Escape');
    for (const name of presets) {
      await pickPreset(page, name);
      s = await until(page, (x) => x.preset === name, `preset ${name}`);
      await moveAway(page);
      s = await state(page);
      expect(s.error === '', `${name}: ${s.error}`);
      expect(s.lines_drawn > 0, `${name}: no lines`);
      names.push(`${name} (${s.kind}, ${s.queries.length}×${s.keys.length}, ${s.heads}h)`);
      const img = await shot(page, `01-preset-${name}.png`);
      expect(distinctColors(img, s.figure) > 8, `${name}: blank figure`);
    }
    expect(presets.length >= 5, `only ${presets.length} presets`);
    await pickPreset(page, 'i-am-good');
    await until(page, (x) => x.preset === 'i-am-good', 'back to i-am-good');
    await moveAway(page);
    return names.join(', ');
  });

  await check('dragging an embedding value updates the figure', async () => {
    let s = await state(page);
    const before = await shot(page, '01b-before-drag.png');
    const k = await cssScale(page);
    const [x, y, w, h] = s.widgets['emb.0.0'];
    await page.mouse.move((x + w / 2) / k, (y + h / 2) / k);
    await page.mouse.down();
    for (let i = 1; i <= 8; ++i) { await page.mouse.move((x + w / 2) / k + i * 12, (y + h / 2) / k); await waitFrames(page, 1); }
    await page.mouse.up();
    await moveAway(page);
    s = await state(page);
    const after = await shot(page, '01c-after-drag.png');
    const changed = differing(before, after, s.figure);
    expect(changed > 100, `the figure did not change (${changed} pixels)`);
    return `${changed} pixels changed`;
  });

  await check('hovering a token shows only its lines, with weights', async () => {
    await pickPreset(page, 'i-am-good');  // undo the drag
    await moveAway(page);
    let s = await state(page);
    const before = await shot(page, '02a-before-hover.png');
    await pointAt(page, s.query_rects[1]);  // "am"
    s = await until(page, (x) => x.hover && x.hover.side === 'query' && x.hover.index === 1, 'hover on "am"');
    expect(s.lines_drawn === 3, `lines drawn while hovering ${s.lines_drawn}, want 3`);
    const after = await shot(page, '02b-hover-am.png');
    const changed = differing(before, after, s.figure);
    expect(changed > 300, `only ${changed} pixels of the figure changed`);
    // Weights are written to the right of the key column.
    const [kx, ky, kw, kh] = s.key_rects[0];
    const numbers = [kx + kw, ky, 120, kh * 3 + 30];
    expect(differing(before, after, numbers) > 40, 'no weights appeared beside the keys');
    // The I → I line (not a line of "am") is gone.
    const [qx, qy, qw, qh] = s.query_rects[0];
    const mid = pixel(after, (qx + qw + kx) / 2, qy + qh / 2);
    expect(spread(mid) < 40, `the I → I line is still drawn: ${mid}`);
    // Hovering a key shows the lines into it, with the weights beside the queries.
    await pointAt(page, s.key_rects[2]);  // "good"
    s = await until(page, (x) => x.hover && x.hover.side === 'key' && x.hover.index === 2, 'hover on key "good"');
    expect(s.lines_drawn === 3, `lines drawn while hovering a key ${s.lines_drawn}, want 3`);
    const key = await shot(page, '02c-hover-key-good.png');
    const [qx0, qy0] = s.query_rects[2];
    expect(differing(after, key, [qx0 - 140, qy0 - 110, 135, 140]) > 40, 'no weights appeared beside the queries');
    return `${changed} pixels changed`;
  });

  await check('click pins a token, a second click releases it', async () => {
    let s = await state(page);
    await pointAt(page, s.query_rects[2], true);  // "good"
    s = await until(page, (x) => x.pinned && x.pinned.index === 2, 'pin on "good"');
    await moveAway(page);
    s = await until(page, (x) => x.hover === null, 'hover to clear');
    expect(s.pinned && s.pinned.side === 'query' && s.lines_drawn === 3, `after moving away: ${JSON.stringify(summary(s))}`);
    await shot(page, '03-pinned-good.png');
    await pointAt(page, s.query_rects[2], true);
    await moveAway(page);
    s = await until(page, (x) => x.pinned === null && x.hover === null, 'release');
    expect(s.lines_drawn === 9, `lines after release ${s.lines_drawn}`);
  });

  await check('heatmap: colormap cells match the weights', async () => {
    await clickWidget(page, 'view.heatmap');
    const s = await until(page, (x) => x.view === 'heatmap' && x.grid[2] > 0, 'heatmap view');
    await moveAway(page);
    const img = await shot(page, '04-heatmap.png');
    // i-am-good weights: row I = 0.98 0.02 0.01. Viridis: high = yellow, low = dark purple.
    const high = patch(img, cellPatch(s, 0, 0))[0], low = patch(img, cellPatch(s, 0, 2))[0];
    expect(high[0] > 180 && high[1] > 180 && high[2] < 120, `cell (I, I) is not yellow: ${high}`);
    expect(luminance(low) < 60 && low[2] > low[1], `cell (I, good) is not dark purple: ${low}`);
    for (let q = 0; q < 3; ++q)
      for (let k = 0; k < 3; ++k)
        expect(!looksMasked(img, cellPatch(s, q, k)), `self-attention cell (${q}, ${k}) looks masked`);
    // A tooltip with the weight and the score appears over a hovered cell.
    const [gx, gy, gw, gh] = s.grid;
    await pointAt(page, [gx + gw / 6, gy + gh / 2, 1, 1]);  // (am, I)
    const tip = await shot(page, '04b-heatmap-tooltip.png');
    const below = [gx + gw / 6 + 10, gy + gh / 2 + 10, 150, 60];
    expect(differing(img, tip, below) > 200, 'no tooltip next to the pointer');
  });

  await check('masked: the upper triangle is hatched, the lower is not', async () => {
    await clickWidget(page, 'kind.masked');
    const s = await until(page, (x) => x.kind === 'masked', 'masked kind');
    await moveAway(page);
    await waitFrames(page, 2);
    const img = await shot(page, '05-masked-heatmap.png');
    const T = s.queries.length;
    for (let q = 0; q < T; ++q)
      for (let k = 0; k < T; ++k) {
        const masked = looksMasked(img, cellPatch(s, q, k));
        expect(s.allowed[q][k] === (k <= q ? 1 : 0), `allowed[${q}][${k}] = ${s.allowed[q][k]}`);
        expect(masked === (k > q), `cell (${q}, ${k}) ${masked ? 'looks' : 'does not look'} masked`);
      }
    return `${T}×${T}`;
  });

  await check('cross attention: target queries against source keys', async () => {
    await clickWidget(page, 'kind.cross');
    let s = await until(page, (x) => x.kind === 'cross', 'cross kind');
    expect(s.widgets['input.source'], 'no source sentence box');
    await clickWidget(page, 'view.lines');
    s = await until(page, (x) => x.view === 'lines', 'lines view');
    await moveAway(page);
    s = await state(page);
    expect(s.key_rects.length === s.keys.length && s.keys.length > 0, 'keys not laid out');
    expect(s.lines_drawn === s.queries.length * s.keys.length, `lines ${s.lines_drawn}`);
    const img = await shot(page, '06-cross-lines.png');
    expect(distinctColors(img, s.figure) > 8, 'the figure is blank');
    return `${s.queries.length} target × ${s.keys.length} source tokens`;
  });

  await check('typing Chinese and Latin text tokenizes and draws it', async () => {
    await clickWidget(page, 'input.target');
    await waitFrames(page, 3);
    await page.keyboard.press('Control+A');
    await page.keyboard.insertText('我爱你');  // what an IME or a paste delivers
    let s = await until(page, (x) => JSON.stringify(x.queries) === '["我","爱","你"]', 'tokens 我 爱 你');
    await page.keyboard.press('End');
    await page.keyboard.type(' ok');         // ordinary key presses
    s = await until(page, (x) => JSON.stringify(x.queries) === '["我","爱","你","ok"]', 'tokens 我 爱 你 ok');
    s = await until(page, (x) => x.fonts.missing === 0 && !x.fonts.font_pending, 'glyphs baked');
    await moveAway(page);
    const img = await shot(page, '07-chinese-lines.png');
    // Each CJK label has ink: many text pixels inside its token box.
    for (let i = 0; i < 3; ++i) {
      const px = patch(img, s.query_rects[i]);
      const bright = px.filter((p) => luminance(p) > 150).length;
      expect(bright > 12, `query "${s.queries[i]}" has no visible glyph (${bright} bright pixels)`);
    }
    await clickWidget(page, 'view.heatmap');
    await until(page, (x) => x.view === 'heatmap', 'heatmap');
    await moveAway(page);
    await shot(page, '08-chinese-heatmap.png');
  });

  await check('a rare CJK character loads the bigger font on demand', async () => {
    await clickWidget(page, 'view.lines');
    await until(page, (x) => x.view === 'lines', 'lines');
    await clickWidget(page, 'input.target');
    await waitFrames(page, 3);
    await page.keyboard.press('End');
    await page.keyboard.insertText(' 鬱');  // in neither the presets' subset nor GB2312
    let s = await until(page, (x) => x.queries.includes('鬱'), 'token 鬱');
    s = await until(page, (x) => x.fonts.missing === 0 && !x.fonts.font_pending, 'the glyph', 60000);
    const fetched = requests.filter(([, u]) => u.includes('/fonts/')).map(([, u]) => u.split('/').pop());
    expect(fetched.includes('cjk-full.ttf'), `fonts fetched: ${fetched}`);
    await moveAway(page);
    const img = await shot(page, '08b-rare-glyph.png');
    const i = s.queries.indexOf('鬱');
    const bright = patch(img, s.query_rects[i]).filter((p) => luminance(p) > 150).length;
    expect(bright > 12, `鬱 has no visible glyph (${bright} bright pixels)`);
    return `fetched ${fetched.join(', ')}`;
  });

  await check('bad input shows an error line and keeps the figure', async () => {
    const before = await state(page);
    await clickWidget(page, 'json.open');
    await until(page, (x) => x.widgets['json.text'], 'the scene JSON box');
    await clickWidget(page, 'json.text');
    await waitFrames(page, 2);
    await page.keyboard.press('Control+A');
    await page.keyboard.insertText('{"tokens": ["a", "b"], "heads": 3, "d_model": ');  // cut short
    await waitFrames(page, 2);
    await clickWidget(page, 'json.load');
    let s = await until(page, (x) => x.error !== '', 'an error');
    expect(JSON.stringify(s.queries) === JSON.stringify(before.queries), 'the figure changed');
    await shot(page, '09a-bad-json.png');
    await clickWidget(page, 'json.close');
    s = await until(page, (x) => !x.widgets['json.text'], 'the popup to close');
    await moveAway(page);
    const img = await shot(page, '09b-bad-input-figure.png');
    expect(distinctColors(img, s.grid) > 3, 'the heatmap went blank');
    expect(!looksMasked(img, cellPatch(s, 0, 0)), 'the first cell is not drawn');
    return `error: ${s.error}`;
  });

  await check('light theme', async () => {
    await clickWidget(page, 'theme');
    const s = await until(page, (x) => x.theme === 'light', 'light theme');
    await moveAway(page);
    await waitFrames(page, 2);
    const img = await shot(page, '10-light-with-error-line.png');
    const corner = pixel(img, s.figure[0] + s.figure[2] - 20, s.figure[1] + s.figure[3] - 20);
    expect(luminance(corner) > 200, `figure background is not light: ${corner}`);
    await clickWidget(page, 'view.lines');
    await until(page, (x) => x.view === 'lines', 'lines');
    await moveAway(page);
    await shot(page, '11-light-lines.png');
  });

  await check('steps: the pipeline for self, masked and cross; hovering a number explains it', async () => {
    await pickPreset(page, 'i-am-good');
    await clickWidget(page, 'kind.self');
    await until(page, (x) => x.kind === 'self', 'self kind');
    await clickWidget(page, 'view.steps');
    let s = await until(page, (x) => x.view === 'steps' && x.steps.scores && x.steps.weights, 'steps view');
    await moveAway(page);
    const want = ['x', 'q', 'k', 'v', 'scores', 'scaled', 'weights', 'output', 'concat', 'final'];
    for (const w of want) expect(s.steps[w] && s.steps[w][2] > 0, `no "${w}" matrix`);
    // Pipeline order: each matrix starts right of or below the one before it.
    for (let i = 1; i < want.length; ++i) {
      const a = s.steps[want[i - 1]], b = s.steps[want[i]];
      expect(b[1] > a[1] + 1 || b[0] > a[0], `"${want[i]}" is not after "${want[i - 1]}"`);
    }
    const img = await shot(page, '15-steps-self.png');
    expect(distinctColors(img, s.steps.weights) > 3, 'the softmax matrix is blank');
    // Hover the score (I, am): the tooltip and the highlighted row of Q / row of K appear.
    const [gx, gy, gw, gh] = s.steps.scores;
    await pointAt(page, [gx + gw * 0.5, gy + gh / 6, 1, 1]);
    const tip = await shot(page, '15b-steps-hover-score.png');
    const around = [s.figure[0], s.figure[1], s.figure[2], s.figure[3]];
    const changed = differing(img, tip, around);
    expect(changed > 400, `hovering a score changed only ${changed} pixels`);
    expect(differing(img, tip, [s.steps.q[0] - 4, s.steps.q[1] - 4, s.steps.q[2] + 8, s.steps.q[3] + 8]) > 20, 'row of Q not highlighted');
    await moveAway(page);

    await clickWidget(page, 'kind.masked');
    s = await until(page, (x) => x.kind === 'masked' && x.steps.masked, 'masked pipeline');
    await moveAway(page);
    let m = await shot(page, '16-steps-masked.png');
    // The upper-right cell of "+ mask" is hatched grey, the diagonal a colormap colour.
    const [mx, my, mw, mh] = s.steps.masked;
    const T = s.queries.length;
    const cell = (q, k) => [mx + (k + 0.1) * mw / T, my + (q + 0.1) * mh / T, 3, 3];
    expect(patch(m, cell(0, T - 1)).every((p) => spread(p) < 24), 'masked cell (1, T) is not neutral');
    expect(patch(m, cell(0, 0)).some((p) => spread(p) > 40), 'cell (1, 1) has no colormap colour');

    await clickWidget(page, 'kind.cross');
    s = await until(page, (x) => x.kind === 'cross' && x.steps.x_kv, 'cross pipeline');
    await moveAway(page);
    m = await shot(page, '17-steps-cross.png');
    expect(distinctColors(m, s.steps.x_kv) > 3, 'the source matrix is blank');
    await clickWidget(page, 'kind.self');
    await until(page, (x) => x.kind === 'self', 'self kind');
    return `${Object.keys(s.steps).length} matrices in the cross pipeline, ${changed} pixels changed on hover`;
  });

  await check('tiles: FlashAttention a tile at a time (S, m, P, α, ℓ, O), skipped tiles, and O checked against Steps', async () => {
    const p = await openPage(browser, `${url}#v=1&preset=masked-apple&view=steps&tiles=2x2`);
    let s = await until(p, (x) => x.view === 'steps' && x.steps['tiles.map'] && x.steps['tile.s'], 'the tiles mode');
    expect(s.tiles.on && s.tiles.rows === 2 && s.tiles.cols === 2 && s.tiles.step === 0, `tiles ${JSON.stringify(s.tiles)}`);
    await moveAway(p);
    const first = await shot(p, 'tiles-01-first-tile.png');
    for (const part of ['tile.s', 'tile.m', 'tile.p', 'tile.alpha', 'tile.l', 'tile.o'])
      expect(s.steps[part] && distinctColors(first, s.steps[part]) > 2, `"${part}" is missing or blank`);
    expect(/Tile 1 of 4/.test(s.steps_said), `said: ${s.steps_said}`);
    // The map: the first tile coloured, the tiles to come plain; the pseudocode beside it.
    const [mx, my, mw, mh] = s.steps['tiles.map'];
    expect(patch(first, [mx + mw * 0.1, my + mh * 0.1, 3, 3]).some((c) => spread(c) > 40), 'tile (1, 1) has no colour');
    expect(distinctColors(first, s.steps['tiles.code']) > 3, 'the pseudocode is blank');
    // Hover a number of P: the tooltip writes e^(S − m′) out.
    const [px, py, pw, ph] = s.steps['tile.p'];
    await pointAt(p, [px + pw * 0.25, py + ph * 0.75, 1, 1]);
    s = await until(p, (x) => /P = e\^\(S − m′\)/.test(x.steps_said), 'the arithmetic of P');
    const tip = await shot(p, 'tiles-02-hover-p.png');
    expect(differing(first, tip, s.figure) > 300, 'hovering P drew no tooltip');
    await moveAway(p);
    // Next: tile (1, 2) lies above the diagonal: skipped, hatched.
    await clickWidget(p, 'tiles.next');
    s = await until(p, (x) => x.tiles.step === 1 && /skipped/.test(x.steps_said), 'the skipped tile');
    await moveAway(p);
    const skipped = await shot(p, 'tiles-03-skipped.png');
    expect(looksMasked(skipped, s.steps['tile.s']), 'the skipped tile is not hatched');
    await clickWidget(p, 'tiles.next');
    s = await until(p, (x) => x.tiles.step === 2 && x.steps['tile.o_i'], 'the first query tile divided by ℓ');
    // The last step: O against softmax(QKᵀ·scale)V, the largest difference computed.
    for (let i = 0; i < 6; ++i) await clickWidget(p, 'tiles.next');
    s = await until(p, (x) => x.steps['tile.diff'] && /Largest difference/.test(x.steps_said), 'the check');
    const diff = Number(s.steps_said.match(/Largest difference: ([^,]+),/)[1]);
    expect(diff <= 1e-6 && /float rounding only/.test(s.steps_said), `said: ${s.steps_said}`);
    await moveAway(p);
    await shot(p, 'tiles-04-check.png');
    const link = await until(p, (x) => /tiles=2x2/.test(x.link) && /tile_step=7/.test(x.link), 'the link');
    // The same step from its link, in Chinese.
    const zh = await openPage(browser, `${url}#${link.link.replace(/^#/, '')}&lang=zh`.replace('&lang=en', ''));
    s = await until(zh, (x) => x.lang === 'zh' && x.steps['tile.diff'], 'the check, 中文');
    await moveAway(zh);
    await shot(zh, 'tiles-05-check-zh.png');
    expect(s.fonts.missing === 0, `${s.fonts.missing} code points have no glyph`);
    await zh.context().close();
    await p.context().close();
    return `largest difference ${diff}`;
  });

  await check('Q–K space: queries and keys in one plane (PCA, t-SNE), a query\'s lines to its keys, every head; the twin names the nearest keys', async () => {
    const p = await openPage(browser, `${url}#v=1&preset=multi-head-rain&view=qk&head=2`);
    let s = await until(p, (x) => x.view === 'qk' && x.query_rects.length === x.queries.length && x.key_rects.length === x.keys.length, 'the plane');
    expect(/by PCA/.test(s.steps_said) && /r = -?0\.\d+/.test(s.steps_said) && /lies nearest to key/.test(s.steps_said), `said: ${s.steps_said}`);
    await moveAway(p);
    const pca = await shot(p, 'qk-01-pca.png');
    const q = s.query_rects[4];
    expect(distinctColors(pca, [q[0] - 2, q[1] - 2, q[2] + 4, q[3] + 4]) > 1, 'query 5 has no mark');
    // Hover query 5: lines to its keys, and the twin speaks of it.
    await pointAt(p, q);
    s = await until(p, (x) => x.hover && x.hover.side === 'query' && x.hover.index === 4, 'the hovered query');
    const word = s.queries[4].trim();
    s = await until(p, (x) => x.steps_said.includes(`query “${word}” lies nearest`), 'the nearest keys of query 5');
    const hover = await shot(p, 'qk-02-hover-query.png');
    expect(differing(pca, hover, s.figure) > 200, 'hovering a query drew no lines');
    await moveAway(p);
    await clickWidget(p, 'qk.tsne');
    s = await until(p, (x) => /by t-SNE/.test(x.steps_said) && /qk=tsne/.test(x.link), 't-SNE');
    await moveAway(p);
    await shot(p, 'qk-03-tsne.png');
    await clickWidget(p, 'qk.heads');
    s = await until(p, (x) => x.widgets['qk.head.3'], 'every head');
    await moveAway(p);
    await shot(p, 'qk-04-heads.png');
    await pointAt(p, s.widgets['qk.head.3'], true);
    s = await until(p, (x) => x.steps_head === 2 && /by PCA/.test(x.steps_said), 'head 3 opened from the overview');
    await p.context().close();
    return s.steps_said.split('. ').slice(-2).join('. ');
  });

  await check('中文: the language switch translates the UI with the first-frame font; captions in Steps', async () => {
    // A fresh page, so that no lazily loaded CJK font can hide a character missing from cjk-seeds.ttf.
    const p = await openPage(browser, url);
    let s = await state(p);
    expect(s.lang === 'en' && s.showing_preset === true, `lang ${s.lang}, showing_preset ${s.showing_preset}`);
    await clickWidget(p, 'view.steps');
    s = await until(p, (x) => x.view === 'steps' && x.steps.weights, 'steps view');
    await moveAway(p);
    const en = await shot(p, '18a-steps-en.png');
    await clickWidget(p, 'lang');
    s = await until(p, (x) => x.lang === 'zh', 'lang zh');
    await moveAway(p);
    await waitFrames(p, 3);
    s = await state(p);
    const zh = await shot(p, '18-steps-zh.png');
    expect(s.view === 'steps' && s.steps.weights, 'the Steps view is gone');
    expect(distinctColors(zh, s.steps.weights) > 3, 'the softmax matrix is blank in Chinese');
    expect(s.fonts.missing === 0, `${s.fonts.missing} code points have no glyph (boxes)`);
    const fetched = requests.filter(([c, u]) => c === currentCheck && /\/fonts\/cjk-/.test(u));
    expect(fetched.length === 0, `switching the language fetched ${fetched.map(([, u]) => u)}`);
    expect(differing(en, zh, s.widgets['view.steps']) > 30, 'the Steps button label did not change');
    expect(distinctColors(zh, s.widgets['view.heatmap']) > 4, 'no ink on the 热力图 button');
    // Editing an input leaves the preset: the picker says so and hides the description.
    await clickWidget(p, 'kind.masked');
    s = await until(p, (x) => x.kind === 'masked' && x.showing_preset === false, 'custom scene after an edit');
    await moveAway(p);
    await shot(p, '18b-steps-masked-zh-custom.png');
    await clickWidget(p, 'kind.cross');
    s = await until(p, (x) => x.kind === 'cross' && x.steps.x_kv, 'cross pipeline');
    await moveAway(p);
    await shot(p, '18c-steps-cross-zh.png');
    await clickWidget(p, 'kind.self');
    s = await until(p, (x) => x.kind === 'self' && x.showing_preset === true, 'back to the preset');
    await clickWidget(p, 'view.heatmap');
    await until(p, (x) => x.view === 'heatmap', 'heatmap');
    await moveAway(p);
    await shot(p, '18d-heatmap-zh.png');
    await clickWidget(p, 'view.lines');
    await until(p, (x) => x.view === 'lines', 'lines');
    await moveAway(p);
    await shot(p, '18e-lines-zh.png');
    await clickWidget(p, 'lang');
    s = await until(p, (x) => x.lang === 'en', 'back to English');
    await p.close();
    return `${s.fonts.glyphs} glyphs baked, none missing`;
  });

  await check('canvas follows the window size', async () => {
    await page.setViewportSize({ width: 1000, height: 640 });
    const s = await until(page, (x) => Math.abs(x.figure[0] + x.figure[2] - 1000) < 40, 'layout at 1000 px');
    const size = await page.evaluate(() => [document.getElementById('canvas').width, document.getElementById('canvas').height]);
    expect(size[0] === 1000 && size[1] === 640, `canvas ${size}`);
    await shot(page, '12-resized.png');
    return `figure ${Math.round(s.figure[2])}×${Math.round(s.figure[3])}`;
  });
  await page.context().close();

  await check('high-DPI: devicePixelRatio 2 doubles the framebuffer and the UI scale', async () => {
    const hi = await openPage(browser, url, { viewport: { width: 960, height: 600 }, deviceScaleFactor: 2 });
    const s = await state(hi);
    const size = await hi.evaluate(() => [document.getElementById('canvas').width, document.getElementById('canvas').height]);
    expect(size[0] === 1920 && size[1] === 1200, `canvas ${size}, want 1920×1200`);
    expect(s.ui_scale === 2, `ui scale ${s.ui_scale}`);
    await clickWidget(hi, 'view.heatmap');
    await until(hi, (x) => x.view === 'heatmap', 'heatmap');
    await moveAway(hi);
    const img = await shot(hi, '13-dpr2-heatmap.png');
    expect(img.width === 1920, `screenshot width ${img.width}`);
    await hi.context().close();
  });

  await check('without WebGL2 the page says so instead of a blank canvas', async () => {
    const context = await browser.newContext({ viewport: { width: 800, height: 500 } });
    await context.addInitScript(() => {
      const original = HTMLCanvasElement.prototype.getContext;
      HTMLCanvasElement.prototype.getContext = function (kind, ...rest) {
        return kind === 'webgl2' ? null : original.call(this, kind, ...rest);
      };
    });
    const p = await context.newPage();
    await p.goto(url);
    await p.waitForSelector('#problem', { state: 'visible', timeout: 10000 });
    const text = await p.textContent('#problem');
    expect(/WebGL2/.test(text), `message: ${text}`);
    await p.screenshot({ path: path.join(artifactDir, '14-no-webgl2.png') });
    await context.close();
    return text.slice(0, 60) + '…';
  });

  await check('no console errors', async () => {
    expect(consoleErrors.length === 0, consoleErrors.slice(0, 5).join(' | '));
  });
} catch (e) {
  failSetup(e);
}
await finishSuite('browser');
