"""Who may change what: every state-changing route, through HTTP, against every
kind of visitor. Only the cells marked OK change anything; every other cell gets
its documented answer (302 to a login page, 403, 409) and leaves every stored
game, move, series and account exactly as it was (tests/support/hostile.py checks that).
"""

import json
from collections.abc import Callable
from dataclasses import dataclass
from io import StringIO
from urllib.parse import unquote

import pytest
from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

from games import services
from games.models import Block, Game, GameStatus, Move
from games.urls import urlpatterns

from ..conftest import PASSWORD
from ..support.hostile import send

ANONYMOUS = "anonymous"
THIRD_USER = "third user"  # logged in, not in the game
OFF_TURN = "player not on turn"  # bob (O) in the game below
ON_TURN = "player on turn"  # alice (X) in the game below
STAFF = "staff"  # is_staff, no permissions, not in the game
SUPERUSER = "superuser"  # not in the game
ROLES = (ANONYMOUS, THIRD_USER, OFF_TURN, ON_TURN, STAFF, SUPERUSER)

OK = "OK"  # the action happens: a redirect, and the effect is checked
LOGIN = "login"  # 302 to /accounts/login/?next=<path>
ADMIN_LOGIN = "admin login"  # 302 to /admin/login/?next=<path>

NOT_A_PLAYER = (403, "You are not a player in this game.")
NOT_YOUR_TURN = (403, "It is not your turn.")
FORFEIT_OFF_TURN = (403, "You can only forfeit on your own turn.")
GAME_OVER = (409, "The game is over: no more moves can be made.")
NOT_FINISHED = (409, "A rematch can only start once the game is over.")
GAME_FULL = (409, "This game already has two players.")
ALREADY_IN = (409, "You are already a player in this game.")
OWN_OPEN_GAME = (409, "You created this game: share its address with an opponent.")
FORBIDDEN = (403, "You are not allowed to do that.")
TOO_LATE_TO_ABORT = (
    409,
    "Two moves have been played: finish the game or forfeit on your turn.",
)
NOTHING_TO_ABORT = (409, "The game is over: there is nothing left to abort.")
INVITATION_ONLY = (
    403,
    "This game is by invitation only: join it with the link you were sent.",
)
SELF_BLOCK = (400, "You cannot block yourself.")
BLOCKED = (403, "bob does not accept challenges from you.")


def in_progress(cast) -> Game:
    """alice (X) v bob (O) after two moves: alice is to move."""
    game = services.create_game(creator=cast[ON_TURN], opponent=cast[OFF_TURN])
    for user, (row, col) in ((cast[ON_TURN], (0, 0)), (cast[OFF_TURN], (1, 1))):
        services.play_move(game_id=game.pk, user=user, row=row, col=col)
    game.refresh_from_db()
    return game


def finished(cast) -> Game:
    """alice (X) beat bob (O) along the top row."""
    game = services.create_game(creator=cast[ON_TURN], opponent=cast[OFF_TURN])
    x, o = cast[ON_TURN], cast[OFF_TURN]
    for user, (row, col) in zip(
        (x, o, x, o, x), ((0, 0), (1, 0), (0, 1), (1, 1), (0, 2)), strict=True
    ):
        services.play_move(game_id=game.pk, user=user, row=row, col=col)
    game.refresh_from_db()
    return game


def one_move(cast) -> Game:
    """alice (X) v bob (O) after alice's first move: bob has not moved yet."""
    game = services.create_game(creator=cast[ON_TURN], opponent=cast[OFF_TURN])
    services.play_move(game_id=game.pk, user=cast[ON_TURN], row=0, col=0)
    game.refresh_from_db()
    return game


def aborted(cast) -> Game:
    """alice (X) v bob (O), aborted by bob before any move."""
    game = services.create_game(creator=cast[ON_TURN], opponent=cast[OFF_TURN])
    return services.abort(game_id=game.pk, user=cast[OFF_TURN])


def open_game(cast) -> Game:
    """An open game alice created (as X); nobody else is in it yet."""
    return services.create_game(creator=cast[ON_TURN])


