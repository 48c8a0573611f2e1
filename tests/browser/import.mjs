#!/usr/bin/env node
// import.mjs: attention imported from a model file (SPEC.md §3) in the web build: the file
// dialog, a drop on the canvas, ?import= in the address, the model view's layers × heads
// thumbnails, opening one in the heatmap / lines / Steps views, aggregation and rollout,
// subwords merged into words, summed attention of several queries, and a bad file.
//   node tests/browser/import.mjs SITE_DIR ARTIFACT_DIR
// Uses tests/data/ui_import_*.json; ?import= files are copied into SITE_DIR/ui-import-test/.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { differing, distinctColors, patch } from './png.mjs';
import {
  cellPatch, check, maxDiff, clickWidget, expect, failSetup, finishSuite, looksMasked, moveAway, openPage, pointAt, shot,
  startSuite, state, until, waitFrames,
} from './harness.mjs';

const [siteDir, artifacts] = process.argv.slice(2);
if (!siteDir || !artifacts) {
  console.error('usage: node tests/browser/import.mjs SITE_DIR ARTIFACT_DIR');
  process.exit(2);
}
const here = path.dirname(fileURLToPath(import.meta.url));
const data = path.resolve(here, '../data');
const file = (name) => path.join(data, name);
const read = (name) => JSON.parse(fs.readFileSync(file(name), 'utf8'));

const zeros = (r, c) => Array.from({ length: r }, () => new Array(c).fill(0));
function meanOf(maps) {
  const out = zeros(maps[0].length, maps[0][0].length);
  for (const m of maps) m.forEach((row, i) => row.forEach((v, j) => { out[i][j] += v / maps.length; }));
  return out;
}
function maxOf(maps) {
  const out = zeros(maps[0].length, maps[0][0].length);
  for (const m of maps) m.forEach((row, i) => row.forEach((v, j) => { out[i][j] = Math.max(out[i][j], v); }));
  return out;
}
// Abnar & Zuidema: per layer the mean over heads, ½A + ½I, rows renormalised, multiplied in order.
function rollout(attention, upTo) {
  const T = attention[0][0].length;
  let acc = null;
  for (let l = 0; l <= upTo; ++l) {
    const a = meanOf(attention[l]).map((row, i) => row.map((v, j) => 0.5 * v + (i === j ? 0.5 : 0)));
    a.forEach((row) => { const s = row.reduce((x, y) => x + y, 0); row.forEach((v, j) => { row[j] = v / s; }); });
    if (!acc) { acc = a; continue; }
    const next = zeros(T, T);
    for (let i = 0; i < T; ++i) for (let j = 0; j < T; ++j) for (let k = 0; k < T; ++k) next[i][j] += a[i][k] * acc[k][j];
    acc = next;
  }
  return acc;
}

async function chooseFile(page, name) {
  await page.setInputFiles('#attnviz-file', file(name));
}

