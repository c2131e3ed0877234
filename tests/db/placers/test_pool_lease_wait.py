"""The pool-lease placer: a request that waits for its batch, up to 30 s, holding no connection."""

import threading
import time

import pytest
from django.db import connection, transaction

from capacity import services
from capacity.models import Reservation
from capacity.placement import CapacityError
from capacity.placers.batch import place_queued
from capacity.worker import serve

from booking import NOW, ask, config
from queueing import lease, queue
from racing import Background

pytestmark = pytest.mark.django_db(transaction=True)


def test_wait_holds_the_answer_until_the_batch_ran(tenant, make_node, pool):
    make_node("node-a", gpus=2)
    stop = threading.Event()
    worker = Background(lambda: serve(lease(), interval=None, stop=stop))
    try:
        reservation = queue({**ask(1), "wait": {"timeoutMs": 10_000}})
    finally:
        stop.set()
        worker.join()
    assert reservation.status == "placed"
    assert services.allocations_of(reservation)[0]["nodeId"] == "node-a"


def test_wait_answers_queued_when_the_time_is_up(tenant, make_node):
    make_node("node-a", gpus=2)
    started = time.monotonic()
    reservation = queue({**ask(1), "wait": {"timeoutMs": 150}})
    assert time.monotonic() - started >= 0.15
    assert services.is_queued(reservation)
    place_queued(lease())  # leaves nothing queued behind


@pytest.mark.parametrize("wait", [{"timeoutMs": 30_001}, {"timeoutMs": -1}, {"timeoutMs": "5"}, 5, {"ms": 5}])
@pytest.mark.parametrize("placer", ["inline", "pool-lease"])
def test_wait_must_be_timeout_ms_up_to_30_s(tenant, make_node, wait, placer):
    with pytest.raises(CapacityError) as err:
        services.reserve({**ask(1), "wait": wait}, config=config(placer=placer))
    assert err.value.code == "INVALID_INPUT"
    assert err.value.message == "wait must be {timeoutMs} with 0 to 30000 milliseconds"
    assert not Reservation.objects.exists()


def test_wait_inside_a_transaction_answers_at_once_the_row_not_yet_visible_to_the_placer(tenant, make_node):
    make_node("node-a", gpus=2)
    started = time.monotonic()
    with transaction.atomic():
        reservation = queue({**ask(1), "wait": {"timeoutMs": 5_000}})
    assert time.monotonic() - started < 2
    assert services.is_queued(reservation)
    place_queued(lease())


def test_waiting_holds_no_connection_and_a_tenant_has_a_bound_on_waits(tenant, other_tenant, make_node):
    """
    node-a: 16 GPUs. acme starts 10 waits and globex 2, with no placer running: 8 of acme's and
    globex's 2 wait, holding no connection each; acme's other 2 answer at once, queued. One batch
    then places all 12 and answers every waiter.
    """
    from capacity import waits

    make_node("node-a", gpus=16)
    answers = {}

    def waiter(i, tenant="acme"):
        reservation = services.reserve(
            {**ask(1, tenant=tenant), "wait": {"timeoutMs": 20_000}}, config=lease(), now=NOW
        ).reservation
        answers[(tenant, i)] = (reservation.status, time.monotonic())

    threads = [Background(waiter, i) for i in range(10)] + [Background(waiter, i, "globex") for i in range(2)]
    deadline = time.monotonic() + 20
    while len(answers) < 2 or waits.HUB.waits_of(tenant.pk) < 8 or waits.HUB.waits_of(other_tenant.pk) < 2:
        assert time.monotonic() < deadline, (answers, waits.HUB.waits_of(tenant.pk))
        time.sleep(0.02)
    assert [status for status, _ in answers.values()] == ["pending", "pending"]  # acme's two past the bound
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")
        (connections,) = cur.fetchone()
    assert connections <= 3, connections  # this test's, the listener's, at most one waiter reading
    placed_at = time.monotonic()
    place_queued(lease())
    for t in threads:
        t.join()
    woken = [at for status, at in answers.values() if status == "placed"]
    assert len(woken) == 10
    assert all(at - placed_at < 5 for at in woken)
