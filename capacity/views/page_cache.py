"""Rendered page fragments kept in Django's cache, keyed by what they were drawn from.

A fragment's key holds the pool's inventory generation and booking version (read together in one
indexed statement), the viewer's scope (operator, or exactly which tenants, by id: a slug renamed
and taken by a new tenant keys nothing of the old) and the request's path and the query parameters
the fragment reads, in a fixed order (others ignored): a write to the pool's nodes or bookings changes the key at its commit, so the writer
and every reader get a fresh fragment on their next request. What time alone changes (a booking
starting or ending) ends a fragment's life at that moment; the rest within PAGE_CACHE_SECONDS.
The CSRF token is drawn as a placeholder and each reader's own token put in its place.
The node page keys its parts on its pool's versions (node_fragments.py; its timeline, which marks a
booking awaiting approval, on the pool's reservation version too); the reservation lists on
every pool's generation, booking and reservation versions (all_versions, one statement).
Each reader stores at most PAGE_VARIANTS_PER_READER pages (path and query) at once: beyond that its
other queries are drawn and not kept, so one reader cannot push everyone's kept pages out.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Collection
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.core.cache import cache
from django.db import DatabaseError, connection
from django.http import HttpRequest
from django.middleware.csrf import get_token
from django.utils import timezone
from django.utils.encoding import escape_uri_path
from django.utils.http import urlencode

from capacity.access import Scope, tenant_ids
from config.access import is_operator

log = logging.getLogger("berth.cache")
NOT_KEPT = datetime.min.replace(tzinfo=UTC)  # what `draw` returns for a fragment never to keep
CSRF_PLACEHOLDER = "berth-csrf-placeholder-0f3a9c"  # what a cached fragment holds instead of a token
Draw = Callable[[str], tuple[str, datetime | None]]
# How many pages (a path and its known query) one reader may have kept at once. A person paging
# and filtering within BERTH_PAGE_CACHE_SECONDS stays well under it; a script sending distinct
# queries gets the rest drawn and not kept (docs/operations.md#caching).
PAGE_VARIANTS_PER_READER = 20

VERSIONS_SQL = """
SELECT g.generation, v.version, v.reservations
  FROM inventory_pool p
  LEFT JOIN inventory_poolgeneration g ON g.pool_id = p.id
  LEFT JOIN capacity_poolbookingversion v ON v.pool_id = p.id
 WHERE p.id = %s
"""


def pool_versions(pool_pk: int) -> tuple[int | None, int | None]:
    """Return the pool's inventory generation and booking version, in one statement."""
    return _pool_versions(pool_pk)[:2]


def _pool_versions(pool_pk: int) -> tuple[int | None, int | None, int | None]:
    """Return the pool's inventory generation, booking version and reservation version."""
    with connection.cursor() as cur:
        cur.execute(VERSIONS_SQL, [pool_pk])
        row = cur.fetchone()
    return tuple(row) if row else (None, None, None)


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
    """Return what the viewer's fragments may share: operator or not, and the ids of the tenants it sees."""
    # Ids, not slugs: a tenant renamed and a new one given its old slug share no fragment.
    tenants = (
        "all" if scope.sees_every_tenant else ",".join(map(str, tenant_ids(request.user, scope.tenants)))
    )
    return f"op={int(is_operator(request.user))};tenants={tenants}"


def page_query(request: HttpRequest, known: Collection[str], leave_out: Collection[str] = ()) -> str:
    """Return the request's query with only the `known` parameters (not `leave_out`), in a fixed order."""
    return urlencode([(k, v) for k in sorted(set(known) - set(leave_out)) for v in request.GET.getlist(k)])


def page_url(request: HttpRequest, known: Collection[str]) -> str:
    """Return the request's path and its query of `known` parameters alone: where a kept page's forms return."""
    query = page_query(request, known)
    return escape_uri_path(request.path) + (f"?{query}" if query else "")


