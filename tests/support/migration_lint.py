"""`make lint`'s migration check: `python -m tests.support.migration_lint` runs
django-migration-linter's `lintmigrations` with tests/settings_migration_lint.py,
which refuses a migration the hosts still on the previous release cannot run
(docs/operations.md, "Releases"). The linter asks a PostgreSQL server for the
SQL (TEST_POSTGRES_URL, as make test's second pass): where none answers, the
check says so and passes, unless REQUIRE_POSTGRES=1 (CI) makes that a failure.
"""

import os
import sys

import psycopg

SETTINGS = "tests.settings_migration_lint"


def answers(url: str) -> bool:
    try:
        psycopg.connect(url, dbname="postgres", connect_timeout=3).close()
    except psycopg.OperationalError:
        return False
    return True


def main() -> int:
    url = os.environ.get("TEST_POSTGRES_URL", "")
    if not (url and answers(url)):
        where = f"no PostgreSQL answers at TEST_POSTGRES_URL={url!r}"
        if os.environ.get("REQUIRE_POSTGRES") == "1":
            print(f"migration lint: {where} (REQUIRE_POSTGRES=1)", file=sys.stderr)
            return 1
        print(f"== migration lint skipped: {where} (start PostgreSQL or set it)")
        return 0
    os.environ["DJANGO_SETTINGS_MODULE"] = SETTINGS
    from django.core.management import execute_from_command_line

    print("lintmigrations (django-migration-linter, PostgreSQL's SQL)")
    execute_from_command_line(["manage.py", "lintmigrations"])  # exits 1 if refused
    return 0


if __name__ == "__main__":
    sys.exit(main())
