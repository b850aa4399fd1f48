// "Notify me when it is my turn": a system notification when the opponent
// moves or starts a game against you while this page is hidden.
//
// No connection of its own: live.js swaps in the part of the page the server
// rendered for this viewer, and every change worth a notification carries it
// there (data-notice: its key, tag, title, body and the game's address; see
// games.presentation.turn_notice). A key this page has not shown before is a
// new change. Your own moves never carry one. Of all the hidden tabs of this
// browser that see the same change, one shows it: the one that gets the lock
// named by its key. The choice is kept in localStorage; the browser's
// permission is asked for only when the button is pressed. Every word this
// script shows comes from the page, in its language: the notices' titles and
// bodies, and the control's states (data-state-on, -off and -blocked).
(() => {
  "use strict";

  const control = document.querySelector("[data-notify-control]");
  const root = document.getElementById("game") || document.getElementById("lobby-lists");
  let storage = null;
  try {
    storage = window.localStorage;
  } catch {
    // blocked, as with cookies blocked for this site
  }
  if (!control || !root || !storage || !window.Notification || !navigator.locks) {
    return; // the control stays hidden
  }
  const PREFERENCE = "tictactoe:notify";
  // Every tab learns of a change from the same stream event, within seconds;
  // the tab that shows it keeps the change's lock this long.
  const HOLD_MS = 60000;
  const button = control.querySelector("button");
  const state = control.querySelector("#notify-state");
  const shown = {}; // keys of the changes this page has had on it

  function wanted() {
    return storage.getItem(PREFERENCE) === "on";
  }

  function isOn() {
    return wanted() && Notification.permission === "granted";
  }

  function showState() {
    button.setAttribute("aria-pressed", isOn() ? "true" : "false");
    const words = control.dataset;
    if (Notification.permission === "denied") {
      state.textContent = words.stateBlocked;
    } else {
      state.textContent = isOn() ? words.stateOn : words.stateOff;
    }
  }

  button.addEventListener("click", () => {
    if (isOn()) {
      storage.removeItem(PREFERENCE);
      showState();
      return;
    }
    storage.setItem(PREFERENCE, "on");
    if (Notification.permission === "default") {
      Notification.requestPermission().then(showState, showState);
    } else {
      showState();
    }
  });
  // Turned on or off in another tab.
  window.addEventListener("storage", (event) => {
    if (event.key === PREFERENCE) {
      showState();
    }
  });

  function notify(notice) {
    navigator.locks.request(
      `tictactoe:notice:${notice.notice}`,
      { ifAvailable: true },
      (lock) => {
        if (!lock) {
          return null; // another tab shows this change
        }
        let notification;
        try {
          notification = new Notification(notice.noticeTitle, {
            body: notice.noticeBody,
            tag: notice.noticeTag,
          });
        } catch {
          return null; // e.g. mobile browsers that notify only from a service worker
        }
        notification.onclick = () => {
          window.focus();
          notification.close();
          if (window.location.pathname !== notice.noticeUrl) {
            window.location.assign(notice.noticeUrl);
          }
        };
        return new Promise((resolve) => {
          setTimeout(resolve, HOLD_MS);
        });
      }
    );
  }

  // Returns the notices on the page that it has not had on it before.
  function newNotices() {
    const found = [];
    const elements = root.querySelectorAll("[data-notice]");
    for (let i = 0; i < elements.length; i += 1) {
      const notice = elements[i].dataset;
      if (!shown[notice.notice]) {
        shown[notice.notice] = true;
        found.push(notice);
      }
    }
    return found;
  }

  root.addEventListener("live:swapped", () => {
    const notices = newNotices();
    if (document.visibilityState === "hidden" && isOn()) {
      notices.forEach(notify);
    }
  });

  newNotices(); // what the page opened with is not news
  showState(); // while hidden: the status region does not announce it
  control.hidden = false;
})();
