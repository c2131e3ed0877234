"""The pool-lease placer's worker beside the inline placer: waking, lingering, racing."""

import dataclasses
import io
import threading
import time
from datetime import UTC, datetime

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.db import connection

from capacity import port, services
from capacity.conf import placer_config
from capacity.db.channels import QUEUED_CHANNEL
from capacity.models import DeviceBooking, Reservation, ScalarClaim
from capacity.placement import Window
from capacity.placement.timeline import peak
from capacity.placers.batch import place_batch, place_queued
from capacity.worker import serve

from booking import NOW, ask, config, from_real_now
from queueing import YEAR, lease, queue
from racing import Background
from tenants import make_tenant

pytestmark = pytest.mark.django_db(transaction=True)


def test_gangs_and_instances_still_place_inline(tenant, make_node):
    make_node("node-a", gpus=2)
    make_node("node-b", gpus=2)
    gang = services.reserve(ask(1, gang={"size": 2}), config=lease(), now=NOW).reservation
    assert gang.status == "placed"
    assert len(services.allocations_of(gang)) == 2
    booking = port.reserve_for_instance(
        instance_id="vm-1",
        tenant="acme",
        pool="lab-pool",
        devices=[{"class": "gpu", "count": 1}],
        duration="1h",
        config=lease(),
    )
    assert booking.status == "placed"
    assert not Reservation.objects.filter(conditions__contains=[{"type": "Queued"}]).exists()


def test_retry_pending_leaves_queued_reservations_to_the_placer(tenant, make_node, pool):
    make_node("node-a", gpus=2)
    reservation = queue(ask(1))
    assert services.retry_pending([pool.pk], config=config()) == 0
    assert services.is_queued(Reservation.objects.get(pk=reservation.pk))
    place_queued(lease())


def test_run_placer_once_places_the_queue(tenant, make_node, settings):
    make_node("node-a", gpus=1)
    from django.utils import timezone

    settings.CAPACITY = {**settings.CAPACITY, "PLACER": "pool-lease"}
    # By the real clock: the round's housekeeping releases windows that have ended by it.
    soon = ask(1, start=from_real_now(1))
    first = services.reserve(soon, config=lease(), now=timezone.now()).reservation
    second = services.reserve(soon, config=lease(), now=timezone.now()).reservation
    out = io.StringIO()
    call_command("run_placer", "--once", stdout=out)
    assert Reservation.objects.get(pk=first.pk).status == "placed"
    assert Reservation.objects.get(pk=second.pk).status == "pending"
    assert out.getvalue() == "batched 1 placed, 1 pending\nreleased 0 ended, placed 0 pending\n"


def test_queued_submitters_inline_clients_and_two_placers_race_without_double_booking(make_node):
    """
    3 nodes × 4 GPUs, 8 vcpu each; requests take 1 GPU and 2 vcpu: 12 placements in all. Four
    clients queue, four book inline, two workers drain the queue, all at once.
    """
    from inventory.models import NodeLabel, NodeResource

    for i in range(3):
        node = make_node(f"node-{i}", gpus=4, vcpu=8)
        NodeLabel.objects.create(node=node, key="bc.dev/cap.devices.limits", value="1", source="system")
    for i in range(8):
        make_tenant(f"t{i}", f"Tenant {i}")
    start = threading.Barrier(10)
    stop = threading.Event()
    # The settings' random top-N pick, so placements spread as in production and still collide.
    batching = dataclasses.replace(placer_config(), placer="pool-lease")

    def client(i):
        cfg = batching if i < 4 else placer_config()
        start.wait()
        for _ in range(3):
            services.reserve(ask(1, tenant=f"t{i}", resources={"vcpu": 2}), config=cfg, now=NOW)

    def placer():
        start.wait()
        serve(batching, interval=None, stop=stop)

    clients = [Background(client, i) for i in range(8)]
    placers = [Background(placer) for _ in range(2)]
    for c in clients:
        c.join(120)
    deadline = time.monotonic() + 60
    while Reservation.objects.filter(conditions__contains=[{"type": "Queued"}]).exists():
        assert all(not p.errors for p in placers), [p.errors for p in placers]
        assert time.monotonic() < deadline, "the queue never drained"
        time.sleep(0.01)
    stop.set()
    for p in placers:
        p.join(60)
    assert Reservation.objects.count() == 24
    assert Reservation.objects.filter(status="placed").count() == 12
    assert DeviceBooking.objects.count() == 12
    assert DeviceBooking.objects.values("device_id").distinct().count() == 12
    for node in NodeResource.objects.filter(resource="vcpu").values_list("node_id", flat=True):
        claims = ScalarClaim.objects.filter(node_id=node, resource="vcpu")
        assert peak([(c.during.lower, c.during.upper, c.amount) for c in claims], NOW - YEAR, NOW + YEAR) <= 8
    pending = Reservation.objects.filter(status="pending")
    assert pending.count() == 12
    assert all(r.condition("Unschedulable") for r in pending)


