"""The worker mirrors a booking within moments of its commit (NOTIFY), never inside the booking's transaction."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection
from slurm_helpers import shown

from capacity import services
from slurm.jobs import serve


@pytest.fixture
def worker(transactional_db):
    stop = threading.Event()

    def run():
        try:
            serve(stop)
        finally:
            connection.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    yield
    stop.set()
    thread.join(10)


def _until(predicate, seconds=10.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return time.monotonic()
        time.sleep(0.02)
    raise AssertionError("not within the time")


def test_a_booking_and_its_release_reach_slurm_through_the_worker(lab, book, worker):
    started = time.monotonic()
    booked = book(start=timedelta(hours=1), gang={"size": 2})
    name = f"berth-{booked.reservation.pk}"
    _until(lambda: shown(name) is not None)
    assert time.monotonic() - started < 5
    services.release(booked.reservation.pk)
    _until(lambda: shown(name) is None)
