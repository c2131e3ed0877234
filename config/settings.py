"""Django settings for Berth.

Everything that differs between development and production comes from the environment:
DATABASE_URL (else an embedded Postgres under .pgdata/), DJANGO_SECRET_KEY, DJANGO_DEBUG,
DJANGO_ALLOWED_HOSTS, CSRF_TRUSTED_ORIGINS, BERTH_TLS (TLS is terminated by a proxy in front),
EMAIL_HOST and EMAIL_* (password reset by mail), BERTH_TOKEN_DAYS. README.md, "Production", lists them.
"""

import os
import re
import shlex
from datetime import timedelta
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

from config import database_url, env
from config.logs import logging_config

BASE_DIR = Path(__file__).resolve().parent.parent

# On by default only when no secret key is set: a development checkout, or the tests.
DEBUG = env.flag("DJANGO_DEBUG", "DJANGO_SECRET_KEY" not in os.environ)
SECRET_KEY = env.secret_key(DEBUG)
ALLOWED_HOSTS = env.words("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,testserver")
CSRF_TRUSTED_ORIGINS = env.words("CSRF_TRUSTED_ORIGINS")
# The "Form expired" page in the browser; JSON 403 under /api/.
CSRF_FAILURE_VIEW = "config.outage.csrf_failure"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "django_htmx",
    "django_filters",
    "axes",
    "simple_history",
    "trail",
    "inventory",
    "capacity",
    "maintenance",  # the maintenance windows, on top of capacity
    "policy",  # the pool rules capacity calls through capacity.rules
    "series",  # recurring bookings capacity hands over through capacity.series_hooks
    "usage",
    "whatif",  # before webhooks: run_placer --once runs its job first, as when capacity held it
    "webhooks",
    "metrics",  # counts what capacity tells (capacity.observe); answers /metrics
    "slurm",  # the bridge to a Slurm cluster (docs/slurm.md)
    "devtools",
    "identity",
    "agents",  # the node agent's report and assignments feed, on top of capacity
    "auditlog",
]

# Content-Security-Policy (Django's own): scripts only from Berth's static files (no inline script
# anywhere, htmx included); inline styles allowed, as the GPU grids and timelines place bars with
# style attributes and htmx its indicator style. Swagger's page relaxes it (config/api/docs.py).
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF, CSP.UNSAFE_INLINE],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.SELF],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}

MIDDLEWARE = [
    # First: every answer, errors included, carries the request's id (X-Request-Id), and every audit
    # row written while serving it names it (trail/middleware.py).
    "trail.middleware.RequestId",
    # Outermost: whatever answers an error under /api/ (Django itself included), it reads as JSON.
    "config.middleware.ApiErrorsAreJson",
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "config.middleware.RejectUnstorableInput",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    # Django's, with the user read in the session's own statement (identity/sessions.py).
    "identity.sessions.Authentication",
    "django.contrib.messages.middleware.MessageMiddleware",
    # A session signed in through the identity provider is checked with it again every
    # BERTH_OIDC_RECHECK minutes (identity/middleware.py); nothing happens without BERTH_OIDC_ISSUER.
    "identity.middleware.RecheckWithProvider",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # After authentication: history rows name the signed-in user who made the change.
    "simple_history.middleware.HistoryRequestMiddleware",
    # A successful write sends its client's next reads to the primary (config/replica.py).
    "config.replica.PinAfterWrite",
    # Last, as django-axes asks: it turns a locked-out sign-in into the lockout page.
    "axes.middleware.AxesMiddleware",
]

# Sessions read with their user, operator group and tenants in one statement (identity/sessions.py).
SESSION_ENGINE = "identity.sessions"

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

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
            ],
        },
    },
]

if os.environ.get("DATABASE_URL"):
    _database_url = os.environ["DATABASE_URL"]
else:
    # Started here, not in conftest.py: pytest-django reads settings before any conftest runs.
    from config.embedded_db import embedded_database_url

    _database_url = embedded_database_url(Path(os.environ.get("BERTH_PGDATA", BASE_DIR / ".pgdata")))
# Several hosts (a primary and its standbys) are libpq's multi-host form: config/database_url.py.
# Health checks: a kept connection that died with a failed-over primary is replaced before a
# request uses it, so the first request after a failover does not answer 503.
try:
    DATABASES = {"default": database_url.parse(_database_url, conn_max_age=60, conn_health_checks=True)}
