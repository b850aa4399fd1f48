"""A move and a page stay readable in one sitting: each executes at most
`MOST` of the product's files (games/, accounts/, tictactoe_site/), through
Django's test client after a warm-up. Run with `-s` to see the lists."""

import sys
import threading
from pathlib import Path

import pytest
from django.core.cache import caches

from games import services

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("games", "accounts", "tictactoe_site")
MOST = 12


def product_files_run(request) -> list[str]:
    """The product's files whose code ran while `request()` ran."""
    seen = set()

    def tracer(frame, event, arg):
        path = Path(frame.f_code.co_filename)
        if path.is_relative_to(ROOT):
            parts = path.relative_to(ROOT).parts
            if parts[0] in PRODUCT and "migrations" not in parts:
                seen.add("/".join(parts))
        return None  # calls only: no line events

    sys.settrace(tracer)
    threading.settrace(tracer)
    try:
        request()
    finally:
        sys.settrace(None)
        threading.settrace(None)
    return sorted(seen)


def shown(kind: str, files: list[str]) -> list[str]:
    print(f"\n{kind}: {len(files)} product files", *files, sep="\n  ")
    return files


@pytest.fixture
def started(alice, bob):
    game = services.create_game(creator=alice, opponent=bob)
    return game


def test_a_rendered_game_page_runs_few_files(started, client_for, alice):
    client = client_for(alice)
    url = started.get_absolute_url()
    assert client.get(url).status_code == 200  # warm-up

    def render():
        caches["pages"].clear()
        assert client.get(url).status_code == 200

    files = shown("game page", product_files_run(render))
    assert len(files) <= MOST, files


def test_a_move_runs_few_files(
    started, client_for, alice, bob, django_capture_on_commit_callbacks
):
    move_url = f"/games/{started.pk}/move/"

    def move(client, row: int, col: int) -> None:
        # What runs once the move commits (its signal, log line, live change)
        # counts too.
        with django_capture_on_commit_callbacks(execute=True) as after_commit:
            answer = client.post(move_url, {"row": row, "col": col})
        assert answer.status_code == 302
        assert len(after_commit) >= 1

    move(client_for(alice), 0, 0)  # warm-up: the first move picks the broker
    as_bob = client_for(bob)
    files = shown("move POST", product_files_run(lambda: move(as_bob, 1, 1)))
    started.refresh_from_db()
    assert (started.move_count, started.board) == (2, "X---O----")
    assert len(files) <= MOST, files
