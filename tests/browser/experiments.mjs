#!/usr/bin/env node
// experiments.mjs: experiments on a live model in the page (issue "Experiments in the page"):
// a head knocked out from the model view changes the next-token list, to the numbers the native
// `attnviz run --knockout` gives; mean ablation; a token hidden by a click on its chip; head
// importance measured live and equal to two native runs' log-probabilities; each head's direct
// logit attribution, equal to `attnviz run --attribute`'s; a link with the
// experiment reproduces the figure; set-view takes the experiment; generation, the Explain and
// Compare views; the controls panel under the mouse wheel.
//   node tests/browser/experiments.mjs SITE_DIR ARTIFACT_DIR ATTNVIZ_BINARY
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import {
  check, clickWidget, expect, finishSuite, moveAway, openPage, startSuiteOrEnd, state, until, waitFrames, cssScale, shot,
} from './harness.mjs';
import { patch } from './png.mjs';

const [siteDir, artifacts, binary] = process.argv.slice(2);
if (!siteDir || !artifacts || !binary) {
  console.error('usage: node tests/browser/experiments.mjs SITE_DIR ARTIFACT_DIR ATTNVIZ_BINARY');
  process.exit(2);
}
const TEXT = 'The cat sat on the mat. The cat sat on the';
const settled = (s) => s.model.active && !s.model.busy && s.model.run_revision === s.model.input_revision && s.model.figure;
// attnviz run natively, as JSON.
const native = (...args) => JSON.parse(execFileSync(binary, ['run', 'tiny-lm', '--text', TEXT, '--json', '--top', '10', ...args]).toString());
const logp = (logits, id) => {
  const top = Math.max(...logits);
  return logits[id] - top - Math.log(logits.reduce((a, v) => a + Math.exp(v - top), 0));
};
// The page's next tokens against a native run's: the same ids, probabilities within 1e-4.
function sameTop(page, want) {
  const got = page.model.figure.top;
  const ids = (t) => t.map((x) => x.id).join(',');
  expect(ids(got) === ids(want.top.slice(0, got.length)), `page ${ids(got)}, native ${ids(want.top)}`);
  const worst = Math.max(...got.map((t, i) => Math.abs(t.p - want.top[i].p)));
  expect(worst < 1e-4, `probabilities differ by ${worst}`);
  return worst;
}

const { browser, url } = await startSuiteOrEnd('browser-experiments', siteDir, artifacts);
// A tall window: every control of the panel (generation, experiments, the importance map) in view.
const page = await openPage(browser, `${url}#v=1&model=tiny-lm&view=model&text=${encodeURIComponent(TEXT)}`,
                            { viewport: { width: 1280, height: 1300 } });
let plain;

await check('the plain run is the native run', async () => {
  plain = await until(page, settled, 'tiny-lm run on the text', 60000);
  const d = sameTop(plain, native());
  return `top "${plain.model.figure.top[0].token}" ${plain.model.figure.top[0].p.toFixed(4)}, max difference ${d.toExponential(1)}`;
});

let knocked;
await check('a right-click on a head in the model view knocks it out: the next tokens change, as natively', async () => {
  const s = await state(page);
  const k = await cssScale(page);
  const r = s.widgets['thumb.2.3'];
  expect(r, 'no thumbnail 2:3 on screen');
  await page.mouse.click((r[0] + r[2] / 2) / k, (r[1] + r[3] / 2) / k, { button: 'right' });
  knocked = await until(page, (x) => settled(x) && x.model.experiment.knockout === '2:3', 'the rerun with 2:3 knocked out', 30000);
  expect(JSON.stringify(knocked.model.figure.top) !== JSON.stringify(plain.model.figure.top), 'the next tokens did not change');
  const d = sameTop(knocked, native('--knockout', '2:3'));
  await moveAway(page);
  await shot(page, 'experiments-01-knockout.png');
  return `top "${knocked.model.figure.top[0].token}" ${plain.model.figure.top[0].p.toFixed(4)} -> ${knocked.model.figure.top[0].p.toFixed(4)}; max difference ${d.toExponential(1)}`;
});

