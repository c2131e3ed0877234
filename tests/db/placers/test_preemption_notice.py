"""Notice before preemption: spotNotice lets spot work keep its devices until preemptAt; spotMinRuntime
keeps young spot work from being taken."""

from datetime import timedelta

from django.contrib.auth.models import User

from capacity import services
from capacity.audit import audit
from capacity.models import DeviceBooking, Reservation
from capacity.worker import run_round
from inventory.models import Pool
from policy.models import PoolPolicy
from policy.notice import finish_due
from webhooks.models import Event, Subscription

from booking import MS, NOW, ask, claimed, config, reserve

NOTICE = timedelta(minutes=10)
AT = NOW + NOTICE


def policy(**fields):
    PoolPolicy.objects.update_or_create(pool=Pool.objects.get(slug="lab-pool"), defaults=fields)


def spot(gpus, now=NOW, **kw):
    return reserve(ask(gpus, priority="spot", **kw), now=now).reservation


def booked_until(reservation):
    """Return the latest end of a reservation's device bookings."""
    return max(b.during.upper for b in DeviceBooking.objects.filter(allocation__reservation=reservation))


def test_with_a_notice_spot_work_keeps_its_devices_until_preempt_at_and_regular_work_starts_then(
    tenant, other_tenant, make_node
):
    make_node("node-a", gpus=2)
    policy(spot_notice=NOTICE)
    victim = spot(2, tenant="globex")
    result = reserve(ask(2))
    regular = result.reservation
    assert (regular.status, result.outcome.preempted) == ("placed", (victim.pk,))
    # The regular booking starts at preemptAt and says why; its window's end stays.
    [allocation] = regular.allocations.all()
    assert (allocation.starts_at, allocation.ends_at) == (AT, regular.ends_at)
    assert {b.during.lower for b in DeviceBooking.objects.filter(allocation=allocation)} == {AT}
    [later] = [c for c in regular.conditions if c["type"] == "StartsLater"]
    assert later["message"] == "starts at 2026-12-02T12:10Z: spot work there has until then (spotNotice 10m)"
    regular.refresh_from_db()
    assert regular.condition("StartsLater") == later
    # The victim runs until then: placed, its bookings cut at preemptAt, a PreemptAt condition.
    victim.refresh_from_db()
    assert (victim.status, victim.released_at) == ("placed", None)
    assert booked_until(victim) == AT
    notice = victim.condition("PreemptAt")
    assert (notice["at"], notice["reason"], notice["reservationId"]) == (
        AT.isoformat(),
        "PreemptedByRegular",
        regular.pk,
    )
    assert notice["message"] == (
        "preempted at 2026-12-02T12:10Z by regular work of another tenant (spotNotice 10m)"
    )
    assert audit() == []
    # Before preemptAt the worker leaves it; at preemptAt it is preempted, as without a notice.
    assert finish_due(AT - timedelta(seconds=1)) == []
    assert finish_due(AT) == [victim.pk]
    victim.refresh_from_db()
    assert (victim.status, victim.released_at) == ("preempted", AT)
    [condition] = victim.conditions
    assert (condition["type"], condition["message"]) == (
        "Preempted",
        "preempted at 2026-12-02T12:10Z by regular work of another tenant",
    )


def test_spot_work_under_notice_is_not_taken_again(tenant, other_tenant, make_node):
    make_node("node-a", gpus=2)
    policy(spot_notice=NOTICE)
    victim = spot(2, tenant="globex")
    reserve(ask(1))
    assert reserve(ask(1)).outcome.preempted == ()
    victim.refresh_from_db()
    assert [c["type"] for c in victim.conditions] == ["PreemptAt"]
    assert audit() == []


def test_a_window_shorter_than_the_notice_does_not_preempt(tenant, other_tenant, make_node):
    make_node("node-a", gpus=2)
    policy(spot_notice=timedelta(hours=2))
    victim = spot(2, tenant="globex")
    assert reserve(ask(2, hours=1)).reservation.status == "pending"
    victim.refresh_from_db()
    assert (victim.status, victim.conditions) == ("placed", [])


def test_preview_says_the_request_would_start_at_the_notice(tenant, other_tenant, make_node):
    make_node("node-a", gpus=2)
    policy(spot_notice=NOTICE)
    spot(2, tenant="globex")
    assert services.preview(ask(2), now=NOW).preemptible["startsAt"] == AT


