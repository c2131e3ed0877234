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


def wait_idle(pid: int, timeout=10.0) -> None:
    """Wait until backend `pid` sits idle (the loop's NOTIFY wait) after its first statements."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with connection.cursor() as cur:
            cur.execute("SELECT state, query FROM pg_stat_activity WHERE pid = %s", [pid])
            row = cur.fetchone()
        if row and row[0] == "idle" and row[1]:
            return
        time.sleep(0.05)
    raise AssertionError("the delivery loop never waited")


def lost(caplog) -> bool:
    return any("lost the database" in r.getMessage() for r in caplog.records)


def test_a_backend_killed_during_the_notify_wait_is_replaced_and_delivery_goes_on(
    lab, people, receiver, book, caplog
):
    alice, _bob, _ops = people
    hooks.subscribe(alice, {"url": receiver.url, "events": ["reservation.placed"]})
    stop, failed, pids = threading.Event(), [], []

    def run():
        try:
            # The loop's connection is this thread's: its backend is the one to kill.
            connection.ensure_connection()
            pids.append(connection.connection.info.backend_pid)
            serve(stop)
        except Exception as err:  # the test fails on it below
            failed.append(err)
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    with caplog.at_level(logging.WARNING, logger="webhooks.deliver"):
        thread.start()
        try:
            deadline = time.monotonic() + 10
            while not pids and time.monotonic() < deadline:
                time.sleep(0.01)
            wait_idle(pids[0])
            with connection.cursor() as cur:
                cur.execute("SELECT pg_terminate_backend(%s)", [pids[0]])
            # The loop notices at its next look (IDLE_POLL), backs off and listens on a new backend.
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline and not lost(caplog):
                time.sleep(0.05)
            held = book(gpus=1)
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline and not receiver.got:
                time.sleep(0.05)
        finally:
            stop.set()
            thread.join(15)
    assert not thread.is_alive() and failed == []
    assert lost(caplog)
    assert [(r.json["type"], r.json["data"]["id"]) for r in receiver.got] == [("reservation.placed", held.pk)]
