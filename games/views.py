"""Thin views: parse the request, call one service, then redirect or re-render.

A rejected action re-renders the page with the reason and the status code the
docs/routes.md documents; it never changes a stored game (the services guarantee that).
"""

from datetime import timedelta
from functools import partial

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.contrib.messages import get_messages
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import translation
from django.utils.http import urlencode
from django.utils.translation import gettext, ngettext

from accounts import guests, rate_limits, refusals
from accounts.guests import is_guest
from tictactoe_site.lib.error_pages import error_page, get_only, post_only

from . import guest_views, page_cache, presentation, rules, services, sharing
from .forms import ArchiveForm, MoveForm, NewGameForm, ReplayForm
from .models import Block, Game, PlayerRecord, PlayerResult, Series
from .refusals import (
    Blocked,
    GameNotFound,
    InvitationGone,
    InvitationNotFound,
    refusal_text,
    status_for,
)

LOBBY_PAGE_SIZE = 20
ARCHIVE_PAGE_SIZE = 20
RECENT_GAMES = 10


def _game_or_404(game_id: int, viewer) -> Game:
    """The game as `viewer` may see it (Game.objects.for_page): a waiting game
    of someone who blocked them is missing, before the page cache is asked."""
    try:
        return Game.objects.for_page(game_id, viewer)
    except Game.DoesNotExist:
        raise Http404(refusal_text(GameNotFound())) from None


def game_context(game: Game, viewer) -> dict:
    can_move = game.is_turn_of(viewer)
    rows = presentation.cells(game)
    return {
        "game": game,
        "rows": rows,
        "moves": presentation.move_lines(game),
        "turn_text": presentation.turn_text(game, viewer),
        "announcement": presentation.announcement(game, viewer),
        "notice": presentation.turn_notice(game, viewer),
        "series_text": presentation.series_text(game),
        "can_move": can_move,
        "can_forfeit": can_move,
        # An invitation is joined through its link (invitation_join).
        "can_join": game.is_waiting
        and not game.is_invitation
        and not game.is_player(viewer),
        "can_abort": game.can_abort and game.is_player(viewer),
        "can_rematch": game.is_finished
        and game.has_both_players
        and game.is_player(viewer),
        "viewer_marks": game.marks_for(viewer),
        # The rematch, once someone started it.
        "rematch": getattr(game, "rematch", None) if game.is_finished else None,
        "ply": game.move_count,
        # Link previews and the Share section (games.sharing).
        **sharing.page_parts(game, rows),
    }


def _invitation_url(request, game: Game) -> str | None:
    """The link the creator of a waiting invitation shares, shown to them only.
    A page showing it is not cached: the link holds the request's host."""
    # Whether it is an invitation is a query of its own: asked of players only.
    if game.is_waiting and game.is_player(request.user) and game.is_invitation:
        return request.build_absolute_uri(game.invitation.get_absolute_url())
    return None


def _render_game(request, game: Game, *, error: str | None = None, status: int = 200):
    invitation_url = _invitation_url(request, game)
    if error is None and invitation_url is None and not get_messages(request):
        return page_cache.render_cached(
            request,
            "games/game_detail.html",
            lambda: game_context(game, request.user) | {"error": None},
            page_cache.game_key("page", game, request.user),
        )
    context = game_context(game, request.user) | {
        "error": error,
        "invitation_url": invitation_url,
    }
    return render(request, "games/game_detail.html", context, status=status)


def _rejected(request, game_id: int, message: str, status: int):
    """Re-render the game page (as it is now) with the reason for the refusal."""
    if status == 404:
        raise Http404(message)
    return _render_game(
        request, _game_or_404(game_id, request.user), error=message, status=status
    )


def _first_error(form) -> str:
    return next(iter(form.errors.values()))[0]


@get_only
@login_required
def lobby(request):
    if get_messages(request):
        return _render_lobby(request, NewGameForm())
    return _cached_lobby(request, "page", "games/lobby.html")


def _cached_lobby(request, part: str, template_name: str) -> HttpResponse:
    """The plain lobby (`part` "page") or its lists ("lists") from the page cache:
    one version query on a hit, that query and the lists' on a miss. The version
    is read before the lists, so a cached entry is never older than its key."""
    user = request.user
    key = page_cache.lobby_key(part, user, Game.objects.lobby_version(user))
    return page_cache.render_cached(
        request,
        template_name,
        lambda: _lobby_context(user, NewGameForm()),
        key,
        timeout=page_cache.LOBBY_TIMEOUT,
    )