def invitation(cast) -> Game:
    """An invitation alice created (as X); nobody else is in it yet."""
    return services.create_invitation(creator=cast[ON_TURN]).game


def bobs_invitation_blocking_everyone(cast) -> Game:
    """bob's invitation; bob blocked every other role (and carol: THIRD_USER)."""
    for role in (THIRD_USER, ON_TURN, STAFF, SUPERUSER):
        services.block_player(blocker=cast[OFF_TURN], blocked=cast[role])
    return services.create_invitation(creator=cast[OFF_TURN]).game


def no_game(cast) -> None:
    return None


# Effects of the allowed cells: (game before, game id, actor, response).


def created_open_game(game, _game_id, actor, response):
    new = Game.objects.get(player_x=actor, status=GameStatus.WAITING)
    assert new.player_o is None
    assert response["Location"] == f"/games/{new.pk}/"


def made_private(game, game_id, actor, response):
    after = Game.objects.get(pk=game_id)
    assert after.is_private
    assert after.version == game.version + 1
    assert response["Location"] == f"/games/{game_id}/"


def moved(game, game_id, actor, response):
    after = Game.objects.get(pk=game_id)
    assert after.board == "X---O---X"
    assert after.move_count == 3
    assert Move.objects.get(game=after, sequence_number=3).player == "X"
    assert response["Location"] == f"/games/{game_id}/"


def forfeited(game, game_id, actor, response):
    after = Game.objects.get(pk=game_id)
    assert after.status == GameStatus.X_FORFEITS
    assert after.board == game.board
    assert response["Location"] == f"/games/{game_id}/"


def rematched(game, game_id, actor, response):
    new = Game.objects.get(rematch_of_id=game_id)
    assert (new.player_x_id, new.player_o_id) == (game.player_o_id, game.player_x_id)
    assert new.status == GameStatus.IN_PROGRESS
    assert response["Location"] == f"/games/{new.pk}/"


def aborted_by_actor(game, game_id, actor, response):
    after = Game.objects.get(pk=game_id)
    assert after.status == GameStatus.ABORTED
    assert after.aborted_by == actor
    assert (after.board, after.move_count) == (game.board, game.move_count)
    assert response["Location"] == f"/games/{game_id}/"


def joined(game, game_id, actor, response):
    after = Game.objects.get(pk=game_id)
    assert after.player_o_id == actor.pk
    assert after.status == GameStatus.IN_PROGRESS
    assert response["Location"] == f"/games/{game_id}/"


def joined_as_guest(game, game_id, actor, response):
    """A visitor joins as a new guest; a logged-in user is sent back to the
    page where they join as themselves, nothing changed."""
    after = Game.objects.select_related("player_o__guest").get(pk=game_id)
    if actor is None:
        assert after.player_o.username == "visitor"
        assert after.player_o.guest is not None
        assert after.status == GameStatus.IN_PROGRESS
        assert response["Location"] == f"/games/{game_id}/"
    else:
        assert (after.status, after.player_o) == (GameStatus.WAITING, None)
        secret = getattr(game, "invitation", None)
        assert response["Location"] == (
            f"/invitations/{game_id}/{secret.secret}/"
            if secret
            else f"/games/{game_id}/"
        )


def blocked_bob(game, game_id, actor, response):
    assert list(Block.objects.values_list("blocker", "blocked")) == [
        (actor.pk, game_id)
    ]
    assert response["Location"] == "/players/bob/"


def unblocked_bob(game, game_id, actor, response):
    assert not Block.objects.exists()
    assert response["Location"] == "/players/bob/"


def deleted(game, game_id, actor, response):
    assert not Game.objects.filter(pk=game_id).exists()
    assert not Move.objects.filter(game_id=game_id).exists()
    assert response["Location"].startswith("/admin/")


# An admin form that, if it were accepted, would store an impossible game.
IMPOSSIBLE_GAME = {
    "player_x": "1",
    "player_o": "2",
    "status": "x_won",
    "board": "XXXXXXXXX",
    "move_count": "9",
    "winning_line": "7",
    "version": "1",
}


