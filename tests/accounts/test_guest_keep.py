"""Keep this account (accounts.keep_account): a guest chooses a password (and
perhaps an email address and, once, another free name), and the same account,
with its games, records, head-to-heads and blocks, becomes a normal one. Before
that, a guest can neither log in by password nor reset one; logging out warns."""

import pytest
from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client

from accounts.models import Guest
from games import services
from games.models import Block, Game, GameStatus, PlayerRecord, Series

from ..conftest import PASSWORD, play_cells
from ..support.account_client import addresses, logged_in_as, login, mailed_link

NEW_PASSWORD = "a-kept-guest-password-31"
TAKEN = "A user with that username already exists."
NOT_A_GUEST = (
    "This account is not a guest account: it has a password, and its name can "
    "no longer be changed."
)


def keep_form(username="dora", password=NEW_PASSWORD, **extra) -> dict:
    return {"username": username, "password1": password, "password2": password} | (
        extra
    )


@pytest.fixture
def dora(make_guest):
    return make_guest("dora")


def stored(user) -> tuple:
    """What keeping may change: the name, whether a password is set, guest."""
    user = get_user_model().objects.get(pk=user.pk)
    return (
        user.username,
        user.has_usable_password(),
        Guest.objects.filter(pk=user.pk).exists(),
    )


def test_the_page_offers_the_guest_name_and_the_header_links_to_it(client_for, dora):
    client = client_for(dora)
    page = client.get("/accounts/keep/")
    assert page.status_code == 200
    assert "<h1>Keep this account</h1>" in page.text
    assert 'name="username" value="dora"' in page.text
    assert "a guest account unused for 30 days is closed" in page.text
    lobby = client.get("/")
    assert '<a href="/accounts/keep/">Keep this account</a>' in lobby.text
    assert '<a href="/accounts/password/change/">Account</a>' not in lobby.text


def test_keeping_with_a_password_then_logging_in_with_it(client_for, dora):
    client = client_for(dora)
    response = client.post("/accounts/keep/", keep_form())
    assert response.status_code == 302
    assert response["Location"] == "/accounts/password/change/"
    assert stored(dora) == ("dora", True, False)
    # This browser stays logged in, as the same account.
    assert "The account “dora” is yours" in client.get(response["Location"]).text
    assert logged_in_as(client) == "dora"
    assert client.post("/accounts/logout/").status_code == 302  # no warning now
    assert logged_in_as(client) is None
    assert logged_in_as(login("dora", NEW_PASSWORD)) == "dora"
    assert logged_in_as(login("DORA", NEW_PASSWORD)) == "dora"


def test_keeping_with_an_address_queues_its_confirmation(client_for, dora):
    client = client_for(dora)
    response = client.post("/accounts/keep/", keep_form(email="Dora@Example.org"))
    assert response.status_code == 302
    assert stored(dora) == ("dora", True, False)
    assert addresses() == {("dora", "dora@example.org", False)}
    (message,) = mail.outbox
    assert message.to == ["dora@example.org"]
    link = mailed_link(message)
    assert link.startswith("/accounts/confirm-email/")
    assert client.post(link).status_code == 302
    assert addresses() == {("dora", "dora@example.org", True)}


def test_the_name_may_change_once_to_a_free_name(client_for, dora):
    client = client_for(dora)
    response = client.post("/accounts/keep/", keep_form(username="Dorothea"))
    assert response.status_code == 302
    assert stored(dora) == ("Dorothea", True, False)
    assert logged_in_as(client) == "Dorothea"
    assert logged_in_as(login("dorothea", NEW_PASSWORD)) == "Dorothea"
    # Once kept, there is nothing left to keep: no second change.
    again = client.post("/accounts/keep/", keep_form(username="Dot"))
    assert again.status_code == 403
    assert NOT_A_GUEST in again.text
    assert stored(dora) == ("Dorothea", True, False)
    assert client.get("/accounts/keep/").status_code == 403


def test_the_same_name_in_another_case_is_the_guests_own(client_for, dora):
    response = client_for(dora).post("/accounts/keep/", keep_form(username="DORA"))
    assert response.status_code == 302
    assert stored(dora) == ("DORA", True, False)


@pytest.mark.parametrize("taken", ["alice", "ALICE", "Ａlice", "ａｌｉｃｅ"])
def test_a_name_taken_in_any_case_or_unicode_spelling_is_refused(
    client_for, alice, dora, taken
):
    client = client_for(dora)
    response = client.post("/accounts/keep/", keep_form(username=taken))
    assert response.status_code == 400
    assert TAKEN in response.text
    assert stored(dora) == ("dora", False, True)
    assert logged_in_as(client) == "dora"