except database_url.BadURL as err:
    raise ImproperlyConfigured(str(err)) from None


# Prepared statements for the placer's server-bound cursors (capacity/db/cursors.py): planned once
# per connection. Django's own cursors bind on the client and are never prepared, so this changes
# nothing for the ORM. A transaction-pooling proxy such as PgBouncer needs both turned off.
# JIT off: Postgres compiles a query whose estimated cost passes jit_above_cost, and the pool list's
# capacity query (0.18 s of work at 10,000 nodes) spent 0.33 s more compiling (bench_scale). Every
# Berth query answers a person or a placer waiting for it; none runs long enough to earn it back.
def _berth_options(config: dict) -> dict:
    options = config.setdefault("OPTIONS", {})
    options["prepare_threshold"] = 0
    options["options"] = (
        f"{options.get('options', '')} -c plan_cache_mode=force_generic_plan -c jit=off".strip()
    )
    return config


_berth_options(DATABASES["default"])
# One test database per test process, so several runs (or CI and a developer) never collide.
DATABASES["default"]["TEST"] = {"NAME": f"test_{DATABASES['default']['NAME']}_{os.getpid()}"}

# A streaming replica for the pages and GET endpoints that only read (config/replica.py): its
# connection is given up on after 2 s (reads then go to the primary), and tests read it as a
# mirror of the test database. Several hosts here are tried in order, standbys first.
if os.environ.get("DATABASE_REPLICA_URL"):
    try:
        DATABASES["replica"] = _berth_options(
            database_url.parse(
                os.environ["DATABASE_REPLICA_URL"],
                conn_max_age=60,
                conn_health_checks=True,
                target_session_attrs="prefer-standby",
                connect_timeout=2,
            )
        )
    except database_url.BadURL as err:
        raise ImproperlyConfigured(str(err).replace("DATABASE_URL", "DATABASE_REPLICA_URL")) from None
    DATABASES["replica"]["TEST"] = {"MIRROR": "default"}
# A replica further behind than this (seconds of WAL received but not yet replayed) is not read.
REPLICA_MAX_LAG_SECONDS = env.number("BERTH_REPLICA_MAX_LAG_SECONDS", 5)
# After a write, the writer's reads go to the primary this long (the `berth_primary` cookie).
REPLICA_PIN_SECONDS = env.number("BERTH_REPLICA_PIN_SECONDS", 15)
# A replica that did not answer is asked again after this long; reads go to the primary meanwhile.
REPLICA_RETRY_SECONDS = env.number("BERTH_REPLICA_RETRY_SECONDS", 10)

# Rendered page fragments (capacity/views/page_cache.py), shared by every process and host: the
# database's cache table (one statement a read), or Redis at BERTH_REDIS_URL (docs/operations.md).
BERTH_REDIS_URL = os.environ.get("BERTH_REDIS_URL", "").strip()
if BERTH_REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": BERTH_REDIS_URL,
            "KEY_PREFIX": os.environ.get("BERTH_CACHE_PREFIX", "berth"),
        }
    }
else:
    CACHES = {
        "default": {
            "BACKEND": "config.cache.DatabaseCache",  # Django's, storing many keys in one statement
            "LOCATION": "berth_cache",
            # Fragments live 30 s at most but their rows go only when the table is culled (past
            # this many): each is tens of KB, so the table stays small whatever the churn.
            "OPTIONS": {"MAX_ENTRIES": 2_000},
        }
    }
# How long a fragment may stand for pages whose bookings did not change: what time alone changes
# (a booking a week ahead entering the grid) shows within this many seconds.
PAGE_CACHE_SECONDS = env.number("BERTH_PAGE_CACHE_SECONDS", 30)
if "replica" in DATABASES and not BERTH_REDIS_URL:
    # The database cache cannot keep fragments through a replica's connection, and a stopped
    # replica held the pool page past 30 s (tests/ha): with a replica, Redis keeps them or nothing does.
    PAGE_CACHE_SECONDS = 0

