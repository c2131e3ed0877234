"""Releasing a series: every occurrence not yet ended, in one transaction (docs/series.md)."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from capacity.port import EVERYONE, Reservation, Scope, Series, release_together, retry_on_conflict

from .occurrences import get_series


@retry_on_conflict
def release_series(
    series_id: int | str, *, scope: Scope = EVERYONE, now: datetime | None = None
) -> tuple[Series, list[int]]:
    """Release every occurrence not yet ended (nor released); return the series and the ids released.

    Each occurrence ends as a single release ends it (quota refunded, bookings ended at now, its own
    event), all in one transaction and a few statements for all of them (release_together); pending
    work in the pool gets one retry pass after it, not one per occurrence. Ones already over stay as
    they are. Releasing again releases nothing. The ids come in start order.
    """
    now = now or timezone.now()
    series = get_series(series_id, scope=scope)
    with transaction.atomic():
        released = release_together(Reservation.objects.filter(series=series, ends_at__gt=now), now=now)
    return series, released
