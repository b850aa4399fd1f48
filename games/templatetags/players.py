"""{{ user|player_name }}: a player's name as every page shows it."""

from django import template

from .. import presentation

register = template.Library()


@register.filter
def player_name(user) -> str:
    """ "alice", or "alice (closed)" for a closed account."""
    return presentation.name(user)
