"""Rendered page fragments kept in Django's cache, keyed by what they were drawn from.

A fragment's key holds the pool's inventory generation and booking version (read together in one
indexed statement), the viewer's scope (operator, or exactly which tenants) and the request's path
and query: a write to the pool's nodes or bookings changes the key at its commit, so the writer
and every reader get a fresh fragment on their next request. What time alone changes (a booking
starting or ending) ends a fragment's life at that moment; the rest within PAGE_CACHE_SECONDS.
The CSRF token is drawn as a placeholder and each reader's own token put in its place.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.core.cache import cache
from django.db import DatabaseError, connection
from django.http import HttpRequest
from django.middleware.csrf import get_token
from django.utils import timezone

from capacity.access import Scope
from config.access import is_operator

log = logging.getLogger("berth.cache")
NOT_KEPT = datetime.min.replace(tzinfo=UTC)  # what `draw` returns for a fragment never to keep
CSRF_PLACEHOLDER = "berth-csrf-placeholder-0f3a9c"  # what a cached fragment holds instead of a token

VERSIONS_SQL = """
SELECT g.generation, v.version
  FROM inventory_pool p
  LEFT JOIN inventory_poolgeneration g ON g.pool_id = p.id
  LEFT JOIN capacity_poolbookingversion v ON v.pool_id = p.id
 WHERE p.id = %s
"""


def pool_versions(pool_pk: int) -> tuple[int | None, int | None]:
    """Return the pool's inventory generation and booking version, in one statement."""
    with connection.cursor() as cur:
        cur.execute(VERSIONS_SQL, [pool_pk])
        row = cur.fetchone()
    return (row[0], row[1]) if row else (None, None)


def viewer_key(request: HttpRequest, scope: Scope) -> str:
    """Return what the viewer's fragments may share: operator or not, and the tenants it sees."""
    tenants = "all" if scope.tenants is None else ",".join(sorted(str(t) for t in scope.tenants))
    return f"op={int(is_operator(request.user))};tenants={tenants}"


def _key(
    request: HttpRequest, name: str, pool_pk: int, scope: Scope, per_url: bool
) -> tuple[str, int | None]:
    """Return the fragment's cache key and the pool's inventory generation it was read with."""
    # Read once per request: its fragments are drawn from one state of the pool.
    read = request.__dict__.setdefault("_pool_versions", {})
    if pool_pk not in read:
        read[pool_pk] = pool_versions(pool_pk)
    generation, version = read[pool_pk]
    htmx = bool(getattr(request, "htmx", False))
    parts = f"{name}|{pool_pk}|{generation}|{version}|{viewer_key(request, scope)}|{htmx}|{request.get_full_path() if per_url else ''}"
    return "pool-fragment:" + hashlib.sha256(parts.encode()).hexdigest(), generation


def prefetch(request: HttpRequest, pool_pk: int, scope: Scope, parts: dict[str, bool]) -> None:
    """Read the page's fragments `parts` (name: per_url) in one go; `pool_fragment` then asks no more."""
    if not settings.PAGE_CACHE_SECONDS:
        return
    keys = [_key(request, name, pool_pk, scope, per_url)[0] for name, per_url in parts.items()]
    found = cache.get_many(keys)
    request.__dict__.setdefault("_fragments", {}).update({k: found.get(k) for k in keys})


def pool_fragment(
    request: HttpRequest,
    name: str,
    pool_pk: int,
    scope: Scope,
    draw: Callable[[str], tuple[str, datetime | None]],
    *,
    per_url: bool = True,
    keep: bool = True,
) -> str:
    """Return the fragment `name` of a pool's page, drawn by `draw(csrf_placeholder)` when not kept.

    `draw` returns the HTML and when time alone would change it (None: not before the cap;
    NOT_KEPT: it may change any time).
    `per_url`: the fragment reads the query (filters, page) and says where its forms return.
    `keep`: False draws this reader's own fragment (a form with its errors, a secret shown once).
    """
    if not settings.PAGE_CACHE_SECONDS or not keep:  # nothing read, nothing stored
        return draw(get_token(request))[0]
    key, generation = _key(request, name, pool_pk, scope, per_url)
    now = timezone.now()
    prefetched = request.__dict__.get("_fragments", {})
    kept = prefetched[key] if key in prefetched else cache.get(key)
    if kept is not None and kept[1] > now:
        html = kept[0]
    else:
        html, changes_at = draw(CSRF_PLACEHOLDER)
        seconds = settings.PAGE_CACHE_SECONDS
        if changes_at is not None:
            seconds = min(seconds, (changes_at - now).total_seconds())
        # A pool without a generation has had no node yet: nothing would change its key.
        if seconds > 0 and generation is not None:
            valid_until = now + timedelta(seconds=seconds)
            try:
                cache.set(key, (html, valid_until), timeout=int(seconds) + 1)
            except DatabaseError:  # the database cache on a replica's connection: drawn, not kept
                log.warning("page fragment not kept", exc_info=True)
    return _with_token(request, html)


def _with_token(request: HttpRequest, html: str) -> str:
    """Put the reader's CSRF token in the fragment's placeholders (one token for all its fragments)."""
    if CSRF_PLACEHOLDER not in html:
        return html
    if "_fragment_token" not in request.__dict__:
        request._fragment_token = get_token(request)  # each call masks the secret afresh: once is enough
    return html.replace(CSRF_PLACEHOLDER, request._fragment_token)
