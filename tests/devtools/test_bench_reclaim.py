"""bench_reclaim: lent GPUs given back over real HTTP, timed; off-loopback or unbounded runs refused."""

import io
import json

import pytest
from django.core.management import CommandError, call_command

from capacity.models import Reservation
from capacity.waits import WATCH


@pytest.fixture
def server(live_server):
    yield live_server
    WATCH.stop()  # the long-polls' watcher holds a connection of its own


def test_each_reclaim_preempts_the_lent_work_and_the_long_poll_sees_it(server):
    out = io.StringIO()
    call_command("bench_reclaim", rounds=2, url=server.url, stdout=out)
    figures = json.loads(out.getvalue())
    for cause in ("sample", "call"):
        f = figures[cause]
        assert f["preemptedP95Ms"] >= f["preemptedP50Ms"] > 0
        assert f["assignmentsP95Ms"] >= f["assignmentsP50Ms"] > 0
    taken = Reservation.objects.filter(tenant__slug="bench-spot")
    assert taken.count() == 4 and set(taken.values_list("status", flat=True)) == {"preempted"}
    reasons = {r.conditions[0]["cause"] for r in taken}
    assert reasons == {"processes", "request"}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"url": "http://10.0.0.8:8000"}, "url: http://127.0.0.1:PORT"),
        ({"rounds": 0}, "rounds: from 1 to 1000"),
        ({"rounds": 1001}, "rounds: from 1 to 1000"),
    ],
)
def test_a_run_off_loopback_or_past_its_bounds_is_refused(options, message, db):
    with pytest.raises(CommandError, match=message):
        call_command("bench_reclaim", stdout=io.StringIO(), **{"url": "http://127.0.0.1:1", **options})
