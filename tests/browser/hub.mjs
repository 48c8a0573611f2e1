#!/usr/bin/env node
// hub.mjs: models by name in the page (SPEC.md §6), against a stand-in of the Hub
// (tests/hub/hub_server.py: the listing, resolve URLs, a 302 to a CDN on another port, CORS), with
// the page served under docs/EMBED.md's Content-Security-Policy plus the stand-in's hosts in
// connect-src. Checked: ?hf= opens a model with progress; a link's hf= (a sharded model) does too
// and the copied link keeps it; a reload with the stand-in stopped opens from the browser's
// storage; a gated model's message; a model over the page's memory refused before its download;
// a cancelled download leaves nothing stored; a GGUF repo's file by its quantization (?hf=…&quant=,
// a link's hf=ORG/NAME:QUANT), the other file never fetched, its map the reference's.
//   node tests/browser/hub.mjs SITE_DIR ARTIFACT_DIR MODEL_REFS
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import {
  check, clickWidget, expect, finishSuite, maxDiff, moveAway, openPage, requests, shot, startSuiteOrEnd, state, until,
} from './harness.mjs';

const [siteDir, artifacts, refs] = process.argv.slice(2);
if (!siteDir || !artifacts || !refs) {
  console.error('usage: node tests/browser/hub.mjs SITE_DIR ARTIFACT_DIR MODEL_REFS');
  process.exit(2);
}
const here = path.dirname(fileURLToPath(import.meta.url));
const serverScript = path.resolve(here, '../hub/hub_server.py');