def _lobby_context(user, form: NewGameForm) -> dict:
    # The latest finished games, from the archive's first page; its "older" cursor
    # continues in the archive.
    finished = PlayerResult.objects.archive_page(user, size=LOBBY_PAGE_SIZE)
    return {
        "form": form,
        "active": [
            (
                game,
                presentation.lobby_text(game, user),
                presentation.turn_notice(game, user),
            )
            for game in Game.objects.for_lobby(user)[:LOBBY_PAGE_SIZE]
        ],
        # Guests start no games and see no strangers' (accounts.guests).
        "open_games": ()
        if is_guest(user)
        else Game.objects.open_to(user)[:LOBBY_PAGE_SIZE],
        "finished": [
            (
                result.game,
                presentation.result_text(result.game, user),
                presentation.turn_notice(result.game, user),
            )
            for result in finished.results
        ],
        "older_finished": finished.older_than,
    }


def _render_lobby(request, form: NewGameForm, status: int = 200):
    """The lobby rendered afresh: with a flash message, or a refused new game's
    form and reason (one-off parts the cache must not keep)."""
    context = _lobby_context(request.user, form)
    return render(request, "games/lobby.html", context, status=status)


def _create_abort_wait(user) -> timedelta | None:
    """Count a game created or aborted by `user`; None within
    GAMES_CREATE_ABORT_LIMIT per GAMES_CREATE_ABORT_WINDOW, else the wait. Each
    such change wakes every lobby: a loop of them is slowed down here."""
    limit = settings.GAMES_CREATE_ABORT_LIMIT
    if not limit:
        return None
    return rate_limits.hit(
        f"games:create_abort:user:{user.pk}",
        limit=limit,
        window=settings.GAMES_CREATE_ABORT_WINDOW,
    )


def _too_many_changes(response, wait: timedelta):
    response["Retry-After"] = refusals.retry_after(wait)
    return response


def _create_abort_refusal(wait: timedelta) -> str:
    limit = settings.GAMES_CREATE_ABORT_LIMIT
    return ngettext(
        "You have created or aborted %(limit)s game in %(window)s. "
        "Please wait %(wait)s and try again.",
        "You have created or aborted %(limit)s games in %(window)s. "
        "Please wait %(wait)s and try again.",
        limit,
    ) % {
        "limit": limit,
        "window": refusals.wait_text(settings.GAMES_CREATE_ABORT_WINDOW),
        "wait": refusals.wait_text(wait),
    }


@post_only
@login_required
def new_game(request):
    if is_guest(request.user):
        return guests.refused(request)
    form = NewGameForm(request.POST)
    if not form.is_valid():
        return _render_lobby(request, form, status=400)
    if (wait := _create_abort_wait(request.user)) is not None:
        form.add_error(None, _create_abort_refusal(wait))
        return _too_many_changes(_render_lobby(request, form, status=429), wait)
    try:
        if form.cleaned_data["invite"]:
            game = services.create_invitation(
                creator=request.user, side=form.cleaned_data["side"]
            ).game
        else:
            game = services.create_game(
                creator=request.user,
                opponent=form.cleaned_data["opponent"],
                side=form.cleaned_data["side"],
            )
    except rules.Rejected as exc:
        form.add_error(None, refusal_text(exc))
        return _render_lobby(request, form, status=status_for(exc))
    return redirect(game)


@get_only
def game_detail(request, game_id: int):
    game = _game_or_404(game_id, request.user)
    if game.hidden_from_visitor(request.user):
        # An open game's shared link: Play as guest (games.guest_views).
        return guest_views.visitor_game_page(request, game_id, game=game)
    if "ply" in request.GET:
        return _render_replay(request, game)
    return _render_game(request, game)


def _render_replay(request, game: Game):
    """The board after ?ply=N moves, read-only, with first/previous/next/last."""
    form = ReplayForm(request.GET)
    if not form.is_valid():
        return _render_game(request, game, error=_first_error(form), status=400)
    ply = form.cleaned_data["ply"]
    if ply > game.move_count:
        count = game.move_count
        message = ngettext(
            "There is no move %(ply)s to show: this game has %(count)s move.",
            "There is no move %(ply)s to show: this game has %(count)s moves.",
            count,
        ) % {"ply": ply, "count": count}
        return _render_game(request, game, error=message, status=400)
    context = game_context(game, request.user) | {
        "rows": presentation.cells(game, ply),
        "ply": ply,
        "replay": presentation.ReplayNav(ply, game.move_count),
        "can_move": False,
        "can_forfeit": False,
    }
    return render(request, "games/game_detail.html", context)


