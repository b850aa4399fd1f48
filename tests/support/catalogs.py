"""The translation catalogs: where they live, what `make messages` does to them, and
the checks tests/project/test_translations.py runs on them.

`make messages` runs `python -m tests.support.catalogs`, which

1. seeds each missing `<dir>/<locale>/LC_MESSAGES/django.po` with a header of the
   plural rule below, so that `makemessages` merges into it (a catalog it creates
   itself would get Django's header and, for Arabic, two plural slots instead of
   six);
2. runs `manage.py makemessages` for every language of `settings.LANGUAGES` but
   English (needs GNU gettext; without it, says so and only compiles);
3. drops the `POT-Creation-Date` header, which would change every catalog at every
   run, so a diff shows only messages that changed;
4. compiles every .po to its .mo with babel (pure Python: a fresh checkout needs no
   GNU gettext, and the .mo files are committed), skipping fuzzy and incomplete
   messages and failing on a broken placeholder or a wrong number of plural forms.

The checks return lists of problems, each naming its message, so a failing test
says what to fix.
"""

import gettext
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from babel.messages.catalog import Catalog, Message
from babel.messages.mofile import read_mo, write_mo
from babel.messages.pofile import read_po

ROOT = Path(__file__).resolve().parent.parent.parent
DOMAIN = "django"

# The plural rule of each shipped language: GNU gettext's, the two-form rules that
# allauth's catalogs also carry. Django's own compiled French, Spanish and
# Portuguese (Brazil) catalogs have a third form, CLDR's "many" for exact
# millions, which a game's counts never reach; German and Arabic are as Django's.
# (Django keeps each catalog with its own rule, so the two kinds mix.) A language
# not listed gets the rule Django's own catalog for it runs.
PLURAL_FORMS = {
    "fr": "nplurals=2; plural=(n > 1);",
    "de": "nplurals=2; plural=(n != 1);",
    "es": "nplurals=2; plural=(n != 1);",
    "pt_BR": "nplurals=2; plural=(n > 1);",
    "ar": "nplurals=6; plural=(n==0 ? 0 : n==1 ? 1 : n==2 ? 2 : "
    "n%100>=3 && n%100<=10 ? 3 : n%100>=11 && n%100<=99 ? 4 : 5);",
}

# What makemessages reads: our code and templates, not the tests, the virtualenv
# (hidden directories are skipped anyway) or generated files.
MAKEMESSAGES_OPTIONS = [
    "--no-obsolete",
    # File names without line numbers: translators see where a message comes
    # from, and editing a file does not renumber every catalog.
    "--add-location=file",
    *(
        f"--ignore={pattern}"
        for pattern in ("node_modules", "tests", "staticfiles", "artifacts", "backups")
    ),
]


def locales() -> list[str]:
    """The locale names (pt_BR) of every shipped language but English."""
    from django.conf import settings
    from django.utils.translation import to_locale

    return [to_locale(code) for code, _ in settings.LANGUAGES if code != "en"]


def catalog_dirs() -> list[Path]:
    """The project's catalog (LOCALE_PATHS: the messages of templates/) and each of
    our apps' own locale/ directory."""
    from django.apps import apps
    from django.conf import settings

    # Installed packages are not ours, even with the virtualenv inside ROOT.
    installed = Path(sys.prefix).resolve()
    dirs = [Path(path).resolve() for path in settings.LOCALE_PATHS]
    for config in apps.get_app_configs():
        path = Path(config.path).resolve() / "locale"
        ours = path.is_relative_to(ROOT) and not path.is_relative_to(installed)
        if ours and path.is_dir():
            dirs.append(path)
    return dirs


def po_path(directory: Path, locale: str) -> Path:
    return directory / locale / "LC_MESSAGES" / f"{DOMAIN}.po"


def plural_forms_for(locale: str) -> str:
    if locale in PLURAL_FORMS:
        return PLURAL_FORMS[locale]

    return django_catalog(locale).plural_forms


def django_catalog(locale: str) -> Catalog:
    """Django's own compiled catalog for locale (what Django runs: its .po
    headers are not always up to date)."""
    import django

    directory = Path(django.__file__).parent / "conf" / "locale"
    return read_compiled(po_path(directory, locale).with_suffix(".mo"))


def read_catalog(path: Path) -> Catalog:
    with open(path, "rb") as file:
        return read_po(file, abort_invalid=True)


def read_compiled(path: Path) -> Catalog:
    with open(path, "rb") as file:
        return read_mo(file)


# --- what `make messages` does ---------------------------------------------------