await check('mean ablation reruns with the head replaced by its mean, as natively', async () => {
  await clickWidget(page, 'model.ablation.mean');
  const s = await until(page, (x) => settled(x) && x.model.experiment.knockout_mode === 'mean', 'the rerun with mean ablation', 30000);
  sameTop(s, native('--knockout', '2:3', '--knockout-mode', 'mean'));
  return `top "${s.model.figure.top[0].token}" ${s.model.figure.top[0].p.toFixed(4)}`;
});

await check('a click on a token chip hides it, as --hide-token does', async () => {
  const s = await state(page);
  const k = await cssScale(page);
  const r = s.widgets['model.tokens'];
  await page.mouse.click((r[0] + 8) / k, (r[1] + 8) / k);  // the first chip
  const h = await until(page, (x) => settled(x) && x.model.experiment.hidden.length === 1, 'the rerun with a hidden token', 30000);
  expect(h.model.experiment.hidden[0] === 0, `hidden ${h.model.experiment.hidden}`);
  sameTop(h, native('--knockout', '2:3', '--knockout-mode', 'mean', '--hide-token', '1'));
  await moveAway(page);
  await shot(page, 'experiments-02-hidden.png');
  return `hidden token 1 of ${h.model.figure.ids.length}; top "${h.model.figure.top[0].token}"`;
});

let linked;
await check('a link with the experiment reopens the same figure', async () => {
  await page.waitForTimeout(600);  // the address bar follows the state four times a second
  const s = await state(page);
  const hash = (await page.evaluate(() => location.hash)).slice(1);
  expect(/knockout=2%3A3/.test(hash) && /knockout_mode=mean/.test(hash) && /hide=1/.test(hash), `hash ${hash}`);
  const other = await openPage(browser, `${url}#${hash}`);
  linked = await until(other, settled, 'the linked run', 60000);
  expect(linked.model.experiment.knockout === "2:3" && linked.model.experiment.knockout_mode === "mean" &&
         JSON.stringify(linked.model.experiment.hidden) === "[0]", `experiment ${JSON.stringify(linked.model.experiment)}; hash ${hash}; error ${linked.error}`);
  expect(JSON.stringify(linked.model.figure.top) === JSON.stringify(s.model.figure.top), 'other next tokens');
  await other.context().close();
  return hash.split('&').filter((p) => /^(knockout|hide)/.test(p)).join('&');
});

await check('head importance: every head measured, equal to two native runs', async () => {
  await clickWidget(page, 'model.restore');
  await clickWidget(page, 'model.ablation.zero');
  const s0 = await state(page);
  const r = s0.widgets['model.tokens'];
  const k = await cssScale(page);
  await page.mouse.click((r[0] + 8) / k, (r[1] + 8) / k);  // the first chip again: shown
  await until(page, (x) => settled(x) && x.model.experiment.hidden.length === 0 && x.model.experiment.knockout === '', 'the plain run again', 30000);
  await clickWidget(page, 'model.importance');
  const s = await until(page, (x) => settled(x) && x.model.importance, 'head importance', 60000);
  const { token, layers, heads, delta } = s.model.importance;
  expect(layers === 4 && heads === 4 && delta.every((v) => Number.isFinite(v)), `importance ${JSON.stringify(s.model.importance)}`);
  const base = native();
  expect(token === base.top[0].id, `token ${token}, native top ${base.top[0].id}`);
  let worst = 0;
  for (const [l, h] of [[1, 1], [2, 3], [4, 4]]) {
    const want = logp(native('--knockout', `${l}:${h}`).logits, token) - logp(base.logits, token);
    worst = Math.max(worst, Math.abs(want - delta[(l - 1) * heads + (h - 1)]));
  }
  expect(worst < 1e-3, `importance differs from native runs by ${worst}`);
  await moveAway(page);
  await shot(page, 'experiments-03-importance.png');
  const strongest = delta.reduce((b, v, i) => (Math.abs(v) > Math.abs(delta[b]) ? i : b), 0);
  return `strongest head ${Math.floor(strongest / heads) + 1}:${strongest % heads + 1} (${delta[strongest].toFixed(3)}); max difference ${worst.toExponential(1)}`;
});

