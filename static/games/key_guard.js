// The rule the game page's keys (keys.js) and the replay's keys (replay.js)
// share: a key press is the page's to act on only without a modifier (Ctrl+1,
// Alt+← and the like belong to the browser) and outside form fields (a key typed
// into a field is the field's). Loaded before either script, on both pages.
(() => {
  "use strict";

  window.keyIsForThePage = (event) => {
    if (event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) {
      return false;
    }
    const target = event.target;
    return !target?.closest?.("input, textarea, select, [contenteditable]");
  };
})();
