"""run_placer's worker survives losing its database connection and carries on.

    n1: [GPU0 GPU1 GPU2 GPU3]    four 1-GPU requests and one 2-GPU request queued, same window
    blocker: another transaction holding a lock the batch needs (GPU3's booking, or the pool row)

The worker's backend is terminated while its batch waits on the blocker, mid-commit or mid-batch.
What the batch did rolls back with it; the worker backs off, connects again and places the four;
the 2-GPU request ends pending with its reason. The audit finds no drift.
"""

import logging
import threading
import time
from datetime import UTC, datetime

import pytest
from django.db import connection, transaction

from capacity import services
from capacity.audit import audit
from capacity.models import Allocation, DeviceBooking, Reservation
from capacity.models.reservations import QUEUED
from capacity.worker import serve
from inventory.models import Device, Node, Pool

from booking import config, from_real_now
from racing import lock_waiter
from tenants import make_tenant

pytestmark = pytest.mark.django_db(transaction=True)
HOUR = 3_600_000


def ask(start, gpus=1):
    return {
        "tenantId": "acme",
        "poolId": "lab-pool",
        "devices": [{"class": "gpu", "count": gpus}],
        "during": {"start": start, "end": start + 4 * HOUR},
    }


def hold_gpu3(start):
    """Book GPU3 over the window in a transaction of its own (left open)."""
    node = Node.objects.get(name="n1")
    lo = datetime.fromtimestamp(start / 1000, UTC)
    hi = datetime.fromtimestamp((start + 4 * HOUR) / 1000, UTC)
    held = Allocation.objects.create(instance_id="blocker", node=node, starts_at=lo, ends_at=hi)
    DeviceBooking.objects.create(device=Device.objects.get(uuid="GPU-n1-3"), allocation=held, during=(lo, hi))


def hold_pool(_start):
    """Lock the pool row as an operator's change to the pool would."""
    list(Pool.objects.select_for_update().filter(slug="lab-pool"))


@pytest.mark.parametrize(
    ("hold", "fragment"),
    [(hold_gpu3, "WITH plans AS MATERIALIZED"), (hold_pool, "FROM inventory_pool WHERE id")],
    ids=["mid-commit", "mid-batch"],
)
def test_the_worker_reconnects_after_its_backend_is_killed_and_places_the_queue(
    pool, make_node, hold, fragment, caplog
):
    make_tenant("acme")
    make_node("n1", gpus=4)
    cfg = config(placer="pool-lease")
    start = int(from_real_now(1) * HOUR + datetime(2026, 12, 2, 12, tzinfo=UTC).timestamp() * 1000)
    singles = [services.reserve(ask(start), config=cfg).reservation.pk for _ in range(4)]
    pair = services.reserve(ask(start, gpus=2), config=cfg).reservation.pk
    assert Reservation.objects.filter(QUEUED).count() == 5

    held, release = threading.Event(), threading.Event()

    def blocker():
        try:
            with transaction.atomic():
                hold(start)
                held.set()
                release.wait(30)
                raise RuntimeError("roll the blocker back")
        except RuntimeError:
            pass
        finally:
            connection.close()

    stop, failed = threading.Event(), []

    def worker():
        try:
            serve(cfg, interval=None, stop=stop)
        except Exception as err:  # the test fails on it below
            failed.append(err)
        finally:
            connection.close()

    holder = threading.Thread(target=blocker)
    holder.start()
    assert held.wait(10)
    placer = threading.Thread(target=worker)
    with caplog.at_level(logging.WARNING, logger="capacity.worker"):
        placer.start()
        pid = lock_waiter(fragment)
        with connection.cursor() as cur:
            cur.execute("SELECT pg_terminate_backend(%s)", [pid])
        release.set()
        holder.join(30)
        deadline = time.monotonic() + 30
        while Reservation.objects.filter(QUEUED).exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        stop.set()
        placer.join(30)
    assert not placer.is_alive() and failed == []
    assert any("lost the database" in r.getMessage() for r in caplog.records)
    assert Reservation.objects.filter(pk__in=singles, status="placed").count() == 4
    waiting = Reservation.objects.get(pk=pair)
    assert waiting.status == "pending"
    assert waiting.condition("Unschedulable")["message"].startswith("no node fits (1 node): 1 × fits: ")
    assert DeviceBooking.objects.count() == 4
    assert audit() == []