await check('direct logit attribution: the heads\' grid, equal to attnviz run --attribute', async () => {
  await clickWidget(page, 'model.attribution');
  const s = await until(page, (x) => settled(x) && x.model.attribution, 'the attribution grid', 60000);
  const a = s.model.attribution;
  const want = native('--attribute', `#${a.target}`).attribution;
  expect(a.target === s.model.figure.top[0].id, `target ${a.target}, the page's top ${s.model.figure.top[0].id}`);
  const flat = want.heads.flat();
  expect(a.heads.length === flat.length && s.widgets['model.attribution.4.4'], `grid of ${a.heads.length}, probes ${Object.keys(s.widgets).filter((w) => w.startsWith('model.attribution')).length}`);
  const worst = Math.max(Math.abs(a.total - want.total), ...a.heads.map((v, i) => Math.abs(v - flat[i])));
  expect(worst < 1e-4 * (1 + Math.abs(want.total)), `attribution differs from attnviz run by ${worst}`);
  await moveAway(page);
  await shot(page, 'experiments-04-attribution.png');
  await clickWidget(page, 'model.attribution');  // off again
  await until(page, (x) => settled(x) && !x.model.attribution, 'no grid', 30000);
  const strongest = a.heads.reduce((b, v, i) => (Math.abs(v) > Math.abs(a.heads[b]) ? i : b), 0);
  return `logit ${a.total.toFixed(3)}; strongest head ${Math.floor(strongest / 4) + 1}:${strongest % 4 + 1} (${a.heads[strongest].toFixed(3)}); max difference ${worst.toExponential(1)}`;
});

await check('a chosen target against a chosen contrast: attribution of their logit difference, as attnviz run --attribute --contrast', async () => {
  await clickWidget(page, 'model.attribution');
  await until(page, (x) => settled(x) && x.model.attribution && x.widgets['model.target'], 'the attribution grid', 60000);
  const [, a, b] = native().top;  // the second and third likeliest
  const typeInto = async (widget, text) => {
    await clickWidget(page, widget);
    await waitFrames(page, 3);
    await page.keyboard.press('Control+A');
    if (text) await page.keyboard.insertText(text);
    else await page.keyboard.press('Backspace');
  };
  await typeInto('model.target', `#${a.id}`);
  // (the next click once the run is in: a click within one long frame of the busy page is lost, ImGui 1.86 has no input queue)
  await until(page, (x) => settled(x) && x.model.attribution && x.model.attribution.target === a.id, 'the attribution of the target', 60000);
  await typeInto('model.contrast', `#${b.id}`);
  const s = await until(page, (x) => settled(x) && x.model.attribution && x.model.attribution.target === a.id && x.model.attribution.contrast === b.id,
                        'the attribution of the chosen tokens', 60000);
  const want = native('--attribute', `#${a.id}`, '--contrast', `#${b.id}`).attribution;
  const flat = want.heads.flat();
  const worst = Math.max(Math.abs(s.model.attribution.total - want.total), ...s.model.attribution.heads.map((v, i) => Math.abs(v - flat[i])));
  expect(worst < 1e-4 * (1 + Math.abs(want.total)), `attribution differs from attnviz run by ${worst}`);
  await until(page, (x) => decodeURIComponent(x.link).includes(`target=#${a.id}&contrast=#${b.id}`), 'the address bar to name the tokens');
  await moveAway(page);
  await shot(page, 'experiments-04b-target-contrast.png');
  // a target of two tokens: the error names the field, the grid of the last good run stays off
  await typeInto('model.target', 'cat sat');
  const e = await until(page, (x) => settled(x) && /target: "cat sat" is \d+ tokens/.test(x.error), 'the error naming target', 30000);
  for (const w of ['model.target', 'model.contrast']) {
    await typeInto(w, '');
    await until(page, (x) => settled(x) && x.model.experiment[w.slice(6)] === '', `${w} empty`, 30000);
  }
  await until(page, (x) => settled(x) && !x.error && x.model.attribution && x.model.attribution.contrast === -1, 'the prediction again', 30000);
  await clickWidget(page, 'model.attribution');  // off again
  await until(page, (x) => settled(x) && !x.model.attribution, 'no grid', 30000);
  return `"${a.token}" − "${b.token}" ${want.total.toFixed(3)}; max difference ${worst.toExponential(1)}; ${e.error}`;
});

