#!/usr/bin/env node
// builtin.mjs: the models that ship with attnviz (models/, core/model/builtin.hpp) in the page:
// nothing of them is fetched before the first frame; a live scene loads its model on demand and
// shows the head it is about; the model grid tags the heads whose scores clear their thresholds;
// typing reruns the model; a model= link reproduces the figure; the induction circuit's Steps
// view says why its query looks where it does, and knocking out the previous-token head it names
// takes the match away; the translator translates; the vision model reads its example picture and
// its [CLS] head lies on the digit's strokes; the single-file build runs the models from file://
// with no request at all.
//   node tests/browser/builtin.mjs SITE_DIR ARTIFACT_DIR
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  check, clickWidget, expect, finishSuite, moveAway, openPage, pickPreset, pointAt, requests, shot, startSuiteOrEnd,
  state, until, waitFrames,
} from './harness.mjs';

const [siteDir, artifacts] = process.argv.slice(2);
if (!siteDir || !artifacts) {
  console.error('usage: node tests/browser/builtin.mjs SITE_DIR ARTIFACT_DIR');
  process.exit(2);
}
const settled = (s) => s.model.active && !s.model.busy && s.model.run_revision === s.model.input_revision && s.model.figure;
const kinds = ['prev', 'induction', 'sink', 'delimiter'];
const thresholds = { prev: 0.5, induction: 0.4, sink: 0.3, delimiter: 0.5 };  // kHeadThresholds

const { browser, url } = await startSuiteOrEnd('browser-builtin', siteDir, artifacts);
const page = await openPage(browser, url);

await check('nothing of the built-in models is fetched for the first frame', async () => {
  const fetched = requests.filter(([, u]) => u.includes('/models/'));
  expect(fetched.length === 0, `fetched ${fetched.map(([, u]) => u).join(', ')}`);
});

let induction;
await check('the induction scene loads tiny-circuits on demand and shows its induction head 2:1', async () => {
  await pickPreset(page, 'live.induction');
  const s = await until(page, settled, 'tiny-circuits loaded and run', 60000);
  expect(s.model.builtin === 'tiny-circuits' && s.model.model_type === 'llama', `builtin ${s.model.builtin}`);
  expect(requests.some(([, u]) => u.endsWith('/models/tiny-circuits/model.safetensors')), 'model.safetensors was not fetched');
  expect(s.model.heads && kinds.every((k) => s.model.heads[k]), 'no head scores');
  const [l, h] = [1, 0];  // the scene's map (web/state/live_scenes.cpp): the head that does it best on English text
  expect(s.view === 'heatmap' && s.import.layer === l && s.import.head === h, `view ${s.view}, map ${s.import.layer + 1}:${s.import.head + 1}`);
  expect(s.model.heads.induction[l][h] >= thresholds.induction, `induction score ${s.model.heads.induction[l][h]}`);
  induction = s;
  await moveAway(page);
  await shot(page, 'builtin-01-induction.png');
  return `${s.model.summary}; induction head ${l + 1}:${h + 1} = ${s.model.heads.induction[l][h].toFixed(3)}`;
});

await check('the model grid tags every head whose score clears its threshold', async () => {
  await clickWidget(page, 'view.model');
  await until(page, (s) => s.view === 'model', 'the model view');
  await moveAway(page);
  const s = await state(page);
  const tagged = [];
  s.model.heads.prev.forEach((row, l) => row.forEach((_, h) => {
    const best = kinds.filter((k) => s.model.heads[k][l][h] >= thresholds[k]);
    if (best.length) tagged.push(`${l + 1}:${h + 1}`);
  }));
  await shot(page, 'builtin-02-grid.png');
  return `${tagged.length} heads tagged (${tagged.join(' ')})`;
});

await check('typing reruns the model on the new text', async () => {
  const before = await state(page);
  await clickWidget(page, 'model.text');
  await waitFrames(page, 3);
  await page.keyboard.press('Control+A');
  await page.keyboard.insertText('床前明月光，疑是地上霜。');
  const s = await until(page, (x) => settled(x) && x.model.input_revision > before.model.input_revision, 'the rerun', 30000);
  expect(s.model.figure.ids.length !== before.model.figure.ids.length, `ids ${s.model.figure.ids}`);
  await moveAway(page);
  await shot(page, 'builtin-03-typed.png');
  return `${s.model.figure.ids.length} tokens`;
});

