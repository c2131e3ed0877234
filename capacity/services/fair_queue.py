"""The fair queue of pools with shares (docs/shares.md, The queue): the order the worker retries
pending work in, and where a pending reservation stands in it.

The order is capacity.placement.fairqueue's (lowest fair share first, none last, oldest first
within equal figures), in SQL (capacity.placers.fairqueue). A pool without shares keeps its order:
release.retry_pending's round-robin by tenant, the batch placer's oldest first.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from django.conf import settings
from django.db import connection
from django.utils import timezone

from capacity.access import EVERYONE, Scope
from capacity.models import Reservation
from capacity.models.reservations import QUEUED_CONDITION
from capacity.placement.fairqueue import Place, place_words
from capacity.placement.satisfiable import UNSATISFIABLE
from capacity.placers.fairqueue import FAIR_JOIN, FAIR_ORDER, FairShares, fair_params, read_fair_shares

# Pending work in the queue: its window not over (the rows of both placers count, queued or not),
# and not one that no node of the pool could ever take (it is never tried).
_IN_QUEUE = f"""r.status = 'pending' AND r.ends_at > %(now)s
   AND NOT r.conditions @> '[{{"type": "{UNSATISFIABLE}"}}]'::jsonb"""

# The retry's order over several pools: in a pool with shares its fair position, in the others
# each tenant's turn (its oldest first, then its second oldest, across those pools), as before;
# then oldest first. Queued rows are the pool-lease placer's own.
_RETRY_SQL = f"""
SELECT id FROM (
  SELECT r.id, r.created_at,
         CASE WHEN r.pool_id = ANY(%(shared)s::bigint[])
              THEN row_number() OVER (PARTITION BY r.pool_id ORDER BY {FAIR_ORDER})
              ELSE row_number() OVER (PARTITION BY r.tenant_id, r.pool_id = ANY(%(shared)s::bigint[])
                                      ORDER BY r.created_at, r.id) END AS turn
    FROM capacity_reservation r {FAIR_JOIN}
   WHERE r.pool_id = ANY(%(pools)s::bigint[]) AND {_IN_QUEUE}
     AND NOT r.conditions @> '[{{"type": "{QUEUED_CONDITION}"}}]'::jsonb
) q
 ORDER BY turn, created_at, id
 LIMIT %(limit)s
"""

# Each pending reservation asked: its place in its pool's fair order, and how many are in it.
_PLACES_SQL = f"""
SELECT id, position, total FROM (
  SELECT r.id, row_number() OVER (PARTITION BY r.pool_id ORDER BY {FAIR_ORDER}) AS position,
         count(*) OVER (PARTITION BY r.pool_id) AS total
    FROM capacity_reservation r {FAIR_JOIN}
   WHERE r.pool_id = ANY(%(pools)s::bigint[]) AND {_IN_QUEUE}
) q
 WHERE id = ANY(%(ids)s::bigint[])
"""


def fair_shares(pool_ids: Iterable[int] | None = None, now: datetime | None = None) -> FairShares:
    """Return pool pk -> tenant pk -> fair share for the pools with shares, in one statement."""
    return read_fair_shares(pool_ids, now or timezone.now())


def retry_order(pool_ids: Sequence[int], fair: FairShares, now: datetime, limit: int) -> list[int]:
    """Return up to `limit` pending reservation pks of these pools, some with shares, in retry order."""
    shared = [p for p in pool_ids if p in fair]
    params = {
        "pools": list(pool_ids),
        "shared": shared,
        "now": now,
        "limit": limit,
        **fair_params({p: fair[p] for p in shared}),
    }
    with connection.cursor() as cur:
        cur.execute(_RETRY_SQL, params)
        return [row[0] for row in cur.fetchall()]


def queue_places(reservations: Iterable[Reservation], now: datetime | None = None) -> dict[int, Place]:
    """Return pk -> Place of those of `reservations` waiting in the fair queue of a pool with shares.

    No statement when none is pending; else one to read the pools' fair shares and, if any has
    shares, one for the places, whatever the number of reservations. A pending reservation whose
    window is over, or that no node could ever take, is in no queue.
    """
    pending = [r for r in reservations if r.status == Reservation.Status.PENDING]
    if not pending:
        return {}
    now = now or timezone.now()
    fair = read_fair_shares({r.pool_id for r in pending}, now)
    asked = [r for r in pending if r.pool_id in fair]
    if not asked:
        return {}
    figure = {r.pk: fair[r.pool_id].get(r.tenant_id) for r in asked}
    params = {"pools": list(fair), "ids": [r.pk for r in asked], "now": now, **fair_params(fair)}
    with connection.cursor() as cur:
        cur.execute(_PLACES_SQL, params)
        return {pk: Place(position, total, figure[pk]) for pk, position, total in cur.fetchall()}


def queue_text(reservation: Reservation, scope: Scope = EVERYONE, now: datetime | None = None) -> str:
    """Return "3rd of 11 in h100-prod; your team used 1.3× its share this week", or "" out of a queue.

    A tenant reads "your team"; operators read the tenant's name (they may read every tenant's).
    """
    place = queue_places([reservation], now).get(reservation.pk)
    if place is None:
        return ""
    who = reservation.tenant.slug if scope.sees_every_tenant else "your team"
    return place_words(place, reservation.pool.slug, settings.FAIRSHARE_HALF_LIFE_HOURS, who)
