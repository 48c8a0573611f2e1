#!/usr/bin/env node
// a11y.mjs: the figure for screen readers and keyboards (issue "Phones, touch and assistive
// technology" §2): the accessible twin's table holds the figure's weights (seed 002's printed
// table; a multi-head mean against the heads'), its live summary follows the pin and the
// language; Tab reaches the canvas and leaves it again; the arrow keys move the pinned token
// (Lines) and cell (Heatmap), Enter pins, Escape lets go; axe-core finds no violation on the
// page, the two embed examples and the single file.
//   node tests/browser/a11y.mjs SITE_DIR ARTIFACT_DIR
import { createRequire } from 'node:module';
import {
  check, expect, finishSuite, openPage, startSuiteOrEnd, state, until, waitFrames, shot,
} from './harness.mjs';

const [siteDir, artifacts] = process.argv.slice(2);
if (!siteDir || !artifacts) {
  console.error('usage: node tests/browser/a11y.mjs SITE_DIR ARTIFACT_DIR');
  process.exit(2);
}
const axePath = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
const { browser, url, origin } = await startSuiteOrEnd('a11y', siteDir, artifacts);

// The twin as the page has it: summary, caption, labels and the cells' text.
const twin = (page) => page.evaluate(() => {
  const t = document.querySelector('.attnviz-twin');
  if (!t) return null;
  const table = t.querySelector('table');
  const canvas = document.querySelector('canvas');
  return {
    lang: t.lang,
    summary: t.querySelector('p').textContent,
    live: t.querySelector('p').getAttribute('aria-live'),
    described: canvas.getAttribute('aria-describedby') === t.querySelector('p').id,
    label: canvas.getAttribute('aria-label'),
    caption: table.caption ? table.caption.textContent : '',
    cols: [...table.querySelectorAll('thead th')].slice(1).map((th) => th.textContent),
    rows: [...table.querySelectorAll('tbody tr')].map((tr) => [tr.querySelector('th').textContent,
      ...[...tr.querySelectorAll('td')].map((td) => td.textContent)]),
  };
});
const untilTwin = async (page, predicate, what) => {
  const deadline = Date.now() + 15000;
  let t;
  while (Date.now() < deadline) {
    t = await twin(page);
    if (t && predicate(t)) return t;
    await page.waitForTimeout(80);
  }
  throw new Error(`timed out waiting for ${what}; twin: ${JSON.stringify(t)}`);
};
const press = async (page, key) => { await page.keyboard.press(key); await waitFrames(page, 3); };

await check('the twin\'s table is seed 002\'s printed weights, its summary says the strongest', async () => {
  const page = await openPage(browser, `${url}#v=1&preset=i-am-good-cross&view=lines`);
  const t = await untilTwin(page, (x) => x.rows.length === 3, 'the twin');
  const want = [['I', '0.10', '0.66', '0.24'], ['am', '0.49', '0.49', '0.02'], ['good', '0.16', '0.42', '0.42']];
  expect(JSON.stringify(t.rows) === JSON.stringify(want), `rows ${JSON.stringify(t.rows)}`);
  expect(JSON.stringify(t.cols) === JSON.stringify(['我', '很', '好']), `columns ${t.cols}`);
  expect(t.live === 'polite' && t.described && t.lang === 'en', `live ${t.live}, described ${t.described}, lang ${t.lang}`);
  expect(t.summary === 'Head 1 of 1. The strongest weight: “I” to “很” (0.66).', `summary "${t.summary}"`);
  expect(/^Attention figure\./.test(t.label), `label "${t.label}"`);
  expect(t.caption.startsWith('cross attention weights, head 1 of 1'), `caption "${t.caption}"`);
  await page.context().close();
  return t.summary;
});

