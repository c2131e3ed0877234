"""The provider's discovery document (/.well-known/openid-configuration): read once, kept in memory.

A provider that does not answer, or answers something that is not its discovery document, raises
ProviderDown with words for the sign-in page; such an answer is kept PROVIDER_DOWN_SECONDS, so a
provider that is down costs each page one short wait at most that often.
"""

from __future__ import annotations

import threading
import time

import requests
from django.conf import settings

PROVIDER_DOWN_SECONDS = 30
REQUIRED = ("issuer", "authorization_endpoint", "token_endpoint", "jwks_uri")

_lock = threading.Lock()
_cache: dict[str, tuple[float, dict | str]] = {}
_keys: dict[str, list[dict]] = {}


class ProviderDown(Exception):
    """The identity provider did not answer with its discovery document."""


def configured() -> bool:
    """Return whether OpenID Connect sign-in is configured (BERTH_OIDC_ISSUER)."""
    return bool(settings.BERTH_OIDC_ISSUER)


def forget() -> None:
    """Drop the kept document (tests, and a changed issuer)."""
    with _lock:
        _cache.clear()
        _keys.clear()


def document() -> dict:
    """Return the issuer's discovery document, fetching it the first time."""
    issuer = settings.BERTH_OIDC_ISSUER
    with _lock:
        kept = _cache.get(issuer)
    if kept is not None:
        fetched_at, value = kept
        if isinstance(value, dict):
            return value
        if time.monotonic() - fetched_at < PROVIDER_DOWN_SECONDS:
            raise ProviderDown(value)
    try:
        value = _fetch(issuer)
    except ProviderDown as err:
        with _lock:
            _cache[issuer] = (time.monotonic(), str(err))
        raise
    with _lock:
        _cache[issuer] = (time.monotonic(), value)
    return value


def _fetch(issuer: str) -> dict:
    url = f"{issuer}/.well-known/openid-configuration"
    down = f"The organisation's sign-in service ({issuer}) is not answering."
    try:
        response = requests.get(url, timeout=settings.OIDC_TIMEOUT)
    except requests.RequestException:
        raise ProviderDown(down) from None
    if response.status_code != 200:
        raise ProviderDown(f"{down} It answered HTTP {response.status_code}.")
    try:
        value = response.json()
    except ValueError:
        raise ProviderDown(f"{down} It answered something other than its configuration.") from None
    if not isinstance(value, dict) or any(not isinstance(value.get(key), str) for key in REQUIRED):
        raise ProviderDown(f"{down} Its configuration lacks the endpoints Berth needs.")
    if value["issuer"].rstrip("/") != issuer:
        # OpenID Connect Discovery 1.0, 4.3: the document must name the issuer it was fetched for.
        raise ProviderDown(f"{down} Its configuration names another issuer ({value['issuer']}).")
    return value


def signing_keys(refresh: bool = False) -> list[dict]:
    """Return the provider's published keys (its JWKS), kept until a token names a key not among them."""
    url = document()["jwks_uri"]
    with _lock:
        kept = None if refresh else _keys.get(url)
    if kept is not None:
        return kept
    try:
        response = requests.get(url, timeout=settings.OIDC_TIMEOUT)
        response.raise_for_status()
        keys = response.json()["keys"]
    except (requests.RequestException, ValueError, KeyError, TypeError):
        raise ProviderDown(
            "The organisation's sign-in service did not answer with its signing keys."
        ) from None
    if not isinstance(keys, list):
        raise ProviderDown("The organisation's sign-in service did not answer with its signing keys.")
    with _lock:
        _keys[url] = keys
    return keys
