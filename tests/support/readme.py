"""The README and the docs/ pages it points to, read as data: their sections and
tables, for the tests that check the code against what they document (values are
read here, never copied). The tables live in docs/: routes in routes.md, limits in
limits.md, every variable in settings.md."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
DOCS = ROOT / "docs"
README = (ROOT / "README.md").read_text()


def page(name: str) -> str:
    """The text of docs/<name>."""
    return (DOCS / name).read_text()


def documents() -> dict[str, str]:
    """The README and every page of docs/, by path from the project's root."""
    return {"README.md": README} | {
        f"docs/{path.name}": path.read_text() for path in sorted(DOCS.glob("*.md"))
    }


def section(title: str) -> str:
    """The text of `## <title>`, up to the next `## ` heading, in whichever one of
    the README and docs/ pages holds it."""
    pattern = re.compile(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", re.M | re.S)
    (found,) = [
        match[1] for text in documents().values() for match in pattern.finditer(text)
    ]
    return found


def table_rows(text: str) -> list[list[str]]:
    """The cells of each body row of the Markdown tables in `text`, stripped."""
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    return [
        [cell.strip() for cell in row.strip().strip("|").split(" | ")]
        for row in rows
        if not re.fullmatch(r"\|(\s*-+\s*\|)+", row.strip())
    ]


def routes_table() -> list[list[str]]:
    """docs/routes.md's table: route, method, what."""
    return table_rows(section("Routes"))[1:]


def limits_table() -> list[list[str]]:
    """docs/limits.md's table: what, counted per, at most, wait."""
    return table_rows(page("limits.md"))[1:]


def configuration_defaults() -> dict[str, str]:
    """Each variable of docs/settings.md's tables and its default as written for
    it: "on" or "off" for a switch, else the backticked value in its place
    ("1" and "6" for `DJANGO_DB_POOL_MIN`, `DJANGO_DB_POOL_MAX` | `1`, `6`), or
    "" where the row gives none."""
    defaults = {}
    for names_cell, default, _ in table_rows(page("settings.md")):
        names = re.findall(r"`([A-Z_]+)`", names_cell)
        if not names_cell.startswith("`"):
            continue
        if default.startswith(("off", "on")):
            defaults.update(dict.fromkeys(names, default.split()[0].strip(";,")))
            continue
        values = re.findall(r"`([^`]*)`", default)[: len(names)]
        defaults.update(zip(names, values + [""] * len(names), strict=False))
    return defaults
