"""The delivery loop survives losing its database connection while it waits for a NOTIFY.

Transactional: `serve` runs in a thread on its own connection, as run_placer's webhooks thread does.
"""

import logging
import threading
import time

import pytest
from django.db import connection

from webhooks import services as hooks
from webhooks.deliver import serve

pytestmark = pytest.mark.django_db(transaction=True)


def listening_backend(timeout=10.0) -> int:
    """Return the pid of the delivery loop's backend once it idles in the NOTIFY wait."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with connection.cursor() as cur:
            # The loop's only connection to the test database; it has listened once it sits idle.
            cur.execute(
                "SELECT pid FROM pg_stat_activity WHERE pid <> pg_backend_pid()"
                " AND datname = current_database() AND state = 'idle'"
            )
            row = cur.fetchone()
        if row:
            return row[0]
        time.sleep(0.05)
    raise AssertionError("the delivery loop never listened")


def test_a_backend_killed_during_the_notify_wait_is_replaced_and_delivery_goes_on(
    lab, people, receiver, book, caplog
):
    alice, _bob, _ops = people
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
    with caplog.at_level(logging.WARNING, logger="webhooks.deliver"):
        thread.start()
        try:
            first = listening_backend()
            with connection.cursor() as cur:
                cur.execute("SELECT pg_terminate_backend(%s)", [first])
            # The loop notices at its next look (IDLE_POLL), backs off and listens on a new backend.
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline and listening_backend() == first:
                time.sleep(0.05)
            held = book(gpus=1)
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline and not receiver.got:
                time.sleep(0.05)
        finally:
            stop.set()
            thread.join(15)
    assert not thread.is_alive() and failed == []
    assert any("lost the database" in r.getMessage() for r in caplog.records)
    assert [(r.json["type"], r.json["data"]["id"]) for r in receiver.got] == [("reservation.placed", held.pk)]
