"""A release with a migration, under play (docs/operations.md, "Releases"): the
fleet (three hosts behind nginx, tests/support/fleet.py) serves this checkout
while a copy of it with one more migration and the code that uses it
(tests/support/releases.py: Game.release_note, a column with a database
default, shown on the game page) runs `make release` against the same
database; then the hosts restart one by one on the copy. Old hosts serve the
new schema, new hosts the rows old ones wrote: no request fails at nginx, no
move is lost.

PostgreSQL pass only: SQLite is one host, and the linter's rule is PostgreSQL's.
"""

import threading
import time

import pytest

from ..support.fleet import (
    BOUND,
    DRAW,
    Player,
    Reader,
    Visitor,
    copy_checkout,
    running_fleet,
    wait_for,
)
from ..support.releases import NOTE, expand_game, make_release, new_code_served

pytestmark = [pytest.mark.processes, pytest.mark.postgresql_only]

# 720 moves, 10 a second at most: play lasts the release, and the test ends it.
GAMES = 80


class PacedPlayer(Player):
    """Player, waiting `pause` after each move (not each round of its games):
    play as steady as it is long (each game's nine moves, in turn)."""

    def _move(self, game) -> None:
        super()._move(game)
        self.stopping.wait(self.pause)


class Creator(threading.Thread):
    """Opens games from the lobby's form through nginx, in turn as each of
    `sessions`, and loads each new game's page: inserts and pages by whichever
    host nginx picks."""

    def __init__(self, port: int, sessions: list[str]):
        super().__init__(daemon=True)
        self.port = port
        self.sessions = sessions
        self.stopping = threading.Event()
        self.created = []  # the POSTs' answers
        self.pages = []

    def run(self) -> None:
        turn = 0
        while not self.stopping.wait(0.1):
            visitor = Visitor(self.port, self.sessions[turn % len(self.sessions)])
            turn += 1
            answer = visitor.post("/games/new/", {"opponent": "", "side": "x"})
            self.created.append(answer)
            if answer.status == 302:
                self.pages.append(visitor.get(answer.location))

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=BOUND)


def served_since(answers, since: float, *, new: bool) -> set[str]:
    """The hosts that answered a game page of the old code (or the `new`) among
    `answers` sent after `since`."""
    return {
        a.host
        for a in answers
        if a.sent >= since and a.status == 200 and new_code_served(a.body) is new
    }


def failed(reader: Reader, creator: Creator) -> list[tuple[int, str, str]]:
    """(status, host, what) of every game page not served so far, and of every
    new game not made."""
    pages = [(a, 200, "a game page") for a in reader.pages + creator.pages]
    made = [(a, 302, "a new game") for a in creator.created]
    return [
        (a.status, a.host, what)
        for a, expected, what in pages + made
        if a.status != expected
    ]


def test_a_release_with_a_migration_under_play_fails_no_request(tmp_path):
    release = copy_checkout(tmp_path / "release-2")
    migration = expand_game(release)
    with running_fleet(
        tmp_path / "fleet", "release", redis=False, env={"WEB_CONCURRENCY": "1"}
    ) as fleet:
        hosts = {host.upstream for host in fleet.hosts}
        games = fleet.games("release", GAMES)
        player = PacedPlayer(fleet.port, games, pause=0.1)
        reader = Reader(fleet.port, games)
        creator = Creator(fleet.port, [game.o for game in games])
        threads = (player, reader, creator)
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
                inserted = {a.host for a in creator.created if a.sent >= migrated}
                served = served_since(reader.pages, migrated, new=False)
                return served == inserted == hosts

            wait_for(
                lambda: failed(reader, creator) or old_code_on_new_schema(),
                "every old host serving after the migration",
            )
            assert failed(reader, creator) == []
            for host in fleet.hosts:
                host.stop()
                host.release(release)
                host.start()
                fleet.in_rotation()  # never two hosts out at once
            restarted = time.monotonic()
            print(
                "old code on the new schema, then restarts (s):",
                round(restarted - migrated, 1),
            )
            wait_for(
                lambda: served_since(reader.pages, restarted, new=True) == hosts,
                "every new host serving",
            )
            assert player.is_alive(), "play ended before the release did"
        finally:
            for thread in threads:
                thread.stop()

        pages = reader.pages + creator.pages
        print(
            "pages, moves, games created:",
            (len(pages), len(player.answers), len(creator.created)),
        )
        print("moves sent again (statuses):", player.resent)
        assert failed(reader, creator) == []
        assert [a for a in fleet.nginx.answered() if a[0] >= 500] == []
        # Both releases' pages through the window, from every host.
        assert served_since(pages, migrated, new=False) == hosts
        assert served_since(pages, migrated, new=True) == hosts
        # No move lost: each acknowledged one stored, each resent one applied once.
        stored = fleet.moves(games)
        assert {key: stored.get(key) for key in player.acknowledged} == (
            player.acknowledged
        )
        for key, statuses in player.resent:
            assert statuses[-1] in (302, 409), (key, statuses)
            assert stored[key] == DRAW[key[1]], (key, statuses)
        # The games the old code created have the column's default, and the new
        # code shows it on their pages.
        created = [int(a.location.strip("/").split("/")[-1]) for a in creator.created]
        notes = fleet.query(
            "SELECT DISTINCT release_note FROM games_game WHERE id = ANY(%s)",
            [created],
        )
        assert notes == [(NOTE,)]
        visitor = fleet.visitor(games[0].o)
        shown = [visitor.get(f"/games/{game_id}/") for game_id in created[:5]]
        assert [(a.status, new_code_served(a.body)) for a in shown] == [(200, True)] * 5
