"""bench_scale: a small fleet with history and live bookings; every endpoint answers and is timed."""

import io
import json

from django.core.management import call_command

from capacity.audit import audit
from capacity.models import DeviceBooking, Reservation
from devtools.bench.scale import asks


def test_a_small_fleet_is_built_timed_everywhere_and_nothing_is_double_booked(db):
    out = io.StringIO()
    call_command(
        "bench_scale", nodes=20, history=300, live=40, repeats=2, cold=0, stdout=out, stderr=io.StringIO()
    )
    lines = out.getvalue().splitlines()
    summary = json.loads(lines[-1])
    assert (summary["nodes"], summary["live"]) == (20, 40)
    assert summary["history"] == 301  # and the released placement whose request the live ones copy
    names = [a.name for a in asks("scale-0", "n", 1)]
    assert list(summary["endpoints"]) == names
    for name, row in summary["endpoints"].items():
        assert row["p95Ms"] >= row["p50Ms"] > 0 and row["statements"] >= 1, name
    assert lines[0].endswith("double-booked: 0")
    assert lines[1].split() == ["endpoint", "p50", "ms", "p95", "ms", "statements"]
    # The live bookings are charged as placed ones are: the audit finds no drift.
    assert Reservation.objects.filter(status="placed").count() == 40
    assert DeviceBooking.objects.count() == 340
    assert audit() == []
