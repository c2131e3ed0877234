"""A batch round's statements: the lock of its nodes, then every plan's guarded writes in one.

The same guards as the commit's per-plan statement (capacity.placers.commit), over arrays: labels
read again now that the nodes are locked, devices healthy and bookable, bookings under the EXCLUDE
constraint, scalar room (its plain sum first: the sweep only when the sum does not fit). One
statement instead of one per plan: each cost a cursor, a bind and a round of parameter dumping.

Plan i is checked as if the plans before it had been written: its scalar room counts the claims
of the batch's earlier plans on the node as well as the committed ones, so a shortfall is laid on
the same plan the per-plan statements would have found. Any shortfall rolls the whole round back
(batch._commit_all), so plans after it may have written rows that go back with it.
"""

from __future__ import annotations

from dataclasses import dataclass

from capacity.db.cursors import prepared_cursor
from capacity.db.literals import int_array, text_array, time_array, to_datetime
from capacity.gpu_hours import gpu_model_sql, held_sevenths_sql
from capacity.placement import PlacementRequest, Ranked
from inventory.validators import SYSTEM_LABEL_PREFIX

from .commit import Committed, LostRace, Owner, json_text, member_devices, shortfall
from .loader import NodeIndex, PoolRow
from .sql import SCALAR_CAPACITY, peak_sql, room_sql, schedulable_tolerating, sum_sql

# A slice whose GPU its plan books too: counted through the GPU (only slices look).
_PARENT_IN_PLAN = """d.parent_id IS NOT NULL AND EXISTS (
           SELECT 1 FROM unnest(%(booked_plans)s::int[], %(booked)s::bigint[]) AS x(i, id)
            WHERE x.i = b.i AND x.id = d.parent_id)"""

# A batch's nodes, for a batch that holds the pool row already: each (node, tenant) pair in node
# order, locked and checked as _LOCK_SQL does for one. Several plans on one node lock it once.
_LOCK_NODES_SQL = f"""
SELECT n.id IS NOT NULL
  FROM inventory_pool p
 CROSS JOIN unnest(%(nodes)s::bigint[], %(tenants)s::text[]) WITH ORDINALITY AS w(node, tenant, i)
  LEFT JOIN LATERAL (
       SELECT n.id FROM inventory_node n
        WHERE n.id = w.node AND n.pool_id = p.id AND {schedulable_tolerating("w.tenant")}
          FOR SHARE OF n) n ON true
 WHERE p.id = %(pool)s::bigint
 ORDER BY w.i
"""

# The claims plan i's scalar room counts: the committed ones on the node, and the earlier plans'.
# Their plain sum (the committed ones' by the index, the earlier plans' worked out once for all in
# `earlier`) bounds the peak; the peak is swept over both only when that sum does not fit.
_SEEN_CLAIMS = """(
  SELECT node_id, resource, amount, during, 0 AS i FROM capacity_scalarclaim
  UNION ALL
  SELECT node, resource, amount, during, i FROM claims
)"""
_ROOM = room_sql(
    sum_sql("capacity_scalarclaim", "node_id", "c.node", "c.resource", "c.during") + " + e.amount",
    peak_sql(_SEEN_CLAIMS, "node_id", "c.node", "c.resource", "c.during", where="x.i < c.i"),
    "c.amount",
    "k.cap",
)

