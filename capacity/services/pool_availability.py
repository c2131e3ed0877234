"""What a caller could book in a pool over the next days: free atoms per class and NVLink blocks, per hour."""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone

from capacity.access import Scope
from capacity.placement import NOT_FOUND, CapacityError
from capacity.placement.availability import Availability
from capacity.placers.free_hours import read_availability
from capacity.placers.loader import load_pool
from inventory.models import Tenant

# Two weeks of hour blocks: far enough to plan a training run, short enough to read per hour.
AVAILABILITY_HOURS = 14 * 24


def pool_availability(
    pool_slug: str, *, scope: Scope, now: datetime | None = None, hours: int = AVAILABILITY_HOURS
) -> Availability:
    """Return, per hour from now, the atoms free per class and the largest free NVLink block.

    An operator sees every node some tenant could book; a tenant only the nodes it may book
    (dedications to another tenant, owned and unschedulable nodes left out), as the placer
    decides. A pool the caller may not book answers NOT_FOUND.
    """
    pool = load_pool(pool_slug) if isinstance(pool_slug, str) else None
    if pool is None:
        raise CapacityError(NOT_FOUND, f"no pool {pool_slug}")
    if not scope.sees_every_tenant:
        rows = Tenant.objects.filter(slug__in=scope.tenants).values_list("pk", "slug")
        # Counted for the caller's tenants that may book this pool, not the others.
        scope = Scope(frozenset(slug for pk, slug in rows if pool.allows(pk)))
        if not scope.tenants:
            raise CapacityError(NOT_FOUND, f"no pool {pool_slug}")
    start = int((now or timezone.now()).timestamp() * 1000)
    return read_availability(pool, scope, start, hours)
