"""Where a page's time goes, in-process, through Django's WSGI handler:
`python -m tests.bench.profile_pages MANIFEST [--requests 2000]` prints
pyinstrument's call tree for the game page, state.json, the lobby and the move
POST.

Run with the settings and DATABASE_URL of a database seeded by tests.bench.seed (the
same data `make bench` loads); debug off, as served.
"""

import argparse
import io
import json
import os
import sys

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tictactoe_site.settings")
django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.wsgi import get_wsgi_application  # noqa: E402
from django.test import Client  # noqa: E402
from pyinstrument import Profiler  # noqa: E402

from tests.bench.count_queries import cell_data  # noqa: E402

application = get_wsgi_application()


def cookie_for(username: str) -> str:
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(get_user_model().objects.get(username=username))
    return "; ".join(f"{k}={v.value}" for k, v in client.cookies.items())


def call(method: str, path: str, cookie: str, body: bytes = b"") -> int:
    environ = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_HOST": "127.0.0.1",
        "HTTP_COOKIE": cookie,
        "wsgi.input": io.BytesIO(body),
        "wsgi.url_scheme": "http",
        "wsgi.errors": sys.stderr,
    }
    if body:
        environ["CONTENT_TYPE"] = "application/x-www-form-urlencoded"
        environ["CONTENT_LENGTH"] = str(len(body))
    status = []
    result = application(environ, lambda s, h, e=None: status.append(s))
    b"".join(result)
    result.close()
    return int(status[0][:3])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("manifest")
    parser.add_argument("--requests", type=int, default=2000)
    args = parser.parse_args()
    with open(args.manifest) as source:
        manifest = json.load(source)
    viewer, mover = cookie_for(manifest["viewer"]), cookie_for(manifest["mover"])
    token = "a" * 32  # an unmasked CSRF secret: the same value as cookie and field
    mover += f"; csrftoken={token}"
    page = f"/games/{manifest['page_game']}/"
    pages = {
        "game page": lambda: call("GET", page, viewer),
        "state.json": lambda: call("GET", page + "state.json", viewer),
        "lobby": lambda: call("GET", "/", viewer),
    }
    games = iter(manifest["move_games"])

    def move():
        # one whole game per call: nine plies, the last one ends it
        game = next(games)
        for ply in range(9):
            data = cell_data(manifest["draw_order"], ply)
            body = "&".join(f"{k}={v}" for k, v in data.items())
            body += f"&csrfmiddlewaretoken={token}"
            status = call("POST", f"/games/{game}/move/", mover, body.encode())
            assert status == 302, status

    for name, run in pages.items():
        assert run() == 200
        profiler = Profiler(interval=0.0002)
        with profiler:
            for _ in range(args.requests):
                run()
        print(f"==== {name}: {args.requests} requests")
        print(profiler.output_text(unicode=False, color=False, show_all=False))
    count = min(args.requests // 9, len(manifest["move_games"]) - 1)
    profiler = Profiler(interval=0.0002)
    with profiler:
        for _ in range(count):
            move()
    print(f"==== move POST: {count} games of 9 plies")
    print(profiler.output_text(unicode=False, color=False, show_all=False))


if __name__ == "__main__":
    main()
