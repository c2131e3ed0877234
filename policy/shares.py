"""A pool's shares (docs/shares.md): each tenant's row with what it holds now and its fair share; set and remove them.

The API (policy.api.shares), the pool page's Shares section and the admin read and write them here.
Writes lock the pool row (lock order: quota_usage → pools → ...) so that two writers cannot
together promise more than the pool's bookable GPUs. The fair queue (policy.fair_queue) orders pending
work by the same figures.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from fractions import Fraction

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from capacity.port import (
    INVALID_INPUT,
    NOT_FOUND,
    CapacityError,
    Scope,
    gpus_sql,
    pool_allows,
    pool_for,
    stored_rollups,
)
from inventory.gpu_share import gpu_share
from inventory.models import Pool, Tenant
from trail.record import record

from .fairshare import HALF_LIVES_READ, decayed_gpu_hours, fair_share
from .models import PoolShare
from .share_verdict import gpus_text


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


FIELDS = ("guaranteedGpus", "borrowingLimitGpus", "lendingLimitGpus")


def bookable_gpus(pool: Pool) -> Fraction:
    """Return the pool's whole-GPU equivalents that may be booked: its atoms less excluded nodes'.

    The pool page's count (the rollups): a node in maintenance, cordoned or down still counts (it
    comes back); one that adds no capacity to the pool does not. MIG slices count as their share.
    """
    return sum(
        (
            (counts["total"] - counts["excluded"]) * gpu_share(device_class)
            for (_, device_class), counts in stored_rollups([pool.pk]).items()
            if device_class == "gpu" or device_class.startswith("mig-")
        ),
        Fraction(0),
    )


def _figure(data: dict, name: str, *, nullable: bool) -> int | None:
    if name not in data:
        if nullable:
            return None
        raise CapacityError(INVALID_INPUT, f"{name} is required")
    value = data[name]
    if value is None and nullable:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        kind = "a whole number of GPUs, 0 or more" + (", or null" if nullable else "")
        raise CapacityError(INVALID_INPUT, f"{name} must be {kind}")
    if value > 10**9:
        raise CapacityError(INVALID_INPUT, f"{name} is at most 1000000000")
    return value


def parse_share(data: object) -> tuple[int, int | None, int | None]:
    """Return (guaranteed, borrowing limit, lending limit) from a request body, or raise INVALID_INPUT."""
    if not isinstance(data, dict):
        raise CapacityError(INVALID_INPUT, "the request must be a JSON object")
    unknown = sorted(set(data) - set(FIELDS))
    if unknown:
        raise CapacityError(INVALID_INPUT, f"unknown field {unknown[0]!r} (expected {', '.join(FIELDS)})")
    return (
        _figure(data, "guaranteedGpus", nullable=False),
        _figure(data, "borrowingLimitGpus", nullable=True),
        _figure(data, "lendingLimitGpus", nullable=True),
    )


def _pool_and_tenant(pool_slug: str, tenant_slug: str) -> tuple[Pool, Tenant]:
    pool = Pool.objects.filter(slug=pool_slug).first()
    if pool is None:
        raise CapacityError(NOT_FOUND, f"no pool {pool_slug}")
    tenant = Tenant.objects.filter(slug=tenant_slug).first()
    if tenant is None:
        raise CapacityError(NOT_FOUND, f"no tenant {tenant_slug}")
    return pool, tenant


def check_guarantees(pool: Pool, tenant: Tenant, guaranteed: int) -> None:
    """Refuse a guarantee that takes the pool's guarantees past its bookable GPUs (INVALID_INPUT).

    The answer holds until the write only under the pool's lock (set_share takes it).
    """
    others = sum(
        PoolShare.objects.filter(pool=pool).exclude(tenant=tenant).values_list("guaranteed_gpus", flat=True)
    )
    bookable = bookable_gpus(pool)
    if others + guaranteed > bookable:
        raise CapacityError(
            INVALID_INPUT,
            f"guaranteedGpus: the guarantees of {pool.slug} would add up to {others + guaranteed} GPUs;"
            f" it has {gpus_text(float(bookable))} bookable GPUs",
        )


# What the audit keeps of a share, before and after a change.
SHARE_FIELDS = ("guaranteed_gpus", "borrowing_limit_gpus", "lending_limit_gpus")


def set_share(
    pool_slug: str, tenant_slug: str, guaranteed: int, borrowing: int | None, lending: int | None
) -> PoolShare:
    """Create or change a tenant's share of a pool (operators); refuse guarantees above the pool."""
    pool, tenant = _pool_and_tenant(pool_slug, tenant_slug)
    if not pool_allows(pool, tenant):
        # A guarantee in a pool the tenant may not book would promise what it can never use.
        raise CapacityError(INVALID_INPUT, f"tenant {tenant.slug} may not use pool {pool.slug}")
    with transaction.atomic():
        # The pool's row is the shares' lock: a second writer waits here and then sees the first's row.
        Pool.objects.select_for_update().filter(pk=pool.pk).first()
        check_guarantees(pool, tenant, guaranteed)
        before = PoolShare.objects.filter(pool=pool, tenant=tenant).values(*SHARE_FIELDS).first()
        share, _ = PoolShare.objects.update_or_create(
            pool=pool,
            tenant=tenant,
            defaults={
                "guaranteed_gpus": guaranteed,
                "borrowing_limit_gpus": borrowing,
                "lending_limit_gpus": lending,
            },
        )
        after = {name: getattr(share, name) for name in SHARE_FIELDS}
        if after != before:
            record("share.set", f"share:{pool.slug}/{tenant.slug}", before=before, after=after)
    return share


def delete_share(pool_slug: str, tenant_slug: str) -> None:
    """Remove a tenant's share of a pool (operators); NOT_FOUND when it has none."""
    pool, tenant = _pool_and_tenant(pool_slug, tenant_slug)
    with transaction.atomic():
        Pool.objects.select_for_update().filter(pk=pool.pk).first()
        before = PoolShare.objects.filter(pool=pool, tenant=tenant).values(*SHARE_FIELDS).first()
        deleted, _ = PoolShare.objects.filter(pool=pool, tenant=tenant).delete()
        if deleted:
            record("share.delete", f"share:{pool.slug}/{tenant.slug}", before=before)
    if not deleted:
        raise CapacityError(NOT_FOUND, f"{tenant_slug} has no share of {pool_slug}")
