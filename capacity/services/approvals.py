"""Approvals (docs/policy.md, Approvals): a large booking is placed but waits for an operator.

A booking of more whole-GPU-hours than its pool's approvalAboveGpuHours is placed as any other
(its devices held, its quota charged, counted everywhere a placed booking counts) and carries the
condition AwaitingApproval with `holdUntil`. While it does, the node agent is not handed it, the
idle check leaves it alone and nothing says it starts. An operator approves it (the condition
becomes Approved) or denies it with a reason (released, reason ApprovalDenied: policy.approvals);
past holdUntil the worker releases it (reason ApprovalExpired, here). A status of its own would
have had every placed-only query (accounting, the audit, expiry, drain, repair) learn it; a
condition changes what must change.
"""

from __future__ import annotations

from datetime import datetime

from django.db import connection, transaction
from django.utils import timezone

from capacity.models import Reservation
from capacity.models.reservations import APPROVED, AWAITING

from .release import release

EXPIRED = "ApprovalExpired"


def awaiting(reservation: Reservation) -> dict | None:
    """Return a placed reservation's AwaitingApproval condition, or None."""
    if reservation.status != Reservation.Status.PLACED:
        return None
    return reservation.condition(AWAITING)


# Placed bookings still awaiting approval whose hold has passed (reservation_awaiting_idx: the
# condition written out, as the index's predicate is).
_DUE_SQL = """
SELECT r.id, c->>'holdUntil'
  FROM capacity_reservation r CROSS JOIN LATERAL jsonb_array_elements(r.conditions) c
 WHERE r.status = 'placed' AND r.conditions @> '[{"type": "AwaitingApproval"}]'::jsonb AND c->>'type' = %(type)s
   AND (c->>'holdUntil')::timestamptz <= %(now)s
 ORDER BY r.id
"""


def release_unapproved(now: datetime | None = None) -> int:
    """Release the bookings no operator decided on within their approvalHold; return how many."""
    now = now or timezone.now()
    with connection.cursor() as cur:
        cur.execute(_DUE_SQL, {"type": AWAITING, "now": now})
        due = cur.fetchall()
    released = 0
    for pk, until in due:
        with transaction.atomic():
            row = Reservation.objects.select_for_update(skip_locked=True, of=("self",)).filter(pk=pk).first()
            if row is None or awaiting(row) is None:
                continue  # decided meanwhile, or being decided now
            release(pk, now=now, reason=f"not approved by {until} (approvalHold)", by="berth", why=EXPIRED)
            released += 1
    return released


__all__ = ["APPROVED", "AWAITING", "awaiting", "release_unapproved"]
