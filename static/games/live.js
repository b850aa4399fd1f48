// Live updates for the game page and the lobby.
//
// The server's stream (Server-Sent Events) only says "version N" (game page) or
// "refresh" (lobby). This script then fetches the part of the page that the
// server renders for this viewer and swaps it in: the rules and the markup live
// on the server only. Without JavaScript the pages work as before.
(() => {
  "use strict";

  const game = document.getElementById("game");
  const lobby = document.getElementById("lobby-lists");
  const root = game || lobby;
  if (!root || !window.EventSource || !window.fetch) {
    return;
  }

  const WATCHDOG_MS = 45000; // the server pings every 15 s
  const MAX_RETRY_MS = 30000;
  let source = null;
  let retryMs = 1000;
  let retryTimer = null;
  let watchdog = null;
  let fetching = false;
  let fetchAgain = false;

  function liveState() {
    return root.querySelector(".live-state");
  }

  function shownVersion() {
    const state = liveState();
    return state ? Number(state.dataset.version) : 0;
  }

  // Where focus was, so that a keyboard player keeps their place after a swap.
  function focusKey() {
    const active = document.activeElement;
    if (!active || !root.contains(active)) {
      return null;
    }
    return active.getAttribute("aria-label") || active.textContent.trim();
  }

  function restoreFocus(key) {
    if (key === null) {
      return;
    }
    const candidates = root.querySelectorAll("button, a, summary");
    for (let i = 0; i < candidates.length; i += 1) {
      const element = candidates[i];
      const label = element.getAttribute("aria-label") || element.textContent.trim();
      if (label === key) {
        element.focus();
        return;
      }
    }
  }

  function swap(html) {
    const template = document.createElement("template");
    template.innerHTML = html;
    const incoming = template.content.querySelector(".live-state");
    if (game && incoming && Number(incoming.dataset.version) < shownVersion()) {
      return; // an older answer overtaken by a newer one
    }
    const newer = game && incoming && Number(incoming.dataset.version) > shownVersion();
    const key = focusKey();
    const openDetails = root.querySelectorAll("details[open]").length > 0;
    root.replaceChildren(template.content);
    if (openDetails) {
      const details = root.querySelector("details");
      if (details) {
        details.open = true;
      }
    }
    restoreFocus(key);
    const state = liveState();
    if (state) {
      document.title = state.dataset.title;
      root.dataset.version = state.dataset.version;
    }
    // The page's live region says what changed, as the server worded it for
    // this viewer ("bob played O in row 2, column 3. Your turn.").
    const announcer = document.getElementById("live-announcer");
    if (newer && announcer) {
      announcer.textContent = state.dataset.announce;
    }
    // For the page's other scripts (keys.js, notify.js).
    root.dispatchEvent(new CustomEvent("live:swapped"));
  }

  // One fetch at a time; news that arrives meanwhile triggers one more.
  function refresh() {
    if (fetching) {
      fetchAgain = true;
      return;
    }
    fetching = true;
    fetch(root.dataset.live + window.location.search, {
      credentials: "same-origin",
      cache: "no-store",
      headers: { Accept: "text/html" },
    })
      .then((response) => {
        if (response.redirected) {
          window.location.reload(); // logged out: show the login page
          return null;
        }
        return response.ok ? response.text() : null;
      })
      .then((html) => {
        if (html !== null) {
          swap(html);
        }
      })
      .catch(() => {
        // No answer: the stream's next event, or its reopening, fetches again.
      })
      .then(() => {
        fetching = false;
        if (fetchAgain) {
          fetchAgain = false;
          refresh();
        }
      });
  }

  function resetWatchdog() {
    clearTimeout(watchdog);
    watchdog = setTimeout(() => {
      connect(); // silent for too long (e.g. after sleep): start afresh
    }, WATCHDOG_MS);
  }

  function retryLater() {
    if (source) {
      source.close();
    }
    clearTimeout(retryTimer);
    // Between half and one and a half times the delay: pages refused at the same
    // moment (a restart) do not all come back at the same moment.
    retryTimer = setTimeout(connect, retryMs * (0.5 + Math.random()));
    retryMs = Math.min(retryMs * 2, MAX_RETRY_MS);
  }

  function connect() {
    clearTimeout(retryTimer);
    if (source) {
      source.close();
    }
    // The server sends the current version at once if it differs from ours.
    const url = root.dataset.events + (game ? `?v=${shownVersion()}` : "");
    source = new EventSource(url);
    source.onopen = () => {
      retryMs = 1000;
      resetWatchdog();
      // The lobby's stream says only what changes once it is open: a change
      // between the page's rendering (or the last stream's end) and now has no
      // event, so the lobby asks for its lists once (a cache hit when nothing
      // changed). The game's stream sends the missed version itself (?v=).
      if (lobby) {
        refresh();
      }
    };
    source.onmessage = (event) => {
      resetWatchdog();
      if (Number(event.data) > shownVersion()) {
        refresh();
      }
    };
    source.addEventListener("lobby", () => {
      resetWatchdog();
      refresh();
    });
    source.addEventListener("ping", resetWatchdog);
    source.onerror = () => {
      if (source.readyState === EventSource.CLOSED) {
        retryLater(); // refused or unavailable: the browser gave up, we do not
      }
    };
  }

  function reconnectIfClosed() {
    if (!source || source.readyState === EventSource.CLOSED) {
      connect();
    }
  }

  document.addEventListener("visibilitychange", () => {
    if (!document.hidden) {
      reconnectIfClosed();
    }
  });
  window.addEventListener("online", connect);
  window.addEventListener("pageshow", (event) => {
    if (event.persisted) {
      connect(); // restored from the back/forward cache
    }
  });
  connect();
})();
