"""Player records, streaks and head-to-head: PlayerResult rows written by the
services, the queries on their managers (games.models), and the player page."""

import threading
from contextlib import nullcontext

import pytest
from django.db import connection
from django.urls import reverse

from games import player_stats, rules, services
from games.models import PlayerRecord, PlayerResult, Series
from games.sql import RECORD_ADD_TWO

from ..conftest import DRAW, X_WINS_ROW_0, forfeit_now, new_game


def test_outcome_for_each_status_and_side():
    outcome = rules.outcome_for
    S, M, R = rules.Status, rules.Mark, rules.Outcome
    assert (outcome(S.X_WON, M.X), outcome(S.X_WON, M.O)) == (R.WIN, R.LOSS)
    assert (outcome(S.O_WON, M.X), outcome(S.O_WON, M.O)) == (R.LOSS, R.WIN)
    assert (outcome(S.DRAW, M.X), outcome(S.DRAW, M.O)) == (R.DRAW, R.DRAW)
    assert (outcome(S.X_FORFEITS, M.X), outcome(S.X_FORFEITS, M.O)) == (
        R.FORFEIT,
        R.WIN,
    )
    assert (outcome(S.O_FORFEITS, M.X), outcome(S.O_FORFEITS, M.O)) == (
        R.WIN,
        R.FORFEIT,
    )
    for no_result in (S.IN_PROGRESS, S.ABORTED):
        with pytest.raises(ValueError, match="has no result"):
            outcome(no_result, M.X)


def test_each_finished_game_gets_its_rows(history, alice, bob):
    game = history["forfeit_as_x"]
    rows = set(game.results.values_list("player", "opponent", "mark", "outcome"))
    assert rows == {(alice.pk, bob.pk, "X", "forfeit"), (bob.pk, alice.pk, "O", "win")}
    solo = history["self_play"]
    assert list(solo.results.values_list("player", "opponent", "mark", "outcome")) == [
        (alice.pk, alice.pk, "", "self_play")
    ]
    assert PlayerResult.objects.count() == 11  # 5 games x 2 players + 1 self-play


def test_records_are_counted_when_games_end(history, alice, bob, carol):
    fields = ("x_wins", "x_losses", "x_forfeits", "x_draws")
    fields += ("o_wins", "o_losses", "o_forfeits", "o_draws", "self_play")
    stored = {
        row[0]: row[1:] for row in PlayerRecord.objects.values_list("player", *fields)
    }
    assert stored == {
        alice.pk: (1, 0, 1, 0, 2, 0, 0, 1, 1),
        bob.pk: (0, 0, 1, 1, 1, 1, 0, 0, 0),
        carol.pk: (0, 1, 0, 0, 0, 0, 0, 0, 0),
    }


def test_a_running_game_has_no_rows(game, play):
    play(game, (0, 0), (1, 1))
    assert not PlayerResult.objects.exists()
    assert not PlayerRecord.objects.exists()


def test_record_splits_by_side_and_keeps_self_play_out(history, alice, bob, carol):
    record = PlayerRecord.objects.record_of(alice)
    assert record.as_x == player_stats.Tally(wins=1, forfeits=1)
    assert record.as_o == player_stats.Tally(wins=2, draws=1)
    assert record.self_play == 1
    total = record.total
    assert (total.played, total.wins, total.all_losses, total.forfeits) == (5, 3, 1, 1)
    assert total.draws == 1
    bob_record = PlayerRecord.objects.record_of(bob)
    assert bob_record.as_x == player_stats.Tally(forfeits=1, draws=1)
    assert bob_record.as_o == player_stats.Tally(wins=1, losses=1)
    assert PlayerRecord.objects.record_of(carol).total == player_stats.Tally(losses=1)


def test_streaks(history, alice, bob, carol, make_user):
    assert PlayerResult.objects.streak(alice) == player_stats.Streak(
        "win", 2
    )  # self-play skipped
    assert PlayerResult.objects.streak(bob) == player_stats.Streak("loss", 1)
    assert PlayerResult.objects.streak(carol) == player_stats.Streak("loss", 1)
    assert PlayerResult.objects.streak(make_user("dave")) == player_stats.Streak()


