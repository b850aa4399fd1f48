"""Play as a guest: a visitor who is not logged in opens an invitation link or
someone's open game and plays at once (accounts.guests). One POST makes the
account and joins the game, then logs it in as any login does (allauth's
perform_login: Django's login rotates the session key and CSRF token, allauth's
signals fire and its signed-in browsers record it); the answer is the game
page. The invitation's route is games.views.invitation_guest, beside the
invitation's page; the open game's is here, with the page a visitor sees."""

from functools import partial

from allauth.account.utils import perform_login
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import redirect, render, resolve_url
from django.urls import reverse
from django.utils.http import urlencode
from django.utils.translation import gettext, gettext_lazy

from accounts import guests, refusals
from tictactoe_site.lib.error_pages import error_page, post_only

from . import rules, services
from .forms import GuestNameForm
from .models import Game
from .refusals import GameNotFound, refusal_text, status_for

JOINED = gettext_lazy("You joined the game as a guest.")


def guest_context(request, *, action: str, name: str | None = None) -> dict:
    """What the "Play as guest" form needs, and the login and sign-up links
    that come back to this page."""
    back_here = urlencode({"next": request.path})
    return {
        "guest_action": action,
        "guest_name": guests.suggest_name() if name is None else name,
        "login_url": f"{resolve_url(settings.LOGIN_URL)}?{back_here}",
        "signup_url": f"{reverse('account_signup')}?{back_here}",
    }


def play_as_guest(request, *, join, refuse):
    """Make a guest named as the form says and `join(user=...)` them; on any
    refusal `refuse(message, status, name)` re-renders the page, nothing made.
    Every name tried counts against the address's limit before it is checked:
    whether a name is taken costs a visitor as much as a guest made."""
    form = GuestNameForm(request.POST)
    if not form.is_valid():
        return refuse(next(iter(form.errors.values()))[0], 400, "")
    name = form.cleaned_data["name"]
    if (wait := guests.creation_wait(request)) is not None:
        response = refuse(guests.creation_refusal(wait), 429, name)
        response["Retry-After"] = refusals.retry_after(wait)
        return response
    try:
        guests.clean_name(name)
    except ValidationError as error:
        return refuse(error.messages[0], 400, name)
    try:
        user, game = guests.play_as_guest(name=name, join=lambda user: join(user=user))
    except ValidationError as error:
        return refuse(error.messages[0], 400, name)
    except rules.Rejected as exc:
        return refuse(refusal_text(exc), status_for(exc), name)
    response = perform_login(request, user, redirect_url=game.get_absolute_url())
    messages.success(request, JOINED)
    return response


def _open_game(request, game_id: int, game: Game | None = None) -> Game | None:
    """The game (`game`, if read already) if a visitor may join it as a guest:
    open and waiting, not an invitation (its link is the way in)."""
    try:
        game = game or Game.objects.for_page(game_id, request.user)
    except Game.DoesNotExist:
        raise Http404(refusal_text(GameNotFound())) from None
    if not game.is_waiting or game.is_invitation:
        return None
    return game


def visitor_game_page(
    request, game_id: int, *, error=None, status=200, name=None, game=None
):
    """A game's page for a visitor not logged in, before it started (`game`, if
    read already): an open game offers Play as guest beside Log in and Sign up;
    any other sends them to log in."""
    game = _open_game(request, game_id, game)
    if game is None:
        if error is not None:
            return error_page(
                request, title=gettext("Not joined"), message=error, status=status
            )
        return redirect_to_login(request.get_full_path())
    creator = game.player_x or game.player_o
    context = {
        "game": game,
        "inviter": creator,
        "side": "O" if game.player_o_id is None else "X",
        "error": error,
    } | guest_context(
        request, action=reverse("join_game_as_guest", args=[game.pk]), name=name
    )
    return render(request, "games/open_game_visitor.html", context, status=status)


@post_only
def join_game_as_guest(request, game_id: int):
    """Join someone's open game as a new guest."""
    if request.user.is_authenticated:
        return redirect("game_detail", game_id)
    return play_as_guest(
        request,
        join=partial(services.join_game, game_id=game_id),
        refuse=lambda message, status, name: visitor_game_page(
            request, game_id, error=message, status=status, name=name
        ),
    )
