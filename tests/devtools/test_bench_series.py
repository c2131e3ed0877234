"""bench_series: a small run books its series and their single twins, counts statements, and releases
a series beside pending work."""

import io
import json

from django.core.management import call_command

from capacity.models import Reservation, Series


def test_a_small_run_places_every_occurrence_and_counts_statements_per_occurrence(db):
    out = io.StringIO()
    call_command(
        "bench_series",
        nodes=8,
        occurrences=6,
        runs=2,
        background=5,
        pending=3,
        stdout=out,
        stderr=io.StringIO(),
    )
    f = json.loads(out.getvalue().splitlines()[-1])
    assert (f["placed"], f["pending"]) == (12, 0)
    assert f["statements_per_occurrence"] > 0 and f["statements_per_single_create"] > 0
    assert f["double_booked"] == 0 and f["drift"] == 0
    # Two timed runs and one whose statements were counted, each with its single twins; then two
    # series released (one timed, one counted) beside three bookings past their borrowing limit.
    assert Series.objects.count() == 5
    assert Reservation.objects.filter(series__isnull=False).count() == 30
    assert Reservation.objects.filter(series__isnull=False, status="released").count() == 12
    assert (f["pending_beside_release"], f["pending_still_pending"]) == (3, 3)
    assert f["release_s"] > 0 and f["release_statements"] > 0
    assert Reservation.objects.count() == 5 + 18 + 18 + 12 + 3