await check('a model= link reopens the same figure in a new page', async () => {
  const [l, h] = [induction.import.layer, induction.import.head];
  const hash = `#v=1&model=tiny-circuits&view=heatmap&map=attention:${l + 1}:${h + 1}&text=` +
               encodeURIComponent(induction.model.text);
  const other = await openPage(browser, url + hash);
  const s = await until(other, settled, 'the linked model run', 60000);
  expect(JSON.stringify(s.model.figure.ids) === JSON.stringify(induction.model.figure.ids), `ids ${s.model.figure.ids}`);
  expect(s.view === 'heatmap' && s.import.layer === l && s.import.head === h, `map ${s.import.layer + 1}:${s.import.head + 1}`);
  await other.context().close();
});

await check('a model= link without map= opens the view it names on layer 1, head 1, and the address bar names no scene', async () => {
  const other = await openPage(browser, `${url}#v=1&model=tiny-lm&text=${encodeURIComponent('The cat sat')}&view=heatmap`);
  const s = await until(other, settled, 'the linked model run', 60000);
  expect(s.view === 'heatmap' && s.import.layer === 0 && s.import.head === 0, `view ${s.view}, map ${s.import.layer + 1}:${s.import.head + 1}`);
  // The address bar is written a few times a second: read it once it names the model's text.
  const named = await until(other, (x) => /(^|&)text=/.test(decodeURIComponent(x.link)), 'the address bar to name the text');
  const link = decodeURIComponent(named.link);
  expect(!/(^|&)(scene|preset)=/.test(link) && /view=heatmap/.test(link) && link.length < 200, `link ${link}`);
  await other.context().close();
  return link;
});

await check('a link names a live scene (preset=induction-circuit): its Steps open on the rows its words are about, on a phone too', async () => {
  const shots = [];
  for (const [w, h, name] of [[1280, 800, 'builtin-04b-linked-circuit.png'], [390, 844, 'builtin-04c-linked-circuit-phone.png']]) {
    const other = await openPage(browser, `${url}#v=1&preset=induction-circuit`, { viewport: { width: w, height: h } });
    const s = await until(other, (x) => settled(x) && x.view === 'steps' && x.steps_why !== '', 'the linked live scene', 60000);
    expect(s.error === '' && s.import.layer === 1 && s.model.text.startsWith('Mira planted'), `error ${s.error}, layer ${s.import.layer + 1}`);
    // The words' query is in the window the matrices show (its row among the 16 from Queries' first).
    const q = Number((s.steps_why.match(/token (\d+)\)/) || [])[1]);
    const [first] = s.steps_window;
    expect(q >= first + 1 && q <= first + 16, `query ${q}, window from ${first + 1}`);
    expect(w < 500 || s.widgets['steps.queries'], 'Queries in the toolbar');  // a phone's are under Options
    await moveAway(other);
    await shot(other, name);
    shots.push(q);
    await other.context().close();
  }
  return `query ${shots.join(', ')} in sight`;
});

