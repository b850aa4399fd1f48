// Keys 1 to 9 play a cell on your turn, laid out as on a phone keypad: 1 is the
// top left cell, 9 the bottom right. A key clicks that cell's button (its
// form's POST), so the server decides as always; where the cell has no
// form (not your turn, a taken cell) the key does nothing. Without JavaScript the
// hint stays hidden and the buttons work as before. Which presses are the
// page's to act on: key_guard.js.
(() => {
  "use strict";

  const game = document.getElementById("game");
  if (!game) {
    return;
  }
  let submitted = false;

  // The hint comes in every live part rendered on your turn, hidden.
  function showHint() {
    const hint = game.querySelector("[data-keys-hint]");
    if (hint) {
      hint.hidden = false;
    }
  }

  document.addEventListener("keydown", (event) => {
    if (submitted || event.repeat || !/^[1-9]$/.test(event.key)) {
      return;
    }
    if (!window.keyIsForThePage(event)) {
      return;
    }
    const cell = game.querySelectorAll(".board td")[Number(event.key) - 1];
    const button = cell?.querySelector("form button");
    if (!button) {
      return;
    }
    event.preventDefault();
    submitted = true; // one move per page: a second key would be a stale move
    button.click();
  });
  window.addEventListener("pageshow", (event) => {
    if (event.persisted) {
      submitted = false; // back on this page from the back/forward cache
    }
  });
  game.addEventListener("live:swapped", showHint);
  showHint();
})();
