"""Two people, two browsers (two cookie jars), whole games through the real pages.

pytest-django's live server serves the pages but not the live streams, so the
waiting player reloads to see the opponent's move; tests/e2e/test_live_play.py
sees moves arrive without a reload, on the real server.
"""

from playwright.sync_api import expect

# X: 0,0 0,2 2,1 1,0 2,2 and O: 0,1 1,1 1,2 2,0 fill the board with no line.
DRAW = [(0, 0), (0, 1), (0, 2), (1, 1), (2, 1), (1, 2), (1, 0), (2, 0), (2, 2)]


def take_turns(x, o, cells):
    """X and O alternate; each reloads before moving (no live streams here)."""
    for number, cell in enumerate(cells):
        mover = x if number % 2 == 0 else o
        mover.reload()
        mover.play(*cell)


def test_two_new_accounts_play_a_game_to_a_win(player, artifacts):
    ann = player("ann", account=False)
    ben = player("ben", account=False)
    ann.sign_up()
    ben.sign_up()

    game_id = ann.start_game(opponent="ben")
    expect(ann.turn).to_have_text("Your turn.")
    ann.play(0, 0)
    expect(ann.turn).to_have_text("Waiting for ben (O).")

    ben.page.goto("/")
    # The lobby links each game and, apart, each username (to the player page).
    listed = ben.page.locator("li", has_text=f"Game {game_id}: ann (X) vs ben (O)")
    listed.get_by_role("link", name=f"Game {game_id}", exact=True).click()
    expect(ben.turn).to_have_text("Your turn.")
    ben.play(1, 0)
    ben.page.screenshot(path=artifacts / "game-in-progress.png")

    take_turns(ann, ben, [(0, 1), (1, 1), (0, 2)])

    ben.reload()
    for person in (ann, ben):
        assert person.board() == "XXXOO----"
        assert person.winning_line() == [(0, 0), (0, 1), (0, 2)]
        expect(person.cell_buttons).to_have_count(0)
    expect(ann.turn).to_have_text("You win!")
    expect(ben.turn).to_have_text("ann (X) wins!")
    # The stylesheet arrived (served by the live server): the win is highlighted.
    expect(ann.winning_cells.first).to_have_css(
        "background-color", "rgb(255, 241, 184)"
    )
    ann.page.screenshot(path=artifacts / "game-finished.png")


def test_draw_then_rematch_with_sides_swapped_then_forfeit(player):
    alice = player("alice")
    bob = player("bob")
    first = alice.start_game(opponent="bob")
    bob.open_game(first)

    take_turns(alice, bob, DRAW)
    bob.reload()
    for person in (alice, bob):
        assert person.board() == "XOXXOOOXX"
        expect(person.turn).to_have_text("Draw.")
        expect(person.winning_cells).to_have_count(0)
        expect(person.page.locator(".series")).to_have_text(
            "Series: alice 0 – 0 bob, 1 draw"
        )

    bob.page.get_by_role("button", name="Rematch (sides swapped)").click()
    bob.page.wait_for_url(lambda url: f"/games/{first}/" not in url)
    rematch = bob.game_id
    alice.page.get_by_role("button", name="Rematch (sides swapped)").click()
    alice.page.wait_for_url(f"**/games/{rematch}/")
    for person in (alice, bob):
        expect(person.page.locator(".players")).to_have_text(
            "X X: bob vs O O: alice", use_inner_text=True
        )
        assert person.board() == "---------"
    expect(bob.turn).to_have_text("Your turn.")
    expect(alice.turn).to_have_text("Waiting for bob (X).")

    bob.page.get_by_text("Forfeit…").click()
    bob.page.get_by_role("button", name="Yes, forfeit this game").click()
    expect(bob.turn).to_have_text("alice (O) wins: bob (X) forfeited.")
    alice.reload()
    expect(alice.turn).to_have_text("You win: bob (X) forfeited.")
    for person in (alice, bob):
        expect(person.page.locator(".series")).to_have_text(
            "Series: bob 0 – 1 alice, 1 draw"
        )
        expect(person.cell_buttons).to_have_count(0)


def test_open_game_joined_from_the_lobby(player):
    alice = player("alice")
    bob = player("bob")
    game_id = alice.start_game(side="O")
    expect(alice.turn).to_have_text(
        "Waiting for an opponent to join. Share this page's address."
    )
    expect(alice.cell_buttons).to_have_count(0)

    bob.page.goto("/")
    open_games = bob.page.get_by_role("region", name="Open games")
    expect(open_games).to_contain_text(f"Game {game_id} by alice (plays O)")
    open_games.get_by_role("button", name=f"Join game {game_id}").click()
    bob.page.wait_for_url(f"**/games/{game_id}/")
    expect(bob.page.locator(".messages")).to_have_text("You joined the game.")
    expect(bob.turn).to_have_text("Your turn.")
    bob.play(1, 1)

    alice.reload()
    expect(alice.turn).to_have_text("Your turn.")
    expect(alice.cell_buttons).to_have_count(8)
    alice.play(0, 0)
    expect(alice.turn).to_have_text("Waiting for bob (X).")


def test_one_account_plays_both_sides(player):
    alice = player("alice")
    bob = player("bob")  # watches
    game_id = alice.start_game(opponent="alice")
    for number, cell in enumerate([(0, 0), (1, 0), (1, 1), (2, 0), (2, 2)]):
        expect(alice.turn).to_have_text(f"Your turn ({'XO'[number % 2]}).")
        alice.play(*cell)

    expect(alice.turn).to_have_text("X wins!")
    assert alice.winning_line() == [(0, 0), (1, 1), (2, 2)]
    expect(alice.page.locator(".series")).to_have_count(0)
    bob.open_game(game_id)
    expect(bob.turn).to_have_text("X wins!")
    assert bob.board() == "X--OX-O-X"


def test_waiting_player_and_spectator_get_no_cell_buttons(player):
    alice = player("alice")
    bob = player("bob")
    carol = player("carol")
    game_id = alice.start_game(opponent="bob")
    alice.play(1, 1)

    bob.open_game(game_id)
    carol.open_game(game_id)
    expect(bob.cell_buttons).to_have_count(8)
    expect(alice.turn).to_have_text("Waiting for bob (O).")
    expect(carol.turn).to_have_text("Waiting for bob (O).")
    for watcher in (alice, carol):
        expect(watcher.cell_buttons).to_have_count(0)
        expect(watcher.page.get_by_text("Forfeit…")).to_have_count(0)
        assert watcher.board() == "----X----"
    # A spectator's board is read-only even to a screen reader: labels, no controls.
    expect(carol.cell(1, 1)).to_contain_text("X: row 2, column 2")
    expect(carol.page.locator(".board form")).to_have_count(0)
