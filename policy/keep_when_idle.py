"""Keep a booking when idle, or not: the owner's opt-out of its pool's idle release (docs/policy.md).

A kept booking is still marked Idle (and its owner warned); it is never released for idleness.
Only where the pool's policy allows it (allowKeepWhenIdle), and only while the booking is live.
A create asking it is judged by a pool rule (capacity.rules) before any lock, on the pool's lookup
(PoolRow.allow_keep_when_idle: no statement); a PATCH (policy.api.keep_when_idle) or the
reservation page's button (policy.views) reads the policy afresh.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from capacity.port import (
    EVERYONE,
    INVALID_INPUT,
    CapacityError,
    PlacementRequest,
    PoolRow,
    Reservation,
    Rule,
    Scope,
    get,
    policy_of,
)

FIELD = "keepWhenIdle"


def refuse(pool_slug: str) -> None:
    """Refuse keepWhenIdle in a pool whose policy does not allow keeping idle bookings (INVALID_INPUT)."""
    raise CapacityError(
        INVALID_INPUT,
        f"keepWhenIdle: pool {pool_slug} does not allow keeping idle bookings (its policy's allowKeepWhenIdle is false)",
    )


def check_request(request: PlacementRequest, pool: PoolRow, now: datetime, extra: Mapping[str, Any]) -> None:
    """Refuse a request that asks keepWhenIdle in a pool whose policy does not allow it."""
    if extra.get("keep_when_idle"):
        refuse(request.pool_id)


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
    if keep and not policy_of(found.pool_id).allow_keep_when_idle:
        refuse(found.pool.slug)
    with transaction.atomic():
        reservation = Reservation.objects.select_for_update(of=("self",)).get(pk=found.pk)
        if reservation.keep_when_idle != keep:
            reservation.keep_when_idle = keep
            reservation.updated_at = timezone.now()
            reservation.save(update_fields=["keep_when_idle", "updated_at"])
    reservation.tenant, reservation.pool = found.tenant, found.pool
    return reservation


def _forbids(pool: PoolRow) -> bool:
    return not pool.allow_keep_when_idle


# Before any lock, where the pool's policy forbids it: a pool that allows it (the default) runs no code.
KEEP_WHEN_IDLE = Rule("keep-when-idle", applies=_forbids, before_lock=check_request, reads_extra=True)
RULES = (KEEP_WHEN_IDLE,)