await check('a multi-head figure\'s table is the heads\' mean in Lines and the chosen head in the heatmap', async () => {
  const page = await openPage(browser, `${url}#v=1&preset=multi-head-rain&view=heatmap`);
  const s = await state(page);
  const heads = s.heads;
  let t = await untilTwin(page, (x) => x.rows.length > 0, 'the twin');
  expect(t.summary.startsWith(`Head 1 of ${heads}.`), `summary "${t.summary}"`);
  const head1 = t.rows;
  // The same map read through the page's set-view, as the state JSON's heatmap head says.
  await page.evaluate(() => Module.ccall('attnviz_message', 'string', ['string'], [JSON.stringify({ type: 'attnviz:set-view', view: 'lines' })]));
  t = await untilTwin(page, (x) => x.summary.startsWith('The mean'), 'the mean in Lines');
  const mean = t.rows;
  expect(mean.length === head1.length && mean[0].length === head1[0].length, 'shapes differ');
  // The mean of the heads' tables, each read in the heatmap.
  const tables = [];
  for (let h = 0; h < heads; ++h) {
    await page.evaluate((h) => Module.ccall('attnviz_message', 'string', ['string'],
      [JSON.stringify({ type: 'attnviz:set-view', view: 'heatmap', head: h + 1 })]), h);
    tables.push((await untilTwin(page, (x) => x.summary.startsWith(`Head ${h + 1} of`), `head ${h + 1}`)).rows);
  }
  let worst = 0;
  for (let q = 0; q < mean.length; ++q)
    for (let k = 1; k < mean[q].length; ++k) {
      if (mean[q][k] === 'masked') continue;
      const m = tables.reduce((a, tb) => a + Number(tb[q][k]), 0) / heads;
      worst = Math.max(worst, Math.abs(m - Number(mean[q][k])));
    }
  expect(worst <= 0.0101, `the mean differs from the heads' by ${worst}`);  // each shown to 2 decimals: 0.005 + 0.005
  await page.context().close();
  return `${heads} heads, ${mean.length}×${mean[0].length - 1}, largest difference ${worst.toFixed(3)} (rounding)`;
});

await check('Tab reaches the figure and leaves it; arrows move the pin in Lines, Enter pins, Escape lets go', async () => {
  const page = await openPage(browser, `${url}#v=1&preset=i-am-good-cross&view=lines`);
  await press(page, 'Tab');
  expect(await page.evaluate(() => document.activeElement.id === 'canvas'), 'Tab did not reach the canvas');
  await press(page, 'ArrowDown');
  let s = await state(page);
  expect(s.cursor.on && s.hover && s.hover.side === 'query' && s.hover.index === 0, `cursor ${JSON.stringify(s.cursor)} hover ${JSON.stringify(s.hover)}`);
  await press(page, 'ArrowDown');
  await press(page, 'Enter');
  s = await until(page, (x) => x.pinned && x.pinned.index === 1, 'the pin on “am”');
  let t = await untilTwin(page, (x) => x.summary.includes('“am” attends most'), 'the summary of “am”');
  await shot(page, 'keyboard-lines.png');
  await press(page, 'ArrowDown');
  s = await until(page, (x) => x.pinned && x.pinned.side === 'query' && x.pinned.index === 2, 'the pin to follow to “good”');
  await press(page, 'ArrowRight');
  s = await until(page, (x) => x.pinned && x.pinned.side === 'key' && x.pinned.index === 2, 'the pin to cross to “好”');
  t = await untilTwin(page, (x) => x.summary.includes('“好” is attended to most by “good” (0.42)'), 'the summary of “好”');
  await press(page, 'Escape');
  s = await until(page, (x) => !x.pinned && !x.cursor.on, 'Escape to let go');
  await press(page, 'Tab');
  expect(await page.evaluate(() => document.activeElement.id !== 'canvas'), 'Tab is trapped in the canvas');
  await page.context().close();
  return `“${t.summary}”`;
});

await check('in the heatmap the arrows move a cell, Enter pins it (its values stay shown), and the summary says it', async () => {
  const page = await openPage(browser, `${url}#v=1&preset=i-am-good-cross&view=heatmap`);
  await press(page, 'Tab');
  await press(page, 'ArrowRight');
  await press(page, 'ArrowRight');
  await press(page, 'ArrowDown');
  let s = await state(page);
  expect(s.cursor.on && s.cursor.q === 1 && s.cursor.k === 1, `cursor ${JSON.stringify(s.cursor)}`);
  await press(page, 'Enter');
  s = await until(page, (x) => x.pinned_cell[0] === 1 && x.pinned_cell[1] === 1, 'the pinned cell');
  const t = await untilTwin(page, (x) => x.summary.includes('“am” to “很”: 0.49.'), 'the cell in the summary');
  await shot(page, 'keyboard-heatmap.png');
  await press(page, 'Escape');
  s = await until(page, (x) => x.pinned_cell[0] === -1 && !x.cursor.on, 'Escape');
  await page.context().close();
  return `“${t.summary}”`;
});

