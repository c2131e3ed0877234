"""Preemption under concurrency: regular requests racing for the same spot work, spot racing a preemption."""

import pytest

from capacity import services
from capacity.audit import audit
from capacity.models import Reservation

from booking import ask, booked_at, reserve
from racing import run_threads

pytestmark = pytest.mark.django_db(transaction=True)


def assert_every_preemption_accounted_for():
    """Each preempted reservation names a placed regular reservation that took it back."""
    for victim in Reservation.objects.filter(status="preempted"):
        [condition] = victim.conditions
        taker = Reservation.objects.get(pk=condition["reservationId"])
        assert (taker.status, taker.priority, victim.priority) == ("placed", "regular", "spot")


def test_regular_requests_racing_for_the_same_spot_work_take_each_spot_booking_once(
    tenant, other_tenant, make_node
):
    """
    node-a, node-b: 4 GPUs each, all globex's spot work. Six connections of acme ask for 4 GPUs
    at once, five rounds: each round two are placed (each preempting one spot reservation), four wait.
    """
    make_node("node-a", gpus=4)
    make_node("node-b", gpus=4)
    for round_ in range(5):
        victims = [
            reserve(ask(4, tenant="globex", priority="spot", start=round_ * 48)).reservation for _ in "ab"
        ]
        statuses = []

        def client(i, round_=round_, statuses=statuses):
            statuses.append(reserve(ask(4, start=round_ * 48)).reservation.status)

        assert run_threads(6, client) == []
        assert sorted(statuses) == ["pending"] * 4 + ["placed"] * 2
        assert {v.pk for v in victims} == set(
            Reservation.objects.filter(status="preempted", pk__in=[v.pk for v in victims]).values_list(
                "pk", flat=True
            )
        )
    assert_every_preemption_accounted_for()
    assert audit() == []


def test_a_spot_placement_racing_a_preemption_never_double_books(tenant, other_tenant, make_node):
    """
    node-a: 4 GPUs, 2 held by globex's spot work. At once: acme asks for 4 regular GPUs (it must
    preempt) and globex for 2 more spot GPUs (they are free). Ten rounds, each in its own window.
    Either the regular request is placed and every spot booking of the window gave way, or the
    spot placement won the race: then the regular request waits (a lost race, as the spec has it)
    and its refused preemption changed nothing.
    """
    make_node("node-a", gpus=4)
    for round_ in range(10):
        first = reserve(ask(2, tenant="globex", priority="spot", start=round_ * 48)).reservation
        outcomes = {}

        def client(i, round_=round_, outcomes=outcomes):
            if i == 0:
                outcomes["regular"] = reserve(ask(4, start=round_ * 48)).reservation
            else:
                outcomes["spot"] = reserve(
                    ask(2, tenant="globex", priority="spot", start=round_ * 48)
                ).reservation

        assert run_threads(2, client) == []
        regular, second = outcomes["regular"], outcomes["spot"]
        first.refresh_from_db()
        second.refresh_from_db()
        if regular.status == "placed":
            assert first.status == "preempted"
            assert second.status in ("pending", "preempted")
        else:
            assert regular.status == "pending"
            # Planned again without the node it lost it on (spec), nothing else was left.
            assert "excluded: taken by a concurrent booking" in regular.condition("Unschedulable")["message"]
            assert (first.status, second.status) == ("placed", "placed")
    # Which side wins each round is up to the scheduler (a loaded machine can give every round to
    # spot); both outcomes are checked above.
    assert_every_preemption_accounted_for()
    assert audit() == []


def test_a_release_racing_a_preemption_of_the_same_spot_work_changes_nothing_twice(
    tenant, other_tenant, make_node
):
    """globex releases its spot work while acme's regular request preempts it: one of the two ends it,
    and the regular request is placed (at once, or by the next retry when it planned on a stale read)."""
    make_node("node-a", gpus=2)
    for round_ in range(10):
        victim = reserve(ask(2, tenant="globex", priority="spot", start=round_ * 48)).reservation
        placed = []

        def client(i, round_=round_, victim=victim, placed=placed):
            if i == 0:
                placed.append(reserve(ask(2, start=round_ * 48)).reservation.status)
            else:
                services.release(victim.pk, now=booked_at(ask(2, start=round_ * 48)))

        assert run_threads(2, client) == []
        victim.refresh_from_db()
        assert victim.status in ("released", "preempted")
        if placed != ["placed"]:
            # The release came between the request's plan and its preemption search: it planned
            # on a moment-old read and waits; the next retry (the worker's) places it.
            assert (placed, victim.status) == (["pending"], "released")
            assert services.retry_pending([victim.pool_id], now=booked_at(ask(2, start=round_ * 48))) == 1
    assert_every_preemption_accounted_for()
    assert audit() == []
