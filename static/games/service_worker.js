// The site's service worker, served at /service-worker.js after one line
// naming SITE (tictactoe_site/lib/web_app.py): its version, the hashed static
// URLs to precache, the offline page of each language.
//
// Pages (the lobby, a game) always come from the network: a stale board is
// worse than none, so none is ever cached. When a page cannot load, the
// site's offline page answers instead, in the viewer's language (the one the
// last page that loaded was in: its Content-Language). Static files come from
// the precache: their URLs change with their contents, and a new version of
// this worker (any change to SITE) replaces the cache whole.
/* global SITE */
"use strict";

const CACHE = `tictactoe-static-${SITE.version}`;
const CACHE_PREFIX = "tictactoe-static-";
// The viewer's last language, kept across versions and the worker's restarts.
const LANGUAGE_CACHE = "tictactoe-language";
const LANGUAGE_KEY = "/offline/language";
const PRECACHED = new Set(SITE.static.map((url) => new URL(url, self.location).href));
let knownLanguage = null;

self.addEventListener("install", (event) => {
  const urls = [...SITE.static, ...Object.values(SITE.offline)];
  event.waitUntil(
    caches
      .open(CACHE)
      // Past the browser's HTTP cache: the files as this release serves them.
      .then((cache) => cache.addAll(urls.map((url) => new Request(url, { cache: "reload" }))))
      .then(() => self.skipWaiting()),
  );
});

self.addEventListener("activate", (event) => {
  event.waitUntil(
    (async () => {
      const names = await caches.keys();
      await Promise.all(
        names
          .filter((name) => name.startsWith(CACHE_PREFIX) && name !== CACHE)
          .map((name) => caches.delete(name)),
      );
      // Pages load while the worker starts, not after.
      if (self.registration.navigationPreload) {
        await self.registration.navigationPreload.enable();
      }
    })(),
  );
});

function rememberLanguage(response) {
  const language = response.headers.get("Content-Language");
  if (!language || !(language in SITE.offline) || language === knownLanguage) {
    return Promise.resolve();
  }
  knownLanguage = language;
  return caches
    .open(LANGUAGE_CACHE)
    .then((cache) => cache.put(LANGUAGE_KEY, new Response(language)));
}

async function viewerLanguage() {
  if (knownLanguage) {
    return knownLanguage;
  }
  const kept = await caches.match(LANGUAGE_KEY, { cacheName: LANGUAGE_CACHE });
  if (kept) {
    knownLanguage = await kept.text();
    return knownLanguage;
  }
  // No page has loaded through this worker yet: the browser's languages.
  for (const wanted of self.navigator.languages || []) {
    const tag = wanted.toLowerCase();
    if (tag in SITE.offline) {
      return tag;
    }
    const primary = tag.split("-")[0];
    if (primary in SITE.offline) {
      return primary;
    }
  }
  return SITE.defaultLanguage;
}

async function offlinePage() {
  const language = await viewerLanguage();
  const cache = await caches.open(CACHE);
  const page =
    (await cache.match(SITE.offline[language], { ignoreVary: true })) ||
    (await cache.match(SITE.offline[SITE.defaultLanguage], { ignoreVary: true }));
  return page || Response.error();
}

async function navigate(event) {
  try {
    const response = (await event.preloadResponse) || (await fetch(event.request));
    if (response.type === "basic") {
      event.waitUntil(rememberLanguage(response));
    }
    return response;
  } catch {
    // No network (or no server): the offline page, at the address asked for,
    // so that its Try again and its reload when back online load that page.
    return offlinePage();
  }
}

async function precached(request) {
  const cache = await caches.open(CACHE);
  return (await cache.match(request, { ignoreVary: true })) || fetch(request);
}

self.addEventListener("fetch", (event) => {
  const request = event.request;
  if (request.method !== "GET") {
    // A form sent offline keeps the browser's own error: the offline page's
    // reload would send it again.
    return;
  }
  if (request.mode === "navigate") {
    event.respondWith(navigate(event));
  } else if (PRECACHED.has(request.url)) {
    event.respondWith(precached(request));
  }
  // Anything else (the live streams and fragments, state.json) goes to the
  // network as if there were no worker.
});
