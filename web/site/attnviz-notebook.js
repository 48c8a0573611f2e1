// attnviz-notebook.js: the figure of one notebook output (python/attnviz: attnviz.show()).
// The output is one piece of HTML that needs nothing else, so that it draws offline, in
// Jupyter, JupyterLab, VS Code, nbconvert's export and Colab (each output a sandboxed frame
// there, under a CSP that allows no request at all):
//   <div id="ID" data-attnviz-hash="v=1&…">            the figure (a note until it starts)
//   <script type="application/json" id="ID-payload">     {app: {version, js, wasm, data},
//                                                          attention, name, models, fonts, hub, picture}
//   <script id="ID-boot">attnviz-embed.js, then this, called with "ID"</script>
// app.js, app.wasm, app.data (the font package) and attention (a .safetensors file of F16 maps:
// core/model/attention_file.hpp, its data as two byte planes, python/attnviz/_figure.py) are
// base64 of gzip, opened with DecompressionStream; models are the built-in models' files in
// base64; fonts (cjk-common.ttf, when the tokens or text hold CJK characters) base64 of gzip;
// picture ({name, bytes}: a vision model's, its file in base64) goes in as a file dropped on the
// figure does (attnviz_import_bytes takes a picture for the model). Outputs in one document share the app: decoded and compiled
// once per version (window.attnvizNotebookApps), each figure its own instance.
// "Open in attnviz ↗" opens the same output as a whole page (panels shown) in a new tab.
window.attnvizNotebook = function (id) {
  'use strict';
  const here = document.currentScript && document.currentScript.parentNode;
  const find = (suffix) => document.getElementById(id + suffix) ||
                           (here && here.querySelector ? here.querySelector('#' + id + suffix) : null);
  const el = find(''), payloadElement = find('-payload'), boot = find('-boot');
  if (!el || !payloadElement) return;

  function bytesOf(base64) {
    const raw = atob(base64), bytes = new Uint8Array(raw.length);
    for (let i = 0; i < raw.length; ++i) bytes[i] = raw.charCodeAt(i);
    return bytes;
  }
  async function gunzip(base64) {
    if (typeof DecompressionStream === 'undefined')
      throw new Error('this browser has no DecompressionStream (Chrome 80, Firefox 113, Safari 16.4 have it)');
    const stream = new Blob([bytesOf(base64)]).stream().pipeThrough(new DecompressionStream('gzip'));
    return new Uint8Array(await new Response(stream).arrayBuffer());
  }
  function fail(e) {
    el.textContent = 'attnviz: ' + (e.message || e);
    console.error('attnviz: ' + (e.message || e));
  }

  let payload;
  try {
    payload = JSON.parse(payloadElement.textContent);
  } catch (e) {
    return fail(e);
  }
  const app = payload.app;
  const apps = window.attnvizNotebookApps = window.attnvizNotebookApps || {};
  const code = apps[app.version] = apps[app.version] || (async function () {
    const [js, wasm, data] = await Promise.all([gunzip(app.js), gunzip(app.wasm), gunzip(app.data)]);
    const script = document.createElement('script');
    script.textContent = new TextDecoder().decode(js);
    (document.head || document.documentElement).appendChild(script);  // runs now: defines createAttnviz
    return [window.createAttnviz, await WebAssembly.compile(wasm), data.buffer];
  })();

  // The whole app on the same data, as a page of its own.
  function openFull(url) {
    let hash = url.slice(url.indexOf('#') + 1);
    if (!/(^|&)panels=/.test(hash)) hash += '&panels=1';  // the link leaves out the default, the embed's is 0
    const page = '<!doctype html><html><head><meta charset="utf-8"><title>attnviz</title>' +
                 '<meta name="viewport" content="width=device-width, initial-scale=1"></head>' +
                 '<body style="margin:0"><div id="' + id + '" class="attnviz-output" data-attnviz-hash="' + hash.replace(/&/g, '&amp;').replace(/"/g, '&quot;') +
                 '" style="position:fixed;left:0;top:0;width:100%;height:100%"></div>' +
                 payloadElement.outerHTML + (boot ? boot.outerHTML : '') + '</body></html>';
    const url2 = URL.createObjectURL(new Blob([page], { type: 'text/html' }));
    if (!window.open(url2, '_blank')) fail(new Error('the browser did not open a new tab (pop-ups blocked here)'));
  }

  el.textContent = '';  // the note for a notebook whose scripts do not run
  const names = Object.keys(payload.fonts || {});
  Promise.all(names.map((name) => gunzip(payload.fonts[name]))).then(function (bytes) {
    const fonts = {};
    names.forEach(function (name, i) { fonts[name] = bytes[i]; });
    window.attnvizEmbed.start(el, {
      hash: el.getAttribute('data-attnviz-hash') || '', code: code, models: payload.models || {},
      openFull: openFull, fonts: fonts, hub: payload.hub,
    });
  }).catch(fail);
  // A file into the app, as one dropped on the figure (main/import_hook.cpp).
  function importBytes(name, bytes) { el.attnviz.attnvizImportBytes(name, bytes); }  // model_files.js: a WebP picture decoded first
  if (payload.picture)
    el.addEventListener('attnviz-ready', function () { importBytes(payload.picture.name, bytesOf(payload.picture.bytes)); }, { once: true });
  if (!payload.attention) return;
  // The planes of low and high bytes back into F16 numbers, after the header.
  function interleave(bytes) {
    const begin = 8 + Number(new DataView(bytes.buffer).getBigUint64(0, true)), half = (bytes.length - begin) / 2;
    const planes = bytes.slice(begin);
    for (let i = 0; i < half; ++i) {
      bytes[begin + 2 * i] = planes[i];
      bytes[begin + 2 * i + 1] = planes[half + i];
    }
    return bytes;
  }
  el.addEventListener('attnviz-ready', function () {
    gunzip(payload.attention).then(interleave).then(function (bytes) { importBytes(payload.name, bytes); }).catch(fail);
  }, { once: true });
};
