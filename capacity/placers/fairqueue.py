"""The fair queue against the database (docs/shares.md, The queue): each pool's fair shares in one
statement, and the SQL of the order capacity.placement.fairqueue defines.

A pool with share rows tries its pending work lowest fair share first; one without keeps its own
order. The figures are read once per worker round for every pool at once and passed to the batch
placer and the retry of pending work, never per reservation.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection

from capacity.gpu_hours import gpus_sql
from capacity.placement.fairshare import HOUR, fair_share

# pool pk -> tenant pk -> fair share (None: no guarantee). A pool is a key only if it has shares.
FairShares = Mapping[int, Mapping[int, float | None]]

# Bookings older than this many half-lives weigh under 0.1 %: not read (policy.shares reads the same).
HALF_LIVES_READ = 10

# Each share row of the pools asked (all pools when null), with its tenant's bookings in the pool
# decayed to `now` in SQL: Σ gpus × (e^(-rate (now - end)) - e^(-rate (now - start))), the part of
# a span after now left out (capacity.placement.fairshare.decayed_gpu_hours, times rate).
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
# capacity.placement.fairqueue.queue_key in SQL.
FAIR_ORDER = "f.share NULLS LAST, r.created_at, r.id"
# The same for the reservations `r` of one pool, without a join (pool_params): a lookup per row.
POOL_SHARE = "(%(fair_figures)s::float8[])[array_position(%(fair_tenants)s::bigint[], r.tenant_id)]"
POOL_ORDER = f"{POOL_SHARE} NULLS LAST, r.created_at, r.id"


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


def fair_params(fair: FairShares) -> dict[str, list]:
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
