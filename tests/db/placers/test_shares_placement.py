"""Placement in a pool with shares: borrowing past a guarantee, its limits, and reclaim.

lab-pool: node-a and node-b, 4 GPUs each (8 GPUs). Shares are set per test.
"""

import pytest

from capacity import services
from capacity.audit import audit
from capacity.models import Reservation
from capacity.placers.batch import place_batch
from capacity.placers.take_back import RECLAIMED_REASON
from policy.borrowing import BORROWED, BORROWED_REASON
from policy.shares import set_share

from booking import NOW, ask, atoms_of, config, reserve

pytestmark = pytest.mark.django_db


@pytest.fixture
def lab(make_node, tenant, other_tenant):
    make_node("node-a", gpus=4)
    make_node("node-b", gpus=4)


def test_a_booking_within_the_guarantee_borrows_nothing(lab):
    set_share("lab-pool", "acme", 4, None, None)
    r = reserve(ask(4)).reservation
    assert (r.status, r.borrowed_gpus, r.conditions) == ("placed", 0.0, [])


def test_a_booking_past_the_guarantee_borrows_and_says_from_how_many_tenants(lab):
    set_share("lab-pool", "acme", 2, None, None)
    set_share("lab-pool", "globex", 6, None, None)
    r = reserve(ask(3)).reservation
    r.refresh_from_db()
    assert (r.status, r.borrowed_gpus) == ("placed", 1.0)
    [condition] = r.conditions
    assert (condition["type"], condition["reason"]) == (BORROWED, BORROWED_REASON)
    assert condition["message"] == (
        "borrows 1 GPU past the team's guarantee of 2 in lab-pool, from 1 other team's unused"
        " guarantee; a guaranteed booking may reclaim them"
    )
    assert "globex" not in str(condition)


def test_gpus_nobody_is_guaranteed_are_borrowed_first(lab):
    set_share("lab-pool", "acme", 2, None, None)
    r = reserve(ask(3)).reservation
    r.refresh_from_db()
    assert r.borrowed_gpus == 1.0
    assert "from the pool's GPUs that nobody is guaranteed" in r.conditions[0]["message"]


def test_the_borrowing_limit_keeps_a_booking_pending_and_writes_nothing(lab):
    set_share("lab-pool", "acme", 2, 1, None)
    r = reserve(ask(4)).reservation
    assert r.status == "pending"
    assert r.conditions[0]["message"] == (
        "lab-pool: borrowingLimitGpus: the booking would take the team 2 GPUs past its guarantee"
        " of 2; it may borrow 1 GPU"
    )
    assert not r.allocations.exists()
    assert audit() == []


def test_a_guarantee_its_tenant_does_not_lend_is_never_borrowed(lab):
    set_share("lab-pool", "acme", 2, None, None)
    set_share("lab-pool", "globex", 6, None, 0)
    assert reserve(ask(2)).reservation.status == "placed"
    r = reserve(ask(1)).reservation
    assert r.status == "pending"
    assert "other teams' guarantees keep 6 of the pool's 8 GPUs" in r.conditions[0]["message"]


def test_a_guaranteed_booking_reclaims_borrowed_gpus_and_never_what_is_guaranteed(lab):
    """globex holds its 4 and borrows acme's 4; acme then asks for its 4: the borrowing goes."""
    set_share("lab-pool", "acme", 4, None, None)
    set_share("lab-pool", "globex", 4, None, None)
    own = reserve(ask(4, tenant="globex")).reservation
    borrowing = reserve(ask(4, tenant="globex")).reservation
    borrowing.refresh_from_db()
    assert (borrowing.status, borrowing.borrowed_gpus) == ("placed", 4.0)
    mine = reserve(ask(4)).reservation
    assert mine.status == "placed"
    own.refresh_from_db()
    borrowing.refresh_from_db()
    assert own.status == "placed"
    assert borrowing.status == "preempted"
    [condition] = borrowing.conditions
    assert condition["reason"] == RECLAIMED_REASON
    assert condition["message"].startswith("reclaimed by the pool's guaranteed shares at ")
    # Past its guarantee now, acme waits: globex's guaranteed booking is never taken.
    assert reserve(ask(1)).reservation.status == "pending"
    own.refresh_from_db()
    assert own.status == "placed"
    assert audit() == []


