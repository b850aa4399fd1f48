"""A release with a migration, under play (docs/operations.md, "Releases"): the
fleet (three hosts behind nginx, tests/support/fleet.py) serves this checkout
while a copy of it with one more migration and the code that uses it
(tests/support/releases.py: Game.release_note, a column with a database
default, shown on the game page) runs `make release` against the same
database; then the hosts restart one by one on the copy. Old hosts serve the
new schema without one failed request, new hosts the rows old ones wrote; no
move is lost. Each host restarts as docs/deploying.md says (taken out of
nginx, stopped, started, put back): not one request fails at nginx.

PostgreSQL pass only: SQLite is one host, and the linter's rule is PostgreSQL's.
"""

import itertools
import threading
import time

import pytest

from ..support.fleet import (
    BOUND,
    Answer,
    Game,
    Player,
    Visitor,
    copy_checkout,
    running_fleet,
    wait_for,
)
from ..support.releases import NOTE, expand_game, make_release, new_code_served

pytestmark = [pytest.mark.processes, pytest.mark.postgresql_only]

# 720 moves, 10 a second at most: play outlasts the release; the test ends it.
GAMES = 80
# One server process a host; a player opens a game at each of their turns
# (Browsing) for as long as the release takes: no limit on games per player.
ENV = {
    "WEB_CONCURRENCY": "1",
    "GAMES_MAX_OPEN_PER_USER": "10000",
    "GAMES_MAX_UNSTARTED_PER_USER": "10000",
    "GAMES_CREATE_ABORT_LIMIT": "0",
}


class PacedPlayer(Player):
    """Player, waiting `pause` after each move (not each round of its games):
    play as steady as it is long (each game's nine moves, in turn)."""

    def _move(self, game) -> None:
        super()._move(game)
        self.stopping.wait(self.pause)


class Browsing(threading.Thread):
    """Every 0.1 s, as each of `games`' O players in turn, through nginx: a new
    game from the lobby's form, its page, and the page of the player's game.
    Inserts and pages by whichever host nginx picks."""

    def __init__(self, port: int, games: list[Game]):
        super().__init__(daemon=True)
        self.port = port
        self.games = games
        self.stopping = threading.Event()
        self.answers: list[Answer] = []  # every answer, in order
        self.created: list[Answer] = []  # each new game's form's last answer
        self.pages: list[Answer] = []

    def run(self) -> None:
        for game in itertools.cycle(self.games):
            if self.stopping.wait(0.1):
                return
            visitor = Visitor(self.port, game.o)
            answer = self._new_game(visitor)
            if answer.status == 302:
                self._page(visitor, answer.location)
            self._page(visitor, f"/games/{game.id}/")

    def _new_game(self, visitor: Visitor) -> Answer:
        answer = visitor.post("/games/new/", {"opponent": "", "side": "x"})
        self.answers.append(answer)
        self.created.append(answer)
        return answer

    def _page(self, visitor: Visitor, path: str) -> None:
        answer = visitor.get(path)
        self.answers.append(answer)
        self.pages.append(answer)

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=BOUND)


def game_id(created: Answer) -> int:
    """The id of the game a new game's answer redirects to (/games/<id>/)."""
    return int(created.location.strip("/").rsplit("/", 1)[-1])


def served_since(answers, since: float, *, new: bool) -> set[str]:
    """The hosts that answered a game page of the old code (or the `new`) among
    `answers` sent after `since`."""
    return {
        a.host
        for a in answers
        if a.sent >= since and a.status == 200 and new_code_served(a.body) is new
    }


def failed(browsing: Browsing) -> list[tuple[int, str, str]]:
    """(status, host, what) of every game page not served so far, and of every
    new game not made."""
    pages = [(a, 200, "a game page") for a in browsing.pages]
    made = [(a, 302, "a new game") for a in browsing.created]
    return [
        (a.status, a.host, what)
        for a, expected, what in pages + made
        if a.status != expected
    ]


