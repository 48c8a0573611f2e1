import fs from 'node:fs';
import path from 'node:path';
import { check, clickWidget, finishSuite, moveAway, openPage, shot, startSuiteOrEnd, until, waitFrames } from './harness.mjs';
const [siteDir, artifacts, folder] = process.argv.slice(2);
const { browser, url } = await startSuiteOrEnd('phone', siteDir, artifacts);
for (const [w, h, name] of [[390, 844, 'phone'], [1280, 800, 'light']]) {
  const page = await openPage(browser, url + (name === 'light' ? '?theme=light' : ''), { viewport: { width: w, height: h } });
  await check(name, async () => {
    const files = fs.readdirSync(folder).filter((f) => f !== 'expected.json' && f !== 'image.png').map((f) => [f, fs.readFileSync(path.join(folder, f)).toString('base64')]);
    await page.evaluate((list) => {
      const dt = new DataTransfer();
      for (const [n, b64] of list) dt.items.add(new File([Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))], n));
      document.getElementById('canvas').dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
    }, files);
    await until(page, (x) => x.model.active && !x.model.busy, 'model', 60000);
    await page.setInputFiles('#attnviz-file', path.join(folder, 'image.png'));
    await until(page, (x) => x.model.picture && x.view === 'image' && !x.model.busy, 'pic', 60000);
    await waitFrames(page, 10);
    await moveAway(page);
    await shot(page, `vlm-${name}.png`);
    return 'ok';
  });
}
await finishSuite(browser);
