// newcomer.mjs: the path a newcomer takes, looked at as they would (issue 52). Every built-in
// scene opened by its link (the live ones too), every view it has, at 1280 × 800 and on a
// phone (390 × 844), in English and in Chinese; then every complete link README.md and docs/
// show. It fails on what got in a newcomer's way:
//   - a link that answers with an error, or opens another view than it names;
//   - text cut at the figure's edge: a caption of the figure (probe_captions) past its right
//     edge, or past its bottom in a view that does not scroll;
//   - a token named as nothing: an empty or blank quoted token in the words the views say
//     (the twin's: steps_said, steps_why; the labels drawn are token_text's, which
//     tests/test_layout.cpp checks never blank);
//   - a status-bar hint naming what the view does not have (a cell where there are none).
// A screenshot of each step goes to ARTIFACT_DIR (look at them: most bugs here are visible).
//   node tests/browser/newcomer.mjs SITE_DIR ARTIFACT_DIR
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { check, expect, finishSuite, moveAway, openPage, shot, startSuiteOrEnd, state, until, waitFrames } from './harness.mjs';

const [siteDir, artifacts] = process.argv.slice(2);
if (!siteDir || !artifacts) {
  console.error('usage: node newcomer.mjs SITE_DIR ARTIFACT_DIR');
  process.exit(2);
}
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const { browser, url } = await startSuiteOrEnd('browser-newcomer', siteDir, artifacts);

// [what a view may say] ------------------------------------------------------------------------

// The views a figure has (Steps twice: its matrices, then FlashAttention's tiles): a model's (live)
// add the model grid and the Why view; Compare needs a second text.
const viewsOf = (s) => ['lines', 'heatmap', 'steps', 'steps&tiles=auto', 'explain', 'qk', ...(s.model.active ? ['model', 'why'] : [])];
// What a view's hint may not name: cells where there are none.
const wrongHint = { lines: /cell|格子/, qk: /cell|格子/, model: /cell|格子/, steps: /cell|格子/ };
// Nothing on its way (a built-in model's files are fetched before it is active), and a live model's
// figure of the text asked for, of the model asked for (not the one before it).
const settled = (s) => !s.model.busy && (!s.model.active || (s.model.run_revision === s.model.input_revision && s.model.figure &&
                                                             (!s.model.builtin || s.model.name === s.model.builtin)));
const inside = (r, box) => r[0] >= box[0] - 1 && r[0] + r[2] <= box[0] + box[2] + 1;
const below = (r, box) => r[1] + r[3] > box[1] + box[3] + 1;
const scrolls = new Set(['steps', 'explain', 'model', 'why']);  // the views whose content scrolls

function problems(s, view) {
  const found = [];
  if (s.error) found.push(`error: ${s.error}`);
  if (s.view !== view) found.push(`the link opened the ${s.view} view`);
  if (wrongHint[view] && wrongHint[view].test(s.hint)) found.push(`hint "${s.hint}" in the ${view} view`);
  for (const [name, r] of Object.entries(s.widgets)) {
    if (!name.startsWith('caption.')) continue;
    if (!inside(r, s.figure)) found.push(`${name} ${r.map(Math.round)} past the figure's right edge ${s.figure.map(Math.round)}`);
    else if (!scrolls.has(view) && below(r, s.figure)) found.push(`${name} ${r.map(Math.round)} past the figure's bottom`);
  }
  for (const words of [s.steps_said, s.steps_why])
    if (/“\s*”|"\s*"/.test(words || '')) found.push(`a blank token named: ${words.slice(0, 120)}`);
  return found;
}

// Opens a link in `page` as a reader's address bar does (the page follows its hash).
async function go(page, hash) {
  await page.evaluate((h) => { location.hash = h; }, hash);
  await waitFrames(page, 3);
  return until(page, settled, `the figure of ${hash}`, 90000);
}

// [every scene, every view] ----------------------------------------------------------------------

const sizes = [
  { name: 'desktop', viewport: { width: 1280, height: 800 }, lang: 'en', scenes: () => true },
  { name: 'phone', viewport: { width: 390, height: 844 }, lang: 'en', scenes: (n, live) => live || ['masked-apple', 'multi-head-rain', 'cross-rain'].includes(n) },
  { name: 'zh', viewport: { width: 1280, height: 800 }, lang: 'zh', scenes: (n, live) => live || ['i-am-good-cross', 'long-text'].includes(n) },
];
for (const size of sizes) {
  await check(`${size.name} (${size.viewport.width}×${size.viewport.height}, ${size.lang}): every built-in scene by its link, every view, nothing cut, no blank token, the hint the view's`, async () => {
    const page = await openPage(browser, `${url}#v=1&lang=${size.lang}`, { viewport: size.viewport });
    const names = (await state(page)).scenes;
    const live = new Set(names.slice(names.indexOf('induction')));
    const dir = path.join(artifacts, size.name);
    fs.mkdirSync(dir, { recursive: true });
    const found = [];
    let shown = 0;
    for (const name of names.filter((n) => size.scenes(n, live.has(n)))) {
      let s = await go(page, `v=1&preset=${name}&lang=${size.lang}`);
      if (s.error) { found.push(`${name}: ${s.error}`); continue; }
      for (const views of viewsOf(s)) {
        const view = views.split('&')[0];
        s = await go(page, `v=1&preset=${name}&lang=${size.lang}&view=${views}`);
        await moveAway(page);
        s = await state(page);
        for (const p of problems(s, view)) found.push(`${name} ${views}: ${p}`);
        await shot(page, path.join(size.name, `${name}-${views.replace(/[&=]/g, '-')}.png`));
        ++shown;
      }
    }
    await page.context().close();
    expect(found.length === 0, `${found.length} problems:\n  ${found.slice(0, 20).join('\n  ')}`);
    return `${shown} figures looked at`;
  });
}

// [the docs' links] ------------------------------------------------------------------------------

await check('every complete link in README.md and docs/ opens without an error', async () => {
  const files = ['README.md', ...fs.readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
  const links = new Set();
  for (const f of files)
    for (const m of fs.readFileSync(path.join(root, f), 'utf8').matchAll(/v=1&[A-Za-z0-9_=&%:.,@\-]+/g)) {
      const link = m[0].replace(/[.,]+$/, '');
      // Complete: no placeholder, nothing from outside the page (a Hub model, an imported file), a scene named.
      if (/hf=|import=|scene=|source=|L:H|LAYER|=N\b|=(&|$)/.test(link) || !/preset=|model=/.test(link)) continue;
      links.add(link);
    }
  const page = await openPage(browser, `${url}#v=1`);
  const found = [];
  for (const link of links) {
    const s = await go(page, link);
    if (s.error) found.push(`${link}: ${s.error}`);
  }
  await page.context().close();
  expect(links.size >= 3 && found.length === 0, `${links.size} links; ${found.join('; ')}`);
  return `${links.size} links`;
});

await finishSuite('browser-newcomer');