await check('the induction-circuit scene: Steps of the induction head, and the words under it say why (K-composition)', async () => {
  await clickWidget(page, 'model.close');  // the scene list shows with no model open
  await until(page, (x) => !x.model.active, 'the model closed');
  await pickPreset(page, 'live.induction-circuit');
  let s = await until(page, (x) => settled(x) && x.view === 'steps' && x.steps_why !== '', 'the circuit scene with its words', 60000);
  expect(s.import.layer === 1 && s.steps_head === 0, `map ${s.import.layer + 1}:${s.steps_head + 1}`);
  expect(/K-composition/.test(s.steps_why) && /previous-token head/.test(s.steps_why), `words: ${s.steps_why}`);
  const writer = s.steps_why.match(/Layer 1 head (\d)/);
  expect(writer && s.widgets['steps.why'] && s.widgets['steps.why.button'], `writer ${writer}, widgets ${Object.keys(s.widgets)}`);
  // One story: where another layer-1 head wrote this key, the words also name the head the model grid tags (1:1).
  expect(writer[1] === '1' ? !/tags layer/.test(s.steps_why) : /The model grid tags layer 1 head 1 as the previous-token head/.test(s.steps_why),
         `writer 1:${writer[1]}, words: ${s.steps_why}`);
  await moveAway(page);
  await shot(page, 'builtin-05-circuit.png');
  const said = s.steps_why;
  // The button knocks the writer out: the run is redone, and the query no longer finds the key.
  await pointAt(page, s.widgets['steps.why.button'], true);
  s = await until(page, (x) => settled(x) && x.model.experiment.knockout === `1:${writer[1]}` && x.steps_why !== said,
                  'the knocked-out run', 30000);
  expect(/is knocked out/.test(s.steps_why) && !/K-composition/.test(s.steps_why), `words after: ${s.steps_why}`);
  await moveAway(page);
  await shot(page, 'builtin-06-circuit-knocked.png');
  await pointAt(page, s.widgets['steps.why.button'], true);
  s = await until(page, (x) => settled(x) && x.model.experiment.knockout === '', 'restored', 30000);
  expect(s.steps_why === said, `restored words: ${s.steps_why}`);
  // On a phone the words stay under the figure, inside the screen.
  await page.setViewportSize({ width: 390, height: 844 });
  const inside = (x) => { const [wx, , ww] = x.widgets['steps.why'] || [0, 0, Infinity]; return wx + ww <= x.figure[0] + x.figure[2] + 1; };
  s = await until(page, (x) => x.widgets['steps.why'] && inside(x) && x.figure[2] < 1280, 'the words inside the phone\'s figure');
  await moveAway(page);
  await shot(page, 'builtin-07-circuit-phone.png');
  await page.setViewportSize({ width: 1280, height: 800 });
  await waitFrames(page, 3);
  if ((await state(page)).widgets['drawer.open']) await clickWidget(page, 'drawer.open');  // the phone's drawer, closed
  await until(page, (x) => x.widgets['model.close'], 'the panels back at desktop size');
  return `${said.slice(0, 160)}…`;
});

await check('the translate-numbers scene translates with tiny-translator and shows cross attention', async () => {
  await clickWidget(page, 'model.close');
  await until(page, (s) => !s.model.active, 'the model closed');
  await pickPreset(page, 'live.translate-numbers');
  // Each output token's attention is shown as it appears: the figure's target grows (the app
  // counts the partial runs it showed; a poll on a busy machine may see none of them).
  const lengths = new Set();
  let s = await state(page);
  const partialsBefore = s.model.partials;
  for (const t0 = Date.now(); !(settled(s) && s.model.builtin === 'tiny-translator'); s = await state(page)) {
    if (s.model.builtin === 'tiny-translator' && s.model.figure) lengths.add(s.model.figure.ids.length);
    if (Date.now() - t0 > 60000) throw new Error('timed out waiting for the translation');
  }
  lengths.add(s.model.figure.ids.length);
  const partials = s.model.partials - partialsBefore;
  expect(partials >= 2, `the target was shown at ${partials} partial runs for ${s.model.figure.ids.length} tokens (polled: ${[...lengths].join(', ')})`);
  const cross = s.import.stacks.findIndex((x) => x.name === 'cross_attention');
  expect(s.import.stack === cross && s.view === 'heatmap', `stack ${s.import.stack}, view ${s.view}`);
  await moveAway(page);
  await shot(page, 'builtin-04-translate.png');
  return `${s.model.figure.ids.length} target tokens, shown at ${[...lengths].sort((a, b) => a - b).join(', ')}`;
});

