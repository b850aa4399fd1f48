"""Times shown to a person (tictactoe_site.lib.times), in their zone and language,
with the zone named:

{{ value|when }}: a `<time>` element that says "3 minutes ago" for a recent
time, the exact local time otherwise; for pages rendered for each request.
{{ value|at }}: a `<time>` element with the exact local time; for pages kept in
the page cache (games.page_cache), where "… ago" would go stale.
{{ value|local_time }}: the exact local time as text.
"""

from django import template

from tictactoe_site.lib import times

register = template.Library()


@register.filter
def when(value):
    return times.time_element(value, relative=True)


@register.filter
def at(value):
    return times.time_element(value, relative=False)


@register.filter
def local_time(value) -> str:
    return "" if value is None else times.local_text(value)
