// attnviz-page.js: index.html's loader. Fetches attnviz.wasm with a progress bar, starts the app
// (createAttnviz, the modularized Emscripten build) on the page's canvas, forwards IME and
// pasted text, and answers the parent page's messages when the page is embedded in an <iframe>
// (README "Embed in your blog"). A file, not an inline <script>, so the page runs under a
// strict Content-Security-Policy (script-src 'self' 'wasm-unsafe-eval').
// Two builds of the app: attnviz-relaxed.js/.wasm (relaxed SIMD: the kernels' fused multiply-add)
// where the browser validates a relaxed-SIMD instruction, attnviz.js/.wasm (SIMD128) elsewhere.
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
  const build = WebAssembly.validate(relaxedProbe) ? 'attnviz-relaxed' : 'attnviz';

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
  function importBytes(name, bytes) {
    const ptr = Module._malloc(Math.max(bytes.length, 1));
    Module.HEAPU8.set(bytes, ptr);  // HEAPU8 after malloc: the heap may have grown
    Module.ccall('attnviz_import_bytes', null, ['string', 'number', 'number'], [name, ptr, bytes.length]);
    Module._free(ptr);
  }
  function importFile(file) {
    if (!window.attnvizReady) return;
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
  async function importUrl(path) {
    const url = sameOrigin(path, importFailed);
    if (!url) return;
    const name = decodeURIComponent(url.pathname.split('/').pop() || path);
    try {
      importProgress(name, 0, 0);
      importBytes(name, await fetchBytes(url, function (done, total) { importProgress(name, done, total); }));
    } catch (e) {
      importFailed(name, 'cannot fetch ' + url.pathname + ': ' + (e.message || e));
    }
  }

  // A model (SPEC.md §5): a folder chosen in the folder dialog, files chosen or dropped together
  // (config.json among them), a dropped folder, or ?model=PATH (a folder on this site). Each small
  // file is read in 16 MB slices straight into a buffer of the app's (main/model_hook.cpp); of a
  // checkpoint file (.safetensors) only its header, and then, as the app's loader asks for them
  // (Module.attnvizReadSlice), its windows of about 16 MB: a 2.5 GB file is never one buffer.
  const kModelFiles = ['config.json', 'model.safetensors', 'model.safetensors.index.json', 'tokenizer.json',
                       'tokenizer_config.json', 'vocab.json', 'merges.txt', 'vocab.txt', 'source.spm', 'target.spm'];
  const isShard = function (name) { return /^model-\d+-of-\d+\.safetensors$/.test(name); };
  const isCheckpoint = function (name) { return name === 'model.safetensors' || isShard(name); };
  const isModelFile = function (name) { return kModelFiles.indexOf(name) >= 0 || isShard(name); };
  function modelFailed(message) { Module.ccall('attnviz_model_failed', null, ['string'], [String(message)]); }
  // A checkpoint file's header: its bytes (8 + the JSON's length, as far as the file has them) and
  // the size of its float tensors as the app holds them (F32 as 4 bytes a number, F16 and BF16
  // as 2: they stay 16-bit), so that the app refuses a model the page cannot hold before reading
  // it. Weights 0 when the header is unreadable (the app's reader then says what is wrong with it).
  async function checkpointHeader(file) {
    const length = file.size < 8 ? 0 : Number(new DataView(await file.slice(0, 8).arrayBuffer()).getBigUint64(0, true));
    // a length past the end: its 8 bytes alone, for the app to say so
    const bytes = new Uint8Array(await file.slice(0, 8 + length <= file.size ? 8 + length : Math.min(file.size, 8)).arrayBuffer());
    let weights = 0;
    try {
      const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8)));
      for (const key in header) {
        const t = header[key];
        if (key !== '__metadata__' && t && Array.isArray(t.shape) && /^(F32|F16|BF16)$/.test(t.dtype))
          weights += (t.dtype === 'F32' ? 4 : 2) * t.shape.reduce(function (a, b) { return a * b; }, 1);
      }
    } catch (e) { weights = 0; }
    return { bytes: bytes, weights: weights };
  }
  // The model's checkpoint files by name, whose windows the app asks for (platform_web.cpp
  // attnviz_read_slice): read, then written where the app says if it still wants them. A read
  // that ends after another model was opened is dropped, bytes or error.
  let checkpointFiles = {};
  function readSlice(name, begin, end) {
    const files = checkpointFiles, file = files[name];
    if (!file) { modelFailed('cannot read ' + name + ': it was not given'); return; }
    file.slice(begin, end).arrayBuffer().then(function (buffer) {
      if (files !== checkpointFiles) return;
      const ptr = Module.ccall('attnviz_model_window', 'number', ['string', 'number', 'number'], [name, begin, end]) >>> 0;
      if (!ptr) return;  // the model was closed or replaced meanwhile
      if (buffer.byteLength !== end - begin) throw new Error('got ' + buffer.byteLength + ' bytes of ' + (end - begin));
      Module.HEAPU8.set(new Uint8Array(buffer), ptr);  // HEAPU8 now: the heap may have grown
      Module.ccall('attnviz_model_filled', null, [], []);
    }).catch(function (e) { if (files === checkpointFiles) modelFailed('cannot read ' + name + ': ' + (e.message || e)); });
  }
  async function openModel(folder, files) {
    if (!window.attnvizReady) return;
    files = files.filter(function (f) { return isModelFile(f.name); });
    const heads = {};
    let total = 0, weights = 0;
    try {
      for (const f of files) {
        if (!isCheckpoint(f.name)) { total += f.size; continue; }
        heads[f.name] = await checkpointHeader(f);
        total += heads[f.name].bytes.length;
        weights += heads[f.name].weights;
      }
    } catch (e) {
      modelFailed('cannot read the files: ' + (e.message || e));
      return;
    }
    if (!Module.ccall('attnviz_model_begin', 'number', ['string', 'number', 'number'], [folder, total, weights])) return;
    checkpointFiles = {};
    let done = 0;
    try {
      for (const f of files) {
        if (heads[f.name]) {
          const head = heads[f.name].bytes;
          const ptr = Module.ccall('attnviz_model_head', 'number', ['string', 'number', 'number'], [f.name, head.length, f.size]) >>> 0;
          if (!ptr) return;
          Module.HEAPU8.set(head, ptr);
          checkpointFiles[f.name] = f;
          done += head.length;
          Module.ccall('attnviz_model_progress', null, ['number'], [done]);
          continue;
        }
        const ptr = Module.ccall('attnviz_model_buffer', 'number', ['string', 'number'], [f.name, f.size]) >>> 0;
        if (!ptr) return;
        for (let at = 0; at < f.size; at += 16 << 20) {
          const part = new Uint8Array(await f.slice(at, Math.min(f.size, at + (16 << 20))).arrayBuffer());
          Module.HEAPU8.set(part, ptr + at);  // HEAPU8 again each time: the heap may have grown
          done += part.length;
          Module.ccall('attnviz_model_progress', null, ['number'], [done]);
        }
      }
    } catch (e) {
      modelFailed('cannot read the files: ' + (e.message || e));
      return;
    }
    Module.ccall('attnviz_model_end', null, [], []);
  }
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
    openModel(folder, files);
  }
  // A model by its Hub id (SPEC.md §6): ?hf=ORG/NAME[@REVISION], a link's hf=, the Hub dialog. The
  // app asks (platform_web.cpp: Module.attnvizHubFetch); the listing (?blobs=true: every file's
  // size) gives the commit and the files, whose sizes are checked against the page's memory
  // before anything large is fetched; each file comes from the Hub's resolve URL (large ones
  // redirected to its CDN), streamed into Cache Storage keyed by commit and file (never one
  // buffer), with progress; a manifest, then the revision's ref, are written last. The files
  // then open as a folder's do (openModel), read from storage. The next open, or one without the
  // network, starts from storage. A storage that is full: the file is fetched again into memory
  // (chunks, not one buffer) and the model still opens. A cancelled or broken download deletes
  // what it stored of that commit. The Hub's address: ?hub=URL (kept in localStorage), else
  // the site's <meta name="attnviz-hub" content="URL">, else https://huggingface.co.
  const kHubCache = 'attnviz-hub-v1', kHubKey = 'https://hub.attnviz.invalid/';
  const kHubFiles = ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json', 'special_tokens_map.json',
                     'vocab.json', 'merges.txt', 'vocab.txt', 'source.spm', 'target.spm'];
  function setHubEndpoint(url) {
    try { localStorage.setItem('attnviz-hub', url); } catch (e) { /* storage off: this page only */ }
  }
  function hubEndpoint() {
    const query = new URLSearchParams(location.search).get('hub');
    if (query) setHubEndpoint(query);
    let stored = null;
    try { stored = localStorage.getItem('attnviz-hub'); } catch (e) { stored = null; }
    const meta = document.querySelector('meta[name="attnviz-hub"]');
    return (query || stored || (meta && meta.content) || 'https://huggingface.co').replace(/\/+$/, '');
  }
  let hubAbort = null;  // the fetch in progress (one at a time)
  function hubFailed(message) { Module.ccall('attnviz_hub_failed', null, ['string'], [String(message)]); }
  function hubKey(repo, commit, name) { return kHubKey + repo + '/' + commit + '/' + name; }
  function hubStatusError(repo, file, status) {
    const where = repo + (file ? ': ' + file : '');
    if (status === 401 || status === 403)
      return where + ': a gated or private model (HTTP ' + status + '): accept its licence on the Hub; the page sends no token, ' +
             'so open it with attnviz natively (HF_TOKEN) or open its downloaded folder';
    if (status === 404) return where + ': no such model or revision on the Hub (' + hubEndpoint() + ')';
    return where + ': the Hub answered HTTP ' + status;
  }
  function hubUnreachable(repo, e) {
    return repo + ': cannot reach ' + new URL(hubEndpoint()).host + ' (offline, or the host does not let this page read it: CORS; ' +
           (e.message || e) + ')';
  }
  // A file stored (or held) whole, read as a File is: slices.
  function blobFile(name, blob) { return { name: name, size: blob.size, slice: function (a, b) { return blob.slice(a, b); } }; }
  function chunkFile(name, chunks, size) {
    return { name: name, size: size, slice: function (a, b) {
      const out = new Uint8Array(b - a);
      let at = 0;
      for (const c of chunks) {
        const lo = Math.max(a, at), hi = Math.min(b, at + c.length);
        if (lo < hi) out.set(c.subarray(lo - at, hi - at), lo - a);
        at += c.length;
      }
      return { arrayBuffer: function () { return Promise.resolve(out.buffer); } };
    } };
  }
  // The stored files of a commit, when its manifest says every one is there; else null.
  async function hubStored(cache, repo, commit) {
    const manifest = cache && await cache.match(hubKey(repo, commit, '.manifest'));
    if (!manifest) return null;
    const files = [];
    for (const f of await manifest.json()) {
      const r = await cache.match(hubKey(repo, commit, f.name));
      if (!r) return null;
      const blob = await r.blob();
      if (blob.size !== f.size) return null;
      files.push(blobFile(f.name, blob));
    }
    return files;
  }
  async function hubStoredRef(cache, repo, rev) {
    if (/^[0-9a-f]{40}$/.test(rev)) return rev;
    const r = cache && await cache.match(kHubKey + repo + '/refs/' + rev);
    return r ? (await r.text()).trim() : null;
  }
  async function hubFetch(spec) {
    if (hubAbort) hubAbort.abort();
    const controller = new AbortController(), signal = controller.signal;
    hubAbort = controller;
    const at = spec.indexOf('@');
    const repo = at < 0 ? spec : spec.slice(0, at), rev = at < 0 ? 'main' : spec.slice(at + 1);
    const endpoint = hubEndpoint();
    let cache = null;
    try { cache = await caches.open(kHubCache); } catch (e) { cache = null; }  // no storage: memory only
    const stored = [];  // keys written by this fetch (deleted again if it does not finish)
    const forget = async function () { if (cache) for (const k of stored) await cache.delete(k); };
    const open = function (files) {
      if (hubAbort !== controller) return;
      hubAbort = null;
      openModel(spec, files);
    };
    // 1. The listing: the commit, the files and their sizes.
    let listing;
    try {
      const r = await fetch(endpoint + '/api/models/' + repo + '/revision/' + encodeURIComponent(rev) + '?blobs=true', { signal: signal });
      if (!r.ok) throw Object.assign(new Error(hubStatusError(repo, '', r.status)), { hub: true });
      listing = await r.json();
      if (!/^[0-9a-f]{40}$/.test(listing.sha || '') || !Array.isArray(listing.siblings)) throw Object.assign(new Error(repo + ': listing: not the Hub\'s answer'), { hub: true });
    } catch (e) {
      if (signal.aborted) return hubAbort === controller && hubFailed(repo + ': cancelled');
      if (e.hub) return hubFailed(e.message);
      const commit = await hubStoredRef(cache, repo, rev);
      const files = commit && await hubStored(cache, repo, commit);
      if (files) return open(files);  // offline: from storage
      return hubFailed(hubUnreachable(repo, e) + ', and it is not stored in this browser');
    }
    const commit = listing.sha;
    const ready = await hubStored(cache, repo, commit);
    if (ready) return open(ready);
    // 2. Which files, and their sizes: nothing large is fetched before they are known to fit.
    const sizes = {};
    for (const s of listing.siblings) sizes[s.rfilename] = s.size !== undefined ? s.size : (s.lfs && s.lfs.size) || 0;
    const names = kHubFiles.filter(function (n) { return n in sizes; });
    const weights = 'model.safetensors' in sizes ? ['model.safetensors'] : 'model.safetensors.index.json' in sizes ? ['model.safetensors.index.json'] : [];
    if (!weights.length) return hubFailed(repo + ': the repo has no safetensors weights (model.safetensors or model.safetensors.index.json)');
    const shardsListed = Object.keys(sizes).filter(isShard);
    const weightBytes = weights[0] === 'model.safetensors' ? sizes['model.safetensors']
      : shardsListed.reduce(function (a, n) { return a + sizes[n]; }, 0);
    const otherBytes = names.reduce(function (a, n) { return a + sizes[n]; }, 0);
    if (!Module.ccall('attnviz_hub_fits', 'number', ['number', 'number'], [otherBytes, weightBytes])) return;
    const total = otherBytes + weightBytes + (sizes['model.safetensors.index.json'] || 0);
    let done = 0;
    const files = [];
    // 3. Each file, streamed into storage (or, storage full, into memory).
    const fetchFile = async function (name) {
      const url = endpoint + '/' + repo + '/resolve/' + commit + '/' + name;
      const key = hubKey(repo, commit, name), before = done;
      const counted = function (r) {
        return r.body.pipeThrough(new TransformStream({ transform: function (chunk, out) {
          done += chunk.length;
          Module.ccall('attnviz_hub_progress', null, ['string', 'number', 'number'], [name, done, total]);
          out.enqueue(chunk);
        } }));
      };
      const get = async function () {
        const r = await fetch(url, { signal: signal });
        if (!r.ok) throw Object.assign(new Error(hubStatusError(repo, name, r.status)), { hub: true });
        return r;
      };
      if (cache) {
        try {
          await cache.put(key, new Response(counted(await get()), { headers: { 'Content-Type': 'application/octet-stream' } }));
          stored.push(key);
          const blob = await (await cache.match(key)).blob();
          if (blob.size !== sizes[name]) throw Object.assign(new Error(repo + ': ' + name + ': got ' + blob.size + ' bytes, the Hub said ' + sizes[name]), { hub: true });
          files.push(blobFile(name, blob));
          return;
        } catch (e) {
          if (e.name !== 'QuotaExceededError') throw e;
          done = before;  // storage full: this file and the rest from memory
          await forget();
          cache = null;
        }
      }
      const chunks = [];
      const reader = counted(await get()).getReader();
      for (let c = await reader.read(); !c.done; c = await reader.read()) chunks.push(c.value);
      files.push(chunkFile(name, chunks, done - before));
    };
    try {
      for (const name of names.concat(weights)) await fetchFile(name);
      if (weights[0] === 'model.safetensors.index.json') {
        const index = JSON.parse(new TextDecoder().decode(await files[files.length - 1].slice(0, files[files.length - 1].size).arrayBuffer()));
        const shards = Object.values(index.weight_map || {}).filter(function (s, i, all) { return isShard(s) && all.indexOf(s) === i; });
        for (const s of shards) await fetchFile(s);
      }
      // 4. The manifest, then the ref: the commit is stored whole.
      if (cache) {
        const manifest = files.map(function (f) { return { name: f.name, size: f.size }; });
        await cache.put(hubKey(repo, commit, '.manifest'), new Response(JSON.stringify(manifest)));
        if (rev !== commit) await cache.put(kHubKey + repo + '/refs/' + rev, new Response(commit));
      }
    } catch (e) {
      await forget();
      if (signal.aborted) return hubAbort === controller && hubFailed(repo + ': cancelled (nothing of it was kept)');
      return hubFailed(e.hub ? e.message : hubUnreachable(repo, e));
    }
    open(files);
  }
  function hubCancel() { if (hubAbort) hubAbort.abort(); }
  // The Hub dialog: the suggested models' sizes (the files a model needs, from its listing), and
  // what is stored (every commit with a manifest), each deleted on request.
  async function hubStoredList() {
    const list = [];
    try {
      const cache = await caches.open(kHubCache);
      for (const request of await cache.keys()) {
        const m = /^https:\/\/hub\.attnviz\.invalid\/(.+)\/([0-9a-f]{40})\/\.manifest$/.exec(request.url);
        if (!m) continue;
        const files = await (await cache.match(request)).json();
        list.push({ id: m[1], commit: m[2], bytes: files.reduce(function (a, f) { return a + f.size; }, 0) });
      }
    } catch (e) { /* no storage: nothing stored */ }
    Module.ccall('attnviz_hub_stored', null, ['string'], [JSON.stringify(list)]);
  }
  function hubDialog(ids) {
    hubStoredList();
    const endpoint = hubEndpoint();
    ids.forEach(async function (id) {
      try {
        const r = await fetch(endpoint + '/api/models/' + id + '/revision/main?blobs=true');
        if (!r.ok) throw new Error('HTTP ' + r.status);
        const sizes = {};
        for (const s of (await r.json()).siblings || []) sizes[s.rfilename] = s.size !== undefined ? s.size : (s.lfs && s.lfs.size) || 0;
        const weights = 'model.safetensors' in sizes ? sizes['model.safetensors']
          : Object.keys(sizes).filter(isShard).reduce(function (a, n) { return a + sizes[n]; }, 0);
        const bytes = kHubFiles.reduce(function (a, n) { return a + (sizes[n] || 0); }, weights);
        Module.ccall('attnviz_hub_size', null, ['string', 'number'], [id, bytes]);
      } catch (e) {
        Module.ccall('attnviz_hub_size', null, ['string', 'number'], [id, -1]);  // not known: offline, or no such repo
      }
    });
  }
  async function hubRemove(repo, commit) {
    try {
      const cache = await caches.open(kHubCache);
      for (const request of await cache.keys())
        if (request.url.startsWith(kHubKey + repo + '/' + commit + '/')) await cache.delete(request);
      for (const request of await cache.keys())  // the refs that pointed to it
        if (request.url.startsWith(kHubKey + repo + '/refs/') && (await (await cache.match(request)).text()).trim() === commit)
          await cache.delete(request);
    } catch (e) { /* nothing stored */ }
    hubStoredList();
  }

  // Files chosen or dropped together: a model when config.json is among them, else one file to import.
  function openFiles(files, folder) {
    files = Array.from(files);
    if (files.some(function (f) { return f.name === 'config.json'; })) openModel(folder || 'model', files);
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
    attnvizReadSlice: readSlice,
    attnvizHubFetch: hubFetch,
    attnvizHubCancel: hubCancel,
    attnvizHubDialog: hubDialog,
    attnvizHubRemove: hubRemove,
    attnvizHubEndpoint: hubEndpoint,
    attnvizSetHubEndpoint: setHubEndpoint,
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
      if (query.get('model')) openModelUrl(query.get('model'));
      if (query.get('hf')) Module.ccall('attnviz_open_hub', null, ['string'], [query.get('hf')]);
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
