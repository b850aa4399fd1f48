"""The time zone menu of "Language and time", in the reader's language: common
zones first, then every other by region, each named by its city and country as
CLDR writes them in that language (through Babel): "São Paulo (Brésil)" under
"Amériques". The stored value stays the IANA id ("America/Sao_Paulo").

The menu of a language is derived from the zone database and CLDR alone, the
same on every host, so each process builds it once per language and keeps it.
"""

import functools
import unicodedata
import zoneinfo

from babel.core import get_global
from babel.dates import get_timezone_location
from django.utils.translation import get_language, gettext, pgettext

from tictactoe_site.lib.times import ETC_OFFSET, babel_locale, zone_label

from .middleware import zone_named

# The zones most players live in, shown first, west to east.
COMMON = (
    "America/Los_Angeles",
    "America/Denver",
    "America/Chicago",
    "America/Mexico_City",
    "America/New_York",
    "America/Bogota",
    "America/Sao_Paulo",
    "America/Argentina/Buenos_Aires",
    "Europe/London",
    "Europe/Lisbon",
    "Europe/Paris",
    "Europe/Madrid",
    "Europe/Berlin",
    "Africa/Casablanca",
    "Africa/Cairo",
    "Europe/Moscow",
    "Asia/Riyadh",
    "Asia/Dubai",
    "Asia/Kolkata",
    "Asia/Shanghai",
    "Asia/Tokyo",
    "Australia/Sydney",
)
# The first part of a zone id: the CLDR region its zones go under, or None for
# an ocean (CLDR names no ocean: our catalog does, below).
REGIONS = {
    "Africa": "002",
    "America": "019",
    "Antarctica": "AQ",
    "Arctic": "150",
    "Asia": "142",
    "Atlantic": None,
    "Australia": "009",
    "Europe": "150",
    "Indian": None,
    "Pacific": "009",
}


def ocean(area: str) -> str:
    if area == "Atlantic":
        return pgettext("a group of time zones", "Atlantic Ocean")
    return pgettext("a group of time zones", "Indian Ocean")


@functools.cache
def menu_zones() -> tuple[frozenset[str], tuple[str, ...]]:
    """The zones offered: each place once under its current id (no alias, such
    as Asia/Calcutta for Asia/Kolkata), and the fixed offsets (Etc/GMT+5)."""
    aliases = get_global("zone_aliases")
    places, offsets = set(), []
    for name in zoneinfo.available_timezones():
        if zone_named(name) != name or name in aliases:
            continue
        if name.partition("/")[0] in REGIONS:
            places.add(name)
        elif ETC_OFFSET.fullmatch(name):
            offsets.append(name)
    # East of UTC last: Etc/GMT+12 (UTC−12) first.
    offsets.sort(key=lambda name: -int(name[len("Etc/GMT") :]))
    return frozenset(places), tuple(offsets)


def canonical(name: str) -> str:
    """The id the menu lists for a stored zone ("Asia/Calcutta" -> "Asia/Kolkata")."""
    return get_global("zone_aliases").get(name, name)


def sort_key(label: str) -> str:
    """Letters before their accents: "Édimbourg" beside "Edmonton"."""
    decomposed = unicodedata.normalize("NFKD", label.casefold())
    return "".join(char for char in decomposed if not unicodedata.combining(char))


def place_label(name: str, locale) -> str:
    """ "São Paulo (Brésil)"; the city alone where it is its country."""
    city = get_timezone_location(name, locale=locale, return_city=True)
    territory = get_global("zone_territories").get(name)
    country = locale.territories.get(territory) if territory else None
    if not country or country == city:
        return city
    return f"{city} ({country})"


def zone_choices() -> list:
    """The menu's choices in the active language."""
    return list(_choices(get_language() or "en"))


@functools.cache
def _choices(language: str) -> tuple:
    locale = babel_locale(language)
    places, offsets = menu_zones()
    common = [(name, place_label(name, locale)) for name in COMMON if name in places]
    groups: dict[str, list[tuple[str, str]]] = {}
    for name in places - set(COMMON):
        area = name.partition("/")[0]
        region = REGIONS[area]
        heading = locale.territories[region] if region else ocean(area)
        groups.setdefault(heading, []).append((name, place_label(name, locale)))
    return (
        ("", gettext("Not set: shown in UTC until your browser tells us")),
        ("UTC", "UTC"),
        (pgettext("a group of time zones", "Common zones"), tuple(common)),
        *(
            (heading, tuple(sorted(zones, key=lambda zone: sort_key(zone[1]))))
            for heading, zones in sorted(groups.items(), key=lambda g: sort_key(g[0]))
        ),
        (
            pgettext("a group of time zones", "Fixed offsets from UTC"),
            tuple((name, zone_label(name)) for name in offsets),
        ),
    )