await check('the logit lens: every layer\'s top token at every position, as attnviz run --lens', async () => {
  await clickWidget(page, 'model.lens');
  const s = await until(page, (x) => settled(x) && x.model.lens, 'the logit lens', 60000);
  const want = native('--lens').lens;
  const got = s.model.lens;
  expect(got.length === want.length && got[0].length === want[0].length, `lens ${got.length}×${got[0].length}, native ${want.length}×${want[0].length}`);
  let worst = 0;
  got.forEach((row, l) => row.forEach(([id, p, target, rank], t) => {
    const w = want[l][t];
    expect(id === w.top[0][0] && target === w.target && rank === w.target_rank, `lens[${l}][${t}] ${id}/${target}/${rank}, native ${w.top[0][0]}/${w.target}/${w.target_rank}`);
    worst = Math.max(worst, Math.abs(p - w.top[0][1]));
  }));
  expect(worst < 1e-4, `lens probabilities differ by ${worst}`);
  expect(s.widgets['model.lens.0.1'], 'no lens cell on screen');
  await moveAway(page);
  await shot(page, 'experiments-05-lens.png');
  await clickWidget(page, 'model.lens');  // off again
  await until(page, (x) => settled(x) && !x.model.lens, 'no lens', 30000);
  const last = got[got.length - 1];
  return `${got.length} layers × ${last.length} positions; the prediction "${native().top[0].token}" first at layer ${got.findIndex((row) => row[row.length - 1][0] === last[last.length - 1][0])}; max difference ${worst.toExponential(1)}`;
});

await check('the tokens coloured by their probability (and surprisal), as attnviz run --probs; a token\'s tooltip', async () => {
  await clickWidget(page, 'model.probs.p');
  let s = await until(page, (x) => settled(x) && x.model.probs && x.widgets['model.token.1'], 'the tokens\' probabilities', 60000);
  const want = native('--probs').probs, got = s.model.probs;
  expect(got.length === want.length && got[0] === null && want[0] === null, `probs of ${got.length}, native ${want.length}`);
  let worst = 0;
  for (let t = 1; t < got.length; ++t) {
    const [id, p, rank, top] = got[t], w = want[t];
    expect(id === w.id && rank === w.rank && top.length === 10 && top.every(([k], i) => k === w.top[i][0]),
           `probs[${t}] ${id}/${rank}/${top.map(([k]) => k)}, native ${w.id}/${w.rank}/${w.top.map(([k]) => k)}`);
    worst = Math.max(worst, Math.abs(p - w.p), ...top.map(([, q], i) => Math.abs(q - w.top[i][1])));
  }
  expect(worst < 1e-4, `probabilities differ by ${worst}`);
  // the likeliest token's chip is bluer than the least likely one's
  await moveAway(page);
  let img = await shot(page, 'experiments-05c-probs.png');
  const order = got.map((r, t) => [t, r ? r[1] : NaN]).filter(([, p]) => p === p).sort((a, b) => b[1] - a[1]);
  const [likely, unlikely] = [order[0][0], order[order.length - 1][0]];
  const blue = (t) => { const px = patch(img, s.widgets[`model.token.${t}`]); return px.reduce((a, c) => a + c[2] - c[0], 0) / px.length; };
  expect(blue(likely) > blue(unlikely) + 20, `chip ${likely} (p ${order[0][1]}) not bluer than chip ${unlikely}: ${blue(likely)} vs ${blue(unlikely)}`);
  expect(s.widgets['model.probs.legend'], 'no legend');
  // the tooltip of the least likely token, and the surprisal's shading (red where surprising)
  const r = s.widgets[`model.token.${unlikely}`], k = await cssScale(page);
  await page.mouse.move((r[0] + r[2] / 2) / k, (r[1] + r[3] / 2) / k);
  await waitFrames(page, 3);
  await shot(page, 'experiments-05d-probs-tooltip.png');
  await clickWidget(page, 'model.probs.surprisal');
  s = await until(page, (x) => settled(x) && x.model.probs && x.model.experiment.probs === 'surprisal', 'the surprisal', 60000);
  await until(page, (x) => decodeURIComponent(x.link).includes('probs=surprisal'), 'the address bar to say probs=surprisal');
  await moveAway(page);
  img = await shot(page, 'experiments-05e-surprisal.png');
  const red = (t) => { const px = patch(img, s.widgets[`model.token.${t}`]); return px.reduce((a, c) => a + c[0] - c[2], 0) / px.length; };
  expect(red(unlikely) > red(likely) + 20, `chip ${unlikely} not redder than chip ${likely}: ${red(unlikely)} vs ${red(likely)}`);
  await clickWidget(page, 'model.probs.off');
  await until(page, (x) => settled(x) && !x.model.probs, 'no probabilities', 30000);
  return `${got.length} tokens; likeliest at ${likely}, p ${order[0][1].toFixed(3)}, least ${unlikely} p ${order[order.length - 1][1].toExponential(1)}; max difference ${worst.toExponential(1)}`;
});

