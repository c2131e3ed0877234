"""Django settings for Berth.

Everything that differs between development and production comes from the environment:
DATABASE_URL (else an embedded Postgres under .pgdata/), DJANGO_SECRET_KEY, DJANGO_DEBUG,
DJANGO_ALLOWED_HOSTS.
"""

import os
from pathlib import Path

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = os.environ.get("DJANGO_DEBUG", "1" if "DJANGO_SECRET_KEY" not in os.environ else "0") == "1"
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "dev-only-insecure-key-do-not-use-in-production")
if not DEBUG and SECRET_KEY.startswith("dev-only"):
    raise RuntimeError("Set DJANGO_SECRET_KEY when DJANGO_DEBUG is off.")
ALLOWED_HOSTS = os.environ.get("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",")

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
    "simple_history",
    "inventory",
    "capacity",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "config.middleware.RejectUnstorableInput",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # After authentication: history rows name the signed-in user who made the change.
    "simple_history.middleware.HistoryRequestMiddleware",
]

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
DATABASES = {"default": dj_database_url.parse(_database_url, conn_max_age=60)}
# Prepared statements for the placer's server-bound cursors (capacity/placers/db.py): planned once
# per connection. Django's own cursors bind on the client and are never prepared, so this changes
# nothing for the ORM. A transaction-pooling proxy such as PgBouncer needs both turned off.
_options = DATABASES["default"].setdefault("OPTIONS", {})
_options["prepare_threshold"] = 0
_options["options"] = f"{_options.get('options', '')} -c plan_cache_mode=force_generic_plan".strip()
# One test database per test process, so several runs (or CI and a developer) never collide.
DATABASES["default"]["TEST"] = {"NAME": f"test_{DATABASES['default']['NAME']}_{os.getpid()}"}

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
STATIC_ROOT = BASE_DIR / "staticfiles"

LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "capacity.api.auth.StrictTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": ["capacity.api.parsers.StrictJSONParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "capacity.errors.api_exception_handler",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Berth API",
    "DESCRIPTION": "Book GPU capacity: reservations, previews, pools and nodes.",
    "VERSION": "1.0.0",
    # A node's state in the node lists and a drain's state share the field name `state`.
    "ENUM_NAME_OVERRIDES": {
        "DrainStateEnum": "capacity.api.drain.DRAIN_STATES",
        "NodeStateEnum": "inventory.api.serializers.NODE_STATES",
    },
}

# Mirrors the spec's betterCompute({ capacity, scheduler }) options.
CAPACITY = {
    # "inline" places in the request; "pool-lease" queues it for `manage.py run_placer` (batches).
    "PLACER": os.environ.get("BERTH_PLACER", "inline"),
    "MAX_BATCH": 64,
    "MAX_ATTEMPTS": 3,
    "SCHEDULER": {"PLUGINS": [], "WEIGHTS": {}, "TOP_N": 5},
}
