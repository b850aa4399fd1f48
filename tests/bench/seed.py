"""Fill an empty database with benchmark data, fast (bulk inserts):
`python -m tests.bench.seed --scenario small|large --password ...`, run with the
settings and DATABASE_URL of the database to fill (tests/bench/run.py does). It
lives with the benchmark, not in the shipped app: it creates accounts with a
known password.

Every row is what the services would have written: boards come from replaying
the moves through games.rules, and series counters from the finished games, so
the data passes every constraint and `manage.py check_games`.

Scenarios:
  small  10 games between 4 users (8 finished, 1 in progress, 1 open).
  large  1,000 users, 100,000 finished games with 600,000 moves between them
         (about 200 of them the viewer's), plus 1,000 games in progress and 100
         open ones.
Both add a pool of in-progress self-play games of a second user, the "mover",
for the move benchmarks: each POST plays the next cell of a different game.
tests/bench/run.py shares the pool out (`move_games`), so that the app's, the
floor's and the textbook move's POSTs never land on the same game.
"""

import functools
import json
import os
import random
import sys
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tictactoe_site.settings")
django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.contrib.auth.hashers import make_password  # noqa: E402
from django.core.management.base import BaseCommand, CommandError  # noqa: E402
from django.core.management.color import no_style  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.utils import timezone  # noqa: E402

from accounts.models import UsernameKey  # noqa: E402
from accounts.usernames import username_key  # noqa: E402
from games import rules  # noqa: E402
from games.models import Game, GameStatus, Move, PlayerRecord, PlayerResult, Series  # noqa: E402
from games.result_rows import COUNTERS, counter_for, result_rows  # noqa: E402

VIEWER = "bench"
MOVER = "bench-mover"
# The mover plays every pool game to a draw in this cell order (row * 3 + col):
# X 0 2 3 7 8, O 1 4 5 6 completes no line, so each of the nine plies is legal.
DRAW_ORDER = "012435768"
# Lengths and outcomes of finished games, cycled: 60 moves per 10 games, so
# 100,000 games hold exactly 600,000 moves.
FINISHED_CYCLE = (
    (5, "won"),
    (6, "won"),
    (7, "won"),
    (9, "draw"),
    (8, "won"),
    (9, "won"),
    (3, "forfeit"),
    (4, "forfeit"),
    (2, "forfeit"),
    (7, "won"),
)
POOL_PER_KIND = 400
PLAYOUTS = 5000
BATCH = 5000


@dataclass(frozen=True)
class Scenario:
    users: int
    finished: int
    in_progress: int
    open: int


SCENARIOS = {
    "small": Scenario(users=4, finished=8, in_progress=0, open=0),
    "large": Scenario(users=1000, finished=100_000, in_progress=1000, open=100),
}


@dataclass(frozen=True)
class Sequence:
    """A replayed move sequence: everything a Game row needs from its moves."""

    cells: tuple[int, ...]
    state: rules.GameState

    @property
    def winner(self) -> rules.Mark | None:
        return self.state.winner if self.state.status.is_over else None


def replay(cells: tuple[int, ...], *, forfeit: bool = False) -> Sequence:
    state = rules.GameState()
    for cell in cells:
        state = state.play(*rules.cell_of(cell))
    if forfeit:
        state = state.forfeit(state.board.next_mark)
    return Sequence(cells, state)


@functools.cache
def sequence_pool() -> dict[tuple[int, str], list[Sequence]]:
    """Distinct sequences per (length, outcome), from seeded random playouts."""
    rng = random.Random(7)
    wanted = set(FINISHED_CYCLE) | {(n, "running") for n in range(5)}
    found: dict[tuple[int, str], set[tuple[int, ...]]] = {k: set() for k in wanted}
    for _ in range(PLAYOUTS):
        board, cells = rules.Board(), []
        while not board.status.is_over:
            cell = rng.choice([i for i, c in enumerate(board.cells) if c == "-"])
            board = board.play(*rules.cell_of(cell))
            cells.append(cell)
        outcome = "draw" if board.status is rules.Status.DRAW else "won"
        for key, prefix in [((len(cells), outcome), cells)] + [
            ((n, kind), cells[:n]) for n in range(5) for kind in ("forfeit", "running")
        ]:
            if key in found and len(found[key]) < POOL_PER_KIND:
                found[key].add(tuple(prefix))
    return {
        key: [replay(cells, forfeit=key[1] == "forfeit") for cells in sorted(seqs)]
        for key, seqs in found.items()
    }