# Fair share (docs/shares.md): GPU-hours booked weigh half after this many hours (default 7 days).
FAIRSHARE_HALF_LIFE_HOURS = env.number("BERTH_FAIRSHARE_HALF_LIFE", 7 * 24)
if FAIRSHARE_HALF_LIFE_HOURS <= 0:
    raise ImproperlyConfigured("BERTH_FAIRSHARE_HALF_LIFE: a whole number of hours above 0.")

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("BERTH_STATIC_ROOT") or BASE_DIR / "staticfiles")
# Served by WhiteNoise from STATIC_ROOT (`collectstatic`) with hashed, compressed names when DEBUG is
# off; with DEBUG on (development, and the tests, whose settings load with DEBUG on) from the source
# folders as they are, so nothing needs collecting first.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}

LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "config.api.auth.StrictTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": ["config.api.parsers.StrictJSONParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "config.api.exceptions.api_exception_handler",
    # An unknown ?format= is ignored as any undeclared parameter is (DRF's own answers 404).
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "config.api.negotiation.FormatOrAccept",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Berth API",
    "DESCRIPTION": "Book GPU capacity: reservations, previews, pools and nodes.",
    "VERSION": "1.0.0",
    # Nullable references valid for a strict 3.0.3 validator; errors any operation may answer.
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "config.api.schema.nullable_references",
        "config.api.schema.common_errors",
    ],
    # A node's state in the node lists and a drain's state share the field name `state`.
    "ENUM_NAME_OVERRIDES": {
        "DrainStateEnum": "maintenance.node_api.DRAIN_STATES",
        "MaintenanceWindowStateEnum": "maintenance.api.WINDOW_STATES",
        "NodeStateEnum": "inventory.states.NAMES",
        "ReservationStatusEnum": "capacity.api.serializers.RESERVATION_STATUSES",
        "PriorityEnum": "capacity.api.serializers.PRIORITIES",
        "WebhookEventEnum": "webhooks.models.EVENT_TYPES",
    },
}

# Mirrors the spec's betterCompute({ capacity, scheduler }) options.
CAPACITY = {
    # "inline" places in the request; "pool-lease" queues it for `manage.py run_placer` (batches).
    "PLACER": os.environ.get("BERTH_PLACER", "inline"),
    "MAX_BATCH": 64,
    # After a batch that was not full, run_placer waits this long for more before the next one.
    "BATCH_LINGER_MS": 10,
    "MAX_ATTEMPTS": 3,
    "SCHEDULER": {"PLUGINS": [], "WEIGHTS": {}, "TOP_N": 5},
}

# Waits hold a web thread each: an agent's long-poll of its assignments (`?wait=`) and a create's
# wait for the placer. At most half of a process's web threads wait at once, and at most
# LONG_POLLS_PER_CREDENTIAL long-polls of one credential; past either a request answers at once
# (capacity/waits.py). gunicorn.conf.py sets BERTH_WEB_THREADS from its --threads; unset (runserver
# starts a thread per request) only the per-credential bound holds.
WEB_THREADS = env.number("BERTH_WEB_THREADS", 0)
LONG_POLLS_PER_CREDENTIAL = env.number("BERTH_LONG_POLLS_PER_CREDENTIAL", 2)

# A node whose own credential (its agent) has reported goes stale, not schedulable for new work,
# when its agent has not reported for this long (run_placer checks every housekeeping round).
NODE_STALE_AFTER = timedelta(minutes=env.number("BERTH_NODE_STALE_MINUTES", 5))

# API tokens stop working this many days after they are issued (config/api/auth.py).
TOKEN_DAYS = env.number("BERTH_TOKEN_DAYS", 90)

