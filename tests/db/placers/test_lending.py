"""Lending idle GPUs: spot work runs on an Idle owner's booked GPUs, which the owner keeps."""

from capacity.audit import audit
from capacity.models import DeviceBooking, Reservation
from capacity.models.reservations import IDLE
from inventory.models import Pool
from policy.models import PoolPolicy

from booking import ask, reserve


def lend_idle(on=True, pool="lab-pool"):
    PoolPolicy.objects.update_or_create(pool=Pool.objects.get(slug=pool), defaults={"lend_idle": on})


def mark_idle(reservation):
    condition = {"type": IDLE, "status": "True", "reason": "LowUtilization", "message": "0 %"}
    Reservation.objects.filter(pk=reservation.pk).update(conditions=[condition])


def spot(gpus, hours=4, **kw):
    return reserve(ask(gpus, priority="spot", hours=hours, **kw)).reservation


def test_spot_work_runs_on_an_idle_owners_gpus_which_stay_booked(tenant, other_tenant, make_node):
    make_node("node-a", gpus=2)
    lend_idle()
    owner = reserve(ask(2, hours=24)).reservation
    mark_idle(owner)
    lent = spot(2, tenant="globex")
    assert lent.status == "placed"
    assert lent.lent_from == [owner.pk]
    lent.refresh_from_db()
    assert lent.lent_from == [owner.pk]
    owner.refresh_from_db()
    assert owner.status == "placed"
    layers = sorted(DeviceBooking.objects.values_list("layer", flat=True))
    assert layers == [0, 0, 1, 1]
    assert audit() == []


def test_a_pool_that_does_not_lend_leaves_spot_work_pending(tenant, make_node):
    make_node("node-a", gpus=2)
    lend_idle(on=False)
    owner = reserve(ask(2)).reservation
    mark_idle(owner)
    assert spot(2).status == "pending"


def test_an_owner_who_keeps_its_idle_booking_lends_nothing(tenant, make_node):
    make_node("node-a", gpus=2)
    lend_idle()
    owner = reserve(ask(2)).reservation
    mark_idle(owner)
    Reservation.objects.filter(pk=owner.pk).update(keep_when_idle=True)
    assert spot(2).status == "pending"


def test_a_busy_owner_lends_nothing(tenant, make_node):
    make_node("node-a", gpus=2)
    lend_idle()
    reserve(ask(2))
    assert spot(1).status == "pending"


def test_spot_work_longer_than_the_owners_window_is_not_lent(tenant, make_node):
    make_node("node-a", gpus=2)
    lend_idle()
    owner = reserve(ask(2, hours=4)).reservation
    mark_idle(owner)
    assert spot(1, hours=5).status == "pending"


def test_a_lent_gpu_is_lent_once(tenant, other_tenant, make_node):
    make_node("node-a", gpus=2)
    lend_idle()
    owner = reserve(ask(2)).reservation
    mark_idle(owner)
    assert spot(2, tenant="globex").status == "placed"
    assert spot(1).status == "pending"
    assert DeviceBooking.objects.filter(layer=1).count() == 2


def test_free_capacity_comes_before_lent_gpus(tenant, make_node):
    make_node("node-a", gpus=2)
    make_node("node-b", gpus=2)
    lend_idle()
    owner = reserve(ask(2)).reservation
    mark_idle(owner)
    free = spot(2)
    assert (free.status, free.lent_from) == ("placed", [])
    assert not DeviceBooking.objects.filter(layer=1).exists()


def test_the_usage_report_counts_the_gpu_hours_spot_work_ran_on_lent_gpus(tenant, other_tenant, make_node):
    from datetime import timedelta

    from capacity.access import EVERYONE
    from usage.report import usage_report

    from booking import NOW

    make_node("node-a", gpus=2)
    lend_idle()
    owner = reserve(ask(2)).reservation
    mark_idle(owner)
    spot(2, tenant="globex", hours=4)
    day = NOW.date()
    rows = usage_report(day, day, ["tenant"], "day", EVERYONE, now=NOW + timedelta(hours=3))
    by_tenant = {r.keys["tenant"]: r for r in rows}
    assert by_tenant["globex"].lent == 6.0 and by_tenant["globex"].booked == 6.0
    assert by_tenant["acme"].lent == 0.0 and by_tenant["acme"].booked == 6.0
    assert by_tenant["globex"].as_dict()["gpuHoursLent"] == 6.0


def test_the_workers_retry_lends_a_waiting_spot_request_the_gpus_of_an_owner_gone_idle(
    tenant, other_tenant, make_node
):
    from capacity import services
    from inventory.models import Pool as PoolModel

    make_node("node-a", gpus=2)
    lend_idle()
    owner = reserve(ask(2)).reservation
    waiting = spot(2, tenant="globex")
    assert waiting.status == "pending"
    mark_idle(owner)
    from booking import NOW, config

    pool_pk = PoolModel.objects.get(slug="lab-pool").pk
    assert services.retry_pending([pool_pk], now=NOW, config=config()) == 1
    waiting.refresh_from_db()
    assert (waiting.status, waiting.lent_from) == ("placed", [owner.pk])