try {
  const { url, browser } = await startSuite(siteDir, artifacts);
  let page;
  const gpt = read('ui_import_gpt.json');

  await check('the file dialog imports a decoder model into the model view', async () => {
    page = await openPage(browser, url);
    const before = await state(page);
    expect(before.widgets['import.open'], 'no "Open model attention…" control');
    await chooseFile(page, 'ui_import_gpt.json');
    const s = await until(page, (x) => x.import.active, 'the import');
    expect(s.view === 'model', `view ${s.view}`);
    expect(s.error === '', `error: ${s.error}`);
    const st = s.import.stacks[0];
    expect(st.layers === 3 && st.heads === 4 && st.T_q === 7, `stack ${JSON.stringify(st)}`);
    expect(st.causal === true && s.kind === 'masked', `causal ${st.causal}, kind ${s.kind}`);
    expect(s.import.model === gpt.model, `model ${s.import.model}`);
    // Tokens shown cleanly: no byte-level "Ġ" left.
    expect(s.queries.length === 7 && !s.queries.some((t) => t.includes('\u0120')), `queries ${JSON.stringify(s.queries)}`);
    return `${st.layers}×${st.heads}, queries ${JSON.stringify(s.queries)}`;
  });

  await check('model view: layers × heads thumbnails, distinct and causally hatched (dark)', async () => {
    await moveAway(page);
    const s = await state(page);
    const img = await shot(page, 'import-01-model-dark.png');
    let thumbs = 0;
    for (let l = 1; l <= 3; ++l)
      for (let h = 1; h <= 4; ++h) {
        const r = s.widgets[`thumb.${l}.${h}`];
        expect(r, `no thumbnail ${l}.${h}`);
        expect(r[2] >= 30, `thumbnail ${l}.${h} is ${r[2]} px`);
        expect(distinctColors(img, r) >= 4, `thumbnail ${l}.${h} is flat`);
        // Top-right cell (query 1, key 7) is above the causal diagonal: hatched, not a colour.
        const c = r[2] / 7;
        expect(looksMasked(img, [r[0] + 6 * c + c * 0.2, r[1] + c * 0.2, c * 0.6, c * 0.6]), `thumbnail ${l}.${h}: upper corner not hatched`);
        ++thumbs;
      }
    // Different heads draw different pictures.
    const a = s.widgets['thumb.1.1'], b = s.widgets['thumb.1.2'];
    const shifted = [b[0], b[1], a[2], a[3]];
    const moved = patch(img, shifted), orig = patch(img, a);
    let diff = 0;
    for (let i = 0; i < orig.length; ++i) diff += Math.abs(orig[i][0] - moved[i][0]) + Math.abs(orig[i][1] - moved[i][1]);
    expect(diff > orig.length * 10, 'heads 1 and 2 of layer 1 look the same');
    return `${thumbs} thumbnails of ${Math.round(a[2])} px`;
  });

  await check('hovering a thumbnail shows a larger preview', async () => {
    const s = await state(page);
    const before = await shot(page, 'import-02-before-hover.png');
    await pointAt(page, s.widgets['thumb.2.3']);
    await waitFrames(page, 3);
    const after = await shot(page, 'import-02-hover.png');
    const fig = s.figure;
    const changed = differing(before, after, fig);
    expect(changed > 160 * 160 * 0.5, `only ${changed} pixels changed under the hover`);
    return `${changed} pixels changed`;
  });

  await check('clicking a thumbnail opens that map in the heatmap with the file\'s numbers', async () => {
    let s = await state(page);
    await pointAt(page, s.widgets['thumb.2.3'], true);
    s = await until(page, (x) => x.view === 'heatmap', 'the heatmap');
    expect(s.import.layer === 1 && s.import.head === 2, `layer ${s.import.layer}, head ${s.import.head}`);
    const d = maxDiff(s.import.shown, gpt.attention[1][2]);
    expect(d < 1e-5, `heatmap differs from attention[1][2] by ${d}`);
    await moveAway(page);
    s = await state(page);
    const img = await shot(page, 'import-03-heatmap.png');
    expect(looksMasked(img, cellPatch(s, 0, 6)), 'cell (1, 7) above the diagonal is not hatched');
    expect(!looksMasked(img, cellPatch(s, 6, 0)), 'cell (7, 1) is hatched');
    return `max |Δ| ${d.toExponential(1)}`;
  });

  await check('the same map in the lines view; shift-click sums queries', async () => {
    await clickWidget(page, 'view.lines');
    await moveAway(page);
    let s = await until(page, (x) => x.view === 'lines', 'the lines view');
    // Only the opened head is visible: one line per allowed (query, key) with a weight > 0.
    const m = gpt.attention[1][2];
    let want = 0;
    m.forEach((row) => row.forEach((v) => { if (v > 0) ++want; }));
    expect(s.heads === 4 && s.lines_drawn === want, `lines ${s.lines_drawn}, want ${want}`);
    const k = (await page.evaluate(() => { const c = document.getElementById('canvas'); return c.width / c.getBoundingClientRect().width; }));
    const at = (r) => [(r[0] + r[2] / 2) / k, (r[1] + r[3] / 2) / k];
    await page.keyboard.down('Shift');
    for (const q of [2, 4]) {
      const [x, y] = at(s.query_rects[q]);
      await page.mouse.click(x, y);
      await waitFrames(page, 2);
    }
    await page.keyboard.up('Shift');
    await moveAway(page);
    s = await until(page, (x) => x.query_set.length === 2, 'two queries in the set');
    const nonzero = (q) => m[q].filter((v) => v > 0).length;
    expect(JSON.stringify(s.query_set) === '[2,4]', `set ${JSON.stringify(s.query_set)}`);
    expect(s.lines_drawn === nonzero(2) + nonzero(4), `lines ${s.lines_drawn}, want ${nonzero(2) + nonzero(4)}`);
    await shot(page, 'import-04-lines-sum.png');
    return `${s.lines_drawn} lines from queries 3 and 5`;
  });

  await check('Steps view of an import shows the weights and says there is no Q/K/V', async () => {
    await clickWidget(page, 'view.steps');
    await moveAway(page);
    const s = await until(page, (x) => x.view === 'steps' && x.widgets['steps.note'], 'the Steps note');
    const img = await shot(page, 'import-05-steps.png');
    expect(distinctColors(img, s.grid) >= 4, 'no weights drawn under the note');
    return 'note + weights';
  });

  await check('aggregation: mean and max over heads and layers, then rollout', async () => {
    await clickWidget(page, 'view.heatmap');
    await clickWidget(page, 'import.show.aggregate');
    let s = await until(page, (x) => x.import.show === 'aggregate', 'the aggregate');
    const all = gpt.attention.flat();
    let d = maxDiff(s.import.shown, meanOf(all));
    expect(d < 1e-4, `mean of 12 maps differs by ${d}`);
    await moveAway(page);
    const meanImg = await shot(page, 'import-06-mean.png');
    // Leave layer 1 out.
    await clickWidget(page, 'import.layers.1');
    s = await until(page, (x) => x.import.layers_on[0] === false, 'layer 1 off');
    d = maxDiff(s.import.shown, meanOf(gpt.attention.slice(1).flat()));
    expect(d < 1e-4, `mean of layers 2-3 differs by ${d}`);
    await clickWidget(page, 'import.reduce.max');
    s = await until(page, (x) => x.import.reduce === 'max', 'max');
    d = maxDiff(s.import.shown, maxOf(gpt.attention.slice(1).flat()));
    expect(d < 1e-4, `max of layers 2-3 differs by ${d}`);
    await clickWidget(page, 'import.reduce.mean');
    await clickWidget(page, 'import.show.rollout');
    s = await until(page, (x) => x.import.show === 'rollout' && x.import.reduce === 'mean', 'the rollout');
    const want = rollout(gpt.attention, s.import.layer);
    d = maxDiff(s.import.shown, want);
    expect(d < 1e-4, `rollout to layer ${s.import.layer + 1} differs by ${d}`);
    await moveAway(page);
    const rollImg = await shot(page, 'import-07-rollout.png');
    const changed = differing(meanImg, rollImg, s.grid);
    expect(changed > 500, `rollout looks like the mean (${changed} pixels differ)`);
    return `rollout to layer ${s.import.layer + 1}: max |Δ| ${d.toExponential(1)}`;
  });

  await check('a bad file says where and keeps the figure', async () => {
    let s = await state(page);
    const shownBefore = JSON.stringify(s.import.shown);
    await chooseFile(page, 'ui_import_bad_shape.json');
    s = await until(page, (x) => x.error !== '', 'the error');
    expect(s.error.startsWith('ui_import_bad_shape.json'), `error does not name the file: ${s.error}`);
    expect(/attention\[1\]\[0\]\[2\]/.test(s.error), `error does not name the field: ${s.error}`);
    expect(s.import.active && s.import.file === 'ui_import_gpt.json', `import replaced: ${s.import.file}`);
    expect(JSON.stringify(s.import.shown) === shownBefore, 'the figure changed');
    expect(s.widgets.error, 'no error line on screen');
    await moveAway(page);
    await shot(page, 'import-08-bad-file.png');
    return s.error;
  });

  await check('a file dropped on the canvas: encoder model, subwords merged into words', async () => {
    const text = fs.readFileSync(file('ui_import_bert.json'), 'utf8');
    await page.evaluate((t) => {
      const dt = new DataTransfer();
      dt.items.add(new File([t], 'ui_import_bert.json', { type: 'application/json' }));
      const canvas = document.getElementById('canvas');
      canvas.dispatchEvent(new DragEvent('dragover', { dataTransfer: dt, bubbles: true, cancelable: true }));
      canvas.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
    }, text);
    let s = await until(page, (x) => x.import.file === 'ui_import_bert.json', 'the dropped file');
    expect(s.error === '' && s.kind === 'self' && s.import.stacks[0].causal === false, `kind ${s.kind}, error ${s.error}`);
    expect(s.queries.length === 6 && !s.queries.some((t) => t.startsWith('##')), `queries ${JSON.stringify(s.queries)}`);
    await clickWidget(page, 'import.merge');
    s = await until(page, (x) => x.import.merge_words, 'merged words');
    expect(s.queries.length === 5 && s.queries.includes('playing'), `merged ${JSON.stringify(s.queries)}`);
    // Rows still sum to 1 after merging.
    const sums = s.import.shown.map((row) => row.reduce((a, b) => a + b, 0));
    expect(sums.every((x) => Math.abs(x - 1) < 1e-4), `row sums ${sums}`);
    await clickWidget(page, 'view.heatmap');
    await moveAway(page);
    await shot(page, 'import-09-merged.png');
    return JSON.stringify(s.queries);
  });

  await check('back to the scene: the preset comes back as before', async () => {
    await clickWidget(page, 'import.close');
    const s = await until(page, (x) => !x.import.active, 'import mode left');
    expect(s.preset === 'i-am-good' && s.showing_preset, `preset ${s.preset}, showing ${s.showing_preset}`);
    expect(JSON.stringify(s.queries) === '["I","am","good"]' && s.view !== 'model', `queries ${s.queries}, view ${s.view}`);
    return s.view;
  });

  await check('?import= loads a same-origin encoder-decoder file; stacks switch', async () => {
    const dir = path.join(siteDir, 'ui-import-test');
    fs.mkdirSync(dir, { recursive: true });
    fs.copyFileSync(file('ui_import_t5.json'), path.join(dir, 't5.json'));
    const p2 = await openPage(browser, `${url}?import=ui-import-test/t5.json`);
    let s = await until(p2, (x) => x.import.active, 'the ?import= file');
    expect(s.import.stacks.map((x) => x.name).join() === 'encoder_attention,decoder_attention,cross_attention',
           `stacks ${s.import.stacks.map((x) => x.name)}`);
    expect(s.kind === 'self', `encoder kind ${s.kind}`);
    await clickWidget(p2, 'model.stack.cross_attention');
    s = await until(p2, (x) => x.import.stack === 2, 'the cross stack');
    expect(s.kind === 'cross' && s.queries.length === 4 && s.keys.length === 4, `cross: ${s.kind}`);
    expect(!s.queries.some((t) => t.includes('\u2581')), `"▁" left in ${JSON.stringify(s.queries)}`);
    await clickWidget(p2, 'model.stack.decoder_attention');
    s = await until(p2, (x) => x.import.stack === 1, 'the decoder stack');
    expect(s.kind === 'masked', `decoder kind ${s.kind}`);
    await moveAway(p2);
    await shot(p2, 'import-10-t5-decoder.png');
    await p2.close();
    return 'encoder / decoder / cross';
  });

  await check('a link keeps the imported map: ?import= in the query, map= in the hash', async () => {
    const p3 = await openPage(browser, `${url}?import=ui-import-test/t5.json`);
    let s = await until(p3, (x) => x.import.active, 'the ?import= file');
    const cross = s.import.stacks[2];
    const want = `cross_attention:${cross.layers}:${cross.heads}`;
    const link = `${url}?import=ui-import-test/t5.json#v=1&preset=i-am-good&view=heatmap&map=${want}`;
    await p3.close();
    const p4 = await openPage(browser, link);
    s = await until(p4, (x) => x.import.active && x.view === 'heatmap', 'the linked map in the heatmap');
    expect(s.import.stack === 2 && s.import.layer === cross.layers - 1 && s.import.head === cross.heads - 1,
           `stack ${s.import.stack} layer ${s.import.layer} head ${s.import.head}, want ${want}`);
    expect(s.kind === 'cross', `kind ${s.kind}`);
    s = await until(p4, (x) => decodeURIComponent(x.link).includes(`map=${want}`), 'the address bar to name the map');
    await p4.close();
    return want;
  });

  await check('a big file shows its progress, then parses; ?import= from another site is refused', async () => {
    // 12 layers × 12 heads × 64 tokens (~4 MB of JSON), made here rather than committed.
    const T = 64, L = 12, H = 12;
    const tokens = Array.from({ length: T }, (_, i) => (i ? '\u0120w' : 'w') + i);
    const attention = [];
    for (let l = 0; l < L; ++l) {
      const layer = [];
      for (let h = 0; h < H; ++h) {
        const m = [];
        for (let q = 0; q < T; ++q) {
          const row = new Array(T).fill(0);
          const peak = (q * (h + 1) + l) % (q + 1);
          for (let k = 0; k <= q; ++k) row[k] = k === peak ? 0.5 : 0.5 / q;
          if (q === 0) row[0] = 1;
          m.push(row.map((v) => +v.toFixed(6)));
        }
        layer.push(m);
      }
      attention.push(layer);
    }
    const big = path.join(artifacts, 'big.json');
    fs.writeFileSync(big, JSON.stringify({ tokens, attention }));
    // Every frame's load phase, recorded in the page (polling from here can miss a phase).
    const p3 = await openPage(browser, url);
    await p3.evaluate(() => {
      window.seenPhases = [];
      const record = () => {
        const s = JSON.parse(Module.UTF8ToString(Module._attnviz_state()));
        const phase = s.import.load ? (s.import.load.parsing ? 'parsing' : 'reading') : s.import.active ? 'done' : null;
        if (phase && window.seenPhases[window.seenPhases.length - 1] !== phase) window.seenPhases.push(phase);
        if (phase !== 'done') requestAnimationFrame(record);
      };
      requestAnimationFrame(record);
    });
    await p3.setInputFiles('#attnviz-file', big);
    let s = await until(p3, (x) => x.import.active, 'the big file', 60000);
    const seen = await p3.evaluate(() => window.seenPhases);
    fs.rmSync(big, { force: true });
    expect(s.import.stacks[0].layers === 12, `big file not imported: ${s.error}`);
    expect(seen.includes('parsing') && seen[seen.length - 1] === 'done', `never saw the progress bar (${seen})`);
    await moveAway(p3);
    const img = await shot(p3, 'import-11-big-model.png');
    expect(distinctColors(img, s.widgets['thumb.12.12']) >= 3, 'thumbnail 12.12 is flat');
    await p3.close();
    const p4 = await openPage(browser, `${url}?import=http://example.com/x.json`);
    s = await until(p4, (x) => x.error !== '', 'the refusal');
    expect(!s.import.active && /only files from this site/.test(s.error), `error ${s.error}`);
    await p4.close();
    fs.rmSync(path.join(siteDir, 'ui-import-test'), { recursive: true, force: true });
    return `saw ${seen.join(' → ')}`;
  });

  await check('light theme: model view and heatmap', async () => {
    await chooseFile(page, 'ui_import_gpt.json');
    await until(page, (x) => x.import.active && x.import.file === 'ui_import_gpt.json', 'the import again');
    await clickWidget(page, 'theme');
    await moveAway(page);
    let s = await until(page, (x) => x.theme === 'light' && x.view === 'model', 'light model view');
    const img = await shot(page, 'import-12-model-light.png');
    expect(distinctColors(img, s.widgets['thumb.3.4']) >= 4, 'thumbnail 3.4 is flat in the light theme');
    await clickWidget(page, 'lang');
    await moveAway(page);
    s = await until(page, (x) => x.lang === 'zh', 'Chinese');
    await shot(page, 'import-13-model-light-zh.png');
    expect(s.fonts.missing === 0 || s.fonts.font_pending, `missing glyphs: ${s.fonts.missing}`);
    return 'light + 中文';
  });
} catch (e) {
  failSetup(e);
}
await finishSuite('import');
