"""The guarded commit: statements that return fewer rows instead of raising, in one savepoint.

Locks follow the spec's order: pools → nodes → devices → node_resources. Nothing here writes a
counter: quota is charged before placement, and capacity is read from the bookings. A short answer raises LostRace; the caller rolls back to the savepoint,
excludes the node and replans.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime

from django.db import connection

from capacity.db.cursors import ServerFunction, as_body, prepared_cursor
from capacity.db.literals import int_array, text_array, to_datetime, window_literal
from capacity.gpu_hours import gpu_model_sql, held_sevenths_sql
from capacity.models.bookings import LENT_LAYER, OWNER_LAYER
from capacity.placement import PlacementRequest, Ranked
from inventory.validators import SYSTEM_LABEL_PREFIX

from .loader import NodeIndex, PoolRow
from .sql import SCALAR_CAPACITY, SCHEDULABLE_TOLERATING, peak_sql, room_sql, sum_sql


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
    shared: bool = False  # the pool has shares: the placement is judged against them


# The locks, in the spec's order: the pool row, then the node; and whether the pool has shares
# (policy.borrowing judges the booking then). The pool CTE is read first, so its
# row is locked before the node's. NO KEY UPDATE: placers exclude each other (and an archive) on it,
# while a node action that writes a row referring to the pool (a rollup's foreign-key check takes
# KEY SHARE) after locking its node does not wait for it, which would deadlock against this order.
_LOCK_SQL = f"""
WITH p AS (SELECT id, owner_tenant_id, archived FROM inventory_pool WHERE id = %(pool)s::bigint FOR NO KEY UPDATE)
SELECT p.archived, n.id IS NOT NULL, EXISTS (SELECT 1 FROM capacity_poolshare s WHERE s.pool_id = p.id)
  FROM p LEFT JOIN LATERAL (
       SELECT n.id FROM inventory_node n
        WHERE n.id = %(node)s::bigint AND n.pool_id = p.id AND {SCHEDULABLE_TOLERATING}
          FOR SHARE OF n) n ON true
