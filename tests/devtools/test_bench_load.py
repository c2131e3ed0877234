"""bench_load: readers and writers against a live server, timed; off-loopback or unbounded runs refused."""

import io
import json

import pytest
from django.core.management import CommandError, call_command

from capacity.models import Reservation


def test_readers_and_writers_are_timed_and_nothing_is_double_booked(live_server, make_node, tenant):
    for name in ("node-a", "node-b"):
        make_node(name, gpus=4)
    out = io.StringIO()
    call_command("bench_load", readers=3, writers=1, seconds=2, url=live_server.url, stdout=out)
    lines = out.getvalue().splitlines()
    f = json.loads(lines[-1])
    for kind in ("reads", "writes"):
        assert f[kind]["requests"] > 0 and f[kind]["errors"] == 0, f[kind]["why"]
        assert f[kind]["p95Ms"] >= f[kind]["p50Ms"] > 0
    assert lines[-2] == "double-booked: 0"
    # Every booking a writer made it released again.
    made = Reservation.objects.filter(tenant__slug="load")
    assert made.exists() and not made.filter(status="placed").exists()


def test_readers_shared_out_over_several_operators_each_sign_in_as_their_own(live_server, make_node, tenant):
    from django.contrib.auth.models import User

    make_node("node-a", gpus=4)
    out = io.StringIO()
    call_command("bench_load", readers=3, writers=0, seconds=1, url=live_server.url, people=3, stdout=out)
    f = json.loads(out.getvalue().splitlines()[-1])
    assert f["people"] == 3 and f["reads"]["requests"] > 0 and f["reads"]["errors"] == 0, f["reads"]["why"]
    readers = User.objects.filter(username__startswith="load-reader", groups__name="operators")
    assert sorted(readers.values_list("username", flat=True)) == [
        "load-reader",
        "load-reader-2",
        "load-reader-3",
    ]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"url": "http://10.0.0.8:8000"}, "url: http://127.0.0.1:PORT"),
        ({"url": "https://127.0.0.1:8000"}, "url: http://127.0.0.1:PORT"),
        ({"readers": 300}, "readers + writers: from 1 to 256"),
        ({"readers": 0, "writers": 0}, "readers + writers: from 1 to 256"),
        ({"seconds": 601}, "seconds: more than 0, at most 600"),
        ({"readers": 2, "people": 3}, "people: from 1 to the number of readers"),
        ({"people": 0}, "people: from 1 to the number of readers"),
    ],
)
def test_a_run_off_loopback_or_past_its_bounds_is_refused(options, message, db):
    with pytest.raises(CommandError, match=message.replace("+", r"\+")):
        call_command("bench_load", stdout=io.StringIO(), **{"url": "http://127.0.0.1:1", **options})
