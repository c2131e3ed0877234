"""Maintenance windows planned ahead: schedule, list, read and cancel them; the worker's switch.

A window keeps new work off its nodes over [start, end): the placer's pool index carries each
node's windows (capacity.placers.loader), so placement, preview, earliest start and the
availability chart share one rule (capacity.placement.maintenance), and the guarded commit
refuses a node whose window was scheduled after the plan read the index. Bookings that overlap
the window when it is scheduled are listed; with `move` the ones that have not started are moved
off as drain moves them (BookingRepair's path; the worker moves what the request leaves, and
retries what found no room). At the start the worker puts the nodes in maintenance, noting on
each window node whether it did (`switched`: the node was not in maintenance then); at the end
it takes out only the nodes it put in, unless another running window covers them (which then
takes them over). An operator's own maintenance switch is never undone by a window.

The bookings a window will take GPUs from are told (maintenance.notice: a condition, an event, the
agent's file); scheduling and deleting a window is in the audit (`maintenance.schedule`, `.delete`).
Capacity keeps the tables (capacity.models.maintenance) and the moves (its repair); this app reads
and asks it through capacity.port alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.db import connection, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from capacity.port import (
    INVALID_INPUT,
    MAX_DURATION,
    NOT_FOUND,
    START_GRACE,
    Allocation,
    CapacityError,
    MaintenanceWindow,
    MaintenanceWindowNode,
    epoch_ms,
    repair_reservation,
    wake_worker,
)
from inventory import services as inventory
from inventory.models import Node, Pool
from trail.record import record

from . import notice

FIELDS = ("nodes", "pool", "start", "end", "reason", "move")
MAX_REASON = 200
MAX_NODES = 5000
# Reservations a request moves itself before it answers; the worker moves the rest (as drain).
REQUEST_MOVE_LIMIT = 50


@dataclass(frozen=True)
class WindowInput:
    """A maintenance window as the caller asked for it, checked: exactly one of nodes and pool."""

    nodes: tuple[str, ...] | None
    pool: str | None
    start: datetime
    end: datetime
    reason: str
    move: bool


@dataclass(frozen=True)
class Overlap:
    """A booking a window overlaps: its reservation (or port instance), node and window."""

    reservation: int | None
    instance: str | None
    tenant: str | None
    node: str
    start: datetime
    end: datetime


@dataclass
class Scheduled:
    """What scheduling a window did: the window, the bookings it overlaps, what it moved."""

    window: MaintenanceWindow
    overlaps: list[Overlap]
    moved: list[int] = field(default_factory=list)
    waiting: list[int] = field(default_factory=list)
    left: int = 0  # reservations past the request's bound, moved by the worker
    told: list[int] = field(default_factory=list)  # reservations given the MaintenanceScheduled condition


def _invalid(message: str) -> CapacityError:
    return CapacityError(INVALID_INPUT, message)


def parse_window(data: object, now: datetime) -> WindowInput:
    """Return the caller's window checked, or raise INVALID_INPUT naming the field (nothing read)."""
    if not isinstance(data, Mapping):
        raise _invalid("the request must be a JSON object")
    unknown = sorted(set(data) - set(FIELDS))
    if unknown:
        raise _invalid(f"unknown field {unknown[0]!r} (expected {', '.join(FIELDS)})")
    has_nodes, has_pool = data.get("nodes") is not None, data.get("pool") is not None
    if has_nodes == has_pool:
        raise _invalid("nodes: give either nodes (a list of node names) or pool, not both" if has_nodes
                       else "nodes: give either nodes (a list of node names) or pool")  # fmt: skip
    nodes = pool = None
    if has_nodes:
        raw = data["nodes"]
        if not isinstance(raw, list) or not raw or not all(isinstance(n, str) and n for n in raw):
            raise _invalid("nodes must be a non-empty list of node names")
        if len(raw) > MAX_NODES:
            raise _invalid(f"nodes: at most {MAX_NODES} nodes")
        nodes = tuple(sorted(set(raw)))
    else:
        if not isinstance(data["pool"], str) or not data["pool"]:
            raise _invalid("pool must be a pool's name")
        pool = data["pool"]
    for name in ("start", "end"):
        if name not in data:
            raise _invalid(f"{name} is required")
    start = datetime.fromtimestamp(epoch_ms(data["start"], "start") / 1000, UTC)
    end = datetime.fromtimestamp(epoch_ms(data["end"], "end") / 1000, UTC)
    if end <= start:
        raise _invalid("end: the window must end after it starts")
    if start < now - START_GRACE:
        raise _invalid("start: the window is in the past (it may start at most 5 minutes before now)")
    if end - start > MAX_DURATION:
        raise _invalid("end: a window lasts at most 366d")
    reason = data.get("reason", "")
    if not isinstance(reason, str) or len(reason) > MAX_REASON:
        raise _invalid(f"reason must be text of at most {MAX_REASON} characters")
    move = data.get("move", False)
    if not isinstance(move, bool):
        raise _invalid("move must be true or false")
    return WindowInput(nodes, pool, start, end, reason.strip(), move)


