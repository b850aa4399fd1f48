"""RFC 6238 one-time codes, computed here from the secret a page shows: the
tests' own authenticator app, independent of allauth's code."""

import base64
import hashlib
import hmac
import struct
import time


def hotp(key: bytes, counter: int, digits: int = 6) -> str:
    """RFC 4226: HMAC-SHA-1 of the counter, dynamically truncated."""
    digest = hmac.new(key, struct.pack(">Q", counter), hashlib.sha1).digest()
    offset = digest[-1] & 0x0F
    number = struct.unpack(">I", digest[offset : offset + 4])[0] & 0x7FFFFFFF
    return str(number % 10**digits).zfill(digits)


def totp(secret: str, at: float | None = None, step: int = 30) -> str:
    """The six-digit code of a base32 `secret` (as an app is given it) at `at`
    (now by default)."""
    padded = secret.upper() + "=" * (-len(secret) % 8)
    key = base64.b32decode(padded)
    return hotp(key, int((time.time() if at is None else at) // step))


def wrong_code(secret: str) -> str:
    """A six-digit code that is none of the codes accepted around now."""
    now = time.time()
    accepted = {totp(secret, now + drift) for drift in (-30, 0, 30)}
    return next(
        code
        for code in ("000000", "111111", "222222", "333333")
        if code not in accepted
    )
