"""Lending through the pool-lease placer: a queued spot request that finds no room runs on lent GPUs."""

import psycopg
import pytest
from django.db import connection

from capacity import services
from capacity.audit import audit
from capacity.models import DeviceBooking, Reservation
from capacity.models.reservations import IDLE
from capacity.placers.batch import place_batch
from inventory.models import Pool
from policy.models import PoolPolicy

from booking import NOW, ask, config

pytestmark = pytest.mark.django_db(transaction=True)


def lease():
    return config(placer="pool-lease")


@pytest.fixture
def idle_owner(tenant, other_tenant, make_node):
    """acme's 2-GPU booking on node-a for a day (placed inline), Idle, in a pool that lends."""
    make_node("node-a", gpus=2)
    PoolPolicy.objects.create(pool=Pool.objects.get(slug="lab-pool"), lend_idle=True)
    owner = services.reserve(ask(2, hours=24), config=config(), now=NOW).reservation
    idle = {"type": IDLE, "status": "True", "reason": "LowUtilization", "message": "0 %"}
    Reservation.objects.filter(pk=owner.pk).update(conditions=[idle])
    return owner


def queue(gpus, tenant="globex"):
    data = ask(gpus, tenant=tenant, priority="spot", hours=4)
    return services.reserve(data, config=lease(), now=NOW).reservation


def test_a_batch_lends_an_idle_owners_gpus_to_queued_spot_work(idle_owner):
    work = queue(2)
    assert work.status == "pending"  # queued for the batch
    result = place_batch(Pool.objects.get(slug="lab-pool").pk, lease(), now=NOW)
    assert result.placed == [work.pk]
    work.refresh_from_db()
    assert work.status == "placed" and work.lent_from == [idle_owner.pk]
    assert not any(c["type"] == "Queued" for c in work.conditions)
    assert sorted(DeviceBooking.objects.values_list("layer", flat=True)) == [0, 0, 1, 1]
    assert audit() == []


def test_a_batch_in_a_pool_that_does_not_lend_leaves_spot_work_pending(idle_owner):
    PoolPolicy.objects.filter(pool__slug="lab-pool").update(lend_idle=False)
    work = queue(1)
    result = place_batch(Pool.objects.get(slug="lab-pool").pk, lease(), now=NOW)
    assert result.pending == [work.pk]
    assert DeviceBooking.objects.filter(layer=1).count() == 0


def test_a_lender_another_transaction_holds_is_skipped_not_waited_for(idle_owner):
    """A reclaim holding the owner's row: the batch, holding the pool, leaves the work pending."""
    work = queue(2)
    # The test database's own parameters: the embedded server listens on a socket of its own.
    other = psycopg.connect(**{k: v for k, v in connection.get_connection_params().items() if k != "context"})
    try:
        other.execute("BEGIN")
        other.execute("SELECT 1 FROM capacity_reservation WHERE id = %s FOR UPDATE", [idle_owner.pk])
        result = place_batch(Pool.objects.get(slug="lab-pool").pk, lease(), now=NOW)
        assert result.pending == [work.pk]
        assert DeviceBooking.objects.filter(layer=1).count() == 0
    finally:
        other.rollback()
        other.close()
    connection.close()
