"""A series release retries pending work once and wakes the worker when some still waits.

node-a: 2 GPUs; acme's daily series holds both; globex's one-GPU bookings in its windows wait.
Committed for real (the wake is a NOTIFY, sent at the commit).
"""

import pytest

from capacity import services
from capacity.audit import audit
from capacity.db.channels import REPAIR_CHANNEL
from capacity.db.cursors import Listener
from capacity.models import Reservation
from capacity.services.release import RELEASE_RETRY_BATCH
from series.book import reserve_series
from series.release import release_series

from booking import ask, config, from_real_now
from tenants import make_tenant

pytestmark = pytest.mark.django_db(transaction=True)


def book(occurrences: int, waiting: int) -> tuple[int, list[int]]:
    make_tenant("acme")
    make_tenant("globex")
    start = from_real_now(1)
    data = {**ask(2, start=start, hours=2), "repeat": {"freq": "daily", "count": occurrences}}
    series = reserve_series(data, config=config()).series.pk
    pending = [
        services.reserve(
            ask(1, tenant="globex", start=start + 24 * day, hours=1), config=config()
        ).reservation.pk
        for day in range(waiting)
    ]
    return series, pending


def test_the_release_wakes_the_worker_for_the_pending_work_its_one_pass_left(make_node):
    make_node("node-a", gpus=2)
    series, pending = book(12, RELEASE_RETRY_BATCH + 2)
    with Listener(REPAIR_CHANNEL) as heard:
        release_series(series)
        assert heard.wait(2.0) == REPAIR_CHANNEL
    placed = Reservation.objects.filter(pk__in=pending, status="placed").count()
    assert placed == RELEASE_RETRY_BATCH
    assert audit() == []


def test_with_nothing_left_waiting_the_worker_is_not_woken(make_node):
    make_node("node-a", gpus=2)
    series, pending = book(4, 3)
    with Listener(REPAIR_CHANNEL) as heard:
        release_series(series)
        assert heard.wait(0.5) is None
    assert set(Reservation.objects.filter(pk__in=pending).values_list("status", flat=True)) == {"placed"}
