"""Settings for tictactoe, from environment variables with secure defaults.

Every variable, with its default and why: docs/settings.md, by the same headings
as below.
"""

from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

from django.utils.csp import CSP
from dotenv import load_dotenv

from tictactoe_site.lib.database_url import database_from_url
from tictactoe_site.lib.env import (
    ConfigurationError,
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_list,
    env_path,
    env_secret,
    env_secret_list,
    env_str,
)
from tictactoe_site.ops import logs
from tictactoe_site.ops.preflight import is_loopback

BASE_DIR = Path(__file__).resolve().parent.parent

# A development checkout's .env (`make run` writes DJANGO_DEBUG=1 there); a
# variable set in the environment wins over it (`make serve` sets DJANGO_DEBUG=0).
# PYTHON_DOTENV_DISABLED=1, python-dotenv's own switch, skips it: the tests set it.
load_dotenv(BASE_DIR / ".env")


# -- The site: debug, keys, hosts, proxies, address ------------------------------

DEBUG = env_bool("DJANGO_DEBUG")

# Reverse proxies in front, each appending to X-Forwarded-For; 0: no X-Forwarded-*
# header is believed (accounts.client, tictactoe_site.server.serve).
TRUSTED_PROXY_COUNT = env_int("DJANGO_TRUSTED_PROXY_COUNT", 0, minimum=0)
for _replaced in ("DJANGO_TRUST_X_FORWARDED_PROTO", "FORWARDED_ALLOW_IPS"):
    if env_str(_replaced):
        raise ConfigurationError(
            f"{_replaced} is no longer read: set DJANGO_TRUSTED_PROXY_COUNT to the "
            "number of reverse proxies in front of the app (docs/settings.md)."
        )

SECRET_KEY = env_secret("DJANGO_SECRET_KEY")
if not SECRET_KEY.strip():
    if not DEBUG:
        raise ConfigurationError(
            "DJANGO_SECRET_KEY is not set. Set it to a long random value; for "
            "local development, run `make run` once (it writes .env with "
            "DJANGO_DEBUG=1)."
        )
    SECRET_KEY = "django-insecure-development-key-do-not-use-in-production"
# Earlier keys, still accepted for what they signed (docs/operations.md, rotating).
SECRET_KEY_FALLBACKS = env_secret_list("DJANGO_SECRET_KEY_FALLBACKS")

ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS")

# The site's address as players reach it: links in emails start with it.
SITE_URL = env_str("DJANGO_SITE_URL")
if not SITE_URL and not DEBUG:
    raise ConfigurationError(
        "DJANGO_SITE_URL is not set: set it to the site's address as players "
        "reach it, e.g. https://ttt.example.com (links in emails start with it)."
    )
SITE_URL = SITE_URL or "http://127.0.0.1:8000"
_site = urlsplit(SITE_URL)
if _site.scheme not in ("http", "https") or not _site.hostname:
    raise ConfigurationError(
        "DJANGO_SITE_URL must be an http:// or https:// address such as "
        f"https://ttt.example.com, not {SITE_URL!r}."
    )
SITE_URL = SITE_URL.rstrip("/")
# This machine's own address reaches no player (".localhost" is this machine too).
_public_hosts = [host for host in ALLOWED_HOSTS if not is_loopback(host.lstrip("."))]
if not DEBUG and is_loopback(_site.hostname) and _public_hosts:
    raise ConfigurationError(
        f"DJANGO_SITE_URL names this machine ({SITE_URL}) while "
        f"DJANGO_ALLOWED_HOSTS names {_public_hosts[0]}: set it to the site's "
        "address as players reach it (links in emails start with it)."
    )


# -- Applications, middleware, URLs, templates ------------------------------------

INSTALLED_APPS = [
    # The admin site of accounts.admin_gate: staff open it only with a second factor.
    "accounts.admin_gate.StaffAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "allauth",
    "allauth.account",
    "allauth.mfa",
    "allauth.usersessions",
    "django_tasks_db",
    "accounts",
    "games",
]

