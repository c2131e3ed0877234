"""Spot work and preemption: regular work takes spot work back, the cheapest first; nothing else is taken."""

import dataclasses
from datetime import timedelta

import pytest

from capacity import services
from capacity.audit import audit
from capacity.models import DeviceBooking, Reservation
from capacity.placers.batch import place_queued

from booking import NOW, ask, config, held, reserve


def spot(gpus, **kw):
    return reserve(ask(gpus, priority="spot", **kw)).reservation


def allocation_nodes(reservation):
    return sorted({a["nodeId"] for a in services.allocations_of(reservation)})


def test_spot_work_places_on_free_capacity_like_regular_work(tenant, make_node):
    make_node("node-a", gpus=2)
    reservation = spot(2)
    assert (reservation.status, reservation.priority) == ("placed", "spot")
    assert held("gpu") == 2


def test_a_regular_request_that_fits_only_by_preempting_takes_the_spot_work_back(
    tenant, other_tenant, make_node
):
    """
    node-a: 4 GPUs, all globex's spot work for a day.
    node-b: 4 GPUs, 2 regular and 2 spot. acme asks for 4 GPUs: only node-a can give them.
    """
    make_node("node-a", gpus=4)
    make_node("node-b", gpus=4)
    victim = spot(4, tenant="globex")
    reserve(ask(2, tenant="globex"))
    spot(2, tenant="globex")
    result = reserve(ask(4))
    assert result.reservation.status == "placed"
    assert result.outcome.preempted == (victim.pk,)
    assert allocation_nodes(result.reservation) == ["node-a"]
    victim.refresh_from_db()
    assert (victim.status, victim.released_at) == ("preempted", NOW)
    [condition] = victim.conditions
    assert (condition["type"], condition["reason"], condition["reservationId"]) == (
        "Preempted",
        "PreemptedByRegular",
        result.reservation.pk,
    )
    # acme's reservation id is not globex's to read: operators have it as reservationId.
    assert condition["message"] == "preempted at 2026-12-02T12:00Z by regular work of another tenant"
    assert condition["byOwnTenant"] is False
    as_globex = services.redacted_conditions(victim.conditions, services.Scope(frozenset({"globex"})))
    assert "reservationId" not in as_globex[0] and "byOwnTenant" not in as_globex[0]
    assert services.redacted_conditions(victim.conditions, services.EVERYONE) == victim.conditions
    # Its bookings and quota end at the preemption; the other spot work is untouched.
    assert not DeviceBooking.objects.filter(allocation__reservation=victim, during__contains=NOW).exists()
    assert held("gpu", tenant="globex") == 4
    assert audit() == []


def test_the_node_that_preempts_the_fewest_device_hours_is_chosen(tenant, other_tenant, make_node):
    """node-a: spot 4 GPUs for 48 h (192 device-hours); node-b: spot 4 GPUs for 24 h (96): node-b."""
    make_node("node-a", gpus=4)
    make_node("node-b", gpus=4)
    long = spot(4, tenant="globex", hours=48)
    short = spot(4, tenant="globex", hours=24)
    assert (allocation_nodes(long), allocation_nodes(short)) == (["node-a"], ["node-b"])
    result = reserve(ask(4, hours=1))
    assert allocation_nodes(result.reservation) == ["node-b"]
    assert result.outcome.preempted == (short.pk,)


def test_only_the_spot_work_needed_is_preempted_the_cheapest_first(tenant, other_tenant, make_node):
    """node-a: 4 GPUs held by two spot reservations of 2 GPUs, for 10 h and 100 h. 2 GPUs take the first."""
    make_node("node-a", gpus=4)
    cheap = spot(2, tenant="globex", hours=10)
    dear = spot(2, tenant="globex", hours=100)
    result = reserve(ask(2, hours=5))
    assert result.outcome.preempted == (cheap.pk,)
    dear.refresh_from_db()
    assert dear.status == "placed"
    assert audit() == []


def test_spot_never_preempts_spot_and_regular_work_is_never_preempted(tenant, other_tenant, make_node):
    make_node("node-a", gpus=2)
    make_node("node-b", gpus=2)
    spot(2, tenant="globex")
    reserve(ask(2, tenant="globex"))
    assert spot(2).status == "pending"
    # Regular work would need node-b, which regular work holds: only node-a's spot work is taken.
    assert reserve(ask(2)).reservation.status == "placed"
    assert reserve(ask(1)).reservation.status == "pending"
    assert Reservation.objects.filter(status="preempted").count() == 1
    assert audit() == []


