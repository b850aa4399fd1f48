"""Times as a person reads them: in the active time zone (accounts.preferences
activates the viewer's, or the recipient's for a mail), formatted for the active
language (Django's formats), with the zone named.

`time_element` makes the `<time>` element of a page (games.templatetags.times):
the exact moment in UTC for machines (`datetime`), the exact local time with its
zone in `title`, and as its text either that, or, for a recent time on a page
rendered for each request, how long ago it was ("3 minutes ago", `ago`). A page
kept in the page cache (games.page_cache) shows only exact times: "3 minutes ago"
would be wrong by the time the cached copy is served again.

A zone is named in the reader's language (CLDR's names, through Babel): "Brazil
(São Paulo) Time", "heure : Brésil (São Paulo)"; its IANA id stays in
machine-readable output and logs.
"""

import functools
import re
from datetime import UTC, datetime, timedelta

from babel import Locale, UnknownLocaleError
from babel.dates import get_timezone_location
from django.utils import formats, timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import get_language, npgettext, pgettext, to_locale

# The names of UTC (and of GMT, the same clock) in the time zone database, each
# labelled "UTC".
UTC_NAMES = frozenset(
    {"UTC", "Etc/UTC", "Etc/UCT", "UCT", "Universal", "Etc/Universal"}
    | {"Zulu", "Etc/Zulu", "GMT", "Etc/GMT", "Etc/GMT+0", "Etc/GMT-0", "Etc/GMT0"}
    | {"GMT+0", "GMT-0", "GMT0", "Greenwich", "Etc/Greenwich"}
)
# A time shown as "… ago" when no older than this; older ones as the date.
RELATIVE_WITHIN = timedelta(days=1)


# Etc/GMT+5 is five hours behind UTC (POSIX signs), CLDR has no name for it.
ETC_OFFSET = re.compile(r"Etc/GMT([+-])(\d{1,2})")


def babel_locale(language: str | None = None) -> Locale:
    """The Babel locale of a Django language code ("pt-br" -> pt_BR), English
    for one CLDR does not know."""
    try:
        return Locale.parse(to_locale(language or get_language() or "en"))
    except (ValueError, UnknownLocaleError):
        return Locale("en")


def zone_label(zone, language: str | None = None) -> str:
    """How a time names its zone, in the active language: "UTC", "UTC−5" for an
    Etc/GMT+5 zone, else CLDR's "Brazil (São Paulo) Time"."""
    name = getattr(zone, "key", None) or str(zone)
    return _zone_label(name, str(babel_locale(language)))


@functools.lru_cache(maxsize=4096)
def _zone_label(name: str, locale: str) -> str:
    if name in UTC_NAMES:
        return "UTC"
    if match := ETC_OFFSET.fullmatch(name):
        ahead = "−" if match[1] == "+" else "+"
        return f"UTC{ahead}{int(match[2])}"
    try:
        return get_timezone_location(name, locale=locale)
    except LookupError:
        return name


def ago(value: datetime) -> str:
    """How long ago a time of the last day was: "now", "3 minutes ago"."""
    seconds = int((timezone.now() - value).total_seconds())
    if seconds < 1:
        return pgettext("how long ago", "now")
    if seconds < 60:
        count = seconds
        text = npgettext("how long ago", "a second ago", "%(count)d seconds ago", count)
    elif seconds < 3600:
        count = seconds // 60
        text = npgettext("how long ago", "a minute ago", "%(count)d minutes ago", count)
    else:
        count = seconds // 3600
        text = npgettext("how long ago", "an hour ago", "%(count)d hours ago", count)
    return text % {"count": count}


def local_text(value: datetime, format_name: str = "DATETIME_FORMAT") -> str:
    """`value` in the active zone and language, its zone named:
    "Jan. 15, 2025, 11:34 a.m. Brazil (São Paulo) Time"."""
    zone = timezone.get_current_timezone()
    local = timezone.localtime(value, zone)
    return pgettext("a time, then the name of its time zone", "%(time)s %(zone)s") % {
        "time": formats.date_format(local, format_name),
        "zone": zone_label(zone),
    }


def utc_iso(value: datetime) -> str:
    """The `datetime` attribute: the moment in UTC, "2025-01-15T14:34:00Z"."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def time_element(value: datetime | None, *, relative: bool) -> SafeString | str:
    """`<time datetime="UTC" title="exact local time, zone">text</time>`; the
    text says how long ago when `relative` and the time is recent."""
    if value is None:
        return ""
    exact = local_text(value)
    recent = abs(timezone.now() - value) <= RELATIVE_WITHIN
    text = ago(value) if relative and recent else exact
    return format_html(
        '<time datetime="{}" title="{}">{}</time>', utc_iso(value), exact, text
    )
