"""The outbox: events written in the transaction of the change, none for a change rolled back."""

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone
from standardwebhooks import Webhook

from capacity import services
from inventory import services as inventory
from webhooks import services as hooks
from webhooks.deliver import run_once
from webhooks.models import Event


def subscribe(user, receiver, *events):
    return hooks.subscribe(user, {"url": receiver.url, "events": list(events)})


def test_without_a_subscription_no_event_is_written(lab, book):
    book(gpus=1)
    assert not Event.objects.exists()


def test_a_placed_and_released_booking_reaches_its_tenants_subscriber_signed(lab, people, receiver, book):
    alice, _bob, _ops = people
    sub = subscribe(alice, receiver, "reservation.placed", "reservation.released")
    held = book(gpus=2)
    run_once()  # a test is one transaction: events not yet fanned out would merge into one
    services.release(held.pk)
    run_once()
    assert receiver.types() == ["reservation.placed", "reservation.released"]
    first = receiver.got[0]
    assert first.headers["webhook-id"] == first.json["id"] == f"evt_{Event.objects.order_by('id').first().pk}"
    assert Webhook(sub.secret).verify(first.body, first.headers) == first.json
    data = first.json["data"]
    assert data["id"] == held.pk and data["tenantId"] == "acme" and len(data["allocations"]) == 1


def test_a_change_rolled_back_writes_no_event(lab, people, receiver, book):
    alice, _bob, _ops = people
    subscribe(alice, receiver, "reservation.placed")
    with pytest.raises(RuntimeError), transaction.atomic():
        book(gpus=1)
        assert Event.objects.count() == 1  # written with the booking ...
        raise RuntimeError("the request failed after placing")
    assert not Event.objects.exists()  # ... and gone with it
    run_once()
    assert receiver.got == []


def test_tenants_hear_only_their_own_reservations_and_operators_also_nodes(lab, people, receiver, book):
    alice, bob, ops = people
    subscribe(alice, receiver, "reservation.placed")
    subscribe(bob, receiver, "reservation.placed")
    subscribe(ops, receiver, "reservation.placed", "node.cordoned")
    book("globex", gpus=1)
    inventory.cordon("node-b", reason="fan noise")
    run_once()
    to = sorted(
        (r.json["type"], r.json["data"].get("tenantId") or r.json["data"].get("name")) for r in receiver.got
    )
    assert to == [
        ("node.cordoned", "node-b"),
        ("reservation.placed", "globex"),
        ("reservation.placed", "globex"),
    ]
    assert len(receiver.got) == 3  # bob's and the operator's, not alice's


def test_a_pending_booking_says_why(lab, people, receiver, book):
    alice, _bob, _ops = people
    subscribe(alice, receiver, "reservation.pending")
    book(gpus=64)
    run_once()
    (got,) = receiver.got
    assert got.json["type"] == "reservation.pending" and got.json["reason"]
    assert got.json["data"]["status"] == "pending"


def test_starting_and_ending_go_out_once_within_the_lead(lab, people, receiver, book, settings):
    settings.WEBHOOK_LEAD_MINUTES = 15
    alice, _bob, _ops = people
    subscribe(alice, receiver, "reservation.starting", "reservation.ending")
    now = timezone.now()
    start = now + timedelta(minutes=10)
    ms = int(start.timestamp() * 1000)
    held = book(gpus=1, during={"start": ms, "end": ms + 3_600_000})
    run_once(now)
    run_once(now + timedelta(minutes=1))
    assert receiver.types() == ["reservation.starting"]
    run_once(now + timedelta(minutes=60))
    assert receiver.types() == ["reservation.starting", "reservation.ending"]
    assert {r.json["data"]["id"] for r in receiver.got} == {held.pk}


def test_operators_hear_a_node_drained_turning_unhealthy_and_going_stale(lab, people, receiver):
    from inventory.models import Device, NodeReport
    from maintenance.drain import drain

    _alice, _bob, ops = people
    subscribe(ops, receiver, "node.drained", "node.unhealthy", "node.stale")
    drain("node-a", reason="PSU swap")
    Device.objects.filter(node__name="node-b").update(healthy=False)  # four devices, one event
    now = timezone.now()
    NodeReport.objects.create(
        node=lab[1], at=now - timedelta(hours=1), by="node.node-b", agent_at=now - timedelta(hours=1)
    )
    assert inventory.mark_stale_nodes(timedelta(minutes=5), now) == ["node-b"]
    run_once()
    said = [(r.json["type"], r.json["data"]["name"], r.json["reason"]) for r in receiver.got]
    assert len(said) == 3
    # In order per node; the two nodes' deliveries go out side by side, in either order.
    assert [s for s in said if s[1] == "node-a"] == [("node.drained", "node-a", "PSU swap")]
    node_b = [s for s in said if s[1] == "node-b"]
    assert node_b[0] == ("node.unhealthy", "node-b", "a device is no longer healthy")
    assert node_b[1][:2] == ("node.stale", "node-b")


def test_an_idle_booking_is_told_once_per_idle_spell(lab, people, receiver, book, settings):
    from capacity.models import DeviceBooking
    from inventory.models import DeviceSample
    from usage.idle import mark_idle

    settings.IDLE_AFTER = timedelta(hours=2)
    alice, _bob, _ops = people
    subscribe(alice, receiver, "reservation.idle")
    held = book(gpus=4)
    start = timezone.now().replace(second=0, microsecond=0) + timedelta(minutes=1)
    devices = DeviceBooking.objects.filter(allocation__reservation=held).values_list("device_id", flat=True)
    DeviceSample.objects.bulk_create(
        DeviceSample(device_id=d, minute=start + timedelta(minutes=m), gpu_percent=0)
        for d in devices
        for m in range(125)
    )
    mark_idle(start + timedelta(minutes=121))
    mark_idle(start + timedelta(minutes=125))
    run_once()
    (got,) = receiver.got
    assert got.json["type"] == "reservation.idle" and "GPU 0–3 at 0 % mean since" in got.json["reason"]


def test_a_release_with_a_reason_carries_it_to_the_receiver(lab, people, receiver, book):
    alice, _bob, _ops = people
    subscribe(alice, receiver, "reservation.released")
    held = book(gpus=1)
    run_once()
    services.release(held.pk, reason="idle since Tuesday", by="ops")
    run_once()
    (got,) = receiver.got
    assert (got.json["type"], got.json["reason"]) == ("reservation.released", "ops: idle since Tuesday")
