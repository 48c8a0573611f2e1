// attnviz-page.js: index.html's loader. Fetches attnviz.wasm with a progress bar, starts the app
// (createAttnviz, the modularized Emscripten build) on the page's canvas, forwards IME and
// pasted text, and answers the parent page's messages when the page is embedded in an <iframe>
// (docs/EMBED.md). A file, not an inline <script>, so the page runs under a
// strict Content-Security-Policy (script-src 'self' 'wasm-unsafe-eval').
// Three builds of the app: attnviz-threads.js/.wasm (relaxed SIMD and threads: Web Workers on
// shared memory) where the page is cross-origin isolated (its host sends COOP and COEP: docs/WEB.md)
// and the browser validates a relaxed-SIMD instruction; attnviz-relaxed.js/.wasm (relaxed SIMD:
// the kernels' fused multiply-add, one thread) where it validates one; attnviz.js/.wasm
// (SIMD128, one thread) elsewhere. With threads, a live model's runs use half the cores, at most
// 8 (?threads=N asks for N, 1 … 16). The module starts that many Web Workers.
// The single-file build (scripts/single_file.py) defines window.attnvizInline (both builds' wasm
// and scripts, fonts, models) before this script; nothing is fetched then.
(function () {
  'use strict';
  const loader = document.getElementById('loader');
  const bar = document.querySelector('#bar div');
  const status = document.getElementById('status');
  const problem = document.getElementById('problem');
  const canvas = document.getElementById('canvas');
  const inline = window.attnvizInline;
  // (func (result v128) (f32x4.relaxed_madd (v128.const 0) (v128.const 0) (v128.const 0)))
  const zero = [0xfd, 0x0c].concat(new Array(16).fill(0));
  const relaxedProbe = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 0x60, 0, 1, 0x7b, 3, 2, 1, 0,
    10, 61, 1, 59, 0].concat(zero, zero, zero, [0xfd, 0x85, 0x02, 0x0b]));
  const relaxed = WebAssembly.validate(relaxedProbe);
  // A host with one build names it (<script data-build>): attnviz.serve() serves the package's attnviz.js/.wasm.
  const only = document.currentScript && document.currentScript.dataset.build;
  const threads = !only && relaxed && !inline && self.crossOriginIsolated === true && typeof SharedArrayBuffer === 'function';
  const build = only || (threads ? 'attnviz-threads' : relaxed ? 'attnviz-relaxed' : 'attnviz');
  const askedThreads = parseInt(new URLSearchParams(location.search).get('threads'), 10);
  const pageThreads = !threads ? 0 : askedThreads >= 1 && askedThreads <= 16 ? askedThreads
    : Math.min(8, Math.max(1, (navigator.hardwareConcurrency || 2) >> 1));
  // The most the panel's Threads setting may ask for: the cores, at most 8, and at least what was
  // asked. The module starts that many Web Workers at load, and one more for a run off the frame
  // loop (PTHREAD_POOL_SIZE in CMakeLists.txt): a setting never waits for a Worker to start.
  const mostThreads = !threads ? 0 : Math.max(pageThreads, Math.min(8, navigator.hardwareConcurrency || 2));

  // An embed asking for the light theme gets a light loader (no dark flash in a light blog).
  if (/[#&]theme=light(&|$)/.test(location.hash)) document.documentElement.classList.add('light');
  canvas.addEventListener('contextmenu', function (e) { e.preventDefault(); });

  function fail(html) {
    status.textContent = '';
    document.getElementById('bar').classList.add('hidden');
    problem.innerHTML = html;
    problem.classList.add('shown');
  }
  const escape = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;');

  // WebGL2 is required (float textures, instancing, GLSL ES 3.00).
  if (!document.createElement('canvas').getContext('webgl2')) {
    fail('<strong>WebGL2 is not available in this browser.</strong><br>attnviz draws its figures ' +
         'with WebGL2. Use a current Firefox, Chrome, Edge or Safari (15 or later), and make sure ' +
         'hardware acceleration is not turned off in the browser settings.');
    return;
  }

  // Progress over the two downloads: the build's .wasm (fetched here) and .data (fonts, fetched
  // by its .js, reported through setStatus).
  const progress = { wasm: [0, 0], data: [0, 0] };
  function show(text) {
    const done = progress.wasm[0] + progress.data[0];
    const total = Math.max(progress.wasm[1] + progress.data[1], 1);
    bar.style.width = Math.min(100, 100 * done / total).toFixed(1) + '%';
    if (text !== undefined) status.textContent = text;
  }
  function mb(n) { return (n / 1048576).toFixed(1) + ' MB'; }

  const field = document.getElementById('attnviz-text');
  function send(text) {
    if (text && window.Module && Module.ccall) Module.ccall('attnviz_text_input', null, ['string'], [text]);
  }
  // Typed characters reach the app through GLFW's keypress listener; everything else that
  // lands in the field (IME composition, paste, inserted text) is forwarded from here.
  let sawKeypress = false;
  window.addEventListener('keypress', function () { sawKeypress = true; }, true);
  field.addEventListener('input', function (e) {
    if (e.isComposing) return;
    const text = field.value;
    field.value = '';
    const typed = sawKeypress && e.inputType === 'insertText';
    sawKeypress = false;
    if (!typed) send(text);
  });
  field.addEventListener('compositionend', function () {
    const text = field.value;
    field.value = '';
    send(text);
  });

  // Imported attention (SPEC.md §3): a file dropped on the canvas, chosen in the file dialog
  // (the app's "Open model attention…" clicks the hidden input) or named by ?import=PATH
  // (same origin). Progress and the bytes go to the app (main/import_hook.cpp), which parses
  // them and shows a precise error if the file is bad.
  function importProgress(name, done, total) {
    Module.ccall('attnviz_import_progress', null, ['string', 'number', 'number'], [name, done, total]);
  }
  function importFailed(name, message) {
    Module.ccall('attnviz_import_failed', null, ['string', 'string'], [name, String(message)]);
  }
  function importBytes(name, bytes) { Module.attnvizImportBytes(name, bytes); }  // model_files.js: a WebP picture decoded first
  function importFile(file) {
    if (!window.attnvizReady) return;
    pictureChosen(file);
    const reader = new FileReader();
    reader.onprogress = function (e) { importProgress(file.name, e.loaded, e.lengthComputable ? e.total : file.size); };
    reader.onload = function () { importBytes(file.name, new Uint8Array(reader.result)); };
    reader.onerror = function () { importFailed(file.name, 'cannot read the file: ' + (reader.error && reader.error.message)); };
    importProgress(file.name, 0, file.size);
    reader.readAsArrayBuffer(file);
  }
  // The bytes at a same-origin path, with progress(done, total) as they arrive.
  async function fetchBytes(url, progress) {
    const response = await fetch(url);
    if (!response.ok) throw new Error('HTTP ' + response.status);
    const total = +response.headers.get('Content-Length') || 0;
    if (!response.body) return new Uint8Array(await response.arrayBuffer());
    const reader = response.body.getReader();
    const parts = [];
    let done = 0;
    for (;;) {
      const chunk = await reader.read();
      if (chunk.done) break;
      parts.push(chunk.value);
      done += chunk.value.length;
      progress(done, total);
    }
    const bytes = new Uint8Array(done);
    let at = 0;
    for (const p of parts) { bytes.set(p, at); at += p.length; }
    return bytes;
  }
  function sameOrigin(path, failed) {
    let url;
    try { url = new URL(path, location.href); } catch (e) { failed(path, 'not a URL'); return null; }
    if (url.origin !== location.origin) { failed(path, 'only files from this site can be opened (' + url.origin + ')'); return null; }
    return url;
  }
  async function fetchInto(url, path) {  // a file at `url` into the app, as one dropped (its name: the path's last part)
    const name = decodeURIComponent(url.pathname.split('/').pop() || path);
    try {
      importProgress(name, 0, 0);
      importBytes(name, await fetchBytes(url, function (done, total) { importProgress(name, done, total); }));
    } catch (e) {
      importFailed(name, 'cannot fetch ' + (url.origin === location.origin ? url.pathname : url.href) + ': ' + (e.message || e));
    }
  }
  async function importUrl(path) {
    const url = sameOrigin(path, importFailed);
    if (url) await fetchInto(url, path);
  }
  // ?picture=URL: a vision model's picture (docs/LINKS.md), of this site or of any other whose
  // answer the browser lets the page read (CORS), once the page's model is in. A picture the
  // reader opens after it takes the parameter out of the page's address, and so out of its links.
  async function pictureUrl(path) {
    let url;
    try { url = new URL(path, location.href); } catch (e) { importFailed(path, 'not a URL'); return; }
    await fetchInto(url, path);
  }
  function pictureChosen(file) {
    const query = new URLSearchParams(location.search);
    if (!/^image\//.test(file.type) || !query.has('picture')) return;
    query.delete('picture');
    const search = query.toString();
    history.replaceState(history.state, '', location.pathname + (search ? '?' + search : '') + location.hash);
  }

  // A model (SPEC.md §5): a folder chosen in the folder dialog, files chosen or dropped together
  // (config.json among them), a dropped folder, or ?model=PATH (a folder on this site), handed to
  // the app's Module.attnvizOpenModel (web/platform/model_files.js, in the module itself: the
  // script-tag embed runs it too, for a link's hf=).
  const kModelFiles = ['config.json', 'model.safetensors', 'model.safetensors.index.json', 'tokenizer.json',
                       'tokenizer_config.json', 'vocab.json', 'merges.txt', 'vocab.txt', 'source.spm', 'target.spm',
                       'preprocessor_config.json', 'chat_template.jinja'];
  const isShard = function (name) { return /^model-\d+-of-\d+\.safetensors$/.test(name); };
  function modelFailed(message) { Module.ccall('attnviz_model_failed', null, ['string'], [String(message)]); }
  function openModel(folder, files) { return window.attnvizReady ? Module.attnvizOpenModel(folder, files) : Promise.resolve(); }
  async function openModelUrl(path) {
    const url = sameOrigin(path.replace(/\/*$/, '/'), function (p, m) { modelFailed(m); });
    if (!url) return;
    const folder = decodeURIComponent(url.pathname.replace(/\/$/, '').split('/').pop() || path);
    const files = [];
    // Fetches one file into `files`; false when it cannot be (a message first, if it is required).
    const fetchFile = async function (name, required) {
      try {
        const bytes = await fetchBytes(new URL(name, url), function () {});
        // Read as a File is (slices), without a copy into a Blob: Chromium's blob storage
        // refuses a 500 MB one.
        files.push({ name: name, size: bytes.length, bytes: bytes, slice: function (a, b) {
          return { arrayBuffer: function () { return Promise.resolve(bytes.slice(a, b).buffer); } };
        } });
        return true;
      } catch (e) {
        if (required) modelFailed('cannot fetch ' + url.pathname + name + ': ' + (e.message || e));
        return false;
      }
    };
    if (!await fetchFile('config.json', true)) return;
    // A sharded checkpoint: the index, then the shards its weight_map names; else model.safetensors.
    if (await fetchFile('model.safetensors.index.json', false)) {
      let shards = [];
      try {
        const index = JSON.parse(new TextDecoder().decode(files[files.length - 1].bytes));
        shards = Object.values(index.weight_map || {}).filter(function (s, i, all) { return isShard(s) && all.indexOf(s) === i; });
      } catch (e) { /* the app's reader says what is wrong with the index */ }
      for (const shard of shards)
        if (!await fetchFile(shard, true)) return;
    } else if (!await fetchFile('model.safetensors', true)) {
      return;
    }
    for (const name of kModelFiles)
      if (!/^(config\.json|model\.safetensors(\.index\.json)?)$/.test(name)) await fetchFile(name, false);
    await openModel(folder, files);  // its files all in the app
  }
  // Files chosen or dropped together: a model when config.json is among them (its .gguf files
  // left out, as the native app leaves them) or else one GGUF file (named by its stem, as the
  // native app names it; a file without the extension that starts with GGUF's magic too, such as
  // the blob ollama keeps under ~/.ollama/models/blobs/sha256-…); otherwise one file to import.
  async function openFiles(files, folder) {
    files = Array.from(files);
    const isGguf = function (f) { return /\.gguf$/i.test(f.name); };
    const config = files.some(function (f) { return f.name === 'config.json'; });
    const gguf = config ? [] : files.filter(isGguf);
    if (!config && !gguf.length && files.length === 1 && !/\.[a-z0-9]+$/i.test(files[0].name)) {
      const f = files[0], magic = new Uint8Array(await f.slice(0, 4).arrayBuffer());
      if (String.fromCharCode.apply(null, magic) === 'GGUF')
        return openModel(folder || f.name, [{ name: f.name + '.gguf', size: f.size, slice: function (a, b) { return f.slice(a, b); } }]);
    }
    if (gguf.length > 1)
      modelFailed(gguf.length + ' .gguf files (' + gguf.map(function (f) { return f.name; }).join(', ') + '): choose one of them');
    else if (config || gguf.length)
      openModel(folder || (config ? 'model' : gguf[0].name.replace(/\.gguf$/i, '')), files.filter(function (f) { return !config || !isGguf(f); }));
    else if (files.length) importFile(files[0]);
  }
  // A dropped folder's own files (not its subfolders').
  function folderFiles(entry) {
    return new Promise(function (resolve) {
      const reader = entry.createReader(), entries = [];
      (function more() {
        reader.readEntries(function (batch) {
          if (batch.length) { entries.push.apply(entries, batch); more(); return; }
          Promise.all(entries.filter(function (e) { return e.isFile; }).map(function (e) {
            return new Promise(function (ok) { e.file(ok, function () { ok(null); }); });
          })).then(function (files) { resolve(files.filter(Boolean)); });
        }, function () { resolve([]); });
      })();
    });
  }
  const app = document.getElementById('app');
  const fileInput = document.getElementById('attnviz-file');
  fileInput.addEventListener('change', function () {
    openFiles(fileInput.files);
    fileInput.value = '';  // the same file chosen again still fires change
  });
  const folderInput = document.getElementById('attnviz-folder');
  folderInput.addEventListener('change', function () {
    const files = Array.from(folderInput.files).filter(function (f) {  // the folder's own files
      return (f.webkitRelativePath || f.name).split('/').length <= 2;
    });
    const first = files.length ? (files[0].webkitRelativePath || '').split('/')[0] : '';
    openFiles(files, first || 'model');
    folderInput.value = '';
  });
  canvas.addEventListener('dragover', function (e) {
    if (!e.dataTransfer || Array.from(e.dataTransfer.types || []).indexOf('Files') < 0) return;
    e.preventDefault();
    e.dataTransfer.dropEffect = 'copy';
    app.classList.add('dropping');
  });
  canvas.addEventListener('dragleave', function () { app.classList.remove('dropping'); });
  canvas.addEventListener('drop', function (e) {
    e.preventDefault();
    app.classList.remove('dropping');
    if (!e.dataTransfer) return;
    const item = e.dataTransfer.items && e.dataTransfer.items[0];
    const entry = item && item.webkitGetAsEntry && item.webkitGetAsEntry();
    if (entry && entry.isDirectory) folderFiles(entry).then(function (files) { openFiles(files, entry.name); });
    else openFiles(e.dataTransfer.files);
  });


  // The parent page's messages (web/state/link_state.hpp): only from the page that embeds us, only
  // objects whose type starts with "attnviz:"; everything else is not for us and is ignored.
  // Messages that arrive before the first frame wait for it.
  let ready = false;
  const waiting = [];
  function answer(e) {
    let text;
    try { text = JSON.stringify(e.data); } catch (err) { return; }
    const reply = Module.ccall('attnviz_message', 'string', ['string'], [text]);
    if (!reply) return;
    e.source.postMessage(JSON.parse(reply), !e.origin || e.origin === 'null' ? '*' : e.origin);
  }
  window.addEventListener('message', function (e) {
    if (window.parent === window || e.source !== window.parent) return;
    const d = e.data;
    if (!d || typeof d !== 'object' || Array.isArray(d) || typeof d.type !== 'string' || !d.type.startsWith('attnviz:')) return;
    if (ready) answer(e); else if (waiting.length < 64) waiting.push(e);
  });

  const config = {
    canvas: canvas,
    attnvizThreads: pageThreads,  // read by the app (platform::page_threads)
    attnvizMostThreads: mostThreads,  // (platform::page_most_threads)
    setStatus: function (text) {
      const m = /\((\d+(?:\.\d+)?)\/(\d+)\)/.exec(text || '');
      if (m) { progress.data = [+m[1], +m[2]]; show('Loading fonts… ' + mb(+m[1]) + ' / ' + mb(+m[2])); }
      else if (text) show(text);
    },
    onFirstFrame: function () {
      progress.data[0] = progress.data[1];
      show('');
      loader.classList.add('done');
      window.attnvizReady = true;
      ready = true;
      waiting.splice(0).forEach(answer);
      if (window.parent !== window) window.parent.postMessage({ type: 'attnviz:ready' }, '*');
      const query = new URLSearchParams(location.search);
      if (query.get('import')) importUrl(query.get('import'));
      const model = query.get('model') ? openModelUrl(query.get('model')) : Promise.resolve();
      if (query.get('picture')) model.then(function () { pictureUrl(query.get('picture')); });
      // ?hf=ORG/NAME&quant=Q4_K_M is ?hf=ORG/NAME:Q4_K_M (a GGUF repo's file)
      if (query.get('hf')) Module.ccall('attnviz_open_hub', null, ['string'], [query.get('hf') + (query.get('quant') ? ':' + query.get('quant') : '')]);
    },
    printErr: function (text) { console.error(text); },
    onAbort: function (what) {
      loader.classList.remove('done');
      fail('<strong>attnviz stopped.</strong><br>' + escape(what));
    },
  };
  // The tests and the text field talk to the running app through window.Module: the factory
  // fills this same object with the exports.
  window.Module = config;

  function base64(text) {
    const raw = atob(text), bytes = new Uint8Array(raw.length);
    for (let i = 0; i < raw.length; ++i) bytes[i] = raw.charCodeAt(i);
    return bytes;
  }

  async function fetchWasm() {
    const response = await fetch(build + '.wasm');
    if (!response.ok) throw new Error(build + '.wasm: HTTP ' + response.status);
    const total = +response.headers.get('Content-Length') || 0;
    progress.wasm = [0, total];
    if (!response.body || !total) return new Uint8Array(await response.arrayBuffer());
    const reader = response.body.getReader();
    const bytes = new Uint8Array(total);
    for (let offset = 0; ;) {
      const { done, value } = await reader.read();
      if (done) break;
      bytes.set(value, offset);
      offset += value.length;
      progress.wasm[0] = offset;
      show('Loading attnviz… ' + mb(offset) + ' / ' + mb(total));
    }
    return bytes;
  }

  function start() {
    show('Starting…');
    createAttnviz(config).catch(function (e) { fail('<strong>attnviz stopped.</strong><br>' + escape(e.message || e)); });
  }

  if (inline) {
    config.wasmBinary = base64(inline.wasm[build]);
    config.getPreloadedPackage = function () { return base64(inline.data).buffer; };
    config.inlineFonts = inline.fonts;
    config.attnvizInlineModels = inline.models;  // the built-in models (web/platform/platform_web.cpp)
    const script = document.createElement('script');
    script.textContent = inline.js[build];
    document.body.appendChild(script);  // runs now: defines createAttnviz
    start();
    return;
  }
  fetchWasm().then(function (bytes) {
    config.wasmBinary = bytes;
    const script = document.createElement('script');
    script.src = build + '.js';
    script.onload = start;
    script.onerror = function () { fail('<strong>Could not load ' + build + '.js.</strong>'); };
    document.body.appendChild(script);
  }).catch(function (e) {
    fail('<strong>Could not load attnviz.</strong><br>' + escape(e.message || e));
  });
})();