def test_a_booking_past_its_guarantee_never_reclaims(lab):
    set_share("lab-pool", "acme", 2, None, None)
    set_share("lab-pool", "globex", 2, None, None)
    held = [reserve(ask(4, tenant="globex")).reservation for _ in "ab"]
    assert [r.status for r in held] == ["placed", "placed"]
    assert reserve(ask(3)).reservation.status == "pending"
    assert set(Reservation.objects.filter(pk__in=[r.pk for r in held]).values_list("status", flat=True)) == {
        "placed"
    }


def test_a_pool_without_shares_records_no_borrowing(lab):
    r = reserve(ask(4)).reservation
    assert (r.status, r.borrowed_gpus, r.conditions) == ("placed", 0.0, [])
    assert Reservation.objects.filter(borrowed_gpus__gt=0).count() == 0


def test_the_worked_example_of_docs_shares(make_node, tenant, other_tenant):
    """
    lab-pool: node-a and node-b, 8 GPUs each (16). acme is guaranteed 8, globex 6 lending at
    most 2; 2 GPUs are nobody's. The steps of docs/shares.md, "A worked example".
    """
    make_node("node-a", gpus=8)
    make_node("node-b", gpus=8)
    set_share("lab-pool", "acme", 8, None, None)
    set_share("lab-pool", "globex", 6, None, 2)

    own = reserve(ask(6, tenant="globex")).reservation
    assert (own.status, own.borrowed_gpus) == ("placed", 0.0)

    borrowing = reserve(ask(4, tenant="globex")).reservation
    borrowing.refresh_from_db()
    assert (borrowing.status, borrowing.borrowed_gpus) == ("placed", 4.0)
    assert "from 1 other team's unused guarantee" in borrowing.conditions[0]["message"]

    guaranteed = reserve(ask(8)).reservation
    assert guaranteed.status == "placed"
    borrowing.refresh_from_db()
    assert (borrowing.status, borrowing.conditions[0]["reason"]) == ("preempted", RECLAIMED_REASON)

    more = reserve(ask(2)).reservation
    more.refresh_from_db()
    assert (more.status, more.borrowed_gpus) == ("placed", 2.0)
    assert "from the pool's GPUs that nobody is guaranteed" in more.conditions[0]["message"]

    assert reserve(ask(1, tenant="globex")).reservation.status == "pending"
    own.refresh_from_db()
    assert own.status == "placed"
    assert audit() == []


def test_a_preview_says_which_borrowed_work_a_guaranteed_request_would_reclaim(lab):
    set_share("lab-pool", "acme", 4, None, None)
    set_share("lab-pool", "globex", 4, None, None)
    reserve(ask(4, tenant="globex"))
    borrowing = reserve(ask(4, tenant="globex")).reservation
    as_acme = services.preview(ask(4), now=NOW, scope=services.Scope(frozenset({"acme"})))
    assert as_acme.fits is False
    assert as_acme.preemptible == {
        "reservations": [],
        "others": 1,
        "nodes": [atoms_of(borrowing)[0][0]],
        "startsAt": NOW,
        "reclaims": 1,
    }
    reserve(ask(4))
    # Past acme's guarantee now, nothing is offered.
    assert services.preview(ask(1), now=NOW).preemptible is None


@pytest.mark.django_db(transaction=True)
def test_a_batch_commits_what_stays_within_guarantees_and_judges_the_borrower_on_its_own(lab):
    set_share("lab-pool", "acme", 4, None, None)
    set_share("lab-pool", "globex", 2, None, None)
    lease = config(placer="pool-lease")
    queued = [
        services.reserve(ask(g, tenant=t), now=NOW, config=lease).reservation
        for t, g in [("acme", 2), ("acme", 3), ("globex", 2)]
    ]
    result = place_batch(queued[0].pool_id, lease, now=NOW)
    assert sorted(result.placed) == sorted(r.pk for r in queued)
    borrowed = [Reservation.objects.get(pk=r.pk).borrowed_gpus for r in queued]
    assert borrowed == [0.0, 1.0, 0.0]
    assert audit() == []
