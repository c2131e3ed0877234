"""Quota loads: each tenant's charges summed by the day they end, kept by triggers, bound the guard."""

from datetime import timedelta

import pytest
from django.db import connection

from capacity import services
from capacity.audit import audit, load_drift
from capacity.models import Quota, QuotaLoad
from capacity.placement import CapacityError

from booking import MS, NOW, ask, reserve

DAY_MS = 86_400_000
TODAY = MS // DAY_MS


def loads(resource="gpu"):
    """Return {days after today: amount} of the tenant's non-zero gpu loads."""
    return {
        row.end_day - TODAY: row.amount
        for row in QuotaLoad.objects.filter(resource=resource).exclude(amount=0).order_by("end_day")
    }


def test_a_charge_adds_to_the_load_of_the_day_it_ends_and_a_release_moves_or_removes_it(tenant, make_node):
    """
    NOW is 12:00. 2 GPUs until 12:00 tomorrow, 1 GPU for two days from tomorrow at 18:00.
    Releasing the first at NOW + 1 h cuts its charge to end today; releasing the second before
    it starts deletes its charge.
    """
    make_node("node-a", gpus=4)
    first = reserve(ask(2, hours=24)).reservation
    second = reserve(ask(1, start=30, hours=48)).reservation
    assert loads() == {1: 2, 3: 1}
    services.release(first.pk, now=NOW + timedelta(hours=1))
    assert loads() == {0: 2, 3: 1}
    services.release(second.pk, now=NOW + timedelta(hours=1))
    assert loads() == {0: 2}
    assert audit() == []


def test_a_refused_charge_adds_no_load(tenant, make_node):
    make_node("node-a", gpus=4)
    Quota.objects.create(tenant=tenant, resource="gpu", limit=2)
    reserve(ask(2))
    with pytest.raises(CapacityError):
        reserve(ask(1))
    assert loads() == {1: 2}
    assert audit() == []


def test_charges_past_the_limit_on_later_days_still_admit_a_request_they_do_not_overlap(tenant, make_node):
    """
    acme may hold 2 GPUs. 2 GPUs are booked for tomorrow afternoon, so the loads from today on
    (2) plus 2 pass the limit: the guard reads the charges themselves and finds none this morning.
    """
    make_node("node-a", gpus=4)
    Quota.objects.create(tenant=tenant, resource="gpu", limit=2)
    reserve(ask(2, start=26, hours=4))
    assert reserve(ask(2, start=0, hours=4)).reservation.status == "placed"
    with pytest.raises(CapacityError) as refused:
        reserve(ask(1, start=27, hours=1))
    assert str(refused.value) == "quota exceeded for acme: gpu 2 used + 1 requested > limit 2"


def test_the_audit_reports_a_load_that_disagrees_with_the_charges(tenant, make_node):
    make_node("node-a", gpus=4)
    reserve(ask(2))
    QuotaLoad.objects.filter(resource="gpu").update(amount=5)
    assert load_drift() == [
        f"quota load {tenant.pk}/gpu/day {TODAY + 1}: stored 5, charges sum to 2",
    ]
    QuotaLoad.objects.filter(resource="gpu").update(amount=2)
    QuotaLoad.objects.create(tenant_id=tenant.pk, resource="gpu", end_day=TODAY + 5, amount=3)
    assert load_drift() == [f"quota load {tenant.pk}/gpu/day {TODAY + 5}: stored 3, charges sum to 0"]
    QuotaLoad.objects.filter(end_day=TODAY + 5).delete()
    assert audit() == []


def test_truncating_the_charges_empties_the_loads(tenant, make_node):
    make_node("node-a", gpus=4)
    reserve(ask(2))
    with connection.cursor() as cur:
        cur.execute("SET CONSTRAINTS ALL IMMEDIATE")  # no deferred checks pending in the test's transaction
        cur.execute("TRUNCATE capacity_reservation CASCADE")  # the charges go with it
    assert not QuotaLoad.objects.exists()
    assert audit() == []
