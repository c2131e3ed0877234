"""A tenant's quota rows (docs/accounting.md): read, set and remove them; each change is in the audit.

The rows are capacity's (capacity.models.Quota: the booking path's quota lock reads them,
capacity.placers.quota); administering them is the policy app's. The team page (policy/teams.py)
writes through here; it, the pool page's Shares section and the shares' admin read here. A resource without a row, and
without a default row ('*'), is refused at booking, with where an operator sets one (capacity.placers.quota).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from django.db import transaction
from django.db.models import QuerySet

from capacity.port import DEFAULT_RESOURCE, INVALID_INPUT, NOT_FOUND, CapacityError, Quota
from inventory.models import Tenant
from trail.record import record

MAX_LIMIT = 10**12
# A device class (gpu, mig-1g.10gb), a scalar (vcpu, memoryGiB), or '*' for every resource without a row.
RESOURCE = re.compile(r"\*|[A-Za-z0-9][A-Za-z0-9._/-]{0,99}")
# What a booking needs for its GPUs: a row for gpu, or a default.
GPU_QUOTA = ("gpu", DEFAULT_RESOURCE)


def _tenant(tenant_slug: str) -> Tenant:
    tenant = Tenant.objects.filter(slug=tenant_slug).first() if isinstance(tenant_slug, str) else None
    if tenant is None:
        raise CapacityError(NOT_FOUND, f"no tenant {tenant_slug}")
    return tenant


def quota_rows(tenant_slug: str) -> list[Quota]:
    """Return the tenant's quota rows, the default ('*') first, then by resource."""
    rows = list(Quota.objects.filter(tenant=_tenant(tenant_slug)).order_by("resource"))
    return sorted(rows, key=lambda q: q.resource != DEFAULT_RESOURCE)


def parse_quota(resource: object, limit: object) -> tuple[str, int]:
    """Return (resource, limit) checked, or refuse naming the field (INVALID_INPUT)."""
    resource = resource.strip() if isinstance(resource, str) else ""
    if not RESOURCE.fullmatch(resource):
        raise CapacityError(
            INVALID_INPUT,
            "resource: a device class (gpu, mig-1g.10gb), a scalar (vcpu, memoryGiB) or '*' for the default",
        )
    if isinstance(limit, bool) or not isinstance(limit, int) or not 0 <= limit <= MAX_LIMIT:
        raise CapacityError(INVALID_INPUT, f"limit: a whole number from 0 to {MAX_LIMIT}")
    return resource, limit


def set_quota(tenant_slug: str, resource: object, limit: object) -> Quota:
    """Create or change the tenant's limit for one resource (operators); the audit keeps before and after."""
    resource, limit = parse_quota(resource, limit)
    tenant = _tenant(tenant_slug)
    with transaction.atomic():
        row = Quota.objects.select_for_update().filter(tenant=tenant, resource=resource).first()
        before = {"limit": row.limit} if row else None
        if row is None:
            row = Quota.objects.create(tenant=tenant, resource=resource, limit=limit)
        elif row.limit != limit:
            row.limit = limit
            row.save(update_fields=["limit"])
        if before != {"limit": limit}:
            record("quota.set", f"quota:{tenant.slug}/{resource}", before=before, after={"limit": limit})
    return row


def delete_quota(tenant_slug: str, resource: str) -> None:
    """Remove the tenant's limit for one resource (its bookings of it are refused from then on)."""
    tenant = _tenant(tenant_slug)
    with transaction.atomic():
        row = Quota.objects.select_for_update().filter(tenant=tenant, resource=resource).first()
        if row is None:
            raise CapacityError(NOT_FOUND, f"{tenant.slug} has no quota for {resource}")
        record("quota.delete", f"quota:{tenant.slug}/{resource}", before={"limit": row.limit})
        row.delete()


def lacking_gpu_quota(tenants: QuerySet) -> QuerySet:
    """Return those of `tenants` with no quota for whole GPUs, still a query (one statement when read)."""
    return tenants.exclude(quotas__resource__in=GPU_QUOTA)


def without_gpu_quota(tenant_ids: Iterable[int]) -> set[int]:
    """Return which of these tenants have no quota for whole GPUs (no 'gpu' row, no default): they cannot book."""
    ids = set(tenant_ids)
    with_one = Quota.objects.filter(tenant_id__in=ids, resource__in=GPU_QUOTA).values_list(
        "tenant_id", flat=True
    )
    return ids - set(with_one)
