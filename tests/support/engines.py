"""Tests that only mean something on one database engine, or run in one pass.

`@pytest.mark.postgresql_only` marks a test that needs the PostgreSQL pass (for
example because it runs PostgreSQL servers of its own); `@pytest.mark.sqlite_only`
one about SQLite itself (its query planner, say). On the other pass such a test is
deselected, and the collection report says so and why: it is not skipped, so it
never looks like a test that ran.

A test whose outcome cannot depend on the pass's database runs in the SQLite pass
only, the one every machine has: a test in this process that asks for no
database (pytest-django refuses it one), one whose server processes share the
`backend` fixture's database (tests/support/hosts.py: each broker's, as a
parameter), one marked `@pytest.mark.no_database` whose processes use none of
the pass's (make, a stand-in checkout), and a browser test, which checks what
the browser shows and does: the pages' queries run on both engines in the
in-process tests, and live updates cross every broker in
tests/fleet/test_live_hosts.py and the fleet's tests, in the stream format the
browser reads whatever the broker.

The hooks are imported by tests/conftest.py.
"""

from django.conf import settings

# marker -> the engine whose pass runs the test
MARKERS = {
    "postgresql_only": "postgresql",
    "sqlite_only": "sqlite3",
    # Its processes use no database of the pass (make, a stand-in checkout).
    "no_database": "sqlite3",
}
_deselected: list[str] = []


def engine() -> str:
    return settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]


def pytest_configure(config):
    for marker, name in MARKERS.items():
        config.addinivalue_line(
            "markers", f"{marker}: runs in the {name} pass only; deselected on others"
        )


def _runs_elsewhere(item) -> bool:
    if engine() != "sqlite3" and not _uses_the_pass_database(item):
        return True
    return any(
        item.get_closest_marker(marker) and name != engine()
        for marker, name in MARKERS.items()
    )


def _uses_the_pass_database(item) -> bool:
    fixtures = getattr(item, "fixturenames", ())
    if "backend" in fixtures or "browser" in fixtures:
        return False
    # pytest-django sets the test database up for the `db` fixtures and the
    # django_db mark only; a test's served apps take a database of the pass's.
    return (
        item.get_closest_marker("processes") is not None
        or item.get_closest_marker("django_db") is not None
        or "django_db_setup" in fixtures
    )


def pytest_collection_modifyitems(config, items):
    kept, dropped = [], []
    for item in items:
        (dropped if _runs_elsewhere(item) else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
        _deselected[:] = [item.nodeid for item in dropped]


def pytest_report_collectionfinish(config, start_path, items):
    if not _deselected:
        return []
    return [
        f"deselected {len(_deselected)} test(s) on {engine()}: they run in "
        "another pass of make test (tests/support/engines.py says which)",
        *(f"  {nodeid}" for nodeid in _deselected),
    ]
