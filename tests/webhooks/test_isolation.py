"""Delivery isolation: an attempt has one wall-clock deadline, and a slow receiver holds only its own
subscription's queue. The slow receiver is real: it answers `HTTP/1.1 200 OK` on loopback, then one
header line every 0.5 s."""

import threading
import time

import pytest
from django.db import connection
from django.utils import timezone

from config.outbound.targets import ANSWER_READ, DEADLINE, post
from webhooks import services as hooks
from webhooks.deliver import Dispatcher, deliver_due, fan_out, serve
from webhooks.models import Attempt, Delivery


def test_an_attempt_to_a_receiver_that_dribbles_its_headers_ends_at_its_deadline(dribbler):
    started = time.monotonic()
    answer = post(dribbler.url, b"{}", {}, deadline=1.5)
    took = time.monotonic() - started
    assert answer.status is None and answer.error == "no whole answer within the 1.5 s deadline"
    assert 1.4 <= took <= 2.5 and dribbler.requests  # it got the request and was cut off after 1.5 s


def test_an_attempt_reads_a_bounded_answer_and_keeps_200_printable_characters(receiver):
    receiver.answer = b"\x1b[31mINTERNAL\r\n" + b"x" * 100_000
    answer = post(receiver.url, b"{}", {})
    assert answer.ok and ANSWER_READ < 100_000
    assert (
        answer.text.startswith("[31mINTERNAL x")
        and 190 <= len(answer.text) <= 200
        and answer.text.isprintable()
    )


def test_a_dribbling_receiver_does_not_hold_up_another_subscriptions_delivery(
    lab, people, receiver, dribbler, book
):
    alice, _bob, _ops = people
    slow = hooks.subscribe(alice, {"url": dribbler.url, "events": ["reservation.placed"]})
    fast = hooks.subscribe(alice, {"url": receiver.url, "events": ["reservation.placed"]})
    book(gpus=1)
    fan_out(timezone.now())
    started = time.monotonic()
    delivered, failed = deliver_due()  # returns once every attempt has answered or met its deadline
    took = time.monotonic() - started
    assert (delivered, failed) == (1, 1)
    assert receiver.arrived[0] - started < 1.0  # the other subscription's delivery went at once
    attempt = Attempt.objects.get(delivery__subscription=slow)
    assert attempt.error == f"no whole answer within the {DEADLINE:g} s deadline"
    assert DEADLINE - 0.5 <= attempt.duration_ms / 1000 <= DEADLINE + 1.5 and took <= DEADLINE + 2
    assert Delivery.objects.get(subscription=fast).status == "delivered"
    assert Delivery.objects.get(subscription=slow).status == "pending"  # tried again later


def test_a_stopping_worker_cuts_its_attempts_in_flight_and_gives_their_deliveries_back(
    lab, people, dribbler, book
):
    alice, _bob, _ops = people
    hooks.subscribe(alice, {"url": dribbler.url, "events": ["reservation.placed"]})
    book(gpus=1)
    fan_out(timezone.now())
    dispatcher = Dispatcher()
    dispatcher.step()
    deadline = time.monotonic() + 5
    while not dribbler.requests and time.monotonic() < deadline:
        time.sleep(0.02)
    assert dribbler.requests and Delivery.objects.get().claimed_until is not None
    started = time.monotonic()
    dispatcher.close()
    assert time.monotonic() - started < 1.0
    delivery = Delivery.objects.get()
    # Not an attempt of the receiver's: no try written, and the delivery is free for the next worker.
    assert delivery.claimed_until is None and delivery.attempts == 0 and not Attempt.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_while_three_receivers_dribble_the_worker_delivers_to_the_fast_one_within_a_second(
    lab, people, receiver, dribbler, book
):
    """The worker's loop (run_placer's webhooks thread): bookings one second apart, each placed
    event to three dribbling subscriptions and one fast one."""
    alice, _bob, _ops = people
    for _ in range(3):
        hooks.subscribe(alice, {"url": dribbler.url, "events": ["reservation.placed"]})
    hooks.subscribe(alice, {"url": receiver.url, "events": ["reservation.placed"]})
    stop, failed = threading.Event(), []

    def run():
        try:
            serve(stop)
        except Exception as err:  # the test fails on it below
            failed.append(err)
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    booked = []
    try:
        time.sleep(0.5)  # listening
        for _ in range(4):
            book(gpus=1)
            booked.append(time.monotonic())
            time.sleep(1.0)
        deadline = time.monotonic() + 5
        while len(receiver.arrived) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        thread.join(15)
    assert not thread.is_alive() and failed == []
    delays = [arrived - at for arrived, at in zip(receiver.arrived, booked, strict=True)]
    assert len(delays) == 4 and max(delays) < 1.0, delays
    assert len(dribbler.requests) >= 3  # every dribbling subscription was being tried meanwhile
