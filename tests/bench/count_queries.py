"""SQL queries per request, counted in-process with the test client:
`python -m tests.bench.count_queries MANIFEST app|floor GAME` prints one JSON
object. GAME is one of the mover's seeded games, kept for this count: its moves
are played here.

Run with the settings and DATABASE_URL of the server being measured. Each page
is requested twice and the second request counted (a warm session, as under
load); the app's move POST and the floor's textbook move are counted over all
nine plies of GAME (the last ply also ends the game, and the app scores the
series) and reported at their worst.
"""

import json
import os
import sys

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tictactoe_site.settings")
django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402


def client_for(username: str) -> Client:
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(get_user_model().objects.get(username=username))
    return client


# SQLite shows its BEGIN and COMMIT, PostgreSQL's driver does not: count the
# statements that do the work, the same way on both.
TRANSACTION_CONTROL = ("BEGIN", "COMMIT", "SAVEPOINT", "RELEASE", "ROLLBACK")


def queries(client: Client, method: str, path: str, expected: int, **data) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = getattr(client, method)(path, data)
    if response.status_code != expected:
        raise SystemExit(f"{method.upper()} {path}: {response.status_code}")
    return sum(
        not query["sql"].startswith(TRANSACTION_CONTROL)
        for query in captured.captured_queries
    )


def page(client: Client, path: str) -> int:
    queries(client, "get", path, 200)
    return queries(client, "get", path, 200)


def app_counts(manifest: dict, game: int) -> dict:
    viewer, mover = client_for(manifest["viewer"]), client_for(manifest["mover"])
    page(mover, "/")
    order = manifest["draw_order"]
    moves = [
        queries(mover, "post", f"/games/{game}/move/", 302, **cell_data(order, ply))
        for ply in range(len(order))
    ]
    return {
        "game page": page(viewer, f"/games/{manifest['page_game']}/"),
        "lobby": page(viewer, "/"),
        "state.json": page(viewer, f"/games/{manifest['page_game']}/state.json"),
        "move POST": max(moves),
    }


def cell_data(order: str, ply: int) -> dict:
    row, col = divmod(int(order[ply]), 3)
    return {"row": row, "col": col, "ply": ply}


def floor_counts(manifest: dict, game: int) -> dict:
    viewer, mover = client_for(manifest["viewer"]), client_for(manifest["mover"])
    page(mover, f"/floor/{game}/")
    queries(mover, "post", f"/floor/{game}/move/", 302)
    floor_move = queries(mover, "post", f"/floor/{game}/move/", 302)
    order = manifest["draw_order"]
    textbook_moves = [
        queries(
            mover,
            "post",
            f"/floor/{game}/textbook-move/",
            302,
            **cell_data(order, ply),
        )
        for ply in range(len(order))
    ]
    return {
        "floor page": page(viewer, f"/floor/{manifest['page_game']}/"),
        "floor move": floor_move,
        "textbook move": max(textbook_moves),
    }


def main() -> None:
    manifest_path, target, game = sys.argv[1:4]
    with open(manifest_path) as source:
        manifest = json.load(source)
    counts = app_counts if target == "app" else floor_counts
    print(json.dumps(counts(manifest, int(game))))


if __name__ == "__main__":
    main()
