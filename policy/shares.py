"""A pool's shares as callers read them (docs/shares.md): each tenant's row with what it holds now and its fair share.

The API (policy.api.shares) and the pool page's Shares section read them; capacity's
services.shares sets and removes them. The fair queue (capacity.services.fair_queue) orders pending
work by the same figures.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import connection
from django.utils import timezone

from capacity.port import (
    NOT_FOUND,
    CapacityError,
    PoolShare,
    Scope,
    decayed_gpu_hours,
    fair_share,
    gpus_sql,
    pool_for,
)
from inventory.models import Pool

# Bookings older than this many half-lives weigh under 0.1 %: not read.
HALF_LIVES_READ = 10


@dataclass(frozen=True)
class ShareRow:
    """One tenant's share of a pool as callers read it."""

    tenant: str
    guaranteed_gpus: int
    borrowing_limit_gpus: int | None
    lending_limit_gpus: int | None
    holding_gpus: float
    borrowed_gpus: float
    fair_share: float | None


# Whole GPUs as capacity.gpu_hours counts them: a MIG slice its share, a leased node's GPUs once each.
_HOLDING_SQL = f"""
SELECT r.tenant_id, sum({gpus_sql("b")})
  FROM capacity_devicebooking b
  JOIN capacity_allocation a ON a.id = b.allocation_id
  JOIN capacity_reservation r ON r.id = a.reservation_id
 WHERE r.pool_id = %(pool)s AND b.during @> %(now)s::timestamptz
 GROUP BY r.tenant_id
"""

# Each tenant's bookings in the pool over the decay's reach, up to now (ended ones from history
# too), with their whole-GPU equivalents: capacity_devicebooking_all is live and history.
_SPANS_SQL = f"""
SELECT r.tenant_id, extract(epoch FROM lower(b.during)), extract(epoch FROM upper(b.during)),
       {gpus_sql("b")}
  FROM capacity_devicebooking_all b
  JOIN capacity_allocation_all a ON a.id = b.allocation_id
  JOIN capacity_reservation_all r ON r.id = a.reservation_id
 WHERE r.pool_id = %(pool)s AND b.during && tstzrange(%(since)s, %(now)s) AND b.gpu_sevenths <> 0
"""


# When what the pool's bookings hold next changes: the first start or end after now.
_HOLDING_CHANGES_SQL = """
SELECT min(CASE WHEN lower(b.during) > %(now)s THEN lower(b.during) ELSE upper(b.during) END)
  FROM capacity_devicebooking b
  JOIN capacity_allocation a ON a.id = b.allocation_id
  JOIN capacity_reservation r ON r.id = a.reservation_id
 WHERE r.pool_id = %(pool)s AND upper(b.during) > %(now)s
"""


def holding_changes_at(pool: Pool, now: datetime) -> datetime | None:
    """Return when `holding_gpus` of the pool next changes by time alone (None: not while nothing is booked)."""
    with connection.cursor() as cur:
        cur.execute(_HOLDING_CHANGES_SQL, {"pool": pool.pk, "now": now})
        return cur.fetchone()[0]


def holding_gpus(pool: Pool, now: datetime) -> dict[int, float]:
    """Return tenant pk -> whole-GPU equivalents its bookings in the pool hold at `now`."""
    with connection.cursor() as cur:
        cur.execute(_HOLDING_SQL, {"pool": pool.pk, "now": now})
        return {tenant: float(gpus) for tenant, gpus in cur.fetchall()}


def decayed_hours(pool: Pool, now: datetime) -> dict[int, float]:
    """Return tenant pk -> its GPU-hours booked in the pool up to `now`, decayed (fairshare)."""
    half_life = settings.FAIRSHARE_HALF_LIFE_HOURS * 3600.0
    since = now - timezone.timedelta(seconds=half_life * HALF_LIVES_READ)
    spans: dict[int, list[tuple[float, float, float]]] = {}
    with connection.cursor() as cur:
        cur.execute(_SPANS_SQL, {"pool": pool.pk, "now": now, "since": since})
        for tenant, start, end, gpus in cur.fetchall():
            spans.setdefault(tenant, []).append((float(start), float(end), float(gpus)))
    return {t: decayed_gpu_hours(s, now.timestamp(), half_life) for t, s in spans.items()}


def share_rows(scope: Scope, pool_slug: str, now: datetime | None = None) -> list[ShareRow]:
    """Return the pool's share rows the caller may read: operators all, a tenant its own.

    NOT_FOUND for a pool the caller may not read. A tenant never reads another tenant's row.
    """
    pool = pool_for(scope, pool_slug)
    if pool is None:
        raise CapacityError(NOT_FOUND, f"no pool {pool_slug}")
    return pool_shares(scope, pool, now)[0]


def pool_shares(scope: Scope, pool: Pool, now: datetime | None = None) -> tuple[list[ShareRow], bool]:
    """Return the rows of a pool the caller may read (it checked the pool), and whether it has any.

    One statement for a pool without shares (the pool page reads it on every view).
    """
    every = list(PoolShare.objects.filter(pool=pool).select_related("tenant").order_by("tenant__slug"))
    shares = [s for s in every if scope.allows(s.tenant.slug)]
    if not shares:
        return [], bool(every)
    now = now or timezone.now()
    holding = holding_gpus(pool, now)
    decayed = decayed_hours(pool, now)
    half_life = settings.FAIRSHARE_HALF_LIFE_HOURS * 3600.0
    rows = []
    for s in shares:
        held = holding.get(s.tenant_id, 0.0)
        rows.append(
            ShareRow(
                tenant=s.tenant.slug,
                guaranteed_gpus=s.guaranteed_gpus,
                borrowing_limit_gpus=s.borrowing_limit_gpus,
                lending_limit_gpus=s.lending_limit_gpus,
                holding_gpus=round(held, 4),
                borrowed_gpus=round(max(0.0, held - s.guaranteed_gpus), 4),
                fair_share=_rounded(fair_share(decayed.get(s.tenant_id, 0.0), s.guaranteed_gpus, half_life)),
            )
        )
    return rows, True


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)
