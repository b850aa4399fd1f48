"""Every shipped language is complete and sound (docs/translating.md): each catalog
exists with its language's plural rule, translates every message (every plural form)
with nothing fuzzy and the msgid's placeholders and HTML tags, its committed .mo says
what its .po says, it holds every message the code marks, and no template shows a
word outside the translation machinery. The checks themselves are shown failing on
broken samples, so an empty list means something."""

import shutil
from io import BytesIO
from pathlib import Path

import pytest
from babel.messages.pofile import PoFileError, read_po
from django.conf import settings
from django.utils.translation import to_locale

from tests.support import catalogs
from tests.support.template_text import untranslated_in, untranslated_text

ROOT = Path(__file__).resolve().parents[2]
LOCALES = [to_locale(code) for code, _ in settings.LANGUAGES if code != "en"]
# The project's catalog (templates/), then each app's.
CATALOG_DIRS = ["tictactoe_site/locale", "games/locale", "accounts/locale"]
CATALOGS = [(directory, locale) for directory in CATALOG_DIRS for locale in LOCALES]
CATALOG_IDS = [f"{directory.split('/')[0]}-{locale}" for directory, locale in CATALOGS]

# Each language's number of plural forms and, for sample counts, the form used.
PLURAL_RULES = {
    "fr": (2, {0: 0, 1: 0, 2: 1, 5: 1, 100: 1, 1_000_000: 1}),
    "de": (2, {0: 1, 1: 0, 2: 1, 5: 1, 21: 1}),
    "es": (2, {0: 1, 1: 0, 2: 1, 5: 1, 21: 1}),
    "pt_BR": (2, {0: 0, 1: 0, 2: 1, 5: 1, 21: 1}),
    "ar": (
        6,
        {0: 0, 1: 1, 2: 2, 3: 3, 10: 3, 11: 4, 99: 4, 100: 5, 102: 5, 103: 3, 111: 4},
    ),
}
MAKE_MESSAGES = "run `make messages` (docs/translating.md)"


def po_file(directory: str, locale: str) -> Path:
    path = ROOT / directory / locale / "LC_MESSAGES" / "django.po"
    assert path.exists(), f"{path.relative_to(ROOT)} is missing: {MAKE_MESSAGES}"
    return path


def sample(text: str):
    """A catalog from .po text."""
    return read_po(BytesIO(text.encode()), abort_invalid=True)


def header(plural_forms: str, language: str = "fr") -> str:
    return (
        'msgid ""\nmsgstr ""\n'
        f'"Language: {language}\\n"\n'
        '"Content-Type: text/plain; charset=UTF-8\\n"\n'
        f'"Plural-Forms: {plural_forms}\\n"\n\n'
    )


FR = header("nplurals=2; plural=(n > 1);")
AR = header(catalogs.PLURAL_FORMS["ar"], "ar")


def plural_rule_problems(catalog, locale: str) -> list[str]:
    nplurals, examples = PLURAL_RULES[locale]
    rule = catalogs.plural_function(catalog)
    problems = []
    if catalog.num_plurals != nplurals:
        problems.append(f"nplurals={catalog.num_plurals}, {locale} has {nplurals}")
    problems += [
        f"n={n} takes form {rule(n)}, should take {form}"
        for n, form in examples.items()
        if rule(n) != form
    ]
    return problems


# --- the layout and the plural rules ---------------------------------------------


def test_the_catalog_dirs_are_the_project_s_and_each_app_s():
    """`make messages` writes where the tests read."""
    assert sorted(catalogs.catalog_dirs()) == sorted(ROOT / d for d in CATALOG_DIRS)
    assert catalogs.locales() == LOCALES


def test_every_shipped_language_has_its_plural_rule_here():
    """A language added to settings.LANGUAGES needs its rule in PLURAL_RULES."""
    assert sorted(LOCALES) == sorted(PLURAL_RULES)


