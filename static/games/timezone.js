// Tells the site this browser's time zone, once: the page includes this script
// only while the viewer's zone is unknown (times show in UTC, labelled "UTC").
// A player's zone is saved on their account, a visitor's in a cookie
// (accounts.preference_views.set_time_zone); the next page shows times in it.
// This page is left as it is: nothing moves under the reader. The CSRF token
// comes from Django's cookie (the page includes this script only once it has
// one), or from a form of the page.
(() => {
  "use strict";

  const script = document.currentScript;
  if (!script || !window.fetch || !window.Intl) {
    return;
  }
  let zone = "";
  try {
    zone = Intl.DateTimeFormat().resolvedOptions().timeZone || "";
  } catch {
    return;
  }
  if (!zone) {
    return;
  }
  // On "Language and time" with no zone chosen: the browser's, preselected.
  const menu = document.querySelector("select[name=time_zone]");
  if (menu && !menu.value) {
    const option = Array.from(menu.options).find((item) => item.value === zone);
    if (option) {
      option.selected = true;
    }
  }
  // At most one try per zone and tab: a zone the site refuses (400) is not
  // posted again from every page.
  const KEY = "tictactoe:time-zone-sent";
  let storage = null;
  try {
    storage = window.sessionStorage;
  } catch {
    // blocked, as with cookies blocked for this site
  }
  if (storage && storage.getItem(KEY) === zone) {
    return;
  }
  if (storage) {
    storage.setItem(KEY, zone);
  }
  let token = "";
  document.cookie.split(";").forEach((pair) => {
    const parts = pair.trim().split("=");
    if (parts[0] === "csrftoken") {
      token = decodeURIComponent(parts.slice(1).join("="));
    }
  });
  const field = document.querySelector("input[name=csrfmiddlewaretoken]");
  if (!token && field) {
    token = field.value;
  }
  const body = new URLSearchParams();
  body.set("time_zone", zone);
  fetch(script.dataset.url, {
    method: "POST",
    credentials: "same-origin",
    headers: { "X-CSRFToken": token },
    body: body,
  }).catch(() => {
    // Offline: the next page tries again.
    if (storage) {
      storage.removeItem(KEY);
    }
  });
})();
