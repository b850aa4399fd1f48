// Replay: arrow keys (and Home/End) follow the replay links; without JavaScript
// the links themselves work. Which presses are the page's to act on (none
// with a modifier, none typed into a field): key_guard.js.
(() => {
  "use strict";
  const nav = document.querySelector("[data-replay]");
  if (!nav) {
    return;
  }
  document.addEventListener("keydown", (event) => {
    if (!window.keyIsForThePage(event)) {
      return;
    }
    const link = nav.querySelector(`a[data-key="${event.key}"]`);
    if (link) {
      event.preventDefault();
      window.location.assign(link.href);
    }
  });
})();
