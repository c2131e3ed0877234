"""Rendered page fragments kept in Django's cache, keyed by what they were drawn from.

A fragment's key holds the pool's inventory generation and booking version (read together in one
indexed statement), the viewer's scope (operator, or exactly which tenants) and the request's path
and query: a write to the pool's nodes or bookings changes the key at its commit, so the writer
and every reader get a fresh fragment on their next request. What time alone changes (a booking
starting or ending) ends a fragment's life at that moment; the rest within PAGE_CACHE_SECONDS.
The CSRF token is drawn as a placeholder and each reader's own token put in its place.
The node page keys its parts on its pool's versions (node_fragments.py); the reservation lists on
every pool's generation, booking and reservation versions (all_versions, one statement).
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
Draw = Callable[[str], tuple[str, datetime | None]]

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


ALL_VERSIONS_SQL = """
SELECT md5(coalesce(string_agg(concat_ws(':', p.id, g.generation, v.version, v.reservations), ',' ORDER BY p.id), ''))
  FROM inventory_pool p
  LEFT JOIN inventory_poolgeneration g ON g.pool_id = p.id
  LEFT JOIN capacity_poolbookingversion v ON v.pool_id = p.id
"""


def all_versions() -> str:
    """Return a digest of every pool's generation, booking and reservation versions, in one statement.

    Every pool, not the viewer's: a reservation stays listed in a pool its tenant no longer sees.
    """
    with connection.cursor() as cur:
        cur.execute(ALL_VERSIONS_SQL)
        return cur.fetchone()[0]


def viewer_key(request: HttpRequest, scope: Scope) -> str:
    """Return what the viewer's fragments may share: operator or not, and the tenants it sees."""
    tenants = "all" if scope.tenants is None else ",".join(sorted(str(t) for t in scope.tenants))
    return f"op={int(is_operator(request.user))};tenants={tenants}"


def pool_fragment(
    request: HttpRequest,
    name: str,
    pool_pk: int,
    scope: Scope,
    draw: Callable[[str], tuple[str, datetime | None]],
    *,
    per_url: bool = True,
) -> str:
    """Return the fragment `name` of a pool's page, drawn by `draw(csrf_placeholder)` when not kept.

    `draw` returns the HTML and when time alone would change it (None: not before the cap;
    NOT_KEPT: it may change any time).
    `per_url`: the fragment reads the query (filters, page) and says where its forms return.
    """
    return pool_fragments(request, pool_pk, scope, {name: (draw, per_url)})[name]


def _token(request: HttpRequest) -> str:
    """Return the reader's CSRF token, masked once for all the request's fragments."""
    if "_fragment_token" not in request.__dict__:
        request._fragment_token = get_token(request)  # each call masks the secret afresh: once is enough
    return request._fragment_token


def pool_fragments(request: HttpRequest, pool_pk: int, scope: Scope, draws: dict[str, tuple]) -> dict:
    """Return several fragments of one pool's pages, read from the cache together: {name: html}.

    `draws` maps each name to its `draw` and `per_url` (as pool_fragment's), and optionally what
    else it was drawn from beyond the pool's versions (a digest of what moves no version) and
    whether it reads bookings (default True; False: kept across the pool's bookings, keyed on its
    inventory generation alone).
    """
    if not settings.PAGE_CACHE_SECONDS:  # keeping is off: nothing read, nothing stored
        return {name: draw(_token(request))[0] for name, (draw, *_) in draws.items()}
    # Read once per request: its fragments are drawn from one state of the pool.
    read = request.__dict__.setdefault("_pool_versions", {})
    if pool_pk not in read:
        read[pool_pk] = pool_versions(pool_pk)
    generation, version = read[pool_pk]
    # A pool without a generation has had no node yet: nothing would change its key.
    keyed = {}
    for name, (draw, per_url, *rest) in draws.items():
        extra = rest[0] if rest else ""
        reads_bookings = rest[1] if len(rest) > 1 else True
        keyed[name] = (draw, per_url, f"{extra}|{version if reads_bookings else '-'}")
    return kept_fragments(request, f"{pool_pk}|{generation}", scope, keyed, generation is not None)


def kept_fragments(
    request: HttpRequest,
    versions: str | Callable[[], str],
    scope: Scope,
    draws: dict[str, tuple],
    keep: bool = True,
) -> dict:
    """Return fragments kept under `versions` (what they were drawn from), drawing those not kept.

    `versions` may be a function, called only when keeping is on. One read of the cache for them
    all (one statement with the database cache); `keep`: store what is drawn.
    """
    if not settings.PAGE_CACHE_SECONDS:
        return {name: draw(_token(request))[0] for name, (draw, *_) in draws.items()}
    if callable(versions):
        versions = versions()
    htmx = bool(getattr(request, "htmx", False))
    viewer = viewer_key(request, scope)
    keys = {}
    for name, (_, per_url, *extra) in draws.items():
        # A third item: what else this fragment was drawn from (a digest no version follows).
        parts = (
            f"{name}|{versions}|{''.join(extra)}|{viewer}|{htmx}|{request.get_full_path() if per_url else ''}"
        )
        keys[name] = "pool-fragment:" + hashlib.sha256(parts.encode()).hexdigest()
    now = timezone.now()
    found = cache.get_many(list(keys.values()))
    out, fresh = {}, {}
    for name, (draw, *_) in draws.items():
        kept = found.get(keys[name])
        if kept is not None and kept[1] > now:
            out[name] = kept[0]
            continue
        html, changes_at = draw(CSRF_PLACEHOLDER)
        out[name] = html
        seconds = settings.PAGE_CACHE_SECONDS
        if changes_at is not None:
            seconds = min(seconds, (changes_at - now).total_seconds())
        if seconds > 0 and keep:
            fresh[keys[name]] = ((html, now + timedelta(seconds=seconds)), int(seconds) + 1)
    if fresh:
        # One store for them all (one statement with Berth's database cache, config/cache.py); each
        # value holds its own end, so the longest timeout only says when the row may go.
        try:
            cache.set_many(
                {key: value for key, (value, _) in fresh.items()}, timeout=max(t for _, t in fresh.values())
            )
        except DatabaseError:  # the database cache on a replica's connection: drawn, not kept
            log.warning("page fragment not kept", exc_info=True)
    return {name: html.replace(CSRF_PLACEHOLDER, _token(request)) for name, html in out.items()}
