"""The account pages and mails speak the reader's language (issue 37).

Two halves. allauth ships catalogs for every language the site offers: where our
pages say what allauth says, they use allauth's msgid, so those words come out
translated today (the browser's Accept-Language picks the language). And every
text of our own goes through Django's translation functions: with a stand-in
translation that marks each message it is asked for, nothing a person reads on
these pages or in these mails is left unmarked.
"""

import re
from html.parser import HTMLParser

import pytest
from django.contrib.auth.models import AnonymousUser
from django.template.loader import render_to_string
from django.test import Client
from django.urls import resolve
from django.utils import translation

from accounts import account_mail, refusals

from ..support.account_client import confirmed


@pytest.fixture(autouse=True)
def no_language_left_behind():
    """A request with Accept-Language activates its language in this thread
    (LocaleMiddleware) and nothing takes it back: the next tests, which read
    English, must not inherit it."""
    yield
    translation.deactivate()


# "Password" (the login form's label, allauth's translation:
# allauth/locale/*/LC_MESSAGES/django.po) and "Forgot your password?" (the
# heading of the reset page, allauth's msgid, which our catalogs translate too:
# theirs where they agree, ours in French and Portuguese).
ALLAUTH = {
    "fr": ("Mot de passe", "Mot de passe oublié\u00a0?"),
    "de": ("Passwort", "Passwort vergessen?"),
    "es": ("Contraseña", "¿Ha olvidado su contraseña?"),
    "pt-br": ("Senha", "Esqueceu a sua senha?"),
    "ar": ("كلمة المرور", "هل نسيت كلمة المرور؟"),
}


@pytest.mark.parametrize("language", ALLAUTH)
def test_allauth_words_on_our_pages_come_out_in_the_browsers_language(db, language):
    password, forgot = ALLAUTH[language]
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    login = client.get("/accounts/login/")
    assert login.status_code == 200
    # The label's suffix is Django's, translated too (" :" in French).
    assert f'<label for="id_password">{password}' in login.text
    reset = client.get("/accounts/password/reset/")
    assert reset.status_code == 200
    assert f"<h1>{forgot}</h1>" in reset.text
    assert "Forgot your password?" not in reset.text


def test_without_a_choice_the_pages_stay_english(db):
    reset = Client().get("/accounts/password/reset/")
    assert "<h1>Forgot your password?</h1>" in reset.text


def test_the_confirm_button_is_allauths(client_for, alice):
    """Our re-authentication page's button says allauth's "Confirm"."""
    page = client_for(alice, HTTP_ACCEPT_LANGUAGE="de").get("/accounts/reauthenticate/")
    assert page.status_code == 200
    assert '<button type="submit" class="button primary">Bestätigen</button>' in (
        page.text
    )


def test_a_mail_is_built_in_the_language_it_was_asked_in(db):
    """The address-in-use notice is made of allauth's frame (translated) and our
    text: asked for while German is active (an address without an account has
    no saved language), it is built in German whatever the worker's language."""

    def built(asked_in: str, built_in: str):
        with translation.override(asked_in):
            refs = account_mail.references(
                "account/email/address_in_use", "x@example.com", {}
            )
        with translation.override(built_in):
            return account_mail.build(refs)

    german = built("de", "en")
    english = built("en", "de")
    assert german.body.startswith("Hallo von testserver!")
    assert english.body.startswith("Hello from testserver!")


# -- every text of ours is marked for translation ---------------------------------

MARK_START, MARK_END = "⟦", "⟧"


def mark(text: str) -> str:
    return f"{MARK_START}{text}{MARK_END}"


@pytest.fixture
def marked(monkeypatch):
    """A stand-in translation: each message comes back inside ⟦ ⟧. Django's
    gettext functions (and its template tags, lazy strings and forms) reach it
    through django.utils.translation._trans."""
    trans = translation._trans
    monkeypatch.setattr(trans, "gettext", mark)
    monkeypatch.setattr(trans, "pgettext", lambda context, text: mark(text))
    monkeypatch.setattr(
        trans, "ngettext", lambda one, many, n: mark(one if n == 1 else many)
    )
    monkeypatch.setattr(
        trans,
        "npgettext",
        lambda context, one, many, n: mark(one if n == 1 else many),
    )


class ReadableText(HTMLParser):
    """What a person reads inside <main>: its text, in order (a message may
    hold tags: "New here? <a ...>Create an account</a>."), and the attributes
    that are read out or shown (aria-label, title, alt, placeholder)."""

    READ_ATTRIBUTES = {"aria-label", "title", "alt", "placeholder"}

    def __init__(self):
        super().__init__()
        self.depth = 0  # inside <main>
        self.skipping = 0  # inside <script>, <style> or <code>
        self.text: list[str] = []
        self.attributes: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "main":
            self.depth += 1
        if tag in {"script", "style", "code"}:
            self.skipping += 1
        if self.depth:
            self.attributes += [v for k, v in attrs if k in self.READ_ATTRIBUTES and v]

    def handle_endtag(self, tag):
        if tag == "main":
            self.depth -= 1
        if tag in {"script", "style", "code"}:
            self.skipping -= 1

    def handle_data(self, data):
        if self.depth and not self.skipping:
            self.text.append(data)


