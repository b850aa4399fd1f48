"""How pages name a player, or a side nobody has taken yet, in the active
language (gettext at call time: the page cache keys each rendering by language).
"""

from django.utils.translation import gettext, pgettext

from accounts.guests import is_guest


def display_name(user) -> str:
    """A player's name as pages show it: "alice", "alice (closed)" once the
    account is closed (closing makes the user inactive; games.services), and
    "bob (guest)" or "bob (closed guest)" for a guest (accounts.guests), so
    that nobody passes for an account holder. The pages load each player with
    their guest row (games.field_lists.with_guest): no query here."""
    name = user.get_username()
    if is_guest(user):
        if user.is_active:
            return gettext("%(name)s (guest)") % {"name": name}
        return gettext("%(name)s (closed guest)") % {"name": name}
    if user.is_active:
        return name
    return gettext("%(name)s (closed)") % {"name": name}


def open_side() -> str:
    """ "(open)": what names a side nobody has taken yet."""
    return pgettext("a side nobody has taken", "(open)")