await check('activation patching into a corrupted text: both grids, as attnviz run --corrupted; one of another length is named', async () => {
  const other = 'The dog sat on the mat. The dog sat on the';
  // (taller: the stream grid under the heads grid, in view)
  const p = await openPage(browser, `${url}#v=1&model=tiny-lm&view=model&patching=1&text=${encodeURIComponent(TEXT)}` +
                                    `&corrupted=${encodeURIComponent(other)}`, { viewport: { width: 1280, height: 1500 } });
  // (the grids are drawn in the panel, before the frame's model work: a frame after the state has them)
  const s = await until(p, (x) => settled(x) && x.model.patching && x.widgets['model.patching.resid.0.1'], 'the patching grids', 90000);
  const top = native().top, theirs = JSON.parse(execFileSync(binary, ['run', 'tiny-lm', '--text', other, '--json']).toString()).top;
  const contrast = theirs[0].id !== top[0].id ? theirs[0].id : top[1].id;
  const want = native('--attribute', `#${top[0].id}`, '--contrast', `#${contrast}`, '--corrupted', other).patching;
  const got = s.model.patching;
  const worst = Math.max(...got.heads.map((v, i) => Math.abs(v - want.heads.flat()[i])), ...got.resid.map((v, i) => Math.abs(v - want.resid.flat()[i])));
  expect(got.heads.length === want.heads.flat().length && got.resid.length === want.resid.flat().length, 'the grids\' shapes differ');
  expect(worst < 1e-4, `patching differs from attnviz run by ${worst}`);
  expect(s.widgets['model.patching.head.1.1'] && s.widgets['model.patching.resid.0.1'] && s.widgets['model.corrupted'], 'no patching cell or corrupted field on screen');
  await moveAway(p);
  await shot(p, 'experiments-05b-patching.png');
  // typed: a corrupted text of another length is an error naming the field; the figure stays
  await clickWidget(p, 'model.corrupted');
  await waitFrames(p, 3);
  await p.keyboard.press('Control+A');
  await p.keyboard.insertText('The dog');
  const e = await until(p, (x) => settled(x) && /corrupted: the corrupted text is \d+ tokens/.test(x.error), 'the error naming corrupted', 30000);
  expect(e.model.figure && !e.model.patching && e.model.experiment.corrupted === 'The dog', `figure ${!!e.model.figure}, patching ${!!e.model.patching}`);
  await p.context().close();
  const best = got.heads.reduce((b, v, i) => (v > got.heads[b] ? i : b), 0);
  return `LD ${got.clean.toFixed(2)} → ${got.corrupted.toFixed(2)}; head ${Math.floor(best / 4) + 1}:${best % 4 + 1} restores ${(100 * got.heads[best]).toFixed(0)} %; max difference ${worst.toExponential(1)}; ${e.error}`;
});

