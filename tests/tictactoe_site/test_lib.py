"""tictactoe_site.lib, the web helpers the apps share: one way to answer with an
error page, work handed off until after the response, and the boundary they
keep (no app reaches into the server; only error_pages renders error.html)."""

import ast
from pathlib import Path

from django.test import RequestFactory

from tictactoe_site.lib import deferred
from tictactoe_site.lib.error_pages import error_page

ROOT = Path(__file__).resolve().parents[2]
APPS = ("games", "accounts")
# The server: what runs the apps, never what they import (tictactoe_site.lib).
SERVER = {
    "tictactoe_site.server.asgi",
    "tictactoe_site.server.bridge",
    "tictactoe_site.server.serve",
    "tictactoe_site.wsgi",
}


def sources(*packages: str) -> list[Path]:
    return sorted(
        path
        for package in packages
        for path in (ROOT / package).rglob("*.py")
        if "migrations" not in path.parts
    )


def imported_modules(path: Path) -> set[str]:
    """The absolute module names `path` imports (`from x import y` gives x and
    x.y: y may be a module)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_error_page_answers_the_status_with_title_and_message():
    request = RequestFactory().get("/somewhere/")
    response = error_page(
        request, title="Not joined", message="This game is full.", status=409
    )
    assert response.status_code == 409
    html = response.content.decode()
    assert "<h1>Not joined</h1>" in html
    assert "This game is full." in html


def test_only_error_pages_renders_the_error_template():
    """Every readable refusal goes through error_page(): a page that rendered
    error.html itself could drift from the others."""
    renderers = [
        str(path.relative_to(ROOT))
        for path in sources(*APPS, "tictactoe_site")
        if '"error.html"' in path.read_text()
    ]
    assert renderers == ["tictactoe_site/lib/error_pages.py"]


def test_the_checks_read_the_apps_sources():
    names = {str(path.relative_to(ROOT)) for path in sources(*APPS)}
    assert {"games/views.py", "accounts/middleware.py"} <= names


def test_no_app_and_no_helper_imports_the_server():
    importers = {
        str(path.relative_to(ROOT)): sorted(found)
        for path in sources(*APPS, "tictactoe_site/lib")
        if (found := imported_modules(path) & SERVER)
    }
    assert importers == {}


def test_the_import_check_sees_a_from_import_of_the_server(tmp_path):
    source = tmp_path / "sample.py"
    source.write_text("from tictactoe_site.server.bridge import DEFER\nimport os\n")
    assert imported_modules(source) & SERVER == {"tictactoe_site.server.bridge"}
    source.write_text("from tictactoe_site.server import bridge\n")
    assert imported_modules(source) & SERVER == {"tictactoe_site.server.bridge"}


def test_defer_runs_the_work_at_once_without_the_server():
    done = []
    request = RequestFactory().get("/")
    deferred.defer(request, lambda: done.append("ran"))
    assert done == ["ran"]


def test_defer_hands_the_work_to_the_server_when_it_offers_to_run_it_later():
    done, queued = [], []
    request = RequestFactory().get("/", **{deferred.DEFER: queued.append})
    deferred.defer(request, lambda: done.append("ran"))
    assert done == []
    assert len(queued) == 1
    queued[0]()
    assert done == ["ran"]