def seed(directory: Path, locale: str) -> bool:
    """Write a header-only catalog where none is; True if it wrote one."""
    path = po_path(directory, locale)
    if path.exists():
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "# tictactoe's messages: fill in each msgstr, then run make messages.\n"
        'msgid ""\n'
        'msgstr ""\n'
        '"Project-Id-Version: tictactoe\\n"\n'
        f'"Language: {locale}\\n"\n'
        '"MIME-Version: 1.0\\n"\n'
        '"Content-Type: text/plain; charset=UTF-8\\n"\n'
        '"Content-Transfer-Encoding: 8bit\\n"\n'
        f'"Plural-Forms: {plural_forms_for(locale)}\\n"\n',
        encoding="utf-8",
    )
    return True


def gettext_tools_missing() -> list[str]:
    return [
        tool for tool in ("xgettext", "msguniq", "msgmerge") if not shutil.which(tool)
    ]


def makemessages(root: Path, locale_names: list[str], *, keep_pot=False) -> None:
    """`manage.py makemessages` in the checkout at root (GNU gettext needed);
    keep_pot leaves a django.pot in each catalog dir that has messages."""
    # Without settings makemessages still runs, but ignores LOCALE_PATHS and
    # drops the messages of templates/: development settings load with nothing
    # else set (no key, no .env in a copy), and this serves nothing.
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tictactoe_site.settings",
        "DJANGO_DEBUG": "1",
    }
    subprocess.run(
        [
            sys.executable,
            "manage.py",
            "makemessages",
            *(f"--locale={name}" for name in locale_names),
            *MAKEMESSAGES_OPTIONS,
            *(["--keep-pot"] if keep_pot else []),
            "--verbosity=0",
        ],
        cwd=root,
        env=env,
        check=True,
    )


def drop_messages(path: Path) -> None:
    """Keep only the header (the first entry) of a catalog."""
    text = path.read_text(encoding="utf-8")
    header = text.split("\n\n", 1)[0] + "\n"
    if header != text:
        path.write_text(header, encoding="utf-8")


POT_CREATION_DATE = re.compile(r'^"POT-Creation-Date: [^"]*\\n"\n', re.MULTILINE)


