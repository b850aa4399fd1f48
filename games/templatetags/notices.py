"""{% notice_attributes notice url %}: the `data-notice-*` attributes of an
element that carries a turn notice (games.presentation.TurnNotice), read by
static/games/notify.js; nothing where there is no notice. The lobby's rows and the
game page's live state carry them, each with the game's address."""

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString

register = template.Library()


@register.simple_tag
def notice_attributes(notice, url: str) -> SafeString:
    """The attributes with a leading space, to write straight after a tag's
    other attributes: `<li class="…"{% notice_attributes notice url %}>`."""
    if not notice:  # None, or absent from the context ("")
        return SafeString("")
    return format_html(
        ' data-notice="{}" data-notice-tag="{}" data-notice-title="{}"'
        ' data-notice-body="{}" data-notice-url="{}"',
        notice.key,
        notice.tag,
        notice.title,
        notice.body,
        url,
    )
