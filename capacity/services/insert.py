"""Insert a new reservation together with its quota charges: one round trip, or nothing written.

The tenant's quota lock, then one statement that checks the quota and inserts the reservation
with its charges (or nothing at all). The lock comes first and the check's snapshot after it, so
the check sees every charge committed by a transaction the lock waited for, as `quota.charge` has
it: both run in one call of a server-side function (insert_function.py), whose statements each
take a fresh snapshot. Queueing for the pool-lease placer makes that call outside any transaction:
the connection autocommits, so the call is its own transaction (a refused charge commits nothing).
Queueing used to take four round trips (insert, lock and charge, commit, after the lookup), then
BEGIN, lock, insert and COMMIT in one pipeline, then the lock and the insert in a pipeline with its
Sync: one client's rate is bound by its own CPU and wait.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from django.db import connection
from django.utils import timezone

from capacity.db.channels import QUEUED_CHANNEL, QUOTA_LOCK_CLASS
from capacity.db.cursors import prepared_cursor
from capacity.db.literals import int_array, text_array, window_literal
from capacity.models import Reservation
from capacity.models.reservations import queued as queued_condition
from capacity.placement import PlacementRequest
from capacity.placers import quota
from capacity.placers.loader import lookup_digest_sql
from trail.context import actor, request_id

from . import lookups
from .insert_function import Function

# The quota check of quota.CHECK_CTES, then the row and its charges only when every limit holds
# and, given a digest, the tenant and pool still read as the lookup the caller kept.
_INSERT_SQL = f"""
WITH {quota.CHECK_CTES},
fresh AS (
  SELECT %(digest)s::text IS NULL
         OR %(digest)s::text = {lookup_digest_sql("%(tenant_slug)s::text", "%(pool_slug)s::text")} AS ok
),
r AS (
  INSERT INTO capacity_reservation
         (tenant_id, pool_id, request, status, conditions, idempotency_key, priority, binding,
          starts_at, ends_at, created_at, updated_at, keep_when_idle)
  SELECT %(tenant)s::bigint, %(pool)s::bigint, %(request)s::jsonb, 'pending', %(conditions)s::jsonb,
         %(key)s::text, %(priority)s::text, %(binding)s::text, %(starts_at)s::timestamptz,
         %(ends_at)s::timestamptz, %(now)s::timestamptz, %(now)s::timestamptz, %(keep)s::boolean
   WHERE (SELECT ok FROM ok) AND (SELECT ok FROM fresh)
  ON CONFLICT DO NOTHING
  RETURNING id, pool_id
), ins AS (
  INSERT INTO capacity_quotacharge (tenant_id, reservation_id, resource, amount, during)
  SELECT %(tenant)s::bigint, r.id, l.r, l.n, %(during)s::tstzrange FROM l, r
)
SELECT (SELECT id FROM r), (SELECT ok FROM fresh),
       (SELECT count(pg_notify('{QUEUED_CHANNEL}', r.pool_id::text)) FROM r WHERE %(queued)s::boolean),
       ARRAY(SELECT l.r FROM l ORDER BY l.r), ARRAY(SELECT l.n FROM l ORDER BY l.r)::bigint[],
       ARRAY(SELECT l.used FROM l ORDER BY l.r)::numeric[], ARRAY(SELECT l.lim FROM l ORDER BY l.r)::bigint[]
