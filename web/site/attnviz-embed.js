// attnviz-embed.js: figures in a page without <iframe>s. Every element with a data-attnviz
// attribute (a link's hash) becomes one figure on its own canvas, all run by the same
// modularized build (createAttnviz in attnviz.js): the wasm is fetched and compiled once, the
// fonts fetched once, and each figure gets its own instance.
//   <div data-attnviz="v=1&preset=i-am-good&view=heatmap" data-width="640" data-height="400"></div>
//   <script src="https://your.site/attnviz/attnviz-embed.js" defer></script>
// attnviz-relaxed.js/.wasm (relaxed SIMD, where the browser validates it) or attnviz.js/.wasm
// (SIMD128), attnviz.data and fonts/ are found next to this script. The figure
// is figure-only (panels=0) unless the hash says otherwise. Each element gets
//   element.attnvizMessage(message) → reply   (the messages of docs/EMBED.md)
// and fires an "attnviz-ready" event after its first frame.
//
// attnvizEmbed.start(element, options) starts one figure by hand; the notebook's outputs
// (attnviz-notebook.js) do, with options that carry everything inline:
//   hash       the link's hash (else the element's data-attnviz)
//   code       a Promise of [createAttnviz, compiled wasm, font package bytes] (else fetched)
//   models     the built-in models' files, base64 by model and file name (else fetched)
//   openFull   function (url): "Open in attnviz ↗" (else a new tab on url)
//   fonts      the fonts loaded on demand (CJK), bytes by name: any other is not fetched, and
//              its characters draw as boxes (else fetched from fonts/)
//   hub        the Hub's address for hf= (else the page's: web/platform/model_files.js)
(function () {
  'use strict';
  const me = document.currentScript;
  // Inline (a notebook's output: attnviz-notebook.js) there is no script address, and in a
  // srcdoc frame no page address to resolve against: the files come inline there.
  let base = '';
  try { base = new URL('.', me && me.src ? me.src : location.href).href; } catch (e) { /* about:srcdoc */ }
  // The build, as attnviz-page.js picks it: (func (result v128) f32x4.relaxed_madd of three zeros)
  const zero = [0xfd, 0x0c].concat(new Array(16).fill(0));
  const build = WebAssembly.validate(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 0x60, 0, 1, 0x7b, 3, 2, 1, 0,
    10, 61, 1, 59, 0].concat(zero, zero, zero, [0xfd, 0x85, 0x02, 0x0b]))) ? 'attnviz-relaxed' : 'attnviz';

  function fetchBytes(name) {
    return fetch(base + name).then(function (r) {
      if (!r.ok) throw new Error(name + ': HTTP ' + r.status);
      return r.arrayBuffer();
    });
  }
  function loadFactory() {
    if (window.createAttnviz) return Promise.resolve(window.createAttnviz);
    return new Promise(function (resolve, reject) {
      const s = document.createElement('script');
      s.src = base + build + '.js';
      s.onload = function () { resolve(window.createAttnviz); };
      s.onerror = function () { reject(new Error('could not load ' + s.src)); };
      document.head.appendChild(s);
    });
  }

  let shared = null;  // Promise of [createAttnviz, compiled wasm, font package bytes]
  function start(el, options) {
    if (el.attnvizStarted) return;
    el.attnvizStarted = true;
    options = options || {};
    let hash = (options.hash || el.getAttribute('data-attnviz') || '').replace(/^#/, '');
    if (!/(^|&)panels=/.test(hash)) hash += (hash ? '&' : '') + 'panels=0';
    const width = +el.getAttribute('data-width') || 640, height = +el.getAttribute('data-height') || 400;
    if (!el.style.width) el.style.width = width + 'px';
    if (!el.style.height) el.style.height = height + 'px';
    el.style.maxWidth = '100%';
    el.style.position = 'relative';
    // The canvas fills the element. Emscripten removes a canvas's inline width and height when
    // it sizes the framebuffer, so the size comes from min/max, which it leaves alone.
    const canvas = document.createElement('canvas');
    canvas.tabIndex = 0;  // the keyboard reaches the figure (its accessible twin follows it)
    for (const [k, v] of [['position', 'absolute'], ['left', '0'], ['top', '0'], ['display', 'block'], ['outline', 'none'],
                          ['min-width', '100%'], ['max-width', '100%'], ['min-height', '100%'], ['max-height', '100%']])
      canvas.style.setProperty(k, v);
    canvas.addEventListener('contextmenu', function (e) { e.preventDefault(); });
    el.appendChild(canvas);

    const code = options.code || (shared = shared || Promise.all([loadFactory(), fetchBytes(build + '.wasm').then(WebAssembly.compile),
                                                                  fetchBytes('attnviz.data')]));
    code.then(function ([factory, wasm, data]) {
      const config = {
        canvas: canvas,
        attnvizHash: '#' + hash,
        attnvizPageUrl: base + 'index.html',
        locateFile: function (path) { return base + path; },
        instantiateWasm: function (imports, receive) {
          WebAssembly.instantiate(wasm, imports).then(function (instance) { receive(instance, wasm); });
          return {};
        },
        getPreloadedPackage: function () { return data.slice(0); },
        onFirstFrame: function () {
          el.setAttribute('data-attnviz-ready', '1');
          el.dispatchEvent(new CustomEvent('attnviz-ready'));
        },
        printErr: function (text) { console.error(text); },
      };
      if (options.models) config.attnvizInlineModels = options.models;  // web/platform/platform_web.cpp
      if (options.openFull) config.attnvizOpenFull = options.openFull;
      if (options.fonts) config.inlineFonts = options.fonts;
      if (options.hub) config.attnvizHub = options.hub;
      el.attnviz = config;
      el.attnvizMessage = function (message) {
        const reply = config.ccall('attnviz_message', 'string', ['string'], [JSON.stringify(message)]);
        return reply ? JSON.parse(reply) : null;
      };
      return factory(config);
    }).catch(function (e) {
      el.textContent = 'attnviz: ' + (e.message || e);
      console.error('attnviz: ' + (e.message || e));
    });
  }

  function startAll() { document.querySelectorAll('[data-attnviz]').forEach(start); }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', startAll);
  else startAll();
  window.attnvizEmbed = { start: start, startAll: startAll };
})();
