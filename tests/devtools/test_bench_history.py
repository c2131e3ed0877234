"""bench_history: placements timed on an empty fleet, after a year and after the move to history."""

import io
import json

from django.core.management import call_command

from capacity.audit import audit
from capacity.models import DeviceBooking, Reservation


def test_a_small_year_moves_to_history_and_placements_are_timed_at_each_step(db):
    out = io.StringIO()
    call_command(
        "bench_history", nodes=20, history=300, live=40, placements=10, stdout=out, stderr=io.StringIO()
    )
    lines = out.getvalue().splitlines()
    f = json.loads(lines[-1])
    for step in ("placementsEmpty", "placementsYear", "placementsMoved"):
        assert f[step]["placed"] == 10 and f[step]["perSecond"] > 0, step
    before, after = f["tablesBefore"], f["tablesAfter"]
    # 300 bookings over the year and 40 live: those that ended more than 30 days ago moved (the
    # placements timed were released before they began: their bookings are gone, not moved).
    assert before["capacity_devicebookinghistory"]["rows"] == 0
    assert before["capacity_devicebooking"]["rows"] == 340
    assert after["capacity_devicebooking"]["rows"] + after["capacity_devicebookinghistory"]["rows"] == 340
    moved = sum(after[f"capacity_{t}history"]["rows"] for t in ("devicebooking", "allocation", "reservation"))
    assert moved == f["moved"] and after["capacity_reservationhistory"]["rows"] > 200
    assert after["capacity_allocation"]["rows"] + after["capacity_allocationhistory"]["rows"] >= 340
    assert DeviceBooking.objects.count() == after["capacity_devicebooking"]["rows"]
    assert lines[-2].endswith("double-booked: 0") and f["doubleBooked"] == 0
    assert Reservation.objects.filter(status="placed").count() == 40
    assert audit() == []
