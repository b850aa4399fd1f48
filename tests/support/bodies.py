"""Pages compared byte for byte: `comparable()` takes out of a body what differs
between any two answers, so that two refusals (a hidden game and a missing one,
say) can be asserted equal."""

import re

CSRF_TOKEN = re.compile(rb'name="csrfmiddlewaretoken" value="[^"]+"')


def comparable(body: bytes | str, asked: str) -> bytes:
    """`body` without the CSRF token of the language menu (masked afresh for
    each answer) and the address asked for (where that menu returns), which
    become TOKEN and PATH."""
    body = body.encode() if isinstance(body, str) else body
    body = CSRF_TOKEN.sub(b"TOKEN", body)
    return body.replace(b'value="' + asked.encode(), b'value="PATH')


def text(response) -> str:
    return response.content.decode()
