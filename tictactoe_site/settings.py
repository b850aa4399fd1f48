"""Settings for tictactoe, driven by environment variables with secure defaults.

See README.md ("Configuration") for every variable.
"""

from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import dj_database_url
from django.utils.csp import CSP
from dotenv import load_dotenv

from . import logs
from .env import (
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
from .preflight import is_loopback

BASE_DIR = Path(__file__).resolve().parent.parent

# A development checkout has a .env that `make run` wrote (DJANGO_DEBUG=1), so every
# `manage.py` command runs in development mode there. Variables set in the
# environment win over it: `make serve` sets DJANGO_DEBUG=0.
load_dotenv(BASE_DIR / ".env")


DEBUG = env_bool("DJANGO_DEBUG")

# The one switch for forwarded headers: how many reverse proxies sit in front of
# the app, each appending to X-Forwarded-For. 0: none, and no X-Forwarded-*
# header is believed, by Django or by the server (tictactoe_site.serve). N: the
# client's address is the Nth from the right of X-Forwarded-For
# (accounts.client.client_ip) and X-Forwarded-Proto says whether it was HTTPS.
TRUSTED_PROXY_COUNT = env_int("DJANGO_TRUSTED_PROXY_COUNT", 0, minimum=0)
for _replaced in ("DJANGO_TRUST_X_FORWARDED_PROTO", "FORWARDED_ALLOW_IPS"):
    if env_str(_replaced):
        raise ConfigurationError(
            f"{_replaced} is no longer read: set DJANGO_TRUSTED_PROXY_COUNT to the "
            "number of reverse proxies in front of the app (README, Configuration)."
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
# Earlier keys, still accepted for what they signed (sessions, password-reset
# links, messages) while new signatures use SECRET_KEY: a key rotated this way
# logs nobody out (docs/operations.md). Drop them once those have expired.
SECRET_KEY_FALLBACKS = env_secret_list("DJANGO_SECRET_KEY_FALLBACKS")

ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    # The admin site of accounts.admin_gate: staff open it only with a second factor.
    "accounts.admin_gate.StaffAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    # naturaltime ("3 minutes ago") and its translations (games.templatetags.times).
    "django.contrib.humanize",
    "allauth",
    "allauth.account",
    "allauth.mfa",
    "allauth.usersessions",
    "django_tasks_db",
    "accounts",
    "games",
]

MIDDLEWARE = [
    # The health probes, before anything reads the Host header, redirects to
    # HTTPS or touches the session (tictactoe_site.health).
    "tictactoe_site.health.answer_probes",
    # A request id for every other request, and its access line
    # (tictactoe_site.request_ids): outermost, so every answer has them.
    "tictactoe_site.request_ids.request_ids",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    # A player's saved language over the browser's, and the time zone, from the
    # session (no query) or a visitor's cookie (accounts.preferences).
    "accounts.preferences.apply_preferences",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "games.middleware.reject_nul_bytes",
    "allauth.account.middleware.AccountMiddleware",
    "accounts.middleware.record_activity",
]
# Metrics for the operator at /metrics (tictactoe_site.metrics): on unless
# METRICS_ENABLED=0; answered to loopback clients that come through no proxy,
# and to requests with `Authorization: Bearer <METRICS_TOKEN>`.
METRICS_ENABLED = env_bool("METRICS_ENABLED", default=True)
METRICS_TOKEN = env_secret("METRICS_TOKEN")
if METRICS_ENABLED:
    # Right after the probes: it times everything else, and answers /metrics
    # before the Host header is checked (Prometheus scrapes by address).
    MIDDLEWARE.insert(1, "tictactoe_site.metrics.measure_requests")

ROOT_URLCONF = "tictactoe_site.urls"

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

WSGI_APPLICATION = "tictactoe_site.wsgi.application"
ASGI_APPLICATION = "tictactoe_site.asgi.application"

# Live updates between server processes on several hosts travel through Redis
# pub/sub when this is set (redis://host:6379/0); otherwise through PostgreSQL's
# LISTEN/NOTIFY, or on one host with SQLite through local sockets (games.live).
# Redis carries only these notices, never a session. Off the host: a password
# and TLS (rediss://:password@host:6379/0); games.checks warns at start-up
# without them.
REDIS_URL = env_secret("REDIS_URL").strip()
# What the server processes of one host share as files, with SQLite: the session
# cache (sessions/) and the live-update sockets (live/, without REDIS_URL).
# Private: games.checks refuses to start when another user could write there.
CACHE_DIR = env_path("DJANGO_CACHE_DIR", BASE_DIR / ".cache")
# Open live streams (games.live.streams) one user may hold in one server process.
WEB_MAX_STREAMS_PER_USER = env_int("WEB_MAX_STREAMS_PER_USER", 30, minimum=1)

# Database: an embedded SQLite file unless DATABASE_URL says otherwise.
DATABASES = {
    "default": dj_database_url.parse(
        env_secret("DATABASE_URL").strip() or f"sqlite:///{BASE_DIR / 'db.sqlite3'}",
        # Each thread of a server process keeps its connection between requests.
        conn_max_age=env_int("DJANGO_CONN_MAX_AGE", 60, minimum=0),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # IMMEDIATE transactions take the write lock up front, so concurrent writers
    # queue on busy_timeout instead of failing with "database is locked"; WAL lets
    # readers proceed while a move is being written.
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
    # A fail-fast connect; then, per app process, a small pool of connections
    # (psycopg_pool via Django), one connection per page thread (WEB_THREADS +
    # WEB_ACCOUNT_THREADS, 6 by default): the server holds at most
    # WEB_CONCURRENCY x DJANGO_DB_POOL_MAX connections; keep that below
    # PostgreSQL's max_connections (100 by default) across all app hosts.
    # DJANGO_DB_POOL=0 turns the pool off; then DJANGO_CONN_MAX_AGE keeps
    # connections open between requests instead.
    # Keep the options given in the URL (e.g. ?sslmode=require).
    DATABASES["default"].setdefault("OPTIONS", {}).setdefault(
        "connect_timeout", env_int("DJANGO_DB_CONNECT_TIMEOUT", 5, minimum=1)
    )
    if env_bool("DJANGO_DB_POOL", default=True):
        DATABASES["default"]["CONN_MAX_AGE"] = 0  # Django's pool requires it.
        _pool_min = env_int("DJANGO_DB_POOL_MIN", 1, minimum=0)
        DATABASES["default"]["OPTIONS"]["pool"] = {
            "min_size": _pool_min,
            "max_size": env_int("DJANGO_DB_POOL_MAX", 6, minimum=max(1, _pool_min)),
            # Seconds a request waits for a connection before its 503 page. A
            # healthy pool answers in milliseconds (one connection per page
            # thread, tictactoe_site.bridge); while the database is down every
            # request holds its thread this long, so keep it short, but above the
            # queueing of a reconnect wave's stream authentications.
            "timeout": env_float("DJANGO_DB_POOL_TIMEOUT", 3.0, above=0),
            # A connection attempt that fails (the database restarts) is tried
            # again with a doubling delay (1 s, 2 s, 4 s, ...) until this many
            # seconds have passed, then dropped; the next request that needs a
            # connection tries at once. psycopg_pool's default (300 s) let the
            # delay grow past the outage: pages came back up to 8 s after the
            # database did. With 1 s, within about a second.
            "reconnect_timeout": 1.0,
        }

_SQLITE = DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3"

CACHES = {
    # allauth's limits count here (accounts, below): a table of the database
    # that nothing evicts (accounts.rate_limits), so every process and host
    # shares the counts and no one can reset them by filling it.
    "default": {"BACKEND": "accounts.rate_limits.RateLimitStore"},
    # "pages": rendered game pages and lobbies, per process, keyed by what they
    # show (games.page_cache), so never stale and never shared between processes.
    "pages": {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "LOCATION": "pages",
        "TIMEOUT": 600,
        "OPTIONS": {"MAX_ENTRIES": 2000},
    },
    # "seen": the players whose activity this process recorded lately
    # (accounts.middleware).
    "seen": {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "LOCATION": "seen",
        "OPTIONS": {"MAX_ENTRIES": 100_000},
    },
}
# Sessions: the database is the truth, so a session ended on one host (logout,
# password change or reset, closing, deactivation) is refused by every host on
# its next request, whatever else is configured.
if _SQLITE:
    # One host by construction: sessions are read from a cache every server
    # process of the host shares, a private directory of files, so a request
    # costs no session query, and written through to the database (cached_db).
    # Logging out, or a password change, ends a session in all of them at once.
    CACHES["sessions"] = {
        "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
        "LOCATION": CACHE_DIR / "sessions",
        # Each entry lives as long as its session; past this many files a third
        # are dropped (they are reloaded from the database when used).
        "OPTIONS": {"MAX_ENTRIES": 100_000},
    }
    SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"
    SESSION_CACHE_ALIAS = "sessions"
else:
    # Possibly several hosts: every request reads its session from the database
    # (one small query), never from a copy one host keeps.
    SESSION_ENGINE = "django.contrib.sessions.backends.db"

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {
        "NAME": "django.contrib.auth.password_validation."
        "UserAttributeSimilarityValidator"
    },
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# allauth's backend logs in by username in any casing (accounts/); ModelBackend
# stays for the sessions it started and for the admin.
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "allauth.account.auth_backends.AuthenticationBackend",
]

LOGIN_URL = "account_login"
LOGIN_REDIRECT_URL = "lobby"
LOGOUT_REDIRECT_URL = "account_login"

# Languages the site ships complete (README, "Languages"). The browser's
# Accept-Language picks one at first; the language menu (Django's set_language)
# sets the cookie, and a player's choice is saved on their account. URLs carry
# no language prefix, so a shared link works in every language.
LANGUAGE_CODE = "en"
LANGUAGES = [
    ("en", "English"),
    ("fr", "Français"),
    ("de", "Deutsch"),
    ("es", "Español"),
    ("pt-br", "Português (Brasil)"),
    ("ar", "العربية"),
]
# The project's own catalog: the messages of templates/ (each app keeps its own
# in <app>/locale/).
LOCALE_PATHS = [BASE_DIR / "tictactoe_site" / "locale"]
USE_I18N = True
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

# Messages travel in a signed cookie: showing one changes no session, so a page
# that only reads writes nothing (WEB_READS_ON_LOOP).
MESSAGE_STORAGE = "django.contrib.messages.storage.cookie.CookieStorage"

# Security headers. HTTPS-only settings are opt-in so that `make run` works over
# plain HTTP; README's "Deploying" section lists what to set in production.
# The health probes answer plain HTTP before this (tictactoe_site.health).
SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT")
SESSION_COOKIE_SECURE = env_bool("DJANGO_SECURE_COOKIES")
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
# The language menu's cookie (set_language); the time zone cookie of visitors
# follows the same switch (accounts.preference_views).
LANGUAGE_COOKIE_SECURE = SESSION_COOKIE_SECURE
LANGUAGE_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
SECURE_HSTS_SECONDS = env_int("DJANGO_HSTS_SECONDS", 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("DJANGO_HSTS_INCLUDE_SUBDOMAINS")
SECURE_HSTS_PRELOAD = env_bool("DJANGO_HSTS_PRELOAD")
# Behind a reverse proxy (TRUSTED_PROXY_COUNT, above), the proxy says whether the
# browser used HTTPS; without one, X-Forwarded-* headers are a client's claims.
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
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "object-src": [CSP.NONE],
}

# Error reports (tictactoe_site.sentry): unhandled errors of pages, streams and
# the task worker go to Sentry when this is set; else sentry_sdk is not loaded.
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

# Log lines: readable text, or one JSON object per line with the request's id,
# user and route (tictactoe_site.logs), and an access line per request
# (tictactoe_site.request_ids). The server's own lines follow the same format
# (tictactoe_site.serve).
LOG_FORMAT = env_choice("DJANGO_LOG_FORMAT", "text", logs.FORMATS)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        # The console's, whichever format.
        "plain": (
            {"()": "tictactoe_site.logs.JsonLines"}
            if LOG_FORMAT == "json"
            else {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}
        ),
    },
    "filters": {"not_a_probe": {"()": "tictactoe_site.probes.NotAProbe"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "plain"},
    },
    "root": {"handlers": ["console"], "level": "WARNING"},
    "loggers": {
        # A probe's 503 is logged once, as a warning, by tictactoe_site.health.
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

# Anti-spam: how many open (unjoined) games one user may have at once.
GAMES_MAX_OPEN_PER_USER = env_int("GAMES_MAX_OPEN_PER_USER", 5, minimum=1)
# Anti-flood: how many games one user may have started against other players in
# which the opponent has not moved yet, in all and against any one opponent
# (self-play is not limited).
GAMES_MAX_UNSTARTED_PER_USER = env_int("GAMES_MAX_UNSTARTED_PER_USER", 10, minimum=1)
GAMES_MAX_UNSTARTED_PER_OPPONENT = env_int(
    "GAMES_MAX_UNSTARTED_PER_OPPONENT", 3, minimum=1
)
# Anti-churn: how many games one user may create or abort within
# GAMES_CREATE_ABORT_WINDOW (games.views; 0: no limit). Each such change wakes
# every lobby, so creating and aborting in a loop is slowed down here.
GAMES_CREATE_ABORT_LIMIT = env_int("GAMES_CREATE_ABORT_LIMIT", 30, minimum=0)
GAMES_CREATE_ABORT_WINDOW = timedelta(minutes=10)
# How many guest accounts one client address (an IPv6 /64 counts as one) may
# make per GAMES_GUEST_CREATE_WINDOW (accounts.guests; 0: no limit).
GAMES_GUEST_CREATE_LIMIT = env_int("GAMES_GUEST_CREATE_LIMIT", 10, minimum=0)
GAMES_GUEST_CREATE_WINDOW = timedelta(hours=1)

CSRF_FAILURE_VIEW = "games.errors.csrf_failure"

# -- Accounts (django-allauth's account app; our own code in accounts/) ---------
# Sign-up with a username and an optional email address; an address is used (for
# password resets) only once its owner confirmed it, and is unique among confirmed
# addresses in any case. No page, status, cookie or timing says whether an address
# belongs to someone: a sign-up or change with a taken address goes ahead like any
# other (the new address stays unconfirmed for good; its owner gets a notice
# instead of a confirmation link, accounts.adapter). Usernames are unique in any
# case and Unicode spelling (a unique key per name, accounts.usernames).
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
# Changing the address asks for the password again (accounts.adapter counts a
# wrong one as a failed login); so do the password change and closing.
ACCOUNT_REAUTHENTICATION_REQUIRED = True
ACCOUNT_REAUTHENTICATION_METHODS = ["password"]
ACCOUNT_LOGOUT_ON_GET = False
ACCOUNT_LOGIN_ON_PASSWORD_RESET = False
ACCOUNT_EMAIL_SUBJECT_PREFIX = "[tictactoe] "
ACCOUNT_SIGNUP_FORM_HONEYPOT_FIELD = None
# Sessions last as long as Django's SESSION_COOKIE_AGE: no "Remember me" box.
ACCOUNT_SESSION_REMEMBER = True
# Limits: after LOGIN_FAILURE_LIMIT failed logins (or password checks) for one
# username, or from one client address, logging in answers 429 for
# LOGIN_COOLOFF_MINUTES; a success does not clear the count (it would let an
# attacker clear an address's count with an account of their own). Reset requests
# and confirmation mails: at most PASSWORD_RESET_LIMIT per email address and per
# client address in the same time. Client addresses: accounts.client; IPv6 counts
# per /64. 0 turns a limit off. The counts live in a table of their own
# (CACHES["default"], above): every process and host shares them, and a lock row
# makes each count atomic. allauth checks a limit's rates in the order given and
# stops at the first refusal: the client address first, so a paused address
# writes no count for each username it tries (and an attempt refused for its
# username still counts for its address). Every limit that can answer 429,
# with its number: README ("Limits"), and accounts.refusals says its wait.
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

# Two-factor authentication (allauth.mfa): an authenticator app (TOTP) with
# recovery codes, security keys and passkeys (WebAuthn), and logging in with a
# passkey alone. Set up and removed from the account page, each change after the
# password again (ACCOUNT_REAUTHENTICATION_METHODS), with a notice mailed to the
# confirmed address (accounts.mfa_adapter). A wrong code counts as a failed login
# (allauth's "login_failed" limit, above), per account and per client address.
# Staff open the admin only with a second factor (accounts.admin_gate).
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
# A code is also accepted in the 30 s before and after its own (a phone's clock
# drifts; a code typed at the end of its time reaches the server in the next).
# Each is accepted once.
MFA_TOTP_TOLERANCE = 1
# An address is used only once confirmed here (password resets, notices), so an
# unconfirmed one blocks neither setting up a second factor nor changing the
# address afterwards (allauth's default forbids both).
MFA_ALLOW_UNVERIFIED_EMAIL = True
# Signed-in browsers (allauth.usersessions; the account page lists them and ends
# them, accounts.user_sessions): recorded at login only, so no middleware.
# Tracking activity (USERSESSIONS_TRACK_ACTIVITY and UserSessionsMiddleware)
# would write on every page of a logged-in player, pages that only read
# included: measured, the game page and the lobby went from 2 statements to 7
# (a transaction, 2 SELECTs and an UPDATE of the session's row), each GET taking
# SQLite's write lock.
USERSESSIONS_TRACK_ACTIVITY = False
USERSESSIONS_ADAPTER = "accounts.user_sessions.UserSessionsAdapter"
# Confirmation keys are signed (HMAC), never stored: the worker makes them from
# the address when it sends the mail (accounts.account_mail).
ACCOUNT_EMAIL_CONFIRMATION_HMAC = True
# -- end of accounts ------------------------------------------------------------


# Email, as Django 6.1's MAILERS. "default", what the code sends with, only queues
# the message for the background worker (tictactoe_site.mail): no request waits
# on a mail server. The worker hands it to "relay": printed to the console in
# development (DEBUG), sent over SMTP in production to the server the
# DJANGO_EMAIL_* variables name. Tests get Django's in-memory outbox.
MAILERS = {
    "default": {"BACKEND": "tictactoe_site.mail.QueuedEmailBackend"},
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
                # Seconds: a mail server that does not answer must not hold the
                # worker for ever (the message is tried again later).
                "timeout": env_int("DJANGO_EMAIL_TIMEOUT", 10, minimum=1),
            },
        }
    ),
}
DEFAULT_FROM_EMAIL = env_str(
    "DJANGO_DEFAULT_FROM_EMAIL", "tictactoe <noreply@localhost>"
)
SERVER_EMAIL = DEFAULT_FROM_EMAIL

