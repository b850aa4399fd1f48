"""What accounts does at every request, without a query: the person's language
and time zone, and when a logged-in player was last on the site.

Language and time zone: a player's choices are saved on the account
(accounts.models.Preferences) and read once, when they log in
(`remember_at_login`, on user_logged_in), into the session: every host then
applies them from the session alone, as it already reads it for the login. A
visitor's language is Django's (the language cookie that set_language writes,
then Accept-Language: LocaleMiddleware) and their zone a cookie
(`TIME_ZONE_COOKIE`) that the page sets from the browser. `apply_preferences`,
right after LocaleMiddleware, activates them for the request. Without a zone
the times are in UTC, labelled "UTC", and the page asks the browser for its
zone once (static/games/timezone.js, which posts it to
accounts.views.preferences.set_time_zone). A saved choice reaches a session at
its next login: another browser already signed in keeps what it had until then.

Last seen, for the your-turn emails (games.turn_emails: none to someone seen
since the game began waiting) and, for a guest, for housekeeping (no guest
active lately is closed): `record_activity` writes the database at most every
`SEEN_EVERY` per player and server process, one UPDATE of the player's
TurnEmailPreference and one of their Guest row. Which players were recorded
lately is kept in the process's own memory (the "seen" cache), so an ordinary
page costs no query, no file and no change to the session. A login counts as
recorded: Django records it as `last_login`. The UPDATEs run after the
response, in a page thread (tictactoe_site.lib.deferred), so a page that only
reads, on the event loop, never waits for the database's write lock.
"""

import functools
import zoneinfo
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import SESSION_KEY as USER_SESSION_KEY
from django.core.cache import caches
from django.utils import timezone, translation

from tictactoe_site.lib.deferred import defer
from tictactoe_site.lib.times import UTC_NAMES

from .models import (
    MAX_ZONE_NAME,
    Guest,
    Preferences,
    TurnEmailPreference,
    language_codes,
)

# The session's copy of the logged-in player's preferences:
# {"user": their id as the session holds it, "language": ..., "time_zone": ...}.
SESSION_KEY = "preferences"
# A visitor's time zone, as the browser named it.
TIME_ZONE_COOKIE = "timezone"
TIME_ZONE_COOKIE_AGE = 365 * 24 * 60 * 60

# The zone of a person whose zone is not known yet: UTC, labelled "UTC"
# (tictactoe_site.lib.times), under a name of its own. The page cache keys pages
# by the zone's name (games.page_cache): a cached page that asks the browser for
# its zone is never served to someone whose zone is known, even when that is UTC
# ("UTC": `zone_named` stores every name of UTC and GMT so). Django names this
# one "GMT", a name the databases' time zone functions know (the admin's date
# filters pass it to them); ZoneInfo("Etc/UTC") would not do: Django names it
# "UTC" too.
UNKNOWN_ZONE = zoneinfo.ZoneInfo("Etc/GMT")

SEEN_EVERY = timedelta(minutes=5)
SEEN_CACHE = "seen"


# -- language and time zone ---------------------------------------------------------


def language_named(code: str) -> str | None:
    """`code` if it is one of the languages the site ships, else None (at once
    for "", the language of most sessions: not chosen)."""
    return code if code and code in language_codes() else None


# Names in the time zone database that are not a place's zone: the server's own
# ("localtime", "posixrules") and one for no zone at all ("Factory").
NOT_ZONES = frozenset({"localtime", "posixrules", "Factory"})


@functools.cache
def _zone_names() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def zone_named(name: str) -> str | None:
    """The zone `name` stands for, as stored: an IANA name the system knows
    ("UTC" for every name of UTC or GMT), or None for anything else (a path,
    a typo, an offset such as "+03:00", the server's own zone)."""
    if not isinstance(name, str) or len(name) > MAX_ZONE_NAME:
        return None
    if name in UTC_NAMES:
        return "UTC"
    return name if name in _zone_names() and name not in NOT_ZONES else None


def _session_copy(user, preferences: Preferences | None) -> dict:
    return {
        "user": user._meta.pk.value_to_string(user),
        "language": preferences.language if preferences else "",
        "time_zone": preferences.time_zone if preferences else "",
    }


def remember_at_login(sender, request, user, **kwargs) -> None:
    """user_logged_in: the player's preferences into the session (one query,
    at login only), and their language for the rest of this request."""
    session = getattr(request, "session", None)
    if session is None:
        return
    preferences = Preferences.objects.filter(user=user).first()
    session[SESSION_KEY] = _session_copy(user, preferences)
    if preferences and preferences.language:
        translation.activate(preferences.language)
        request.LANGUAGE_CODE = preferences.language


def refresh_session(request, preferences: Preferences) -> None:
    """The session's copy after the logged-in player changed their choices."""
    request.session[SESSION_KEY] = _session_copy(request.user, preferences)


def session_preferences(request) -> dict | None:
    """The logged-in player's preferences as their session holds them; None for
    a visitor (and without a session cookie, without reading a session)."""
    if settings.SESSION_COOKIE_NAME not in request.COOKIES:
        return None
    session = getattr(request, "session", None)
    if session is None:
        return None
    preferences = session.get(SESSION_KEY)
    user_id = session.get(USER_SESSION_KEY)
    if user_id is None or not preferences or preferences.get("user") != user_id:
        return None
    return preferences


def apply_preferences(get_response):
    """The player's language (over the browser's) and time zone, or the
    visitor's zone cookie, active while the request is answered. Right after
    LocaleMiddleware, whose choice it overrides for a player who saved one."""

    def middleware(request):
        preferences = session_preferences(request)
        if preferences is not None:
            language = language_named(preferences.get("language") or "")
            if language:
                translation.activate(language)
                request.LANGUAGE_CODE = language
            name = preferences.get("time_zone") or ""
        else:
            name = request.COOKIES.get(TIME_ZONE_COOKIE, "")
        name = zone_named(name)
        request.time_zone_known = name is not None
        zone = zoneinfo.ZoneInfo(name) if name else UNKNOWN_ZONE
        with timezone.override(zone):
            return get_response(request)

    return middleware


# -- last seen ----------------------------------------------------------------------


def seen_key(user_id) -> str:
    return f"seen-{user_id}"


def stamp_login(sender, request, user, **kwargs) -> None:
    """user_logged_in: the player starts as just seen."""
    caches[SEEN_CACHE].set(seen_key(user.pk), True, SEEN_EVERY.total_seconds())


def record_seen(user_id, when) -> None:
    TurnEmailPreference.objects.filter(user_id=user_id).update(last_seen_at=when)
    # A guest's activity, which keeps housekeeping from closing the account.
    Guest.objects.filter(user_id=user_id).update(last_active_at=when)


def record_activity(get_response):
    def middleware(request):
        response = get_response(request)
        session = getattr(request, "session", None)
        # Only a page that read the session (a player's page; not /healthz, not
        # a static file): nothing to read otherwise, and nothing to vary on.
        if session is None or not session.accessed:
            return response
        user_id = session.get(USER_SESSION_KEY)
        if user_id is None:
            return response
        if caches[SEEN_CACHE].add(seen_key(user_id), True, SEEN_EVERY.total_seconds()):
            defer(request, functools.partial(record_seen, user_id, timezone.now()))
        return response

    return middleware
