"""The game archive: /games/archive/, your finished games, filtered and paged."""

import pytest

from games import services

from ..conftest import new_game

RESULT_ERROR = "Filter by one of the results in the list, or by none."


def listed(response) -> list[int]:
    return [result.game_id for result, _ in response.context["results"]]


def test_lists_your_finished_games_newest_first(history, as_alice):
    response = as_alice.get("/games/archive/")
    assert response.status_code == 200
    assert listed(response) == [
        history[name].pk
        for name in (
            "bob_forfeits",
            "self_play",
            "win_as_o",
            "forfeit_as_x",
            "draw_as_o",
            "win_as_x",
        )
    ]
    page = response.content.decode()
    assert "Won as O (bob forfeited)" in page
    assert 'rel="next"' not in page
    assert 'rel="prev"' not in page


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"result": "won"}, ["bob_forfeits", "win_as_o", "win_as_x"]),
        ({"result": "lost"}, ["forfeit_as_x"]),
        ({"result": "forfeited"}, ["forfeit_as_x"]),
        ({"result": "draw"}, ["draw_as_o"]),
        ({"result": "self-play"}, ["self_play"]),
        ({"opponent": "carol"}, ["win_as_o"]),
        ({"opponent": "bob", "result": "won"}, ["bob_forfeits", "win_as_x"]),
        ({"opponent": " bob ", "result": "draw"}, ["draw_as_o"]),
        ({"opponent": "carol", "result": "lost"}, []),
    ],
)
def test_filters(history, as_alice, query, expected):
    response = as_alice.get("/games/archive/", query)
    assert response.status_code == 200
    assert listed(response) == [history[name].pk for name in expected]
    if not expected:
        assert "No finished games match these filters." in response.content.decode()


def test_someone_elses_games_are_not_yours(history, client_for, carol):
    response = client_for(carol).get("/games/archive/")
    assert listed(response) == [history["win_as_o"].pk]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"result": "victory"}, RESULT_ERROR),
        ({"opponent": "nobody"}, "There is no player called “nobody”."),
        ({"opponent": "x" * 151}, "Ensure this value has at most 150 characters"),
        ({"before": "abc"}, "That page link is not valid."),
        ({"before": "-3"}, "That page link is not valid."),
        ({"after": "0"}, "That page link is not valid."),
        ({"before": "9" * 19}, "That page link is not valid."),
        ({"before": "5", "after": "2"}, "That page link is not valid."),
    ],
)
def test_bad_filters_are_a_400_with_a_message(alice, as_alice, query, message):
    response = as_alice.get("/games/archive/", query)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert 'role="alert"' in response.content.decode()


def test_needs_login(client):
    response = client.get("/games/archive/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def forfeited_games(alice, bob, count) -> list[int]:
    """`count` finished games (alice forfeits), oldest first."""
    return [
        services.forfeit(game_id=new_game(alice, bob).pk, user=alice).pk
        for _ in range(count)
    ]


def test_pages_follow_older_and_newer_links(alice, bob, as_alice):
    games = forfeited_games(alice, bob, 45)[::-1]  # newest first
    first = as_alice.get("/games/archive/", {"result": "forfeited"})
    assert listed(first) == games[:20]
    assert first.context["newer_query"] is None
    older = first.context["older_query"]
    assert older.startswith("result=forfeited&before=")
    assert f'href="?{older.replace("&", "&amp;")}" rel="next"' in first.content.decode()

    second = as_alice.get(f"/games/archive/?{older}")
    assert listed(second) == games[20:40]
    third = as_alice.get(f"/games/archive/?{second.context['older_query']}")
    assert listed(third) == games[40:]
    assert third.context["older_query"] is None

    back = as_alice.get(f"/games/archive/?{third.context['newer_query']}")
    assert listed(back) == games[20:40]
    back_again = as_alice.get(f"/games/archive/?{back.context['newer_query']}")
    assert listed(back_again) == games[:20]
    assert back_again.context["newer_query"] is None


ARCHIVE_QUERIES = 2  # user, one page of results with games and players


@pytest.mark.parametrize("query", [{}, {"result": "lost"}, {"opponent": "bob"}])
def test_query_count_does_not_grow(
    alice, bob, as_alice, django_assert_num_queries, query
):
    forfeited_games(alice, bob, 3)
    expected = ARCHIVE_QUERIES + ("opponent" in query)  # looking up the opponent
    with django_assert_num_queries(expected):
        assert as_alice.get("/games/archive/", query).status_code == 200
    forfeited_games(alice, bob, 30)
    with django_assert_num_queries(expected):
        response = as_alice.get("/games/archive/", query)
    assert response.status_code == 200
    assert len(listed(response)) == 20
