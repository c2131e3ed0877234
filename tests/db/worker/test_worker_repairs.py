"""A request that makes atoms unusable moves a bounded number of bookings itself; the worker the rest.

    node-a: [GPU0 GPU1 GPU2 GPU3]  three 1-GPU bookings tomorrow     node-b: empty, room for all three

Maintenance on node-a, with the request's bound lowered to one: the request moves one and wakes the
worker, which moves the other two within seconds (before, a node with 778 bookings held the
request for 11 s).
"""

import threading
import time

import pytest
from django.db import connection

from capacity import receivers, services
from capacity.audit import audit
from capacity.models import Allocation
from capacity.worker import serve
from inventory import services as nodes

from booking import config, from_real_now
from tenants import make_tenant

pytestmark = pytest.mark.django_db(transaction=True)
HOUR = 3_600_000


def on_node(name):
    return set(
        Allocation.objects.filter(node__name=name, released_at__isnull=True).values_list(
            "reservation_id", flat=True
        )
    )


def three_bookings_on_node_a(make_node):
    from datetime import UTC, datetime

    make_tenant("acme")
    make_node("node-a", gpus=4)
    make_node("node-b", gpus=4)
    cfg = config()
    start = int(from_real_now(24) * HOUR + datetime(2026, 12, 2, 12, tzinfo=UTC).timestamp() * 1000)
    ask = {"tenantId": "acme", "poolId": "lab-pool", "devices": [{"class": "gpu", "count": 1}],
           "during": {"start": start, "end": start + 2 * HOUR}}  # fmt: skip
    booked = {services.reserve(ask, config=cfg).reservation.pk for _ in range(3)}
    assert on_node("node-a") == booked
    return booked, cfg


def test_without_a_worker_the_request_moves_its_bound_and_asks_the_worker_for_the_rest(
    pool, make_node, monkeypatch
):
    from capacity.db.channels import REPAIR_CHANNEL
    from capacity.db.cursors import Listener

    three_bookings_on_node_a(make_node)
    monkeypatch.setattr(receivers, "REQUEST_REPAIR_LIMIT", 1)
    with Listener(REPAIR_CHANNEL) as heard:
        nodes.set_maintenance("node-a", True)
        assert len(on_node("node-b")) == 1 and len(on_node("node-a")) == 2
        assert heard.wait(2.0) == REPAIR_CHANNEL
    assert audit() == []


def test_a_request_moves_a_bounded_number_and_wakes_the_worker_for_the_rest(pool, make_node, monkeypatch):
    booked, cfg = three_bookings_on_node_a(make_node)
    monkeypatch.setattr(receivers, "REQUEST_REPAIR_LIMIT", 1)
    stop = threading.Event()

    def worker():
        try:
            serve(cfg, interval=None, stop=stop)
        finally:
            connection.close()

    placer = threading.Thread(target=worker)
    placer.start()
    time.sleep(1.0)  # the worker listens before the request commits
    t0 = time.monotonic()
    nodes.set_maintenance("node-a", True)
    answered = time.monotonic() - t0
    deadline = time.monotonic() + 15
    while on_node("node-a") and time.monotonic() < deadline:
        time.sleep(0.05)
    stop.set()
    placer.join(30)
    assert not placer.is_alive()
    assert on_node("node-a") == set() and on_node("node-b") == booked
    assert answered < 5
    assert audit() == []
