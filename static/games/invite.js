// The "Copy link" button next to an invitation link on the game page. Without
// JavaScript the button stays hidden and the link is plain selectable text.
// Delegated from the document: static/games/live.js replaces the live part.
// What it says comes from the page, in its language (data-copied,
// data-copy-failed on the link's box).
(() => {
  "use strict";

  function reveal() {
    if (!navigator.clipboard) return;
    document.querySelectorAll("[data-copy-invitation]").forEach((button) => {
      button.hidden = false;
    });
  }

  document.addEventListener("click", (event) => {
    const button = event.target.closest("[data-copy-invitation]");
    if (!button) return;
    const box = button.parentElement;
    const input = box.querySelector("[data-invitation-url]");
    const state = box.querySelector("[data-copy-state]");
    navigator.clipboard.writeText(input.value).then(
      () => { state.textContent = box.dataset.copied; },
      () => {
        input.select();
        state.textContent = box.dataset.copyFailed;
      }
    );
  });

  reveal();
  const game = document.getElementById("game");
  if (game) game.addEventListener("live:swapped", reveal);
})();