MARKED = re.compile(f"{MARK_START}[^{MARK_START}{MARK_END}]*{MARK_END}")
LETTER = re.compile(r"[^\W\d_]")


def without_marked(text: str) -> str:
    """`text` less every marked message (innermost first: a message may hold
    another, "Please wait ⟦15 minutes⟧ and try again")."""
    while True:
        text, found = MARKED.subn(" ", text)
        if not found:
            return text


def unmarked(html: str, *, names: set[str]) -> list[str]:
    """The words of the page outside every marked message, less `names` (the
    person's own data: usernames, addresses)."""
    parser = ReadableText()
    parser.feed(html)
    left = [without_marked("".join(parser.text))] + [
        without_marked(value) for value in parser.attributes
    ]
    words = " ".join(left).split()
    return [word for word in words if LETTER.search(word) and word not in names]


ANONYMOUS_PAGES = [
    "/accounts/login/",
    "/accounts/signup/",
    "/accounts/password/reset/",
    "/accounts/password/reset/done/",
    "/accounts/password/reset/key/done/",
    "/accounts/password/reset/key/1-broken/",
    "/accounts/confirm-email/",
    "/accounts/confirm-email/broken-key/",
    "/accounts/inactive/",
]
ACCOUNT_PAGES = [
    "/accounts/close/",
    "/accounts/email/",
    "/accounts/reauthenticate/",
    "/accounts/2fa/",
    "/accounts/2fa/totp/activate/",
    "/accounts/2fa/webauthn/",
    "/accounts/2fa/webauthn/add/",
]


@pytest.mark.parametrize("path", ANONYMOUS_PAGES)
def test_every_text_of_the_anonymous_pages_is_marked(db, marked, path):
    page = Client().get(path)
    assert page.status_code in (200, 400)
    assert unmarked(page.text, names=set()) == []


@pytest.mark.parametrize("path", ACCOUNT_PAGES)
def test_every_text_of_the_account_pages_is_marked(client_for, alice, marked, path):
    confirmed(alice, "alice@example.com")
    page = client_for(alice).get(path, follow=True)
    assert page.status_code == 200
    assert unmarked(page.text, names={"alice", "alice@example.com"}) == []


def test_every_text_of_the_guest_pages_is_marked(client_for, make_guest, marked):
    guest = make_guest("guest-otter42")
    client = client_for(guest)
    for page in (client.get("/accounts/keep/"), client.post("/accounts/logout/")):
        assert page.status_code == 200
        assert unmarked(page.text, names={"guest-otter42"}) == []


def mail_unmarked(text: str) -> list[str]:
    """The words of a mail outside every marked message, less its links."""
    words = without_marked(text).split()
    return [w for w in words if LETTER.search(w) and not w.startswith("https://")]


def test_the_address_in_use_mail_is_marked(db, marked):
    notice = account_mail.build(
        account_mail.references("account/email/address_in_use", "x@example.com", {})
    )
    assert notice.subject.endswith(mark("Someone tried to use your email address"))
    assert mail_unmarked(notice.body) == []
    assert "(x@example.com) for another tictactoe account." in notice.body


@pytest.mark.parametrize(
    ("count", "subject"),
    [
        (1, "A game is waiting for your move"),
        (2, "%(number)s games are waiting for your move"),
    ],
)
def test_the_your_turn_mail_is_marked(alice, bob, marked, count, subject):
    # As games.turn_emails lists them: bob plays X against alice.
    games = [
        {
            "player_x_name": "bob",
            "player_o_name": "alice",
            "url": f"https://example.com/games/{n}/",
        }
        for n in range(count)
    ]
    context = {
        "user": bob,
        "games": games,
        "unsubscribe_url": "https://example.com/unsubscribe/",
        "account_url": "https://example.com/accounts/",
    }
    rendered = render_to_string("account/email/your_turn_subject.txt", context)
    assert rendered.strip() == "[tictactoe] " + mark(subject) % {"number": count}
    body = render_to_string("account/email/your_turn_message.txt", context)
    assert mail_unmarked(body) == []
    # Each game's line, its colon and link inside the message.
    assert (
        sum(
            body.count(
                mark("%(player_x)s (X) vs %(player_o)s (O): %(url)s")
                % {"player_x": "bob", "player_o": "alice", "url": game["url"]}
            )
            for game in games
        )
        == count
    )


def test_a_refused_form_and_a_429_page_are_marked(client_for, alice, rf, marked):
    """Python's messages: the close form's error, a limit's 429 page (its
    sentence and the wait, each a message)."""
    refused = client_for(alice).post("/accounts/close/", {"password": "wrong"})
    assert refused.status_code == 400
    assert mark("That is not your current password.") in refused.text
    assert unmarked(refused.text, names={"alice"}) == []

    request = rf.post("/accounts/password/change/")
    request.resolver_match = resolve("/accounts/password/change/")
    request.user = AnonymousUser()
    page = refusals.too_many_requests(request)
    assert page.status_code == 429
    # The message and the title (error.html's own words are the page's).
    html = page.content.decode()
    assert f"<h1>{mark('Too many requests')}</h1>" in html
    (message,) = re.findall(r'<p role="alert">(.*?)</p>', html)
    assert without_marked(message).strip() == ""
    assert mark("%(count)d minute") % {"count": 1} in message
    assert mark("Too many password changes.") in message
