"""Times as a person reads them: in the active time zone (accounts.preferences
activates the viewer's, or the recipient's for a mail), formatted for the active
language (Django's formats), with the zone named.

`time_element` makes the `<time>` element of a page (games.templatetags.times):
the exact moment in UTC for machines (`datetime`), the exact local time with its
zone in `title`, and as its text either that, or, for a recent time on a page
rendered for each request, how long ago it was ("3 minutes ago",
django.contrib.humanize's naturaltime and its translations). A page kept in the
page cache (games.page_cache) shows only exact times: "3 minutes ago" would be
wrong by the time the cached copy is served again.
"""

from datetime import UTC, datetime, timedelta

from django.contrib.humanize.templatetags.humanize import naturaltime
from django.utils import formats, timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import pgettext

# The names of UTC (and of GMT, the same clock) in the time zone database, each
# labelled "UTC".
UTC_NAMES = frozenset(
    {"UTC", "Etc/UTC", "Etc/UCT", "UCT", "Universal", "Etc/Universal"}
    | {"Zulu", "Etc/Zulu", "GMT", "Etc/GMT", "Etc/GMT+0", "Etc/GMT-0", "Etc/GMT0"}
    | {"GMT+0", "GMT-0", "GMT0", "Greenwich", "Etc/Greenwich"}
)
# A time shown as "… ago" when no older than this; older ones as the date.
RELATIVE_WITHIN = timedelta(days=1)


def zone_label(zone) -> str:
    """How a time names its zone: "UTC", or the IANA name
    ("America/Sao_Paulo", clearer than abbreviations some zones lack)."""
    name = getattr(zone, "key", None) or str(zone)
    return "UTC" if name in UTC_NAMES else name


def local_text(value: datetime, format_name: str = "DATETIME_FORMAT") -> str:
    """`value` in the active zone and language, its zone named:
    "Jan. 15, 2025, 11:34 a.m. America/Sao_Paulo"."""
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
    text = naturaltime(value) if relative and recent else exact
    return format_html(
        '<time datetime="{}" title="{}">{}</time>', utc_iso(value), exact, text
    )
