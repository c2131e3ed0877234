"""Delivery: retried with backoff, in order per reservation, given up and disabled after 24 hours."""

import random
import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from capacity import services
from capacity.placement import CapacityError
from webhooks import services as hooks
from webhooks.deliver import deliver_due, fan_out, retry_delay, run_once
from webhooks.models import Attempt, Delivery, Subscription


def subscribe(user, receiver, *events):
    return hooks.subscribe(user, {"url": receiver.url, "events": list(events)})


def test_retries_double_from_five_seconds_to_an_hour_with_jitter():
    rng = random.Random(1)
    delays = [retry_delay(n, rng) for n in range(1, 14)]
    assert 2.5 <= delays[0] <= 5 and 5 <= delays[1] <= 10 and 10 <= delays[2] <= 20
    assert all(1800 <= d <= 3600 for d in delays[-2:])


def test_a_failed_delivery_is_sent_again_with_the_same_id_and_body_and_the_log_says_so(
    lab, people, receiver, book
):
    alice, _bob, _ops = people
    sub = subscribe(alice, receiver, "reservation.placed")
    receiver.statuses = [503]
    book(gpus=1)
    now = timezone.now()
    run_once(now)
    (delivery,) = Delivery.objects.all()
    assert delivery.status == "pending" and delivery.attempts == 1 and delivery.last_status_code == 503
    assert now + timedelta(seconds=2) <= delivery.next_attempt_at <= now + timedelta(seconds=6)
    run_once(now + timedelta(seconds=1))  # not due yet
    assert len(receiver.got) == 1
    run_once(now + timedelta(seconds=7))
    assert [r.headers["webhook-id"] for r in receiver.got] == [f"evt_{delivery.event_id}"] * 2
    assert receiver.got[0].body == receiver.got[1].body
    delivery.refresh_from_db()
    assert delivery.status == "delivered" and delivery.attempts == 2
    log = hooks.recent_deliveries(sub)
    assert [t["statusCode"] for t in log[0]["tries"]] == [503, 200]
    assert log[0]["tries"][1]["answer"] == "ok"


def test_a_reservations_events_go_in_order_a_later_one_waits_for_an_earlier_one(lab, people, receiver, book):
    alice, _bob, _ops = people
    subscribe(alice, receiver, "reservation.placed", "reservation.released")
    receiver.statuses = [500]
    held = book(gpus=1)
    now = timezone.now()
    fan_out(now)
    deliver_due(now)  # held's placed alone: it meets the 500
    services.release(held.pk)
    other = book(gpus=1)
    fan_out(now)
    deliver_due(now)
    # held's placed failed: its release waits; the other reservation's placed went.
    assert [(r.json["type"], r.json["data"]["id"]) for r in receiver.got] == [
        ("reservation.placed", held.pk),
        ("reservation.placed", other.pk),
    ]
    deliver_due(now + timedelta(seconds=10))
    assert [(r.json["type"], r.json["data"]["id"]) for r in receiver.got][2:] == [
        ("reservation.placed", held.pk),
        ("reservation.released", held.pk),
    ]


def test_after_24_hours_of_failures_the_delivery_is_given_up_and_the_subscription_disabled(
    lab, people, receiver, book
):
    alice, _bob, _ops = people
    sub = subscribe(alice, receiver, "reservation.placed")
    receiver.statuses = [500] * 100
    book(gpus=1)
    start = timezone.now()
    run_once(start)
    run_once(start + timedelta(hours=23))
    assert Subscription.objects.get(pk=sub.pk).enabled
    run_once(start + timedelta(hours=24, minutes=1))
    delivery = Delivery.objects.get()
    assert delivery.status == "failed" and delivery.attempts == 3
    sub.refresh_from_db()
    assert not sub.enabled
    assert sub.disabled_reason.startswith("Disabled ") and "the last: answered 500" in sub.disabled_reason
    from trail.models import AuditRecord

    (row,) = AuditRecord.objects.filter(object=f"webhook:{sub.pk}", action="webhook.disable")
    assert (row.actor, row.after, row.reason) == ("system", {"enabled": False}, sub.disabled_reason[:300])
    # Disabled: no new event is written for it, and nothing more is sent.
    book(gpus=1)
    run_once(start + timedelta(hours=25))
    assert len(receiver.got) == 3 and Delivery.objects.count() == 1


