"""The pool-lease placer's database backend killed in the middle of a batch leaves nothing partial.

    n1: [GPU0 GPU1 GPU2 GPU3]    four 1-GPU requests queued
    blocker: an uncommitted booking of GPU3 over the same window (another transaction)

The batch claims the four, plans them on plain reads (the blocker's row is invisible), and while
its commit statements wait on GPU3 behind the blocker, its backend is terminated. Everything the
batch did goes with its transaction: the four stay queued, holding their quota, and the audit is
clean; the next batch places all four.
"""

import threading
from datetime import UTC, datetime

import pytest
from django.db import connection, transaction
from django.db.utils import Error as DatabaseError

from capacity import services
from capacity.audit import audit
from capacity.models import Allocation, DeviceBooking, Reservation
from capacity.models.reservations import QUEUED
from capacity.placers.batch import place_batch, place_queued
from inventory.models import Device, Node

from booking import config, from_real_now
from racing import lock_waiter
from tenants import make_tenant

pytestmark = pytest.mark.django_db(transaction=True)


def ask_one(start):
    return {
        "tenantId": "acme",
        "poolId": "lab-pool",
        "devices": [{"class": "gpu", "count": 1}],
        "during": {"start": start, "end": start + 4 * 3_600_000},
    }


def waiting_batch_pid():
    """Return the pid of the backend whose booking insert waits on a lock, once there is one.

    It must be waiting in the commit statements (the device bookings), not before them; the
    batch's write statement books the devices, and its text is cut before it names them.
    """
    return lock_waiter("capacity_devicebooking", "WITH plans AS MATERIALIZED")


def test_a_batch_whose_backend_is_killed_mid_commit_leaves_nothing_partial(pool, make_node):
    make_tenant("acme")
    make_node("n1", gpus=4)
    cfg = config(placer="pool-lease")
    start = int(from_real_now(1) * 3_600_000 + datetime(2026, 12, 2, 12, tzinfo=UTC).timestamp() * 1000)
    queued = [services.reserve(ask_one(start), config=cfg).reservation.pk for _ in range(4)]
    assert Reservation.objects.filter(QUEUED, pk__in=queued).count() == 4

    hold, release = threading.Event(), threading.Event()
    outcome = {}

    def blocker():
        try:
            with transaction.atomic():
                node = Node.objects.get(name="n1")
                lo = datetime.fromtimestamp(start / 1000, UTC)
                hi = datetime.fromtimestamp((start + 4 * 3_600_000) / 1000, UTC)
                held = Allocation.objects.create(instance_id="blocker", node=node, starts_at=lo, ends_at=hi)
                DeviceBooking.objects.create(
                    device=Device.objects.get(uuid="GPU-n1-3"), allocation=held, during=(lo, hi)
                )
                hold.set()
                release.wait(30)
                raise RuntimeError("roll the blocker back")
        except RuntimeError:
            pass
        finally:
            connection.close()

    def batch():
        try:
            place_batch(Reservation.objects.get(pk=queued[0]).pool_id, cfg)
            outcome["result"] = "finished"
        except DatabaseError as err:  # the terminated backend
            outcome["result"] = type(err).__name__
        finally:
            connection.close()

    holder = threading.Thread(target=blocker)
    holder.start()
    assert hold.wait(10)
    placer = threading.Thread(target=batch)
    placer.start()
    pid = waiting_batch_pid()
    with connection.cursor() as cur:
        cur.execute("SELECT pg_terminate_backend(%s)", [pid])
    placer.join(30)
    release.set()
    holder.join(30)
    assert outcome["result"] != "finished"

    # Nothing of the killed batch stayed: still queued, no allocation, no booking, books exact.
    assert Reservation.objects.filter(QUEUED, pk__in=queued).count() == 4
    assert not Allocation.objects.exists() and not DeviceBooking.objects.exists()
    assert audit() == []

    placed = place_queued(cfg).placed
    assert sorted(placed) == sorted(queued)
    assert Reservation.objects.filter(pk__in=queued, status="placed").count() == 4
    assert DeviceBooking.objects.count() == 4
    assert audit() == []
