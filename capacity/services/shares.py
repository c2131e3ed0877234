"""Shares of a pool per tenant (docs/shares.md): set and remove them, and count the pool's bookable GPUs.

Callers read the rows with what each tenant holds now through policy.shares (the policy app).
Writes lock the pool row (lock order: quota_usage → pools → ...) so that two writers cannot
together promise more than the pool's bookable GPUs.
"""

from __future__ import annotations

from fractions import Fraction

from django.db import transaction

from capacity.access import pool_allows
from capacity.models import PoolShare
from capacity.placement import INVALID_INPUT, NOT_FOUND, CapacityError
from capacity.rollups import stored_rollups
from inventory.gpu_share import gpu_share
from inventory.models import Pool, Tenant
from trail.record import record

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


def gpus_text(value: Fraction | float) -> str:
    """Return GPUs as people read them: 8, 8.43."""
    return f"{float(value):.2f}".rstrip("0").rstrip(".")


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
            f" it has {gpus_text(bookable)} bookable GPUs",
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