@dataclass(frozen=True)
class Case:
    name: str
    scenario: Callable
    path: str  # {id} is the scenario's game
    data: dict | Callable
    expected: dict  # role -> OK, LOGIN, ADMIN_LOGIN or (status, message)
    effect: Callable | None = None


def _players_only(on_turn, off_turn, others, anonymous=LOGIN):
    return {
        ANONYMOUS: anonymous,
        THIRD_USER: others,
        OFF_TURN: off_turn,
        ON_TURN: on_turn,
        STAFF: others,
        SUPERUSER: others,
    }


def _admin(superuser):
    return {
        ANONYMOUS: ADMIN_LOGIN,
        THIRD_USER: ADMIN_LOGIN,
        OFF_TURN: ADMIN_LOGIN,
        ON_TURN: ADMIN_LOGIN,
        STAFF: FORBIDDEN,
        SUPERUSER: superuser,
    }


CASES = [
    Case(
        "new game",
        no_game,
        "/games/new/",
        {"opponent": "", "side": "x"},
        _players_only(OK, OK, OK),
        created_open_game,
    ),
    Case(
        "move",
        in_progress,
        "/games/{id}/move/",
        {"row": "2", "col": "2", "ply": "2"},
        _players_only(OK, NOT_YOUR_TURN, NOT_A_PLAYER),
        moved,
    ),
    Case(
        "move in a finished game",
        finished,
        "/games/{id}/move/",
        {"row": "2", "col": "2"},
        _players_only(GAME_OVER, GAME_OVER, NOT_A_PLAYER),
    ),
    Case(
        "forfeit",
        in_progress,
        "/games/{id}/forfeit/",
        {},
        _players_only(OK, FORFEIT_OFF_TURN, NOT_A_PLAYER),
        forfeited,
    ),
    Case(
        "rematch",
        finished,
        "/games/{id}/rematch/",
        {},
        _players_only(OK, OK, NOT_A_PLAYER),
        rematched,
    ),
    Case(
        "make a game private",
        in_progress,
        "/games/{id}/private/",
        {"private": "1"},
        _players_only(OK, OK, NOT_A_PLAYER),
        made_private,
    ),
    Case(
        "rematch of a game in progress",
        in_progress,
        "/games/{id}/rematch/",
        {},
        _players_only(NOT_FINISHED, NOT_FINISHED, NOT_A_PLAYER),
    ),
    Case(
        "abort before both sides moved",
        one_move,
        "/games/{id}/abort/",
        {},
        _players_only(OK, OK, NOT_A_PLAYER),
        aborted_by_actor,
    ),
    Case(
        "abort after two moves",
        in_progress,
        "/games/{id}/abort/",
        {},
        _players_only(TOO_LATE_TO_ABORT, TOO_LATE_TO_ABORT, NOT_A_PLAYER),
    ),
    Case(
        "abort a finished game",
        finished,
        "/games/{id}/abort/",
        {},
        _players_only(NOTHING_TO_ABORT, NOTHING_TO_ABORT, NOT_A_PLAYER),
    ),
    Case(
        # Only its creator is in an open game; nobody else may withdraw it.
        "abort an open game",
        open_game,
        "/games/{id}/abort/",
        {},
        _players_only(OK, NOT_A_PLAYER, NOT_A_PLAYER),
        aborted_by_actor,
    ),
    Case(
        "rematch an aborted game",
        aborted,
        "/games/{id}/rematch/",
        {},
        _players_only(OK, OK, NOT_A_PLAYER),
        rematched,
    ),
    Case(
        # alice created it; bob is not in it, so he may join like anyone else.
        "join an open game",
        open_game,
        "/games/{id}/join/",
        {},
        _players_only(OWN_OPEN_GAME, OK, OK),
        joined,
    ),
    Case(
        "join a game in progress",
        in_progress,
        "/games/{id}/join/",
        {},
        _players_only(ALREADY_IN, ALREADY_IN, GAME_FULL),
    ),
    Case(
        # Only through its link: the game's own join route refuses everyone.
        "join an invitation without its link",
        invitation,
        "/games/{id}/join/",
        {},
        _players_only(INVITATION_ONLY, INVITATION_ONLY, INVITATION_ONLY),
    ),
    Case(
        "join an invitation by its link",
        invitation,
        "/invitations/{id}/{secret}/join/",
        {},
        _players_only(OWN_OPEN_GAME, OK, OK),
        joined,
    ),
    Case(
        "join a blocker's invitation by its link",
        bobs_invitation_blocking_everyone,
        "/invitations/{id}/{secret}/join/",
        {},
        _players_only(BLOCKED, OWN_OPEN_GAME, BLOCKED),
    ),
    Case(
        "play an invitation as a guest",
        invitation,
        "/invitations/{id}/{secret}/guest/",
        {"name": "visitor"},
        _players_only(OK, OK, OK, anonymous=OK),
        joined_as_guest,
    ),
    Case(
        "play an open game as a guest",
        open_game,
        "/games/{id}/guest/",
        {"name": "visitor"},
        _players_only(OK, OK, OK, anonymous=OK),
        joined_as_guest,
    ),
    Case(
        # The "game" is bob's user id: the effect checks the Block row.
        "block a player",
        lambda cast: cast[OFF_TURN],
        "/players/{username}/block/",
        {},
        _players_only(OK, SELF_BLOCK, OK),
        blocked_bob,
    ),
    Case(
        "unblock a player",
        lambda cast: cast[OFF_TURN],
        "/players/{username}/unblock/",
        {},
        _players_only(OK, OK, OK),
        unblocked_bob,
    ),
    Case(
        "admin: change a game",
        in_progress,
        "/admin/games/game/{id}/change/",
        IMPOSSIBLE_GAME,
        _admin(FORBIDDEN),
    ),
    Case(
        "admin: add a game",
        no_game,
        "/admin/games/game/add/",
        IMPOSSIBLE_GAME,
        _admin(FORBIDDEN),
    ),
    Case(
        "admin: delete a game",
        in_progress,
        "/admin/games/game/{id}/delete/",
        {"post": "yes"},
        _admin(OK),
        deleted,
    ),
    Case(
        "admin: delete action",
        in_progress,
        "/admin/games/game/",
        lambda game_id: {
            "action": "delete_selected",
            "_selected_action": [str(game_id)],
            "post": "yes",
        },
        _admin(OK),
        deleted,
    ),
]


