"""BookingRepair: bookings follow the hardware.

When an atom becomes unusable (a device marked unhealthy or unbookable, by a report or the API, or
missing from a report; its node NotReady, unreachable, in maintenance or under a NoExecute taint),
every running and future allocation holding it is placed again through the normal pipeline and
guarded commit, inline and not admitted again (spec). A running allocation ends now and the rest
of its window is placed anew; a future one is placed whole. The same node is preferred when it
still has room. The reservation keeps its id and its quota charges, and reads a `Repaired`
condition (from which atoms to which, when, why).

When nothing fits, the allocation is kept as it is (the tenant keeps its healthy atoms and its
place in the window, knowing one is broken) and the reservation reads a `RepairPending`
condition with the pending-style reason; the worker tries again every round, so it is repaired as
soon as capacity frees. An allocation whose atoms no longer match their devices (an operator
reshaped a booked GPU; capacity.services.misshapen, what check_capacity reports) is retried the
same way. Whole-node leases are repaired only when their node becomes unusable: a
lease holds its node as it is, broken GPUs included.

Drain (the maintenance app's, through capacity.port) uses the same path to move bookings that have
not started off a node; one that found no room is tried again with the rest. What an operator's
action on the node page moved off (maintenance, a NoExecute taint) is read here too (moves_since). An app that keeps a condition of its own true as bookings move
(the maintenance app's MaintenanceScheduled) registers a hook here (`register_repair_condition`),
called in each repair's transaction.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db import connection, transaction
from django.utils import timezone

from capacity import observe
from capacity.conf import placer_config
from capacity.db.channels import REPAIR_CHANNEL
from capacity.db.retry import retry_on_conflict
from capacity.models import Allocation, Reservation
from capacity.placement import PlacementRequest, Window
from capacity.placers import quota
from capacity.placers.attempt import rollback_to
from capacity.placers.commit import Owner
from capacity.placers.ending import end_allocations
from capacity.placers.index import pool_index
from capacity.placers.inline import place
from capacity.placers.lease import place_lease
from capacity.placers.loader import PoolRow, load_pool
from capacity.placers.types import Outcome, PlacerConfig
from inventory.models import Node, NodeLabel
from trail.context import stamp as name_actor

from .atoms import atoms_text
from .inputs import stored_request
from .misshapen import misshapen

REPAIRED = "Repaired"
REPAIR_PENDING = "RepairPending"

# hook(reservation, conditions, now, windowed) -> the conditions to write, in the repair's
# transaction; `windowed`: the moves were off a maintenance window's nodes.
_CONDITION_HOOKS: dict[str, Callable[[Reservation, list[dict], datetime, bool], list[dict]]] = {}


def register_repair_condition(
    name: str, hook: Callable[[Reservation, list[dict], datetime, bool], list[dict]]
) -> None:
    """Let an app rewrite a repaired booking's conditions (once per name: ready() may run twice)."""
    _CONDITION_HOOKS[name] = hook


# Live allocations of placed reservations in these pools that hold something unusable from now on,
# with why. A lease (binding node) counts only its node's state, not one device's. A node that a
# maintenance window put in maintenance (`switched`, running now) breaks only what starts before
# the window ends; a window with `move` breaks what has not started and overlaps it, as drain does.
_BROKEN_SQL = """
SELECT a.id, a.reservation_id,
       CASE WHEN n.maintenance AND a.starts_at < coalesce(
                   (SELECT max(w.ends_at) FROM capacity_maintenancewindownode w
                     WHERE w.node_id = n.id AND w.switched AND w.starts_at <= %(now)s AND w.ends_at > %(now)s),
                   'infinity') THEN n.name || ' is in maintenance'
            WHEN n.connectivity <> 'connected' THEN n.name || ' is ' || n.connectivity
            WHEN 'NotReady' = ANY(n.no_schedule_reasons) THEN n.name || ' is NotReady'
            WHEN EXISTS (SELECT 1 FROM inventory_nodetaint t
                          WHERE t.node_id = n.id AND t.effect = 'NoExecute'
                            AND NOT (t.key = 'dedicated' AND t.value = tn.slug))
              THEN n.name || ' has a NoExecute taint'
            WHEN n.drain_started_at IS NOT NULL AND a.starts_at > %(now)s THEN n.name || ' is draining'
            WHEN mw.id IS NOT NULL THEN n.name || ' has maintenance window ' || mw.id
            WHEN r.binding = 'node' THEN NULL
            ELSE (SELECT string_agg(d.uuid || CASE WHEN NOT d.healthy THEN ' unhealthy' ELSE ' unbookable' END,
                                    ', ' ORDER BY d.uuid)
                    FROM capacity_devicebooking b JOIN inventory_device d ON d.id = b.device_id
                   WHERE b.allocation_id = a.id AND upper(b.during) > %(now)s AND NOT (d.healthy AND d.bookable))
       END AS why
  FROM capacity_allocation a
  JOIN capacity_reservation r ON r.id = a.reservation_id
  JOIN inventory_tenant tn ON tn.id = r.tenant_id
  JOIN inventory_node n ON n.id = a.node_id
  LEFT JOIN LATERAL (
       SELECT min(w.window_id) AS id FROM capacity_maintenancewindownode w
         JOIN capacity_maintenancewindow m ON m.id = w.window_id
        WHERE w.node_id = n.id AND m.move AND a.starts_at > %(now)s
          AND w.starts_at < a.ends_at AND w.ends_at > a.starts_at) mw ON true
 WHERE n.pool_id = ANY(%(pools)s) AND r.status = 'placed' AND a.released_at IS NULL AND a.ends_at > %(now)s
 ORDER BY a.reservation_id, a.id
"""