await check('the Why view: the lens, attribution and patching grids at the figure\'s size, as the panel\'s; its SVG and PNG', async () => {
  const other = 'The dog sat on the mat. The dog sat on the';
  const p = await openPage(browser, `${url}#v=1&model=tiny-lm&view=why&lens=1&attribution=1&patching=1&text=${encodeURIComponent(TEXT)}` +
                                    `&corrupted=${encodeURIComponent(other)}`, { viewport: { width: 1280, height: 1100 } });
  const s = await until(p, (x) => settled(x) && x.model.patching && x.model.lens && x.widgets['why.patching.resid.0.1'] && x.widgets['why.lens.0.1'],
                        'the Why view\'s grids', 90000);
  const L = s.model.lens.length, T = s.model.figure.ids.length;
  for (const w of ['why.attribution.1.1', `why.attribution.4.4`, `why.lens.${L - 1}.${T}`, 'why.patching.head.4.4', `why.patching.resid.4.${T}`])
    expect(s.widgets[w], `no cell ${w}`);
  const cell = s.widgets['why.attribution.1.1'], panelCell = s.widgets['model.attribution.1.1'];
  expect(cell[2] > panelCell[2], `the view's cells (${cell[2]} px) no larger than the panel's (${panelCell[2]} px)`);
  await moveAway(p);
  await shot(p, 'experiments-05c-why.png');
  // the SVG: every grid's cells and captions, as drawn
  await clickWidget(p, 'export');
  await until(p, (x) => x.widgets['export.svg'], 'the Export menu', 10000);
  const before = (await state(p)).export.count;
  const [download] = await Promise.all([p.waitForEvent('download', { timeout: 60000 }), clickWidget(p, 'export.svg')]);
  const file = `${artifacts}/${download.suggestedFilename()}`;
  await download.saveAs(file);
  const after = await until(p, (x) => x.export.count > before, 'the export record');
  expect(after.export.error === '' && /-why\.svg$/.test(file), `export ${after.export.error}, ${file}`);
  const svg = await p.evaluate((text) => {
    const doc = new DOMParser().parseFromString(text, 'image/svg+xml');
    if (doc.querySelector('parsererror')) return { error: doc.querySelector('parsererror').textContent.slice(0, 200) };
    return { view: doc.documentElement.getAttribute('data-view'), rects: doc.querySelectorAll('rect').length,
             captions: doc.querySelectorAll('text.caption').length, rows: doc.querySelectorAll('text.row-label').length };
  }, fs.readFileSync(file, 'utf8'));
  const heads = 4 * 4;
  const want = 1 + 2 * heads + L * T + 2 * heads + 2 * (L * T);  // background; attribution; lens; patching's heads and stream
  expect(!svg.error && svg.view === 'why', `svg ${JSON.stringify(svg)}`);
  expect(svg.rects === want && svg.captions === 4 && svg.rows === 4 + L + 4 + L, `svg ${JSON.stringify(svg)}, want ${want} rects`);
  // and a PNG of it
  await moveAway(p);
  await clickWidget(p, 'export');
  await until(p, (x) => x.widgets['export.png1'], 'the Export menu', 10000);
  const [png] = await Promise.all([p.waitForEvent('download', { timeout: 60000 }), clickWidget(p, 'export.png1')]);
  await png.saveAs(`${artifacts}/${png.suggestedFilename()}`);
  const done = await until(p, (x) => x.export.count > after.export.count, 'the PNG export');
  expect(done.export.error === '' && done.export.width > 600, `png ${JSON.stringify(done.export)}`);
  await p.context().close();
  return `${L} × ${T} lens, 4 × 4 heads; SVG ${svg.rects} rects; PNG ${done.export.width} × ${done.export.height}`;
});