def test_a_loss_then_a_forfeit_is_one_losing_streak(alice, bob, play):
    play(new_game(alice, bob), *X_WINS_ROW_0)
    forfeit_now(new_game(bob, alice))
    assert PlayerResult.objects.streak(bob) == player_stats.Streak("loss", 2)
    play(new_game(alice, bob), *DRAW)
    play(new_game(bob, alice), *DRAW)
    assert PlayerResult.objects.streak(bob) == player_stats.Streak("draw", 2)


def test_head_to_head_from_each_side(history, alice, bob, carol):
    assert Series.objects.head_to_head(alice) == [(bob, 2, 1, 1), (carol, 1, 0, 0)]
    assert Series.objects.head_to_head(bob) == [(alice, 1, 2, 1)]


def test_player_page(history, alice, bob, client_for):
    response = client_for(alice).get(reverse("player_detail", args=["alice"]))
    assert response.status_code == 200
    html = response.content.decode()
    assert (
        "5 games played: <strong>3</strong> won, <strong>1</strong> lost "
        "(1 by forfeit), <strong>1</strong> drawn." in html
    )
    # One column per side (X, O, total), one row per count.
    for heading, as_x, as_o, total in [
        ("Played", 2, 3, 5),
        ("Won", 1, 2, 3),
        ("Lost", 1, 0, 1),
        ("of which forfeited", 1, 0, 1),
        ("Drawn", 0, 1, 1),
    ]:
        assert (
            f'<th scope="row">{heading}</th><td>{as_x}</td><td>{as_o}</td>'
            f'<td class="total">{total}</td></tr>'
        ) in html
    assert "1 game against yourself is listed but not counted." in html
    assert "Current streak: <strong>2 wins in a row</strong>" in html
    assert "alice 2 – 1 bob, 1 draw" in html
    assert "alice 1 – 0 carol" in html
    assert '<a href="/games/archive/?opponent=carol">your games against carol</a>' in (
        html
    )
    recent = [(r.game_id, text) for r, text in response.context["recent"]]
    assert recent == [
        (history["bob_forfeits"].pk, "Won as O (bob forfeited)"),
        (history["self_play"].pk, "Against yourself — X wins!"),
        (history["win_as_o"].pk, "Won as O"),
        (history["forfeit_as_x"].pk, "Forfeited as X"),
        (history["draw_as_o"].pk, "Draw as O"),
        (history["win_as_x"].pk, "Won as X"),
    ]
    assert f'href="/games/{history["win_as_x"].pk}/"' in html


def test_someone_elses_player_page(history, alice, bob, client_for):
    response = client_for(alice).get(reverse("player_detail", args=["bob"]))
    assert response.status_code == 200
    html = response.content.decode()
    assert "4 games played: <strong>1</strong> won, <strong>2</strong> lost" in html
    assert "Current streak: <strong>1 loss in a row</strong>" in html
    assert "bob 1 – 2 alice, 1 draw" in html


def test_unknown_player_is_a_404_with_a_message(alice, client_for):
    response = client_for(alice).get("/players/nobody/")
    assert response.status_code == 404
    assert "There is no player called “nobody”." in response.content.decode()


@pytest.mark.parametrize("username", ["x" * 300, "%F0%9F%98%80", "alice%20"])
def test_odd_usernames_are_404s(alice, client_for, username):
    response = client_for(alice).get(f"/players/{username}/")
    assert response.status_code == 404
    assert "There is no player called" in response.content.decode()


