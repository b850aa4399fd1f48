// The offline page (templates/offline.html), which the service worker shows at
// the address that could not load: Try again reloads it, and so does coming
// back online once the server answers. The "online" event alone is not proof:
// browsers fire it on flaky links (and on a page loaded while offline), and an
// unconditional reload there would loop on this page.
(() => {
  "use strict";

  const reload = () => window.location.reload();
  const retry = document.getElementById("offline-retry");
  if (retry) {
    retry.addEventListener("click", reload);
  }
  window.addEventListener("online", () => {
    fetch("/livez", { cache: "no-store" }).then(
      (response) => response.ok && reload(),
      () => {}, // still offline: the next "online" event tries again
    );
  });
})();