class Command(BaseCommand):
    help = "Fill an EMPTY database with benchmark data (scenario small or large)."

    def add_arguments(self, parser):
        parser.add_argument("--scenario", choices=sorted(SCENARIOS), default="small")
        parser.add_argument(
            "--password",
            required=True,
            help="password of the viewer and mover accounts (the bench logs in)",
        )
        parser.add_argument(
            "--move-games",
            type=int,
            default=3000,
            help="in-progress self-play games of the mover (9 moves each)",
        )
        parser.add_argument("--manifest", help="write the ids the bench needs here")

    def handle(self, *args, scenario, password, move_games, manifest, **options):
        if Game.objects.exists() or get_user_model().objects.exists():
            raise CommandError(
                "The bench's seed only fills an empty database (it creates "
                "accounts with a known password): migrate a fresh one first."
            )
        rng = random.Random(7)
        with transaction.atomic():
            result = Seeder(SCENARIOS[scenario], rng, password, move_games).run()
        # Planner statistics, as a live database has them (PostgreSQL's autovacuum,
        # SQLite's PRAGMA optimize): without them SQLite reads the lobby's games
        # through the status index, scanning every game in progress.
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        result["scenario"] = scenario
        if manifest:
            with open(manifest, "w") as out:
                json.dump(result, out)
        self.stdout.write(
            f"seeded {scenario}: {result['users']} users, {result['games']} games, "
            f"{result['moves']} moves"
        )