# Live bookings of these devices (running now or later) with their allocation and owner.
_LIVE_BOOKINGS_SQL = """
SELECT b.device_id, d.uuid, a.id, a.reservation_id, a.instance_id
  FROM capacity_devicebooking b
  JOIN capacity_allocation a ON a.id = b.allocation_id
  JOIN inventory_device d ON d.id = b.device_id
 WHERE b.device_id = ANY(%(devices)s) AND upper(b.during) > %(now)s AND a.released_at IS NULL
 ORDER BY b.device_id, a.id
"""


@dataclass
class RepairResult:
    """What a repair pass did: reservations moved, and those still waiting for room."""

    repaired: list[int] = dataclasses.field(default_factory=list)
    waiting: list[int] = dataclasses.field(default_factory=list)
    left: int = 0  # left to the worker (a request's bound)


def broken(pool_ids: Iterable[int], now: datetime) -> dict[int, list[tuple[int, str]]]:
    """Return reservation pk -> [(allocation pk, why)] for live allocations that hold unusable atoms
    or atoms that no longer match their devices (a reshape, as check_capacity sees it)."""
    pools = sorted(set(pool_ids))
    found: dict[int, list[tuple[int, str]]] = {}
    with connection.cursor() as cur:
        cur.execute(_BROKEN_SQL, {"pools": pools, "now": now})
        for allocation, reservation, why in cur.fetchall():
            if why:
                found.setdefault(reservation, []).append((allocation, why))
    listed = {allocation for allocations in found.values() for allocation, _ in allocations}
    for shape in misshapen(pools, now):
        if shape.placed and shape.reservation is not None and shape.allocation not in listed:
            listed.add(shape.allocation)
            found.setdefault(shape.reservation, []).append((shape.allocation, shape.why))
    return dict(sorted(found.items()))


def repair_pools(
    pool_ids: Iterable[int],
    *,
    now: datetime | None = None,
    config: PlacerConfig | None = None,
    limit: int | None = None,
) -> RepairResult:
    """Repair every reservation in these pools that holds unusable atoms, each in its own transaction.

    With `limit` (a request that made atoms unusable) at most that many are repaired here; the rest
    are left to the worker, which a notification wakes at once (`left` says how many).
    """
    now = now or timezone.now()
    result = RepairResult()
    found = list(broken(pool_ids, now).items())
    for reservation_pk, allocations in found[:limit]:
        moved = repair_reservation(reservation_pk, allocations, now=now, config=config)
        (result.repaired if moved else result.waiting).append(reservation_pk)
    result.left = len(found) - len(result.repaired) - len(result.waiting)
    if result.left:
        wake_worker(pool_ids)
    return result


def _live_bookings(device_ids: Iterable[int], now: datetime) -> list[tuple]:
    with connection.cursor() as cur:
        cur.execute(_LIVE_BOOKINGS_SQL, {"devices": sorted(set(device_ids)), "now": now})
        return cur.fetchall()


def live_bookings_of(device_ids: Iterable[int], now: datetime | None = None) -> dict[int, list[str]]:
    """Return device pk -> who holds it now or later ("reservation 12", "instance abc")."""
    found: dict[int, list[str]] = {}
    for device, _uuid, _allocation, reservation, instance in _live_bookings(
        device_ids, now or timezone.now()
    ):
        found.setdefault(device, []).append(
            f"reservation {reservation}" if reservation else f"instance {instance}"
        )
    return found


def repair_reshaped(device_ids: Iterable[int], *, now: datetime | None = None) -> RepairResult:
    """Place again every live allocation holding a device whose class, MIG parent or index an
    operator changed, as for a failed GPU (the same node first)."""
    now = now or timezone.now()
    found: dict[int, dict[int, list[str]]] = {}
    for _device, uuid, allocation, reservation, _instance in _live_bookings(device_ids, now):
        if reservation is not None:
            found.setdefault(reservation, {}).setdefault(allocation, []).append(uuid)
    result = RepairResult()
    for reservation_pk, allocations in sorted(found.items()):
        moves = [
            (pk, f"{', '.join(uuids)} changed shape (an operator's report)")
            for pk, uuids in allocations.items()
        ]
        moved = repair_reservation(reservation_pk, moves, now=now)
        (result.repaired if moved else result.waiting).append(reservation_pk)
    return result