"""

# The node's claims of a resource in the window: their plain sum, and the most they hold at once.
_HELD = ("capacity_scalarclaim", "node_id", "%(node)s::bigint", "c.resource", "%(during)s::tstzrange")
_HELD_SUM, _HELD_PEAK = sum_sql(*_HELD), peak_sql(*_HELD)

# Everything else in one statement, in lock order: labels and maintenance windows (read again now
# that the node is locked: this statement's snapshot is newer than the lock), devices, the bookings under the
# EXCLUDE constraint, scalar claims (resource rows locked in resource order). Pool capacity is
# read from the bookings when asked, so the commit writes no counter.
# Each guard that comes up short leaves the statements after it with nothing to do; the caller
# reads which one and rolls back to the savepoint.
_WRITE_SQL = f"""
WITH labels AS (
  -- With the node's maintenance windows: one that overlaps the window (scheduled since the plan
  -- read the pool's index) makes the node no longer schedulable for it.
  SELECT count(*) = cardinality(%(label_keys)s::text[])
         AND NOT EXISTS (SELECT 1 FROM capacity_maintenancewindownode w
                          WHERE w.node_id = %(node)s::bigint AND w.ends_at > %(start)s::timestamptz
                            AND w.starts_at < %(end)s::timestamptz) AS ok
    FROM inventory_nodelabel l
    JOIN unnest(%(label_keys)s::text[], %(label_values)s::text[]) AS w(key, value)
      ON l.key = w.key AND (w.value = '*' OR l.value = w.value)
   WHERE l.node_id = %(node)s::bigint AND (l.source = 'system' OR l.key NOT LIKE %(system_prefix)s)
), devices AS (
  SELECT d.id FROM inventory_device d
   WHERE (SELECT ok FROM labels) AND d.id = ANY(%(picked)s::bigint[]) AND d.node_id = %(node)s::bigint
     AND d.healthy AND d.bookable
   ORDER BY d.id FOR SHARE
), allocation AS (
  INSERT INTO capacity_allocation (reservation_id, instance_id, node_id, starts_at, ends_at, resources, created_at)
  SELECT %(reservation)s::bigint, %(instance)s::text, %(node)s::bigint, %(start)s::timestamptz, %(end)s::timestamptz, %(resources)s::jsonb, now()
   WHERE (SELECT count(*) FROM devices) = cardinality(%(picked)s::bigint[])
  RETURNING id
), owned AS (
  -- Lent GPUs (policy.lending): each booked device must be booked by one of the lenders
  -- (layer 0) over the whole window; those bookings are locked so that a release cutting them
  -- waits for this commit (and the worker then takes the lent work back). Empty when not lending.
  SELECT o.device_id FROM capacity_devicebooking o JOIN capacity_allocation oa ON oa.id = o.allocation_id
   WHERE cardinality(%(lenders)s::bigint[]) > 0 AND EXISTS (SELECT 1 FROM allocation)
     AND o.device_id = ANY(%(booked)s::bigint[]) AND o.layer = 0 AND o.during @> %(during)s::tstzrange
     AND oa.reservation_id = ANY(%(lenders)s::bigint[]) AND oa.released_at IS NULL
   ORDER BY o.id FOR SHARE OF o
), booked AS (
  -- What each booking holds and its model, as of now (capacity.gpu_hours): a slice counts 0 when
  -- its partitioned GPU is booked with it (a lease), the GPU counting once.
  INSERT INTO capacity_devicebooking (device_id, allocation_id, during, layer, gpu_model, gpu_sevenths)
  SELECT b.id, allocation.id, %(during)s::tstzrange, %(layer)s::smallint, {gpu_model_sql("d")},
         {held_sevenths_sql("d.device_class", "d.parent_id = ANY(%(booked)s::bigint[])")}
    FROM allocation, unnest(%(booked)s::bigint[]) AS b(id) JOIN inventory_device d ON d.id = b.id
   WHERE cardinality(%(lenders)s::bigint[]) = 0
      OR (SELECT count(DISTINCT device_id) FROM owned) = cardinality(%(booked)s::bigint[])
  ON CONFLICT DO NOTHING RETURNING device_id
), claimable AS (
  SELECT r.resource, {SCALAR_CAPACITY} AS cap FROM inventory_noderesource r
   WHERE (SELECT count(*) FROM booked) = cardinality(%(booked)s::bigint[]) AND EXISTS (SELECT 1 FROM allocation)
     AND r.node_id = %(node)s::bigint AND r.resource = ANY(%(claim_names)s::text[])
   ORDER BY r.resource FOR SHARE
), claimed AS (
  -- Room over the window: capacity minus the most claimed at any instant of it. The pool lock
  -- (taken by the statement before this one) orders every claim on the node, so this statement's
  -- snapshot holds every claim committed before it.
  INSERT INTO capacity_scalarclaim (allocation_id, node_id, resource, amount, during)
  SELECT (SELECT id FROM allocation), %(node)s::bigint, c.resource, c.amount, %(during)s::tstzrange
    FROM unnest(%(claim_names)s::text[], %(claim_amounts)s::bigint[]) AS c(resource, amount)
    JOIN claimable k ON k.resource = c.resource
   WHERE {room_sql(_HELD_SUM, _HELD_PEAK, "c.amount", "k.cap")}
  RETURNING resource
), placed AS (
  -- The reservation row is this transaction's own (new, or locked by the retry), so this takes no
  -- lock out of order. Never before its creation, as migration 0021's trigger would make it (then
  -- with nothing to do).
  UPDATE capacity_reservation SET status = 'placed', conditions = '[]'::jsonb,
         updated_at = greatest(%(now)s::timestamptz, created_at)
   WHERE id = %(mark_placed)s::bigint
     AND (SELECT count(*) FROM claimed) = cardinality(%(claim_names)s::text[])
     AND (SELECT count(*) FROM booked) = cardinality(%(booked)s::bigint[])
     AND EXISTS (SELECT 1 FROM allocation)
  RETURNING id
)
-- Every CTE is read here, left to right: that is what runs them in the lock order above.
SELECT v_archived, v_schedulable, v_shared, (SELECT ok FROM labels), (SELECT count(*) FROM devices), (SELECT id FROM allocation),
       (SELECT count(*) FROM booked), ARRAY(SELECT resource::text FROM claimed), (SELECT count(*) FROM placed)