def _node_rows(spec: WindowInput) -> tuple[Pool | None, list[Node]]:
    """Return the window's pool (when named) and nodes; INVALID_INPUT for an unknown one."""
    if spec.pool is not None:
        pool = Pool.objects.filter(slug=spec.pool).first()
        if pool is None:
            raise _invalid(f"pool: no pool {spec.pool}")
        nodes = list(Node.objects.filter(pool=pool).order_by("pk"))
        if not nodes:
            raise _invalid(f"pool: {spec.pool} has no nodes")
        return pool, nodes
    nodes = list(Node.objects.filter(name__in=spec.nodes).order_by("pk"))
    missing = sorted(set(spec.nodes or ()) - {n.name for n in nodes})
    if missing:
        shown = ", ".join(missing[:10]) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
        raise _invalid(f"nodes: no node named {shown}")
    return None, nodes


_OVERLAPS_SQL = """
SELECT a.reservation_id, a.instance_id, t.slug, n.name, a.starts_at, a.ends_at
  FROM capacity_allocation a
  JOIN inventory_node n ON n.id = a.node_id
  LEFT JOIN capacity_reservation r ON r.id = a.reservation_id
  LEFT JOIN inventory_tenant t ON t.id = r.tenant_id
 WHERE a.node_id = ANY(%(nodes)s) AND a.released_at IS NULL
   AND a.starts_at < %(end)s AND a.ends_at > %(start)s AND a.ends_at > %(now)s
 ORDER BY a.starts_at, n.name, a.reservation_id
"""


def overlaps(window: MaintenanceWindow, now: datetime | None = None) -> list[Overlap]:
    """Return the live bookings on the window's nodes that overlap it, soonest first."""
    nodes = list(MaintenanceWindowNode.objects.filter(window=window).values_list("node_id", flat=True))
    with connection.cursor() as cur:
        cur.execute(
            _OVERLAPS_SQL,
            {"nodes": nodes, "start": window.starts_at, "end": window.ends_at, "now": now or timezone.now()},
        )
        return [Overlap(*row) for row in cur.fetchall()]


def schedule(data: Any, *, by: str = "", now: datetime | None = None) -> Scheduled:
    """Schedule a maintenance window (operators only); return it with the bookings it overlaps.

    Input is checked before anything is read or locked. The pools are locked (FOR NO KEY UPDATE,
    as placers lock them) before the window is written, so a placement commits either before it
    (and is listed here) or after it (and its guarded commit sees the window).
    """
    now = now or timezone.now()
    spec = parse_window(data, now)
    with transaction.atomic():
        pool, nodes = _node_rows(spec)
        pools = sorted({n.pool_id for n in nodes})
        with connection.cursor() as cur:
            cur.execute(
                "SELECT id FROM inventory_pool WHERE id = ANY(%s) ORDER BY id FOR NO KEY UPDATE", [pools]
            )
        window = MaintenanceWindow.objects.create(
            pool=pool,
            starts_at=spec.start,
            ends_at=spec.end,
            reason=spec.reason,
            move=spec.move,
            created_by=by,
        )
        MaintenanceWindowNode.objects.bulk_create(
            MaintenanceWindowNode(window=window, node=n, starts_at=spec.start, ends_at=spec.end)
            for n in nodes
        )
        found = overlaps(window, now)
        record(
            "maintenance.schedule",
            f"maintenance:{window.pk}",
            after=audit_data(window, [n.name for n in nodes]),
            reason=spec.reason,
            by=by,
        )
    result = Scheduled(window, found)
    # Told now: what the window will take at its start. With `move` what has not started is moved
    # off instead (a booking that finds no room is told in its repair's transaction).
    told = {o.reservation for o in found if o.reservation and (not spec.move or o.start <= now)}
    with transaction.atomic():
        result.told = notice.refresh(told, now)
    if spec.move:
        _move_off(result, now, pools)
    return result


