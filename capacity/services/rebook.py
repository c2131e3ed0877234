"""Book the earliest window that fits for a reservation still waiting: the hint's button, made exact."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import timezone

from capacity.access import Scope
from capacity.models import Reservation
from capacity.placement import INVALID_INPUT, CapacityError

from .earliest_start import earliest
from .reserve import ReserveResult, admission_context, reserve

# What the caller asked that names a window (or how to answer): the new booking gets its own.
WINDOW_FIELDS = ("duration", "during", "idempotencyKey", "wait")


@dataclass
class Rebooked:
    """The new reservation at the earliest window, or why there is none within the horizon."""

    result: ReserveResult | None
    reason: str = ""


def rebook_earliest(
    reservation: Reservation, *, scope: Scope, identity: str, now: datetime | None = None
) -> Rebooked:
    """Reserve what a pending reservation asked for, as long, at the earliest window that fits now.

    A pending reservation's hint ("fits from 18:34Z") names a window after its own; a minute
    rounded down could still overlap the booking that frees the room, so the window is searched
    again at full precision (earliest_start.py). The new booking's idempotency key names the pending
    one: pressing twice answers the first booking. The pending reservation is left as it is.
    """
    key = f"rebook-{reservation.pk}"
    done = Reservation.objects.filter(tenant_id=reservation.tenant_id, idempotency_key=key).first()
    if done is not None:
        return Rebooked(ReserveResult(done, created=False))
    if reservation.status != Reservation.Status.PENDING:
        raise CapacityError(INVALID_INPUT, "only a pending reservation is booked again at another window")
    now = now or timezone.now()
    asked: dict[str, Any] = {
        k: v for k, v in reservation.request.get("input", {}).items() if k not in WINDOW_FIELDS
    }
    length = reservation.ends_at - reservation.starts_at
    start = max(now, reservation.starts_at)
    window = {"start": _ms(start), "end": _ms(start + length)}
    found = earliest({**asked, "during": window}, scope=scope, now=now)
    if not found.fits or found.window is None:
        return Rebooked(None, found.reason)
    data = {
        **asked,
        "during": {"start": found.window.start, "end": found.window.end},
        "idempotencyKey": key,
    }
    admission = admission_context(data.get("tenantId"), identity, "user")
    return Rebooked(reserve(data, scope=scope, admission=admission, now=now))


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)
