"""What a reader of each language sees on the main pages, rendered for a player
with games behind them: no raw zone id (America/Sao_Paulo) in what a person
reads, no number before an Arabic singular or dual ("2 مباراتان", "منذ 2
ثانيتين"), no French colon without its no-break space, and no English left
(a text the English page shows the same, beyond names and numbers).

The expected words are literals of the test, written by a reader of each
language, never read from the catalogs."""

import re
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser

import pytest
from django.core import mail
from django.template.loader import render_to_string
from django.test import Client
from django.utils import timezone, translation

from accounts.models import Preferences
from games.models import Game
from tests.conftest import X_WINS_ROW_0, new_game
from tests.support.account_client import NEW_PASSWORD, PASSWORD, confirmed
from tictactoe_site.lib import times

LANGUAGES = ["fr", "de", "es", "pt-br", "ar"]
PLAYER_PAGES = [
    "/",
    "/players/alice/",
    "/games/archive/",
    "/accounts/preferences/",
    "/accounts/email/",
    "/accounts/2fa/",
]
VISITOR_PAGES = ["/accounts/login/", "/accounts/signup/", "/accounts/password/reset/"]
# What a person reads in an attribute.
READ_ATTRIBUTES = {"title", "alt", "placeholder", "aria-label", "label"}

ZONE_ID = re.compile(
    r"\b(?:Africa|America|Antarctica|Arctic|Asia|Atlantic|Australia|Europe"
    r"|Indian|Pacific|Etc)/[A-Za-z_+-]+"
)
# A 1 before an Arabic singular, a 2 before a dual (a word ending in -ān/-ayn).
ARABIC_SINGULARS = "مباراة|نقلة|انتصار|خسارة|تعادل|رمز|مفتاح|يوم|ثانية|دقيقة|ساعة"
ARABIC_NUMBER_BEFORE_WORD = re.compile(
    rf"(?<![\d.,])(?:1\s+(?:{ARABIC_SINGULARS})\b"
    r"|2\s+[\u0621-\u064a]+(?:ان|ين|تين)\b)"
)
# German "Sie"/"Ihr" inside a sentence (the site says "du"): not after a
# sentence's end, where "Sie" may be "they".
GERMAN_SIE = re.compile(r"(?<![.!?:]\s)(?<!^)\b(?:Sie|Ihnen|Ihre?[mnrs]?)\b")
# French puts a no-break space (U+00A0 or U+202F) before : ; ! ?
FRENCH_BARE_PUNCTUATION = re.compile(r"[^\s\u00a0\u202f:/][:;!?](?=\s|$)")
WORD = re.compile(r"[^\W\d_]+")
# Words every language shows as they are: names (of the players, the brand,
# the languages in the language menu), the marks and UTC.
NAMES = frozenset(
    {"tictactoe", "X", "O", "UTC", "alice", "bob", "example", "com"}
    | {"English", "Français", "Deutsch", "Español", "Português", "Brasil", "العربية"}
)
# Texts a language writes as English does (checked by a reader of each).
SAME_TEXTS = {
    "de": {"Lobby", "Lobby — tictactoe", "Total"},
    "fr": {"Total"},
    "es": {"Total"},
    "pt-br": {"Lobby", "Lobby — tictactoe", "Total"},
    "ar": set(),
}


CODE_TAGS = {"script", "style", "textarea"}