MIDDLEWARE = [
    # The health probes and /metrics before anything reads the Host header,
    # redirects to HTTPS or touches the session; then every other request's id,
    # access line and metrics (tictactoe_site.ops.middleware): outermost, so every
    # answer has them.
    "tictactoe_site.ops.middleware.operations",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    # A player's saved language over the browser's, and the time zone, from the
    # session (no query) or a visitor's cookie (accounts.middleware).
    "accounts.middleware.apply_preferences",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "tictactoe_site.ops.middleware.refuse_before_views",
    "allauth.account.middleware.AccountMiddleware",
    "accounts.middleware.record_activity",
]
# /metrics for the operator (tictactoe_site.ops.metrics_endpoint; docs/routes.md).
METRICS_ENABLED = env_bool("METRICS_ENABLED", default=True)
METRICS_TOKEN = env_secret("METRICS_TOKEN")
# What /workerz asks: why the task worker looks absent, or None (ops.health).
TASK_WORKER_CHECK = "tictactoe_site.jobs.heartbeat.worker_silence"

ROOT_URLCONF = "tictactoe_site.urls"
CSRF_FAILURE_VIEW = "tictactoe_site.lib.error_pages.csrf_failure"
WSGI_APPLICATION = "tictactoe_site.wsgi.application"
ASGI_APPLICATION = "tictactoe_site.server.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "django.template.context_processors.csp",
            ],
        },
    },
]


# -- Database: SQLite unless DATABASE_URL says otherwise ---------------------------

DATABASES = {
    # One host, or a primary and its standbys (libpq's multi-host form).
    "default": database_from_url(
        "DATABASE_URL",
        f"sqlite:///{BASE_DIR / 'db.sqlite3'}",
        # Each thread of a server process keeps its connection between requests.
        conn_max_age=env_int("DJANGO_CONN_MAX_AGE", 60, minimum=0),
        conn_health_checks=True,
    )
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
_SQLITE = DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3"
if _SQLITE:
    # Writers queue for the lock up front instead of failing "database is
    # locked"; readers go on while a move is written (WAL).
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        "init_command": (
            "PRAGMA journal_mode=WAL;"
            "PRAGMA synchronous=NORMAL;"
            "PRAGMA busy_timeout=20000;"
        ),
    }
elif DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # A fail-fast connect, on top of the options given in the URL (?sslmode=…).
    DATABASES["default"].setdefault("OPTIONS", {}).setdefault(
        "connect_timeout", env_int("DJANGO_DB_CONNECT_TIMEOUT", 5, minimum=1)
    )
    # A pool per process, one connection per page thread (docs/settings.md sizes
    # it against max_connections); off, DJANGO_CONN_MAX_AGE keeps connections.
    if env_bool("DJANGO_DB_POOL", default=True):
        DATABASES["default"]["CONN_MAX_AGE"] = 0  # Django's pool requires it.
        _pool_min = env_int("DJANGO_DB_POOL_MIN", 1, minimum=0)
        DATABASES["default"]["OPTIONS"]["pool"] = {
            "min_size": _pool_min,
            "max_size": env_int("DJANGO_DB_POOL_MAX", 6, minimum=max(1, _pool_min)),
            # Seconds a request waits for a connection before its 503 page.
            "timeout": env_float("DJANGO_DB_POOL_TIMEOUT", 3.0, above=0),
            # Seconds a failed connection attempt is retried before it is
            # dropped: pages are back within about a second of the database.
            "reconnect_timeout": 1.0,
        }


# -- Caches, sessions, messages ---------------------------------------------------

# Files the server processes of one host share: the session cache with SQLite,
# the live-update sockets without Redis. Private (games.checks).
CACHE_DIR = env_path("DJANGO_CACHE_DIR", BASE_DIR / ".cache")
# Sessions: the database is the truth, so a session ended anywhere is ended
# everywhere. With SQLite (one host), read through a cache of files every process
# of the host shares; otherwise read from the database on every request.
# Django's engines, whose new keys keep a browser listed (accounts.session_engines).
SESSION_ENGINE = (
    "accounts.session_engines.cached_db" if _SQLITE else "accounts.session_engines.db"
)
if _SQLITE:
    SESSION_CACHE_ALIAS = "sessions"