# A password-reset link works once, for this many seconds (default one hour).
PASSWORD_RESET_TIMEOUT = env_int("DJANGO_PASSWORD_RESET_TIMEOUT", 3600, minimum=1)

# "Your turn" emails (accounts.turn_emails): sent when a game has waited on an
# opted-in player this many seconds, at most once per GAMES_TURN_EMAIL_EVERY.
GAMES_TURN_EMAIL_AFTER = env_int("GAMES_TURN_EMAIL_AFTER", 3600, minimum=1)
GAMES_TURN_EMAIL_EVERY = env_int("GAMES_TURN_EMAIL_EVERY", 86400, minimum=1)

# A guest account without activity (accounts.models.Guest.last_active_at) for
# this many days is closed by the worker's housekeeping (tictactoe_site.housekeeping).
GAMES_GUEST_MAX_IDLE_DAYS = env_int("GAMES_GUEST_MAX_IDLE_DAYS", 30, minimum=1)


# The site's address as players reach it: the links in emails start with it.
# Production must say it: this machine's own address reaches no player.
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
# ".localhost" in ALLOWED_HOSTS (a domain and its subdomains) is this machine too.
_public_hosts = [host for host in ALLOWED_HOSTS if not is_loopback(host.lstrip("."))]
if not DEBUG and is_loopback(_site.hostname) and _public_hosts:
    raise ConfigurationError(
        f"DJANGO_SITE_URL names this machine ({SITE_URL}) while "
        f"DJANGO_ALLOWED_HOSTS names {_public_hosts[0]}: set it to the site's "
        "address as players reach it (links in emails start with it)."
    )