# Sign-in limits (django-axes): the 5th wrong password for one username from one address locks that
# pair out for 15 minutes; the page says so (registration/locked.html).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    # Passwords; with BERTH_LOCAL_LOGIN=0 only superusers' (break glass): identity/backends.py.
    "identity.backends.LocalPasswordBackend",
    # OpenID Connect sign-in (docs/sso.md): answers only the provider's callback.
    "identity.backends.OidcBackend",
]
AXES_FAILURE_LIMIT = 5
AXES_COOLOFF_TIME = timedelta(minutes=env.number("BERTH_LOGIN_LOCKOUT_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "config.accounts.locked_out"
AXES_CLIENT_IP_CALLABLE = "config.accounts.client_ip"
AXES_VERBOSE = False

# Mail (Django 6.1's MAILERS): only when EMAIL_HOST is set. Without it Berth sends none, and the
# password reset pages say to ask an operator (config/accounts.py) instead of dialling localhost:25;
# anything else that tried to send would fail loudly (config/mail.py) rather than dial anyone.
MAIL_CONFIGURED = bool(os.environ.get("EMAIL_HOST", "").strip())
MAILERS = (
    {
        "default": {
            "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
            "OPTIONS": {
                "host": os.environ["EMAIL_HOST"].strip(),
                "port": env.number("EMAIL_PORT", 587),
                "username": os.environ.get("EMAIL_HOST_USER", ""),
                "password": os.environ.get("EMAIL_HOST_PASSWORD", ""),
                "use_tls": env.flag("EMAIL_USE_TLS", True),
                "timeout": 10,
            },
        }
    }
    if MAIL_CONFIGURED
    else {"default": {"BACKEND": "config.mail.NoMailServer"}}
)
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "berth@localhost")

# Errors to stderr with their traceback and request (config/logs.py), and mailed to ADMINS
# (DJANGO_ADMINS, comma-separated addresses) when a mail server is set.
ADMINS = env.words("DJANGO_ADMINS")
SERVER_EMAIL = os.environ.get("SERVER_EMAIL", DEFAULT_FROM_EMAIL)
LOGGING = logging_config(mail_admins=bool(ADMINS) and MAIL_CONFIGURED)

# TLS terminated by a proxy in front (BERTH_TLS=1): it sets X-Forwarded-Proto and X-Forwarded-For.
BERTH_TLS = env.flag("BERTH_TLS", False)
if BERTH_TLS:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env.number("BERTH_HSTS_SECONDS", 31_536_000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env.flag("BERTH_HSTS_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env.flag("BERTH_HSTS_PRELOAD", True)

# Webhooks (webhooks/): the lead of `reservation.starting` and `.ending`; how long a delivery is
# retried and a failing subscription kept on; how long the delivery log is kept.
WEBHOOK_LEAD_MINUTES = int(os.environ.get("BERTH_WEBHOOK_LEAD_MINUTES", "15"))
WEBHOOK_GIVE_UP_HOURS = 24
WEBHOOK_DISABLE_AFTER_HOURS = 24
WEBHOOK_LOG_DAYS = 7

# The Slurm bridge: scontrol (run as the SlurmUser), slurm.conf, each call's deadline, the prefix of
# Berth's reservations, the Flags=MAINT ones' users, the timed pass (docs/slurm.md, Setting it up).
SLURM = {
    "SCONTROL": shlex.split(os.environ.get("BERTH_SLURM_SCONTROL", "scontrol")),
    "CONF": os.environ.get("BERTH_SLURM_CONF", os.environ.get("SLURM_CONF", "")),
    "TIMEOUT": float(os.environ.get("BERTH_SLURM_TIMEOUT", "10")),
    "PREFIX": "berth-",
    "MAINT_USERS": ["root"],
    "PASS_EVERY": float(os.environ.get("BERTH_SLURM_PASS_SECONDS", "30")),
}

# Utilization samples (usage/folds.py): raw minutes are kept USAGE_RAW_DAYS, each hour is
# folded into one row per device once it is over, and hourly rows are kept USAGE_HOURLY_DAYS.
USAGE_RAW_DAYS = env.number("BERTH_USAGE_RAW_DAYS", 14)
USAGE_HOURLY_DAYS = env.number("BERTH_USAGE_HOURLY_DAYS", 366)
# The idle check reads IDLE_AFTER of raw minutes and unbooked use the last day: fewer raw days lose them.
if USAGE_RAW_DAYS < 1:
    raise ImproperlyConfigured(f"BERTH_USAGE_RAW_DAYS={USAGE_RAW_DAYS}: keep raw minutes 1 day at least.")

# Device bookings and scalar claims that ended more than HISTORY_AFTER ago leave the live tables for
# history tables partitioned by month (capacity/archive.py); a window may start at most 5 minutes
# in the past, so nothing new can meet them.
HISTORY_AFTER_DAYS = env.number("BERTH_HISTORY_AFTER_DAYS", 30)
if HISTORY_AFTER_DAYS < 1:
    raise ImproperlyConfigured(
        f"BERTH_HISTORY_AFTER_DAYS={HISTORY_AFTER_DAYS}: keep bookings live 1 day at least."
    )
HISTORY_AFTER = timedelta(days=HISTORY_AFTER_DAYS)

# Idle bookings (usage/idle.py): a running reservation whose GPUs averaged under
# IDLE_GPU_PERCENT for the last IDLE_AFTER reads Idle.
IDLE_GPU_PERCENT = env.number("BERTH_IDLE_GPU_PERCENT", 5)
IDLE_AFTER = timedelta(minutes=env.number("BERTH_IDLE_AFTER_MINUTES", 120))
# Opt-in: release a reservation still Idle this long after it was marked (off unless set).
IDLE_RELEASE_AFTER = (
    timedelta(minutes=env.number("BERTH_IDLE_RELEASE_AFTER_MINUTES", 0))
    if os.environ.get("BERTH_IDLE_RELEASE_AFTER_MINUTES")
    else None
)

# The audit export (auditlog/, docs/audit.md): sign-ins are kept this many days.
AUDIT_DAYS = env.number("BERTH_AUDIT_DAYS", 400)
if AUDIT_DAYS < 1:
    raise ImproperlyConfigured(f"BERTH_AUDIT_DAYS={AUDIT_DAYS}: keep sign-ins 1 day at least.")

# OpenID Connect sign-in (identity/, docs/sso.md), through mozilla-django-oidc. Off unless
# BERTH_OIDC_ISSUER is set; the provider's endpoints come from its discovery document, read once.
BERTH_OIDC_ISSUER = os.environ.get("BERTH_OIDC_ISSUER", "").strip().rstrip("/")
OIDC_RP_CLIENT_ID = os.environ.get("BERTH_OIDC_CLIENT_ID", "").strip()
OIDC_RP_CLIENT_SECRET = os.environ.get("BERTH_OIDC_CLIENT_SECRET", "")
if BERTH_OIDC_ISSUER and not OIDC_RP_CLIENT_ID:
    raise ImproperlyConfigured("BERTH_OIDC_ISSUER is set: set BERTH_OIDC_CLIENT_ID (and its secret) too.")
OIDC_RP_SCOPES = os.environ.get("BERTH_OIDC_SCOPES", "openid email profile").strip()
BERTH_OIDC_GROUPS_CLAIM = os.environ.get("BERTH_OIDC_GROUPS_CLAIM", "groups").strip()
BERTH_OIDC_TENANT_GROUP_PREFIX = os.environ.get("BERTH_OIDC_TENANT_GROUP_PREFIX", "berth-tenant-")
BERTH_OIDC_OPERATOR_GROUP = os.environ.get("BERTH_OIDC_OPERATOR_GROUP", "berth-operators").strip()
# A session signed in through the provider is checked with it again after this many minutes.
OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS = 60 * env.number("BERTH_OIDC_RECHECK", 15)
# BERTH_LOCAL_LOGIN=0: passwords only for superusers (break glass); everyone else signs in by SSO.
BERTH_LOCAL_LOGIN = env.flag("BERTH_LOCAL_LOGIN", True)
OIDC_USE_PKCE = True
OIDC_PKCE_CODE_CHALLENGE_METHOD = "S256"
OIDC_USE_NONCE = True
OIDC_STORE_ID_TOKEN = True  # the id_token_hint of the provider's sign-out
OIDC_TIMEOUT = env.number("BERTH_OIDC_TIMEOUT_SECONDS", 5)
OIDC_CREATE_USER = True
# The re-check leaves the API alone (tokens, or a page's own fetches, which cannot follow a redirect).
OIDC_EXEMPT_URLS = [re.compile(r"^/(api|static)/"), "/accounts/login/", "/accounts/logout/"]
LOGIN_REDIRECT_URL_FAILURE = "/accounts/login/"
# The sign-out form's redirect to the provider's end_session_endpoint: browsers hold redirects after
# a form post to form-action too.
if BERTH_OIDC_ISSUER:
    from urllib.parse import urlsplit

    _issuer = urlsplit(BERTH_OIDC_ISSUER)
    SECURE_CSP["form-action"] = [*SECURE_CSP["form-action"], f"{_issuer.scheme}://{_issuer.netloc}"]
