"""Reclaims of lent GPUs: the owner's processes in its samples (the worker's round), and spotNotice.

The samples are written as rows here; tests/api/test_api_reclaim_processes.py sends them through
the node report.
"""

from datetime import timedelta

import pytest
from django.contrib.auth.models import User

from agents.assignments import assignments
from capacity import services
from capacity.audit import audit
from capacity.models import DeviceBooking, Reservation
from capacity.models.reservations import IDLE
from inventory.models import Device, DeviceSample, Pool
from policy.models import PoolPolicy
from policy.notice import finish_due
from policy.reclaim import reclaim, reclaim_lapsed
from policy.reclaim_processes import reclaim_for_processes
from webhooks.models import Event, Subscription

from booking import NOW, ask, reserve

LATER = NOW + timedelta(minutes=5)
NOTICE = timedelta(minutes=10)


@pytest.fixture
def lent(tenant, other_tenant, make_node):
    """acme's idle 2-GPU booking for a day, lent to globex's spot work for four hours."""
    make_node("node-a", gpus=2)
    PoolPolicy.objects.create(pool=Pool.objects.get(slug="lab-pool"), lend_idle=True)
    owner = reserve(ask(2, hours=24)).reservation
    idle = {"type": IDLE, "status": "True", "reason": "LowUtilization", "message": "0 %"}
    Reservation.objects.filter(pk=owner.pk).update(conditions=[idle])
    work = reserve(ask(2, tenant="globex", priority="spot", hours=4), now=NOW).reservation
    assert work.lent_from == [owner.pk]
    return owner, work


def sample(index, owners, minute=LATER, processes=None):
    device = Device.objects.get(uuid=f"GPU-node-a-{index}")
    count = len(owners or []) if processes is None else processes
    DeviceSample.objects.create(
        device=device, minute=minute, gpu_percent=30, processes=count, process_owners=owners
    )


def notice(spot_notice=NOTICE):
    PoolPolicy.objects.filter(pool__slug="lab-pool").update(spot_notice=spot_notice)


def refreshed(reservation):
    reservation.refresh_from_db()
    return reservation


def test_the_worker_takes_lent_work_back_when_a_sample_shows_the_owners_process(lent):
    owner, work = lent
    sample(0, [work.pk])
    sample(1, [owner.pk])
    assert reclaim_for_processes(now=LATER) == (work.pk,)
    assert refreshed(work).status == "preempted"
    assert work.conditions[0]["cause"] == "processes"
    assert refreshed(owner).condition(IDLE) is None
    assert all(b.during.upper <= LATER for b in DeviceBooking.objects.filter(layer=1))
    assert audit() == []


def test_samples_that_attribute_nothing_or_only_the_lent_work_reclaim_nothing(lent):
    owner, work = lent
    sample(0, None, processes=3)  # an older agent: three processes, whose it does not say
    sample(1, [work.pk])
    assert reclaim_for_processes(now=LATER) == ()
    assert refreshed(work).status == "placed"
    assert refreshed(owner).condition(IDLE) is not None


def test_a_stale_sample_says_nothing_of_now(lent):
    owner, work = lent
    sample(1, [owner.pk], minute=LATER - timedelta(minutes=3))
    assert reclaim_for_processes(now=LATER) == ()
    assert refreshed(work).status == "placed"