await check('in Steps the arrows and Page Up/Down walk the numbers, Enter pins one, and the twin says it', async () => {
  const page = await openPage(browser, `${url}#v=1&preset=i-am-good-cross&view=steps`);
  await press(page, 'Tab');
  await press(page, 'ArrowDown');  // the cursor appears on the first step's first number
  let s = await state(page);
  expect(s.cursor.on && s.cursor.step === 0 && s.cursor.q === 0 && s.cursor.k === 0, `cursor ${JSON.stringify(s.cursor)}`);
  for (let i = 0; i < 12; ++i) await press(page, 'PageDown');  // past the last step: clamped to it
  await press(page, 'PageUp');
  s = await state(page);
  const last = s.cursor.step + 1;
  // Find the weights (softmax) step: the twin names its numbers with their tokens.
  let t;
  for (let i = 0; i < last; ++i) {
    t = await twin(page);
    if (/query "I", key "我"/.test(t.summary)) break;
    await press(page, 'PageUp');
  }
  await press(page, 'ArrowRight');
  await press(page, 'ArrowDown');
  await press(page, 'Enter');
  s = await until(page, (x) => x.pinned_step && x.pinned_step[0] >= 0, 'the pinned number');
  t = await untilTwin(page, (x) => /\[2, 2\] = /.test(x.summary) && /query "am", key "很"/.test(x.summary), 'the number in the twin');
  await shot(page, 'keyboard-steps.png');
  await press(page, 'Escape');
  s = await until(page, (x) => x.pinned_step[0] === -1 && !x.cursor.on, 'Escape');
  await page.context().close();
  return `${last} steps; “${t.summary.split('. ').slice(-2).join('. ')}”`;
});

await check('in the tiles mode Page Up/Down step through the tiles, the arrows walk the numbers, and the twin says both', async () => {
  const page = await openPage(browser, `${url}#v=1&preset=masked-apple&view=steps&tiles=2x2`);
  await press(page, 'Tab');
  await press(page, 'PageDown');
  let s = await until(page, (x) => x.tiles.step === 1, 'the second step');
  let t = await untilTwin(page, (x) => /Tile 2 of 4/.test(x.summary) && /skipped/.test(x.summary), 'the skipped tile in the twin');
  await press(page, 'PageDown');
  await press(page, 'PageDown');
  for (let i = 0; i < 4; ++i) await press(page, 'ArrowRight');  // the cursor on, then across S's two columns to m′
  s = await state(page);
  expect(s.tiles.step === 3 && s.cursor.on && s.cursor.k === 3, `tiles ${JSON.stringify(s.tiles)}, cursor ${JSON.stringify(s.cursor)}`);
  t = await untilTwin(page, (x) => /Tile 3 of 4/.test(x.summary) && /m′ = max\(m, rowmax\(S\)\)/.test(x.summary), 'm′ in the twin');
  await shot(page, 'keyboard-tiles.png');
  await press(page, 'PageUp');
  s = await until(page, (x) => x.tiles.step === 2, 'back a step');
  await page.context().close();
  return `“${t.summary}”`;
});

await check('in the model view the arrows move over the thumbnails, Space knocks a head out, Enter opens its map', async () => {
  const page = await openPage(browser, `${url}#v=1&model=tiny-lm&view=model&text=${encodeURIComponent('The cat sat on the mat.')}`,
                              { viewport: { width: 1280, height: 1000 } });
  await until(page, (x) => x.model && x.model.active && !x.model.busy && x.model.figure && x.import && x.import.stacks, 'tiny-lm', 60000);
  await press(page, 'Tab');
  await press(page, 'ArrowDown');
  await press(page, 'ArrowDown');
  await press(page, 'ArrowRight');
  await press(page, 'ArrowRight');
  let s = await state(page);
  expect(s.cursor.on && s.cursor.q === 1 && s.cursor.k === 2, `cursor ${JSON.stringify(s.cursor)}`);
  await press(page, 'Space');
  s = await until(page, (x) => x.model.experiment && x.model.experiment.knockout === '2:3', 'head 2:3 knocked out');
  await shot(page, 'keyboard-model.png');
  await press(page, 'Space');
  s = await until(page, (x) => x.model.experiment.knockout === '', 'head 2:3 restored');
  await press(page, 'Enter');
  s = await until(page, (x) => x.view === 'heatmap' && x.import.layer === 1 && x.import.head === 2, 'the map of layer 2 head 3');
  await page.context().close();
  return 'knocked out 2:3 and restored it; opened its map';
});