def wake_worker(pool_ids: Iterable[int]) -> None:
    """Ask run_placer for a round now: it repairs these pools and retries their pending work."""
    with connection.cursor() as cur:
        for pk in sorted(set(pool_ids)):
            cur.execute("SELECT pg_notify(%s, %s)", [REPAIR_CHANNEL, str(pk)])


@retry_on_conflict
def repair_reservation(
    reservation_pk: int,
    allocations: list[tuple[int, str]],
    *,
    now: datetime,
    config: PlacerConfig | None = None,
    avoid: str | None = None,
    kind: str = "repair",
) -> bool:
    """Place these allocations of a reservation again; return whether every one of them moved.

    `avoid` names a node to move off even though it is usable (drain). The reservation row is
    locked first, as the lock order has it; each allocation is moved in a savepoint, so one that
    finds no room leaves everything of it as it was.
    """
    config = config or placer_config()
    with transaction.atomic():
        name_actor()  # the moves name who asked (an operator's drain) or the system (the worker's repair)
        reservation = (
            Reservation.objects.select_for_update(of=("self",))
            .select_related("tenant")
            .filter(pk=reservation_pk)
            .first()
        )
        if reservation is None or reservation.status != Reservation.Status.PLACED:
            return False
        request = stored_request(reservation)
        pool = load_pool(reservation.pool.slug)
        notes, waiting = [], []
        for allocation_pk, why in allocations:
            allocation = (
                Allocation.objects.select_related("node")
                .filter(pk=allocation_pk, released_at__isnull=True)
                .first()
            )
            if allocation is None or allocation.ends_at <= now:
                continue
            note = _move(reservation, request, allocation, why, pool, config, now, avoid)
            (notes if note.startswith("moved") else waiting).append(note)
        conditions = [c for c in reservation.conditions if c.get("type") not in (REPAIRED, REPAIR_PENDING)]
        stamp = now.strftime("%Y-%m-%dT%H:%MZ")
        # Work moved off a draining node is a drain's, whoever moved it first (the drain, or
        # BookingRepair as the drain's cordon committed).
        drained = kind == "drain" or all(why.endswith(" is draining") for _, why in allocations)
        windowed = kind == "maintenance" or all(" has maintenance window " in why for _, why in allocations)
        if notes:
            reason = "Drained" if drained else "MaintenanceWindow" if windowed else "AtomsUnusable"
            conditions.append(
                {
                    "type": REPAIRED,
                    "status": "True",
                    "reason": reason,
                    "message": f"{stamp}: {'; '.join(notes)}",
                }
            )
        if waiting:
            conditions.append(
                {"type": REPAIR_PENDING, "status": "True", "reason": "NoFit", "message": "; ".join(waiting)}
            )
        observe.tell(
            "repair",
            "drain" if drained else "maintenance" if windowed else kind,
            moved=len(notes),
            no_room=len(waiting),
        )
        for hook in _CONDITION_HOOKS.values():  # the maintenance app's notice, say
            conditions = hook(reservation, conditions, now, windowed)
        # The commit of a move marks the row placed with no conditions; put ours back.
        Reservation.objects.filter(pk=reservation.pk).update(
            status=Reservation.Status.PLACED, conditions=conditions, updated_at=now
        )
        return not waiting


