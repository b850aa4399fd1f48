"""A next release, made by a test in a copy of the checkout
(tests/support/fleet.py's `copy_checkout`): a migration written into an app,
the model and template changes that go with it, and `make release` run from
the copy. For tests/fleet/test_release.py (a release under play) and
tests/project/test_migration_lint.py (what `make lint` lets through)."""

import re
import subprocess
import sys
from pathlib import Path

MIGRATION = """from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = {atomic}
    dependencies = [("{app}", "{after}")]
    operations = [{operations}]
"""
NUMBERED = re.compile(r"^(\d{4})_\w+\.py$")

# The expand step tests/fleet/test_release.py releases: a column old hosts do not
# know, which PostgreSQL fills in for their inserts; the new game page shows it.
NOTE = "expanded"
EXPAND_OPERATION = (
    'migrations.AddField("game", "release_note", '
    f'models.CharField(max_length=20, db_default="{NOTE}"))'
)


def latest_migration(checkout: Path, app: str) -> str:
    """The name of `app`'s last migration in `checkout` (their history is a line)."""
    names = [p.stem for p in (checkout / app / "migrations").glob("*.py")]
    return max(name for name in names if NUMBERED.match(f"{name}.py"))


def write_migration(
    checkout: Path,
    app: str,
    name: str,
    operations: str,
    *,
    after: str,
    imports: str = "",
    atomic: bool = True,
) -> Path:
    """`app`'s migration `name` in `checkout`, after migration `after`, running
    `operations` (source text: django.db's `migrations` and `models` in scope,
    and what `imports` imports)."""
    path = checkout / app / "migrations" / f"{name}.py"
    text = MIGRATION.format(app=app, after=after, operations=operations, atomic=atomic)
    path.write_text(imports + text)
    return path


def replace_once(path: Path, old: str, new: str) -> None:
    """`old` replaced by `new` in the file at `path`, where it occurs exactly once."""
    text = path.read_text()
    assert text.count(old) == 1, f"{old!r} in {path}: {text.count(old)} times"
    path.write_text(text.replace(old, new))


def expand_game(checkout: Path) -> str:
    """The expand step in `checkout`: Game.release_note (a database default),
    its migration, and the game page naming it (data-release-note="expanded"):
    what a page of the new code carries. Returns the migration's name."""
    after = latest_migration(checkout, "games")
    name = f"{int(after[:4]) + 1:04d}_game_release_note"
    write_migration(checkout, "games", name, EXPAND_OPERATION, after=after)
    replace_once(
        checkout / "games/models.py",
        "\n    objects = GameManager()\n",
        f'\n    release_note = models.CharField(max_length=20, db_default="{NOTE}")\n'
        "\n    objects = GameManager()\n",
    )
    replace_once(
        checkout / "templates/games/game_detail.html",
        'data-game-id="{{ game.pk }}"',
        'data-game-id="{{ game.pk }}" data-release-note="{{ game.release_note }}"',
    )
    return name


def new_code_served(body: str) -> bool:
    """Whether a game page came from the expanded release (it names the note)."""
    return f'data-release-note="{NOTE}"' in body


def make_release(checkout: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """`make release` (migrate under the lock, collectstatic) run from `checkout`."""
    return subprocess.run(
        ["make", "--no-print-directory", f"PYTHON={sys.executable}", "release"],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