@pytest.mark.parametrize(
    ("form", "message"),
    [
        (keep_form(password="short"), "This password is too short."),
        (
            {"username": "dora", "password1": NEW_PASSWORD, "password2": "other"},
            "You must type the same password each time.",
        ),
        (keep_form(username="no spaces"), "Enter a valid username."),
        (keep_form(email="not an address"), "Enter a valid email address."),
    ],
    ids=["short password", "passwords differ", "bad name", "bad address"],
)
def test_a_refused_form_changes_nothing(client_for, dora, form, message):
    response = client_for(dora).post("/accounts/keep/", form)
    assert response.status_code == 400
    assert message in response.text
    assert stored(dora) == ("dora", False, True)
    assert not EmailAddress.objects.exists()
    assert mail.outbox == []


def test_only_a_guest_keeps_an_account(client_for, alice):
    client = client_for(alice)
    for response in (
        client.get("/accounts/keep/"),
        client.post("/accounts/keep/", keep_form(username="alicia")),
    ):
        assert response.status_code == 403
        assert NOT_A_GUEST in response.text
    alice.refresh_from_db()
    assert (alice.username, alice.check_password(PASSWORD)) == ("alice", True)


def test_a_guest_closed_meanwhile_is_not_kept(client_for, dora, monkeypatch):
    """The page found a guest; the account was closed (the idle guests'
    housekeeping, say) before the keep's transaction began: nothing is kept."""
    from accounts import services as account_services
    from accounts import usernames

    def closed_meanwhile(name, user=None):
        account_services.close_account(user=dora)

    monkeypatch.setattr(usernames, "check_available", closed_meanwhile)
    response = client_for(dora).post("/accounts/keep/", keep_form(username="dorothy"))
    assert response.status_code == 403
    assert NOT_A_GUEST in response.text
    assert stored(dora) == ("dora", False, True)
    assert not get_user_model().objects.get(pk=dora.pk).is_active


def test_anonymous_visitors_log_in_first(db):
    for method in ("get", "post"):
        response = getattr(Client(), method)("/accounts/keep/")
        assert response.status_code == 302
        assert response["Location"] == "/accounts/login/?next=/accounts/keep/"


def test_games_records_head_to_heads_and_blocks_stay(client_for, alice, carol, dora):
    invitation = services.create_invitation(creator=alice)
    won = services.join_invitation(
        game_id=invitation.game_id, secret=invitation.secret, user=dora
    )
    # alice X, dora O: dora wins along the middle row.
    play_cells(won, (0, 0), (1, 0), (0, 1), (1, 1), (2, 2), (1, 2))
    drawn = services.rematch(game_id=won.pk, user=dora)  # dora X, alice O
    play_cells(
        drawn, (0, 0), (0, 1), (0, 2), (1, 1), (1, 0), (1, 2), (2, 1), (2, 0), (2, 2)
    )
    running = services.rematch(game_id=drawn.pk, user=alice)  # alice X, dora O
    play_cells(running, (0, 0))
    services.block_player(blocker=dora, blocked=carol)
    services.block_player(blocker=carol, blocked=dora)
    versions = dict(Game.objects.values_list("pk", "version"))

    response = client_for(dora).post("/accounts/keep/", keep_form(username="Dot"))
    assert response.status_code == 302

    kept = get_user_model().objects.get(pk=dora.pk)
    assert kept.username == "Dot"
    games = {game.pk: game for game in Game.objects.all()}
    assert {pk: (g.status, g.board) for pk, g in games.items()} == {
        won.pk: (GameStatus.O_WON, "XX-OOO--X"),
        drawn.pk: (GameStatus.DRAW, "XOXXOOOXX"),
        running.pk: (GameStatus.IN_PROGRESS, "X--------"),
    }
    # Each game of hers shows her anew: a new version.
    assert {pk: g.version for pk, g in games.items()} == {
        pk: version + 1 for pk, version in versions.items()
    }
    fields = ("x_wins", "x_draws", "o_wins", "o_losses")
    assert PlayerRecord.objects.filter(player=kept).values_list(*fields).get() == (
        0,
        1,
        1,
        0,
    )
    assert Series.objects.head_to_head(kept) == [(alice, 1, 0, 1)]
    assert set(Block.objects.values_list("blocker", "blocked")) == {
        (dora.pk, carol.pk),
        (carol.pk, dora.pk),
    }


def test_pages_that_showed_the_guest_show_the_kept_name(client_for, alice, dora):
    invitation = services.create_invitation(creator=alice)
    game = services.join_invitation(
        game_id=invitation.game_id, secret=invitation.secret, user=dora
    )
    watcher = client_for(alice)
    # Rendered and cached (games.page_cache) with the guest's name, marked.
    for path in ("/", f"/games/{game.pk}/", f"/games/{game.pk}/live/", "/lobby/live/"):
        assert "dora (guest)" in watcher.get(path).text, path

    assert (
        client_for(dora)
        .post("/accounts/keep/", keep_form(username="Dorothea"))
        .status_code
        == 302
    )

    for path in ("/", f"/games/{game.pk}/", f"/games/{game.pk}/live/", "/lobby/live/"):
        page = watcher.get(path).text
        assert "Dorothea" in page, path
        assert "dora" not in page, path
        assert "(guest)" not in page, path


