// The offline page (templates/offline.html), which the service worker shows at
// the address that could not load: Try again reloads it, and so does coming
// back online.
(() => {
  "use strict";

  const reload = () => window.location.reload();
  const retry = document.getElementById("offline-retry");
  if (retry) {
    retry.addEventListener("click", reload);
  }
  window.addEventListener("online", reload);
})();
