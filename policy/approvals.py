"""Approve or deny a booking awaiting approval (docs/policy.md, Approvals), and the operators' queue.

The pool's approval rule (policy.approval) holds a booking above its pool's approvalAboveGpuHours;
an operator decides on it here: approved (the condition becomes Approved) or denied with a reason
(released, reason ApprovalDenied). Past holdUntil the worker releases it (reason ApprovalExpired,
release_unapproved: the policy app's worker job, registered by policy/apps.py). A status of its own
would have had every placed-only query (accounting, the audit, expiry, drain, repair) learn it; a
condition changes what must change.
"""

from __future__ import annotations

import logging
import threading
import unicodedata
from datetime import datetime

from django.db import connection, transaction
from django.utils import timezone

from capacity.port import (
    APPROVED,
    AWAITING,
    CONFLICT,
    EVERYONE,
    FORBIDDEN,
    INVALID_INPUT,
    MAX_REASON,
    AnyReservation,
    CapacityError,
    Reservation,
    Scope,
    awaiting,
    release,
    survive,
)
from capacity.port import get as get_reservation
from trail.context import stamp

DENIED = "ApprovalDenied"
EXPIRED = "ApprovalExpired"
EVERY_SECONDS = 10.0  # the worker's round: a hold is released within this of its end

log = logging.getLogger(__name__)


def _allowed(reservation_id: int | str, scope: Scope, operator: bool) -> Reservation | AnyReservation:
    """Return the reservation an operator decides on (read, not locked); NOT_FOUND or FORBIDDEN."""
    found = get_reservation(reservation_id, scope=scope)  # another tenant's: NOT_FOUND, as everywhere
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
        # For the page, which writes times as it writes the window's, not as the condition's ISO text.
        r.hold_until = datetime.fromisoformat(r.approval["holdUntil"]) if "holdUntil" in r.approval else None
    return sorted(rows, key=lambda r: (r.approval.get("holdUntil", ""), r.pk))


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


def run_once() -> str:
    """Release the bookings whose approval hold ran out; say how many (the worker's job round)."""
    released = release_unapproved()
    return f"{released} not approved in time, released" if released else ""


def serve(stop: threading.Event) -> None:
    """Release unapproved bookings every EVERY_SECONDS until `stop`."""

    def _serve(stop: threading.Event) -> None:
        while not stop.is_set():
            release_unapproved()
            stop.wait(EVERY_SECONDS)

    survive("approval-expiry", stop, _serve, log)
