"""The capacity port: other apps book instances as safely as the API books reservations."""

import pytest

from capacity import port
from capacity.audit import audit
from capacity.models import Allocation
from capacity.placement import CapacityError, define_scheduler_plugin
from series import port as series_port

from booking import NOW, ask, config


def book(instance_id="vm-42", gpus=1, **kw):
    return port.reserve_for_instance(
        instance_id=instance_id,
        tenant="acme",
        pool="lab-pool",
        devices=[{"class": "gpu", "count": gpus}],
        during=ask(gpus)["during"],
        now=NOW,
        config=kw.pop("config", None) or config(),
        **kw,
    )


def test_asking_again_for_one_instance_answers_its_booking_and_books_nothing(tenant, make_node):
    make_node("node-a", gpus=4)
    first = book(gpus=2)
    again = book(gpus=2)
    assert first.status == again.status == "placed"
    assert (again.node, again.atoms) == (first.node, first.atoms)
    assert Allocation.objects.filter(instance_id="vm-42").count() == 1
    # Released, the same id books anew.
    assert port.release_instance("vm-42") == 1
    assert book(gpus=2).status == "placed"
    assert Allocation.objects.filter(instance_id="vm-42", released_at__isnull=True).count() == 1


def test_no_capability_label_is_forced_onto_an_instance_request(tenant, make_node):
    """node-a has no bc.dev/cap.devices.limits label: a reservation with vcpu skips it, an instance does not."""
    from capacity import services

    make_node("node-a", gpus=1, vcpu=16)
    pending = services.reserve({**ask(1), "resources": {"vcpu": 4}}, now=NOW, config=config())
    assert pending.reservation.status == "pending"
    assert book(resources={"vcpu": 4}).status == "placed"


def test_an_instance_that_does_not_fit_is_pending_with_the_reason_and_holds_nothing(tenant, make_node):
    make_node("node-a", gpus=1)
    booking = book(gpus=2)
    assert booking.status == "pending"
    assert booking.reason == "no node fits (1 node): 1 × fits: 1 of 2 gpu free"
    assert not Allocation.objects.filter(instance_id="vm-42").exists()


def test_instance_labels_come_from_the_module(tenant, make_node):
    from inventory.models import NodeLabel

    make_node("node-a", gpus=1)
    b = make_node("node-b", gpus=1)
    NodeLabel.objects.create(node=b, key="bc.dev/driver.kata", value="3.2", source="system")
    assert book(node_labels={"bc.dev/driver.kata": "*"}).node == "node-b"


def test_admission_hooks_run_for_instances_and_a_refusal_books_nothing(tenant, make_node):
    make_node("node-a", gpus=1)

    def admit(request, context):
        if context.get("identityKind") == "robot":
            raise CapacityError("FORBIDDEN", "robots may not start instances")

    plugin = define_scheduler_plugin(id="no-robots", admit=admit)
    with pytest.raises(CapacityError) as err:
        book(admission={"identityKind": "robot"}, config=config(plugins=(plugin,)))
    assert err.value.message == "robots may not start instances"
    assert not Allocation.objects.exists()
    assert book(admission={"identityKind": "user"}, config=config(plugins=(plugin,))).status == "placed"


@pytest.mark.django_db(transaction=True)
def test_two_calls_for_one_instance_at_once_book_one_allocation(tenant, make_node):
    from racing import run_threads

    make_node("node-a", gpus=4)
    answers = []
    assert run_threads(4, lambda i: answers.append(book(gpus=1))) == []
    assert len({(a.node, a.atoms) for a in answers}) == 1
    assert Allocation.objects.filter(instance_id="vm-42").count() == 1
    assert audit() == []


def test_the_port_applies_the_pool_policy_limits(tenant, make_node):
    from datetime import timedelta

    from policy.pool_policy import set_policy

    make_node("node-a", gpus=4)
    set_policy("lab-pool", {"max_duration": timedelta(hours=12)})
    with pytest.raises(CapacityError) as refused:
        book()  # a day
    assert (refused.value.code, refused.value.message) == (
        "POLICY_LIMIT",
        "maxDuration is 12h; this asks 24h",
    )
    assert not Allocation.objects.exists()


def test_a_module_books_a_series_through_the_port_with_the_apis_rule_and_limits(tenant, make_node):
    from capacity.models import Reservation, Series

    make_node("node-a", gpus=4)
    window = ask(1)["during"]
    first = series_port.reserve_series(
        tenant="acme",
        pool="lab-pool",
        devices=[{"class": "gpu", "count": 1}],
        during=window,
        repeat={"freq": "daily", "count": 3},
        now=NOW,
        config=config(),
    )
    assert [o.status for o in first.occurrences] == ["placed"] * 3
    assert Reservation.objects.filter(series=first.series).count() == 3
    with pytest.raises(CapacityError) as refused:
        series_port.reserve_series(
            tenant="acme",
            pool="lab-pool",
            devices=[{"class": "gpu", "count": 1}],
            during=window,
            repeat={"freq": "weekly", "byDay": [], "count": 3},
            now=NOW,
            config=config(),
        )
    assert (refused.value.code, refused.value.message) == (
        "INVALID_INPUT",
        "repeat.byDay must name at least one day (MO, TU, WE, TH, FR, SA, SU)",
    )
    assert Series.objects.count() == 1


def test_an_instance_past_its_tenants_outside_checks_is_refused_at_once_and_books_nothing(
    tenant, make_node, settings, monkeypatch
):
    from capacity.waits import CHECKS_PER_TENANT, SLOTS
    from policy.outside_check import BUSY_RETRY_AFTER
    from policy.pool_policy import set_policy

    make_node("node-a", gpus=4)
    settings.WEB_THREADS = 16  # in a web process: the port's callers hold web threads too
    monkeypatch.setenv("BERTH_WEBHOOKS_ALLOW_PRIVATE", "1")
    set_policy("lab-pool", {"policy_webhook": "http://127.0.0.1:9/check"})  # never asked: no slot
    held = [SLOTS.checking(tenant.pk) for _ in range(CHECKS_PER_TENANT)]
    try:
        assert [slot.__enter__() for slot in held] == [None] * CHECKS_PER_TENANT
        with pytest.raises(CapacityError) as refused:
            book(gpus=1)
    finally:
        for slot in held:
            slot.__exit__(None, None, None)
    assert (refused.value.code, refused.value.retry_after) == ("THROTTLED", BUSY_RETRY_AFTER)
    assert not Allocation.objects.exists()
