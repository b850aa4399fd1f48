"""Words a template shows outside Django's translation machinery.

`untranslated_text(source)` reads one template with Django's own template lexer:
what `{% translate %}`, `{% blocktranslate %}…{% endblocktranslate %}` and
`{{ variables }}` output counts as translated (or as data), comments and
`{% comment %}` blocks as nothing; the rest is the template's own text. In that
text (HTML: tags, comments, `<script>` and `<style>` removed, entities decoded) it
reports every run of text holding a word, and every human-facing attribute value
holding one: `title`, `alt`, `placeholder`, `aria-label` and its kin, `label`, a
description `<meta>`'s `content`, and the `value` of a button or of a submit,
button or reset input. It also reports a word given as a literal to a filter that
shows it (`|default:"Unknown"`, `|yesno:"yes,no"`, `|pluralize:"is,are"`) or shown
as a bare literal (`{{ "Play" }}`). A word is a run of letters; names and symbols
in ALLOWED pass, as does anything without letters (·, —, «, ×).

Not checked: `data-` attributes (mostly machine values, such as `data-key="Home"`;
the ones a person reads are filled from variables, translated in Python), literal
arguments of other tags (`{% include … with current="account_email" %}` passes
names), and what the JavaScript writes.
"""

import re
from html.parser import HTMLParser
from pathlib import Path

from django.template.base import DebugLexer, TokenType

# Names and symbols a page shows in every language: the brand, the marks.
ALLOWED = frozenset({"tictactoe", "X", "O"})

# Where a tag or a variable outputs something: a private-use character, not a letter.
MARK = "\ue000"
WORD = re.compile(r"[^\W\d_]+")
TRANSLATE_TAGS = {"translate", "trans"}
BLOCK_TRANSLATE_TAGS = {
    "blocktranslate": "endblocktranslate",
    "blocktrans": "endblocktrans",
}
TEXT_FILTERS = {"default", "default_if_none", "pluralize", "yesno"}
LITERAL = r"(?:\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*')"
FILTER_LITERAL = re.compile(rf"\|\s*(\w+)\s*:\s*({LITERAL})")
BARE_LITERAL = re.compile(rf"^\s*({LITERAL})")
ATTRIBUTES = frozenset(
    {
        "title",
        "alt",
        "placeholder",
        "label",
        "aria-label",
        "aria-description",
        "aria-roledescription",
        "aria-placeholder",
        "aria-valuetext",
    }
)
BUTTON_INPUT_TYPES = frozenset({"submit", "button", "reset"})


def has_words(text: str) -> bool:
    return any(word not in ALLOWED for word in WORD.findall(text))


def shown(text: str) -> str:
    """The text as a report shows it: one line, `{…}` where a tag outputs."""
    return " ".join(text.replace(MARK, "{…}").split())


def skeleton(source: str) -> tuple[str, list[tuple[int, str]]]:
    """The template with MARK for each translated or variable output, a space for
    other tags, nothing for comments, and as many newlines as each took, so the
    lines stay those of the source. Also the words given as literals in
    variables."""
    parts: list[str] = []
    literals: list[tuple[int, str]] = []
    closing: str | None = None  # the end tag of the block being skipped
    for token in DebugLexer(source).tokenize():
        raw = source[token.position[0] : token.position[1]]
        lines = "\n" * raw.count("\n")
        name = token.contents.split()[0] if token.contents.split() else ""
        if closing is not None:
            if token.token_type == TokenType.BLOCK and name == closing:
                closing = None
            parts.append(lines)
        elif token.token_type == TokenType.TEXT:
            parts.append(raw)
        elif token.token_type == TokenType.VAR:
            literals += [
                (token.lineno, text) for text in shown_literals(token.contents)
            ]
            parts.append(MARK + lines)
        elif token.token_type == TokenType.BLOCK and name in BLOCK_TRANSLATE_TAGS:
            closing = BLOCK_TRANSLATE_TAGS[name]
            parts.append(MARK + lines)
        elif token.token_type == TokenType.BLOCK and name in TRANSLATE_TAGS:
            parts.append(MARK + lines)
        elif token.token_type == TokenType.BLOCK and name == "comment":
            closing = "endcomment"
            parts.append(lines)
        elif token.token_type == TokenType.BLOCK:
            parts.append(" " + lines)
        else:  # {# comment #}
            parts.append(lines)
    return "".join(parts), literals


def shown_literals(contents: str) -> list[str]:
    """Literals with words that a variable tag shows untranslated (a literal in
    `_("…")` is translated)."""
    found = [
        f"|{name}:{literal}"
        for name, literal in FILTER_LITERAL.findall(contents)
        if name in TEXT_FILTERS and has_words(literal[1:-1])
    ]
    if (match := BARE_LITERAL.match(contents)) and has_words(match[1][1:-1]):
        found.insert(0, match[1])
    return found


class _TextCollector(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[int, str]] = []
        self.hidden = 0  # inside <script> or <style>

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style"):
            self.hidden += 1
        values = dict(attrs)
        line = self.getpos()[0]
        for name, value in attrs:
            if value and self.human_facing(tag, name, values) and has_words(value):
                self.found.append((line, f'{name}="{shown(value)}"'))

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag in ("script", "style"):
            self.hidden -= 1

    def handle_endtag(self, tag):
        if tag in ("script", "style") and self.hidden:
            self.hidden -= 1

    @staticmethod
    def human_facing(tag: str, name: str, values: dict) -> bool:
        if name in ATTRIBUTES:
            return True
        if name == "value":
            return tag == "button" or (
                tag == "input"
                and (values.get("type") or "").lower() in BUTTON_INPUT_TYPES
            )
        return (
            name == "content"
            and tag == "meta"
            and (values.get("name") or "").lower() == "description"
        )

    def handle_data(self, data):
        if self.hidden or not has_words(data):
            return
        line = self.getpos()[0] + data[: len(data) - len(data.lstrip())].count("\n")
        self.found.append((line, shown(data)))


def untranslated_text(source: str, *, html: bool = True) -> list[tuple[int, str]]:
    """(line, text) of each run of text, attribute or literal with a word outside
    the translation machinery, in source order. `html=False` for plain-text
    templates (emails' .txt): every line of their own text is read."""
    text, literals = skeleton(source)
    if html:
        collector = _TextCollector()
        collector.feed(text)
        collector.close()
        found = collector.found
    else:
        found = [
            (number, shown(line))
            for number, line in enumerate(text.splitlines(), start=1)
            if has_words(line)
        ]
    return sorted(found + literals, key=lambda item: item[0])


def untranslated_in(directory: Path) -> list[str]:
    """`path:line: text` for every untranslated text of the templates under
    directory (.html read as HTML, .txt as plain text)."""
    reports = []
    for path in sorted(directory.rglob("*")):
        if path.suffix not in (".html", ".txt") or not path.is_file():
            continue
        found = untranslated_text(path.read_text(), html=path.suffix == ".html")
        name = path.relative_to(directory.parent)
        reports += [f"{name}:{line}: {text}" for line, text in found]
    return reports