@pytest.mark.parametrize("locale", sorted(PLURAL_RULES))
def test_make_messages_seeds_each_language_with_its_plural_rule(locale):
    catalog = sample(header(catalogs.PLURAL_FORMS[locale], locale))
    assert plural_rule_problems(catalog, locale) == []


@pytest.mark.parametrize("locale", ["de", "ar"])
def test_the_plural_rule_is_django_s_own_where_it_agrees_with_gettext(locale):
    """French, Spanish and Portuguese keep gettext's two forms where Django's
    compiled catalogs have a third for exact millions (catalogs.PLURAL_FORMS)."""
    ours = catalogs.plural_function(sample(header(catalogs.PLURAL_FORMS[locale])))
    djangos = catalogs.plural_function(catalogs.django_catalog(locale))
    assert [ours(n) for n in range(1200)] == [djangos(n) for n in range(1200)]


def test_the_plural_check_reports_a_wrong_rule():
    catalog = sample(header("nplurals=2; plural=(n != 1);"))
    assert plural_rule_problems(catalog, "fr") == ["n=0 takes form 1, should take 0"]
    catalog = sample(header("nplurals=2; plural=(n != 1);", "ar"))
    assert plural_rule_problems(catalog, "ar")[0] == "nplurals=2, ar has 6"


# --- the shipped catalogs --------------------------------------------------------


@pytest.mark.parametrize(("directory", "locale"), CATALOGS, ids=CATALOG_IDS)
def test_the_catalog_exists_for_its_language(directory, locale):
    catalog = catalogs.read_catalog(po_file(directory, locale))
    assert catalog.locale_identifier == locale
    assert plural_rule_problems(catalog, locale) == []


@pytest.mark.parametrize(("directory", "locale"), CATALOGS, ids=CATALOG_IDS)
def test_every_message_is_translated(directory, locale):
    catalog = catalogs.read_catalog(po_file(directory, locale))
    assert catalogs.incomplete(catalog) == []


@pytest.mark.parametrize(("directory", "locale"), CATALOGS, ids=CATALOG_IDS)
def test_every_translation_keeps_the_placeholders(directory, locale):
    catalog = catalogs.read_catalog(po_file(directory, locale))
    assert catalogs.placeholder_problems(catalog) == []


@pytest.mark.parametrize(("directory", "locale"), CATALOGS, ids=CATALOG_IDS)
def test_the_committed_mo_is_its_po_compiled(directory, locale):
    po = po_file(directory, locale)
    mo = po.with_suffix(".mo")
    assert mo.exists(), f"{mo.relative_to(ROOT)} is missing: {MAKE_MESSAGES}"
    differences = catalogs.compiled_differences(
        catalogs.read_catalog(po), catalogs.read_compiled(mo)
    )
    assert differences == [], MAKE_MESSAGES


def needs_gettext():
    if missing := catalogs.gettext_tools_missing():
        pytest.skip(
            f"reading the code's messages needs GNU gettext ({', '.join(missing)}"
            " missing): apt install gettext"
        )


@pytest.fixture(scope="module")
def code_messages(tmp_path_factory):
    """What `make messages` would find in the code now."""
    needs_gettext()
    copy = catalogs.copy_checkout(tmp_path_factory.mktemp("extract"))
    return catalogs.extracted(copy)


@pytest.mark.parametrize(("directory", "locale"), CATALOGS, ids=CATALOG_IDS)
@pytest.mark.processes
@pytest.mark.no_database
def test_the_catalog_holds_every_message_of_the_code(code_messages, directory, locale):
    path = ROOT / directory / locale / "LC_MESSAGES" / "django.po"
    committed = (
        catalogs.message_keys(catalogs.read_catalog(path)) if path.exists() else set()
    )
    gaps = catalogs.catalog_gaps(code_messages[directory], committed)
    assert gaps == [], MAKE_MESSAGES


