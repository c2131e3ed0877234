"""End allocations: the booking SQL that release, preemption, repair, drain and the port share."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.db import connection

from capacity.models import Allocation


def live_allocations(reservation_pks: Iterable[int]) -> list[int]:
    """Return the ids of these reservations' allocations not yet released (the ORM's query: 0.5 ms more)."""
    with connection.cursor() as cur:
        cur.execute(_LIVE_SQL, [list(reservation_pks)])
        return [pk for (pk,) in cur.fetchall()]


_LIVE_SQL = "SELECT id FROM capacity_allocation WHERE reservation_id = ANY(%s) AND released_at IS NULL"


def end_allocations(allocations: Iterable[Allocation | int], now: datetime, *, mark_released=True) -> None:
    """End allocations (or their ids) at `now`: future bookings and claims go, running ones are cut short.

    Nothing else follows: pool capacity and scalar room are read from these rows when asked.
    Without `mark_released` the allocations stay live (spot work under notice, policy.notice):
    a release meanwhile still ends them.
    """
    ids = sorted(a if isinstance(a, int) else a.pk for a in allocations)
    if not ids:
        return
    with connection.cursor() as cur:
        for table in ("capacity_devicebooking", "capacity_scalarclaim"):
            cur.execute(
                f"DELETE FROM {table} WHERE allocation_id = ANY(%s) AND lower(during) >= %s", [ids, now]
            )
            cur.execute(
                f"""UPDATE {table} SET during = tstzrange(lower(during), %s, '[)')
                     WHERE allocation_id = ANY(%s) AND upper(during) > %s""",
                [now, ids, now],
            )
        if mark_released:
            cur.execute("UPDATE capacity_allocation SET released_at = %s WHERE id = ANY(%s)", [now, ids])