await check('set-view takes the experiment in an embed, and a bad value is named', async () => {
  const host = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  await host.setContent(`<iframe id="f" width="1200" height="760" src="${url}#v=1&model=tiny-lm&panels=0&text=${encodeURIComponent(TEXT)}"></iframe>`);
  const frame = await (await host.$('#f')).contentFrame();
  await frame.waitForFunction(() => window.attnvizReady === true, null, { timeout: 90000 });
  await until(frame, settled, 'the embed run', 60000);
  const talk = (message) => host.evaluate((message) => new Promise((resolve, reject) => {
    const f = document.getElementById('f').contentWindow;
    const deadline = setTimeout(() => reject(new Error('no reply')), 20000);
    window.addEventListener('message', function listen(e) {
      if (e.source !== f || !e.data || e.data.id !== message.id) return;
      clearTimeout(deadline);
      window.removeEventListener('message', listen);
      resolve(e.data);
    });
    f.postMessage(message, '*');
  }), message);
  const reply = await talk({ type: 'attnviz:set-view', id: 1, knockout: '1:1,3:2', knockout_mode: 'mean' });
  expect(reply.type === 'attnviz:ok', JSON.stringify(reply));
  const s = await until(frame, (x) => settled(x) && x.model.experiment.knockout === '1:1,3:2', 'the rerun from set-view', 30000);
  sameTop(s, native('--knockout', '1:1,3:2', '--knockout-mode', 'mean'));
  const st = await talk({ type: 'attnviz:get-state', id: 2 });
  expect(st.state.knockout === '1:1,3:2' && st.state.knockout_mode === 'mean' && /knockout=/.test(st.hash), JSON.stringify(st));
  const bad = await talk({ type: 'attnviz:set-view', id: 3, knockout: '9-9' });
  expect(bad.type === 'attnviz:error' && bad.field === 'knockout', JSON.stringify(bad));
  await host.context().close();
  return `top "${s.model.figure.top[0].token}" ${s.model.figure.top[0].p.toFixed(4)}`;
});

const PROMPT = 'In the beginning';
const settledGeneration = (s) => settled(s) && s.model.generation.ids.length > 0 && !s.model.generation.requested;
let sampled;
await check('a generate= link samples the same tokens as attnviz run --seed, shown whole', async () => {
  const other = await openPage(browser, `${url}#v=1&model=tiny-lm&view=heatmap&text=${encodeURIComponent(PROMPT)}` +
                                        '&generate=8&temperature=0.9&top_k=40&seed=7');
  const s = await until(other, settledGeneration, 'the generation', 60000);
  const want = JSON.parse(execFileSync(binary, ['run', 'tiny-lm', '--text', PROMPT, '--json', '--top', '10', '--generate', '8',
                                                '--temperature', '0.9', '--top-k', '40', '--seed', '7']).toString());
  const g = s.model.generation;
  expect(JSON.stringify(g.ids) === JSON.stringify(want.ids), `page ${g.ids}, native ${want.ids}`);
  expect(g.step === want.generated_ids.length && JSON.stringify(s.model.figure.ids) === JSON.stringify(want.ids), `step ${g.step}`);
  sampled = { page: other, want, prompt: g.prompt };
  await moveAway(other);
  await shot(other, 'experiments-04-generated.png');
  return `"${want.generated_tokens.join('')}"`;
});

await check('the scrubber goes back through the steps: the newest query pinned, the distribution it sampled from', async () => {
  const { page: p, want, prompt } = sampled;
  const s0 = await state(p);
  const r = s0.widgets['model.gen.step'];
  const k = await cssScale(p);
  await p.mouse.click((r[0] + 4) / k, (r[1] + r[3] / 2) / k);  // the slider's left end: step 0
  const s = await until(p, (x) => settled(x) && x.model.generation.step === 0 && x.model.figure.ids.length === prompt, 'step 0', 30000);
  expect(s.pinned && s.pinned.side === 'query' && s.pinned.index === prompt - 1, `pinned ${JSON.stringify(s.pinned)}`);
  const ids = (t) => t.map((x) => x.id).join(',');
  expect(ids(s.model.figure.top) === ids(want.generated_top[0].slice(0, s.model.figure.top.length)),
         `step 0's next tokens ${ids(s.model.figure.top)}, native ${ids(want.generated_top[0])}`);
  await page.waitForTimeout(600);
  const hash = (await p.evaluate(() => location.hash)).slice(1);
  expect(/generate=8/.test(hash) && /seed=7/.test(hash) && /step=0/.test(hash), `hash ${hash}`);
  await moveAway(p);
  await shot(p, 'experiments-05-step0.png');
  const again = await openPage(browser, `${url}#${hash}`);
  const t = await until(again, (x) => settledGeneration(x) && x.model.figure.ids.length === prompt, 'the linked step', 60000);
  expect(JSON.stringify(t.model.generation.ids) === JSON.stringify(want.ids) && t.model.generation.step === 0, `linked ${t.model.generation.ids}`);
  await again.context().close();
  await p.context().close();
  return `step 0 of ${want.generated_ids.length}: "${s.model.figure.top[0].token}" first, ${want.generated_tokens[0]} picked`;
});