await check('in Chinese the twin speaks Chinese', async () => {
  const page = await openPage(browser, `${url}#v=1&preset=i-am-good-cross&view=lines&lang=zh`);
  const t = await untilTwin(page, (x) => x.lang === 'zh', 'the Chinese twin');
  expect(t.summary.startsWith('第 1 个头（共 1 个）。最大的权重'), `summary "${t.summary}"`);
  expect(t.caption.startsWith('交叉注意力权重'), `caption "${t.caption}"`);
  await page.context().close();
  return t.summary;
});

await check('a live model\'s panel results are tables in the twin: the tokens\' probabilities, attribution, the lens', async () => {
  const text = 'The cat sat on the mat. The cat sat on the';
  const page = await openPage(browser, `${url}#v=1&model=tiny-lm&text=${encodeURIComponent(text)}&probs=p&attribution=1&lens=1`);
  const s = await until(page, (x) => x.model.probs && x.model.attribution && x.model.lens && !x.model.busy, 'the three results', 90000);
  const extra = () => page.evaluate(() => [...document.querySelectorAll('.attnviz-twin > div table')].map((table) => ({
    caption: table.caption.textContent,
    cols: [...table.querySelectorAll('thead th')].slice(1).map((th) => th.textContent),
    rows: [...table.querySelectorAll('tbody tr')].map((tr) => [tr.querySelector('th').textContent, ...[...tr.querySelectorAll('td')].map((td) => td.textContent)]),
  })));
  let tables = [];
  for (let i = 0; i < 100 && tables.length < 3; ++i) tables = await extra(), await page.waitForTimeout(80);
  expect(tables.length === 3, `${tables.length} tables: ${tables.map((t) => t.caption)}`);
  const [probs, attribution, lens] = tables;
  const T = s.model.probs.length;
  expect(/^token probabilities/.test(probs.caption) && probs.rows.length === T && probs.cols.join('|') === 'p|surprisal (bits)|rank|likeliest there',
         `probabilities table: ${probs.caption}, ${probs.rows.length} rows, ${probs.cols}`);
  for (let t = 1; t < T; ++t) {
    const [, p, rank] = s.model.probs[t];
    expect(probs.rows[t][1] === `${(100 * p).toFixed(2)}%` && probs.rows[t][3] === String(rank), `row ${t}: ${probs.rows[t]}, state p ${p} rank ${rank}`);
  }
  expect(attribution.rows.length === 4 && attribution.cols.length === 4 &&
         attribution.rows.every((r, l) => r.slice(1).every((v, h) => Math.abs(Number(v) - s.model.attribution.heads[l * 4 + h]) < 6e-4)),
         `attribution table ${JSON.stringify(attribution.rows)}`);
  expect(lens.rows.length === 5 && lens.cols.length === T, `lens table ${lens.rows.length} × ${lens.cols.length}`);
  await page.context().close();
  return `${probs.rows[2].join(' ')}; ${attribution.caption}`;
});

// axe-core's rules (WCAG 2.x A and AA and its best practices) on a page once its figures are up.
async function axe(pageUrl, ready) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  await page.goto(pageUrl);
  await page.waitForFunction(ready, null, { timeout: 90000 });
  await page.waitForTimeout(500);
  await page.addScriptTag({ path: axePath });
  const result = await page.evaluate(async () => {
    const r = await window.axe.run(document);
    return { violations: r.violations.map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`),
             passes: r.passes.length };
  });
  await context.close();
  return result;
}
for (const [name, ready] of [
  ['index.html#v=1&preset=i-am-good-cross&view=lines', () => window.attnvizReady === true && document.querySelector('.attnviz-twin')],
  ['embed-example.html', () => document.querySelectorAll('iframe').length >= 3],
  ['embed-script-example.html', () => document.querySelectorAll('[data-attnviz-ready]').length >= 2 &&
    document.querySelectorAll('.attnviz-twin').length >= 2],
  ['attnviz-single.html#v=1&preset=i-am-good&view=heatmap', () => window.attnvizReady === true && document.querySelector('.attnviz-twin')],
]) {
  await check(`axe-core: no violations on ${name.split('#')[0]}`, async () => {
    const r = await axe(`${origin}/${name}`, ready);
    expect(!r.violations.length, r.violations.join('; '));
    return `${r.passes} rules pass`;
  });
}

await finishSuite('a11y');