CACHES = {
    # allauth's limit counts: a database table nothing evicts (accounts.rate_limits).
    "default": {"BACKEND": "accounts.rate_limits.RateLimitStore"},
    # Rendered game pages and lobbies, per process, keyed by what they show
    # (games.page_cache).
    "pages": {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "LOCATION": "pages",
        "TIMEOUT": 600,
        "OPTIONS": {"MAX_ENTRIES": 2000},
    },
    # Drawn pictures of games (games.sharing), per process, keyed by what they show.
    "pictures": {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "LOCATION": "pictures",
        "TIMEOUT": 3600,
        "OPTIONS": {"MAX_ENTRIES": 500},
    },
    # The players whose activity this process recorded lately (accounts.middleware).
    "seen": {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "LOCATION": "seen",
        "OPTIONS": {"MAX_ENTRIES": 100_000},
    },
    # SESSION_CACHE_ALIAS with SQLite; past MAX_ENTRIES files a third are dropped
    # (reloaded from the database).
    **(
        {
            "sessions": {
                "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
                "LOCATION": CACHE_DIR / "sessions",
                "OPTIONS": {"MAX_ENTRIES": 100_000},
            }
        }
        if _SQLITE
        else {}
    ),
}
# In a signed cookie: showing a message writes nothing (WEB_READS_ON_LOOP).
MESSAGE_STORAGE = "django.contrib.messages.storage.cookie.CookieStorage"


# -- Serving: page threads, live streams, Redis ------------------------------------

# Page threads per server process (tictactoe_site.server.bridge).
WEB_THREADS = env_int("WEB_THREADS", 4, minimum=1)
# GET and HEAD pages on the event loop: only where every read is local.
WEB_READS_ON_LOOP = env_bool("WEB_READS_ON_LOOP", default=_SQLITE)
if WEB_READS_ON_LOOP and not _SQLITE:
    raise ConfigurationError(
        "WEB_READS_ON_LOOP needs every read to be local: a SQLite database (reads "
        "from another machine would hold up the live streams)."
    )
# Threads for the account pages, which hash passwords, at a lower CPU priority.
WEB_ACCOUNT_THREADS = env_int("WEB_ACCOUNT_THREADS", 2, minimum=1)
# Each server process on one CPU of its own (Linux; tictactoe_site.server.cpus).
WEB_PIN_CPUS = env_bool("WEB_PIN_CPUS", default=True)
# Open live streams (games.live.streams) one user may hold in one server process.
WEB_MAX_STREAMS_PER_USER = env_int("WEB_MAX_STREAMS_PER_USER", 30, minimum=1)
# Visitors' game streams (no account) one network may hold in one server process.
WEB_MAX_STREAMS_PER_ADDRESS = env_int("WEB_MAX_STREAMS_PER_ADDRESS", 30, minimum=1)
# Live updates between hosts by Redis pub/sub when set; else PostgreSQL's
# LISTEN/NOTIFY, or local sockets with SQLite (games.live).
REDIS_URL = env_secret("REDIS_URL").strip()


# -- Security: HTTPS, cookies, headers --------------------------------------------

# HTTPS-only settings are opt-in, so `make run` works over plain HTTP.
SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT")
SESSION_COOKIE_SECURE = env_bool("DJANGO_SECURE_COOKIES")
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
# The language menu's cookie; visitors' time zone cookie follows the same switch.
LANGUAGE_COOKIE_SECURE = SESSION_COOKIE_SECURE
LANGUAGE_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
SECURE_HSTS_SECONDS = env_int("DJANGO_HSTS_SECONDS", 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("DJANGO_HSTS_INCLUDE_SUBDOMAINS")
SECURE_HSTS_PRELOAD = env_bool("DJANGO_HSTS_PRELOAD")
# Only a trusted proxy says whether the browser used HTTPS.
if TRUSTED_PROXY_COUNT:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.NONCE],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    # The web app manifest and the service worker (tictactoe_site/lib/web_app.py).
    "manifest-src": [CSP.SELF],
    "worker-src": [CSP.SELF],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "object-src": [CSP.NONE],
}


