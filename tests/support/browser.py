"""A minimal real HTTP client: its own cookie jar, CSRF token, no redirects followed.

Speaks to the server the way a browser behind a TLS-terminating proxy does: the
proxy adds X-Forwarded-Proto, the browser adds Origin to its POSTs (Django's
CSRF check needs one of Origin/Referer on HTTPS).
"""

import http.client
import threading
from http.cookies import SimpleCookie
from urllib.parse import urlencode


class Response:
    def __init__(self, status: int, headers: http.client.HTTPMessage, body: bytes):
        self.status = status
        self.headers = headers
        self.body = body

    @property
    def text(self) -> str:
        return self.body.decode()


class Browser:
    def __init__(self, port: int, *, session_key: str | None = None, https=True):
        self.port = port
        self.https = https
        self.cookies: dict[str, str] = {}
        # Sent as X-Forwarded-For: the client address a trusted proxy saw
        # (DJANGO_TRUSTED_PROXY_COUNT=1), for tests of per-client limits.
        self.forwarded_for: str | None = None
        if session_key:
            self.cookies["sessionid"] = session_key
        self._lock = threading.Lock()

    def request(self, method: str, path: str, fields: dict | None = None) -> Response:
        headers = {}
        if self.https:
            headers["X-Forwarded-Proto"] = "https"
        if self.forwarded_for:
            headers["X-Forwarded-For"] = self.forwarded_for
        with self._lock:
            if self.cookies:
                headers["Cookie"] = "; ".join(
                    f"{k}={v}" for k, v in self.cookies.items()
                )
            token = self.cookies.get("csrftoken")
        body = None
        if method == "POST":
            origin = "https" if self.https else "http"
            headers["Origin"] = f"{origin}://127.0.0.1:{self.port}"
            headers["Content-Type"] = "application/x-www-form-urlencoded"
            if token:
                headers["X-CSRFToken"] = token
            body = urlencode(fields or {})
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            connection.request(method, path, body=body, headers=headers)
            raw = connection.getresponse()
            response = Response(raw.status, raw.headers, raw.read())
        finally:
            connection.close()
        self._remember(response)
        return response

    def _remember(self, response: Response) -> None:
        jar = SimpleCookie()
        for header in response.headers.get_all("Set-Cookie") or []:
            jar.load(header)
        with self._lock:
            for name, morsel in jar.items():
                self.cookies[name] = morsel.value

    def get(self, path: str) -> Response:
        return self.request("GET", path)

    def post(self, path: str, fields: dict | None = None) -> Response:
        return self.request("POST", path, fields)

    def readiness(self) -> int | None:
        """/readyz's status: 200 once the server can serve pages; None while
        nothing listens yet."""
        try:
            return self.get("/readyz").status
        except OSError:
            return None
