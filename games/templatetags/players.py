"""{{ user|player_name }}: a player's name as every page shows it;
{{ user|side_name }}: the same, or "(open)" for a side nobody took;
{% player_link user %}: that name linked to their page ({% player_link user as
name %} keeps it for a {% blocktranslate %} sentence);
{{ user|is_guest }}: whether they are a guest; {% guest_refusal %}: what a
guest reads where a page offers them nothing;
{% blocked_players_of user %}: whom they blocked."""

from django import template
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext

from accounts import guests

from .. import presentation
from ..models import Block

register = template.Library()


@register.filter
def player_name(user) -> str:
    """ "alice", or "alice (closed)" for a closed account."""
    return presentation.name(user)


@register.filter
def side_name(user) -> str:
    """A side of a game: its player's name, or "(open)" for None."""
    return presentation.side_name(user)


@register.filter
def is_guest(user) -> bool:
    """Whether `user` is a guest (accounts.guests): what the pages hide."""
    return guests.is_guest(user)


@register.simple_tag
def guest_refusal() -> str:
    """In the active language, whether accounts.guests marks it lazily or with
    gettext_noop (a text already translated comes back as it is)."""
    return gettext(str(guests.GUEST_REFUSAL))


@register.simple_tag
def player_link(user) -> SafeString:
    """The name linked to the player's page; "(open)" for None (a free side).
    No newline around it: the link sits inside sentences."""
    if user is None:
        return format_html("{}", presentation.open_side())
    return format_html(
        '<a href="{}">{}</a>',
        reverse("player_detail", args=[user.get_username()]),
        presentation.name(user),
    )


@register.inclusion_tag("games/blocked_players.html")
def blocked_players_of(user) -> dict:
    """The people `user` blocked, with Unblock: for the account page."""
    return {"blocked_players": Block.objects.blocked_by(user)}
