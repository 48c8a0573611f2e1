// embed-example.js: the buttons under the first figure of embed-example.html talk to it with
// postMessage (docs/EMBED.md); replies are logged to the console.
(function () {
  'use strict';
  const frame = document.getElementById('fig-self');
  document.querySelectorAll('#fig-self-controls button').forEach(function (button) {
    button.addEventListener('click', function () {
      const message = button.dataset.view
        ? { type: 'attnviz:set-view', view: button.dataset.view }
        : { type: 'attnviz:set-scene', scene: { kind: 'self', tokens: button.dataset.sentence } };
      frame.contentWindow.postMessage(message, '*');
    });
  });
  window.addEventListener('message', function (e) {
    if (e.data && typeof e.data.type === 'string' && e.data.type.startsWith('attnviz:')) console.log('attnviz says', e.data);
  });
})();