@get_only
def game_live(request, game_id: int):
    """The live part of the game page, for this viewer: what the page's script
    fetches when the game's stream announces a new version."""
    game = _game_or_404(game_id, request.user)
    if game.hidden_from_visitor(request.user):
        return redirect_to_login(request.get_full_path())
    invitation_url = _invitation_url(request, game)
    if invitation_url is None:
        response = page_cache.render_cached(
            request,
            "games/game_detail.html#live",
            lambda: game_context(game, request.user),
            page_cache.game_key("live", game, request.user),
        )
    else:
        context = game_context(game, request.user) | {"invitation_url": invitation_url}
        response = render(request, "games/game_detail.html#live", context)
    response["Cache-Control"] = "no-store"
    return response


@get_only
@login_required
def lobby_live(request):
    """The lobby's game lists (not the new-game form), for the lobby's script."""
    response = _cached_lobby(request, "lists", "games/lobby.html#lists")
    response["Cache-Control"] = "no-store"
    return response


@get_only
@login_required
def stream_placeholder(request, game_id: int | None = None):
    """The `…/events/` addresses, for `{% url %}`: the streams themselves are
    games.live.streams, which tictactoe_site.server.asgi serves before Django. A plain
    WSGI server lands here: 204 tells the browser's EventSource not to retry,
    and the pages keep working without live updates."""
    return HttpResponse(status=204)


@get_only
def game_state(request, game_id: int):
    try:
        game = _game_or_404(game_id, request.user)
    except Http404:
        # For programs, as its fields are: English in every language.
        with translation.override("en"):
            return JsonResponse({"error": str(GameNotFound.message)}, status=404)
    if game.hidden_from_visitor(request.user):
        return redirect_to_login(request.get_full_path())
    return JsonResponse(presentation.snapshot(game))


def _perform(request, game_id: int, action, **arguments):
    """One service action by the requesting user, then back to the resulting game;
    a refusal re-renders the game page with the reason and its status code."""
    try:
        game = action(game_id=game_id, user=request.user, **arguments)
    except rules.Rejected as exc:
        return _rejected(request, game_id, refusal_text(exc), status_for(exc))
    return redirect(game)


@post_only
@login_required
def play_move(request, game_id: int):
    form = MoveForm(request.POST)
    if not form.is_valid():
        return _rejected(request, game_id, _first_error(form), 400)
    return _perform(request, game_id, services.play_move, **form.cleaned_data)


@post_only
@login_required
def join_game(request, game_id: int):
    response = _perform(request, game_id, services.join_game)
    if response.status_code == 302:
        messages.success(request, gettext("You joined the game."))
    return response


@post_only
@login_required
def set_privacy(request, game_id: int):
    """A player makes the game private (`private=1`) or public (`private=0`)."""
    private = request.POST.get("private")
    if private not in ("0", "1"):
        message = gettext("Choose whether the game is private (1) or public (0).")
        return _rejected(request, game_id, message, 400)
    response = _perform(request, game_id, services.set_private, private=private == "1")
    if response.status_code == 302:
        messages.success(
            request,
            gettext("This game is now private: only its players can see it.")
            if private == "1"
            else gettext("This game is now public: anyone with its link can watch."),
        )
    return response


@post_only
@login_required
def forfeit_game(request, game_id: int):
    return _perform(request, game_id, services.forfeit)


@post_only
@login_required
def abort_game(request, game_id: int):
    if (wait := _create_abort_wait(request.user)) is not None:
        refused = _rejected(request, game_id, _create_abort_refusal(wait), 429)
        return _too_many_changes(refused, wait)
    return _perform(request, game_id, services.abort)


@post_only
@login_required
def rematch(request, game_id: int):
    return _perform(request, game_id, services.rematch)


def _player_or_404(username: str):
    # With their guest row: the page shows their name marked (display_name).
    player = (
        get_user_model()
        .objects.select_related("guest")
        .filter(username=username)
        .first()
    )
    if player is None:
        raise Http404(
            gettext("There is no player called “%(username)s”.")
            % {"username": username}
        )
    return player


@get_only
@login_required
def player_detail(request, username: str):
    player = _player_or_404(username)
    own_page = player.pk == request.user.pk
    context = {
        # Your own page lists whom you blocked; another's, whether you did.
        "blocked_players": Block.objects.blocked_by(request.user) if own_page else (),
        "you_block": not own_page
        and Block.objects.blocks(blocker=request.user, blocked=player),
        "player": player,
        "record": PlayerRecord.objects.record_of(player),
        "streak": presentation.streak_text(PlayerResult.objects.streak(player)),
        "recent": _result_lines(
            PlayerResult.objects.history(player)[:RECENT_GAMES], request.user
        ),
        "head_to_head": [
            (opponent, presentation.score_text(player, wins, losses, draws, opponent))
            for opponent, wins, losses, draws in Series.objects.head_to_head(player)
        ],
    }
    return render(request, "games/player_detail.html", context)