# Locks in the order of the per-plan statement: devices (by key), then resource rows (by node and
# resource). Every CTE is read by the final SELECT, left to right, which runs them in that order.
_WRITE_BATCH_SQL = f"""
WITH plans AS MATERIALIZED (
  SELECT p.*, tstzrange(p.lo, p.hi, '[)') AS during
    FROM unnest(%(nodes)s::bigint[], %(reservations)s::bigint[], %(starts)s::timestamptz[],
                %(ends)s::timestamptz[], %(resources)s::jsonb[], %(label_counts)s::int[],
                %(picked_counts)s::int[])
         WITH ORDINALITY AS p(node, reservation, lo, hi, resources, nlabels, npicked, i)
), devices AS (
  SELECT d.id, d.node_id FROM inventory_device d
   WHERE d.id = ANY(%(picked)s::bigint[]) AND d.healthy AND d.bookable
   ORDER BY d.id FOR SHARE
), found AS MATERIALIZED (
  -- Per plan: its labels still on the node (most plans ask for none) and no maintenance window
  -- of the node over its window (one scheduled since the plan), and its devices found.
  SELECT p.i,
         (p.nlabels = 0 OR p.nlabels = (
           SELECT count(*)
             FROM unnest(%(label_plans)s::int[], %(label_keys)s::text[], %(label_values)s::text[]) AS w(i, key, value)
             JOIN inventory_nodelabel l
               ON l.node_id = p.node AND l.key = w.key AND (w.value = '*' OR l.value = w.value)
              AND (l.source = 'system' OR l.key NOT LIKE %(system_prefix)s)
            WHERE w.i = p.i))
         AND NOT EXISTS (SELECT 1 FROM capacity_maintenancewindownode m
                          WHERE m.node_id = p.node AND m.ends_at > p.lo AND m.starts_at < p.hi) AS labels_ok,
         coalesce(k.n, 0) AS ndevices
    FROM plans p
    LEFT JOIN (SELECT k.i, count(*) AS n
                 FROM unnest(%(picked_plans)s::int[], %(picked)s::bigint[]) AS k(i, id)
                 JOIN plans q ON q.i = k.i
                 JOIN devices d ON d.id = k.id AND d.node_id = q.node
                GROUP BY k.i) k ON k.i = p.i
), allocation AS (
  INSERT INTO capacity_allocation (reservation_id, instance_id, node_id, starts_at, ends_at, resources, created_at)
  SELECT p.reservation, NULL, p.node, p.lo, p.hi, p.resources, now()
    FROM plans p JOIN found f ON f.i = p.i
   WHERE f.labels_ok AND f.ndevices = p.npicked
   ORDER BY p.i
  RETURNING id, reservation_id
), booked AS (
  -- What each booking holds and its model, as the commit writes them (capacity.gpu_hours).
  INSERT INTO capacity_devicebooking (device_id, allocation_id, during, gpu_model, gpu_sevenths)
  SELECT b.id, a.id, p.during, {gpu_model_sql("d")},
         {held_sevenths_sql("d.device_class", _PARENT_IN_PLAN)}
    FROM unnest(%(booked_plans)s::int[], %(booked)s::bigint[]) WITH ORDINALITY AS b(i, id, k)
    JOIN plans p ON p.i = b.i JOIN allocation a ON a.reservation_id = p.reservation
    JOIN inventory_device d ON d.id = b.id
   ORDER BY b.k
  ON CONFLICT DO NOTHING RETURNING allocation_id
), claims AS MATERIALIZED (
  SELECT c.i, p.node, c.resource, c.amount, p.during
    FROM unnest(%(claim_plans)s::int[], %(claim_names)s::text[], %(claim_amounts)s::bigint[]) AS c(i, resource, amount)
    JOIN plans p ON p.i = c.i
), claimable AS (
  SELECT r.node_id, r.resource, {SCALAR_CAPACITY} AS cap FROM inventory_noderesource r
   WHERE (r.node_id, r.resource) IN (SELECT node, resource FROM claims)
     AND r.node_id = ANY(%(nodes)s::bigint[])
   ORDER BY r.node_id, r.resource FOR SHARE
), earlier AS MATERIALIZED (
  SELECT c.i, c.resource, coalesce(sum(m.amount), 0) AS amount
    FROM claims c
    LEFT JOIN claims m ON m.node = c.node AND m.resource = c.resource AND m.i < c.i AND m.during && c.during
   GROUP BY c.i, c.resource
), room AS MATERIALIZED (
  -- Room over the window, as the per-plan statement has it, with the earlier plans' claims too.
  SELECT c.i, c.resource
    FROM claims c
    JOIN claimable k ON k.node_id = c.node AND k.resource = c.resource
    JOIN earlier e ON e.i = c.i AND e.resource = c.resource
   WHERE {_ROOM}
), claimed AS (
  INSERT INTO capacity_scalarclaim (allocation_id, node_id, resource, amount, during)
  SELECT a.id, c.node, c.resource, c.amount, c.during
    FROM claims c JOIN plans p ON p.i = c.i JOIN allocation a ON a.reservation_id = p.reservation
   ORDER BY c.i, c.resource
  RETURNING allocation_id
), placed AS (
  -- The batch holds these reservation rows (FOR UPDATE when it took them off the queue).
  UPDATE capacity_reservation r SET status = 'placed', conditions = '[]'::jsonb, updated_at = %(now)s::timestamptz
    FROM allocation a WHERE r.id = a.reservation_id
  RETURNING r.id
)
SELECT ARRAY(SELECT labels_ok FROM found ORDER BY i), ARRAY(SELECT ndevices FROM found ORDER BY i),
       ARRAY(SELECT a.id FROM plans p LEFT JOIN allocation a ON a.reservation_id = p.reservation ORDER BY p.i),
       ARRAY(SELECT coalesce(n.n, 0)
               FROM plans p LEFT JOIN allocation a ON a.reservation_id = p.reservation
               LEFT JOIN (SELECT allocation_id, count(*) AS n FROM booked GROUP BY allocation_id) n
                 ON n.allocation_id = a.id
              ORDER BY p.i),
       ARRAY(SELECT i FROM room ORDER BY i, resource), ARRAY(SELECT resource FROM room ORDER BY i, resource),
       (SELECT count(*) FROM claimed), (SELECT count(*) FROM placed)
"""


