"""Racing lenders: the EXCLUDE constraint lets one owner booking and one lent booking per device and instant."""

import pytest
from django.db import connection, transaction

from capacity.audit import audit
from capacity.models import Allocation, DeviceBooking, Reservation
from capacity.models.reservations import IDLE
from inventory.models import Device, Pool
from policy.models import PoolPolicy
from policy.reclaim import reclaim

from booking import NOW, ask, reserve
from racing import run_threads

pytestmark = pytest.mark.django_db(transaction=True)

IDLE_CONDITION = {"type": IDLE, "status": "True", "reason": "LowUtilization", "message": "0 %"}


def idle_owner(gpus=2, hours=24):
    PoolPolicy.objects.update_or_create(pool=Pool.objects.get(slug="lab-pool"), defaults={"lend_idle": True})
    owner = reserve(ask(gpus, hours=hours)).reservation
    Reservation.objects.filter(pk=owner.pk).update(conditions=[IDLE_CONDITION])
    return owner


def test_racing_lent_inserts_on_one_device_and_instant_leave_one(tenant, make_node):
    """Eight connections insert a lent booking of the same GPU over the same hour at once: one stays."""
    make_node("node-a", gpus=1)
    owner = idle_owner(gpus=1)
    gpu = Device.objects.get()
    allocation = Allocation.objects.get(reservation=owner)
    won = []

    def lender(i):
        with transaction.atomic(), connection.cursor() as cur:
            cur.execute(
                """INSERT INTO capacity_devicebooking (device_id, allocation_id, during, layer)
                   VALUES (%s, %s, tstzrange(%s, %s + interval '1 hour', '[)'), 1)
                   ON CONFLICT DO NOTHING RETURNING id""",
                [gpu.pk, allocation.pk, NOW, NOW],
            )
            won.extend(cur.fetchall())

    assert run_threads(8, lender) == []
    assert len(won) == 1
    assert DeviceBooking.objects.filter(device=gpu, layer=1).count() == 1
    assert DeviceBooking.objects.filter(device=gpu, layer=0).count() == 1
    DeviceBooking.objects.filter(layer=1).delete()  # written beneath the services


def test_an_owner_booking_is_still_one_per_device_and_instant(tenant, make_node):
    """A layer-0 insert over an owner's booking is refused, lent booking or not."""
    make_node("node-a", gpus=1)
    owner = idle_owner(gpus=1)
    gpu = Device.objects.get()
    allocation = Allocation.objects.get(reservation=owner)
    with connection.cursor() as cur:
        cur.execute(
            """INSERT INTO capacity_devicebooking (device_id, allocation_id, during)
               VALUES (%s, %s, tstzrange(%s, %s + interval '1 hour', '[)'))
               ON CONFLICT DO NOTHING RETURNING id""",
            [gpu.pk, allocation.pk, NOW, NOW],
        )
        assert cur.fetchall() == []


def test_racing_spot_requests_borrow_each_idle_gpu_once(tenant, other_tenant, make_node):
    """
    node-a: 4 GPUs, all acme's idle booking for a day. Six globex connections ask for 2 spot GPUs
    for four hours at once, five rounds each in its own window: two are lent per round, four wait.
    """
    make_node("node-a", gpus=4)
    idle_owner(gpus=4, hours=24)
    for round_ in range(5):
        statuses = []

        def client(i, round_=round_, statuses=statuses):
            data = ask(2, tenant="globex", priority="spot", start=round_ * 4, hours=4)
            statuses.append(reserve(data).reservation.status)

        assert run_threads(6, client) == []
        assert sorted(statuses) == ["pending"] * 4 + ["placed"] * 2
    assert DeviceBooking.objects.filter(layer=1).count() == 20
    assert audit() == []


def test_a_lender_reclaiming_while_spot_work_borrows_leaves_nothing_lent(tenant, other_tenant, make_node):
    """At once: globex's spot request borrows acme's idle GPUs and acme reclaims them. Either the
    reclaim came first (the spot work waits) or it found the lent work and took it back."""
    make_node("node-a", gpus=2)
    owner = idle_owner(gpus=2, hours=24)
    for _round in range(5):
        Reservation.objects.filter(pk=owner.pk).update(conditions=[IDLE_CONDITION])

        def client(i, owner=owner):
            if i == 0:
                reserve(ask(2, tenant="globex", priority="spot", hours=4))
            else:
                reclaim(owner.pk, now=NOW)

        assert run_threads(2, client) == []
        assert not Reservation.objects.filter(status="placed", priority="spot").exists()
    assert audit() == []