def audit_data(window: MaintenanceWindow, nodes: list[str]) -> dict:
    """Return a window as the audit records it."""
    return {
        "nodes": nodes,
        "pool": window.pool.slug if window.pool_id else None,
        "start": window.starts_at.isoformat(),
        "end": window.ends_at.isoformat(),
        "reason": window.reason,
        "move": window.move,
    }


def _move_off(result: Scheduled, now: datetime, pools: list[int]) -> None:
    """Move the overlapping bookings that have not started, up to the request's bound; wake the worker."""
    window = result.window
    later: dict[int, list[tuple[int, str]]] = {}
    rows = Allocation.objects.filter(
        node__in=window.nodes.all(),
        released_at__isnull=True,
        starts_at__gt=now,
        starts_at__lt=window.ends_at,
        ends_at__gt=window.starts_at,
        reservation__isnull=False,
    ).values_list("reservation_id", "pk", "node__name")
    for reservation, pk, node in rows.order_by("reservation_id", "pk"):
        later.setdefault(reservation, []).append((pk, f"{node} has maintenance window {window.pk}"))
    result.left = max(0, len(later) - REQUEST_MOVE_LIMIT)
    if result.left:
        wake_worker(pools)
    for reservation, allocations in list(later.items())[:REQUEST_MOVE_LIMIT]:
        repair_reservation(reservation, allocations, now=now, kind="maintenance")
        still = Allocation.objects.filter(
            pk__in=[pk for pk, _ in allocations], released_at__isnull=True
        ).exists()
        (result.waiting if still else result.moved).append(reservation)


def windows(
    *,
    pool: str | None = None,
    node: str | None = None,
    active: bool | None = None,
    now: datetime | None = None,
) -> QuerySet[MaintenanceWindow]:
    """Return the windows, soonest first: those on a pool's nodes, a node, running now (or not)."""
    now = now or timezone.now()
    found = MaintenanceWindow.objects.all()
    if pool is not None:
        found = found.filter(Q(pool__slug=pool) | Q(window_nodes__node__pool__slug=pool))
    if node is not None:
        found = found.filter(window_nodes__node__name=node)
    if active is True:
        found = found.filter(starts_at__lte=now, ends_at__gt=now)
    elif active is False:
        found = found.exclude(starts_at__lte=now, ends_at__gt=now)
    return found.distinct().order_by("starts_at", "pk")


def window(window_id: object) -> MaintenanceWindow:
    """Return one window, or NOT_FOUND."""
    found = MaintenanceWindow.objects.filter(pk=window_id).first() if str(window_id).isdigit() else None
    if found is None:
        raise CapacityError(NOT_FOUND, f"no maintenance window {window_id}")
    return found


def node_names(windows_: list[MaintenanceWindow]) -> dict[int, list[str]]:
    """Return window pk -> its node names, in one query."""
    names: dict[int, list[str]] = {w.pk: [] for w in windows_}
    rows = MaintenanceWindowNode.objects.filter(window__in=windows_).values_list("window_id", "node__name")
    for pk, name in rows.order_by("window_id", "node__name"):
        names[pk].append(name)
    return names