NEED_A_PASSWORD = [
    "/accounts/password/set/",
    "/accounts/password/change/",
    "/accounts/email/",
]


@pytest.mark.parametrize("path", NEED_A_PASSWORD)
def test_the_password_and_address_pages_send_a_guest_to_keep_first(
    client_for, dora, path
):
    client = client_for(dora)
    for method, data in (
        ("get", None),
        ("post", {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD}),
        ("post", {"email": "dora@example.org", "action_add": ""}),
    ):
        response = getattr(client, method)(path, data)
        assert response.status_code == 302
        assert response["Location"] == "/accounts/keep/"
    assert stored(dora) == ("dora", False, True)
    assert not EmailAddress.objects.exists()


@pytest.mark.parametrize("password", ["", "!", PASSWORD, "dora"])
def test_a_guest_cannot_log_in_by_password(dora, password):
    client = Client()
    response = client.post(
        "/accounts/login/",
        {"login": "dora", "password": password},
        REMOTE_ADDR="198.51.100.7",
    )
    assert response.status_code == 400
    assert logged_in_as(client) is None


def test_a_guest_cannot_reset_a_password(dora):
    """Not even with a confirmed address (none of the site's pages gives a guest
    one): the mail is the one for an address without an account."""
    EmailAddress.objects.create(
        user=dora, email="dora@example.org", verified=True, primary=True
    )
    response = Client().post(
        "/accounts/password/reset/",
        {"email": "dora@example.org"},
        REMOTE_ADDR="198.51.100.8",
    )
    assert response.status_code == 302
    (message,) = mail.outbox
    assert "/accounts/password/reset/key/" not in message.body
    assert stored(dora) == ("dora", False, True)


def test_logging_out_as_a_guest_warns_first(client_for, dora):
    client = client_for(dora)
    warning = client.post("/accounts/logout/")
    assert warning.status_code == 200
    assert (
        "A guest account has no password: once you log out, nobody can log in as "
        "“dora” again, not even you, unless you keep the account first."
    ) in warning.text
    assert '<a class="button primary" href="/accounts/keep/">' in warning.text
    assert logged_in_as(client) == "dora"
    confirmed = client.post("/accounts/logout/", {"confirmed": "1"})
    assert confirmed.status_code == 302
    assert logged_in_as(client) is None


def test_an_account_logs_out_at_once(client_for, alice):
    client = client_for(alice)
    assert client.post("/accounts/logout/").status_code == 302
    assert logged_in_as(client) is None


def test_open_pages_hear_that_the_guest_was_kept(
    client_for, alice, dora, monkeypatch, django_capture_on_commit_callbacks
):
    """Each game of the guest's is published with its new version (games.live),
    so its open pages and the players' lobbies fetch their live part again."""
    from games import live

    invitation = services.create_invitation(creator=alice)
    game = services.join_invitation(
        game_id=invitation.game_id, secret=invitation.secret, user=dora
    )
    version = Game.objects.get(pk=game.pk).version
    published = []
    monkeypatch.setattr(live, "publish", published.append)
    with django_capture_on_commit_callbacks(execute=True):
        response = client_for(dora).post("/accounts/keep/", keep_form())
    assert response.status_code == 302
    changes = [change for change in published if isinstance(change, live.Change)]
    assert [(c.game_id, c.version, set(c.player_ids)) for c in changes] == [
        (game.pk, version + 1, {alice.pk, dora.pk})
    ]


def test_a_name_taken_meanwhile_is_refused_by_the_database(
    client_for, alice, dora, monkeypatch
):
    """The form found the name free; a sign-up took another spelling of it
    before the keep's transaction wrote it: the key's unique constraint refuses
    it, and nothing of the keep stays (games' versions included)."""
    from accounts import usernames

    invitation = services.create_invitation(creator=alice)
    game = services.join_invitation(
        game_id=invitation.game_id, secret=invitation.secret, user=dora
    )
    version = Game.objects.get(pk=game.pk).version
    monkeypatch.setattr(usernames, "check_available", lambda name, user=None: None)
    response = client_for(dora).post("/accounts/keep/", keep_form(username="ALICE"))
    assert response.status_code == 400
    assert "That username was just taken: choose another." in response.text
    assert stored(dora) == ("dora", False, True)
    assert Game.objects.get(pk=game.pk).version == version