def test_the_notice_is_sent_as_reservation_preempted_once(tenant, other_tenant, make_node):
    Subscription.objects.create(
        owner=User.objects.create_user("ops", is_staff=True),
        url="https://hooks.example/x",
        events=["reservation.preempted"],
        secret="s",
    )
    make_node("node-a", gpus=2)
    policy(spot_notice=NOTICE)
    victim = spot(2, tenant="globex")
    reserve(ask(2))
    sent = Event.objects.filter(reservation_id=victim.pk, type="reservation.preempted")
    assert list(sent.values_list("reason", flat=True)) == [
        "preempted at 2026-12-02T12:10Z by regular work of another tenant (spotNotice 10m)"
    ]
    finish_due(AT)
    assert sent.count() == 1


def test_min_runtime_keeps_young_spot_work_from_being_taken(tenant, other_tenant, make_node):
    """Spot work started at NOW with spotMinRuntime 1h: not a victim before it has run an hour."""
    make_node("node-a", gpus=2)
    policy(spot_min_runtime=timedelta(hours=1))
    young = spot(2, tenant="globex")
    assert reserve(ask(2)).reservation.status == "pending"
    assert Reservation.objects.get(pk=young.pk).status == "placed"
    # An hour on, it has run long enough: taken back (at once, without a notice).
    later = reserve(ask(2, start=1, hours=2), now=NOW + timedelta(hours=1))
    assert later.outcome.preempted == (young.pk,)
    assert audit() == []


def test_min_runtime_counts_the_notice(tenant, other_tenant, make_node):
    """Started 55 minutes ago, 1h minimum: too young now, but with a 10m notice it will have run an
    hour at preemptAt."""
    make_node("node-a", gpus=2)
    policy(spot_min_runtime=timedelta(hours=1))
    data = ask(2, tenant="globex", priority="spot")
    data["during"]["start"] = MS - 55 * 60_000
    victim = reserve(data, now=NOW - timedelta(minutes=55)).reservation
    assert reserve(ask(2)).reservation.status == "pending"
    policy(spot_notice=NOTICE, spot_min_runtime=timedelta(hours=1))
    assert reserve(ask(2)).outcome.preempted == (victim.pk,)


def test_without_a_policy_preemption_is_immediate_as_before(tenant, other_tenant, make_node):
    make_node("node-a", gpus=2)
    policy()  # a row with every field null
    victim = spot(2, tenant="globex")
    result = reserve(ask(2))
    assert [a.starts_at for a in result.reservation.allocations.all()] == [NOW]
    assert all(c["type"] != "StartsLater" for c in result.reservation.conditions)
    victim.refresh_from_db()
    assert (victim.status, victim.released_at) == ("preempted", NOW)


def test_spot_work_released_during_its_notice_ends_then_and_is_not_preempted(tenant, other_tenant, make_node):
    make_node("node-a", gpus=2)
    policy(spot_notice=NOTICE)
    victim = spot(2, tenant="globex")
    reserve(ask(2))
    services.release(victim.pk, now=NOW + timedelta(minutes=1))
    assert booked_until(victim) == NOW + timedelta(minutes=1)
    assert finish_due(AT) == []
    victim.refresh_from_db()
    assert (victim.status, victim.released_at) == ("released", NOW + timedelta(minutes=1))


def test_a_regular_lease_waits_for_the_notice_too_and_a_spot_lease_keeps_its_claims_until_then(
    tenant, other_tenant, make_node
):
    make_node("node-a", gpus=2, vcpu=16)
    policy(spot_notice=NOTICE)
    data = ask(1, tenant="globex", priority="spot", binding="node")
    del data["devices"]
    spot_lease = reserve(data).reservation
    data = ask(1, binding="node")
    del data["devices"]
    result = reserve(data)
    assert result.outcome.preempted == (spot_lease.pk,)
    assert [a.starts_at for a in result.reservation.allocations.all()] == [AT]
    assert claimed("vcpu", node="node-a") == 16  # the spot lease's, until preemptAt
    assert claimed("vcpu", node="node-a", at=AT) == 16  # the regular lease's, from then
    assert booked_until(spot_lease) == AT
    assert audit() == []


def test_the_worker_round_preempts_spot_work_whose_notice_ran_out_before_releasing_ended_windows(
    tenant, other_tenant, make_node
):
    """NOW is days before the real clock: the notice has run out and both windows have ended."""
    make_node("node-a", gpus=2)
    policy(spot_notice=NOTICE)
    victim = spot(2, tenant="globex")
    regular = reserve(ask(2)).reservation
    run_round(config())
    victim.refresh_from_db()
    regular.refresh_from_db()
    assert (victim.status, victim.released_at) == ("preempted", AT)
    assert regular.status == "released"
