"""The guarded commit: statements that return fewer rows instead of raising, in one savepoint.

Locks follow the spec's order: pools (taken by the caller) → nodes → devices → node_resources →
pool_capacity_rollup. A short answer raises LostRace; the caller rolls back to the savepoint,
excludes the node and replans.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from django.db import connection

from capacity.placement import PlacementRequest, Ranked
from inventory.validators import SYSTEM_LABEL_PREFIX

from .loader import NodeIndex, PoolRow, to_datetime, window_range
from .sql import SCALAR_CAPACITY, SCHEDULABLE_TOLERATING


class LostRace(Exception):
    """The plan no longer holds on `node`; `reason` is the spec's message."""

    def __init__(self, node: str, reason: str):
        super().__init__(reason)
        self.node = node
        self.reason = reason


@dataclass(frozen=True)
class Owner:
    """Who the allocation belongs to: exactly one of a reservation and an instance."""

    reservation_pk: int | None = None
    instance_id: str | None = None


@dataclass(frozen=True)
class Committed:
    """One allocation written by the commit."""

    allocation_pk: int
    node: str
    atoms: tuple[str, ...]


def commit_member(
    request: PlacementRequest, ranked: Ranked, pool: PoolRow, index: NodeIndex, owner: Owner
) -> Committed:
    """Write one node's share of a plan, or raise LostRace leaving the caller to roll back."""
    node = ranked.node_id
    node_pk = index.node_pk[node]
    atoms = tuple(a for group in ranked.atoms for a in group)
    picked = [index.device_pk[a] for a in atoms]
    # Booking a partitioned GPU books its slices too, so the EXCLUDE constraint sees slice conflicts.
    booked_uuids = list(atoms) + [c for a in atoms for c in index.children.get(a, ())]
    booked = [index.device_pk[a] for a in booked_uuids]
    with connection.cursor() as cur:
        cur.execute(
            f"""SELECT n.id FROM inventory_node n JOIN inventory_pool p ON p.id = n.pool_id
                 WHERE n.id = %(node)s AND n.pool_id = %(pool)s AND {SCHEDULABLE_TOLERATING}
                   FOR SHARE OF n""",
            {"node": node_pk, "pool": pool.pk, "tenant": request.tenant_id},
        )
        if cur.fetchone() is None:
            raise LostRace(node, f"{node} is no longer schedulable")
        if request.node_labels:
            # Labels are read again under the node lock: one that went away since the plan loses the race.
            cur.execute(
                "SELECT key, value FROM inventory_nodelabel WHERE node_id = %s"
                " AND (source = 'system' OR key NOT LIKE %s)",
                [node_pk, SYSTEM_LABEL_PREFIX + "%"],
            )
            labels = dict(cur.fetchall())
            for key, value in request.node_labels.items():
                if key not in labels or (value != "*" and labels[key] != value):
                    raise LostRace(node, f"{node} is no longer schedulable")
        if picked:
            cur.execute(
                "SELECT id FROM inventory_device WHERE id = ANY(%s) AND node_id = %s AND healthy AND bookable"
                " ORDER BY id FOR SHARE",
                [sorted(picked), node_pk],
            )
            if len(cur.fetchall()) != len(picked):
                raise LostRace(node, f"an atom on {node} turned unhealthy or unbookable")
        cur.execute(
            """INSERT INTO capacity_allocation
                   (reservation_id, instance_id, node_id, starts_at, ends_at, resources, created_at)
               VALUES (%s, %s, %s, %s, %s, %s::jsonb, now()) RETURNING id""",
            [
                owner.reservation_pk,
                owner.instance_id,
                node_pk,
                to_datetime(request.during.start),
                to_datetime(request.during.end),
                _json(dict(request.resources)),
            ],
        )
        allocation_pk = cur.fetchone()[0]
        if booked:
            cur.execute(
                """INSERT INTO capacity_devicebooking (device_id, allocation_id, during)
                   SELECT unnest(%s::bigint[]), %s, %s ON CONFLICT DO NOTHING RETURNING device_id""",
                [booked, allocation_pk, window_range(request.during)],
            )
            if len(cur.fetchall()) != len(booked):
                raise LostRace(node, f"an atom on {node} was booked concurrently")
        for resource in sorted(request.resources):
            amount = request.resources[resource]
            cur.execute(
                f"""UPDATE inventory_noderesource r SET allocated = allocated + %s
                     WHERE node_id = %s AND resource = %s AND allocated + %s <= {SCALAR_CAPACITY}
                 RETURNING allocated""",
                [amount, node_pk, resource, amount],
            )
            if cur.fetchone() is None:
                raise LostRace(node, f"{resource} on {node} ran out")
        classes = Counter(_device_class(index, a) for a in booked_uuids)
        apply_rollup_delta(cur, pool.pk, classes, +1)
    return Committed(allocation_pk=allocation_pk, node=node, atoms=atoms)


def apply_rollup_delta(cur, pool_pk: int, classes: Counter[str], sign: int) -> None:
    """Add (or with sign −1 subtract) booked atoms per class to the pool's rollup, classes in order."""
    for device_class in sorted(classes):
        cur.execute(
            """INSERT INTO capacity_poolcapacityrollup
                   (pool_id, device_class, total, allocated, excluded, maintenance, provisioning,
                    unreachable, unhealthy, updated_at)
               VALUES (%s, %s, 0, %s, 0, 0, 0, 0, 0, now())
               ON CONFLICT (pool_id, device_class)
               DO UPDATE SET allocated = capacity_poolcapacityrollup.allocated + EXCLUDED.allocated,
                             updated_at = now()""",
            [pool_pk, device_class, sign * classes[device_class]],
        )


def _device_class(index: NodeIndex, uuid: str) -> str:
    return index.device_class[uuid]


def _json(value: object) -> str:
    import json

    return json.dumps(value, sort_keys=True)