@pytest.fixture
def cast(alice, bob, carol, make_user):
    return {
        ANONYMOUS: None,
        THIRD_USER: carol,
        OFF_TURN: bob,
        ON_TURN: alice,
        STAFF: make_user("staff", is_staff=True),
        SUPERUSER: make_user("root", is_staff=True, is_superuser=True),
    }


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_authorization_matrix(cast, case, role):
    game = case.scenario(cast)
    game_id = game.pk if game else None
    invitation = getattr(game, "invitation", None)
    path = case.path.format(
        id=game_id,
        secret=invitation.secret if invitation else None,
        username=cast[OFF_TURN].username,
    )
    data = case.data(game_id) if callable(case.data) else case.data
    actor = cast[role]
    client = Client()
    if actor is not None:
        client.force_login(actor)

    response = send(client, "POST", path, data)

    expected = case.expected[role]
    if expected == OK:
        assert response.status_code == 302
        case.effect(game, game_id, actor, response)
        call_command("check_games", stdout=StringIO())
    elif expected in (LOGIN, ADMIN_LOGIN):
        login = "/accounts/login/" if expected == LOGIN else "/admin/login/"
        assert response.status_code == 302
        assert response["Location"] == f"{login}?next={path}"
    else:
        status, message = expected
        assert response.status_code == status
        assert message in response.text


def test_every_post_only_route_is_in_the_matrix(client_for, alice):
    """A new state-changing game route must be added to CASES: find them all by
    asking every route of the app for a GET and looking for 405. (Logout, the
    one account route that is POST-only, is in test_csrf.py.)"""
    post_only = set()
    for pattern in urlpatterns:
        path = "/" + str(pattern.pattern)
        for parameter, name in (
            ("<int:game_id>", "{id}"),
            ("<str:secret>", "{secret}"),
            ("<str:username>", "{username}"),
        ):
            path = path.replace(parameter, name)
        response = client_for(alice).get(path.format(id=1, secret="x", username="a"))
        if response.status_code == 405:
            post_only.add(path)
    assert post_only - {"/accounts/logout/"} == {
        case.path for case in CASES if not case.path.startswith("/admin/")
    }