# -- Accounts: django-allauth, passwords, login limits ------------------------------

AUTH_PASSWORD_VALIDATORS = [
    {
        "NAME": "django.contrib.auth.password_validation."
        "UserAttributeSimilarityValidator"
    },
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# allauth's backend logs in by username in any casing; ModelBackend stays for the
# sessions it started and for the admin.
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "allauth.account.auth_backends.AuthenticationBackend",
]
LOGIN_URL = "account_login"
LOGIN_REDIRECT_URL = "lobby"
LOGOUT_REDIRECT_URL = "account_login"

# Username sign-up, an optional address used only once confirmed; nothing tells
# whether an address has an account (docs/settings.md, Accounts).
ACCOUNT_ADAPTER = "accounts.adapter.AccountAdapter"
ACCOUNT_FORMS = {
    "login": "accounts.forms.LoginForm",
    "signup": "accounts.forms.SignupForm",
    "change_password": "accounts.forms.ChangePasswordForm",
    "reset_password": "accounts.forms.ResetPasswordForm",
}
ACCOUNT_LOGIN_METHODS = {"username"}
ACCOUNT_SIGNUP_FIELDS = ["username*", "email", "password1*", "password2*"]
ACCOUNT_EMAIL_VERIFICATION = "optional"
ACCOUNT_UNIQUE_EMAIL = True
ACCOUNT_PREVENT_ENUMERATION = "strict"
# One address per account: a new one replaces the old once confirmed.
ACCOUNT_CHANGE_EMAIL = True
# Changing the address or the password, and closing, ask for the password again.
ACCOUNT_REAUTHENTICATION_REQUIRED = True
ACCOUNT_REAUTHENTICATION_METHODS = ["password"]
ACCOUNT_LOGOUT_ON_GET = False
ACCOUNT_LOGIN_ON_PASSWORD_RESET = False
ACCOUNT_EMAIL_SUBJECT_PREFIX = "[tictactoe] "
ACCOUNT_SIGNUP_FORM_HONEYPOT_FIELD = None
# Sessions last as long as Django's SESSION_COOKIE_AGE: no "Remember me" box.
ACCOUNT_SESSION_REMEMBER = True
# Confirmation keys are signed, never stored (accounts.account_mail).
ACCOUNT_EMAIL_CONFIRMATION_HMAC = True
# A password-reset link works once, for this many seconds.
PASSWORD_RESET_TIMEOUT = env_int("DJANGO_PASSWORD_RESET_TIMEOUT", 3600, minimum=1)

# Limits per client address and per username or email address, counted in
# CACHES["default"], the address first (docs/settings.md, Limits); 0: off.
LOGIN_FAILURE_LIMIT = env_int("DJANGO_LOGIN_FAILURE_LIMIT", 5, minimum=0)
LOGIN_COOLOFF_MINUTES = env_int("DJANGO_LOGIN_COOLOFF_MINUTES", 15, minimum=1)
PASSWORD_RESET_LIMIT = env_int("DJANGO_PASSWORD_RESET_LIMIT", 5, minimum=0)


def _per_ip_and_key(limit: int) -> str | None:
    window = f"{LOGIN_COOLOFF_MINUTES}m"
    return f"{limit}/{window}/ip,{limit}/{window}/key" if limit > 0 else None


ACCOUNT_RATE_LIMITS = {
    "login_failed": _per_ip_and_key(LOGIN_FAILURE_LIMIT),
    # allauth's cap on all login attempts from one address goes with them.
    **({} if LOGIN_FAILURE_LIMIT > 0 else {"login": None}),
    "reset_password": _per_ip_and_key(PASSWORD_RESET_LIMIT),
    "confirm_email": _per_ip_and_key(PASSWORD_RESET_LIMIT),
}
ALLAUTH_RATE_LIMIT_IPV6_PREFIX = 64