@post_only
@login_required
def block_player(request, username: str):
    player = _player_or_404(username)
    try:
        services.block_player(blocker=request.user, blocked=player)
    except rules.Rejected as exc:
        return error_page(
            request,
            title=gettext("Not blocked"),
            message=refusal_text(exc),
            status=status_for(exc),
        )
    messages.success(
        request,
        gettext(
            "You blocked %(username)s: they cannot start games with you, "
            "see your open games or use your invitation links. Games already "
            "running go on."
        )
        % {"username": player.get_username()},
    )
    return redirect("player_detail", player.get_username())


@post_only
@login_required
def unblock_player(request, username: str):
    player = _player_or_404(username)
    services.unblock_player(blocker=request.user, blocked=player)
    messages.success(
        request,
        gettext("You unblocked %(username)s.") % {"username": player.get_username()},
    )
    return redirect("player_detail", player.get_username())


@get_only
def invitation(request, game_id: int, secret: str):
    """What the link shows: who invites, which side you get, and Join; a visitor
    not logged in gets login and sign-up links that come back here."""
    return _render_invitation(request, game_id, secret)


def _render_invitation(
    request,
    game_id: int,
    secret: str,
    *,
    error: str | None = None,
    status: int = 200,
    guest_name: str | None = None,
):
    """The invitation as it is now (404 unknown, 410 closed), with `error`; a
    visitor not logged in gets Play as guest (named `guest_name`, or a free
    suggestion), beside Log in and Sign up."""
    try:
        game = services.invited_game(game_id=game_id, secret=secret)
    except InvitationNotFound as exc:
        raise Http404(refusal_text(exc)) from None
    except InvitationGone as exc:
        return error_page(
            request,
            title=gettext("Invitation closed"),
            message=refusal_text(exc),
            status=410,
        )
    inviter = game.player_x or game.player_o
    user = request.user
    if (
        error is None
        and user.is_authenticated
        and user.pk != inviter.pk
        and Block.objects.blocks(blocker=inviter, blocked=user)
    ):
        error, status = refusal_text(Blocked(inviter)), 403
    context = {
        "game": game,
        "inviter": inviter,
        "side": "O" if game.player_o_id is None else "X",
        "secret": secret,
        "error": error,
        "is_inviter": user.is_authenticated and user.pk == inviter.pk,
    }
    if not user.is_authenticated:
        context |= guest_views.guest_context(
            request,
            action=reverse("invitation_guest", args=[game_id, secret]),
            name=guest_name,
        )
    return render(request, "games/invitation.html", context, status=status)


@post_only
def invitation_guest(request, game_id: int, secret: str):
    """Accept the invitation as a new guest (games.guest_views); a logged-in
    visitor is sent back to the invitation's Join."""
    if request.user.is_authenticated:
        return redirect("invitation", game_id, secret)
    return guest_views.play_as_guest(
        request,
        join=partial(services.join_invitation, game_id=game_id, secret=secret),
        refuse=lambda message, status, name: _render_invitation(
            request, game_id, secret, error=message, status=status, guest_name=name
        ),
    )


@post_only
@login_required
def invitation_join(request, game_id: int, secret: str):
    try:
        game = services.join_invitation(
            game_id=game_id, secret=secret, user=request.user
        )
    except rules.Rejected as exc:
        return _render_invitation(
            request, game_id, secret, error=refusal_text(exc), status=status_for(exc)
        )
    messages.success(request, gettext("You joined the game."))
    return redirect(game)


def _result_lines(results, viewer) -> list[tuple]:
    return [(result, presentation.outcome_text(result, viewer)) for result in results]


@get_only
@login_required
def archive(request):
    form = ArchiveForm(request.GET)
    if not form.is_valid():
        context = {"form": form, "error": _first_error(form), "results": []}
        return render(request, "games/archive.html", context, status=400)
    filters = form.cleaned_data
    page = PlayerResult.objects.archive_page(
        request.user,
        result=filters["result"],
        opponent=filters["opponent"],
        before=filters["before"],
        after=filters["after"],
        size=ARCHIVE_PAGE_SIZE,
    )
    query = {
        key: value
        for key, value in (
            ("result", filters["result"]),
            ("opponent", filters["opponent"] and filters["opponent"].get_username()),
        )
        if value
    }
    context = {
        "form": form,
        "results": _result_lines(page.results, request.user),
        "newer_query": page.newer_than
        and urlencode(query | {"after": page.newer_than}),
        "older_query": page.older_than
        and urlencode(query | {"before": page.older_than}),
        "filtered": bool(query),
    }
    return render(request, "games/archive.html", context)