await check('the vit-digit scene: tiny-vit reads its example picture, its [CLS] head on the digit; another example by its button; a link keeps the picture', async () => {
  await clickWidget(page, 'model.close');
  await until(page, (s) => !s.model.active, 'the model closed');
  await pickPreset(page, 'live.vit-digit');
  const shown = (name) => (x) => settled(x) && x.model.builtin === 'tiny-vit' && x.model.picture && x.model.picture.name === name &&
    x.view === 'image' && x.import.shown && x.widgets['image.top'];
  let s = await until(page, shown('example-4.png'), 'tiny-vit on example-4.png', 60000);
  expect(requests.some(([, u]) => u.endsWith('/models/tiny-vit/example-4.png')), 'example-4.png was not fetched');
  expect(s.model.figure.top[0].token === '4', `labels ${JSON.stringify(s.model.figure.top.slice(0, 3))}`);
  // The scene's head is the one training.json measured best on the digit's patches (held-out faces).
  const info = JSON.parse(fs.readFileSync(new URL('../../models/tiny-vit/training.json', import.meta.url), 'utf8'));
  const scores = info.heldout['held-out faces'].ink_scores;
  let best = [0, 0];
  scores.forEach((row, l) => row.forEach((v, h) => { if (v > scores[best[0]][best[1]]) best = [l, h]; }));
  expect(s.import.layer === best[0] && s.import.head === best[1], `map ${s.import.layer + 1}:${s.import.head + 1}, best ${best[0] + 1}:${best[1] + 1}`);
  // The [CLS]'s row over the patches: on the digit's ink (training.json's patches of this picture)
  // what the training module measured, at least twice as much as a head looking anywhere would.
  const row = s.import.shown[0].slice(1);
  const example = info.examples.find((e) => e.file === 'example-4.png'), ink = example.ink_patches;
  const onInk = ink.reduce((a, i) => a + row[i], 0) / row.reduce((a, b) => a + b, 0), share = ink.length / row.length;
  expect(example.head === `${best[0] + 1}:${best[1] + 1}` && Math.abs(onInk - example.ink_share) < 1e-4 && onInk >= 2 * share,
    `the [CLS] puts ${onInk.toFixed(4)} of its patch attention on the digit's ${ink.length} patches (their share ${share.toFixed(2)}; training.json: head ${example.head}, ${example.ink_share})`);
  await moveAway(page);
  await shot(page, 'builtin-05-vit.png');
  // (the button row is read again: the frame the run settled in may have been one the panel skipped)
  const buttons = await until(page, (x) => x.widgets['picture.example-7.png'], 'a button for example-7.png', 10000).catch(() => null);
  expect(buttons, `no button for example-7.png (picture buttons: ${Object.keys(s.widgets).filter((k) => k.startsWith('picture')).join(', ') || 'none'})`);
  await clickWidget(page, 'picture.example-7.png');
  s = await until(page, shown('example-7.png'), 'tiny-vit on example-7.png', 60000);
  expect(s.model.figure.top[0].token === '7', `labels ${JSON.stringify(s.model.figure.top.slice(0, 3))}`);
  let link = '';  // the address bar follows the app a few times a second
  for (const t0 = Date.now(); !link.includes('picture=example-7.png') && Date.now() - t0 < 10000; await page.waitForTimeout(100))
    link = await page.evaluate(() => location.hash);
  expect(link.includes('picture=example-7.png') && link.includes('model=tiny-vit') && !link.includes('text='), `the link ${link}`);
  const other = await openPage(browser, `${url}${link}`);
  const t = await until(other, shown('example-7.png'), 'the link reopened on example-7.png', 60000);
  expect(JSON.stringify(t.import.shown) === JSON.stringify(s.import.shown), 'the link shows another map');
  await other.close();
  // Steps of the first layer start at the pixels: P, then E = P·W_e + b, then X
  const first = `${url}${link.replace(/&(view|map)=[^&]*/g, '')}&view=steps&map=attention:1:1`;
  const steps = await openPage(browser, first);
  const p = await until(steps, (x) => settled(x) && x.view === 'steps' && x.steps.patches && x.steps.embedded && x.steps.x && x.steps.q,
    'Steps of tiny-vit\'s first layer from its pixels', 60000);
  expect(p.import.layer === 0, `layer ${p.import.layer + 1}`);
  await moveAway(steps);
  await shot(steps, 'builtin-05b-vit-steps.png');
  await steps.close();
  return `${s.model.summary}; head ${best[0] + 1}:${best[1] + 1}: the [CLS] puts ${(100 * onInk).toFixed(0)} % of its patch attention on the digit's patches, ${(100 * share).toFixed(0)} % of the picture`;
});

