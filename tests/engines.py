"""Tests that only mean something on one database engine.

`@pytest.mark.postgresql_only` marks a test that needs the PostgreSQL pass (for
example because it runs PostgreSQL servers of its own). On the other pass it is
deselected, and the collection report says so and why: it is not skipped, so it
never looks like a test that ran.

The hooks are imported by tests/conftest.py.
"""

from django.conf import settings

MARKER = "postgresql_only"
_deselected: list[str] = []


def on_postgresql() -> bool:
    return settings.DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        f"{MARKER}: runs in the PostgreSQL pass only; deselected on the others",
    )


def pytest_collection_modifyitems(config, items):
    if on_postgresql():
        return
    kept, dropped = [], []
    for item in items:
        (dropped if item.get_closest_marker(MARKER) else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
        _deselected[:] = [item.nodeid for item in dropped]


def pytest_report_collectionfinish(config, start_path, items):
    if not _deselected:
        return []
    return [
        f"deselected {len(_deselected)} PostgreSQL-only test(s) on "
        f"{settings.DATABASES['default']['ENGINE'].rsplit('.', 1)[-1]}: they run "
        "in the PostgreSQL pass (make test-postgres)",
        *(f"  {nodeid}" for nodeid in _deselected),
    ]
