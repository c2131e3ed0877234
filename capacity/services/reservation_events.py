"""A reservation's condition history: each status and condition it had, from when, oldest first."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from capacity.access import Scope, redacted_conditions
from capacity.models import Reservation, ReservationEvent


@dataclass(frozen=True)
class HistoryLine:
    """One condition a reservation had from `at` (no condition: the status alone, e.g. placed)."""

    at: datetime
    status: str
    type: str = ""
    reason: str = ""
    message: str = ""


def condition_history(reservation: Reservation, scope: Scope) -> list[HistoryLine]:
    """Return what the reservation's status and conditions were, from when, oldest first (one query).

    Messages are redacted for `scope`, as the reservation's own conditions are. In the order the
    events happened: by id, not `at`, which is each writer's clock (two may read the same instant).
    """
    lines = []
    for event in ReservationEvent.objects.filter(reservation_id=reservation.pk).order_by("id"):
        conditions = redacted_conditions(event.conditions, scope)
        if not conditions:
            lines.append(HistoryLine(event.at, event.status))
        for c in conditions:
            lines.append(
                HistoryLine(
                    event.at, event.status, c.get("type", ""), c.get("reason", ""), c.get("message", "")
                )
            )
    return lines
