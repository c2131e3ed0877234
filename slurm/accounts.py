"""The bridge's rule at booking, before any lock: a tenant books in a bridged pool only with a Slurm account,
and only whole nodes where the pool says so.

A pool's bridged state is read once per BRIDGED_TTL seconds in each process (a change made in this
process is seen at once), so a pool that is not bridged sends no statement for it; in a bridged
pool the tenant's account is one indexed read.
"""

from __future__ import annotations

import time
from datetime import datetime

from capacity.port import POLICY_LIMIT, CapacityError, Rule

from .models import BridgedPool, SlurmAccount
from .scontrol import ACCOUNT_RE

BRIDGED_TTL = 2.0
_CACHE: dict[str, object] = {"at": -1e9, "pools": {}}


def forget() -> None:
    """Read the bridged pools again on the next booking (a pool's bridge changed here)."""
    _CACHE["at"] = -1e9


def bridged_pools() -> dict[int, tuple[bool, bool]]:
    """Return pool pk -> (accounts_required, whole_nodes_only) of the enabled bridged pools (cached BRIDGED_TTL s)."""
    if time.monotonic() - _CACHE["at"] > BRIDGED_TTL:
        rows = BridgedPool.objects.filter(enabled=True).values_list(
            "pool_id", "accounts_required", "whole_nodes_only"
        )
        _CACHE["pools"] = {pk: (required, whole) for pk, required, whole in rows}
        _CACHE["at"] = time.monotonic()
    return _CACHE["pools"]


def missing_account(pool_pk: int, pool_slug: str, tenant_slug: str, required: bool) -> str | None:
    """Return why the tenant may not book in the bridged pool, or None when it has an account."""
    mapped = SlurmAccount.objects.filter(pool_id=pool_pk, tenant__slug=tenant_slug).values_list(
        "account", flat=True
    )
    account = next(iter(mapped), None)
    if account is not None:
        return None
    where = (
        f"set it on the pool page's Slurm section, PUT /api/v1/pools/{pool_slug}/slurm/accounts/{tenant_slug}"
        " or in the admin"
    )
    if required:
        return (
            f"pool {pool_slug} is bridged to Slurm and needs a Slurm account mapping for tenant"
            f" {tenant_slug}; there is none ({where})"
        )
    if not ACCOUNT_RE.match(tenant_slug):
        return (
            f"pool {pool_slug} is bridged to Slurm and tenant {tenant_slug}'s slug is not a Slurm account:"
            f" it needs a Slurm account mapping ({where})"
        )
    return None


def check(request, pool, now: datetime) -> None:
    """Refuse (POLICY_LIMIT) a booking Slurm could not hold to: no Slurm account, or GPUs in a whole-node pool."""
    required, whole_nodes_only = bridged_pools()[pool.pk]
    if whole_nodes_only and not request.lease:
        raise CapacityError(
            POLICY_LIMIT,
            f"pool {pool.view.id} is bridged to Slurm for whole nodes only (Slurm reserves nodes, not GPUs):"
            ' book whole nodes (binding "node", a gang for several)',
        )
    why = missing_account(pool.pk, pool.view.id, request.tenant_id, required)
    if why is not None:
        raise CapacityError(POLICY_LIMIT, why)


RULE = Rule("slurm.account", applies=lambda pool: pool.pk in bridged_pools(), before_lock=check)
