#!/usr/bin/env node
// embed.mjs: the figure in a link and in other people's pages (docs/EMBED.md).
//   node tests/browser/embed.mjs SITE_DIR ARTIFACT_DIR
// Link round trips (view, head, token, theme, a typed sentence, a custom scene), the figure-only
// layout, the three-iframe example page, the script-tag embed, the parent page's messages, the
// pages under a strict Content-Security-Policy, and the single-file build from file://.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { differing, distinctColors, patch, pixel } from './png.mjs';
import {
  artifactDir, check, clickWidget, consoleErrors, expect, failSetup, finishSuite, freePort, looksMasked, luminance,
  moveAway, openPage, pointAt, requests, shot, spread, startSuite, state, until, waitForServer, waitFrames,
} from './harness.mjs';
import { decodePng } from './png.mjs';
import fs from 'node:fs';

const [siteDir, artifacts] = process.argv.slice(2);
if (!siteDir || !artifacts) {
  console.error('usage: node tests/browser/embed.mjs SITE_DIR ARTIFACT_DIR');
  process.exit(2);
}

const kCsp = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; img-src 'self'; " +
             "connect-src 'self'; frame-src 'self'; object-src 'none'; base-uri 'none'";
const b64url = (text) => Buffer.from(text, 'utf8').toString('base64url');

// Screenshot of the whole page (for pages whose canvas is not the whole page).
async function pageShot(page, name) {
  const buffer = await page.screenshot({ path: path.join(artifactDir, name), fullPage: true });
  return decodePng(buffer);
}

// Waits for every attnviz iframe of a page to draw its first frame; returns their frames by id.
async function embeddedFrames(page, ids) {
  const out = {};
  for (const id of ids) {
    const handle = await page.waitForSelector(`#${id}`);
    await handle.scrollIntoViewIfNeeded();
    const frame = await handle.contentFrame();
    await frame.waitForFunction(() => window.attnvizReady === true, null, { timeout: 90000 });
    out[id] = { frame, handle };
  }
  return out;
}

const frameState = (frame) => frame.evaluate(() => JSON.parse(Module.UTF8ToString(Module._attnviz_state())));

// The figure rectangle of an embedded app, in page pixels of a full-page screenshot.
async function figureOnPage(page, handle, s) {
  const box = await handle.boundingBox();
  const scroll = await page.evaluate(() => [window.scrollX, window.scrollY]);
  const k = s.ui_scale || 1;
  return [box.x + scroll[0] + s.figure[0] / k, box.y + scroll[1] + s.figure[1] / k, s.figure[2] / k, s.figure[3] / k];
}

// Records securitypolicyviolation events (and CSP console errors) of a page and its frames.
async function watchCsp(context) {
  await context.addInitScript(() => {
    window.__csp = [];
    document.addEventListener('securitypolicyviolation', (e) => {
      window.__csp.push(`${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`);
    });
  });
}
const cspConsole = [];