# Two-factor authentication (allauth.mfa): an app, recovery codes, passkeys
# (docs/settings.md, Two-factor).
MFA_ADAPTER = "accounts.mfa_adapter.MFAAdapter"
MFA_FORMS = {
    "add_webauthn": "accounts.mfa_forms.AddWebAuthnForm",
    "authenticate_webauthn": "accounts.mfa_forms.AuthenticateWebAuthnForm",
    "login_webauthn": "accounts.mfa_forms.LoginWebAuthnForm",
}
MFA_SUPPORTED_TYPES = ["totp", "recovery_codes", "webauthn"]
MFA_PASSKEY_LOGIN_ENABLED = True
# The issuer an authenticator app shows beside the code (not the Host header).
MFA_TOTP_ISSUER = "tictactoe"
# A code is also accepted in the 30 s before and after its own (clock drift).
MFA_TOTP_TOLERANCE = 1
# An unconfirmed address blocks neither a second factor nor changing it.
MFA_ALLOW_UNVERIFIED_EMAIL = True
# Signed-in browsers (allauth.usersessions): recorded at login only, since
# tracking activity would write on every page (docs/settings.md).
USERSESSIONS_TRACK_ACTIVITY = False
USERSESSIONS_ADAPTER = "accounts.user_sessions.UserSessionsAdapter"


# -- Games: limits, your-turn emails, guests --------------------------------------

# Open (unjoined) games one user may have at once.
GAMES_MAX_OPEN_PER_USER = env_int("GAMES_MAX_OPEN_PER_USER", 5, minimum=1)
# Games started against others that the opponent has not moved in yet, in all
# and against any one opponent (self-play not counted).
GAMES_MAX_UNSTARTED_PER_USER = env_int("GAMES_MAX_UNSTARTED_PER_USER", 10, minimum=1)
GAMES_MAX_UNSTARTED_PER_OPPONENT = env_int(
    "GAMES_MAX_UNSTARTED_PER_OPPONENT", 3, minimum=1
)
# Games one user may create or abort per window (each wakes every lobby; 0: off).
GAMES_CREATE_ABORT_LIMIT = env_int("GAMES_CREATE_ABORT_LIMIT", 30, minimum=0)
GAMES_CREATE_ABORT_WINDOW = timedelta(minutes=10)
# Guest accounts one client address (IPv6: its /64) may make per window (0: off).
GAMES_GUEST_CREATE_LIMIT = env_int("GAMES_GUEST_CREATE_LIMIT", 10, minimum=0)
GAMES_GUEST_CREATE_WINDOW = timedelta(hours=1)
# Days without activity after which the worker closes a guest account.
GAMES_GUEST_MAX_IDLE_DAYS = env_int("GAMES_GUEST_MAX_IDLE_DAYS", 30, minimum=1)
# "Your turn" emails: after this many seconds of waiting, at most once per EVERY.
GAMES_TURN_EMAIL_AFTER = env_int("GAMES_TURN_EMAIL_AFTER", 3600, minimum=1)
GAMES_TURN_EMAIL_EVERY = env_int("GAMES_TURN_EMAIL_EVERY", 86400, minimum=1)


# -- Email and background work -----------------------------------------------------

# "default" only queues a message for the task worker, which hands it to "relay":
# the console with debug on, else SMTP (tictactoe_site.jobs.mail).
MAILERS = {
    "default": {"BACKEND": "tictactoe_site.jobs.mail.QueuedEmailBackend"},
    "relay": (
        {"BACKEND": "django.core.mail.backends.console.EmailBackend"}
        if DEBUG
        else {
            "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
            "OPTIONS": {
                "host": env_str("DJANGO_EMAIL_HOST", "localhost"),
                "port": env_int("DJANGO_EMAIL_PORT", 25, minimum=1, maximum=65535),
                "username": env_str("DJANGO_EMAIL_HOST_USER"),
                "password": env_secret("DJANGO_EMAIL_HOST_PASSWORD"),
                "use_tls": env_bool("DJANGO_EMAIL_USE_TLS"),
                # Seconds before a silent mail server is given up (tried later).
                "timeout": env_int("DJANGO_EMAIL_TIMEOUT", 10, minimum=1),
            },
        }
    ),
}
DEFAULT_FROM_EMAIL = env_str(
    "DJANGO_DEFAULT_FROM_EMAIL", "tictactoe <noreply@localhost>"
)
SERVER_EMAIL = DEFAULT_FROM_EMAIL
# The task queue is a database table, run by `python -m tictactoe_site.jobs.worker`.
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}