await check('the Generate button continues the text greedily, as attnviz run --generate', async () => {
  await clickWidget(page, 'model.importance');  // off again
  await clickWidget(page, 'model.gen.button');
  const s = await until(page, settledGeneration, 'the generation', 60000);
  const want = native('--generate', '20');
  expect(JSON.stringify(s.model.generation.ids) === JSON.stringify(want.ids), `page ${s.model.generation.ids}, native ${want.ids}`);
  await moveAway(page);
  await shot(page, 'experiments-06-greedy.png');
  return `"${want.generated_tokens.join('')}"`;
});

await check('the Explain view: weights, value-weighted and rollout side by side, for a live head and a scene', async () => {
  const live = await openPage(browser, `${url}#v=1&model=tiny-lm&view=explain&map=attention%3A2%3A3&text=${encodeURIComponent(TEXT)}`);
  const s = await until(live, (x) => settled(x) && x.view === 'explain' && x.widgets['explain.map.2'], 'the Explain view of 2:3', 60000);
  const maps = [0, 1, 2].map((k) => s.widgets[`explain.map.${k}`]);
  expect(maps.every((r) => r && r[2] > 100 && Math.abs(r[2] - r[3]) < 2), `maps ${JSON.stringify(maps)}`);
  expect(maps[0][0] + maps[0][2] < maps[1][0] && maps[1][0] + maps[1][2] < maps[2][0], 'the maps are not side by side');
  await moveAway(live);
  await shot(live, 'experiments-07-explain-live.png');
  await live.context().close();
  const scene = await openPage(browser, `${url}#v=1&preset=multi-head-rain&view=explain`);
  const t = await until(scene, (x) => x.view === 'explain' && x.widgets['explain.map.1'], 'the Explain view of a scene');
  await moveAway(scene);
  await shot(scene, 'experiments-08-explain-scene.png');
  await scene.context().close();
  return `live 2:3 maps ${maps.map((r) => Math.round(r[2])).join(' / ')} px; scene ${t.queries.length} tokens`;
});

await check('the Compare view: one head on two texts and their difference, as attnviz run gives the second', async () => {
  const other = 'The dog sat on the mat. The dog sat on the';
  const p = await openPage(browser, `${url}#v=1&model=tiny-lm&view=compare&map=attention%3A2%3A3&text=${encodeURIComponent(TEXT)}` +
                                    `&compare=${encodeURIComponent(other)}`);
  const s = await until(p, (x) => settled(x) && x.view === 'compare' && x.widgets['compare.map.2'], 'the Compare view', 60000);
  const want = JSON.parse(execFileSync(binary, ['run', 'tiny-lm', '--text', other, '--json']).toString());
  expect(JSON.stringify(s.model.compare_ids) === JSON.stringify(want.ids), `compare ids ${s.model.compare_ids}, native ${want.ids}`);
  const maps = [0, 1, 2].map((k) => s.widgets[`compare.map.${k}`]);
  expect(maps.every((r) => r && r[2] > 100), `maps ${JSON.stringify(maps)}`);
  await moveAway(p);
  await shot(p, 'experiments-09-compare.png');
  await p.context().close();
  return `${want.ids.length} tokens each; maps ${maps.map((r) => Math.round(r[2])).join(' / ')} px`;
});

await check('the controls panel scrolls with the wheel: down for a wheel turned down, about a line a notch', async () => {
  const p = await openPage(browser, `${url}#v=1&preset=multi-head-rain`, { viewport: { width: 1280, height: 500 } });
  const y0 = (await state(p)).widgets.preset[1];
  await p.mouse.move(150, 300);
  await p.mouse.wheel(0, 100);  // one notch, as Chromium sends it
  await waitFrames(p, 4);
  const y1 = (await state(p)).widgets.preset[1];
  await p.mouse.wheel(0, -100);
  await waitFrames(p, 4);
  const y2 = (await state(p)).widgets.preset[1];
  expect(y1 < y0 && y0 - y1 < 200 && y2 === y0, `preset at ${y0} -> ${y1} -> ${y2}`);
  await p.context().close();
  return `one notch moved the panel ${y0 - y1} px`;
});

await finishSuite('browser-experiments');