def lock_nodes(pool: PoolRow, members: list[tuple[int, str]]):
    """Send the lock of a batch's nodes, (node pk, tenant slug) pairs in node order; return its cursor.

    The batch holds the pool row. read_locks() reads which pairs are schedulable.
    """
    cur = prepared_cursor()
    cur.execute(
        _LOCK_NODES_SQL,
        {
            "pool": pool.pk,
            "nodes": int_array(n for n, _ in members),
            "tenants": text_array(t for _, t in members),
        },
    )
    return cur


def read_locks(cur) -> list[bool]:
    """Return, pair by pair, whether lock_nodes found the node schedulable for the tenant."""
    try:
        return [ok for (ok,) in cur.fetchall()]
    finally:
        cur.close()


@dataclass(frozen=True)
class Write:
    """One plan of a round: the request, where it goes and whose reservation it places."""

    request: PlacementRequest
    ranked: Ranked
    index: NodeIndex
    owner: Owner


class BatchWrite:
    """A round's writes, sent and not yet read: read() says plan by plan what was written."""

    def __init__(self, writes: list[Write], now):
        self.writes = writes
        self.rows: list[tuple[int, tuple[str, ...], int, list[str]]] = []
        p: dict[str, list] = {k: [] for k in _ARRAYS}
        for i, w in enumerate(writes, start=1):
            index, request = w.index, w.request
            atoms, picked, booked = member_devices(w.ranked, index)
            claims = sorted((r, n) for r, n in request.resources.items() if n > 0)
            labels = sorted(request.node_labels.items())
            p["nodes"].append(index.node_pk[w.ranked.node_id])
            p["reservations"].append(w.owner.reservation_pk)
            p["starts"].append(to_datetime(request.during.start))
            p["ends"].append(to_datetime(request.during.end))
            p["resources"].append(json_text(dict(request.resources)))
            p["label_counts"].append(len(labels))
            p["picked_counts"].append(len(picked))
            for key, value in labels:
                p["label_plans"].append(i)
                p["label_keys"].append(key)
                p["label_values"].append(value)
            p["picked_plans"] += [i] * len(picked)
            p["picked"] += picked
            p["booked_plans"] += [i] * len(booked)
            p["booked"] += booked
            for resource, amount in claims:
                p["claim_plans"].append(i)
                p["claim_names"].append(resource)
                p["claim_amounts"].append(amount)
            self.rows.append((len(picked), atoms, len(booked), [r for r, _ in claims]))
        sent = {k: _ARRAYS[k](v) for k, v in p.items()}
        self.cursor = prepared_cursor()
        self.cursor.execute(
            _WRITE_BATCH_SQL, {**sent, "system_prefix": SYSTEM_LABEL_PREFIX + "%", "now": now}
        )

    def read(self, schedulable: list[bool]) -> list[Committed | LostRace]:
        """Return, plan by plan, its allocation or the LostRace that stops it, checked in the
        per-plan statement's order: schedulable (from the batch's node lock), labels, devices,
        bookings, scalar room."""
        try:
            labels_ok, ndevices, allocations, nbooked, room_plans, room_names, _claimed, _placed = (
                self.cursor.fetchone()
            )
        finally:
            self.cursor.close()
        room = set(zip(room_plans, room_names, strict=True))
        answers: list[Committed | LostRace] = []
        for i, (
            w,
            ok,
            (npicked, atoms, want_booked, claims),
            labels,
            devices,
            allocation,
            booked,
        ) in enumerate(
            zip(self.writes, schedulable, self.rows, labels_ok, ndevices, allocations, nbooked, strict=True),
            start=1,
        ):
            node = w.ranked.node_id
            lost = shortfall(
                node,
                ok and labels,
                devices == npicked,
                booked == want_booked,
                [r for r in claims if (i, r) not in room],
            )
            answers.append(lost or Committed(allocation_pk=allocation, node=node, atoms=atoms))
        return answers


# The write's arrays, each with the literal it is sent as (literals.py: cheaper to send than lists).
_ARRAYS = {
    "nodes": int_array,
    "reservations": int_array,
    "starts": time_array,
    "ends": time_array,
    "resources": text_array,
    "label_counts": int_array,
    "picked_counts": int_array,
    "label_plans": int_array,
    "label_keys": text_array,
    "label_values": text_array,
    "picked_plans": int_array,
    "picked": int_array,
    "booked_plans": int_array,
    "booked": int_array,
    "claim_plans": int_array,
    "claim_names": text_array,
    "claim_amounts": int_array,
}
