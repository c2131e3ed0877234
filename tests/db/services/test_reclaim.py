"""Given back on demand: lent spot work is preempted when its owner reclaims, is busy again, or ends."""

from datetime import timedelta

import pytest

from capacity import services
from capacity.access import Scope
from capacity.audit import audit
from capacity.models import DeviceBooking, Reservation
from capacity.models.reservations import IDLE
from capacity.placement import CapacityError
from inventory.models import Pool
from policy.models import PoolPolicy
from policy.reclaim import reclaim, reclaim_lapsed

from booking import NOW, ask, reserve

LATER = NOW + timedelta(minutes=5)


@pytest.fixture
def lent(tenant, other_tenant, make_node):
    """acme's idle 2-GPU booking for a day, lent to globex's spot work for four hours."""
    make_node("node-a", gpus=2)
    PoolPolicy.objects.create(pool=Pool.objects.get(slug="lab-pool"), lend_idle=True)
    owner = reserve(ask(2, hours=24)).reservation
    idle = {"type": IDLE, "status": "True", "reason": "LowUtilization", "message": "0 %"}
    Reservation.objects.filter(pk=owner.pk).update(conditions=[idle])
    work = reserve(ask(2, tenant="globex", priority="spot", hours=4)).reservation
    assert work.lent_from == [owner.pk]
    return owner, work


def status(reservation):
    reservation.refresh_from_db()
    return reservation.status


def test_the_owner_reclaiming_preempts_the_lent_work_and_ends_idle(lent):
    owner, work = lent
    done = reclaim(owner.pk, now=LATER)
    assert done.preempted == (work.pk,)
    assert status(work) == "preempted"
    [condition] = work.conditions
    assert (condition["type"], condition["reason"]) == ("Preempted", "ReclaimedByOwner")
    assert condition["message"] == "reclaimed by the owner of the lent GPUs at 2026-12-02T12:05Z"
    assert status(owner) == "placed" and owner.condition(IDLE) is None
    # The owner's bookings stand; the lent ones end at the reclaim.
    assert all(b.during.upper <= LATER for b in DeviceBooking.objects.filter(layer=1))
    assert DeviceBooking.objects.filter(layer=0).count() == 2
    assert audit() == []


def test_reclaiming_a_booking_that_lends_nothing_has_nothing_to_do(lent):
    _owner, work = lent
    done = reclaim(work.pk, now=LATER)
    assert done.preempted == ()
    assert status(work) == "placed"


def test_another_tenant_reclaiming_the_booking_is_not_found(lent):
    owner, work = lent
    with pytest.raises(CapacityError) as err:
        reclaim(owner.pk, scope=Scope(frozenset({"globex"})), now=LATER)
    assert err.value.code == "NOT_FOUND"
    assert status(work) == "placed"


def test_the_worker_takes_lent_work_back_once_the_owner_is_no_longer_idle(lent):
    owner, work = lent
    assert reclaim_lapsed(LATER) == 0
    Reservation.objects.filter(pk=owner.pk).update(conditions=[])
    assert reclaim_lapsed(LATER) == 1
    assert status(work) == "preempted"
    assert work.conditions[0]["message"].startswith(
        "reclaimed: the owner of the lent GPUs is using them again"
    )
    assert audit() == []


def test_the_worker_takes_lent_work_back_once_the_owner_keeps_its_booking(lent):
    owner, work = lent
    Reservation.objects.filter(pk=owner.pk).update(keep_when_idle=True)
    assert reclaim_lapsed(LATER) == 1
    assert status(work) == "preempted"


def test_releasing_the_owner_ends_the_lent_work_with_it(lent):
    owner, work = lent
    services.release(owner.pk, now=LATER)
    assert status(work) == "preempted"
    assert work.conditions[0]["cause"] == "ended"
    assert all(b.during.upper <= LATER for b in DeviceBooking.objects.all())
    assert audit() == []


def test_regular_work_then_books_the_gpus_the_owner_gave_up(lent):
    owner, _work = lent
    services.release(owner.pk, now=LATER)
    placed = reserve(ask(2, start=1, hours=2))
    assert placed.reservation.status == "placed" and placed.outcome.preempted == ()
    assert audit() == []


def test_the_owners_agent_reads_its_gpus_as_its_own_alone_once_reclaimed(lent):
    from agents.assignments import assignments

    owner, work = lent
    feed, tag = assignments("node-a", now=NOW + timedelta(minutes=1))
    assert {d["now"]["reservationId"] for d in feed["devices"]} == {owner.pk}
    assert {d["lent"]["reservationId"] for d in feed["devices"]} == {work.pk}
    reclaim(owner.pk, now=LATER)
    after, after_tag = assignments("node-a", now=LATER)
    assert [d["lent"] for d in after["devices"]] == [None, None]
    assert {d["now"]["reservationId"] for d in after["devices"]} == {owner.pk}
    assert all(d["now"]["idle"] is None for d in after["devices"])
    assert after_tag != tag


@pytest.mark.allow_drift  # the owner's bookings are cut beneath the services, as a move would leave them
def test_the_worker_takes_lent_work_back_once_the_owner_no_longer_holds_the_lent_gpus(lent):
    from capacity.models import Allocation
    from capacity.placers.ending import end_allocations

    owner, work = lent
    end_allocations(Allocation.objects.filter(reservation=owner), LATER)
    assert reclaim_lapsed(LATER) == 1
    assert status(work) == "preempted"
    assert work.conditions[0]["cause"] == "ended"


def test_the_hours_lent_work_ran_are_counted_when_it_is_taken_back(lent, django_capture_on_commit_callbacks):
    from metrics.events import GPU_HOURS_LENT, LENT_GPU_SECONDS

    owner, _work = lent
    before = GPU_HOURS_LENT.labels("lab-pool")._value.get()
    seconds_before = LENT_GPU_SECONDS.labels("lab-pool")._value.get()
    with django_capture_on_commit_callbacks(execute=True):
        reclaim(owner.pk, now=NOW + timedelta(minutes=30))
    assert GPU_HOURS_LENT.labels("lab-pool")._value.get() - before == pytest.approx(1.0)  # 2 GPUs, 30 min
    assert LENT_GPU_SECONDS.labels("lab-pool")._value.get() - seconds_before == pytest.approx(3600.0)