def test_a_reclaim_with_a_spot_notice_leaves_the_gpus_shared_until_preempt_at(lent):
    owner, work = lent
    notice()
    done = reclaim(owner.pk, now=LATER)
    at = LATER + NOTICE
    assert (done.preempted, done.preempt_at) == ((work.pk,), at)
    assert refreshed(work).status == "placed"
    [condition] = [c for c in work.conditions if c["type"] == "PreemptAt"]
    assert condition["reason"] == "ReclaimedByOwner"
    assert condition["message"] == (
        "reclaimed by the owner of the lent GPUs at 2026-12-02T12:15Z (spotNotice 10m)"
    )
    assert refreshed(owner).condition(IDLE) is None
    assert all(b.during.upper == at for b in DeviceBooking.objects.filter(layer=1))
    # Meanwhile both agents read the lent work beside the owner, with when it leaves.
    feed, _tag = assignments("node-a", now=LATER + timedelta(minutes=1))
    assert {d["lent"]["preemptAt"] for d in feed["devices"]} == {"2026-12-02T12:15:00Z"}
    # A second reclaim during the notice gives no second one, and says when the work leaves.
    again = reclaim(owner.pk, now=LATER + timedelta(minutes=2))
    assert (again.preempted, again.preempt_at) == ((), at)
    assert refreshed(work).conditions == [*work.conditions]
    assert finish_due(at) == [work.pk]
    assert refreshed(work).status == "preempted" and work.conditions[0]["reason"] == "ReclaimedByOwner"
    after, _tag = assignments("node-a", now=at)
    assert [d["lent"] for d in after["devices"]] == [None, None]
    assert audit() == []


def test_the_notice_of_a_reclaim_is_sent_as_reservation_preempted_once(lent):
    owner, work = lent
    Subscription.objects.create(
        owner=User.objects.create_user("ops", is_staff=True),
        url="https://hooks.example/x",
        events=["reservation.preempted"],
        secret="s",
    )
    notice()
    reclaim(owner.pk, now=LATER)
    reclaim(owner.pk, now=LATER + timedelta(minutes=1))
    finish_due(LATER + NOTICE)
    sent = Event.objects.filter(reservation_id=work.pk, type="reservation.preempted")
    assert list(sent.values_list("reason", flat=True)) == [
        "reclaimed by the owner of the lent GPUs at 2026-12-02T12:15Z (spotNotice 10m)"
    ]


def test_the_worker_gives_notice_when_the_owners_process_shows_and_not_again(lent):
    _owner, work = lent
    notice()
    sample(1, [0])  # a process the agent could not attribute: the owner's
    assert reclaim_for_processes(now=LATER) == (work.pk,)
    assert refreshed(work).status == "placed"
    assert reclaim_for_processes(now=LATER) == ()
    assert reclaim_lapsed(LATER) == 0  # under notice already: not taken back again
    assert refreshed(work).status == "placed"


def test_an_owner_ending_during_the_notice_leaves_the_lent_work_its_notice(lent):
    owner, work = lent
    notice()
    reclaim(owner.pk, now=LATER)
    services.release(owner.pk, now=LATER + timedelta(minutes=1))
    assert refreshed(work).status == "placed"
    assert finish_due(LATER + NOTICE) == [work.pk]
    assert audit() == []


def test_releasing_the_owner_takes_lent_work_back_at_once_even_with_a_notice(lent):
    owner, work = lent
    notice()
    services.release(owner.pk, now=LATER)
    assert refreshed(work).status == "preempted"
    assert audit() == []


def test_a_gpu_whose_owner_runs_a_process_is_not_lent(tenant, other_tenant, make_node):
    make_node("node-a", gpus=2)
    PoolPolicy.objects.create(pool=Pool.objects.get(slug="lab-pool"), lend_idle=True)
    owner = reserve(ask(2, hours=24)).reservation
    idle = {"type": IDLE, "status": "True", "reason": "LowUtilization", "message": "0 %"}
    Reservation.objects.filter(pk=owner.pk).update(conditions=[idle])
    sample(0, None, minute=NOW - timedelta(minutes=1), processes=1)  # idle, but holding memory
    work = reserve(ask(2, tenant="globex", priority="spot", hours=4), now=NOW).reservation
    assert work.status == "pending"
    one = reserve(ask(1, tenant="globex", priority="spot", hours=4), now=NOW).reservation
    assert one.status == "placed"
    assert list(DeviceBooking.objects.filter(layer=1).values_list("device__uuid", flat=True)) == [
        "GPU-node-a-1"
    ]