# -- Languages, time zones, static files -------------------------------------------

# Languages the site ships complete (docs/translating.md); URLs carry none.
LANGUAGE_CODE = "en"
LANGUAGES = [
    ("en", "English"),
    ("fr", "Français"),
    ("de", "Deutsch"),
    ("es", "Español"),
    ("pt-br", "Português (Brasil)"),
    ("ar", "العربية"),
]
# The project's own catalog (templates/); each app keeps its own in <app>/locale/.
LOCALE_PATHS = [BASE_DIR / "tictactoe_site" / "locale"]
USE_I18N = True
# Arabic date and time formats, which Django lacks (tictactoe_site/formats/).
FORMAT_MODULE_PATH = ["tictactoe_site.formats"]
# Times are stored in UTC and shown in the viewer's zone, named.
TIME_ZONE = "UTC"
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = env_path("DJANGO_STATIC_ROOT", BASE_DIR / "staticfiles")
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}


# -- Operations: error reports and logs (metrics: MIDDLEWARE, above) ---------------

# Unhandled errors go to Sentry when set (tictactoe_site.ops.sentry); else sentry_sdk
# is not even loaded.
SENTRY_DSN = env_secret("SENTRY_DSN").strip()
if SENTRY_DSN:
    # What sentry_sdk would refuse with a traceback in every server process.
    _dsn = urlsplit(SENTRY_DSN)
    try:
        _dsn.port  # noqa: B018 (a port that is not a number raises)
    except ValueError:
        _dsn = urlsplit("")
    if not (
        _dsn.scheme in ("http", "https")
        and _dsn.hostname
        and _dsn.username
        and _dsn.path.rpartition("/")[2].isdigit()
    ):
        raise ConfigurationError(
            "SENTRY_DSN is not a Sentry DSN: it looks like "
            "https://<key>@<host>/<project number> (the project's Client Keys "
            "page)."
        )

# Text, or one JSON object per line naming its request (tictactoe_site.ops.logs); the
# server's own lines follow (tictactoe_site.server.serve).
LOG_FORMAT = env_choice("DJANGO_LOG_FORMAT", "text", logs.FORMATS)
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        # The console's, whichever format.
        "plain": (
            {"()": "tictactoe_site.ops.logs.JsonLines"}
            if LOG_FORMAT == "json"
            else {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}
        ),
    },
    "filters": {
        "not_a_probe": {"()": "tictactoe_site.ops.health.NotAProbe"},
        # No invitation's secret in any line, whichever logger writes it.
        "no_secrets": {"()": "tictactoe_site.ops.logs.NoSecrets"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "plain",
            "filters": ["no_secrets"],
        },
    },
    "root": {"handlers": ["console"], "level": "WARNING"},
    "loggers": {
        # Without Django's own handlers (a console in debug, mail to ADMINS),
        # which NoSecrets would not see: its lines reach the console above.
        "django": {},
        # A probe's 503 is logged once, as a warning, by tictactoe_site.ops.health.
        "django.request": {"filters": ["not_a_probe"]},
        "games": {
            "handlers": ["console"],
            "level": env_choice(
                "GAMES_LOG_LEVEL",
                "INFO",
                ["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"],
            ),
            "propagate": False,
        },
        # A failed connection attempt, several a second while the database is
        # away: the live layer says once that it went and once that it is back.
        "psycopg.pool": {"level": "ERROR"},
        # Email given up, failed tasks, a silent task worker: one line each.
        "tictactoe_site": {
            "handlers": ["console"],
            "level": "INFO",
            "propagate": False,
        },
        # One line per request in JSON; in text the proxy's log (or uvicorn's,
        # WEB_ACCESS_LOG) says it.
        "tictactoe_site.access": {
            "level": "INFO" if LOG_FORMAT == "json" else "WARNING"
        },
    },
}
