"""{{ user|player_name }}: a player's name as every page shows it;
{% player_link user %}: that name linked to their page;
{{ user|is_guest }}: whether they are a guest; {% guest_refusal %}: what a
guest reads where a page offers them nothing;
{% blocked_players_of user %}: whom they blocked."""

from django import template

from accounts import guests

from .. import presentation
from ..models import Block

register = template.Library()


@register.filter
def player_name(user) -> str:
    """ "alice", or "alice (closed)" for a closed account."""
    return presentation.name(user)


@register.filter
def is_guest(user) -> bool:
    """Whether `user` is a guest (accounts.guests): what the pages hide."""
    return guests.is_guest(user)


@register.simple_tag
def guest_refusal() -> str:
    return guests.GUEST_REFUSAL


@register.inclusion_tag("games/snippets/player_link.html")
def player_link(user) -> dict:
    """The name linked to the player's page; "(open)" for None (a free side)."""
    return {"player": user}


@register.inclusion_tag("games/blocked_players.html")
def blocked_players_of(user) -> dict:
    """The people `user` blocked, with Unblock: for the account page."""
    return {"blocked_players": Block.objects.blocked_by(user)}
