"""The app's pages through a2wsgi (WSGI in a thread pool under an ASGI server),
for tests/bench/servers.py: `uvicorn tests.bench.a2wsgi_app:application`."""

from a2wsgi import WSGIMiddleware

from tictactoe_site.wsgi import application as pages

application = WSGIMiddleware(pages)