class ReadText(HTMLParser):
    """The texts a person reads: text nodes and the attributes above (not
    scripts, code to copy such as the embed's <iframe> snippet, nor machine
    attributes such as value= or datetime=)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.texts: list[str] = []
        self.skip = 0
        self.in_option = False

    def handle_starttag(self, tag, attrs):
        if tag in CODE_TAGS:
            self.skip += 1
        self.in_option = tag == "option"
        marker = OPTION if tag == "optgroup" else ""
        for name, value in attrs:
            if name in READ_ATTRIBUTES and value:
                self.texts.append(marker + " ".join(value.split()))

    def handle_endtag(self, tag):
        if tag in CODE_TAGS:
            self.skip -= 1
        self.in_option = False

    def handle_data(self, data):
        if not self.skip and data.strip():
            # A menu's places and regions are CLDR's names: many are the same
            # in English.
            marker = OPTION if self.in_option else ""
            self.texts.append(marker + " ".join(data.split()))


# Marks a menu's words, which only the English check leaves out.
OPTION = "\ue000"


def read_text(html: str) -> list[str]:
    parser = ReadText()
    parser.feed(html)
    return parser.texts


def problems(texts: list[str], language: str) -> list[str]:
    found = [f"zone id: {text!r}" for text in texts if ZONE_ID.search(text)]
    if language == "ar":
        found += [
            f"number before a singular or dual: {text!r}"
            for text in texts
            if ARABIC_NUMBER_BEFORE_WORD.search(text)
        ]
    if language == "de":
        found += [
            f"Sie where the site says du: {text!r}"
            for text in texts
            if GERMAN_SIE.search(text)
        ]
    if language == "fr":
        found += [
            f"no space before the punctuation: {text!r}"
            for text in texts
            if FRENCH_BARE_PUNCTUATION.search(text)
        ]
    return found


def english_left(texts: list[str], english: list[str], language: str) -> list[str]:
    """Texts of the translated page that the English page shows the same."""
    same = set(english) & set(texts)
    return sorted(
        text
        for text in same
        if not text.startswith(OPTION)
        and set(WORD.findall(text)) - NAMES
        and text not in SAME_TEXTS[language]
    )


@pytest.fixture
def player_history(alice, bob, play):
    """alice: two wins in a row over bob (the last two seconds ago), one game
    against herself, two games waiting on her move."""
    for _ in range(2):
        play(new_game(alice, bob), *X_WINS_ROW_0)
    play(new_game(alice, alice), *X_WINS_ROW_0)
    last = Game.objects.filter(player_o=bob).order_by("-pk").first()
    Game.objects.filter(pk=last.pk).update(
        finished_at=timezone.now() - timedelta(seconds=2)
    )
    for _ in range(2):
        play(new_game(bob, alice), (0, 0))
    confirmed(alice, "alice@example.com")
    return last


def pages_for(client_for, user, language: str, paths, game) -> dict[str, list[str]]:
    Preferences.objects.update_or_create(
        user=user, defaults={"language": language, "time_zone": "America/Sao_Paulo"}
    )
    client = client_for(user)
    seen = {}
    for path in [*paths, f"/games/{game.pk}/"]:
        response = client.get(path)
        assert response.status_code == 200, path
        seen[path] = read_text(response.text)
    return seen


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_main_pages_read_right(client_for, alice, player_history, language):
    english = pages_for(client_for, alice, "en", PLAYER_PAGES, player_history)
    translated = pages_for(client_for, alice, language, PLAYER_PAGES, player_history)
    found = []
    for path, texts in translated.items():
        found += [f"{path}: {problem}" for problem in problems(texts, language)]
        found += [
            f"{path}: English left: {text!r}"
            for text in english_left(texts, english[path], language)
        ]
    assert found == []


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_visitor_pages_read_right(db, language):
    english, translated = Client(), Client(HTTP_ACCEPT_LANGUAGE=language)
    found = []
    for path in VISITOR_PAGES:
        texts = read_text(translated.get(path).text)
        found += [f"{path}: {problem}" for problem in problems(texts, language)]
        found += [
            f"{path}: English left: {text!r}"
            for text in english_left(texts, read_text(english.get(path).text), language)
        ]
    assert found == []


def test_arabic_writes_one_and_two_without_the_number(
    client_for, alice, player_history
):
    pages = pages_for(client_for, alice, "ar", PLAYER_PAGES, player_history)
    player = " ".join(pages["/players/alice/"])
    archive = " ".join(pages["/games/archive/"])
    assert "انتصاران متتاليان" in player  # two wins in a row
    assert "مباراة واحدة ضد نفسك مدرجة لكنها غير محتسبة." in player
    assert "منذ ثانيتين" in archive  # two seconds ago


@pytest.mark.parametrize(
    ("language", "subject"),
    [
        ("ar", "[tictactoe] مباراتان تنتظران نقلتك"),
        ("fr", "[tictactoe] 2 parties attendent votre coup"),
    ],
)
def test_the_your_turn_subject_writes_two_as_the_language_does(language, subject):
    with translation.override(language):
        text = render_to_string(
            "account/email/your_turn_subject.txt", {"games": [1, 2]}
        )
    assert text.strip() == subject


def test_the_checks_catch_what_the_readers_found():
    """Each check fails on the texts the review found."""
    assert problems(["منذ 2 ثانيتين", "2 مباراتان تنتظران نقلتك"], "ar") == [
        "number before a singular or dual: 'منذ 2 ثانيتين'",
        "number before a singular or dual: '2 مباراتان تنتظران نقلتك'",
    ]
    assert problems(["1 انتصار"], "ar") == [
        "number before a singular or dual: '1 انتصار'"
    ]
    assert problems(["بعد النقلة 2 من 5", "منذ 3 دقائق"], "ar") == []
    assert problems(["Wenn Sie diese Änderung nicht erkennen"], "de") == [
        "Sie where the site says du: 'Wenn Sie diese Änderung nicht erkennen'"
    ]
    assert problems(["Sie können keine Spiele starten."], "de") == []
    assert problems(["Partie 7: alice (X) contre bob (O)"], "fr") == [
        "no space before the punctuation: 'Partie 7: alice (X) contre bob (O)'"
    ]
    assert problems(["Partie 7\u00a0: alice", "19:19", "https://x"], "fr") == []
    assert problems(["2 décembre 2026 19:19 America/Sao_Paulo"], "fr") == [
        "zone id: '2 décembre 2026 19:19 America/Sao_Paulo'"
    ]
    assert english_left(["Won", "alice", "Gagnées"], ["Won", "alice"], "fr") == ["Won"]


@pytest.mark.parametrize(
    ("language", "browser", "date"),
    [
        ("de", "Browser: unbekannt (er hat keinen Namen gesendet)", "Datum: "),
        ("fr", "Navigateur\u00a0: inconnu (il n’a pas donné son nom)", "Date\u00a0: "),
        ("es", "Navegador: desconocido (no envió su nombre)", "Fecha: "),
        ("pt-br", "Navegador: desconhecido (não enviou seu nome)", "Data: "),
        ("ar", "المتصفح: غير معروف (لم يُرسل اسمه)", "التاريخ: "),
    ],
)
def test_a_notice_without_a_user_agent_says_so_in_the_readers_language(
    alice, client_for, settings, language, browser, date
):
    settings.ACCOUNT_EMAIL_NOTIFICATIONS = True
    Preferences.objects.create(user=alice, language=language, time_zone="Asia/Tokyo")
    confirmed(alice, "alice@example.com")
    changed = client_for(alice).post(
        "/accounts/password/change/",
        {
            "oldpassword": PASSWORD,
            "password1": NEW_PASSWORD,
            "password2": NEW_PASSWORD,
        },
    )
    assert changed.status_code == 302
    (notice,) = mail.outbox
    assert browser in notice.body
    assert "Unspecified" not in notice.body
    assert not ZONE_ID.search(notice.body)
    (line,) = [line for line in notice.body.splitlines() if date in line]
    assert not line.endswith('"')
    if language == "de":
        assert " Sie " not in notice.body


@pytest.mark.parametrize(
    ("language", "zone", "expected"),
    [
        # Arabic word order and comma; Egypt is on summer time until 29 October.
        ("ar", "Africa/Cairo", "23 أكتوبر 2026، 8:59 م، توقيت مصر"),
        # Brazilian Portuguese writes its months in lower case.
        ("pt-br", "America/Sao_Paulo", "23 de outubro de 2026 às 14:59, "),
        ("de", "Europe/Berlin", "23. Oktober 2026 19:59, "),
    ],
)
def test_a_time_reads_as_the_language_writes_it(language, zone, expected):
    moment = datetime(2026, 10, 23, 17, 59, tzinfo=UTC)
    with translation.override(language), timezone.override(zone):
        text = times.local_text(moment)
    assert text.startswith(expected)
    assert not ZONE_ID.search(text)
