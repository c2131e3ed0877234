"""Mark a just-placed booking AwaitingApproval when it is above its pool's approvalAboveGpuHours.

A pool rule at PLACED (capacity.rules), in a create's and a batch's placement alike. The DB half of
approvals (policy.approvals decides them): one statement, in the placement's
transaction, so the node agent never reads the booking unmarked.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING

from django.db import connection

from capacity.port import AWAITING, Booking, PlacementRequest, PoolRow, Rule, gpu_hours_sql

if TYPE_CHECKING:  # an annotation only: the approval's statements need no pool reads
    from capacity.port import Limits

AWAITING_JSON = json.dumps([{"type": AWAITING}])

# Mark the reservation AwaitingApproval when its bookings hold more GPU-hours than the limit
# (capacity.gpu_hours: a MIG slice its share, a leased node's GPUs once each): one statement, in the placement's transaction (the agent never sees it unmarked).
_HOLD_SQL = f"""
UPDATE capacity_reservation r
   SET conditions = r.conditions || jsonb_build_array(jsonb_build_object(
         'type', '{AWAITING}', 'status', 'True', 'reason', 'AboveApprovalLimit',
         'message', format('%%s GPU-hours, above approvalAboveGpuHours %%s: waits for an operator until %%s',
                           trim_scale(round(h.hours, 1)), %(limit)s::int, %(until_text)s::text),
         'holdUntil', %(until_text)s::text, 'gpuHours', trim_scale(round(h.hours, 1))))
  FROM (SELECT coalesce(sum({gpu_hours_sql("b")}), 0) AS hours
          FROM capacity_devicebooking b
          JOIN capacity_allocation a ON a.id = b.allocation_id
         WHERE a.reservation_id = %(id)s AND b.layer = 0) h
 WHERE r.id = %(id)s AND h.hours > %(limit)s AND NOT r.conditions @> %(awaiting)s::jsonb
RETURNING r.conditions
"""


def most_gpu_hours(request: PlacementRequest) -> float | None:
    """Return the most whole-GPU-hours a request can book (a device counts 1, a slice less), or
    None for a lease, whose node decides."""
    if request.lease:
        return None
    members = request.gang.size if request.gang else 1
    hours = (request.during.end - request.during.start) / 3_600_000
    return members * sum(d.count for d in request.devices) * hours


def hold_if_above(
    reservation_pk: int, limits: Limits | None, now: datetime, request: PlacementRequest | None = None
) -> list | None:
    """Mark a just-placed reservation AwaitingApproval when it is above its pool's limit.

    Returns its conditions as written, or None when it is not held. No statement in a pool
    without approvals, nor for a `request` that cannot reach the limit.
    """
    if limits is None or limits.approval_above_gpu_hours is None:
        return None
    most = most_gpu_hours(request) if request is not None else None
    if most is not None and most <= limits.approval_above_gpu_hours:
        return None
    until = now + limits.approval_hold if limits.approval_hold is not None else now
    with connection.cursor() as cur:
        cur.execute(
            _HOLD_SQL,
            {
                "id": reservation_pk,
                "limit": limits.approval_above_gpu_hours,
                "until_text": until.isoformat(timespec="seconds").replace("+00:00", "Z"),
                "awaiting": AWAITING_JSON,
            },
        )
        row = cur.fetchone()
    if row is None:
        return None
    return json.loads(row[0]) if isinstance(row[0], str) else row[0]


def hold(booking: Booking) -> list | None:
    """Hold the booking for an operator when it is above its pool's limit (hold_if_above)."""
    return hold_if_above(booking.reservation_pk, booking.pool.limits, booking.now, booking.request)


def _sets_approvals(pool: PoolRow) -> bool:
    return pool.limits is not None and pool.limits.approval_above_gpu_hours is not None


APPROVAL = Rule("approval", applies=_sets_approvals, placed=hold)
RULES = (APPROVAL,)