class Seeder:
    def __init__(self, scenario: Scenario, rng, password: str, move_games: int):
        self.scenario = scenario
        self.rng = rng
        self.password = password
        self.move_games = move_games
        self.pool = sequence_pool()
        self.start = timezone.now() - timedelta(days=60)
        # (player_x id, player_o id, sequence or None for an open game)
        self.specs: list[tuple[int, int | None, Sequence | None]] = []

    def run(self) -> dict:
        viewer, mover, others = self.create_users()
        users = [viewer, *others]
        self.finished_games(users)
        page = self.add(viewer, others[0], replay((4, 0)))
        for _ in range(self.scenario.in_progress):
            x, o = self.pair(users, self.rng.randrange(10 * len(users)))
            self.add(x, o, self.rng.choice(self.pool[self.rng.randrange(5), "running"]))
        for index in range(self.scenario.open):
            self.add(others[index % len(others)], None, None)
        if not self.scenario.open:
            self.add(others[-1], None, None)
        first_pool = len(self.specs)
        for _ in range(self.move_games):
            self.add(mover, mover, replay(()))
        games = self.insert_games()
        moves = self.insert_moves(games)
        self.insert_results(games)
        return {
            "users": len(users) + 1,
            "games": len(games),
            "moves": moves,
            "viewer": VIEWER,
            "mover": MOVER,
            "page_game": games[page][0],
            "move_games": [pk for pk, _ in games[first_pool:]],
            "draw_order": DRAW_ORDER,
        }

    def create_users(self):
        User = get_user_model()
        known = make_password(self.password)
        # One hash for everyone else: hashing 1,000 passwords would take minutes.
        unusable = make_password(None)
        names = [VIEWER, MOVER] + [
            f"player{n:04d}" for n in range(1, self.scenario.users)
        ]
        User.objects.bulk_create(
            [
                User(username=name, password=known if i < 2 else unusable)
                for i, name in enumerate(names)
            ],
            batch_size=BATCH,
        )
        by_name = dict(User.objects.values_list("username", "pk"))
        # bulk_create sends no signals: each name's key as a save would store it.
        UsernameKey.objects.bulk_create(
            [
                UsernameKey(user_id=by_name[name], key=username_key(name))
                for name in names
            ],
            batch_size=BATCH,
        )
        ids = [by_name[name] for name in names]
        return ids[0], ids[1], ids[2:]

    def pair(self, users: list[int], index: int) -> tuple[int, int]:
        """Each user meets the 10 users after them: a few games per series."""
        x = users[index % len(users)]
        o = users[(index % len(users) + 1 + (index // len(users)) % 10) % len(users)]
        return x, o

    def finished_games(self, users: list[int]) -> None:
        for index in range(self.scenario.finished):
            kind = FINISHED_CYCLE[index % len(FINISHED_CYCLE)]
            x, o = self.pair(users, index)
            self.add(x, o, self.rng.choice(self.pool[kind]))

    def add(self, x: int, o: int | None, sequence: Sequence | None) -> int:
        self.specs.append((x, o, sequence))
        return len(self.specs) - 1

    def insert_series(self) -> dict[tuple[int, int], int]:
        score: dict[tuple[int, int], Counter] = {}
        for x, o, sequence in self.specs:
            if sequence is None:
                continue
            pair = (min(x, o), max(x, o))
            counter = score.setdefault(pair, Counter())
            winner = sequence.winner
            if sequence.state.status is rules.Status.DRAW:
                counter["draws"] += 1
            elif winner is not None:
                winner_id = x if winner is rules.Mark.X else o
                counter["a_wins" if winner_id == pair[0] else "b_wins"] += 1
        rows = Series.objects.bulk_create(
            [Series(player_a_id=a, player_b_id=b, **c) for (a, b), c in score.items()],
            batch_size=BATCH,
        )
        return {(row.player_a_id, row.player_b_id): row.pk for row in rows}

    def insert_games(self) -> list[tuple[int, datetime]]:
        """(id, created_at) of each game in spec order. Inserted with explicit ids
        (the database is empty) as plain rows, like the moves."""
        series = self.insert_series()
        adapt = connection.ops.adapt_datetimefield_value
        games, rows = [], []
        for pk, (x, o, sequence) in enumerate(self.specs, 1):
            created = self.start + timedelta(seconds=30 * pk)
            games.append((pk, created))
            if sequence is None:
                board, status = rules.EMPTY * rules.CELLS, GameStatus.WAITING.value
                stamp = adapt(created)
                rows.append(
                    (pk, x, None, status, board, 0, "", None, 1, None, None)
                    + (stamp, stamp, None)
                )
                continue
            state, count = sequence.state, len(sequence.cells)
            over = state.status.is_over
            forfeited = over and not state.board.status.is_over
            won = state.status in (rules.Status.X_WON, rules.Status.O_WON)
            updated = adapt(created + timedelta(seconds=10 * count))
            rows.append(
                (
                    pk,
                    x,
                    o,
                    state.status.value,
                    state.board.cells,
                    count,
                    "".join(map(str, sequence.cells)),
                    state.winning_line if won else None,
                    1 + count + (1 if forfeited else 0),
                    series[min(x, o), max(x, o)],
                    None,
                    adapt(created),
                    updated,
                    updated if over else None,
                )
            )
        fields = [
            "id",
            "player_x",
            "player_o",
            "status",
            "board",
            "move_count",
            "move_order",
            "winning_line",
            "version",
            "series",
            "rematch_of",
            "created_at",
            "updated_at",
            "finished_at",
        ]
        insert_rows(Game, fields, rows)
        with connection.cursor() as cursor:
            for sql in connection.ops.sequence_reset_sql(no_style(), [Game]):
                cursor.execute(sql)
        return games

    def insert_moves(self, games: list[tuple[int, datetime]]) -> int:
        adapt = connection.ops.adapt_datetimefield_value
        rows = [
            (
                pk,
                number,
                *rules.cell_of(cell),
                "X" if number % 2 else "O",
                adapt(created + timedelta(seconds=10 * number)),
            )
            for (pk, created), (_, _, sequence) in zip(games, self.specs, strict=True)
            if sequence is not None
            for number, cell in enumerate(sequence.cells, 1)
        ]
        fields = ["game", "sequence_number", "row", "col", "player", "created_at"]
        insert_rows(Move, fields, rows)
        return len(rows)

    def insert_results(self, games: list[tuple[int, datetime]]) -> None:
        """PlayerResult rows of the finished games, in game order (the order they
        ended), and each player's PlayerRecord counters, as the services keep them."""
        rows, counters = [], {}
        for (pk, _), (x, o, sequence) in zip(games, self.specs, strict=True):
            if sequence is None or not sequence.state.status.is_over:
                continue
            for row in result_rows(x, o, sequence.state.status.value):
                rows.append((row.player_id, pk, row.opponent_id, row.mark, row.outcome))
                record = counters.setdefault(row.player_id, dict.fromkeys(COUNTERS, 0))
                record[counter_for(row.mark, row.outcome)] += 1
        fields = ["player", "game", "opponent", "mark", "outcome"]
        insert_rows(PlayerResult, fields, rows)
        PlayerRecord.objects.bulk_create(
            [PlayerRecord(player_id=pk, **counts) for pk, counts in counters.items()],
            batch_size=BATCH,
        )


def insert_rows(model, fields: list[str], rows: list[tuple]) -> None:
    """Multi-row INSERTs of plain tuples: bulk_create spends most of its time
    preparing model instances field by field (a minute or more for 700,000 rows),
    and one statement per row is slow on PostgreSQL."""
    quote = connection.ops.quote_name
    columns = ", ".join(quote(model._meta.get_field(f).column) for f in fields)
    row_sql = f"({', '.join(['%s'] * len(fields))})"
    per_statement = 500
    with connection.cursor() as cursor:
        for start in range(0, len(rows), per_statement):
            chunk = rows[start : start + per_statement]
            cursor.execute(
                f"INSERT INTO {quote(model._meta.db_table)} ({columns}) "
                f"VALUES {', '.join([row_sql] * len(chunk))}",
                [value for row in chunk for value in row],
            )


def main() -> None:
    Command().run_from_argv(["tests.bench.seed", "seed", *sys.argv[1:]])


if __name__ == "__main__":
    main()
