"""Tests that only mean something on one database engine.

`@pytest.mark.postgresql_only` marks a test that needs the PostgreSQL pass (for
example because it runs PostgreSQL servers of its own); `@pytest.mark.sqlite_only`
one about SQLite itself (its query planner, say). On the other pass such a test is
deselected, and the collection report says so and why: it is not skipped, so it
never looks like a test that ran.

The hooks are imported by tests/conftest.py.
"""

from django.conf import settings

# marker -> the engine whose pass runs the test
MARKERS = {"postgresql_only": "postgresql", "sqlite_only": "sqlite3"}
_deselected: list[str] = []


def engine() -> str:
    return settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]


def pytest_configure(config):
    for marker, name in MARKERS.items():
        config.addinivalue_line(
            "markers", f"{marker}: runs in the {name} pass only; deselected on others"
        )


def _runs_elsewhere(item) -> bool:
    return any(
        item.get_closest_marker(marker) and name != engine()
        for marker, name in MARKERS.items()
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
        f"deselected {len(_deselected)} test(s) for another database engine on "
        f"{engine()}: they run in that engine's pass of make test",
        *(f"  {nodeid}" for nodeid in _deselected),
    ]