@pytest.mark.processes
@pytest.mark.no_database
def test_a_newly_marked_message_is_missing_until_make_messages(tmp_path, code_messages):
    """The coverage check fails on a string marked in a template or in Python
    without `make messages`: it reads the sources, not the catalogs."""
    copy = catalogs.copy_checkout(tmp_path)
    with open(copy / "templates" / "base.html", "a") as file:
        file.write('{% load i18n %}{% translate "A message nobody catalogued" %}\n')
    with open(copy / "games" / "views.py", "a") as file:
        file.write(
            "\nfrom django.utils.translation import pgettext\n"
            'pgettext("board", "Another uncatalogued message")\n'
        )
    found = catalogs.extracted(copy)
    assert catalogs.catalog_gaps(
        found["tictactoe_site/locale"], code_messages["tictactoe_site/locale"]
    ) == ["not in the catalog: 'A message nobody catalogued'"]
    assert catalogs.catalog_gaps(
        found["games/locale"], code_messages["games/locale"]
    ) == ["not in the catalog: board|'Another uncatalogued message'"]
    assert catalogs.catalog_gaps(set(), {(None, "Gone")}) == [
        "no longer in the code: 'Gone'"
    ]


# --- the checks fail on broken catalogs ------------------------------------------


def test_the_completeness_check_reports_missing_fuzzy_and_short_translations():
    catalog = sample(
        AR
        + 'msgid "Play"\nmsgstr ""\n\n'
        + '#, fuzzy\nmsgid "Resign"\nmsgstr "استسلم"\n\n'
        + 'msgid "%(count)d game"\nmsgid_plural "%(count)d games"\n'
        + 'msgstr[0] "a"\nmsgstr[1] "b"\n\n'
        + 'msgid "%(count)d move"\nmsgid_plural "%(count)d moves"\n'
        + "".join(f'msgstr[{index}] "m"\n' for index in range(5))
        + 'msgstr[5] ""\n\n'
        + 'msgid "Lobby"\nmsgstr "الردهة"\n'
    )
    assert catalogs.incomplete(catalog) == [
        "not translated: 'Play'",
        "fuzzy: 'Resign'",
        "not translated: msgstr[2], msgstr[3], msgstr[4], msgstr[5]"
        " of '%(count)d game'",
        "not translated: msgstr[5] of '%(count)d move'",
    ]


def test_a_catalog_with_more_plural_forms_than_its_language_is_refused(tmp_path):
    path = tmp_path / "django.po"
    path.write_text(
        FR + 'msgid "%(count)d game"\nmsgid_plural "%(count)d games"\n'
        'msgstr[0] "a"\nmsgstr[1] "b"\nmsgstr[2] "c"\n'
    )
    with pytest.raises(PoFileError, match="more translations than num_plurals"):
        catalogs.read_catalog(path)


def test_the_completeness_check_reports_a_fuzzy_header():
    catalog = sample("#, fuzzy\n" + FR + 'msgid "Play"\nmsgstr "Jouer"\n')
    assert catalogs.incomplete(catalog) == [
        "the header is fuzzy (remove its `#, fuzzy` line)"
    ]


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        (
            '#, python-format\nmsgid "%(winner)s won"\nmsgstr "%(gagnant)s a gagné"\n',
            [
                "%(gagnant)s is not in the msgid: '%(winner)s won'",
                "%(winner)s is missing: '%(winner)s won'",
            ],
        ),
        (
            '#, python-format\nmsgid "%(winner)s won"\nmsgstr "Partie gagnée"\n',
            ["%(winner)s is missing: '%(winner)s won'"],
        ),
        (
            '#, python-format\nmsgid "%(n)d moves"\nmsgstr "%(n)s coups"\n',
            ["%(n)s should be %(n)d: '%(n)d moves'"],
        ),
        (
            '#, python-format\nmsgid "%s against %s"\nmsgstr "%s contre"\n',
            ["positional placeholders ['s'] instead of ['s', 's']: '%s against %s'"],
        ),
        (
            'msgid "Hello {name}"\nmsgstr "Bonjour {nom}"\n',
            ["braces ['nom'] instead of ['name']: 'Hello {name}'"],
        ),
        (
            'msgid "Read <a href=\\"%(url)s\\">the rules</a>"\n'
            'msgstr "Lisez <a href=\\"%(url)s\\">les règles"\n',
            [
                "HTML tags ['a'] instead of ['/a', 'a']:"
                " 'Read <a href=\"%(url)s\">the rules</a>'"
            ],
        ),
        (
            '#, python-format\nmsgid "%(count)d game"\nmsgid_plural "%(count)d games"\n'
            'msgstr[0] "%(count)d partie"\nmsgstr[1] "%(nombre)d parties"\n',
            [
                "%(nombre)d is not in the msgid: msgstr[1] of '%(count)d game'",
            ],
        ),
    ],
    ids=[
        "renamed",
        "dropped",
        "retyped",
        "positional",
        "braces",
        "unclosed-tag",
        "plural-renamed",
    ],
)
def test_the_placeholder_check_reports_a_broken_translation(entry, problem):
    assert catalogs.placeholder_problems(sample(FR + entry)) == problem