def _move(
    reservation: Reservation,
    request: PlacementRequest,
    allocation: Allocation,
    why: str,
    pool: PoolRow | None,
    config: PlacerConfig,
    now: datetime,
    avoid: str | None,
) -> str:
    """Move one allocation in a savepoint; return "moved …" or why it stays where it is."""
    old_node = allocation.node.name
    old_atoms = sorted(
        allocation.bookings.filter(device__parent__isnull=True).values_list("device__uuid", flat=True)
    )
    start = max(allocation.starts_at, now)
    window = Window(int(start.timestamp() * 1000), int(allocation.ends_at.timestamp() * 1000))
    siblings = list(
        Allocation.objects.filter(reservation=reservation, released_at__isnull=True)
        .exclude(pk=allocation.pk)
        .values_list("node__name", flat=True)
    )
    member = dataclasses.replace(
        request, during=window, gang=None, exclude_nodes=request.exclude_nodes | set(siblings)
    )
    if request.gang is not None and request.gang.topology_key and siblings:
        value = _label(siblings[0], request.gang.topology_key)
        if value is not None:
            member = dataclasses.replace(
                member, node_labels={**member.node_labels, request.gang.topology_key: value}
            )
    node_usable = avoid != old_node and not why.startswith(old_node + " ")
    savepoint = f"capacity_repair_{allocation.pk}"
    with connection.cursor() as cur:
        cur.execute(f"SAVEPOINT {savepoint}")
    end_allocations([allocation], now)
    owner = Owner(reservation_pk=reservation.pk)
    outcome: Outcome | None = None
    if pool is None:
        outcome = Outcome("pending", reason="the pool is gone")
    elif request.lease:
        excluded = member.exclude_nodes | ({old_node} if not node_usable else set())
        outcome = place_lease(
            dataclasses.replace(member, exclude_nodes=excluded),
            pool,
            owner,
            config,
            charge=lambda amounts: _recharge(reservation, amounts),
            now=now,
        )
    else:
        if node_usable:
            # The same node first, when it still has room on healthy atoms.
            others = frozenset(v for v in _node_names(pool) if v != old_node)
            outcome = place(dataclasses.replace(member, exclude_nodes=member.exclude_nodes | others),
                            pool.view.id, owner, config, pool=pool, now=now)  # fmt: skip
        if outcome is None or outcome.status != "placed":
            excluded = member.exclude_nodes | {old_node} if not node_usable else member.exclude_nodes
            outcome = place(
                dataclasses.replace(member, exclude_nodes=excluded),
                pool.view.id,
                owner,
                config,
                pool=pool,
                now=now,
            )
    if outcome.status == "placed":
        observe.tell("preemptions", "repair", len(outcome.preempted))
    if outcome.status != "placed":
        rollback_to(savepoint)
        return f"{why}: kept on {old_node} ({atoms_text(old_node, old_atoms)}) until room frees: {outcome.reason}"
    new = ", ".join(f"{c.node} ({atoms_text(c.node, c.atoms)})" for c in outcome.committed)
    return f"moved from {old_node} ({atoms_text(old_node, old_atoms)}) to {new}: {why}"


def _recharge(reservation: Reservation, amounts) -> None:
    """Charge a moved lease for what its new node holds, over the reservation's window (not admitted again)."""
    quota.refund([reservation.pk])
    with connection.cursor() as cur:
        cur.execute(
            """INSERT INTO capacity_quotacharge (tenant_id, reservation_id, resource, amount, during)
               SELECT %s, %s, r, n, tstzrange(%s, %s, '[)') FROM unnest(%s::text[], %s::bigint[]) AS x(r, n)""",
            [
                reservation.tenant_id,
                reservation.pk,
                reservation.starts_at,
                reservation.ends_at,
                list(amounts),
                [amounts[k] for k in amounts],
            ],
        )


def _node_names(pool: PoolRow) -> list[str]:
    return [v.id for v in pool_index(pool).nodes.views]


def _label(node: str, key: str) -> str | None:
    return NodeLabel.objects.filter(node__name=node, key=key).values_list("value", flat=True).first()


@dataclass
class Moves:
    """What an operator action moved off a node: reservations moved, and those that found no room."""

    node: str
    moved: list[int] = dataclasses.field(default_factory=list)
    waiting: list[int] = dataclasses.field(default_factory=list)
    left: int = 0  # still on the node for the worker to move (past the request's bound)


def live_on(node_name: str, now: datetime | None = None) -> set[int]:
    """Return the reservations with a live allocation (running or later) on a node."""
    now = now or timezone.now()
    return set(
        Allocation.objects.filter(node__name=node_name, released_at__isnull=True, ends_at__gt=now)
        .exclude(reservation=None)
        .values_list("reservation_id", flat=True)
    )


def moves_since(node_name: str, before: set[int], now: datetime | None = None) -> Moves:
    """Return what left the node among `before` (live_on before an action) and what stays for want of room.

    BookingRepair moves work off an unusable node as the action commits (maintenance, a NoExecute
    taint, a device marked unhealthy); a reservation it could not move keeps a RepairPending condition.
    """
    still = live_on(node_name, now) & before
    waiting = sorted(
        Reservation.objects.filter(pk__in=still, conditions__contains=[{"type": REPAIR_PENDING}]).values_list(
            "pk", flat=True
        )
    )
    left = 0
    if still - set(waiting):
        node = Node.objects.get(name=node_name)
        live = Allocation.objects.filter(
            node=node, released_at__isnull=True, ends_at__gt=now or timezone.now()
        )
        on_node = set(live.values_list("pk", flat=True))
        unusable = {pk for pk, found in broken([node.pool_id], now or timezone.now()).items()
                    if any(a in on_node for a, _ in found)}  # fmt: skip
        left = len((still - set(waiting)) & unusable)
    return Moves(node_name, moved=sorted(before - still), waiting=waiting, left=left)
