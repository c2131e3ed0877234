"""What Slurm should hold for Berth: one reservation per whole-node booking and per maintenance window.

A placed booking of whole nodes (`binding: node`, one node or a gang) in a bridged pool, not yet
over and not awaiting approval, is `berth-<id>` on exactly its nodes for exactly its window, for
its tenant's Slurm account. A maintenance window that Berth's operators scheduled (not one the
bridge brought in from Slurm) on nodes of a bridged pool is `berth-mw-<id>`, Flags=MAINT. GPU-level
bookings are not reservations: Slurm 22.05 reserves nodes, not GPUs (docs/slurm.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import connection

from .models import BridgedPool, SlurmAccount
from .scontrol import ACCOUNT_RE, NAME_RE

# Reservations Berth makes need no idle nodes (Berth decided; a job already running keeps its time)
# and may overlap another berth-* one cut short a moment ago: Berth itself never double-books a node.
BOOKING_FLAGS = ("IGNORE_JOBS", "OVERLAP")
WINDOW_FLAGS = ("MAINT", "IGNORE_JOBS")

_BOOKINGS_SQL = """
SELECT r.id, r.pool_id, r.tenant_id, t.slug, r.starts_at, r.ends_at, array_agg(DISTINCT n.name ORDER BY n.name)
  FROM capacity_reservation r
  JOIN inventory_tenant t ON t.id = r.tenant_id
  JOIN capacity_allocation a ON a.reservation_id = r.id AND a.released_at IS NULL
  JOIN inventory_node n ON n.id = a.node_id
 WHERE r.pool_id = ANY(%(pools)s) AND r.status = 'placed' AND r.binding = 'node' AND r.ends_at > %(now)s
   AND NOT r.conditions @> '[{"type": "AwaitingApproval"}]'::jsonb
 GROUP BY r.id, t.slug
"""
_WINDOWS_SQL = """
SELECT w.id, min(n.pool_id), w.starts_at, w.ends_at, array_agg(DISTINCT n.name ORDER BY n.name)
  FROM capacity_maintenancewindow w
  JOIN capacity_maintenancewindownode wn ON wn.window_id = w.id
  JOIN inventory_node n ON n.id = wn.node_id
 WHERE n.pool_id = ANY(%(pools)s) AND w.ends_at > %(now)s
   AND NOT EXISTS (SELECT 1 FROM slurm_importedreservation i WHERE i.window_id = w.id)
 GROUP BY w.id
"""


@dataclass(frozen=True)
class Want:
    """One reservation Slurm should hold."""

    name: str
    pool_pk: int
    nodes: tuple[str, ...]
    start: datetime
    end: datetime
    accounts: tuple[str, ...] = ()
    users: tuple[str, ...] = ()
    flags: tuple[str, ...] = BOOKING_FLAGS


@dataclass
class Desired:
    """What Slurm should hold, and what cannot be asked of it (pool pk, message)."""

    wants: dict[str, Want]
    problems: list[tuple[int, str]]


def prefix() -> str:
    """Return the prefix of the reservations Berth owns (`berth-`)."""
    return settings.SLURM["PREFIX"]


def booking_name(reservation_pk: int) -> str:
    return f"{prefix()}{reservation_pk}"


def window_name(window_pk: int) -> str:
    return f"{prefix()}mw-{window_pk}"


def account_for(
    bridge: BridgedPool, tenant_pk: int, slug: str, mapped: dict[tuple[int, int], str]
) -> str | None:
    """Return the tenant's Slurm account in the pool: its mapping, else its slug unless a mapping is required."""
    account = mapped.get((bridge.pool_id, tenant_pk))
    if account is None and not bridge.accounts_required:
        account = slug
    return account if account is not None and ACCOUNT_RE.match(account) else None


def desired(pools: dict[int, BridgedPool], now: datetime) -> Desired:
    """Return what Slurm should hold for the bridged pools at `now`."""
    wants: dict[str, Want] = {}
    problems: list[tuple[int, str]] = []
    if not pools:
        return Desired(wants, problems)
    mapped = {
        (pool, tenant): account
        for pool, tenant, account in SlurmAccount.objects.filter(pool_id__in=list(pools)).values_list(
            "pool_id", "tenant_id", "account"
        )
    }
    users = tuple(settings.SLURM["MAINT_USERS"])
    with connection.cursor() as cur:
        cur.execute(_BOOKINGS_SQL, {"pools": list(pools), "now": now})
        bookings = cur.fetchall()
        cur.execute(_WINDOWS_SQL, {"pools": list(pools), "now": now})
        windows = cur.fetchall()
    for pk, pool_pk, tenant_pk, slug, start, end, nodes in bookings:
        name = booking_name(pk)
        account = account_for(pools[pool_pk], tenant_pk, slug, mapped)
        bad = [n for n in nodes if not NAME_RE.match(n)]
        if account is None:
            problems.append((pool_pk, f"{name}: tenant {slug} has no valid Slurm account mapping"))
        elif bad:
            problems.append((pool_pk, f"{name}: node {bad[0][:80]!r} is not a Slurm node name"))
        else:
            wants[name] = Want(name, pool_pk, tuple(nodes), start, end, accounts=(account,))
    for pk, pool_pk, start, end, nodes in windows:
        name = window_name(pk)
        nodes = tuple(n for n in nodes if NAME_RE.match(n))
        if nodes:
            wants[name] = Want(name, pool_pk, nodes, start, end, users=users, flags=WINDOW_FLAGS)
    return Desired(wants, problems)


def preempted(names: list[str]) -> set[str]:
    """Return which of these berth-<id> names are bookings Berth preempted."""
    ids = {int(n[len(prefix()) :]): n for n in names if n[len(prefix()) :].isdigit()}
    if not ids:
        return set()
    with connection.cursor() as cur:
        cur.execute(
            "SELECT id FROM capacity_reservation WHERE id = ANY(%s) AND status = 'preempted'", [list(ids)]
        )
        return {ids[pk] for (pk,) in cur.fetchall()}