def test_player_page_needs_login(alice, client):
    response = client.get("/players/alice/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_game_page_and_lobby_link_to_player_pages(history, alice, client_for):
    client = client_for(alice)
    game = history["bob_forfeits"]
    html = client.get(game.get_absolute_url()).content.decode()
    assert '<a href="/players/bob/">bob</a>' in html
    assert '<a href="/players/alice/">alice</a>' in html
    assert "Series: bob 1 – 2 alice, 1 draw" in html
    lobby = client.get("/").content.decode()
    assert '<a href="/players/carol/">carol</a>' in lobby


def add_games(alice, bob, count):
    """`count` more finished games between alice and bob, each kind of ending."""
    for number in range(count):
        game = new_game(alice, bob) if number % 2 else new_game(bob, alice)
        if number % 3 == 0:
            forfeit_now(game)
        else:
            for row, col in X_WINS_ROW_0:
                mover = game.player_x if game.next_mark == "X" else game.player_o
                game = services.play_move(game_id=game.pk, user=mover, row=row, col=col)


PLAYER_PAGE_QUERIES = 8  # user, player, record, streak x2, h2h, recent, blocks


def test_player_page_query_count_does_not_grow(
    history, alice, bob, client_for, django_assert_num_queries
):
    client = client_for(alice)
    with django_assert_num_queries(PLAYER_PAGE_QUERIES):
        assert client.get("/players/alice/").status_code == 200
    add_games(alice, bob, 24)
    with django_assert_num_queries(PLAYER_PAGE_QUERIES):
        response = client.get("/players/alice/")
    assert response.status_code == 200
    assert response.context["record"].total.played == 29


def test_each_game_of_the_history_has_exactly_its_rows(history, alice, bob, carol):
    a, b, c = alice.pk, bob.pk, carol.pk
    expected = {
        "win_as_x": {(a, b, "X", "win"), (b, a, "O", "loss")},
        "draw_as_o": {(b, a, "X", "draw"), (a, b, "O", "draw")},
        "forfeit_as_x": {(a, b, "X", "forfeit"), (b, a, "O", "win")},
        "win_as_o": {(c, a, "X", "loss"), (a, c, "O", "win")},
        "self_play": {(a, a, "", "self_play")},
        "bob_forfeits": {(b, a, "X", "forfeit"), (a, b, "O", "win")},
    }
    stored = {
        name: set(game.results.values_list("player", "opponent", "mark", "outcome"))
        for name, game in history.items()
    }
    assert stored == expected


# Below the PostgreSQL pool of one process (DJANGO_DB_POOL_MAX, 4 by default),
# which the test itself shares.
RACERS = 3
BARRIER_TIMEOUT = 30  # seconds a racer waits for the others before failing


def meeting_before_the_records_write(barrier):
    """An execute_wrapper: the racer waits for every other one in front of its
    write of the records (sql.RECORD_ADD_TWO: a game between two players),
    inside its transaction."""

    def wrapper(execute, sql, params, many, context):
        if sql == RECORD_ADD_TWO:
            barrier.wait()
        return execute(sql, params, many, context)

    return wrapper


@pytest.mark.django_db(transaction=True)
def test_games_of_a_new_player_ending_at_once_all_count(make_user):
    """RACERS games of dave, who has no record yet, end at the same moment, each
    in its own connection and transaction: every one creates or finds his
    record and counts (nothing is refused, nothing lost)."""
    dave = make_user("dave")
    games = []
    for index in range(RACERS):
        game = new_game(make_user(f"opponent{index}"), dave)
        for row, col in X_WINS_ROW_0[:-1]:
            mover = game.player_x if game.next_mark == "X" else game.player_o
            game = services.play_move(game_id=game.pk, user=mover, row=row, col=col)
        games.append(game)
    assert not PlayerRecord.objects.filter(player=dave).exists()
    if connection.vendor == "sqlite":
        # SQLite's writers take turns on its one write lock in any case; its
        # in-memory test database refuses concurrent writers (table locked)
        # instead of queueing them, so here they take turns explicitly.
        turns, meeting = threading.Lock(), nullcontext
    else:
        # Every racer is in its transaction, with dave's record still missing,
        # before any of them writes it.
        barrier = threading.Barrier(RACERS, timeout=BARRIER_TIMEOUT)
        turns = nullcontext()

        def meeting():  # in the racer's thread: on its own connection
            return connection.execute_wrapper(meeting_before_the_records_write(barrier))

    failures = []

    def win(game):
        try:
            with turns, meeting():
                services.play_move(game_id=game.pk, user=game.player_x, row=0, col=2)
        except Exception as exc:  # noqa: BLE001 (reported by the assertion below)
            failures.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=win, args=(game,)) for game in games]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    record = PlayerRecord.objects.get(player=dave)
    assert (record.o_losses, record.x_wins, record.o_wins) == (RACERS, 0, 0)
    assert PlayerResult.objects.filter(player=dave, outcome="loss").count() == RACERS
