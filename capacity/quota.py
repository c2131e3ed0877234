"""Quota: charged before placement, refunded before release; the usage rows are locked first."""

from __future__ import annotations

from collections.abc import Mapping

from django.db import connection

from capacity.placement import CapacityError, PlacementRequest
from capacity.placement.errors import QUOTA_EXCEEDED
from capacity.placers.db import prepared_cursor


def demand(request: PlacementRequest) -> dict[str, int]:
    """Return what a request holds per quota resource: atoms per device class, then scalars."""
    members = request.gang.size if request.gang else 1
    amounts: dict[str, int] = {}
    for device in request.devices:
        amounts[device.device_class] = amounts.get(device.device_class, 0) + device.count * members
    for resource, amount in request.resources.items():
        amounts[resource] = amounts.get(resource, 0) + amount * members
    return {k: v for k, v in amounts.items() if v}


# The charge as a fragment for a statement that charges along with other writes: rows locked in
# resource order; each returns (resource, used, limit).
CHARGE_CTE = """
INSERT INTO capacity_quotausage (tenant_id, resource, used)
SELECT %(tenant)s::bigint, r, n FROM unnest(%(resources)s::text[], %(amounts)s::bigint[]) AS d(r, n)
 WHERE {condition}
 ORDER BY r
ON CONFLICT (tenant_id, resource) DO UPDATE SET used = capacity_quotausage.used + EXCLUDED.used
RETURNING resource, used,
          (SELECT q."limit" FROM capacity_quota q
            WHERE q.tenant_id = capacity_quotausage.tenant_id AND q.resource = capacity_quotausage.resource)
          AS quota_limit
"""


def charge(tenant_pk: int, tenant_slug: str, amounts: Mapping[str, int]) -> None:
    """Add `amounts` to the tenant's usage in one statement (rows locked in resource order).

    Refuse, naming the first resource past its limit, when a quota limit is exceeded.
    """
    if not amounts:
        return
    names = sorted(amounts)
    with prepared_cursor() as cur:
        cur.execute(
            CHARGE_CTE.format(condition="true"),
            {"tenant": tenant_pk, "resources": names, "amounts": [amounts[r] for r in names]},
        )
        rows = cur.fetchall()
    check(tenant_slug, amounts, rows)


def check(tenant_slug: str, amounts: Mapping[str, int], rows) -> None:
    """Refuse, naming the first resource past its limit, when a charge's rows exceed a quota."""
    for resource, used, limit in sorted(rows):
        if limit is not None and used > limit:
            raise CapacityError(
                QUOTA_EXCEEDED,
                f"quota exceeded for {tenant_slug}: {resource} {used - amounts[resource]} used"
                f" + {amounts[resource]} requested > limit {limit}",
            )


def refund(tenant_pk: int, amounts: Mapping[str, int]) -> None:
    """Subtract `amounts` from the tenant's usage, in resource order."""
    with connection.cursor() as cur:
        for resource in sorted(amounts):
            cur.execute(
                "UPDATE capacity_quotausage SET used = used - %s WHERE tenant_id = %s AND resource = %s",
                [amounts[resource], tenant_pk, resource],
            )