def test_a_release_with_a_migration_under_play_fails_no_request(tmp_path):
    release = copy_checkout(tmp_path / "release-2")
    migration = expand_game(release)
    with running_fleet(tmp_path / "fleet", "release", redis=False, env=ENV) as fleet:
        hosts = {host.upstream for host in fleet.hosts}
        games = fleet.games("release", GAMES)
        player = PacedPlayer(fleet.port, games, pause=0.1)
        browsing = Browsing(fleet.port, games)
        threads = (player, browsing)
        try:
            for thread in threads:
                thread.start()
            fleet.in_rotation()
            wait_for(lambda: len(player.acknowledged) >= 20, "steady play")

            # The release step, from the new copy, while the old code serves.
            begun = time.monotonic()
            env = fleet.hosts[0].env | {
                "DJANGO_STATIC_ROOT": str(tmp_path / "release-static"),
                "DJANGO_CACHE_DIR": str(tmp_path / "release-cache"),
            }
            released = make_release(release, env)
            assert released.returncode == 0, released.stdout + released.stderr
            assert f"Applying games.{migration}... OK" in released.stdout
            migrated = time.monotonic()
            print("release step (s):", round(migrated - begun, 1))

            # Every old host serves pages and inserts games on the new schema.
            def old_code_on_new_schema() -> bool:
                inserted = {a.host for a in browsing.created if a.sent >= migrated}
                served = served_since(browsing.pages, migrated, new=False)
                return served == inserted == hosts

            wait_for(
                lambda: failed(browsing) or old_code_on_new_schema(),
                "every old host serving after the migration",
            )
            assert failed(browsing) == []
            restarting = time.monotonic()
            for host in fleet.hosts:
                # Out of nginx first (docs/deploying.md): then nothing is
                # queued on its socket when SIGTERM closes it.
                fleet.nginx.reload(down=[host.upstream])
                host.stop()
                host.release(release)
                host.start()
                fleet.nginx.reload()
                fleet.in_rotation()  # never two hosts out at once
            restarted = time.monotonic()
            print(
                "old code on the new schema, then restarts (s):",
                round(restarted - migrated, 1),
            )
            wait_for(
                lambda: served_since(browsing.pages, restarted, new=True) == hosts,
                "every new host serving",
            )
            assert player.is_alive(), "play ended before the release did"
        finally:
            for thread in threads:
                thread.stop()

        pages = browsing.pages
        print(
            "pages, moves, games created:",
            (len(pages), len(player.answers), len(browsing.created)),
        )
        # While old hosts served the new schema, not one request failed.
        window = [
            (a.status, a.host)
            for a in browsing.answers + player.answers
            if migrated <= a.sent and a.sent + a.seconds < restarting
        ]
        assert len(window) >= 10
        assert [answer for answer in window if answer[0] not in (200, 302)] == []
        # Through the restarts, not one request failed at nginx either.
        assert failed(browsing) == []
        assert [a for a in fleet.nginx.answered() if a[0] >= 500] == []
        assert player.resent == []
        # Both releases' pages through the window, from every host.
        assert served_since(pages, migrated, new=False) == hosts
        assert served_since(pages, migrated, new=True) == hosts
        # No move lost: each acknowledged one stored.
        stored = fleet.moves(games)
        assert {key: stored.get(key) for key in player.acknowledged} == (
            player.acknowledged
        )
        # Every game has the column's default: those made before the migration,
        # and after it by the old code, which the new code shows.
        created = {a.sent: game_id(a) for a in browsing.created}
        notes = fleet.query(
            "SELECT DISTINCT release_note FROM games_game WHERE id = ANY(%s)",
            [list(created.values())],
        )
        assert notes == [(NOTE,)]
        by_old_code = [
            made for sent, made in created.items() if migrated <= sent < restarting
        ]
        visitor = fleet.visitor(games[0].o)
        shown = [visitor.get(f"/games/{made}/") for made in by_old_code]
        assert len(shown) >= len(hosts)
        assert {(a.status, new_code_served(a.body)) for a in shown} == {(200, True)}