def drop_creation_date(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    tidy = POT_CREATION_DATE.sub("", text, count=1)
    if tidy != text:
        path.write_text(tidy, encoding="utf-8")


# The .mo header's date, fixed so that compiling an unchanged catalog writes the
# same bytes (babel would write the time of the compilation).
MO_DATE = datetime(2000, 1, 1, tzinfo=UTC)


def compile_catalog(path: Path) -> list[str]:
    """Write the .mo beside the .po: only messages translated in full and not fuzzy
    (the others fall back to English). Returns the errors instead if babel's checks
    (placeholders, number of plural forms) find any in those. (A fuzzy guess that
    msgmerge made for a changed msgid often has the old placeholders: it waits.)"""
    catalog = read_catalog(path)
    for message in messages(catalog):
        if message.fuzzy or not is_translated(message):
            catalog.delete(message.id, context=message.context)
    errors = [
        f"{path}: {message_name(message)}: {error}"
        for message, message_errors in catalog.check()
        for error in message_errors
    ]
    if errors:
        return errors
    catalog.creation_date = MO_DATE
    with open(path.with_suffix(".mo"), "wb") as file:
        write_mo(file, catalog)
    return []


def main() -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tictactoe_site.settings")
    os.environ["DJANGO_DEBUG"] = "1"  # settings without a key or .env; serves nothing
    import django

    django.setup()
    names, dirs = locales(), catalog_dirs()
    for directory in dirs:
        for name in names:
            if seed(directory, name):
                print(f"New catalog: {po_path(directory, name).relative_to(ROOT)}")
    if missing := gettext_tools_missing():
        print(
            f"makemessages needs GNU gettext ({', '.join(missing)} missing:"
            " apt install gettext); compiling the catalogs as they are."
        )
    else:
        makemessages(ROOT, names, keep_pot=True)
        for directory in dirs:
            pot = directory / f"{DOMAIN}.pot"
            if pot.exists():
                pot.unlink()
            else:  # no message left here: makemessages leaves its catalogs alone
                for name in names:
                    drop_messages(po_path(directory, name))
    errors = []
    for directory in dirs:
        for name in names:
            path = po_path(directory, name)
            drop_creation_date(path)
            errors += compile_catalog(path)
            if left := len(incomplete(read_catalog(path))):
                print(f"{path.relative_to(ROOT)}: {left} to translate or check")
    for error in errors:
        print(error, file=sys.stderr)
    return 1 if errors else 0


# --- the checks ------------------------------------------------------------------


def message_name(message: Message) -> str:
    msgid = message.id[0] if message.pluralizable else message.id
    return repr(msgid) if message.context is None else f"{message.context}|{msgid!r}"


def forms(message: Message) -> list[str]:
    """The msgstr, as a list of its forms (one for a singular message)."""
    if isinstance(message.string, str):
        return [message.string]
    return list(message.string)


def is_translated(message: Message) -> bool:
    return all(forms(message))


def messages(catalog: Catalog) -> list[Message]:
    """The messages, without the header."""
    return [message for message in catalog if message.id]


def incomplete(catalog: Catalog) -> list[str]:
    """Messages not ready to ship: an empty msgstr, or plural form, or fuzzy. (A
    plural message with fewer forms than the language has reads as one with
    empty forms; read_catalog refuses one with more.)"""
    problems = []
    if catalog.fuzzy:
        problems.append("the header is fuzzy (remove its `#, fuzzy` line)")
    for message in messages(catalog):
        name = message_name(message)
        if message.fuzzy:
            problems.append(f"fuzzy: {name}")
        if not message.pluralizable and not message.string:
            problems.append(f"not translated: {name}")
        elif message.pluralizable and not is_translated(message):
            empty = [
                f"msgstr[{i}]" for i, form in enumerate(forms(message)) if not form
            ]
            problems.append(f"not translated: {', '.join(empty)} of {name}")
    return problems


# %(name)s, %s, %d, %.2f ...; %% is a literal percent sign.
PERCENT = re.compile(
    r"%(?:\((?P<name>[^)]*)\))?[#0 +-]*(?:\*|\d+)?(?:\.(?:\*|\d+))?"
    r"(?P<type>[diouxXeEfFgGcrsa%])"
)
BRACES = re.compile(r"(?<!\{)\{(\w*)\}(?!\})")
TAG = re.compile(r"<(/?)([a-zA-Z][\w-]*)")
INTEGER_TYPES = {"d", "i"}


def placeholders(text: str, *, percent: bool) -> tuple[dict, list, Counter, Counter]:
    """Named %-placeholders {name: type}, positional ones [type, ...], {name}
    braces and HTML tags (`a`, `/a`) of one string."""
    named: dict[str, str] = {}
    positional: list[str] = []
    if percent:
        for match in PERCENT.finditer(text):
            if match["type"] == "%":
                continue
            if match["name"] is not None:
                named[match["name"]] = match["type"]
            else:
                positional.append(match["type"])
    braces = Counter(BRACES.findall(text))
    tags = Counter(closing + name.lower() for closing, name in TAG.findall(text))
    return named, positional, braces, tags


def uses_percent(message: Message) -> bool:
    sources = message.id if message.pluralizable else (message.id,)
    return "python-format" in message.flags or any(
        PERCENT.search(source) and "%(" in source for source in sources
    )


def placeholder_problems(catalog: Catalog) -> list[str]:
    """Translations whose placeholders differ from their msgid's: the same named
    %-placeholders with the same types, as many positional ones, the same {name}
    braces and the same HTML tags. A plural form may leave out an integer
    placeholder (the count: Arabic says "one browser", "two browsers" without a
    number), and a placeholder in only one of msgid and msgid_plural is optional.
    A form that stands for one count alone (Arabic's 0, 1 and 2) may leave out one
    placeholder of any type: a template's count is a %(name)s."""
    problems = []
    single = single_count_forms(catalog)
    for message in messages(catalog):
        percent = uses_percent(message)
        name = message_name(message)
        sources = message.id if message.pluralizable else (message.id,)
        parsed = [placeholders(source, percent=percent) for source in sources]
        for index, translation in enumerate(forms(message)):
            if not translation:
                continue
            named, positional, braces, tags = placeholders(translation, percent=percent)
            label = f"msgstr[{index}] of {name}" if message.pluralizable else name
            may_drop = message.pluralizable and index in single
            problems += _compare(
                parsed, named, positional, braces, tags, label, may_drop=may_drop
            )
    return problems


def single_count_forms(catalog: Catalog) -> set[int]:
    """The plural forms the catalog's rule uses for exactly one count."""
    rule = plural_function(catalog)
    used = Counter(rule(n) for n in range(1000))
    return {form for form, counts in used.items() if counts == 1}


def _compare(
    sources, named, positional, braces, tags, label, *, may_drop=False
) -> list[str]:
    problems = []
    allowed_named = {key: kind for source in sources for key, kind in source[0].items()}
    required_named = {
        key
        for key in set.intersection(*(set(source[0]) for source in sources))
        if len(sources) == 1 or allowed_named[key] not in INTEGER_TYPES
    }
    for key, kind in sorted(named.items()):
        if key not in allowed_named:
            problems.append(f"%({key}){kind} is not in the msgid: {label}")
        elif kind != allowed_named[key]:
            problems.append(
                f"%({key}){kind} should be %({key}){allowed_named[key]}: {label}"
            )
    missing = sorted(required_named - set(named))
    if may_drop and len(missing) == 1:
        missing = []
    for key in missing:
        problems.append(f"%({key}){allowed_named[key]} is missing: {label}")
    expected_positional = sources[-1][1]
    if positional != expected_positional:
        problems.append(
            f"positional placeholders {positional} instead of"
            f" {expected_positional}: {label}"
        )
    allowed_braces = set().union(*(source[2] for source in sources))
    required_braces = set.intersection(*(set(source[2]) for source in sources))
    if not set(braces) <= allowed_braces or not required_braces <= set(braces):
        problems.append(
            f"braces {sorted(braces)} instead of {sorted(allowed_braces)}: {label}"
        )
    expected_tags = sources[-1][3]
    if tags != expected_tags:
        problems.append(
            f"HTML tags {sorted(tags.elements())} instead of"
            f" {sorted(expected_tags.elements())}: {label}"
        )
    return problems


def plural_function(catalog: Catalog):
    """The catalog's plural rule as a function of n, the way gettext runs it."""
    return gettext.c2py(catalog.plural_expr)


def compiled_differences(po: Catalog, mo: Catalog) -> list[str]:
    """Where a compiled catalog does not hold exactly the shippable messages of its
    .po (translated in full, not fuzzy), or holds another plural rule."""
    problems = []
    if (mo.num_plurals, mo.plural_expr) != (po.num_plurals, po.plural_expr):
        problems.append(
            f"the .mo's Plural-Forms is {mo.plural_forms!r}, the .po's"
            f" {po.plural_forms!r}"
        )
    expected = {
        (message.context, _key(message)): forms(message)
        for message in messages(po)
        if is_translated(message) and not message.fuzzy
    }
    compiled = {
        (message.context, _key(message)): forms(message) for message in messages(mo)
    }
    for key in sorted(expected.keys() | compiled.keys(), key=lambda key: str(key[1])):
        if key not in compiled:
            problems.append(f"missing from the .mo: {key[1]!r}")
        elif key not in expected:
            problems.append(f"in the .mo, not translated in the .po: {key[1]!r}")
        elif compiled[key] != expected[key]:
            problems.append(
                f"the .mo says {compiled[key]!r}, the .po {expected[key]!r}: {key[1]!r}"
            )
    return problems


def _key(message: Message) -> str | tuple[str, ...]:
    return tuple(message.id) if message.pluralizable else message.id


def message_keys(catalog: Catalog) -> set[tuple[str | None, str]]:
    """(context, msgid) of every message."""
    return {
        (message.context, message.id[0] if message.pluralizable else message.id)
        for message in messages(catalog)
    }


def copy_checkout(tmp: Path) -> Path:
    """A copy of this checkout's sources in tmp, without catalogs, tests or
    generated files, for makemessages to read without touching this one."""
    copy = tmp / "checkout"
    ignored = shutil.ignore_patterns(
        ".*", "node_modules", "tests", "staticfiles", "artifacts", "backups",
        "__pycache__", "db.sqlite3*", "*.po", "*.mo",
    )  # fmt: skip
    shutil.copytree(ROOT, copy, ignore=ignored)
    return copy


def extracted(copy: Path) -> dict[str, set[tuple[str | None, str]]]:
    """What makemessages finds in the sources of a copy_checkout():
    {catalog dir relative to the checkout: message keys}."""
    locale = locales()[0]
    makemessages(copy, [locale])
    found = {}
    for directory in catalog_dirs():
        relative = str(directory.relative_to(ROOT))
        path = po_path(copy / relative, locale)
        found[relative] = message_keys(read_catalog(path)) if path.exists() else set()
    return found


def catalog_gaps(
    extracted: set[tuple[str | None, str]], committed: set[tuple[str | None, str]]
) -> list[str]:
    """Messages of the code missing from a catalog, and messages of the catalog the
    code no longer has: either way, `make messages` was not run."""
    return [
        f"not in the catalog: {_name(key)}"
        for key in sorted(extracted - committed, key=str)
    ] + [
        f"no longer in the code: {_name(key)}"
        for key in sorted(committed - extracted, key=str)
    ]


def _name(key: tuple[str | None, str]) -> str:
    context, msgid = key
    return repr(msgid) if context is None else f"{context}|{msgid!r}"


if __name__ == "__main__":
    sys.exit(main())
