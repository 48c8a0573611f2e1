// model_files.js: a model's files into the app, and models by name from the Hub (SPEC.md §5, §6).
// Linked into the module (--pre-js): every page that runs attnviz.js has it, index.html
// (attnviz-page.js hands it the files a reader gives) and the script-tag embed (a figure's
// hf=). It gives the app (platform_web.cpp) Module.attnvizReadSlice, attnvizHubFetch,
// attnvizHubCancel, attnvizHubDialog, attnvizHubRemove, attnvizHubEndpoint and
// attnvizSetHubEndpoint, and the page Module.attnvizOpenModel(folder, files) and
// Module.attnvizImportBytes(name, bytes) (a file dropped: attention, or a picture, WebP too).
(function () {
  'use strict';
  // A model's files (SPEC.md §5), as the page gives them (a folder, files chosen or dropped, ?model=)
  // or as a Hub fetch stores them (below): objects with name, size and slice(a, b).arrayBuffer(),
  // as Files are. Each small file is read in 16 MB slices straight into a buffer of the app's (main/model_hook.cpp); of a
  // checkpoint file (.safetensors, .gguf) only its header, and then, as the app's loader asks for
  // them (Module.attnvizReadSlice), its windows of about 16 MB: a 2.5 GB file is never one buffer.
  const kModelFiles = ['config.json', 'model.safetensors', 'model.safetensors.index.json', 'tokenizer.json',
                       'tokenizer_config.json', 'vocab.json', 'merges.txt', 'vocab.txt', 'source.spm', 'target.spm',
                       'preprocessor_config.json', 'chat_template.jinja'];
  const isShard = function (name) { return /^model-\d+-of-\d+\.safetensors$/.test(name); };
  const isGguf = function (name) { return /\.gguf$/i.test(name); };
  const isCheckpoint = function (name) { return name === 'model.safetensors' || isShard(name) || isGguf(name); };
  const isModelFile = function (name) { return kModelFiles.indexOf(name) >= 0 || isShard(name) || isGguf(name); };
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
  // A GGUF file's header (core/model/gguf.hpp; llama.cpp's gguf.cpp): its bytes up to where the
  // tensors' data starts (the magic, version, counts, every metadata key and value, the tensor
  // infos, the alignment's padding), read in growing slices as the walk needs them, and the size
  // of its tensors as the app holds them (F32 4 bytes a number, F16 and BF16 2, ggml's block
  // formats as quants.hpp's held_as keeps them: kGgufHeld, else 1.5). Llama 3's rope_freqs tensor is read at
  // once with the config: the header then runs to its end when it lies in the data's first MB.
  // A walk that fails (a bad type, a file cut short) hands the bytes read, and the app's reader
  // says what is wrong at that offset; weights 0.
  const kGgufScalar = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };  // type: bytes
  // ggml type: bytes a number held (F32, F16, BF16; Q4_0 and Q4_1 as Q4, Q4_K as Q4K, Q5_K as Q5K,
  // Q6_K as Q6K, Q3_K as Q8K, Q8_0, Q5_0, IQ4_NL and MXFP4 as Q8S)
  const kGgufHeld = { 0: 4, 1: 2, 30: 2, 2: 0.75, 3: 0.75, 12: 0.5 + 3 / 32, 13: 0.625 + 3 / 32, 14: 0.75 + 5 / 64,
                      11: 1 + 5 / 64, 8: 1.125, 6: 1.125, 20: 1.125, 39: 1.125 };
  async function ggufHeader(file) {
    let bytes = new Uint8Array(0), view = null, at = 0;
    const need = async function (n) {  // n more bytes at `at`, reading more of the file when short
      if (at + n > file.size) throw new Error('past the end');
      if (at + n <= bytes.length) return;
      const size = Math.min(file.size, Math.max(at + n, 2 * bytes.length, 1 << 20));
      bytes = new Uint8Array(await file.slice(0, size).arrayBuffer());
      view = new DataView(bytes.buffer);
    };
    const u32 = async function () { await need(4); at += 4; return view.getUint32(at - 4, true); };
    const u64 = async function () { await need(8); at += 8; return Number(view.getBigUint64(at - 8, true)); };
    const skip = async function (n) { await need(n); at += n; };
    const text = async function () { const n = await u64(); await need(n); at += n; return new TextDecoder().decode(bytes.subarray(at - n, at)); };
    const value = async function (type) {
      if (type === 8) { await skip(await u64()); return; }
      if (type !== 9) {
        if (!kGgufScalar[type]) throw new Error('type ' + type);
        await skip(kGgufScalar[type]);
        return;
      }
      const element = await u32(), n = await u64();
      if (kGgufScalar[element]) await skip(kGgufScalar[element] * n);
      else for (let i = 0; i < n; ++i) await value(element);
    };
    let weights = 0;
    try {
      await need(24);
      if (new TextDecoder().decode(bytes.subarray(0, 4)) !== 'GGUF') throw new Error('not GGUF');
      at = 8;  // the magic and the version
      const tensors = await u64(), keys = await u64();
      let alignment = 32;
      for (let k = 0; k < keys; ++k) {
        const key = await text(), type = await u32();
        if (key === 'general.alignment' && type === 4) alignment = await u32();
        else await value(type);
      }
      let rope = 0;  // rope_freqs.weight's end in the data
      for (let t = 0; t < tensors; ++t) {
        const name = await text(), dims = await u32();
        let count = 1;
        for (let i = 0; i < dims; ++i) count *= await u64();
        const type = await u32(), offset = await u64();
        // (no ??: emscripten's minifier drops the parentheses around it)
        weights += count * (type in kGgufHeld ? kGgufHeld[type] : 1.5);
        if (name === 'rope_freqs.weight' && type === 0) rope = offset + 4 * count;
      }
      let end = Math.ceil(at / alignment) * alignment;
      if (rope && rope <= (1 << 20)) end += rope;
      at = 0;
      await need(Math.min(end, file.size));
      return { bytes: bytes.subarray(0, Math.min(end, file.size)), weights: weights };
    } catch (e) {
      return { bytes: bytes.subarray(0, Math.min(bytes.length, file.size)), weights: 0 };
    }
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
    files = files.filter(function (f) { return isModelFile(f.name); });
    const heads = {};
    let total = 0, weights = 0;
    try {
      for (const f of files) {
        if (!isCheckpoint(f.name)) { total += f.size; continue; }
        heads[f.name] = isGguf(f.name) ? await ggufHeader(f) : await checkpointHeader(f);
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

  // A model by its Hub id (SPEC.md §6): ?hf=ORG/NAME[@REVISION][:QUANT] (or ?hf=…&quant=QUANT), a
  // link's hf=, the Hub dialog. The app asks (platform_web.cpp: Module.attnvizHubFetch); the
  // listing (?blobs=true: every file's size) gives the commit and the files, and the app says
  // which the model needs (hubPlan: hub::model_files, a GGUF repo's one .gguf file for QUANT);
  // their sizes are checked against the page's memory before anything large is fetched (a
  // .gguf's weights counted at 1.5 × the file, a Q4_K_M file's; its header, read as it opens,
  // then counts them exactly); each
  // file comes from the Hub's resolve URL (large ones
  // redirected to its CDN), streamed into Cache Storage keyed by commit and file (never one
  // buffer), with progress; a manifest, then the revision's ref, are written last. The files
  // then open as a folder's do (openModel), read from storage. The next open, or one without the
  // network, starts from storage. A storage that is full: the file is fetched again into memory
  // (chunks, not one buffer) and the model still opens. A cancelled or broken download deletes
  // what it stored of that commit. The Hub's address: the embedder's (Module.attnvizHub: a
  // notebook's HF_ENDPOINT), else ?hub=URL (kept in localStorage), else the site's
  // <meta name="attnviz-hub" content="URL">, else https://huggingface.co.
  const kHubCache = 'attnviz-hub-v1', kHubKey = 'https://hub.attnviz.invalid/';
  // The id's parts {repo, revision, quant} and, given the listing's file names, `files` (or `error`).
  function hubPlan(id, names) {
    return JSON.parse(Module.ccall('attnviz_hub_files', 'string', ['string', 'string'], [id, names ? JSON.stringify(names) : '']));
  }
  const isWeights = function (name) { return name === 'model.safetensors' || name === 'model.safetensors.index.json' || isGguf(name); };
  // A commit's manifest: one per quantization of a GGUF repo (each its own .gguf file).
  function hubManifest(repo, commit, quant) { return hubKey(repo, commit, '.manifest' + (quant ? ':' + quant : '')); }
  function setHubEndpoint(url) {
    try { localStorage.setItem('attnviz-hub', url); } catch (e) { /* storage off: this page only */ }
  }
  function hubEndpoint() {
    if (Module['attnvizHub']) return String(Module['attnvizHub']).replace(/\/+$/, '');
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
  // A file's bytes held in memory, 16 MB chunks (never one buffer).
  async function inMemory(f) {
    const chunks = [];
    for (let at = 0; at < f.size; at += 16 << 20)
      chunks.push(new Uint8Array(await f.slice(at, Math.min(f.size, at + (16 << 20))).arrayBuffer()));
    return chunkFile(f.name, chunks, f.size);
  }
  // The stored files of a commit (and quantization), when its manifest says every one is there; else null.
  async function hubStored(cache, repo, commit, quant) {
    const manifest = cache && await cache.match(hubManifest(repo, commit, quant));
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
    const id = hubPlan(spec, null);
    if (id.error) return hubFailed(id.error);
    const repo = id.repo, rev = id.revision, quant = id.quant;
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
      const files = commit && await hubStored(cache, repo, commit, quant);
      if (files) return open(files);  // offline: from storage
      return hubFailed(hubUnreachable(repo, e) + ', and it is not stored in this browser');
    }
    const commit = listing.sha;
    const ready = await hubStored(cache, repo, commit, quant);
    if (ready) return open(ready);
    // 2. Which files, and their sizes: nothing large is fetched before they are known to fit.
    const sizes = {};
    for (const s of listing.siblings) sizes[s.rfilename] = s.size !== undefined ? s.size : (s.lfs && s.lfs.size) || 0;
    const plan = hubPlan(spec, Object.keys(sizes));
    if (plan.error) return hubFailed(plan.error);
    const names = plan.files.filter(function (n) { return !isWeights(n); });
    const weights = plan.files.filter(isWeights);
    if (!weights.length)
      return hubFailed(repo + ': the repo has no safetensors weights (model.safetensors or model.safetensors.index.json) nor a .gguf');
    const shardsListed = Object.keys(sizes).filter(isShard);
    const weightBytes = weights[0] === 'model.safetensors.index.json' ? shardsListed.reduce(function (a, n) { return a + sizes[n]; }, 0)
      : sizes[weights[0]] * (isGguf(weights[0]) ? 1.5 : 1);
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
          Module.ccall('attnviz_hub_progress', null, ['string', 'number', 'number', 'number', 'number'],
                       [name, done - before, sizes[name] || 0, done, total]);
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
          done = before;  // storage full: this file and the rest from memory, and those stored
          for (let i = 0; i < files.length; ++i) files[i] = await inMemory(files[i]);  // (before their entries go)
          await forget();
          cache = null;
          Module.ccall('attnviz_hub_unstored', null, ['string'], [spec]);
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
        await cache.put(hubManifest(repo, commit, quant), new Response(JSON.stringify(manifest)));
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
        const m = /^https:\/\/hub\.attnviz\.invalid\/(.+)\/([0-9a-f]{40})\/\.manifest(?::(.+))?$/.exec(request.url);
        if (!m) continue;
        const files = await (await cache.match(request)).json();
        list.push({ id: m[1] + (m[3] ? ':' + m[3] : ''), commit: m[2], bytes: files.reduce(function (a, f) { return a + f.size; }, 0) });
      }
    } catch (e) { /* no storage: nothing stored */ }
    Module.ccall('attnviz_hub_stored', null, ['string'], [JSON.stringify(list)]);
  }
  // A size: bytes, -1 not known (the Hub answered no: no such repo), -2 the Hub not reached
  // (offline). The first listing is asked alone: when the Hub cannot be reached, every size is -2
  // without the other requests (each would fail, and log, the same way).
  function hubDialog(ids) {
    hubStoredList();
    const endpoint = hubEndpoint();
    const report = function (id, bytes) { Module.ccall('attnviz_hub_size', null, ['string', 'number'], [id, bytes]); };
    async function size(id) {
      let r;
      try {
        r = await fetch(endpoint + '/api/models/' + id + '/revision/main?blobs=true');
      } catch (e) {
        return -2;  // a network error: no answer at all
      }
      try {
        if (!r.ok) return -1;
        const sizes = {};
        for (const s of (await r.json()).siblings || []) sizes[s.rfilename] = s.size !== undefined ? s.size : (s.lfs && s.lfs.size) || 0;
        const plan = hubPlan(id, Object.keys(sizes));
        if (plan.error) return -1;
        const shards = plan.files.indexOf('model.safetensors.index.json') >= 0 ? Object.keys(sizes).filter(isShard) : [];
        return plan.files.concat(shards).reduce(function (a, n) { return a + (sizes[n] || 0); }, 0);
      } catch (e) {
        return -1;
      }
    }
    (async function () {
      if (!ids.length) return;
      const first = await size(ids[0]);
      report(ids[0], first);
      if (first === -2) { ids.slice(1).forEach(function (id) { report(id, -2); }); return; }
      ids.slice(1).forEach(async function (id) { report(id, await size(id)); });
    })();
  }
  // A stored model (its id as hubStoredList lists it: a GGUF repo's with :QUANT): its manifest and
  // the files it lists; the commit's refs too once no manifest of it is left.
  async function hubRemove(id, commit) {
    const plan = hubPlan(id, null), repo = plan.repo;
    try {
      const cache = await caches.open(kHubCache);
      const manifest = await cache.match(hubManifest(repo, commit, plan.quant));
      for (const f of manifest ? await manifest.json() : []) await cache.delete(hubKey(repo, commit, f.name));
      await cache.delete(hubManifest(repo, commit, plan.quant));
      const left = (await cache.keys()).some(function (r) { return r.url.startsWith(hubKey(repo, commit, '.manifest')); });
      for (const request of left ? [] : await cache.keys())  // the refs that pointed to it
        if (request.url.startsWith(kHubKey + repo + '/refs/') && (await (await cache.match(request)).text()).trim() === commit)
          await cache.delete(request);
    } catch (e) { /* nothing stored */ }
    hubStoredList();
  }


  Module['attnvizOpenModel'] = openModel;
  Module['attnvizReadSlice'] = readSlice;
  Module['attnvizHubFetch'] = hubFetch;
  Module['attnvizHubCancel'] = hubCancel;
  Module['attnvizHubDialog'] = hubDialog;
  Module['attnvizHubRemove'] = hubRemove;
  Module['attnvizHubEndpoint'] = hubEndpoint;
  Module['attnvizSetHubEndpoint'] = setHubEndpoint;

  // A file into the app, as one dropped on the figure (main/import_hook.cpp): attention to
  // import, or a vision model's picture. A WebP picture, which stb_image (the app's decoder, the
  // command line's too) does not read, is decoded by the browser and handed over as a 24-bit BMP
  // of the same pixels, bottom row first; its alpha is dropped, as PIL's convert("RGB") drops it
  // (a canvas keeps colours premultiplied: a pixel less than opaque may be a level off).
  function sendBytes(name, bytes) {
    const ptr = Module._malloc(Math.max(bytes.length, 1));
    Module.HEAPU8.set(bytes, ptr);  // HEAPU8 after malloc: the heap may have grown
    Module.ccall('attnviz_import_bytes', null, ['string', 'number', 'number'], [name, ptr, bytes.length]);
    Module._free(ptr);
  }
  const isWebp = function (b) {
    return b.length >= 12 && b[0] === 0x52 && b[1] === 0x49 && b[2] === 0x46 && b[3] === 0x46 &&  // RIFF
           b[8] === 0x57 && b[9] === 0x45 && b[10] === 0x42 && b[11] === 0x50;                    // WEBP
  };
  async function webpAsBmp(bytes) {
    const bitmap = await createImageBitmap(new Blob([bytes], { type: 'image/webp' }),
                                           { colorSpaceConversion: 'none', premultiplyAlpha: 'none' });
    const w = bitmap.width, h = bitmap.height, row = (3 * w + 3) & ~3;
    const canvas = new OffscreenCanvas(w, h), context = canvas.getContext('2d');
    context.drawImage(bitmap, 0, 0);
    const rgba = context.getImageData(0, 0, w, h).data;
    const out = new Uint8Array(54 + row * h), view = new DataView(out.buffer);
    out[0] = 0x42, out[1] = 0x4d;  // BM
    view.setUint32(2, out.length, true), view.setUint32(10, 54, true), view.setUint32(14, 40, true);
    view.setInt32(18, w, true), view.setInt32(22, h, true), view.setUint16(26, 1, true), view.setUint16(28, 24, true);
    view.setUint32(34, row * h, true);
    for (let y = 0; y < h; ++y)
      for (let x = 0, at = 54 + (h - 1 - y) * row, from = 4 * y * w; x < w; ++x, at += 3, from += 4)
        out[at] = rgba[from + 2], out[at + 1] = rgba[from + 1], out[at + 2] = rgba[from];
    return out;
  }
  function importBytes(name, bytes) {
    if (!isWebp(bytes)) return sendBytes(name, bytes);
    webpAsBmp(bytes).then(function (bmp) { sendBytes(name, bmp); }).catch(function (e) {
      Module.ccall('attnviz_import_failed', null, ['string', 'string'], [name, 'a WebP picture this browser cannot decode: ' + (e.message || e)]);
    });
  }
  Module['attnvizImportBytes'] = importBytes;
})();
