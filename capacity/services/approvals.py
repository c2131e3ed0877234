"""Approvals (docs/policy.md, Approvals): a large booking is placed but waits for an operator.

A booking of more whole-GPU-hours than its pool's approvalAboveGpuHours is placed as any other
(its devices held, its quota charged, counted everywhere a placed booking counts) and carries the
condition AwaitingApproval with `holdUntil`. While it does, the node agent is not handed it, the
idle check leaves it alone and nothing says it starts. An operator approves it (the condition
becomes Approved) or denies it with a reason (released, reason ApprovalDenied); past holdUntil the
worker releases it (reason ApprovalExpired). A status of its own would have had every placed-only
query (accounting, the audit, expiry, drain, repair) learn it; a condition changes what must change.
"""

from __future__ import annotations

import unicodedata
from datetime import datetime

from django.db import connection, transaction
from django.utils import timezone

from capacity.access import EVERYONE, Scope
from capacity.models import AnyReservation, Reservation
from capacity.models.reservations import APPROVED, AWAITING
from capacity.placement import CONFLICT, FORBIDDEN, INVALID_INPUT, CapacityError
from trail.context import stamp

from .release import MAX_REASON, release
from .reservations import get

DENIED, EXPIRED = "ApprovalDenied", "ApprovalExpired"


def awaiting(reservation: Reservation) -> dict | None:
    """Return a placed reservation's AwaitingApproval condition, or None."""
    if reservation.status != Reservation.Status.PLACED:
        return None
    return reservation.condition(AWAITING)


def _allowed(reservation_id: int | str, scope: Scope, operator: bool) -> Reservation | AnyReservation:
    """Return the reservation an operator decides on (read, not locked); NOT_FOUND or FORBIDDEN."""
    found = get(reservation_id, scope=scope)  # another tenant's: NOT_FOUND, as everywhere
    if not operator:
        raise CapacityError(FORBIDDEN, "only operators may approve or deny a booking")
    return found


def _decidable(found: Reservation | AnyReservation) -> Reservation:
    """Return the reservation locked, awaiting approval; CONFLICT otherwise."""
    if not isinstance(found, Reservation):
        raise CapacityError(CONFLICT, f"reservation {found.pk} is {found.status}: nothing awaits approval")
    reservation = (
        Reservation.objects.select_for_update(of=("self",)).select_related("tenant").get(pk=found.pk)
    )
    if awaiting(reservation) is None:
        if reservation.status == Reservation.Status.PLACED and reservation.condition(APPROVED):
            raise CapacityError(CONFLICT, f"reservation {reservation.pk} is already approved")
        raise CapacityError(
            CONFLICT, f"reservation {reservation.pk} is {reservation.status}: it does not await approval"
        )
    return reservation


@transaction.atomic
def approve(
    reservation_id: int | str,
    *,
    by: str,
    operator: bool,
    scope: Scope = EVERYONE,
    now: datetime | None = None,
) -> Reservation:
    """Approve a booking awaiting approval: its AwaitingApproval condition becomes Approved."""
    now = now or timezone.now()
    reservation = _decidable(_allowed(reservation_id, scope, operator))
    kept = [c for c in reservation.conditions if c.get("type") != AWAITING]
    at = now.isoformat().replace("+00:00", "Z")
    approved = {
        "type": APPROVED,
        "status": "True",
        "reason": "ByOperator",
        "message": f"approved by {by}",
        "at": at,
    }
    reservation.conditions = [*kept, approved]
    reservation.updated_at = max(now, reservation.created_at)
    stamp()  # the approval's event names the operator and the request
    reservation.save(update_fields=["conditions", "updated_at"])
    return reservation


def deny(
    reservation_id: int | str,
    reason: object,
    *,
    by: str,
    operator: bool,
    scope: Scope = EVERYONE,
    now: datetime | None = None,
) -> Reservation:
    """Deny a booking awaiting approval: released now, its Released condition (ApprovalDenied) saying why."""
    found = _allowed(reservation_id, scope, operator)
    if not isinstance(reason, str) or not reason.strip():
        raise CapacityError(INVALID_INPUT, "reason: say why the booking is denied (its owner reads it)")
    if len(reason) > MAX_REASON:
        raise CapacityError(INVALID_INPUT, f"reason: at most {MAX_REASON} characters")
    if any(unicodedata.category(c) in ("Cc", "Cf") for c in reason):
        # Shown to the tenant on pages, in the API and webhooks: one printable line.
        raise CapacityError(INVALID_INPUT, "reason must not contain control characters or line breaks")
    now = now or timezone.now()
    with transaction.atomic():
        reservation = _decidable(found)
        return release(reservation.pk, now=now, reason=f"denied: {reason.strip()}", by=by, why=DENIED)


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


def approval_queue(scope: Scope = EVERYONE, limit: int = 200) -> list[Reservation]:
    """Return the placed bookings awaiting approval, the soonest hold first (the operators' queue)."""
    rows = list(
        Reservation.objects.filter(
            status=Reservation.Status.PLACED, conditions__contains=[{"type": AWAITING}]
        )
        .select_related("tenant", "pool")
        .order_by("created_at", "id")[:limit]
    )
    rows = [r for r in rows if scope.allows(r.tenant.slug)]
    for r in rows:
        r.approval = r.condition(AWAITING) or {}
    return sorted(rows, key=lambda r: (r.approval.get("holdUntil", ""), r.pk))


__all__ = ["APPROVED", "AWAITING", "approval_queue", "approve", "awaiting", "deny", "release_unapproved"]