def test_the_placeholder_check_accepts_faithful_translations():
    """Reordered placeholders, a literal %%, and a plural form that says the number
    in words (Arabic's "one game", "two games") are fine."""
    forms = ["لا مباريات", "مباراة واحدة", "مباراتان"] + ["%(count)d مباراة"] * 3
    catalog = sample(
        AR
        + '#, python-format\nmsgid "%(x)s against %(o)s"\n'
        + 'msgstr "%(o)s ضد %(x)s"\n\n'
        + '#, python-format\nmsgid "100%% sure, <em>%(name)s</em>"\n'
        + 'msgstr "متأكد 100%%، <em>%(name)s</em>"\n\n'
        + '#, python-format\nmsgid "%(count)d game by %(name)s"\n'
        + 'msgid_plural "%(count)d games by %(name)s"\n'
        + "".join(
            f'msgstr[{index}] "{form} - %(name)s"\n' for index, form in enumerate(forms)
        )
    )
    assert catalogs.placeholder_problems(catalog) == []


def test_a_plural_form_may_not_drop_a_name():
    catalog = sample(
        FR
        + '#, python-format\nmsgid "%(count)d game by %(name)s"\n'
        + 'msgid_plural "%(count)d games by %(name)s"\n'
        + 'msgstr[0] "Une partie"\nmsgstr[1] "%(count)d parties de %(name)s"\n'
    )
    assert catalogs.placeholder_problems(catalog) == [
        "%(name)s is missing: msgstr[0] of '%(count)d game by %(name)s'"
    ]


SAMPLE_PO = (
    FR
    + 'msgid "Play"\nmsgstr "Jouer"\n\n'
    + 'msgctxt "board"\nmsgid "Cell"\nmsgstr "Case"\n\n'
    + '#, python-format\nmsgid "%(count)d game"\nmsgid_plural "%(count)d games"\n'
    + 'msgstr[0] "%(count)d partie"\nmsgstr[1] "%(count)d parties"\n\n'
    + '#, fuzzy\nmsgid "Resign"\nmsgstr "Abandonner"\n\n'
    + 'msgid "Lobby"\nmsgstr ""\n'
)


def test_make_messages_compiles_the_shippable_messages(tmp_path):
    """Fuzzy and untranslated messages stay out of the .mo (English shows), the
    rest is there, plurals included; compiling twice writes the same bytes."""
    po = tmp_path / "django.po"
    po.write_text(SAMPLE_PO)
    assert catalogs.compile_catalog(po) == []
    compiled = catalogs.read_compiled(tmp_path / "django.mo")
    assert catalogs.compiled_differences(catalogs.read_catalog(po), compiled) == []
    assert catalogs.message_keys(compiled) == {
        (None, "Play"),
        ("board", "Cell"),
        (None, "%(count)d game"),
    }
    first = (tmp_path / "django.mo").read_bytes()
    catalogs.compile_catalog(po)
    assert (tmp_path / "django.mo").read_bytes() == first