// A stand-in Hub: [its endpoint, its CDN's address, the process].
async function startHub(args) {
  const proc = spawn('python3', [serverScript, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const line = await new Promise((resolve) => readline.createInterface({ input: proc.stdout }).once('line', resolve));
  const [endpoint, cdn] = line.trim().split(' ');
  return { endpoint, cdn, proc };
}
const gpt2 = path.join(refs, 'gpt2_l3_h4_d32_f16'), llama = path.join(refs, 'llama_l2_h4kv4_d32_bf16_linear_bias_shards');
// A GGUF repo as bartowski's are: one file per quantization (tests/model/test_gguf.py's cases, renamed)
const ggufScript = path.join(here, '../model/test_gguf.py'), ggufRepo = path.join(artifacts, 'tiny-GGUF');
fs.rmSync(ggufRepo, { recursive: true, force: true });
execFileSync('/usr/bin/python3', [ggufScript, '--write', ggufRepo, 'llama_q4_k_m_llama3', 'qwen2_q8_0_q5']);
fs.renameSync(path.join(ggufRepo, 'llama_q4_k_m_llama3.gguf'), path.join(ggufRepo, 'tiny-Q4_K_M.gguf'));
fs.renameSync(path.join(ggufRepo, 'qwen2_q8_0_q5.gguf'), path.join(ggufRepo, 'tiny-Q8_0.gguf'));
const hub = await startHub(['--gated', 'attnviz-test/gated=hf_token', '--claim', 'attnviz-test/big/model.safetensors=5000000000',
  `attnviz-test/gpt2=${gpt2}`, `attnviz-test/llama=${llama}`, `attnviz-test/gated=${gpt2}`, `attnviz-test/big=${gpt2}`,
  `HuggingFaceTB/SmolLM2-135M=${llama}`,  // a suggested id, served here: its size comes from this listing
  `attnviz-test/tiny-GGUF=${ggufRepo}`]);
const slow = await startHub(['--slow', '0.25', `attnviz-test/slow=${llama}`]);
const csp = `Content-Security-Policy: default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; ` +
  `connect-src 'self' ${hub.endpoint} ${hub.cdn} ${slow.endpoint} ${slow.cdn}`;
const { browser, url } = await startSuiteOrEnd('browser-hub', siteDir, artifacts, { headers: [csp] });
const settled = (s) => s.model.active && !s.model.busy && s.model.run_revision === s.model.input_revision && s.model.figure;
const stored = (page) => page.evaluate(async () => (await (await caches.open('attnviz-hub-v1')).keys()).map((r) => r.url));

const page = await openPage(browser, `${url}?hub=${encodeURIComponent(hub.endpoint)}&hf=attnviz-test/gpt2`);
await check('?hf=ORG/NAME fetches the model from the Hub with progress, stores it, and runs it', async () => {
  const seen = [];
  const s = await until(page, (st) => { if (st.model.fetching) seen.push(st.model.fetching); return settled(st); }, 'the model fetched and run', 60000);
  expect(s.model.hub === 'attnviz-test/gpt2' && s.model.model_type === 'gpt2', `hub ${s.model.hub}, ${s.model.model_type}`);
  expect(requests.some(([, u]) => u.startsWith(hub.cdn + '/blobs/')), 'the weights did not come from the CDN');
  expect(!requests.some(([, u]) => /pytorch_model|expected\.json/.test(u)), 'fetched a file the model does not need');
  const keys = await stored(page);
  expect(keys.some((k) => k.endsWith('/model.safetensors')) && keys.some((k) => k.includes('/refs/main')), `stored: ${keys.join(', ')}`);
  await moveAway(page);
  await shot(page, 'hub-01-fetched.png');
  return `${s.model.summary}; ${seen.length} frames of progress; ${keys.length} entries stored`;
});

const page2 = await openPage(browser, `${url}?hub=${encodeURIComponent(hub.endpoint)}`);
const openLink = (hash) => page2.evaluate((h) => { location.hash = h; }, hash);
await check('a link\'s hf= opens a sharded model, and the copied link keeps hf=', async () => {
  await openLink('#v=1&view=heatmap&hf=attnviz-test%2Fllama&text=The%20cat%20sat');
  const s = await until(page2, (st) => settled(st) && /[#&]text=/.test(st.link), 'the sharded model fetched and run', 60000);
  expect(s.model.model_type === 'llama' && s.model.hub === 'attnviz-test/llama', `${s.model.model_type} ${s.model.hub}`);
  expect(/[#&]hf=attnviz-test%2Fllama(&|$)/.test(s.link), `link ${s.link}`);
  return s.link;
});

await check('a gated model: the error says what to do, and the figure stays', async () => {
  await openLink('#v=1&hf=attnviz-test%2Fgated');
  const s = await until(page2, (st) => !st.model.fetching && st.error, 'the error', 30000);
  expect(/attnviz-test\/gated: .*gated.*licence/.test(s.error), `error ${s.error}`);
  expect(s.model.active && s.model.model_type === 'llama' && s.model.hub === 'attnviz-test/llama', `the last model is gone (hub ${s.model.hub})`);
  await shot(page2, 'hub-02-gated.png');
  return s.error;
});

await check('a model over the page\'s memory is refused before its download', async () => {
  await openLink('#v=1&hf=attnviz-test%2Fbig');
  const s = await until(page2, (st) => !st.model.fetching && /attnviz-test\/big/.test(st.error), 'the error', 30000);
  expect(/not downloaded/.test(s.error), `error ${s.error}`);
  expect(!requests.some(([, u]) => u.includes('/attnviz-test/big/resolve/')), 'a file of it was fetched');
  return s.error;
});

const page3 = await openPage(browser, `${url}?hub=${encodeURIComponent(hub.endpoint)}&hf=attnviz-test/tiny-GGUF&quant=Q4_K_M`);
await check('a GGUF repo\'s file by its quantization: ?hf=…&quant=Q4_K_M, then a link\'s hf=ORG/NAME:Q8_0; without one, the files named', async () => {
  let s = await until(page3, settled, 'the Q4_K_M file fetched and run', 60000);
  expect(s.model.hub === 'attnviz-test/tiny-GGUF:Q4_K_M' && s.model.model_type === 'llama' && /Q4_K/.test(s.model.summary),
         `hub ${s.model.hub}, ${s.model.model_type}, ${s.model.summary}`);
  const asked = requests.filter(([c]) => c.startsWith('a GGUF repo')).map(([, u]) => u);
  expect(!asked.some((u) => /tiny-Q8_0\.gguf|config\.json/.test(u)), `fetched a file the model does not need: ${asked.join(', ')}`);
  const ref = JSON.parse(execFileSync('/usr/bin/python3', [ggufScript, '--reference', 'llama_q4_k_m_llama3', s.model.figure.ids.join(',')],
    { maxBuffer: 1 << 26 }).toString());
  const worst = maxDiff(s.import.shown, ref.attention[s.import.layer][s.import.head]);
  expect(worst < 1e-4, `map ${s.import.layer + 1}:${s.import.head + 1} differs from the reference by ${worst}`);
  // the address bar follows the app's state a few times a second: the link once it has caught up
  s = await until(page3, (st) => /[#&]hf=attnviz-test%2Ftiny-GGUF%3AQ4_K_M(&|$)/.test(st.link), 'the link to name the file', 5000)
    .catch(() => state(page3));
  expect(/[#&]hf=attnviz-test%2Ftiny-GGUF%3AQ4_K_M(&|$)/.test(s.link), `link ${s.link}`);
  let keys = await stored(page3);
  expect(keys.some((k) => k.endsWith('/.manifest:Q4_K_M')) && keys.some((k) => k.endsWith('/tiny-Q4_K_M.gguf')), `stored: ${keys.join(', ')}`);
  await moveAway(page3);
  await shot(page3, 'hub-05-gguf.png');
  await page3.evaluate(() => { location.hash = '#v=1&view=heatmap&hf=attnviz-test%2Ftiny-GGUF%3AQ8_0&text=The%20cat'; });
  s = await until(page3, (st) => settled(st) && st.model.hub === 'attnviz-test/tiny-GGUF:Q8_0', 'the Q8_0 file fetched and run', 60000);
  expect(s.model.model_type === 'qwen2', `${s.model.model_type}`);
  keys = await stored(page3);
  expect(keys.filter((k) => /\.manifest:/.test(k)).length === 2, `stored: ${keys.join(', ')}`);
  await page3.evaluate(() => { location.hash = '#v=1&hf=attnviz-test%2Ftiny-GGUF'; });
  s = await until(page3, (st) => !st.model.fetching && st.error, 'the error', 30000);
  expect(/attnviz-test\/tiny-GGUF: .*2 \.gguf files here: name one/.test(s.error) && /tiny-Q4_K_M\.gguf/.test(s.error) && /tiny-Q8_0\.gguf/.test(s.error) &&
         /attnviz-test\/tiny-GGUF:QUANT, or \?quant=/.test(s.error) && !/--quant/.test(s.error), `error ${s.error}`);
  expect(s.model.hub === 'attnviz-test/tiny-GGUF:Q8_0', `the last model is gone (hub ${s.model.hub})`);
  return `Q4_K_M: largest difference ${worst.toExponential(1)}; Q8_0: ${s.model.summary}; ${s.error}`;
});

await check('the Hub dialog: sizes from the listings, a suggestion opens, Downloaded models lists and removes', async () => {
  await clickWidget(page2, 'model.close');  // (the open buttons are the scene section's, shown without a model)
  await clickWidget(page2, 'hub.open');
  let s = await until(page2, (st) => st.model.hub_sizes && st.model.hub_sizes['HuggingFaceTB/SmolLM2-135M'] > 0 &&
                                     Object.keys(st.model.hub_sizes).length === 11, 'the suggestions\' sizes', 30000);
  const sizes = s.model.hub_sizes;
  const want = ['config.json', 'model.safetensors.index.json', 'model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors', 'tokenizer.json']
    .reduce((a, f) => a + fs.statSync(path.join(llama, f)).size, 0);
  expect(sizes['HuggingFaceTB/SmolLM2-135M'] === want, `size ${sizes['HuggingFaceTB/SmolLM2-135M']}, the files take ${want}`);
  expect(sizes['gpt2'] === -1, `gpt2 (not on the stand-in): ${sizes['gpt2']}`);
  expect(s.model.hub_stored.some((m) => m.id === 'attnviz-test/llama'), `stored ${JSON.stringify(s.model.hub_stored)}`);
  await shot(page2, 'hub-04-dialog.png');
  await clickWidget(page2, 'hub.suggestion.HuggingFaceTB/SmolLM2-135M');
  await clickWidget(page2, 'hub.id.open');
  s = await until(page2, (st) => settled(st) && st.model.hub === 'HuggingFaceTB/SmolLM2-135M', 'the suggestion fetched and run', 60000);
  await clickWidget(page2, 'model.close');
  await clickWidget(page2, 'hub.open');
  await until(page2, (st) => st.model.hub_stored.length === 2, 'both stored', 10000);
  await clickWidget(page2, 'hub.remove.attnviz-test/llama');
  s = await until(page2, (st) => st.model.hub_stored.length === 1, 'one removed', 10000);
  const keys = (await stored(page2)).filter((k) => k.includes('/attnviz-test/llama/'));
  expect(keys.length === 0, `still stored: ${keys.join(', ')}`);
  await clickWidget(page2, 'hub.close');
  return `${Object.entries(sizes).map(([k, v]) => `${k} ${v}`).join(', ')}; left: ${s.model.hub_stored.map((m) => m.id)}`;
});

await check('Cancel stops a download, and nothing of it stays stored', async () => {
  await page2.evaluate((e) => { history.replaceState(null, '', '?hub=' + encodeURIComponent(e) + location.hash); }, slow.endpoint);
  await openLink('#v=1&hf=attnviz-test%2Fslow');
  await until(page2, (st) => st.model.fetching && st.model.fetching.done > 0, 'the download under way', 30000);
  await shot(page2, 'hub-03-progress.png');
  await clickWidget(page2, 'model.cancel-fetch');
  const s = await until(page2, (st) => !st.model.fetching, 'the download stopped', 30000);
  expect(/cancelled/.test(s.error), `error ${s.error}`);
  const keys = (await stored(page2)).filter((k) => k.includes('/attnviz-test/slow/'));
  expect(keys.length === 0, `stored: ${keys.join(', ')}`);
  return s.error;
});

await check('the script-tag embed: a figure\'s hf= runs the model, the Hub\'s address from the page\'s <meta>', async () => {
  const context = await browser.newContext({ viewport: { width: 760, height: 600 } });
  const embed = await context.newPage();
  embed.on('pageerror', (e) => { throw e; });
  await embed.goto(url);  // the site's origin and its CSP; then a blog post of our own on it
  await embed.setContent(`<!doctype html><html><head><meta name="attnviz-hub" content="${hub.endpoint}"></head><body>
    <div id="fig" data-attnviz="v=1&amp;view=heatmap&amp;hf=attnviz-test%2Fgpt2&amp;text=The%20cat%20sat" data-width="640" data-height="400"></div>
    <script src="attnviz-embed.js"></script></body></html>`);
  await embed.waitForSelector('#fig[data-attnviz-ready]', { timeout: 90000 });
  const s = await embed.waitForFunction(() => {
    const m = document.getElementById('fig').attnviz;
    const st = m && m._attnviz_state && JSON.parse(m.UTF8ToString(m._attnviz_state()));
    return st && st.model.active && !st.model.busy && st.model.figure ? st : null;
  }, null, { timeout: 60000, polling: 100 }).then((h) => h.jsonValue());
  expect(s.model.hub === 'attnviz-test/gpt2' && s.view === 'heatmap', `hub ${s.model.hub}, view ${s.view}`);
  await embed.screenshot({ path: path.join(artifacts, 'hub-05-script-embed.png') });
  await context.close();
  return s.model.summary;
});

await check('storage full: the model opens from memory, says so, and nothing of it is stored', async () => {
  // A browser whose storage refuses the weights (Cache.put rejects as a full quota does).
  const full = await openPage(browser, `${url}?hub=${encodeURIComponent(hub.endpoint)}&hf=attnviz-test/llama`, {
    initScript: () => {
      const put = Cache.prototype.put;
      Cache.prototype.put = function (request, response) {
        if (/\.safetensors$/.test(typeof request === 'string' ? request : request.url))
          return Promise.reject(new DOMException('the quota is used up', 'QuotaExceededError'));
        return put.call(this, request, response);
      };
    },
  });
  const s = await until(full, settled, 'the model opened from memory', 60000);
  expect(s.model.hub === 'attnviz-test/llama' && s.model.hub_unstored, `hub ${s.model.hub}, unstored ${s.model.hub_unstored}`);
  const keys = await stored(full);
  expect(!keys.some((k) => k.includes('/attnviz-test/llama/')), `stored: ${keys.join(', ')}`);
  await moveAway(full);
  await shot(full, 'hub-06-storage-full.png');
  await full.context().close();
  return s.model.summary;
});

await check('with the Hub stopped, a reload opens the model from the browser\'s storage', async () => {
  hub.proc.kill();
  await new Promise((r) => hub.proc.once('exit', r));
  await page.reload();
  await page.waitForFunction(() => window.attnvizReady === true, null, { timeout: 90000 });
  const s = await until(page, settled, 'the stored model run', 60000);
  expect(s.model.hub === 'attnviz-test/gpt2' && !s.error, `hub ${s.model.hub}, error ${s.error}`);
  return s.model.summary;
});

await check('offline (the Hub stopped): the dialog says so once, asks one listing and not the other ten', async () => {
  await until(page, settled, 'the stored model run', 60000);  // (the panel stops moving)
  await clickWidget(page, 'model.close');  // the Hub button is the scene section's, shown without a model
  await until(page, (st) => st.widgets['hub.open'], 'the Hub button');
  const before = requests.length;
  await clickWidget(page, 'hub.open');
  const s = await until(page, (st) => Object.keys(st.model.hub_sizes || {}).length === 11 && st.widgets['hub.offline'],
                        'every size unknown, said once', 30000).catch(async (e) => {
    const st = await state(page);
    throw new Error(`${e.message.slice(0, 60)}; sizes ${JSON.stringify(st.model.hub_sizes)}; hub widgets ${Object.keys(st.widgets).filter((k) => k.startsWith('hub'))}`);
  });
  expect(Object.values(s.model.hub_sizes).every((v) => v === -2), `sizes ${JSON.stringify(s.model.hub_sizes)}`);
  const asked = requests.slice(before).filter(([, u]) => u.includes('/api/models/'));
  expect(asked.length === 1, `listings asked: ${asked.map(([, u]) => u).join(', ')}`);
  await shot(page, 'hub-07-offline.png');
  await clickWidget(page, 'hub.close');
  return `${asked.length} listing asked`;
});

slow.proc.kill();
await finishSuite('browser-hub');
