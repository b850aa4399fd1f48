// The game page's Share section: Share (the Web Share API, where the browser
// has it) or else Copy link, and Copy the code of the embed. Without
// JavaScript the buttons stay hidden and the address and the code are plain
// selectable text. What it says comes from the page, in its language.
(() => {
  "use strict";

  const section = document.querySelector("[data-share]");
  if (!section) return;
  const shareButton = section.querySelector("[data-share-button]");
  const embedButton = section.querySelector("[data-copy-embed]");
  const canShare = typeof navigator.share === "function";

  function copy(field, state) {
    navigator.clipboard.writeText(field.value).then(
      () => {
        state.textContent = section.dataset.copied;
      },
      () => {
        field.select();
        state.textContent = section.dataset.copyFailed;
      },
    );
  }

  if (canShare || navigator.clipboard) {
    shareButton.textContent = canShare
      ? shareButton.dataset.labelShare
      : shareButton.dataset.labelCopy;
    shareButton.hidden = false;
  }
  if (navigator.clipboard) embedButton.hidden = false;

  shareButton.addEventListener("click", () => {
    const state = section.querySelector("[data-share-state]");
    if (canShare) {
      navigator
        .share({ title: section.dataset.title, url: section.dataset.url })
        .catch(() => {
          // Dismissed by the person, or refused: nothing to say.
        });
      return;
    }
    copy(section.querySelector("[data-share-text]"), state);
  });
  embedButton.addEventListener("click", () => {
    copy(
      section.querySelector("[data-embed-snippet]"),
      section.querySelector("[data-embed-state]"),
    );
  });
})();