def test_preview_answers_fits_false_with_the_reservations_it_would_preempt(tenant, other_tenant, make_node):
    make_node("node-a", gpus=2)
    victim = spot(2, tenant="globex")
    preview = services.preview(ask(2), now=NOW)
    assert (preview.fits, preview.candidates) == (False, [])
    assert preview.reason == "no node fits (1 node): 1 × fits: 0 of 2 gpu free"
    assert preview.preemptible == {
        "reservations": [victim.pk],
        "others": 0,
        "nodes": ["node-a"],
        "startsAt": NOW,
    }
    # To acme, globex's spot work is counted, not named.
    as_acme = services.preview(ask(2), now=NOW, scope=services.Scope(frozenset({"acme"})))
    assert as_acme.preemptible == {"reservations": [], "others": 1, "nodes": ["node-a"], "startsAt": NOW}
    # Spot asks preempt nothing, so preview offers nothing to preempt.
    assert services.preview(ask(2, priority="spot"), now=NOW).preemptible is None
    victim.refresh_from_db()
    assert victim.status == "placed"


def test_a_later_request_lets_spot_work_run_until_it_starts(tenant, other_tenant, make_node):
    """Spot work runs for 48 h from now; a regular request for tomorrow ends it tomorrow, not now."""
    make_node("node-a", gpus=2)
    victim = spot(2, tenant="globex", hours=48)
    result = reserve(ask(2, start=24, hours=12))
    assert result.outcome.preempted == (victim.pk,)
    victim.refresh_from_db()
    assert victim.released_at == NOW + timedelta(hours=24)
    assert held("gpu", tenant="globex", at=NOW + timedelta(hours=23)) == 2
    assert held("gpu", tenant="globex", at=NOW + timedelta(hours=25)) == 0
    assert DeviceBooking.objects.filter(allocation__reservation=victim, during__contains=NOW).count() == 2
    assert audit() == []


def test_with_the_pool_lease_placer_a_queued_regular_request_preempts_inline(tenant, other_tenant, make_node):
    make_node("node-a", gpus=2)
    cfg = dataclasses.replace(config(), placer="pool-lease")
    victim = services.reserve(ask(2, tenant="globex", priority="spot"), config=cfg, now=NOW).reservation
    regular = services.reserve(ask(2), config=cfg, now=NOW).reservation
    place_queued(cfg)
    place_queued(cfg)
    victim.refresh_from_db()
    regular.refresh_from_db()
    assert (victim.status, regular.status) == ("preempted", "placed")
    assert audit() == []


@pytest.mark.parametrize("gang", [{"size": 2}])
def test_a_regular_gang_preempts_spot_work_on_each_member(tenant, other_tenant, make_node, gang):
    make_node("node-a", gpus=2)
    make_node("node-b", gpus=2)
    first, second = spot(2, tenant="globex"), spot(2, tenant="globex")
    result = reserve(ask(2, gang=gang))
    assert result.reservation.status == "placed"
    assert result.outcome.preempted == (first.pk, second.pk)
    assert audit() == []


def test_an_instance_booked_through_the_port_takes_spot_work_back_and_is_named(
    tenant, other_tenant, make_node
):
    from capacity import port

    make_node("node-a", gpus=2)
    victim = spot(2, tenant="globex")
    booking = port.reserve_for_instance(
        instance_id="vm-42",
        tenant="acme",
        pool="lab-pool",
        devices=[{"class": "gpu", "count": 1}],
        during=ask(1)["during"],
        now=NOW,
        config=config(),
    )
    assert booking.status == "placed"
    victim.refresh_from_db()
    assert victim.status == "preempted"
    assert victim.conditions[0]["message"] == "preempted at 2026-12-02T12:00Z by instance vm-42"
    assert audit() == []


def test_spot_work_preempted_by_its_own_tenant_names_the_reservation(tenant, make_node):
    """node-a: 2 GPUs, acme's spot work; acme's regular request takes them back and is named."""
    make_node("node-a", gpus=2)
    victim = spot(2)
    result = reserve(ask(2))
    assert result.outcome.preempted == (victim.pk,)
    victim.refresh_from_db()
    [condition] = victim.conditions
    assert condition["message"] == f"preempted at 2026-12-02T12:00Z by reservation {result.reservation.pk}"
    as_acme = services.redacted_conditions(victim.conditions, services.Scope(frozenset({"acme"})))
    assert as_acme[0]["reservationId"] == result.reservation.pk
    assert audit() == []
