"""Read settings from the environment: flags, lists and the secret key, refusing values that cannot work."""

from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured

DEV_SECRET_KEY = "dev-only-insecure-key-do-not-use-in-production"


def flag(name: str, default: bool) -> bool:
    """Return an on/off setting: 1/true/yes/on are on, 0/false/no/off (or empty) are off."""
    value = os.environ.get(name)
    if value is None:
        return default
    value = value.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off", ""):
        return False
    raise ImproperlyConfigured(f"{name}={os.environ[name]!r}: use 1 or 0.")


def words(name: str, default: str = "") -> list[str]:
    """Return a comma-separated list, without blanks."""
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def number(name: str, default: int) -> int:
    """Return a whole number of at least 0."""
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    if not value.isascii() or not value.isdigit():
        raise ImproperlyConfigured(f"{name}={value!r}: use a whole number.")
    return int(value)


def secret_key(debug: bool) -> str:
    """Return DJANGO_SECRET_KEY; unset is allowed only with DEBUG on (development and tests)."""
    value = os.environ.get("DJANGO_SECRET_KEY")
    if value is not None and not value.strip():
        # An empty key still signs sessions and reset links; a deploy template with an unfilled
        # variable must not start.
        raise ImproperlyConfigured(
            "DJANGO_SECRET_KEY is set but empty. Give it a long random value, e.g. "
            "`python3 -c 'import secrets; print(secrets.token_urlsafe(50))'`, or unset it for development."
        )
    if value is None:
        if not debug:
            raise ImproperlyConfigured("Set DJANGO_SECRET_KEY when DJANGO_DEBUG is off.")
        return DEV_SECRET_KEY
    return value