# -- account pages --------------------------------------------------
# No account page names an account in its address: each acts on the logged-in
# user only, and sends anonymous visitors to log in first. The password-reset
# pages are for everyone (the emailed link is the authorization).

ACCOUNT_PAGES = [
    "/accounts/password/change/",
    "/accounts/password/set/",
    "/accounts/email/",
    "/accounts/reauthenticate/",
    "/accounts/close/",
    "/accounts/keep/",
]


@pytest.mark.parametrize("path", ACCOUNT_PAGES)
def test_account_pages_send_anonymous_visitors_to_log_in(db, path):
    for method in ("GET", "POST"):
        data = {"password": "x"} if method == "POST" else None
        response = send(Client(), method, path, data)
        assert response.status_code == 302
        assert response["Location"] == f"/accounts/login/?next={path}"


NEW_PASSWORD = "another-long-password-77"


@pytest.mark.parametrize("role", [r for r in ROLES if r != ANONYMOUS])
@pytest.mark.parametrize(
    ("path", "data", "effect"),
    [
        (
            "/accounts/email/",
            {"email": "me@example.com", "action_add": ""},
            lambda user: (
                set(user.emailaddress_set.values_list("email", flat=True))
                == {"me@example.com"}
            ),
        ),
        (
            "/accounts/password/change/",
            {
                "oldpassword": PASSWORD,
                "password1": NEW_PASSWORD,
                "password2": NEW_PASSWORD,
            },
            lambda user: user.check_password(NEW_PASSWORD),
        ),
        (
            "/accounts/close/",
            {"password": PASSWORD},
            lambda user: not user.is_active,
        ),
    ],
    ids=["email", "password", "close"],
)
def test_account_changes_touch_only_the_actors_account(cast, role, path, data, effect):
    actor = cast[role]
    User = get_user_model()

    def others():
        return (
            list(User.objects.exclude(pk=actor.pk).order_by("pk").values()),
            list(EmailAddress.objects.exclude(user=actor).order_by("pk").values()),
        )

    before = others()
    client = Client()
    client.force_login(actor)
    assert send(client, "POST", "/accounts/reauthenticate/", {"password": PASSWORD})
    response = send(client, "POST", path, data)
    assert response.status_code == 302
    actor.refresh_from_db()
    assert effect(actor)
    assert others() == before


# -- two-factor authentication and passkeys (allauth.mfa) ------------------------
# Every page acts on the logged-in user's own second factors; a key is named by
# its number, and another account's key is a 404 that changes nothing.

MFA_PAGES = [
    "/accounts/2fa/",
    "/accounts/2fa/totp/activate/",
    "/accounts/2fa/totp/deactivate/",
    "/accounts/2fa/recovery-codes/",
    "/accounts/2fa/recovery-codes/generate/",
    "/accounts/2fa/recovery-codes/download/",
    "/accounts/2fa/webauthn/",
    "/accounts/2fa/webauthn/add/",
    "/accounts/2fa/webauthn/keys/1/remove/",
    "/accounts/2fa/webauthn/keys/1/edit/",
]


MFA_GET_ONLY = {
    "/accounts/2fa/",
    "/accounts/2fa/recovery-codes/",
    "/accounts/2fa/recovery-codes/download/",
    "/accounts/2fa/webauthn/",
}


@pytest.mark.parametrize("path", MFA_PAGES)
def test_mfa_pages_send_anonymous_visitors_to_log_in(db, path):
    for method in ("GET",) if path in MFA_GET_ONLY else ("GET", "POST"):
        data = {"code": "123456"} if method == "POST" else None
        response = send(Client(), method, path, data)
        assert response.status_code == 302
        location = unquote(response["Location"])
        assert location == f"/accounts/login/?next={path}"


