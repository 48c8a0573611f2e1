#!/usr/bin/env node
// export.mjs: the Export menu (web/ui/export.cpp) and the display settings (web/ui/display_menu.cpp)
// in headless Chromium. Files arrive as real downloads (playwright's download event); PNGs are
// decoded and measured, SVGs parsed by the browser's DOMParser, counted, and drawn to check
// they are not blank and that the masked preset shows its hatch.
//   node tests/browser/export.mjs SITE_DIR ARTIFACT_DIR
// Ends with "export: N passed, M failed"; exits non-zero on any failure.
import { decodePng, distinctColors, pixel } from './png.mjs';
import {
  check, clickWidget, drawSvg, expect, exportFile, failSetup, finishSuite, looksMasked, luminance, moveAway, openPage,
  pickPreset, pointAt, shot, spread, startSuite, state, until, waitFrames,
} from './harness.mjs';

const [siteDir, artifacts] = process.argv.slice(2);
if (!siteDir || !artifacts) {
  console.error('usage: node tests/browser/export.mjs SITE_DIR ARTIFACT_DIR');
  process.exit(2);
}

let menuShot = 'export-menu.png';  // a screenshot of the open menu, once
const exportItem = async (page, item, prefix = '') => {
  const got = await exportFile(page, item, { prefix, menuShot });
  menuShot = null;
  return got;
};

// Parses an SVG with the browser's XML parser and counts its parts.
async function inspectSvg(page, text) {
  return page.evaluate((svgText) => {
    const doc = new DOMParser().parseFromString(svgText, 'image/svg+xml');
    const error = doc.querySelector('parsererror');
    if (error) return { error: error.textContent.slice(0, 200) };
    const root = doc.documentElement;
    const n = (sel) => doc.querySelectorAll(sel).length;
    return {
      root: root.nodeName, width: +root.getAttribute('width'), height: +root.getAttribute('height'),
      view: root.getAttribute('data-view'),
      lines: n('line.line'), queries: n('rect.token.query'), keys: n('rect.token.key'), tokenLabels: n('text.token-label'),
      cells: n('rect.cell'), masked: n('rect.cell.masked'), rowLabels: n('text.row-label'), colLabels: n('text.col-label'),
      hatch: n('pattern#hatch'), swatch: n('rect.masked-swatch'),
      maskedCells: [...doc.querySelectorAll('rect.cell.masked')].map((r) => [+r.getAttribute('data-q'), +r.getAttribute('data-k')]),
      firstMasked: (() => {
        const r = doc.querySelector('rect.cell.masked');
        return r ? ['x', 'y', 'width', 'height'].map((a) => +r.getAttribute(a)) : null;
      })(),
      labels: [...doc.querySelectorAll('text.token-label, text.row-label')].map((t) => t.textContent),
      // Every text as read (a text's CJK run sits in a <tspan> of the fallback font's size).
      text: [...doc.querySelectorAll('title, text')].map((t) => t.textContent).join('\n'),
    };
  }, text);
}

// ImGui 1.86 closes a popup on a click outside it, not on Escape: click the empty bottom-right
// corner of the figure.
async function clickAway(page) {
  const s = await state(page);
  await pointAt(page, [s.figure[0] + s.figure[2] - 16, s.figure[1] + s.figure[3] - 16, 4, 4], true);
}

function pngSize(bytes) {
  expect(bytes.length > 8 && bytes.toString('latin1', 1, 4) === 'PNG', 'not a PNG');
  return [bytes.readUInt32BE(16), bytes.readUInt32BE(20)];
}

