"""A checkout of the Makefile with a stand-in Python: make's recipes run as
written, and the stand-in records or fakes what they ask of Python."""

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def stand_in_checkout(directory: Path, python: str) -> Path:
    """The Makefile and the dependency files in `directory`, `python` (a shell
    script) as `.venv/bin/python`, nothing installed."""
    for name in ("Makefile", "pyproject.toml", "requirements.lock"):
        shutil.copy2(ROOT / name, directory / name)
    stand_in = directory / ".venv" / "bin" / "python"
    stand_in.parent.mkdir(parents=True)
    stand_in.write_text(python)
    stand_in.chmod(0o755)
    return directory