@pytest.mark.parametrize(
    "path", ["/accounts/2fa/authenticate/", "/accounts/2fa/webauthn/login/"]
)
def test_the_second_login_step_is_only_for_a_login_under_way(cast, path):
    """Without a password just checked, the second step has nobody to log in:
    anonymous visitors go to the login page, logged-in users to the lobby."""
    for role in ROLES:
        client = Client()
        if cast[role] is not None:
            client.force_login(cast[role])
        response = send(client, "POST", path, {"code": "123456", "credential": "{}"})
        assert response.status_code == 302
        expected = "/accounts/login/" if role == ANONYMOUS else "/"
        assert response["Location"] == expected


@pytest.mark.parametrize("role", [r for r in ROLES if r != ANONYMOUS])
@pytest.mark.parametrize("action", ["remove", "edit"])
def test_nobody_touches_another_accounts_key(cast, role, action):
    from allauth.mfa.models import Authenticator

    owner = cast[OFF_TURN] if cast[role] != cast[OFF_TURN] else cast[ON_TURN]
    key = Authenticator.objects.create(
        user=owner, type=Authenticator.Type.WEBAUTHN, data={"name": "Owner's key"}
    )
    client = Client()
    client.force_login(cast[role])
    assert send(client, "POST", "/accounts/reauthenticate/", {"password": PASSWORD})
    path = f"/accounts/2fa/webauthn/keys/{key.pk}/{action}/"
    for method in ("GET", "POST"):
        response = send(client, method, path, {"name": "Mine now"})
        assert response.status_code == 404
    assert Authenticator.objects.get(pk=key.pk).data == {"name": "Owner's key"}


# -- signed-in browsers and your data (accounts.privacy_views) ---------------


@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", "/accounts/sessions/end/"), ("GET", "/accounts/data/")],
)
def test_browsers_and_data_send_anonymous_visitors_to_log_in(db, method, path):
    response = send(
        Client(), method, path, {"others": "1"} if method == "POST" else None
    )
    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next={path}"


def _browser(user) -> Client:
    """A browser that logged in through the form (allauth records it)."""
    client = Client()
    response = client.post(
        "/accounts/login/",
        {"login": user.get_username(), "password": PASSWORD},
        REMOTE_ADDR="198.51.100.1",
    )
    assert response.status_code == 302
    return client


def _signed_in(client) -> bool:
    return "_auth_user_id" in client.session


@pytest.mark.parametrize("role", [r for r in ROLES if r != ANONYMOUS])
def test_browsers_and_data_are_only_the_actors(cast, role):
    """Each role signs out its other browsers, one by its id and then all:
    every other account's browsers stay signed in; the one browser of someone
    else it names is refused as if it did not exist; its download is its own."""
    from allauth.mfa.models import Authenticator
    from allauth.usersessions.models import UserSession

    # Every browser logs in with the password alone (staff's second factor is
    # tests/accounts/test_mfa_admin.py's subject).
    Authenticator.objects.all().delete()
    game = in_progress(cast)
    actor = cast[role]
    people = {user.pk: user for user in cast.values() if user is not None}
    browsers = {pk: [_browser(user), _browser(user)] for pk, user in people.items()}
    mine, my_other = browsers[actor.pk]
    someone = next(pk for pk in people if pk != actor.pk)
    theirs = UserSession.objects.get(
        session_key=browsers[someone][0].session.session_key
    )

    refused = send(mine, "POST", "/accounts/sessions/end/", {"session": theirs.pk})
    assert refused.status_code == 404
    assert (
        send(mine, "POST", "/accounts/sessions/end/", {"others": "1"}).status_code
        == 302
    )

    assert (_signed_in(mine), _signed_in(my_other)) == (True, False)
    for pk, pair in browsers.items():
        if pk != actor.pk:
            assert [_signed_in(client) for client in pair] == [True, True]
    reauthenticated = send(
        mine, "POST", "/accounts/reauthenticate/", {"password": PASSWORD}
    )
    assert reauthenticated.status_code == 302
    data = json.loads(mine.get("/accounts/data/").content)
    assert data["account"]["id"] == actor.pk
    assert [g["id"] for g in data["games"]] == (
        [game.pk] if actor in (cast[ON_TURN], cast[OFF_TURN]) else []
    )
