"""A tenant's subscriber hears that a maintenance window will take its running booking's GPUs, and that it is off."""

from datetime import timedelta

from django.utils import timezone

from maintenance import windows as maintenance
from webhooks import services as hooks
from webhooks.deliver import run_once

KINDS = ["reservation.maintenance_scheduled", "reservation.maintenance_cancelled"]


def test_the_owner_s_subscriber_hears_of_the_window_and_of_its_cancel(lab, people, receiver, book):
    alice, bob, _ops = people
    hooks.subscribe(alice, {"url": receiver.url, "events": KINDS})
    hooks.subscribe(bob, {"url": receiver.url, "events": KINDS})  # globex: not its booking
    running = book(gpus=2)
    node = running.allocations.get().node.name
    start = (timezone.now() + timedelta(hours=3)).replace(second=0, microsecond=0)
    body = {"nodes": [node], "start": start.isoformat(), "end": (start + timedelta(hours=2)).isoformat()}
    window = maintenance.schedule({**body, "reason": "firmware"}, by="ops").window
    run_once()  # a test is one transaction: fan out before the next change
    maintenance.cancel(window.pk)
    run_once()
    assert receiver.types() == KINDS  # alice's alone
    told, off = (got.json for got in receiver.got)
    assert told["data"]["id"] == running.pk
    assert told["data"]["maintenance"] == {
        "windowId": window.pk,
        "start": start.isoformat().replace("+00:00", "Z"),
        "end": (start + timedelta(hours=2)).isoformat().replace("+00:00", "Z"),
        "reason": "firmware",
        "nodes": [node],
    }
    assert told["reason"].startswith(f"maintenance window {window.pk} on {node}, ")
    assert off["data"]["maintenance"] is None
    assert off["reason"] == f"maintenance window {window.pk} on {node} was cancelled: nothing moves for it"