await check('the why-induction scene: the lens, attribution and patching grids of tiny-circuits, as its caption says', async () => {
  const tall = await openPage(browser, `${url}#v=1&preset=i-am-good`, { viewport: { width: 1280, height: 1900 } });
  await pickPreset(tall, 'live.why-induction');
  // (the grids are drawn the frame after the run's numbers are in: wait for the lens's last cell)
  const s = await until(tall, (x) => settled(x) && x.model.patching && x.model.lens && x.model.attribution && x.widgets['model.lens.2.15'],
                        'the why scene\'s grids', 90000);
  const a = s.model.attribution, lens = s.model.lens, p = s.model.patching;
  const last = lens[lens.length - 1].length - 1;
  expect(lens.map((row) => row[last][3]).join(',') === '206,268,1', `the prediction's rank by layer ${lens.map((row) => row[last][3])}`);
  expect(Math.abs(a.total - 10.45) < 0.05 && Math.abs(a.heads[6] - 2.47) < 0.02, `logit ${a.total}, head 2:3 ${a.heads[6]}`);
  const T = p.positions;
  expect(Math.abs(p.resid[6] - 1) < 0.02 && Math.abs(p.resid[T + 7] - 1) < 0.03 && p.resid[2 * T + T - 1] === 1, `stream ${p.resid[6]}, ${p.resid[T + 7]}`);
  expect(s.view === 'heatmap' && s.widgets['model.lens.2.15'], `the lens is not on screen: view ${s.view}`);
  await moveAway(tall);
  await shot(tall, 'builtin-08-why-induction.png');
  // The panel scrolled down to the patching grids (the stream's, a row per layer and a column per token).
  await tall.mouse.move(150, 900);
  let below = s;
  for (let notch = 0; notch < 40 && !below.widgets['model.patching.resid.2.15']; ++notch) {
    await tall.mouse.wheel(0, 100);
    await waitFrames(tall, 2);
    below = await state(tall);
  }
  expect(below.widgets['model.patching.resid.2.15'], 'the patching grids are not on screen');
  await moveAway(tall);
  await shot(tall, 'builtin-09-why-induction-patching.png');
  await tall.context().close();
  return `ranks 206, 268, 1; logit ${a.total.toFixed(2)}; stream 1.00 at w (7), J (8), the last token`;
});

await check('the single-file build runs tiny-circuits from file:// without a request, with either build', async () => {
  const single = pathToFileURL(path.resolve(siteDir, 'attnviz-single.html')).href;
  const before = requests.length;
  const other = await openPage(browser, single + '#v=1&model=tiny-circuits&text=' + encodeURIComponent(induction.model.text));
  // The twin follows once the run's figure is in and the typing pause is over (App::note_typing).
  const described = (x) => settled(x) && !x.typing && x.twin !== '';
  const s = await until(other, described, 'tiny-circuits from the single file', 60000);
  expect(JSON.stringify(s.model.figure.ids) === JSON.stringify(induction.model.figure.ids), `ids ${s.model.figure.ids}`);
  // (The http page before this one may still ask for its favicon.)
  const outside = requests.slice(before).filter(([, u]) => !/^(file|data):/.test(u) && !u.endsWith('/favicon.svg'));
  expect(outside.length === 0, `requests ${outside.map(([, u]) => u).join(', ')}`);
  await other.context().close();
  // Both builds are inside: a browser without relaxed SIMD runs the SIMD128 one, to the same ids
  // and the same summary of the model's figure.
  const plain = await openPage(browser, single + '#v=1&model=tiny-circuits&text=' + encodeURIComponent(induction.model.text),
                               { initScript: () => { WebAssembly.validate = () => false; } });
  const p = await until(plain, described, 'tiny-circuits from the single file, SIMD128', 60000);
  expect(s.isa === 'wasm-relaxed-simd' && p.isa === 'wasm-simd128', `kernels ${s.isa}, then ${p.isa}`);
  expect(JSON.stringify(p.model.figure.ids) === JSON.stringify(s.model.figure.ids) && p.twin === s.twin,
         `ids ${p.model.figure.ids}, twin "${p.twin}" against "${s.twin}"`);
  await plain.context().close();
  return `${s.isa}, then ${p.isa}`;
});