def cancel(window_id: object, *, now: datetime | None = None) -> None:
    """Delete a window (operators only): a running one ends now, taking out the nodes it put in."""
    now = now or timezone.now()
    found = window(window_id)
    pk = found.pk
    with transaction.atomic():
        if found.started_at is not None and found.ended_at is None:
            _end(found, now)
        record("maintenance.delete", f"maintenance:{pk}", before=audit_data(found, node_names([found])[pk]))
        found.delete()
    # Bookings it would have taken GPUs from: told by another window, or that this one is off.
    with transaction.atomic():
        notice.refresh(notice.naming(pk), now, gone=notice.CANCELLED)


def retell(window_id: int, now: datetime | None = None) -> list[int]:
    """Tell the bookings again after a window's span changed in place (a Slurm reservation
    shortened, say); return those whose condition changed. Schedule and cancel tell by themselves.

    Those it now overlaps name it (or a sooner window); those it no longer overlaps read False,
    reason WindowChanged, unless another window takes their GPUs.
    """
    now = now or timezone.now()
    found = MaintenanceWindow.objects.filter(pk=window_id).first()
    ids = set(notice.naming(window_id))
    if found is not None:
        ids |= {o.reservation for o in overlaps(found, now) if o.reservation}
    with transaction.atomic():
        return notice.refresh(ids, now, gone=notice.CHANGED)


def switch_windows(now: datetime | None = None) -> tuple[int, int]:
    """Start the windows due and end those over (the worker, every round); return how many of each.

    At the start a node not in maintenance is put in (and `switched` noted); one already in
    maintenance (an operator's switch, or another window's) is left as it is. At the end a node is
    taken out only when this window switched it and no other running window covers it (that one
    takes the node over and takes it out at its own end).
    """
    now = now or timezone.now()
    started = ended = 0
    due = MaintenanceWindow.objects.filter(started_at__isnull=True, starts_at__lte=now, ends_at__gt=now)
    for found in due.order_by("starts_at", "pk"):
        with transaction.atomic():
            for row in MaintenanceWindowNode.objects.filter(window=found).select_related("node"):
                if not row.node.maintenance:
                    inventory.set_maintenance(row.node, True, reason=_why(found))
                    row.switched = True
                    row.save(update_fields=["switched"])
            MaintenanceWindow.objects.filter(pk=found.pk).update(started_at=now)
        started += 1
    over = MaintenanceWindow.objects.filter(ended_at__isnull=True, ends_at__lte=now)
    for found in over.order_by("ends_at", "pk"):
        with transaction.atomic():
            _end(found, now)
        with transaction.atomic():  # over: its notices go (or name the next window)
            notice.refresh(notice.naming(found.pk), now)
        ended += 1
    return started, ended


def _end(found: MaintenanceWindow, now: datetime) -> None:
    """End a window: each node it put in maintenance comes out, unless another running window
    covers the node; that window then holds it (its `switched`) and takes it out at its own end."""
    for row in MaintenanceWindowNode.objects.filter(window=found, switched=True).select_related("node"):
        other = (
            MaintenanceWindowNode.objects.filter(
                node=row.node,
                window__started_at__isnull=False,
                window__ended_at__isnull=True,
                ends_at__gt=now,
            )
            .exclude(window=found)
            .order_by("-ends_at", "pk")
            .first()
        )
        if other is not None:
            MaintenanceWindowNode.objects.filter(pk=other.pk).update(switched=True)
        elif row.node.maintenance:
            inventory.set_maintenance(row.node, False, reason=f"maintenance window {found.pk} ended")
    MaintenanceWindow.objects.filter(pk=found.pk).update(ended_at=now)


def _why(found: MaintenanceWindow) -> str:
    text = f"maintenance window {found.pk}"
    return f"{text}: {found.reason}" if found.reason else text


def outside_pool(names: list[str], pool: str | None) -> list[str]:
    """Return those of `names` that are nodes of another pool than `pool` (the schedule names unknown ones)."""
    found = Node.objects.filter(name__in=names).exclude(pool__slug=pool).values_list("name", flat=True)
    return sorted(found)


# The names the Slurm bridge schedules and cancels windows by.
schedule_window = schedule
cancel_window = cancel
