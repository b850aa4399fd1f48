"""The README and docs/ are a contract: every command they show exists, and every
project path they name is there (docs/history.md and docs/performance.md, records
of the past, aside), docs/testing.md's map of promises to test modules included.
`make help` lists every target of the Makefile, and every page of docs/ is named
in the README, so none is left unfound."""

import re
import shlex
import subprocess
from importlib.util import find_spec

import pytest
from django.core.management import get_commands

from ..support.readme import README, ROOT, documents

MAKEFILE = (ROOT / "Makefile").read_text()
# The current product's documents, as one text.
CURRENT = "\n".join(
    text
    for path, text in documents().items()
    if path not in ("docs/history.md", "docs/performance.md")
)

SHELL_BLOCK = re.compile(r"```(?:sh|bash|console)\n(.*?)```", re.DOTALL)
# A path of this project in backticks: `games/rules.py`, `tests/e2e/`, `.ci/run`.
PROJECT_PATH = re.compile(
    r"`((?:accounts|games|tictactoe_site|templates|static|tests|docs|\.ci)/[\w./-]*)`"
)


def shell_commands() -> list[list[str]]:
    """Each command of the shell blocks of the README and docs/, as words,
    comments removed; one line may hold several commands joined by `&&` or `;`."""
    commands = []
    for block in SHELL_BLOCK.findall(CURRENT):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            command: list[str] = []
            for word in [*words, ";"]:
                if word in ("&&", ";", "||", "|"):
                    if command:
                        commands.append(command)
                    command = []
                else:
                    command.append(word)
    return commands


def make_targets() -> set[str]:
    return set(re.findall(r"^([\w.-]+):(?!=)", MAKEFILE, re.MULTILINE))


def phony_targets() -> set[str]:
    line = re.search(r"^\.PHONY:(.*)$", MAKEFILE, re.MULTILINE)
    return set(line[1].split())


def named_make_targets() -> list[str]:
    targets = []
    for command in shell_commands():
        if command[0] == "make":
            targets += [
                word for word in command[1:] if "=" not in word and word[0] != "-"
            ]
    return targets


def named_manage_commands() -> list[str]:
    names = []
    for command in shell_commands():
        for index, word in enumerate(command[:-1]):
            if word.endswith("manage.py"):
                names.append(command[index + 1])
    return names


def named_modules() -> list[str]:
    return [
        command[command.index("-m") + 1]
        for command in shell_commands()
        if command[0].endswith("python") and "-m" in command
    ]


def test_the_readme_shows_the_two_commands():
    (first_block, *_) = SHELL_BLOCK.findall(README)
    shown = [shlex.split(line, comments=True) for line in first_block.splitlines()]
    assert shown == [["make", "run"], ["make", "test"]]


def test_every_make_target_in_the_docs_exists():
    assert set(named_make_targets()) - make_targets() == set()


def test_every_manage_py_command_in_the_docs_exists():
    assert set(named_manage_commands()) - set(get_commands()) == set()


def test_every_python_module_in_the_docs_exists():
    assert [module for module in named_modules() if find_spec(module) is None] == []


def test_every_project_path_in_the_docs_exists():
    """A module split or renamed must be renamed in the docs too, in
    docs/testing.md's map of promises to test modules as anywhere else."""
    paths = set(PROJECT_PATH.findall(CURRENT))
    assert {"games/rules.py", "tests/project/test_readme.py"} <= paths
    assert sorted(path for path in paths if not (ROOT / path).exists()) == []


def test_the_readme_names_every_docs_page():
    pages = [page.name for page in (ROOT / "docs").glob("*.md")]
    assert "routes.md" in pages
    assert [page for page in sorted(pages) if f"`docs/{page}`" not in README] == []


@pytest.mark.processes
@pytest.mark.no_database
def test_make_help_lists_every_target():
    result = subprocess.run(
        ["make", "--no-print-directory", "help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    listed = {line.split()[1] for line in result.stdout.splitlines() if line.strip()}
    assert listed == phony_targets()