await check('a live model in the tiles mode: tile sizes from the on-chip memory, then 2×2; O checked against Steps', async () => {
  const text = 'The cat sat on the mat. The cat sat on the mat.';
  const page = await openPage(browser, `${url}#v=1&model=tiny-lm&view=steps&tiles=auto&text=${encodeURIComponent(text)}`);
  let s = await until(page, (x) => settled(x) && x.steps['tile.s'], 'the tiles of a live head', 60000);
  const T = s.queries.length;
  // FlashAttention's B_c = ⌈M / 4d⌉ and B_r = min(B_c, d) for 192 KB, bounded by the text: one tile of T × T here.
  expect(s.tiles.rows === T && s.tiles.cols === T && /FlashAttention's formula/.test(s.steps_said), `tiles ${JSON.stringify(s.tiles)}, ${s.steps_said}`);
  await moveAway(page);
  await shot(page, 'builtin-07-tiles-auto.png');
  await page.context().close();
  const small = await openPage(browser, `${url}#v=1&model=tiny-lm&view=steps&tiles=2x4&tile_step=1000&text=${encodeURIComponent(text)}`);
  s = await until(small, (x) => settled(x) && x.steps['tile.diff'], 'the last step of 2×4 tiles', 60000);
  const diff = Number(s.steps_said.match(/Largest difference: ([^,]+),/)[1]);
  expect(/float rounding only/.test(s.steps_said), `said: ${s.steps_said}`);
  await moveAway(small);
  await shot(small, 'builtin-08-tiles-check.png');
  const back = await openPage(browser, `${url}#v=1&model=tiny-lm&view=steps&tiles=2x4&tile=6&text=${encodeURIComponent(text)}`);
  s = await until(back, (x) => settled(x) && x.steps['tile.o'], 'a tile of the live head', 60000);
  await moveAway(back);
  await shot(back, 'builtin-09-tiles-2x4.png');
  await small.context().close();
  await back.context().close();
  return `${T} tokens; largest difference ${diff}`;
});

await check('a live model in the Q–K space: a head\'s rotated queries and keys by PCA and t-SNE, and every head of the layer', async () => {
  const text = 'The cat sat on the mat. The cat sat on the mat.';
  const page = await openPage(browser, `${url}#v=1&model=tiny-lm&view=qk&map=attention:2:1&text=${encodeURIComponent(text)}`);
  let s = await until(page, (x) => settled(x) && x.view === 'qk' && x.query_rects.length === x.queries.length && /by PCA/.test(x.steps_said),
                      'the plane of a live head', 60000);
  const r = Number(s.steps_said.match(/r = (-?[\d.]+)/)[1]);
  expect(Number.isFinite(r) && /lies nearest to key/.test(s.steps_said), `said: ${s.steps_said}`);
  await moveAway(page);
  await shot(page, 'builtin-10-qk-pca.png');
  await pointAt(page, s.query_rects[10]);
  s = await until(page, (x) => x.hover && x.hover.side === 'query' && x.hover.index === 10, 'query 11 hovered');
  await shot(page, 'builtin-11-qk-hover.png');
  await clickWidget(page, 'qk.tsne');
  s = await until(page, (x) => /by t-SNE/.test(x.steps_said), 't-SNE of the live head', 30000);
  await moveAway(page);
  await shot(page, 'builtin-12-qk-tsne.png');
  await clickWidget(page, 'qk.heads');
  s = await until(page, (x) => x.widgets['qk.head.4'], 'every head of layer 2');
  await shot(page, 'builtin-13-qk-heads.png');
  await page.context().close();
  return `layer 2 head 1: r = ${r}`;
});

await check('a text past 512 tokens: its maps on demand in the heatmap, the model grid, Steps, the Q–K space and Explain', async () => {
  const text = 'The cat sat on the mat and the dog ran to the park. '.repeat(40);
  const page = await openPage(browser, `${url}#v=1&model=tiny-circuits&view=model&map=attention:2:1&text=${encodeURIComponent(text)}`);
  let s = await until(page, settled, 'the long text run', 120000);
  const T = s.queries.length;
  expect(T > 512 && s.import.maps_on_demand && /maps on demand/.test(s.model.summary), `T ${T}, ${s.model.summary}`);
  expect(s.import.show === 'head' && !s.import.merge_words, `show ${s.import.show}`);
  await moveAway(page);
  await shot(page, 'builtin-14-long-grid.png');
  await clickWidget(page, 'view.heatmap');
  s = await until(page, (x) => x.view === 'heatmap' && x.queries.length === T, 'the heatmap of the long text');
  await moveAway(page);
  await shot(page, 'builtin-15-long-heatmap.png');
  await clickWidget(page, 'view.steps');
  s = await until(page, (x) => x.view === 'steps' && x.steps.q && x.steps.k && x.steps.weights && !x.steps.x, 'Steps from the long text\'s kept Q and K');
  await moveAway(page);
  await shot(page, 'builtin-16-long-steps.png');
  // the Q–K space of the head shown: every query and key the run kept, by PCA
  await clickWidget(page, 'view.qk');
  s = await until(page, (x) => x.view === 'qk' && x.query_rects.length === T && /by PCA/.test(x.steps_said), 'the Q–K space of the long text', 60000);
  await moveAway(page);
  await shot(page, 'builtin-16b-long-qk.png');
  // Explain reads the last query's row three ways; the rollout through layers 0 … 2 a block of rows a frame
  await clickWidget(page, 'view.explain');
  const three = (x) => x.view === 'explain' && [0, 1, 2].every((k) => x.widgets[`explain.strip.${k}`]);
  s = await until(page, three, 'Explain on the long text: the three rows, the rollout done', 120000);
  expect(/click/.test(s.hint), `hint: ${s.hint}`);
  expect(/Rollout: strongest “.+” #\d+ [\d.e-]+/.test(s.steps_said), `the twin's words: ${s.steps_said}`);  // what a screen reader hears
  await moveAway(page);
  await shot(page, 'builtin-17-long-explain.png');
  // a bar clicked: its strongest key becomes the query, and the rollout runs again for it
  const strip = s.widgets['explain.strip.0'];
  await page.mouse.click(strip[0] + strip[2] * 0.3, strip[1] + strip[3] - 3);
  s = await until(page, (x) => x.pinned && x.pinned.side === 'query' && x.pinned.index < T - 1, 'the key clicked read as the query');
  const picked = s.pinned.index;
  s = await until(page, three, 'the new query\'s rows', 120000);
  await page.context().close();
  return `${T} tokens, layer 2 head 1 on demand; Steps from its Q and K; the Q–K space of its ${T} queries; Explain of query ${T - 1}, then of key ${picked} clicked`;
});

await check('Compare on two long texts: the query\'s row on each, and their difference key by key', async () => {
  const text = 'The cat sat on the mat and the dog ran to the park. '.repeat(40);
  const other = text.replace('dog', 'pig');  // one word changed: as many tokens
  const page = await openPage(browser, `${url}#v=1&model=tiny-circuits&view=compare&map=attention:2:1&text=${encodeURIComponent(text)}` +
                                       `&compare=${encodeURIComponent(other)}`);
  const rows = (x) => settled(x) && x.view === 'compare' && [0, 1, 2].every((k) => x.widgets[`compare.strip.${k}`]);
  const s = await until(page, rows, 'Compare on the long texts: both rows and the difference', 120000);
  expect(s.queries.length > 512 && s.import.maps_on_demand, `T ${s.queries.length}`);
  expect(/Difference: strongest “.+” #\d+ [+-]/.test(s.steps_said), `the twin's words: ${s.steps_said}`);
  await moveAway(page);
  await shot(page, 'builtin-18-long-compare.png');
  await page.context().close();
  return `${s.queries.length} tokens each`;
});

await finishSuite('browser-builtin');