"""

# The commit's parameters and their types, in the function's argument order.
_ARGUMENTS = """pool bigint, node bigint, tenant text, label_keys text[], label_values text[],
    system_prefix text, picked bigint[], booked bigint[], reservation bigint, instance text,
    start timestamptz, end timestamptz, during tstzrange, resources jsonb, claim_names text[],
    claim_amounts bigint[], lenders bigint[], layer smallint, mark_placed bigint, now timestamptz"""
_RESULT = (
    "o_archived boolean, o_schedulable boolean, o_shared boolean, o_labels boolean, o_devices bigint,"
    " o_allocation bigint, o_booked bigint, o_claimed text[], o_placed bigint"
)
# The locks, then the writes in a statement of their own (a VOLATILE function's statements each
# take a fresh snapshot: the writes see every commit the locks waited for). A node no longer
# schedulable, or a pool archived, is a lost race before anything is written.
_BODY = f"""#variable_conflict use_column
DECLARE
  v_archived boolean;
  v_schedulable boolean;
  v_shared boolean;
BEGIN
  SELECT l.* INTO v_archived, v_schedulable, v_shared FROM ({as_body(_LOCK_SQL).strip()}) AS l;
  IF v_archived IS NOT false OR NOT v_schedulable THEN
    RETURN QUERY SELECT v_archived, v_schedulable, v_shared, false, 0::bigint, NULL::bigint, 0::bigint, '{{}}'::text[], 0::bigint;
    RETURN;
  END IF;
  -- The allocation bumps the pool's booking version, its bookings and claims do not (0049).
  PERFORM set_config('berth.bookings_bumped_by_allocation', 'on', true);
  RETURN QUERY {as_body(_WRITE_SQL).strip()};
  PERFORM set_config('berth.bookings_bumped_by_allocation', '', true);
