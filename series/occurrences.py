"""A series read: the series a caller may see, and its occurrences still live, as its answers list them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from capacity.port import EVERYONE, NOT_FOUND, CapacityError, Reservation, Scope, Series


@dataclass(frozen=True)
class Occurrence:
    """One occurrence as a series' answer lists it: its reservation (None when nothing was booked)."""

    start: datetime
    status: str
    reservation_id: int | None = None
    reason: str = ""


def reason_of(reservation: Reservation) -> str:
    """Return why an occurrence is not placed: its Unschedulable condition's message, else ""."""
    for condition in reservation.conditions:
        if condition.get("type") == "Unschedulable":
            return condition.get("message", "")
    return ""


def occurrences_of(series: Series) -> list[Occurrence]:
    """Return a series' occurrences still live, in start order (one statement)."""
    rows = Reservation.objects.filter(series=series).order_by("starts_at", "pk")
    return [
        Occurrence(r.starts_at, r.status, r.pk, "" if r.status == Reservation.Status.PLACED else reason_of(r))
        for r in rows.only("pk", "starts_at", "status", "conditions")
    ]


def get_series(series_id: int | str, *, scope: Scope = EVERYONE) -> Series:
    """Return a series the caller may read; another tenant's answers NOT_FOUND, as a missing one."""
    pk = int(series_id) if str(series_id).isascii() and str(series_id).isdigit() else None
    found = Series.objects.select_related("tenant", "pool").filter(pk=pk).first() if pk else None
    if found is None or not scope.allows(found.tenant.slug):
        raise CapacityError(NOT_FOUND, f"no series {series_id}")
    return found