def test_a_private_target_is_refused_when_subscribing_and_again_when_delivering(
    lab, people, receiver, book, monkeypatch
):
    alice, _bob, _ops = people
    subscribe(alice, receiver, "reservation.placed")
    monkeypatch.delenv("BERTH_WEBHOOKS_ALLOW_PRIVATE")
    for url, said in [
        ("http://127.0.0.1:9/x", "a loopback address: refused unless BERTH_WEBHOOKS_ALLOW_PRIVATE=1 is set"),
        ("http://10.1.2.3/x", "a private (RFC 1918) address: refused unless BERTH_WEBHOOKS_ALLOW_PRIVATE=1"),
        ("http://169.254.169.254/latest/meta-data", "a cloud metadata address: never a webhook target"),
        ("ftp://example.org/x", "only http and https URLs"),
        ("http://user:pw@example.org/x", "no user name or password"),
    ]:
        with pytest.raises(CapacityError) as caught:
            subscribe(alice, type("R", (), {"url": url}), "reservation.placed")
        assert said in str(caught.value)
    book(gpus=1)
    run_once()
    assert receiver.got == []  # resolved again at delivery: 127.0.0.1 is no longer allowed
    assert "a loopback address: refused unless BERTH_WEBHOOKS_ALLOW_PRIVATE=1" in Attempt.objects.get().error


@pytest.mark.django_db(transaction=True)
def test_two_workers_delivering_at_once_send_each_event_once(lab, people, receiver, book):
    alice, _bob, _ops = people
    subscribe(alice, receiver, "reservation.placed", "reservation.released")
    for _ in range(6):
        services.release(book(gpus=1).pk)
    fan_out(timezone.now())
    barrier = threading.Barrier(2)

    def worker():
        barrier.wait()
        try:
            deliver_due()
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    ids = [r.headers["webhook-id"] for r in receiver.got]
    assert len(ids) == 12 and len(set(ids)) == 12
    assert Delivery.objects.filter(status="delivered").count() == 12


def test_events_by_mail_go_only_where_mail_is_configured_and_only_to_your_own_address(
    lab, people, book, settings, mailoutbox
):
    alice, _bob, _ops = people
    alice.email = "alice@acme.example"
    alice.save()
    settings.MAIL_CONFIGURED = False
    with pytest.raises(CapacityError, match="this Berth sends no mail"):
        hooks.subscribe(alice, {"url": "mailto:alice@acme.example", "events": ["reservation.placed"]})
    settings.MAIL_CONFIGURED = True
    with pytest.raises(CapacityError, match="only to your own address"):
        hooks.subscribe(alice, {"url": "mailto:boss@acme.example", "events": ["reservation.placed"]})
    hooks.subscribe(alice, {"url": "mailto:alice@acme.example", "events": ["reservation.placed"]})
    held = book(gpus=1)
    run_once()
    (sent,) = mailoutbox
    assert (
        sent.to == ["alice@acme.example"]
        and sent.subject == f"Berth: reservation.placed reservation {held.pk}"
    )
    assert Delivery.objects.get().status == "delivered"


def test_a_receiver_down_for_ten_minutes_gets_every_event_once_it_is_back(lab, people, receiver, book):
    """The clock steps 30 s at a time: the receiver answers 503 for ten minutes, then 200."""
    alice, _bob, _ops = people
    subscribe(alice, receiver, "reservation.placed", "reservation.released")
    held = [book(gpus=1) for _ in range(3)]
    start = timezone.now()
    fan_out(start)
    for r in held:
        services.release(r.pk)
    receiver.statuses = [503] * 10_000
    clock = start
    while clock < start + timedelta(minutes=10):
        run_once(clock)
        clock += timedelta(seconds=30)
    down_tries = len(receiver.got)
    receiver.statuses = []
    receiver.got.clear()
    while Delivery.objects.filter(status="pending").exists() and clock < start + timedelta(hours=2):
        run_once(clock)
        clock += timedelta(seconds=30)
    # Back at 10 min: tries had doubled to 320-640 s apart, so all arrive within 11 more minutes.
    assert clock - start <= timedelta(minutes=22)
    ids = [r.headers["webhook-id"] for r in receiver.got]
    assert len(ids) == 6 and len(set(ids)) == 6  # each event once after it came back
    assert 6 <= down_tries <= 6 * 8  # while it was down: doubling retries, not a storm
