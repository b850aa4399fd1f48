"""The README read as data: its sections and tables, for the tests that check
the code against what it documents (values are read here, never copied)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
README = (ROOT / "README.md").read_text()


def section(title: str) -> str:
    """The text of `## <title>`, up to the next `## ` heading."""
    return re.search(rf"^## {re.escape(title)}\n(.*?)^## ", README, re.M | re.S)[1]


def configuration_defaults() -> dict[str, str]:
    """Each variable of the Configuration table and its default as written for
    it: "on" or "off" for a switch, else the backticked value in its place
    ("1" and "6" for `DJANGO_DB_POOL_MIN`, `DJANGO_DB_POOL_MAX` | `1`, `6`), or
    "" where the row gives none."""
    defaults = {}
    rows = re.findall(r"^\| (`[A-Z_]+`.*?) \| (.*?) \|", section("Configuration"), re.M)
    for names_cell, default in rows:
        names = re.findall(r"`([A-Z_]+)`", names_cell)
        if default.startswith(("off", "on")):
            defaults.update(dict.fromkeys(names, default.split()[0].strip(";,")))
            continue
        values = re.findall(r"`([^`]*)`", default)[: len(names)]
        defaults.update(zip(names, values + [""] * len(names), strict=False))
    return defaults