def pool_fragment(
    request: HttpRequest,
    name: str,
    pool_pk: int,
    scope: Scope,
    draw: Callable[[str], tuple[str, datetime | None]],
    *,
    per_url: Collection[str] = (),
) -> str:
    """Return the fragment `name` of a pool's page, drawn by `draw(csrf_placeholder)` when not kept.

    `draw` returns the HTML and when time alone would change it (None: not before the cap;
    NOT_KEPT: it may change any time).
    `per_url`: the query parameters the fragment reads (filters, page) when it reads any: it is kept
    per path and those parameters, and says where its forms return from them alone (page_url).
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
    inventory generation alone) and whether it reads reservations' own changes too (default False:
    an approval, a condition; True keys it on the pool's reservation version as well).
    """
    if not settings.PAGE_CACHE_SECONDS:  # keeping is off: nothing read, nothing stored
        return {name: draw(_token(request))[0] for name, (draw, *_) in draws.items()}
    # Read once per request: its fragments are drawn from one state of the pool.
    read = request.__dict__.setdefault("_pool_versions", {})
    if pool_pk not in read:
        read[pool_pk] = _pool_versions(pool_pk)
    generation, version, reservations = read[pool_pk]
    # A pool without a generation has had no node yet: nothing would change its key.
    keyed = {}
    for name, (draw, per_url, *rest) in draws.items():
        extra = rest[0] if rest else ""
        reads_bookings = rest[1] if len(rest) > 1 else True
        reads_reservations = rest[2] if len(rest) > 2 else False
        drawn_from = f"{version}.{reservations}" if reads_reservations else version
        keyed[name] = (draw, per_url, f"{extra}|{drawn_from if reads_bookings else '-'}")
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
    all and the reader's kept pages (one statement with the database cache); `keep`: store what is
    drawn. A fragment read per URL is stored only while its reader keeps fewer than
    PAGE_VARIANTS_PER_READER other pages.
    """
    if not settings.PAGE_CACHE_SECONDS:
        return {name: draw(_token(request))[0] for name, (draw, *_) in draws.items()}
    if callable(versions):
        versions = versions()
    htmx = bool(getattr(request, "htmx", False))
    viewer = viewer_key(request, scope)
    keys, known = {}, set()
    for name, (_, per_url, *extra) in draws.items():
        # The path and the parameters the fragment reads, in a fixed order: unknown ones key nothing.
        where = f"{request.path}?{page_query(request, per_url)}" if per_url else ""
        known.update(per_url or ())
        # A third item: what else this fragment was drawn from (a digest no version follows).
        parts = f"{name}|{versions}|{''.join(extra)}|{viewer}|{htmx}|{where}"
        keys[name] = "pool-fragment:" + hashlib.sha256(parts.encode()).hexdigest()
    # The page these fragments make, as the reader's bound counts it; those read from no query count nothing.
    page_id = hashlib.sha256(f"{htmx}|{request.path}?{page_query(request, known)}".encode()).hexdigest()[:16]
    reads_query = {name for name, (_, per_url, *_) in draws.items() if per_url}
    reader = (
        f"pool-fragment-reader:{request.user.pk}" if reads_query and request.user.is_authenticated else None
    )
    now = timezone.now()
    found = cache.get_many([*keys.values(), *([reader] if reader else [])])
    # The reader's kept pages: page_id -> when the last fragment stored for it ends.
    pages = {v: end for v, end in (found.get(reader) or {}).items() if end > now} if reader else {}
    out, fresh, pages_changed = {}, {}, False
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
        if seconds <= 0 or not keep:
            continue
        ends = now + timedelta(seconds=seconds)
        if name in reads_query:
            if reader is None or (page_id not in pages and len(pages) >= PAGE_VARIANTS_PER_READER):
                continue  # past the reader's bound: drawn, not kept
            pages[page_id], pages_changed = max(ends, pages.get(page_id, ends)), True
        fresh[keys[name]] = ((html, ends), int(seconds) + 1)
    if pages_changed:
        # Kept as long as its longest page, so the bound holds while any of them stands.
        fresh[reader] = (pages, int((max(pages.values()) - now).total_seconds()) + 1)
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