def test_compiling_refuses_a_broken_placeholder(tmp_path):
    po = tmp_path / "django.po"
    po.write_text(FR + '#, python-format\nmsgid "%(name)s won"\nmsgstr "%(nom)s"\n')
    assert len(catalogs.compile_catalog(po)) == 1
    assert not (tmp_path / "django.mo").exists()


def test_a_fuzzy_guess_with_old_placeholders_does_not_stop_compiling(tmp_path):
    """makemessages keeps the old translation of a changed msgid as a fuzzy
    guess; it stays out of the .mo until a translator checks it."""
    po = tmp_path / "django.po"
    po.write_text(
        FR
        + '#, fuzzy, python-format\nmsgid "%(winner)s won"\nmsgstr "%(name)s a gagné"\n'
    )
    assert catalogs.compile_catalog(po) == []
    assert (
        catalogs.message_keys(catalogs.read_compiled(tmp_path / "django.mo")) == set()
    )


def test_the_compiled_check_reports_a_stale_mo(tmp_path):
    po = tmp_path / "django.po"
    po.write_text(SAMPLE_PO)
    catalogs.compile_catalog(po)
    edited = SAMPLE_PO.replace('"Jouer"', '"Jouez"').replace(
        'msgid "Lobby"\nmsgstr ""', 'msgid "Lobby"\nmsgstr "Salon"'
    )
    edited = edited.replace('"%(count)d parties"', '"%(count)d jeux"')
    differences = catalogs.compiled_differences(
        sample(edited), catalogs.read_compiled(tmp_path / "django.mo")
    )
    assert differences == [
        "the .mo says ['%(count)d partie', '%(count)d parties'], the .po"
        " ['%(count)d partie', '%(count)d jeux']:"
        " ('%(count)d game', '%(count)d games')",
        "missing from the .mo: 'Lobby'",
        "the .mo says ['Jouer'], the .po ['Jouez']: 'Play'",
    ]
    other_rule = sample(SAMPLE_PO.replace("(n > 1)", "(n != 1)"))
    assert catalogs.compiled_differences(
        other_rule, catalogs.read_compiled(tmp_path / "django.mo")
    ) == [
        "the .mo's Plural-Forms is 'nplurals=2; plural=(n > 1);', the .po's"
        " 'nplurals=2; plural=(n != 1);'"
    ]


def test_seeding_writes_the_language_s_header_once(tmp_path):
    assert catalogs.seed(tmp_path, "ar")
    path = catalogs.po_path(tmp_path, "ar")
    catalog = catalogs.read_catalog(path)
    assert catalog.locale_identifier == "ar"
    assert plural_rule_problems(catalog, "ar") == []
    assert catalogs.incomplete(catalog) == []
    path.write_text(path.read_text() + 'msgid "Play"\nmsgstr "العب"\n')
    assert not catalogs.seed(tmp_path, "ar")
    assert "العب" in path.read_text()


def test_make_messages_empties_a_catalog_whose_messages_are_all_gone(tmp_path):
    path = tmp_path / "django.po"
    path.write_text(FR + 'msgid "Play"\nmsgstr "Jouer"\n')
    catalogs.drop_messages(path)
    assert path.read_text() == FR.rstrip("\n") + "\n"
    assert catalogs.message_keys(catalogs.read_catalog(path)) == set()


def test_make_messages_drops_the_creation_date(tmp_path):
    path = tmp_path / "django.po"
    path.write_text(
        FR.replace(
            '"Language', '"POT-Creation-Date: 2026-01-01 10:00+0000\\n"\n"Language'
        )
    )
    catalogs.drop_creation_date(path)
    assert path.read_text() == FR


# --- the templates ---------------------------------------------------------------


