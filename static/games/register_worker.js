// Registers the site's service worker (static/games/service_worker.js, served
// at data-url, the site's root): every page of the site loads through it from
// the next page on, and an offline page answers when one cannot load.
(() => {
  "use strict";

  const script = document.currentScript;
  if (!script || !("serviceWorker" in navigator)) {
    return;
  }
  const url = script.dataset.url;
  // After the page's own loading: the worker's precache waits its turn.
  window.addEventListener("load", () => {
    navigator.serviceWorker.register(url).catch(() => {
      // Refused (private browsing, storage off): the site works as before.
    });
  });
})();
