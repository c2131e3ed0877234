"""bench_queue: the fair queue's order timed with shares on and off, on a small pool."""

import io
import json

from django.core.management import call_command

from capacity.models import Reservation
from policy.models import PoolShare


def test_the_queue_benchmark_times_each_part_with_shares_on_and_off_and_leaves_the_shares(db):
    out = io.StringIO()
    call_command("bench_queue", nodes=2, tenants=4, history_days=3, pending=130, repeats=2, stdout=out)
    figures = json.loads(out.getvalue().splitlines()[-1])
    assert (figures["gpus"], figures["pending"], figures["bookingsRead"]) == (16, 130, 48)
    on, off = figures["sharesOn"], figures["sharesOff"]
    for side in (on, off):
        assert side["fairShares"]["statements"] == 1 and side["retryOrder"]["statements"] == 1
        assert side["round"]["batches"] == 3
    assert (on["placesOf50"]["statements"], off["placesOf50"]["statements"]) == (2, 1)
    assert "sharesOn: fair shares" in out.getvalue()
    # Shares off was rolled back; the rows the claims made queued were too.
    assert PoolShare.objects.filter(pool__slug="bench-queue").count() == 2
    assert not Reservation.objects.filter(conditions__contains=[{"type": "Queued"}]).exists()
