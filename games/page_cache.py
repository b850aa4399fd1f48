"""Rendered game pages, kept in each server process, keyed by all they show.

A game page is a function of the game's row (its version moves on every change),
its players, its series score, its rematch and who is looking. The key holds every
one of them (each field of the row the page reads, GAME_PAGE_FIELDS, which a
test keeps to every field but the timestamps: those are not read, and the
version covers them) but the
rematch, which the row covers: starting a rematch moves the version of the game
it follows (games.services.rematch), so a hit needs no query for it. A cached
page can never show a stale board and nothing needs invalidating: keys of past
versions just age out. The CSRF token is the one part that changes per
request: pages are stored with a placeholder that each response replaces with the
request's own token. They are stored as the bytes a response sends, so that a hit
neither decodes nor encodes the page.

Pages with a one-off part are not cached: a flash message, a refusal, a replay
(its script carries the request's CSP nonce).

The lobby is cached the same way, keyed by its viewer and by one cheap query
(Game.objects.lobby_version) that moves whenever any of its lists could change.
One thing that key cannot see: a player renamed by staff in the admin, which
changes no game; others' lobbies show the old name until their entry expires
(LOBBY_TIMEOUT). Closing or deactivating an account does change the key.
"""

import hashlib
import operator
from collections.abc import Callable

from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.http import HttpResponse
from django.middleware.csrf import get_token
from django.template.loader import render_to_string
from django.utils.timezone import get_current_timezone_name
from django.utils.translation import get_language

from accounts.guests import is_guest

from .field_lists import GAME_PAGE_FIELDS
from .models import Game

# NUL never appears in a rendered page otherwise: no stored text can hold one
# (tictactoe_site.ops.middleware refuses it in every request).
CSRF_PLACEHOLDER = "\x00csrf-token\x00"
_PLACEHOLDER_BYTES = CSRF_PLACEHOLDER.encode()
# Seconds a rendered lobby is kept. Its key holds the games but not the names of
# the viewer's opponents, so a player renamed by staff in the admin shows as
# before for at most this long (a game page's key holds the names).
LOBBY_TIMEOUT = 60


def _user_key(user) -> tuple:
    """A user as a page shows them: their name, whether they closed their
    account ("alice (closed)") and whether they are a guest ("bob (guest)";
    a guest who keeps the account shows plain at once)."""
    if user is None:
        return ()
    return (user.pk, user.get_username(), user.is_active, is_guest(user))


_page_fields = operator.attrgetter(*GAME_PAGE_FIELDS)


def game_key(part: str, game: Game, viewer) -> str:
    """The key of `part` ("page" or "live") of `game` as `viewer` sees it.

    What a viewer may do and is told depends only on the sides they play
    (games.views.game_context): every spectator shares one live part, each player
    has their own. The whole page also names the viewer in its header."""
    series = game.series
    # Everything the part is a function of (the module's docstring).
    return repr(
        (
            part,
            _page_fields(game),
            _user_key(game.player_x),
            _user_key(game.player_o),
            (series.a_wins, series.b_wins, series.draws) if series else (),
            "".join(game.marks_for(viewer)),
            _user_key(viewer) if part == "page" else (),
        )
    )


def lobby_key(part: str, viewer, version: tuple) -> str:
    """The key of `part` ("page" or "lists") of `viewer`'s lobby at `version`
    (Game.objects.lobby_version(viewer)). The header of the page and the "you"
    of the lists name the viewer."""
    return repr(("lobby", part, _user_key(viewer), version))


def render_cached(
    request,
    template_name: str,
    context: Callable[[], dict],
    key: str,
    timeout: float | None = DEFAULT_TIMEOUT,
) -> HttpResponse:
    """The page (a game's or the lobby) for `key` (game_key, lobby_key),
    rendered once per process (`context()` is computed only then) and kept for
    `timeout` seconds (the cache's default if not given); the request's CSRF
    token in."""
    token = get_token(request)
    pages = caches["pages"]
    # The same page in another language or time zone is another page. Hashed:
    # the cache checks each character of a key in Python.
    inputs = f"{get_language()}|{get_current_timezone_name()}|{key}"
    cache_key = hashlib.blake2b(inputs.encode(), digest_size=16).hexdigest()
    page = pages.get(cache_key)
    if page is None:
        page = render_to_string(
            template_name, context() | {"csrf_token": CSRF_PLACEHOLDER}, request
        ).encode(settings.DEFAULT_CHARSET)
        pages.set(cache_key, page, timeout)
    return HttpResponse(page.replace(_PLACEHOLDER_BYTES, token.encode()))
