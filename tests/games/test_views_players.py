"""Player pages and the archive: head-to-head, self-play and aborted games."""

from games import services

from .test_views_game import text


def test_head_to_head_lists_more_than_fifty_opponents(as_bob, alice, make_user):
    for index in range(55):
        opponent = make_user(f"rival{index:02}")
        services.forfeit(
            game_id=services.create_game(creator=opponent, opponent=alice).pk,
            user=opponent,
        )
    page = text(as_bob.get("/players/alice/"))
    for index in range(55):
        assert f"alice 1 – 0 rival{index:02}" in page


def test_someone_elses_self_play_reads_against_themselves(
    as_alice, as_bob, alice, play
):
    solo = services.create_game(creator=alice, opponent=alice)
    play(solo, (0, 0), (1, 0), (0, 1), (1, 1), (0, 2))
    assert "Against yourself — X wins!" in text(as_alice.get("/players/alice/"))
    other = text(as_bob.get("/players/alice/"))
    assert "against themselves" in other
    assert "Against themselves — X wins!" in other
    assert "yourself" not in other.lower()
    own = text(as_alice.get("/games/archive/"))
    assert "against yourself" in own
    assert "Against yourself — X wins!" in own


def test_the_archive_lists_aborted_games_under_their_filter(as_alice, alice, bob):
    aborted = services.create_game(creator=bob, opponent=alice)
    services.abort(game_id=aborted.pk, user=bob)
    services.forfeit(
        game_id=services.create_game(creator=alice, opponent=bob).pk, user=alice
    )
    response = as_alice.get("/games/archive/", {"result": "aborted"})
    assert response.status_code == 200
    assert [result.game_id for result, _ in response.context["results"]] == [aborted.pk]
    assert "Aborted by bob." in text(response)
    assert len(as_alice.get("/games/archive/").context["results"]) == 2
    withdrawn = services.create_game(creator=alice)
    services.abort(game_id=withdrawn.pk, user=alice)
    for page in ("/games/archive/?result=aborted", "/players/alice/"):
        response = as_alice.get(page)
        assert response.status_code == 200
        assert "an open game nobody joined" in text(response)
        assert "Aborted by you." in text(response)


def test_a_refused_archive_filter_is_described_by_its_error(as_alice, bob):
    response = as_alice.get("/games/archive/", {"result": "victory", "opponent": "bob"})
    assert response.status_code == 400
    page = text(response)
    assert (
        '<select name="result" aria-invalid="true" aria-describedby="id_result_error" '
        'id="id_result">'
    ) in page
    assert (
        '<ul class="errorlist" id="id_result_error"><li>Filter by one of the results '
        "in the list, or by none.</li></ul>"
    ) in page
    # The valid filter beside it keeps its value and has no error.
    assert (
        '<input type="text" name="opponent" value="bob" autocomplete="off" '
        'maxlength="150" id="id_opponent">'
    ) in page
