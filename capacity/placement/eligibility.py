"""Whether a node may take work at all: the spec's eligibility table, in its order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from .types import NodeView, Pool

ELIGIBLE_FILTER: Final = "eligible"
DEDICATED_PREFIX: Final = "dedicated="

IN_ANOTHER_POOL: Final = "in another pool"
TENANT_CONTROLLED: Final = "tenant-controlled nodes add no capacity"
OUTSIDE_OWNER_POOL: Final = "tenant-owned node outside its owner's pool"
IN_MAINTENANCE: Final = "in maintenance"
CORDONED: Final = "cordoned"
AWAITING_SPEC: Final = "awaiting its first converged spec"

# The spec's table puts cordoned nodes in the maintenance bucket; issue 18 keeps them apart, so
# that pools say how much capacity operators hold back each way (inventory.states, one vocabulary).
BUCKETS: Final = ("excluded", "maintenance", "cordoned", "provisioning", "unreachable", "unhealthy")


@dataclass(frozen=True, slots=True)
class Ineligibility:
    """Why a node cannot take work, and the capacity bucket it counts in (None: not this pool's)."""

    filter: str
    reason: str
    bucket: str | None


def dedication_reason(tenant_id: str) -> str:
    """Return the NoSchedule reason that dedicates a node to tenant_id."""
    return f"{DEDICATED_PREFIX}{tenant_id}"


def _before_no_schedule(node: NodeView, pool: Pool) -> Ineligibility | None:
    if node.pool_id != pool.id:
        return Ineligibility(ELIGIBLE_FILTER, IN_ANOTHER_POOL, None)
    if node.role != "host":
        return Ineligibility(ELIGIBLE_FILTER, f"role {node.role}", "excluded")
    if node.trust == "tenant-controlled":
        return Ineligibility(ELIGIBLE_FILTER, TENANT_CONTROLLED, "excluded")
    if node.owner_tenant_id is not None and node.owner_tenant_id != pool.owner_tenant_id:
        return Ineligibility(ELIGIBLE_FILTER, OUTSIDE_OWNER_POOL, "excluded")
    if node.maintenance:
        return Ineligibility(ELIGIBLE_FILTER, IN_MAINTENANCE, "maintenance")
    if node.cordoned:
        return Ineligibility(ELIGIBLE_FILTER, CORDONED, "cordoned")
    if node.provision_state != "active":
        return Ineligibility(ELIGIBLE_FILTER, f"provision state {node.provision_state}", "provisioning")
    if not node.converged:
        return Ineligibility(ELIGIBLE_FILTER, AWAITING_SPEC, "provisioning")
    if node.connectivity != "connected":
        return Ineligibility(ELIGIBLE_FILTER, f"connectivity {node.connectivity}", "unreachable")
    return None


def ineligibility(node: NodeView, pool: Pool, tenant_id: str | None = None) -> Ineligibility | None:
    """Return the first eligibility check node fails for tenant_id's work in pool, or None.

    A dedication to tenant_id (`dedicated=<tenant_id>`) is the one NoSchedule reason tolerated.
    """
    found = _before_no_schedule(node, pool)
    if found is not None:
        return found
    reasons = node.no_schedule_reasons
    if not reasons:
        return None
    if tenant_id is not None:
        tolerated = dedication_reason(tenant_id)
        reasons = tuple(r for r in reasons if r != tolerated)
        if not reasons:
            return None
    return Ineligibility(ELIGIBLE_FILTER, f"NoSchedule: {', '.join(reasons)}", "unhealthy")


def may_be_schedulable(node: NodeView, pool: Pool) -> bool:
    """Return whether node is schedulable for some tenant: no NoSchedule reason, or one dedication alone."""
    if _before_no_schedule(node, pool) is not None:
        return False
    distinct = set(node.no_schedule_reasons)
    if not distinct:
        return True
    return len(distinct) == 1 and next(iter(distinct)).startswith(DEDICATED_PREFIX)


def may_use(owner_pk: int | None, tenant_pks: tuple[int, ...], tenant_pk: int) -> bool:
    """Return whether a tenant may use a pool: a private pool its owner only; else its tenants, or anyone."""
    if owner_pk is not None:
        return owner_pk == tenant_pk
    return not tenant_pks or tenant_pk in tenant_pks
