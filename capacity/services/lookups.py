"""The tenant and pool a request names: read in one query, checked against the caller, kept.

A process keeps the lookups that passed. The statement that inserts a reservation with its charges
compares a kept one with a digest of what the tables say then and writes nothing when they differ
(capacity.services.insert.StaleLookup), so a kept lookup saves a round trip and is never trusted
blindly; paths that insert nothing charged read the lookup afresh.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from capacity.placement import FORBIDDEN, NOT_FOUND, CapacityError, PlacementRequest
from capacity.placers.loader import Lookup, PoolRow, lookup
from inventory.models import Tenant

KEPT_LOOKUPS = 1024
_KEPT: dict[tuple[str, str], Lookup] = {}
_USED_KEPT: ContextVar[bool] = ContextVar("berth_used_kept_lookup", default=False)


def tenant_and_pool(request: PlacementRequest, scope: Any) -> tuple[Tenant, PoolRow]:
    """Return the request's tenant and pool, read now; refuse a caller who may not use them."""
    return _checked(request, scope, lookup(request.tenant_id, request.pool_id))


def kept_tenant_and_pool(
    request: PlacementRequest, scope: Any, use_kept: bool
) -> tuple[Tenant, PoolRow, str | None]:
    """Return the tenant, the pool and the digest to check them by (None: just read, nothing to check).

    A lookup read here is kept for the next request.
    """
    key = (request.tenant_id, request.pool_id)
    kept = _KEPT.get(key) if use_kept else None
    if kept is not None:
        _USED_KEPT.set(True)
        return (*_checked(request, scope, kept), kept.digest)
    found = lookup(*key)
    tenant, pool = _checked(request, scope, found)
    if len(_KEPT) >= KEPT_LOOKUPS:
        _KEPT.clear()
    _KEPT[key] = found
    return tenant, pool, None


def start() -> None:
    """Begin a request: no kept lookup used yet."""
    _USED_KEPT.set(False)


def confirmed() -> None:
    """Say that the statement that inserted this request's reservation found its lookup still true."""
    _USED_KEPT.set(False)


def used_kept() -> bool:
    """Return whether this request took a kept lookup that no statement has confirmed yet."""
    return _USED_KEPT.get()


def forget(tenant: object, pool: object) -> None:
    """Drop the kept lookup of these slugs, if any."""
    _KEPT.pop((tenant, pool), None)  # type: ignore[arg-type]


def forget_all() -> None:
    """Drop every kept lookup."""
    _KEPT.clear()


def _checked(request: PlacementRequest, scope: Any, found: Lookup) -> tuple[Tenant, PoolRow]:
    """Return the lookup's tenant and pool once the caller may book for the tenant, in the pool."""
    if not scope.allows(request.tenant_id):
        raise CapacityError(FORBIDDEN, f"you may not book for tenant {request.tenant_id}")
    if found.tenant is None:
        raise CapacityError(NOT_FOUND, f"no tenant {request.tenant_id}")
    tenant = Tenant.from_db("default", ["id", "slug", "name"], found.tenant)
    pool = found.pool
    if pool is None or not pool.allows(tenant.pk):
        raise CapacityError(NOT_FOUND, f"no pool {request.pool_id}")
    return tenant, pool
