"""Mark a booking to be kept when idle, or not: the owner's opt-out of its pool's idle release.

A kept booking is still marked Idle (and its owner warned); it is never released for idleness.
Only where the pool's policy allows it (allowKeepWhenIdle), and only while the booking is live.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from capacity.access import EVERYONE, Scope
from capacity.models import Reservation
from capacity.placement import INVALID_INPUT, CapacityError

from .pool_policy import check_keep_when_idle
from .reservations import get

FIELD = "keepWhenIdle"


def parse_changes(data: object) -> bool:
    """Return the keepWhenIdle a PATCH asks for; refuse any other field or a value not a bool."""
    if not isinstance(data, dict):
        raise CapacityError(INVALID_INPUT, "the request must be a JSON object")
    others = sorted(set(data) - {FIELD})
    if others:
        raise CapacityError(INVALID_INPUT, f"{others[0]}: only keepWhenIdle may be changed on a reservation")
    if FIELD not in data:
        raise CapacityError(INVALID_INPUT, "keepWhenIdle is required")
    if not isinstance(data[FIELD], bool):
        raise CapacityError(INVALID_INPUT, "keepWhenIdle must be true or false")
    return data[FIELD]


def set_keep_when_idle(reservation_id: int | str, keep: bool, *, scope: Scope = EVERYONE) -> Reservation:
    """Set whether the reservation is kept when idle; NOT_FOUND for one the caller may not read.

    Turning it on in a pool that does not allow it is INVALID_INPUT naming the policy; a reservation
    that has ended cannot change (INVALID_INPUT). Turning it off is always allowed.
    """
    found = get(reservation_id, scope=scope)
    if not isinstance(found, Reservation) or found.status in (
        Reservation.Status.RELEASED,
        Reservation.Status.PREEMPTED,
    ):
        raise CapacityError(INVALID_INPUT, f"keepWhenIdle: reservation {found.pk} has ended ({found.status})")
    if keep:
        check_keep_when_idle(found.pool_id, found.pool.slug)
    with transaction.atomic():
        reservation = Reservation.objects.select_for_update(of=("self",)).get(pk=found.pk)
        if reservation.keep_when_idle != keep:
            reservation.keep_when_idle = keep
            reservation.updated_at = timezone.now()
            reservation.save(update_fields=["keep_when_idle", "updated_at"])
    reservation.tenant, reservation.pool = found.tenant, found.pool
    return reservation