"""
# Queueing calls the lock and the insert as one function (insert_function.py).
CHARGED = Function(quota.LOCK_SQL, _INSERT_SQL)


class StaleLookup(Exception):
    """The tenant or pool changed since the lookup insert_charged() was given: nothing was written."""


def can_commit_at_once() -> bool:
    """Return whether insert_charged() may open and commit its own transaction (no caller's is open)."""
    return not connection.in_atomic_block


def insert_charged(
    fields: Mapping[str, Any],
    request: PlacementRequest,
    *,
    queued: bool,
    commit: bool,
    digest: str | None = None,
    also: Callable[[], object] | None = None,
) -> Reservation | None:
    """Insert a pending reservation with the request's quota charges in one round trip; `queued`
    adds its Queued condition and wakes the pool's placer.

    With `commit` the pipeline opens and commits its own transaction; else it runs in the caller's.
    Return None when the idempotency key is taken (nothing written). Raise QUOTA_EXCEEDED, as
    quota.charge does, when a limit would be passed: then nothing is written either. With a lookup's
    `digest` (its tenant and pool kept from an earlier request) raise StaleLookup, having written
    nothing, when they no longer read the same. `also()` may send more statements in the same
    pipeline, after the insert (the inline placer's window reads), to be read by the caller.
    """
    now = timezone.now()
    amounts = quota.demand(request)
    names = sorted(amounts)
    conditions = [queued_condition()] if queued else []
    params = {
        **_row(fields, now),
        "class": QUOTA_LOCK_CLASS,
        "conditions": json.dumps(conditions),
        "queued": queued,
        # As literals (capacity/db/literals.py): cheaper to send than lists and a Range.
        "resources": text_array(names),
        "amounts": int_array(amounts[r] for r in names),
        "during": window_literal(request.during),
        "digest": digest,
        "tenant_slug": fields["tenant"].slug,
        "pool_slug": request.pool_id,
        # The call names who acts for the reservation's events: no statement of its own.
        "actor": actor(),
        "request_id": request_id() or "",
    }
    CHARGED.ensure()
    if also is None:
        # With `commit`, outside a transaction, the connection autocommits: the call is its own
        # transaction (an error rolls all of it back).
        with prepared_cursor() as cur:
            cur.execute(CHARGED.call_sql, params)
            pk, fresh, _notified, resources, requested, used, limits = cur.fetchone()
    else:
        with connection.connection.pipeline() as pipeline:
            cur = prepared_cursor()
            cur.execute(CHARGED.call_sql, params)
            also()
            if commit:
                # The statements before a Sync are one implicit transaction, which it commits.
                with connection.wrap_database_errors:
                    pipeline.sync()
            pk, fresh, _notified, resources, requested, used, limits = cur.fetchone()
            cur.close()
    if not fresh:
        raise StaleLookup
    lookups.confirmed()  # what follows is decided on the tables as they are
    if pk is None:
        rows = list(zip(resources, requested, used, limits, [0] * len(resources), strict=True))
        quota.check(fields["tenant"].slug, rows)  # raises when a limit said no
        return None  # the key was taken
    return _reservation(pk, fields, conditions, now)


# A reservation no charge goes with (a lease, charged once its node is chosen; an archived pool;
# a request that never fits).
_UNCHARGED_SQL = """
INSERT INTO capacity_reservation
       (tenant_id, pool_id, request, status, conditions, idempotency_key, priority, binding,
        starts_at, ends_at, created_at, updated_at, keep_when_idle)
VALUES (%(tenant)s::bigint, %(pool)s::bigint, %(request)s::jsonb, 'pending', '[]'::jsonb,
        %(key)s::text, %(priority)s::text, %(binding)s::text, %(starts_at)s::timestamptz,
        %(ends_at)s::timestamptz, %(now)s::timestamptz, %(now)s::timestamptz, %(keep)s::boolean)
ON CONFLICT DO NOTHING
RETURNING id
"""


def insert_uncharged(fields: Mapping[str, Any]) -> Reservation | None:
    """Insert a pending reservation without charges in the caller's transaction; None when its key
    is taken. The row is the one the ORM's create() would write, at a fraction of its cost."""
    now = timezone.now()
    # In a pipeline, the transaction's BEGIN travels with the statement.
    with prepared_cursor() as cur, connection.connection.pipeline():
        cur.execute(_UNCHARGED_SQL, _row(fields, now))
        row = cur.fetchone()
    return None if row is None else _reservation(row[0], fields, [], now)


def _row(fields: Mapping[str, Any], now: datetime) -> dict[str, Any]:
    """Return a new reservation's column parameters."""
    return {
        "tenant": fields["tenant"].pk,
        "pool": fields["pool_id"],
        "request": json.dumps(fields["request"]),  # as the JSONField would write it
        "key": fields["idempotency_key"],
        "priority": fields["priority"],
        "binding": fields["binding"],
        "keep": fields.get("keep_when_idle", False),
        "starts_at": fields["starts_at"],
        "ends_at": fields["ends_at"],
        "now": now,
    }


def _reservation(pk: int, fields: Mapping[str, Any], conditions: list[dict], now: datetime) -> Reservation:
    """Return the model instance of a row just inserted, as the ORM would have loaded it."""
    reservation = Reservation(
        id=pk,
        status=Reservation.Status.PENDING,
        conditions=conditions,
        created_at=now,
        updated_at=now,
        **fields,
    )
    reservation._state.adding = False
    return reservation
