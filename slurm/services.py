"""Set the bridge: which pools are bridged, and each tenant's Slurm account (the pool page, the API, the admin)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from capacity.port import INVALID_INPUT, NOT_FOUND, CapacityError
from inventory.models import Pool, Tenant

from .models import BridgedPool, SlurmAccount
from .scontrol import ACCOUNT_RE

BRIDGE_FIELDS = ("enabled", "accountsRequired", "wholeNodesOnly")


def _pool(slug: str) -> Pool:
    found = Pool.objects.filter(slug=slug).first()
    if found is None:
        raise CapacityError(NOT_FOUND, f"no pool {slug}")
    return found


def behind(bridge: BridgedPool, now: datetime | None = None) -> bool:
    """Return whether the bridge is behind: its last pass did not reach Slurm, or none ran lately."""
    now = now or timezone.now()
    late = timedelta(seconds=3 * settings.SLURM["PASS_EVERY"])
    return (
        bridge.last_ok_at is None
        or bridge.last_ok_at != bridge.last_pass_at
        or now - bridge.last_ok_at > late
    )


def bridge_body(pool: str) -> dict:
    """Return the pool's bridge as the API shows it (`bridged: false` for a pool that is not)."""
    found = _pool(pool)
    return body_of(found, BridgedPool.objects.filter(pool=found).first())


def body_of(pool: Pool, bridge: BridgedPool | None) -> dict:
    """Return a pool's bridge as the API shows it; its accounts are one read more, for a bridged pool only."""
    if bridge is None:
        return {
            "pool": pool.slug,
            "bridged": False,
            "enabled": False,
            "accountsRequired": False,
            "wholeNodesOnly": False,
            "accounts": {},
        }
    accounts = dict(
        SlurmAccount.objects.filter(pool=bridge)
        .order_by("tenant__slug")
        .values_list("tenant__slug", "account")
    )
    return {
        "pool": pool.slug,
        "bridged": True,
        "enabled": bridge.enabled,
        "accountsRequired": bridge.accounts_required,
        "wholeNodesOnly": bridge.whole_nodes_only,
        "accounts": accounts,
        "lastPassAt": bridge.last_pass_at,
        "lastOkAt": bridge.last_ok_at,
        "behind": behind(bridge),
        "problems": bridge.problems,
    }


def set_bridge(pool: str, data: object) -> dict:
    """Bridge a pool (or change its bridge) from {"enabled", "accountsRequired", "wholeNodesOnly"}; 400 names the field."""
    if not isinstance(data, Mapping):
        raise CapacityError(INVALID_INPUT, "the request must be a JSON object")
    unknown = sorted(set(data) - set(BRIDGE_FIELDS))
    if unknown:
        raise CapacityError(
            INVALID_INPUT, f"unknown field {unknown[0]!r} (expected {', '.join(BRIDGE_FIELDS)})"
        )
    for name in BRIDGE_FIELDS:
        if name in data and not isinstance(data[name], bool):
            raise CapacityError(INVALID_INPUT, f"{name} must be true or false")
    found = _pool(pool)
    with transaction.atomic():
        bridge, _ = BridgedPool.objects.get_or_create(pool=found)
        bridge.enabled = data.get("enabled", bridge.enabled)
        bridge.accounts_required = data.get("accountsRequired", bridge.accounts_required)
        bridge.whole_nodes_only = data.get("wholeNodesOnly", bridge.whole_nodes_only)
        bridge.save(update_fields=["enabled", "accounts_required", "whole_nodes_only"])
    return bridge_body(pool)


def unbridge(pool: str) -> None:
    """Stop bridging a pool: its bridge is switched off (its accounts kept), and passes end its reservations."""
    bridge = BridgedPool.objects.filter(pool=_pool(pool)).first()
    if bridge is not None and bridge.enabled:
        bridge.enabled = False
        bridge.save(update_fields=["enabled"])


def parse_account(data: object) -> str:
    """Return the account of {"account": "..."}, checked as Slurm names accounts."""
    if not isinstance(data, Mapping) or set(data) != {"account"}:
        raise CapacityError(INVALID_INPUT, 'the request must be {"account": "<Slurm account>"}')
    account = data["account"]
    if not isinstance(account, str) or not ACCOUNT_RE.match(account):
        raise CapacityError(
            INVALID_INPUT,
            "account must be a Slurm account: lower-case letters, digits, '_', '.' and '-', at most 64",
        )
    return account


def set_account(pool: str, tenant: str, account: str) -> SlurmAccount:
    """Map a tenant to its Slurm account in a bridged pool."""
    bridge = BridgedPool.objects.filter(pool=_pool(pool)).first()
    if bridge is None:
        raise CapacityError(NOT_FOUND, f"pool {pool} is not bridged to Slurm")
    found = Tenant.objects.filter(slug=tenant).first()
    if found is None:
        raise CapacityError(NOT_FOUND, f"no tenant {tenant}")
    row, _ = SlurmAccount.objects.update_or_create(pool=bridge, tenant=found, defaults={"account": account})
    return row


def delete_account(pool: str, tenant: str) -> None:
    """Remove a tenant's mapping (its slug is its account again, unless the pool requires one)."""
    deleted, _ = SlurmAccount.objects.filter(pool__pool__slug=pool, tenant__slug=tenant).delete()
    if not deleted:
        raise CapacityError(NOT_FOUND, f"tenant {tenant} has no Slurm account mapping in pool {pool}")


def problems() -> list[str]:
    """Return check_capacity's lines: each enabled bridged pool that is behind, and what its last pass could not do."""
    lines = []
    for bridge in BridgedPool.objects.filter(enabled=True).select_related("pool").order_by("pool__slug"):
        if behind(bridge):
            when = f"{bridge.last_ok_at:%Y-%m-%d %H:%M} UTC" if bridge.last_ok_at else "never"
            lines.append(f"pool {bridge.pool.slug}: behind (Slurm last reached {when})")
        lines += [f"pool {bridge.pool.slug}: {p['message']}" for p in bridge.problems]
    return lines
