"""{{ user|player_name }}: a player's name as every page shows it;
{{ user|side_name }}: the same, or "(open)" for a side nobody took;
{% player_link user %}: that name linked to their page ({% player_link user as
name %} keeps it for a {% blocktranslate %} sentence);
{{ user|is_guest }}: whether they are a guest; {% guest_refusal %}: what a
guest reads where a page offers them nothing;
{% blocked_players_of user %}: whom they blocked."""

from django import template
from django.utils.translation import gettext

from accounts import guests

from .. import presentation
from ..models import Block

register = template.Library()

# Defined where pages are built (games.presentation, accounts.guests), so showing
# a name runs no code of this module.
register.filter("player_name", presentation.name)
register.filter("side_name", presentation.side_name)
register.filter("is_guest", guests.is_guest)
register.simple_tag(presentation.player_link, name="player_link")


@register.simple_tag
def guest_refusal() -> str:
    """In the active language, whether accounts.guests marks it lazily or with
    gettext_noop (a text already translated comes back as it is)."""
    return gettext(str(guests.GUEST_REFUSAL))


@register.inclusion_tag("games/blocked_players.html")
def blocked_players_of(user) -> dict:
    """The people `user` blocked, with Unblock: for the account page."""
    return {"blocked_players": Block.objects.blocked_by(user)}
