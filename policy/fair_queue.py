"""The fair queue of pools with shares (docs/shares.md, The queue), against the database: each pool's
fair shares in one statement, the order policy.fair_order defines in SQL, and where a pending
reservation stands in it. Registered as capacity's queue (capacity.rules, `Queue`) by apps.py.

A pool with share rows tries its pending work lowest fair share first, none last, oldest first
within equal figures; one without keeps its own order (the retry's round-robin by tenant, the
batch placer's oldest first). The figures are read once per worker round for every pool at once
and passed to the batch placer and the retry of pending work, never per reservation.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection
from django.utils import timezone

from capacity.port import (
    EVERYONE,
    QUEUED_CONDITION,
    UNSATISFIABLE,
    Figures,
    Queue,
    Reservation,
    Scope,
    gpus_sql,
)

from .fair_order import Place, place_words
from .fairshare import HALF_LIVES_READ, HOUR, fair_share

# Each share row of the pools asked (all pools when null), with its tenant's bookings in the pool
# decayed to `now` in SQL: Σ gpus × (e^(-rate (now - end)) - e^(-rate (now - start))), the part of
# a span after now left out (policy.fairshare.decayed_gpu_hours, times rate).
_FAIR_SHARES_SQL = f"""
WITH s AS (
  SELECT pool_id, tenant_id, guaranteed_gpus FROM capacity_poolshare ps
   WHERE (%(pools)s::bigint[] IS NULL OR pool_id = ANY(%(pools)s::bigint[]))
     AND (NOT %(waiting)s OR EXISTS (SELECT 1 FROM capacity_reservation r
                                      WHERE r.pool_id = ps.pool_id AND r.status = 'pending'))
), used AS (
  SELECT r.pool_id, r.tenant_id,
         sum(({gpus_sql("b")})::float8
             * (exp(-%(rate)s * (%(now)s - least(extract(epoch FROM upper(b.during))::float8, %(now)s)))
                - exp(-%(rate)s * (%(now)s - extract(epoch FROM lower(b.during))::float8))))
    FROM capacity_devicebooking_all b
    JOIN capacity_allocation_all a ON a.id = b.allocation_id
    JOIN capacity_reservation_all r ON r.id = a.reservation_id
   WHERE r.pool_id IN (SELECT pool_id FROM s WHERE guaranteed_gpus > 0)
     AND b.during && tstzrange(%(since)s, %(at)s) AND lower(b.during) < %(at)s
   GROUP BY 1, 2
)
SELECT s.pool_id, s.tenant_id, s.guaranteed_gpus, coalesce(u.sum, 0)
  FROM s LEFT JOIN used u ON u.pool_id = s.pool_id AND u.tenant_id = s.tenant_id
"""

# Joined to reservations `r`: their tenant's figure in their pool as f.share (null: none).
FAIR_JOIN = """
LEFT JOIN unnest(%(fair_pools)s::bigint[], %(fair_tenants)s::bigint[], %(fair_figures)s::float8[])
       AS f(pool_id, tenant_id, share) ON f.pool_id = r.pool_id AND f.tenant_id = r.tenant_id
"""
# policy.fair_order.queue_key in SQL.
FAIR_ORDER = "f.share NULLS LAST, r.created_at, r.id"
# The same for the reservations `r` of one pool, without a join (pool_params): a lookup per row.
POOL_SHARE = "(%(fair_figures)s::float8[])[array_position(%(fair_tenants)s::bigint[], r.tenant_id)]"
POOL_ORDER = f"{POOL_SHARE} NULLS LAST, r.created_at, r.id"

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


def half_life() -> float:
    """Return the fair share's half-life in seconds (BERTH_FAIRSHARE_HALF_LIFE)."""
    return settings.FAIRSHARE_HALF_LIFE_HOURS * 3600.0


def read_fair_shares(
    pool_ids: Iterable[int] | None, now: datetime, *, waiting: bool = True
) -> dict[int, dict[int, float | None]]:
    """Return pool pk -> tenant pk -> fair share at `now`, for the pools asked that have shares.

    One statement, whatever the number of pools (None: every pool with shares). With `waiting`,
    only pools with pending work: the others' bookings are not read (the figures only order it).
    A tenant without a row is not a key: it has no figure, as one with a guarantee of 0 has None.
    """
    seconds = half_life()
    rate = math.log(2) / seconds
    params = {
        "pools": None if pool_ids is None else list(pool_ids),
        "waiting": waiting,
        "rate": rate,
        "now": now.timestamp(),
        "at": now,
        "since": now - timedelta(seconds=seconds * HALF_LIVES_READ),
    }
    out: dict[int, dict[int, float | None]] = {}
    with connection.cursor() as cur:
        cur.execute(_FAIR_SHARES_SQL, params)
        for pool, tenant, guaranteed, weighed in cur.fetchall():
            out.setdefault(pool, {})[tenant] = fair_share(float(weighed) / rate / HOUR, guaranteed, seconds)
    return out


def fair_params(fair: Figures) -> dict[str, list]:
    """Return FAIR_JOIN's parameters: every (pool, tenant, figure) with a figure."""
    rows = [(p, t, s) for p, tenants in fair.items() for t, s in tenants.items() if s is not None]
    return {
        "fair_pools": [p for p, _, _ in rows],
        "fair_tenants": [t for _, t, _ in rows],
        "fair_figures": [s for _, _, s in rows],
    }


def pool_params(shares: Mapping[int, float | None]) -> dict[str, list]:
    """Return POOL_SHARE's parameters for one pool: its tenants with a figure, and their figures."""
    rows = [(t, s) for t, s in shares.items() if s is not None]
    return {"fair_tenants": [t for t, _ in rows], "fair_figures": [s for _, s in rows]}


def fair_shares(pool_ids: Iterable[int] | None = None, now: datetime | None = None) -> Figures:
    """Return pool pk -> tenant pk -> fair share for the pools with shares, in one statement."""
    return read_fair_shares(pool_ids, now or timezone.now())


def claim_order(shares: Mapping[int, float | None]) -> tuple[str, dict[str, Any]]:
    """Return the pool-lease batch's ORDER BY over one pool's reservations `r`, and its parameters."""
    return POOL_ORDER, pool_params(shares)


def retry_order(pool_ids: Sequence[int], fair: Figures, now: datetime, limit: int) -> list[int]:
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


def queue_text(reservation: Reservation, scope: Scope | None = None, now: datetime | None = None) -> str:
    """Return "3rd of 11 in h100-prod; your team used 1.3× its share this week", or "" out of a queue.

    A tenant reads "your team"; operators (and no scope: EVERYONE) read the tenant's name.
    """
    place = queue_places([reservation], now).get(reservation.pk)
    if place is None:
        return ""
    who = reservation.tenant.slug if (scope or EVERYONE).sees_every_tenant else "your team"
    return place_words(place, reservation.pool.slug, settings.FAIRSHARE_HALF_LIFE_HOURS, who)


QUEUE = Queue(
    "fair-queue",
    figures=fair_shares,
    claim=claim_order,
    retry=retry_order,
    places=queue_places,
    text=queue_text,
)
