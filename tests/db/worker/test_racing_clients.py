"""Clients, each on its own connection, race to fill one small pool: eight tenants inline, and
sixteen submitters of one tenant with two pool-lease placers."""

import dataclasses
import threading
from datetime import timedelta

import pytest
from django.db import connection

from capacity import services
from capacity.audit import audit
from capacity.conf import placer_config
from capacity.models import DeviceBooking, QuotaCharge, Reservation
from capacity.models.reservations import QUEUED
from capacity.placers.batch import place_queued
from inventory.models import NodeLabel, NodeResource

from booking import NOW, ask, claimed, from_real_now
from racing import run_threads
from tenants import make_tenant

pytestmark = pytest.mark.django_db(transaction=True)

CLIENTS = 8


def test_racing_clients_fill_the_pool_without_double_booking(pool, make_node):
    """
    4 nodes × 4 GPUs, 12 vcpu each; every request takes 1 GPU and 3 vcpu, so GPUs and vcpu run out
    together: 16 placements in all, whoever wins each race.
    """
    for i in range(4):
        node = make_node(f"node-{i}", gpus=4, vcpu=12)
        NodeLabel.objects.create(node=node, key="bc.dev/cap.devices.limits", value="1", source="system")
    for i in range(CLIENTS):
        make_tenant(f"t{i}", f"Tenant {i}")
    start = threading.Barrier(CLIENTS)
    placed, lost, errors = [], [], []

    def client(i):
        try:
            start.wait()
            # The settings' random top-N pick, so clients spread as in production and still collide.
            cfg = placer_config()
            pendings = 0
            while pendings < 2:
                result = services.reserve(ask(1, tenant=f"t{i}", resources={"vcpu": 3}), config=cfg, now=NOW)
                if result.reservation.status == "placed":
                    placed.append(result.reservation.pk)
                    lost.extend(result.outcome.lost)
                else:
                    pendings += 1
        except Exception as err:
            errors.append(err)
        finally:
            connection.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    assert len(placed) == 16
    assert DeviceBooking.objects.count() == 16
    assert DeviceBooking.objects.values("device").distinct().count() == 16
    for resource in NodeResource.objects.all():
        assert claimed("vcpu", at=NOW + timedelta(hours=1), node=resource.node.name) == 12
    assert Reservation.objects.filter(status="placed").count() == 16
    assert audit() == []
    print(f"racing clients: 16 placed, {len(lost)} lost races replanned")


def test_sixteen_clients_of_one_tenant_queue_while_two_placers_race(pool, make_node):
    """
    4 nodes × 4 GPUs, 12 vcpu each. Sixteen submitters of one tenant queue two 1-GPU, 3-vcpu requests
    each for the pool-lease placer while two placers drain the queue: 16 placed and 16 pending,
    whoever wins, no device booked twice, the books exact.
    """
    for i in range(4):
        node = make_node(f"node-{i}", gpus=4, vcpu=12)
        NodeLabel.objects.create(node=node, key="bc.dev/cap.devices.limits", value="1", source="system")
    make_tenant("acme")
    cfg = dataclasses.replace(placer_config(), placer="pool-lease")
    data = ask(1, start=from_real_now(1), resources={"vcpu": 3})
    submitters, placers = 16, 2
    start = threading.Barrier(submitters + placers)
    done = threading.Event()
    errors = []

    def submit(_i):
        for _ in range(2):
            services.reserve(data, config=cfg)

    def place(_i):
        # Drain until every submitter is done and nothing is left queued.
        while not (done.is_set() and not Reservation.objects.filter(QUEUED).exists()):
            place_queued(cfg)

    def body(i):
        try:
            start.wait()
            (submit if i < submitters else place)(i)
        except Exception as err:
            errors.append(err)
        finally:
            connection.close()

    threads = [threading.Thread(target=body, args=(i,)) for i in range(submitters + placers)]
    for t in threads:
        t.start()
    for t in threads[:submitters]:
        t.join(120)
    done.set()
    for t in threads[submitters:]:
        t.join(120)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    assert Reservation.objects.filter(status="placed").count() == 16
    assert Reservation.objects.filter(status="pending").exclude(QUEUED).count() == 16
    assert DeviceBooking.objects.count() == 16
    assert DeviceBooking.objects.values("device").distinct().count() == 16
    assert audit() == []


def test_one_tenant_racing_itself_with_requests_that_fit_wait_or_never_fit_keeps_the_books_exact(
    pool, make_node
):
    """
    2 nodes × 4 GPUs. Six connections of one tenant each ask for 2 GPUs (fits, then waits with a
    hint once the pool is full) and for 9 GPUs (never fits: no node has 9). No refused or pending
    request holds quota, no device is booked twice, and the audit is clean.
    """
    for i in range(2):
        make_node(f"node-{i}", gpus=4)
    make_tenant("acme")
    cfg = dataclasses.replace(placer_config(), placer="inline")
    errors = []

    def client(i):
        try:
            for gpus in (2, 9, 2):
                services.reserve(ask(gpus, start=from_real_now(1)), config=cfg)
        except Exception as err:
            errors.append(err)

    assert run_threads(6, client) == [] and errors == []
    assert Reservation.objects.filter(status="placed").count() == 4
    never = Reservation.objects.filter(conditions__contains=[{"type": "Unsatisfiable"}])
    assert never.count() == 6
    assert not QuotaCharge.objects.filter(reservation__status="pending").exists()
    assert DeviceBooking.objects.values("device").distinct().count() == DeviceBooking.objects.count() == 8
    assert audit() == []