# Background work (email): Django's tasks framework, the database as the queue
# (django-tasks-db), run by `python -m tictactoe_site.worker`.
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}

# Page threads per server process (tictactoe_site.bridge): a page that may write
# or wait never runs on the event loop that serves the live streams.
WEB_THREADS = env_int("WEB_THREADS", 4, minimum=1)
# GET and HEAD pages run on the event loop itself, saving each the hand-offs to
# a thread, where every read is local: a SQLite file and the session cache in
# CACHE_DIR. Turn it off when the SQLite file lives on a network file system.
WEB_READS_ON_LOOP = env_bool("WEB_READS_ON_LOOP", default=_SQLITE)
if WEB_READS_ON_LOOP and not _SQLITE:
    raise ConfigurationError(
        "WEB_READS_ON_LOOP needs every read to be local: a SQLite database (reads "
        "from another machine would hold up the live streams)."
    )
# Threads for the account pages, which hash passwords, at a lower CPU priority.
WEB_ACCOUNT_THREADS = env_int("WEB_ACCOUNT_THREADS", 2, minimum=1)
# Each server process runs its event loop and page threads on one CPU of its own
# (Linux; tictactoe_site.cpus). Turn it off on a host whose CPUs are reserved for
# something else.
WEB_PIN_CPUS = env_bool("WEB_PIN_CPUS", default=True)