def test_no_template_shows_an_untranslated_word():
    reports = untranslated_in(ROOT / "templates")
    assert reports == [], "\n".join([f"{len(reports)} untranslated:", *reports])


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("<p>Your turn</p>", [(1, "Your turn")]),
        ("<p>\n  Board after {{ ply }} moves\n</p>", [(2, "Board after {…} moves")]),
        ("{% if won %}<p>You won</p>{% endif %}", [(1, "You won")]),
        ('<button title="Play here">{{ label }}</button>', [(1, 'title="Play here"')]),
        ('<img src="x.svg" alt="A board">', [(1, 'alt="A board"')]),
        ('<nav aria-label="Account"></nav>', [(1, 'aria-label="Account"')]),
        ('<input type="text" placeholder="Username">', [(1, 'placeholder="Username"')]),
        ('<input type="submit" value="Join">', [(1, 'value="Join"')]),
        ('<button type="submit" value="Join">', [(1, 'value="Join"')]),
        (
            '<meta name="description" content="Play online">',
            [(1, 'content="Play online"')],
        ),
        ("<p>{{ ip|default:'not recorded' }}</p>", [(1, "|default:'not recorded'")]),
        ('<p>{{ n|pluralize:"is,are" }}</p>', [(1, '|pluralize:"is,are"')]),
        ('<p>{{ "Nobody" }}</p>', [(1, '"Nobody"')]),
        ("<p>Caf&eacute;</p>", [(1, "Café")]),
    ],
)
def test_the_template_check_reports_untranslated_text(source, found):
    assert untranslated_text(source) == found


@pytest.mark.parametrize(
    "source",
    [
        '{% load i18n %}<p>{% translate "Your turn" %}</p>',
        "{% load i18n %}<p>{% trans 'Your turn' %}</p>",
        "{% load i18n %}<p>{% blocktranslate trimmed with n=ply %}\n"
        "  Board after {{ n }} moves\n{% endblocktranslate %}</p>",
        "{% load i18n %}{% blocktranslate count n=ply %}One move{% plural %}"
        "{{ n }} moves{% endblocktranslate %}",
        '{% load i18n %}<button title="{% translate "Play here" %}">X</button>',
        "{% load i18n %}<nav aria-label=\"{% translate 'Account' %}\"></nav>",
        '<input type="hidden" name="next" value="lobby">',
        '<input type="checkbox" value="on">',
        '<a href="/lobby/" class="button small" data-key="Home">{{ label }}</a>',
        "<p>tictactoe · X — O</p>",
        "<p>{{ cell|default:'·' }} {{ when|date:'j M Y' }} {{ _('Nobody') }}</p>",
        "<script>const message = 'Not shown';</script><style>p::after"
        " { content: 'Nor this'; }</style>",
        "<!-- An HTML comment --><p>{# A template comment #}</p>",
        "{% comment %}A comment block{% endcomment %}<p>&times; &nbsp;</p>",
        "{% block title %}tictactoe{% endblock %}{% url 'lobby' as lobby %}",
    ],
)
def test_the_template_check_passes_translated_text_names_and_symbols(source):
    assert untranslated_text(source) == []


def test_the_template_check_reads_plain_text_templates_line_by_line():
    source = (
        "{% load i18n %}{% autoescape off %}{% translate 'Hello' %} {{ name }},\n"
        "\n"
        "- {{ x }} (X) vs {{ o }} (O): {{ url }}\n"
        "Stop these emails: {{ link }}\n"
        "{% endautoescape %}"
    )
    assert untranslated_text(source, html=False) == [
        (3, "- {…} (X) vs {…} (O): {…}"),
        (4, "Stop these emails: {…}"),
    ]


def test_the_template_check_names_file_and_line(tmp_path):
    (tmp_path / "templates" / "games").mkdir(parents=True)
    (tmp_path / "templates" / "games" / "page.html").write_text(
        "{% load i18n %}\n<h1>{% translate 'Lobby' %}</h1>\n<p>Open games</p>\n"
    )
    (tmp_path / "templates" / "subject.txt").write_text("[tictactoe] Your move\n")
    shutil.copy(
        tmp_path / "templates" / "subject.txt", tmp_path / "templates" / "notes.md"
    )
    assert untranslated_in(tmp_path / "templates") == [
        "templates/games/page.html:3: Open games",
        "templates/subject.txt:1: [tictactoe] Your move",
    ]
