// Replay: arrow keys (and Home/End) follow the replay links; without JavaScript
// the links themselves work. Keys typed into form fields are left alone.
(function () {
  "use strict";
  var nav = document.querySelector("[data-replay]");
  if (!nav) {
    return;
  }
  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) {
      return;
    }
    var target = event.target;
    if (target && target.closest && target.closest("input, textarea, select, [contenteditable]")) {
      return;
    }
    var link = nav.querySelector('a[data-key="' + event.key + '"]');
    if (link) {
      event.preventDefault();
      window.location.assign(link.href);
    }
  });
})();