END"""
COMMIT = ServerFunction("capacity_commit_member", _ARGUMENTS, _RESULT, _BODY, _LOCK_SQL, _WRITE_SQL)


class ArchivedMeanwhile(Exception):
    """The pool was archived between the plan and the commit."""


def commit_member(
    request: PlacementRequest,
    ranked: Ranked,
    pool: PoolRow,
    index: NodeIndex,
    owner: Owner,
    *,
    last: bool = True,
    now: datetime | None = None,
    savepoint: str | None = None,
    also_book: tuple[str, ...] = (),
    lease_claims: dict[str, int] | None = None,
    lenders: tuple[int, ...] = (),
) -> Committed:
    """Write one node's share of a plan in one call: its locks, then its guarded writes.

    `savepoint`, when given, is set first, in the same round trip. The last member of a plan also
    marks the owning reservation placed (as of `now`). A lease books `also_book` too (devices it
    holds whatever their health) and claims `lease_claims` instead of the request's resources.
    With `lenders`, the devices are booked lent (layer 1) on those reservations' idle GPUs, which
    must hold every one of them over the whole window. Raise LostRace for the caller to roll back
    to the savepoint, or ArchivedMeanwhile when the locked pool row says archived.
    """
    node = ranked.node_id
    atoms, picked, booked = member_devices(ranked, index, also_book)
    wanted = request.resources if lease_claims is None else lease_claims
    claims = sorted((r, n) for r, n in wanted.items() if n > 0)  # zero takes nothing
    labels = sorted(request.node_labels.items())
    args = {
        "pool": pool.pk,
        "node": index.node_pk[node],
        "tenant": request.tenant_id,
        # Lists and the window as literals (literals.py): cheaper to send.
        "label_keys": text_array(k for k, _ in labels),
        "label_values": text_array(v for _, v in labels),
        "system_prefix": SYSTEM_LABEL_PREFIX + "%",
        "picked": int_array(picked),
        "booked": int_array(booked),
        "reservation": owner.reservation_pk,
        "instance": owner.instance_id,
        "start": to_datetime(request.during.start),
        "end": to_datetime(request.during.end),
        "during": window_literal(request.during),
        "resources": json_text(dict(wanted)),
        "claim_names": text_array(r for r, _ in claims),
        "claim_amounts": int_array(n for _, n in claims),
        "lenders": int_array(sorted(lenders)),
        "layer": LENT_LAYER if lenders else OWNER_LAYER,
        "mark_placed": owner.reservation_pk if last else None,
        "now": now or datetime.now(UTC),
    }
    COMMIT.ensure()
    if savepoint is None:
        with prepared_cursor() as cur:
            cur.execute(COMMIT.call_sql, args)
            row = cur.fetchone()
    else:
        # The pipeline's own Sync (on leaving it) raises psycopg's errors: Django's wrapper makes
        # them Django's, as its cursors' are (a deadlock is then retried, a lost connection answers 503).
        with connection.wrap_database_errors, connection.connection.pipeline():
            with connection.cursor() as plain:
                plain.execute(f"SAVEPOINT {savepoint}")
            cur = prepared_cursor()
            cur.execute(COMMIT.call_sql, args)
            row = cur.fetchone()
            cur.close()
    archived, schedulable, shared, labels_ok, devices_ok, allocation_pk, booked_count, claimed, _ = row
    if archived:
        raise ArchivedMeanwhile
    lost = shortfall(
        node,
        bool(schedulable and labels_ok),
        devices_ok == len(picked),
        booked_count == len(booked),
        [r for r, _amount in claims if r not in claimed],
    )
    if lost is not None:
        raise lost
    return Committed(allocation_pk=allocation_pk, node=node, atoms=atoms, shared=shared)


def member_devices(
    ranked: Ranked, index: NodeIndex, also_book: tuple[str, ...] = ()
) -> tuple[tuple[str, ...], list[int], list[int]]:
    """Return a member's atoms, their device pks in key order (the ones checked healthy and
    bookable), and every device pk it books: its atoms and `also_book` with their slices, so the
    EXCLUDE constraint sees a slice's conflicts when a partitioned GPU is booked."""
    atoms = tuple(a for group in ranked.atoms for a in group)
    picked = sorted(index.device_pk[a] for a in atoms)
    tops = (*atoms, *also_book)
    booked = [index.device_pk[a] for a in tops] + [
        index.device_pk[c] for a in tops for c in index.children.get(a, ())
    ]
    return atoms, picked, booked


def shortfall(
    node: str, schedulable: bool, devices_found: bool, all_booked: bool, claims_short: list[str]
) -> LostRace | None:
    """Return the lost race a guard's answers mean, checked in the commit's order, or None."""
    if not schedulable:
        return LostRace(node, f"{node} is no longer schedulable")
    if not devices_found:
        return LostRace(node, f"an atom on {node} turned unhealthy or unbookable")
    if not all_booked:
        return LostRace(node, f"an atom on {node} was booked concurrently")
    if claims_short:
        return LostRace(node, f"{claims_short[0]} on {node} ran out")
    return None


def json_text(value: object) -> str:
    """Return the JSON text the commit writes for a plan's resources (keys sorted)."""
    return json.dumps(value, sort_keys=True)
