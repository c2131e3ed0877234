"""Taking work back: the victims of a preemption or a reclaim locked, ended (or given notice), marked.

capacity.placers.preempt finds the victims; this ends them, in the lock order (the victims'
reservation rows first, before the pool).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

from django.db import connection

from capacity.rules import Notice

from . import quota
from .commit import Owner
from .ending import end_allocations, live_allocations

PREEMPTED = "Preempted"
PREEMPTED_REASON = "PreemptedByRegular"
RECLAIMED_REASON = "ReclaimedByShares"

# Victims locked in pk order; only rows still placed spot work are taken back (one released
# meanwhile frees its room anyway, and the guarded commit judges whatever else changed).
# The victims locked, each with whether the preempting reservation is its own tenant's.
_LOCK_VICTIMS_SQL = """
SELECT id, tenant_id IS NOT DISTINCT FROM (SELECT tenant_id FROM capacity_reservation WHERE id = %(by)s::bigint),
       priority = 'spot'
  FROM capacity_reservation
 WHERE id = ANY(%(pks)s::bigint[]) AND status = 'placed' AND (priority = 'spot' OR borrowed_gpus > 0)
   AND NOT conditions @> '[{{"type": "PreemptAt"}}]'
 ORDER BY id FOR UPDATE{skip}
"""
_MARK_PREEMPTED_SQL = """
UPDATE capacity_reservation r SET status = 'preempted', released_at = %(at)s, updated_at = %(now)s,
       conditions = c.conditions
  FROM unnest(%(ids)s::bigint[], %(conditions)s::jsonb[]) AS c(id, conditions)
 WHERE r.id = c.id
"""


def take_back(
    victims: Sequence[int],
    at: datetime,
    by: Owner,
    now: datetime,
    *,
    wait: bool = True,
    notice: Notice | None = None,
    condition: dict | None = None,
) -> bool:
    """End the victims at `at`: bookings and claims cut, quota returned, status preempted.

    With a `notice` (the pool's spotNotice, a NOTICE rule's) it gives them notice instead: they
    stay placed until `at` with a PreemptAt condition, and are marked preempted then (policy.notice). `condition` replaces
    the Preempted condition each victim would carry (a reclaim of lent GPUs says so).

    With `wait` a victim another transaction holds (a release, another preemption) is waited
    for: the caller holds no pool lock yet, so nothing can wait on it in turn. A placer that
    already holds the pool (the pool-lease batch) passes wait=False: then a victim another
    transaction holds makes it return False having changed nothing (the caller treats the node as
    a lost race), since that transaction may be ending the victim's bookings and waiting for the pool.
    """
    with connection.cursor() as cur:
        cur.execute(
            _LOCK_VICTIMS_SQL.format(skip="" if wait else " SKIP LOCKED"),
            {"pks": list(victims), "by": by.reservation_pk},
        )
        found = cur.fetchall()
    own = {pk: mine for pk, mine, _spot in found}
    spot = {pk: is_spot for pk, _mine, is_spot in found}
    locked = sorted(own)
    if not wait and len(locked) < len(victims):
        return False
    if not locked:
        return True
    taken = [
        condition
        if condition is not None
        else preempted_condition(at, by, own[pk])
        if spot[pk]
        else reclaimed_condition(at, by)
        for pk in locked
    ]
    if notice is not None:
        notice.give(locked, taken, at, now)
        return True
    end_allocations(live_allocations(locked), at)
    quota.refund(locked, at)
    conditions = [json.dumps([c]) for c in taken]
    with connection.cursor() as cur:
        cur.execute(_MARK_PREEMPTED_SQL, {"at": at, "now": now, "ids": locked, "conditions": conditions})
    return True


def preempted_condition(at: datetime, by: Owner, own_tenant: bool) -> dict:
    """Return the condition a preempted reservation carries: when, and by what.

    Work of another tenant is not named in the message (its id names nothing of use to the victim
    and tells it what another tenant books); `reservationId` keeps it for operators, and
    `byOwnTenant` says whether a tenant may read it (capacity.access drops it for the others).
    """
    stamp = at.strftime("%Y-%m-%dT%H:%MZ")
    if by.reservation_pk is None:
        by_what = f"instance {by.instance_id}"
    elif own_tenant:
        by_what = f"reservation {by.reservation_pk}"
    else:
        by_what = "regular work of another tenant"
    return {
        "type": PREEMPTED,
        "status": "True",
        "reason": PREEMPTED_REASON,
        "message": f"preempted at {stamp} by {by_what}",
        "at": at.isoformat(),
        "reservationId": by.reservation_pk,
        "byOwnTenant": own_tenant,
    }


def reclaimed_condition(at: datetime, by: Owner) -> dict:
    """Return the condition of a borrowing reservation whose GPUs a guaranteed booking took back.

    The guaranteed tenant is never named (nor its reservation, but for operators).
    """
    return {
        "type": PREEMPTED,
        "status": "True",
        "reason": RECLAIMED_REASON,
        "message": f"reclaimed by the pool's guaranteed shares at {at.strftime('%Y-%m-%dT%H:%MZ')}",
        "at": at.isoformat(),
        "reservationId": by.reservation_pk,
        "byOwnTenant": False,
    }
