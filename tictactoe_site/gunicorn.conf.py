"""How `make serve` runs the app in production: the ONE place that names the server.

gunicorn with sync workers: each worker is a process handling one request at a
time, with its own database connection (pool); the workers share nothing but the
database, which is what makes scaling out to several hosts the same problem as
scaling to several workers. Everything is read from the environment:

  HOST, PORT        where to listen (default 127.0.0.1:8000, behind a proxy)
  WEB_CONCURRENCY   worker processes (default: CPU cores, at least 2, at most 4)
  GUNICORN_TIMEOUT  seconds before a silent worker is killed and replaced (30)
"""

import os

bind = f"{os.environ.get('HOST', '127.0.0.1')}:{os.environ.get('PORT', '8000')}"
workers = int(os.environ.get("WEB_CONCURRENCY") or min(4, max(2, os.cpu_count() or 1)))
worker_class = "sync"
wsgi_app = "tictactoe_site.wsgi:application"
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "30"))
graceful_timeout = 20
# Replace each worker now and then so that a slow leak cannot grow forever.
max_requests = 2000
max_requests_jitter = 200
# Access log to stdout, errors to stderr (make serve merges both into stdout).
accesslog = "-"
errorlog = "-"
# gunicorn's control socket is one fixed path per user: two servers on one host
# would fight over it, and nothing here uses it.
control_socket_disable = True