try {
  const { url, origin, browser } = await startSuite(siteDir, artifacts);
  const base = `${origin}/index.html`;

  await check('a link opens its figure: view, head, token, theme, language, preset', async () => {
    const page = await openPage(browser, `${base}#v=1&preset=multi-head-rain&view=heatmap&head=2&token=q2&theme=light&lang=zh`);
    const s = await state(page);
    expect(s.error === '', `error: ${s.error}`);
    expect(s.preset === 'multi-head-rain' && s.showing_preset, `preset ${s.preset}, showing ${s.showing_preset}`);
    expect(s.view === 'heatmap', `view ${s.view}`);
    expect(s.heatmap_head === 1, `heatmap head ${s.heatmap_head}`);
    expect(s.pinned && s.pinned.side === 'query' && s.pinned.index === 1, `pinned ${JSON.stringify(s.pinned)}`);
    expect(s.theme === 'light' && s.lang === 'zh' && s.panels === true, `theme ${s.theme}, lang ${s.lang}, panels ${s.panels}`);
    await page.context().close();
  });

  await check('the address bar follows the state; a copied link reopens the identical figure', async () => {
    const page = await openPage(browser, url);
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
    // A typed sentence, the heatmap, the light theme, a pinned token.
    await clickWidget(page, 'input.target');
    await waitFrames(page, 3);
    await page.keyboard.press('Control+A');
    await page.keyboard.type('the cat sat on the mat');
    let s = await until(page, (x) => x.queries.length === 6 && x.query_rects.length === 6, 'six tokens');
    await moveAway(page);
    await pointAt(page, s.query_rects[3], true);  // pins "on" (the Lines view pins on click)
    await moveAway(page);
    s = await until(page, (x) => x.pinned && x.pinned.index === 3, 'the pinned token');
    await clickWidget(page, 'view.heatmap');
    await clickWidget(page, 'theme');
    s = await until(page, (x) => x.view === 'heatmap' && x.theme === 'light', 'heatmap, light');
    s = await until(page, (x) => x.link.includes('scene=') && x.link.includes('view=heatmap') && x.link.includes('theme=light'), 'the link');
    s = await until(page, (x) => x.frame > s.frame + 20, 'a few frames');
    const hash = await page.evaluate(() => location.hash);
    expect(hash === `#${s.link}`, `address bar ${hash.slice(0, 60)} vs state ${s.link.slice(0, 60)}`);

    await clickWidget(page, 'share.link');
    s = await until(page, (x) => x.copied !== '', 'the copied link');
    expect(s.copied === `${base}#${s.link}`, `copied ${s.copied.slice(0, 80)}`);
    const clip = await page.evaluate(() => navigator.clipboard.readText());
    expect(clip === s.copied, `clipboard holds ${String(clip).slice(0, 80)}`);
    await moveAway(page);
    const before = await shot(page, 'link-original.png');
    const original = await state(page);

    const copy = await openPage(browser, s.copied);
    await moveAway(copy);
    const t = await state(copy);
    for (const key of ['view', 'theme', 'lang', 'kind', 'heads', 'heatmap_head', 'panels'])
      expect(JSON.stringify(t[key]) === JSON.stringify(original[key]), `${key}: ${t[key]} vs ${original[key]}`);
    expect(JSON.stringify(t.queries) === JSON.stringify(original.queries), `queries ${t.queries}`);
    expect(JSON.stringify(t.pinned) === JSON.stringify(original.pinned), `pinned ${JSON.stringify(t.pinned)}`);
    expect(t.link === original.link, 'the reopened link differs');
    const after = await shot(copy, 'link-reopened.png');
    const diff = differing(before, after, original.figure);
    expect(diff === 0, `${diff} figure pixels differ between the original and the reopened link`);
    await copy.context().close();
    await page.context().close();
    return `${s.link.length} characters, pinned ${JSON.stringify(original.pinned)}`;
  });

  await check('a custom scene in the link: cross, two heads, seeded weights, Chinese tokens', async () => {
    const scene = { kind: 'cross', tokens: ['猫', '坐', '着'], source_tokens: 'the cat sits', d_model: 4, heads: 2, weights: { seed: 3 } };
    const page = await openPage(browser, `${base}#v=1&scene=${b64url(JSON.stringify(scene))}&view=steps&head=2&token=k3`);
    const s = await state(page);
    expect(s.error === '', `error: ${s.error}`);
    expect(s.kind === 'cross' && s.heads === 2, `kind ${s.kind}, heads ${s.heads}`);
    expect(JSON.stringify(s.queries) === '["猫","坐","着"]' && JSON.stringify(s.keys) === '["the","cat","sits"]', `${s.queries} / ${s.keys}`);
    expect(s.view === 'steps' && s.steps_head === 1, `view ${s.view}, steps head ${s.steps_head}`);
    expect(s.pinned && s.pinned.side === 'key' && s.pinned.index === 2, `pinned ${JSON.stringify(s.pinned)}`);
    await page.context().close();
  });

  await check('a bad link keeps the default figure and says which parameter; hashchange opens links', async () => {
    const page = await openPage(browser, `${base}#v=1&preset=i-am-good&head=3`);
    let s = await state(page);
    expect(s.error.startsWith('link: head:'), `error: ${s.error}`);
    expect(s.preset === 'i-am-good' && s.queries.length === 3, `figure ${s.preset} ${s.queries}`);
    expect(s.widgets.error, 'no error line on screen');
    await waitFrames(page, 20);
    expect((await page.evaluate(() => location.hash)) === '#v=1&preset=i-am-good&head=3', 'the bad link was replaced');
    await page.evaluate(() => { location.hash = '#v=1&preset=wo-ai-ni&view=heatmap'; });
    s = await until(page, (x) => x.view === 'heatmap' && x.preset === 'wo-ai-ni', 'the new hash');
    expect(s.error === '', `error: ${s.error}`);
    await page.evaluate(() => { location.hash = '#v=1&scene=AAAA'; });
    s = await until(page, (x) => x.error.startsWith('link: scene'), 'the scene error');
    expect(s.view === 'heatmap' && s.preset === 'wo-ai-ni', 'the figure changed on a bad link');
    await page.context().close();
    return s.error;
  });

  await check('figure only (panels=0) at 640×400: the strip and the figure', async () => {
    const page = await openPage(browser, `${base}#v=1&preset=multi-head-rain&view=heatmap&panels=0&theme=light`,
                                { viewport: { width: 640, height: 400 } });
    let s = await state(page);
    expect(s.panels === false, 'panels shown');
    expect(!s.widgets.preset && !s.widgets['view.lines'], `panel widgets on screen: ${Object.keys(s.widgets)}`);
    for (const w of ['strip.view.lines', 'strip.view.heatmap', 'strip.view.steps', 'strip.head', 'strip.open'])
      expect(s.widgets[w], `no ${w} (have ${Object.keys(s.widgets)})`);
    const strip = s.widgets['strip.view.lines'];
    expect(strip[1] + strip[3] < 40, `the strip is ${strip[1] + strip[3]} px tall`);
    expect(s.figure[3] > 330 && s.figure[2] > 620, `figure ${s.figure}`);
    await moveAway(page);
    const img = await shot(page, 'figure-only-heatmap.png');
    expect(distinctColors(img, s.grid) > 6, 'the heatmap is blank');
    expect(luminance(pixel(img, 630, 390)) > 200, 'the light theme background is not light');
    await clickWidget(page, 'strip.view.lines');
    s = await until(page, (x) => x.view === 'lines', 'lines');
    await moveAway(page);
    s = await state(page);
    expect(s.lines_drawn > 0, 'no lines');
    await shot(page, 'figure-only-lines.png');
    await clickWidget(page, 'strip.view.steps');
    await until(page, (x) => x.view === 'steps', 'steps');
    await moveAway(page);
    await shot(page, 'figure-only-steps.png');
    s = await until(page, (x) => x.link.includes('view=steps') && x.link.includes('panels=0'), 'the link');
    await page.context().close();
  });

  await check('the embed dialog gives a plain iframe to the figure-only link', async () => {
    const page = await openPage(browser, `${base}#v=1&preset=cross-rain&view=steps`);
    await clickWidget(page, 'share.embed');
    let s = await until(page, (x) => x.widgets['embed.copy'], 'the dialog');
    await clickWidget(page, 'embed.copy');
    s = await until(page, (x) => x.copied.startsWith('<iframe'), 'the snippet');
    const link = `${base}#v=1&preset=cross-rain&view=steps&panels=0`;
    const want = `<iframe src="${link.replace(/&/g, '&amp;')}" width="640" height="400" title="attnviz: cross-rain" loading="lazy" style="border:0"></iframe>`;
    expect(s.copied === want, `snippet ${s.copied}`);
    await shot(page, 'embed-dialog.png');
    await page.context().close();
    return s.copied;
  });

  let examplePage;
  await check('the example page: three iframes, three different figures', async () => {
    const context = await browser.newContext({ viewport: { width: 760, height: 900 } });
    await context.addInitScript(() => {
      window.__ready = 0;
      window.addEventListener('message', (e) => { if (e.data && e.data.type === 'attnviz:ready') ++window.__ready; });
    });
    examplePage = await context.newPage();
    examplePage.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(`[example] ${m.text()}`); });
    await examplePage.goto(`${origin}/embed-example.html`);
    const frames = await embeddedFrames(examplePage, ['fig-self', 'fig-masked', 'fig-cross']);
    const states = {};
    for (const [id, { frame }] of Object.entries(frames)) {
      await frame.waitForFunction(() => JSON.parse(Module.UTF8ToString(Module._attnviz_state())).frame > 5);
      states[id] = await frameState(frame);
    }
    const ready = await examplePage.evaluate(() => window.__ready);
    expect(ready === 3, `${ready} "attnviz:ready" messages reached the page, want 3`);
    expect(states['fig-self'].view === 'lines' && states['fig-self'].kind === 'self', 'figure 1');
    expect(states['fig-masked'].view === 'heatmap' && states['fig-masked'].kind === 'masked', 'figure 2');
    expect(states['fig-cross'].view === 'steps' && states['fig-cross'].kind === 'cross', 'figure 3');
    for (const s of Object.values(states)) expect(s.panels === false && s.theme === 'light', 'not figure-only light');
    await examplePage.evaluate(() => window.scrollTo(0, 0));
    const img = await pageShot(examplePage, 'example-page.png');
    const notes = [];
    for (const [id, { handle }] of Object.entries(frames)) {
      const s = states[id];
      const rect = await figureOnPage(examplePage, handle, s);
      const colours = distinctColors(img, rect);
      expect(colours > 12, `${id}: ${colours} colours in its figure, looks blank`);
      notes.push(`${id} ${colours}`);
      const k = s.ui_scale || 1;
      const [fx, fy] = rect;
      const toPage = ([x, y, w, h]) => [fx + (x - s.figure[0]) / k, fy + (y - s.figure[1]) / k, w / k, h / k];
      if (id === 'fig-self') {
        // The strongest line (I → I) in the head colour between the token columns.
        const q = toPage(s.query_rects[0]), kk = toPage(s.key_rects[0]);
        const mid = pixel(img, (q[0] + q[2] + kk[0]) / 2, q[1] + q[3] / 2);
        expect(spread(mid) > 60, `no line at the I → I midpoint: ${mid}`);
      }
      if (id === 'fig-masked') {
        // The top-right cell is masked (hatched), the top-left is a weight (colour).
        const [gx, gy, gw, gh] = toPage(s.grid);
        const n = s.keys.length, cw = gw / n, ch = gh / s.queries.length;
        expect(looksMasked(img, [gx + (n - 1) * cw + cw * 0.15, gy + ch * 0.15, cw * 0.3, ch * 0.3]), 'the masked cell is not hatched');
        expect(spread(pixel(img, gx + cw * 0.2, gy + ch * 0.2)) > 40, 'the first cell has no colour');
      }
    }
    // The wheel over a figure that does not scroll scrolls the post, not the figure.
    const box = await frames['fig-self'].handle.boundingBox();
    await examplePage.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    const y0 = await examplePage.evaluate(() => window.scrollY);
    await examplePage.mouse.wheel(0, 300);
    // The compositor waits for the frame's (busy, software-rendered) main thread to see the
    // wheel listeners: give it time.
    await examplePage.waitForFunction((y) => window.scrollY > y + 100, y0, { timeout: 10000, polling: 100 }).catch(() => {});
    const y1 = await examplePage.evaluate(() => window.scrollY);
    expect(y1 > y0 + 100, `the page did not scroll under the wheel over figure 1 (${y0} → ${y1})`);
    notes.push(`wheel scrolled the post ${y1 - y0} px`);
    return notes.join(', ');
  });

  await check('the example page\'s buttons drive figure 1 with postMessage', async () => {
    const frame = (await (await examplePage.$('#fig-self')).contentFrame());
    await examplePage.click('#fig-self-controls button[data-view="heatmap"]');
    await frame.waitForFunction(() => JSON.parse(Module.UTF8ToString(Module._attnviz_state())).view === 'heatmap');
    await examplePage.click('#fig-self-controls button[data-sentence]');
    await frame.waitForFunction(() => JSON.parse(Module.UTF8ToString(Module._attnviz_state())).queries.length === 6);
  });

  await check('postMessage: set-scene, set-view, get-state; junk ignored; a bad scene named, figure kept', async () => {
    // Sends from the parent page, then a get-state of its own; returns every reply from that frame
    // that came before the reply to that last message. The frame answers messages in the order they
    // arrive, each at once, so by then every message before it (junk included) has had its answer.
    const talk = (messages) => examplePage.evaluate(async (messages) => {
      const frame = document.getElementById('fig-cross').contentWindow;
      const replies = [];
      let listen;
      const last = new Promise((resolve, reject) => {
        const deadline = setTimeout(() => reject(new Error('no reply to a get-state within 20 s')), 20000);
        listen = (e) => {
          if (e.source !== frame) return;
          if (e.data && e.data.id === 'talk-end') { clearTimeout(deadline); resolve(); } else replies.push(e.data);
        };
        window.addEventListener('message', listen);
      });
      for (const m of messages) frame.postMessage(m, '*');
      frame.postMessage({ type: 'attnviz:get-state', id: 'talk-end' }, '*');
      try { await last; } finally { window.removeEventListener('message', listen); }
      return replies;
    }, messages);
    const frame = await (await examplePage.$('#fig-cross')).contentFrame();
    const before = await frameState(frame);

    let replies = await talk(['hello', 42, null, [1, 2], { type: 7 }, { type: 'attnviz:explode' }, { type: 'other:get-state' },
                              { kind: 'attnviz:get-state' }]);
    expect(replies.length === 0, `junk got replies: ${JSON.stringify(replies)}`);
    let s = await frameState(frame);
    expect(JSON.stringify(s.queries) === JSON.stringify(before.queries) && s.view === before.view, 'junk changed the figure');

    replies = await talk([{ type: 'attnviz:set-scene', id: 1, scene: { kind: 'masked', tokens: 'we go to school today' } },
                          { type: 'attnviz:set-view', id: 2, view: 'heatmap', token: 'q3' },
                          { type: 'attnviz:get-state', id: 3 }]);
    const byId = Object.fromEntries(replies.map((r) => [r.id, r]));
    expect(byId[1] && byId[1].type === 'attnviz:ok', `set-scene: ${JSON.stringify(byId[1])}`);
    expect(byId[2] && byId[2].type === 'attnviz:ok', `set-view: ${JSON.stringify(byId[2])}`);
    const st = byId[3];
    expect(st && st.type === 'attnviz:state', `get-state: ${JSON.stringify(st)}`);
    expect(st.state.view === 'heatmap' && st.state.token === 'q3' && st.state.scene.kind === 'masked', `state ${JSON.stringify(st.state)}`);
    expect(st.hash.startsWith('v=1&scene='), `hash ${st.hash}`);
    s = await frameState(frame);
    expect(s.kind === 'masked' && s.queries.length === 5 && s.view === 'heatmap', `figure ${s.kind} ${s.queries} ${s.view}`);

    replies = await talk([{ type: 'attnviz:set-scene', id: 4, scene: { kind: 'self', tokens: 7 } },
                          { type: 'attnviz:set-view', id: 5, view: 'pie' },
                          { type: 'attnviz:set-view', id: 6, head: 9 }]);
    const errors = Object.fromEntries(replies.map((r) => [r.id, r]));
    expect(errors[4] && errors[4].type === 'attnviz:error' && errors[4].field === 'scene.tokens', `bad scene: ${JSON.stringify(errors[4])}`);
    expect(errors[5] && errors[5].field === 'view', `bad view: ${JSON.stringify(errors[5])}`);
    expect(errors[6] && errors[6].field === 'head', `bad head: ${JSON.stringify(errors[6])}`);
    const after = await frameState(frame);
    expect(after.kind === 'masked' && after.queries.length === 5 && after.view === 'heatmap', 'a bad message changed the figure');
    return errors[4].message;
  });

  await check('the script-tag embed: two figures, one canvas each, no iframe', async () => {
    const context = await browser.newContext({ viewport: { width: 760, height: 1100 } });
    const page = await context.newPage();
    page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(`[script-embed] ${m.text()}`); });
    await page.goto(`${origin}/embed-script-example.html`);
    await page.waitForSelector('#fig-a[data-attnviz-ready]', { timeout: 90000 });
    await page.waitForSelector('#fig-b[data-attnviz-ready]', { timeout: 90000 });
    // Both figures drawing, a few frames past their first, their fonts in.
    await page.waitForFunction(() => ['fig-a', 'fig-b'].every((id) => {
      const m = document.getElementById(id).attnviz;
      if (!m || !m._attnviz_state) return false;
      const s = JSON.parse(m.UTF8ToString(m._attnviz_state()));
      return s.frame >= 5 && !s.fonts.font_pending;
    }), null, { timeout: 30000, polling: 50 });
    expect((await page.$$('iframe')).length === 0, 'an iframe on the page');
    expect((await page.$$('canvas')).length === 2, 'not one canvas per figure');
    const a = await page.evaluate(() => document.getElementById('fig-a').attnvizMessage({ type: 'attnviz:get-state' }));
    const b = await page.evaluate(() => document.getElementById('fig-b').attnvizMessage({ type: 'attnviz:get-state' }));
    expect(a.state.preset === 'multi-head-rain' && a.state.view === 'lines' && a.state.panels === false, `figure a ${JSON.stringify(a.state).slice(0, 120)}`);
    expect(b.state.preset === 'wo-ai-ni' && b.state.view === 'heatmap', `figure b ${JSON.stringify(b.state).slice(0, 120)}`);
    expect((await page.evaluate(() => location.hash)) === '', 'a figure wrote the page\'s hash');
    const img = await pageShot(page, 'script-embed.png');
    for (const id of ['fig-a', 'fig-b']) {
      const box = await (await page.$(`#${id} canvas`)).boundingBox();
      const outer = await (await page.$(`#${id}`)).boundingBox();
      expect(Math.abs(box.width - outer.width) < 2 && Math.abs(box.height - outer.height) < 2 && Math.abs(box.y - outer.y) < 2,
             `${id}: canvas ${JSON.stringify(box)} does not fill its element ${JSON.stringify(outer)}`);
      const colours = distinctColors(img, [box.x, box.y + 40, box.width, box.height - 40]);
      expect(colours > 12, `${id}: ${colours} colours, looks blank`);
    }
    const set = await page.evaluate(() => document.getElementById('fig-b').attnvizMessage({ type: 'attnviz:set-view', view: 'steps' }));
    expect(set.type === 'attnviz:ok', JSON.stringify(set));
    await context.close();
  });

  await check('under a strict Content-Security-Policy: no violation on any page', async () => {
    const port = await freePort();
    const server = spawn('python3', [path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../scripts/serve.py'),
                                     siteDir, '--port', String(port), '--header', `Content-Security-Policy: ${kCsp}`], { stdio: 'ignore' });
    const cspOrigin = `http://127.0.0.1:${port}`;
    try {
      await waitForServer(`${cspOrigin}/index.html`, 10000);
      const header = (await fetch(`${cspOrigin}/index.html`)).headers.get('content-security-policy');
      expect(header === kCsp, `the server sent ${header}`);
      const context = await browser.newContext({ viewport: { width: 900, height: 700 } });
      await watchCsp(context);
      const page = await context.newPage();
      page.on('console', (m) => { if (/Content.Security.Policy|Refused to/i.test(m.text())) cspConsole.push(m.text()); });
      const violations = async () => {
        const all = [];
        for (const f of page.frames()) all.push(...(await f.evaluate(() => window.__csp || []).catch(() => [])));
        return all;
      };
      await page.goto(`${cspOrigin}/index.html#v=1&preset=cross-rain&view=heatmap&theme=light`);
      await page.waitForFunction(() => window.attnvizReady === true, null, { timeout: 90000 });
      await waitFrames(page, 10);
      const s = await state(page);
      expect(s.kind === 'cross' && s.view === 'heatmap', `figure ${s.kind} ${s.view}`);
      await page.goto(`${cspOrigin}/embed-example.html`);
      // Every figure past its first frames with its fonts in: all it loads has been asked for.
      for (const { frame } of Object.values(await embeddedFrames(page, ['fig-self', 'fig-masked', 'fig-cross'])))
        await frame.waitForFunction(() => {
          const s = JSON.parse(Module.UTF8ToString(Module._attnviz_state()));
          return s.frame >= 10 && !s.fonts.font_pending;
        }, null, { timeout: 30000, polling: 50 });
      let v = await violations();
      await page.goto(`${cspOrigin}/embed-script-example.html`);
      await page.waitForSelector('#fig-b[data-attnviz-ready]', { timeout: 90000 });
      v = v.concat(await violations());
      expect(v.length === 0 && cspConsole.length === 0, `violations: ${v.concat(cspConsole).join(' | ')}`);
      // The watch works: an inline style attribute is refused and reported.
      await page.evaluate(() => document.body.setAttribute('style', 'color: red'));
      await page.waitForFunction(() => window.__csp.length > 0, null, { timeout: 5000, polling: 20 }).catch(() => {});
      v = await violations();
      expect(v.length > 0 && v[0].startsWith('style-src'), `a forbidden inline style was not reported: ${v}`);
      cspConsole.length = 0;
      await context.close();
    } finally {
      server.kill();
    }
    return kCsp;
  });

  await check('the single file opens from file:// with nothing next to it, and draws', async () => {
    const file = path.resolve(siteDir, 'attnviz-single.html');
    const size = fs.statSync(file).size;
    const context = await browser.newContext({ viewport: { width: 1000, height: 700 } });
    const page = await context.newPage();
    const fetched = [];
    page.on('request', (r) => { if (!r.url().startsWith('data:')) fetched.push(r.url()); });
    page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(`[single] ${m.text()}`); });
    const scene = { kind: 'self', tokens: ['猫', '喜欢', '鱼'] };  // GB2312 hanzi outside the presets
    await page.goto(`file://${file}#v=1&scene=${b64url(JSON.stringify(scene))}&view=heatmap`);
    await page.waitForFunction(() => window.attnvizReady === true, null, { timeout: 90000 });
    let s = await until(page, (x) => x.fonts.missing === 0 && !x.fonts.font_pending && x.frame > 10, 'the glyphs');
    expect(s.view === 'heatmap' && JSON.stringify(s.queries) === '["猫","喜","欢","鱼"]' || JSON.stringify(s.queries) === '["猫","喜欢","鱼"]',
           `figure ${s.view} ${s.queries}`);
    await moveAway(page);
    const img = await shot(page, 'single-file.png');
    expect(distinctColors(img, s.grid) > 3, 'the heatmap is blank');
    const others = fetched.filter((u) => u !== `file://${file}` && !u.startsWith(`file://${file}#`));
    expect(others.length === 0, `fetched: ${others.join(', ')}`);
    await context.close();
    return `${(size / 1048576).toFixed(1)} MB`;
  });

  const stray = consoleErrors.filter((e) => !/favicon/.test(e));
  await check('no console errors', async () => {
    expect(stray.length === 0, stray.slice(0, 5).join(' | '));
  });
} catch (e) {
  failSetup(e);
}
await finishSuite('embed');
