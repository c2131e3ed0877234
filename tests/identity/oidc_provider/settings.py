"""Settings of the test provider: SQLite in its own folder, OIDC on, RS256 key from the environment."""

import os

SECRET_KEY = "test-provider-only"
DEBUG = False
ALLOWED_HOSTS = ["*"]
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "oauth2_provider",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]
ROOT_URLCONF = "oidc_provider.urls"
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": os.environ["PROVIDER_DB"]}}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
LOGIN_URL = "/login/"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
TEMPLATES = [{"BACKEND": "django.template.backends.django.DjangoTemplates", "APP_DIRS": True}]
OAUTH2_PROVIDER = {
    "OIDC_ENABLED": True,
    "OIDC_RSA_PRIVATE_KEY": os.environ["PROVIDER_RSA_KEY"],
    "PKCE_REQUIRED": True,
    "SCOPES": {"openid": "OpenID Connect", "email": "E-mail", "profile": "Profile"},
    "OAUTH2_VALIDATOR_CLASS": "oidc_provider.validator.KnobbedValidator",
    "OIDC_RP_INITIATED_LOGOUT_ENABLED": True,
    "OIDC_RP_INITIATED_LOGOUT_ALWAYS_PROMPT": False,
}
LOGGING = {
    "version": 1,
    "handlers": {"stderr": {"class": "logging.StreamHandler"}},
    "loggers": {"django.request": {"handlers": ["stderr"], "level": "ERROR"}},
}
# Cookies are per host, not per port: on 127.0.0.1 beside Berth, the provider's must not overwrite Berth's.
SESSION_COOKIE_NAME = "provider_session"