try {
  const { url, browser } = await startSuite(siteDir, artifacts);
  const page = await openPage(browser, url);

  await check('PNG 1×, 2×, 4× of the lines view: sizes follow the figure, pictures are real', async () => {
    const s0 = await state(page);
    expect(s0.view === 'lines' && s0.widgets.export, 'no Export button in the lines toolbar');
    // 1× = the figure in CSS pixels plus the export's padding and title line (web/ui/export.cpp).
    const want1 = [Math.round(s0.figure[2] + 24), Math.round(s0.figure[3] + 49)];
    const sizes = [];
    for (const [item, k] of [['export.png1', 1], ['export.png2', 2], ['export.png4', 4]]) {
      const { name, bytes, s } = await exportItem(page, item);
      const [w, h] = pngSize(bytes);
      expect(w === s.export.width && h === s.export.height, `${name}: ${w}×${h}, the app says ${s.export.width}×${s.export.height}`);
      expect(Math.abs(w - want1[0] * k) <= k && Math.abs(h - want1[1] * k) <= k, `${name}: ${w}×${h}, want ${want1[0] * k}×${want1[1] * k}`);
      expect(name === `attnviz-i-am-good-lines${k > 1 ? `@${k}x` : ''}.png`, `file name ${name}`);
      const img = decodePng(bytes);
      expect(distinctColors(img, [0, 0, w, h]) > 16, `${name} looks blank`);
      // The strongest line I → I (weight 0.98) crosses the middle of the picture in the head colour.
      let coloured = 0;
      for (let x = Math.round(w * 0.35); x < w * 0.65; x += k) for (let y = 0; y < h; y += k) if (spread(pixel(img, x, y)) > 80) ++coloured;
      expect(coloured > 20, `${name}: no coloured lines in the middle (${coloured} pixels)`);
      sizes.push(`${w}×${h}`);
    }
    return sizes.join(', ');
  });

  await check('SVG of the lines view: well-formed, one line per line on screen, every token', async () => {
    const s0 = await state(page);
    const { name, file, bytes } = await exportItem(page, 'export.svg');
    expect(name === 'attnviz-i-am-good-lines.svg', `file name ${name}`);
    const info = await inspectSvg(page, bytes.toString('utf8'));
    expect(!info.error, `not well-formed: ${info.error}`);
    expect(info.root === 'svg' && info.view === 'lines', `root ${info.root}, view ${info.view}`);
    expect(info.lines === s0.lines_drawn, `${info.lines} lines, ${s0.lines_drawn} on screen`);
    expect(info.queries === s0.queries.length && info.keys === s0.keys.length, `${info.queries} + ${info.keys} tokens`);
    expect(JSON.stringify(info.labels) === JSON.stringify([...s0.queries, ...s0.keys]), `labels ${info.labels}`);
    const img = await drawSvg(browser, file, info, 'svg-lines.png');
    expect(distinctColors(img, [0, 0, img.width, img.height]) > 16, 'the SVG draws blank');
    return `${bytes.length} bytes, ${info.lines} lines`;
  });

  await check('SVG and PNG of the masked preset heatmap show the mask', async () => {
    await pickPreset(page, 'masked-apple');
    await clickWidget(page, 'view.heatmap');
    const s0 = await until(page, (x) => x.view === 'heatmap' && x.preset === 'masked-apple', 'the masked heatmap');
    const T_q = s0.queries.length, T_k = s0.keys.length;
    const wantMasked = s0.allowed.flat().filter((a) => a === 0).length;
    expect(wantMasked > 0, 'the preset masks nothing');
    const { file, bytes } = await exportItem(page, 'export.svg');
    const info = await inspectSvg(page, bytes.toString('utf8'));
    expect(!info.error, `not well-formed: ${info.error}`);
    expect(info.cells === T_q * T_k, `${info.cells} cells, want ${T_q * T_k}`);
    expect(info.masked === wantMasked, `${info.masked} masked cells, want ${wantMasked}`);
    expect(info.maskedCells.every(([q, k]) => s0.allowed[q][k] === 0), 'a hatched cell is not masked');
    expect(info.hatch === 1 && info.swatch === 1, 'no hatch pattern or legend swatch');
    expect(info.rowLabels === T_q && info.colLabels === T_k, `${info.rowLabels} row and ${info.colLabels} column labels`);
    const img = await drawSvg(browser, file, info, 'svg-masked-heatmap.png');
    const [x, y, w, h] = info.firstMasked;
    expect(looksMasked(img, [x + w * 0.15, y + h * 0.15, w * 0.7, h * 0.7]), 'the first masked cell is not hatched when drawn');
    expect(distinctColors(img, [0, 0, img.width, img.height]) > 16, 'the SVG draws blank');
    // The PNG of the same figure is a real picture too.
    const png = await exportItem(page, 'export.png2');
    const pimg = decodePng(png.bytes);
    expect(distinctColors(pimg, [0, 0, pimg.width, pimg.height]) > 16, 'the PNG looks blank');
    return `${info.masked} of ${info.cells} cells hatched; PNG ${pimg.width}×${pimg.height}`;
  });

  await check('Scene JSON: the scene on screen, readable again', async () => {
    const s0 = await state(page);
    const { name, bytes } = await exportItem(page, 'export.json');
    expect(name.endsWith('.json'), `file name ${name}`);
    const scene = JSON.parse(bytes.toString('utf8'));
    expect(scene.kind === 'masked', `kind ${scene.kind}`);
    const tokens = Array.isArray(scene.tokens) ? scene.tokens : null;
    expect(tokens && JSON.stringify(tokens) === JSON.stringify(s0.queries), `tokens ${scene.tokens}`);
    return `${bytes.length} bytes`;
  });

  await check('steps view: SVG is disabled (no download), PNG works', async () => {
    await clickWidget(page, 'view.steps');
    await until(page, (x) => x.view === 'steps', 'the steps view');
    await clickWidget(page, 'export');
    await until(page, (x) => x.widgets['export.svg'], 'the Export menu');
    const before = (await state(page)).export.count;
    let downloaded = false;
    const listener = () => { downloaded = true; };
    page.on('download', listener);
    await clickWidget(page, 'export.svg');
    await waitFrames(page, 6);
    page.off('download', listener);
    const s = await state(page);
    expect(!downloaded && s.export.count === before, 'an SVG of the steps view was exported');
    await clickAway(page);
    await moveAway(page);
    const { bytes } = await exportItem(page, 'export.png1');
    const img = decodePng(bytes);
    expect(distinctColors(img, [0, 0, img.width, img.height]) > 16, 'the steps PNG looks blank');
    return `steps PNG ${img.width}×${img.height}`;
  });

  await check('Q–K space: SVG with a mark per query and key and the pinned query\'s lines; PNG too', async () => {
    await clickWidget(page, 'view.qk');
    let s0 = await until(page, (x) => x.view === 'qk' && x.query_rects.length === x.queries.length, 'the Q–K space');
    await pointAt(page, s0.query_rects[s0.queries.length - 1], true);  // pin the last query
    s0 = await until(page, (x) => x.pinned && x.pinned.side === 'query', 'the pinned query');
    await moveAway(page);
    const { name, file, bytes } = await exportItem(page, 'export.svg');
    expect(/-qk\.svg$/.test(name), `file name ${name}`);
    const info = await inspectSvg(page, bytes.toString('utf8'));
    expect(!info.error && info.view === 'qk', `view ${info.view}, ${info.error}`);
    expect(info.queries === s0.queries.length + 1 && info.keys === s0.keys.length + 1, `${info.queries} + ${info.keys} marks`);
    const lines = (bytes.toString('utf8').match(/<line /g) || []).length;
    expect(lines > 0 && /by PCA/.test(info.text), `${lines} lines; text ${info.text.slice(0, 120)}`);
    const img = await drawSvg(browser, file, info, 'svg-qk.png');
    expect(distinctColors(img, [0, 0, img.width, img.height]) > 8, 'the SVG draws blank');
    const png = await exportItem(page, 'export.png1');
    const pimg = decodePng(png.bytes);
    expect(distinctColors(pimg, [0, 0, pimg.width, pimg.height]) > 8, 'the PNG looks blank');
    await pointAt(page, s0.query_rects[s0.queries.length - 1], true);  // let go
    return `${lines} lines of the pinned query`;
  });

  await check('theme: auto follows prefers-color-scheme live; light and dark stay put', async () => {
    await clickWidget(page, 'view.heatmap');
    await clickWidget(page, 'display');
    await until(page, (x) => x.widgets['display.auto'], 'the display menu');
    await clickWidget(page, 'display.auto');
    await shot(page, 'display-menu.png');
    await page.emulateMedia({ colorScheme: 'dark' });
    let s = await until(page, (x) => x.theme_auto && x.theme === 'dark', 'auto → dark');
    await page.emulateMedia({ colorScheme: 'light' });
    s = await until(page, (x) => x.theme === 'light', 'auto → light, live');
    await page.emulateMedia({ colorScheme: 'dark' });
    s = await until(page, (x) => x.theme === 'dark', 'auto → dark again');
    await clickWidget(page, 'display.light');
    s = await until(page, (x) => !x.theme_auto && x.theme === 'light', 'light');
    await page.emulateMedia({ colorScheme: 'dark' });
    await waitFrames(page, 4);
    s = await state(page);
    expect(s.theme === 'light', 'the light theme followed the system');
    await clickAway(page);
    await moveAway(page);
    // The export follows the theme: a light figure has a light background.
    const { bytes } = await exportItem(page, 'export.png1');
    const img = decodePng(bytes);
    const corner = pixel(img, img.width - 6, img.height - 6);
    expect(luminance(corner) > 200, `light export has a dark corner ${corner}`);
    return 'auto: dark → light → dark';
  });

  await check('text size: larger text, larger fonts, the export keeps the layout', async () => {
    const px0 = (await state(page)).fonts.px;
    await clickWidget(page, 'display');
    await until(page, (x) => x.widgets['display.larger'], 'the display menu');
    await clickWidget(page, 'display.larger');
    await clickWidget(page, 'display.larger');
    // The UI's scale follows the text size in the next frame (App::before_frame).
    let s = await until(page, (x) => Math.abs(x.text_scale - 1.25) < 1e-6 && x.fonts.px > px0 && Math.abs(x.ui_scale - 1.25) < 1e-6,
                        'text and UI at 125%');
    const px1 = s.fonts.px;
    await clickAway(page);
    await moveAway(page);
    s = await state(page);
    const { bytes } = await exportItem(page, 'export.png1');
    const [w, h] = pngSize(bytes);
    const want = [Math.round(s.figure[2] + 24 * 1.25), Math.round(s.figure[3] + 49 * 1.25)];
    expect(Math.abs(w - want[0]) <= 1 && Math.abs(h - want[1]) <= 1, `${w}×${h}, want ${want[0]}×${want[1]}`);
    await clickWidget(page, 'display');
    await until(page, (x) => x.widgets['display.smaller'], 'the display menu');
    await clickWidget(page, 'display.smaller');
    await clickWidget(page, 'display.smaller');
    s = await until(page, (x) => Math.abs(x.text_scale - 1) < 1e-6 && x.fonts.px === px0, 'text back at 100%');
    await clickAway(page);
    return `body font ${px0} px → ${px1} px at 125 % → ${s.fonts.px} px`;
  });

  await check('中文: the SVG carries the UI language\'s words', async () => {
    await clickWidget(page, 'lang');
    await until(page, (x) => x.lang === 'zh', 'the Chinese UI');
    await moveAway(page);
    const { bytes } = await exportItem(page, 'export.svg');
    const info = await inspectSvg(page, bytes.toString('utf8'));
    expect(!info.error, `not well-formed: ${info.error}`);
    for (const word of ['键 →', '查询 ↓', '权重', '已掩码', '掩码自注意力'])
      expect(info.text.includes(word), `no "${word}" in the SVG`);
    await clickWidget(page, 'lang');
    await until(page, (x) => x.lang === 'en', 'back to English');
    return 'captions, legend, title in 中文';
  });

  await check('on a 2× screen, PNG 1× is the figure in CSS pixels', async () => {
    const hi = await openPage(browser, url, { deviceScaleFactor: 2 });
    const s0 = await state(hi);
    expect(s0.ui_scale === 2, `ui scale ${s0.ui_scale}`);
    const { bytes } = await exportItem(hi, 'export.png1', 'dpr2-');
    const [w, h] = pngSize(bytes);
    const want = [Math.round(s0.figure[2] / 2 + 24), Math.round(s0.figure[3] / 2 + 49)];
    expect(Math.abs(w - want[0]) <= 1 && Math.abs(h - want[1]) <= 1, `${w}×${h}, want ${want[0]}×${want[1]}`);
    await hi.context().close();
    return `${w}×${h}`;
  });
} catch (e) {
  failSetup(e);
}
await finishSuite('export');