def test_a_queued_gang_is_placed_whole_by_the_inline_placer_after_the_lock(tenant, make_node, pool):
    """reserve() never queues a gang; one queued otherwise (an older release, a script) still lands."""
    from capacity.models.reservations import QUEUED_CONDITION

    make_node("node-a", gpus=2)
    make_node("node-b", gpus=2)
    data = ask(1, gang={"size": 2})
    placement = dict(data)
    reservation = Reservation.objects.create(
        tenant=tenant,
        pool=pool,
        request={"input": data, "placement": placement},
        conditions=[{"type": QUEUED_CONDITION, "status": "True", "reason": "PoolLease", "message": "queued"}],
        starts_at=datetime.fromtimestamp(data["during"]["start"] / 1000, UTC),
        ends_at=datetime.fromtimestamp(data["during"]["end"] / 1000, UTC),
    )
    from capacity.placers import quota

    window = Window(data["during"]["start"], data["during"]["end"])
    quota.charge(tenant.pk, tenant.slug, reservation.pk, {"gpu": 2}, window)  # as admission would have
    result = place_batch(pool.pk, lease())
    assert result.placed == [reservation.pk]
    assert sorted(a["nodeId"] for a in services.allocations_of(reservation)) == ["node-a", "node-b"]


def test_the_worker_wakes_as_soon_as_a_reservation_is_queued(tenant, make_node, monkeypatch):
    from capacity import worker

    monkeypatch.setattr(worker, "STOP_POLL", 30.0)  # only the queue's notification wakes it in time
    make_node("node-a", gpus=2)
    stop, rounds = threading.Event(), []
    thread = Background(lambda: worker.serve(lease(), interval=None, stop=stop, report=rounds.append))

    def placed_soon(reservation):
        deadline = time.monotonic() + 5
        while Reservation.objects.get(pk=reservation.pk).status != "placed":
            assert time.monotonic() < deadline and not thread.errors, "the worker did not wake"
            time.sleep(0.01)

    try:
        deadline = time.monotonic() + 10
        while not rounds:  # the first round ran; the worker now waits on the channel
            assert time.monotonic() < deadline and not thread.errors, thread.errors
            time.sleep(0.01)
        placed_soon(queue(ask(1)))
        placed_soon(queue(ask(1)))  # and again, after the wait that followed the first batch
    finally:
        stop.set()
        with connection.cursor() as cur:  # wake it once more, to see the stop
            cur.execute("SELECT pg_notify(%s, '')", [QUEUED_CHANNEL])
        thread.join()


def test_after_a_batch_that_was_not_full_the_worker_lingers_for_its_empty_share_and_not_after_a_full_one(
    tenant, make_node
):
    """Three queued, batches of four: the first batch leaves a quarter empty, so the worker waits a
    quarter of the linger before it looks again; the same three with batches of three wait not at all."""
    make_node("node-a", gpus=8)
    waits = []
    for batch in (4, 3):
        cfg = lease(max_batch=batch, linger=0.2)
        queued = [queue(ask(1), cfg=cfg) for _ in range(3)]
        stop = threading.Event()
        stop.set()  # one round that places, then one that finds the queue empty and stops
        rounds = []
        serve(cfg, interval=None, stop=stop, report=rounds.append, sleep=waits.append)
        assert [len(r.batch) for r in rounds] == [3, 0]
        assert {r.status for r in Reservation.objects.filter(pk__in=[q.pk for q in queued])} == {"placed"}
        assert waits == [pytest.approx(0.05)]


def test_the_linger_setting_is_read_in_milliseconds_and_checked(settings):
    settings.CAPACITY = {**settings.CAPACITY, "BATCH_LINGER_MS": 25}
    assert placer_config().linger == pytest.approx(0.025)
    settings.CAPACITY = {**settings.CAPACITY, "BATCH_LINGER_MS": 1001}
    with pytest.raises(ImproperlyConfigured, match=r"BATCH_LINGER_MS'\] must be between 0 and 1000"):
        placer_config()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"PLACER": "batch"}, "CAPACITY['PLACER'] must be one of inline, pool-lease, not 'batch'"),
        ({"MAX_BATCH": 65}, "CAPACITY['MAX_BATCH'] must be between 1 and 64"),
        ({"MAX_BATCH": 0}, "CAPACITY['MAX_BATCH'] must be between 1 and 64"),
    ],
)
def test_an_unknown_placer_or_a_batch_past_64_stops_start_up(settings, change, message):
    from django.core.exceptions import ImproperlyConfigured

    settings.CAPACITY = {**settings.CAPACITY, **change}
    with pytest.raises(ImproperlyConfigured) as err:
        placer_config()
    assert str(err.value) == message
