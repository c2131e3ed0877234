"""The bridge in the worker: a reconcile pass when a bridged pool's bookings or windows change, and every PASS_EVERY seconds.

The triggers (migrations/0002) NOTIFY `berth_slurm` when a change to a bridged pool's booking or a
maintenance window commits, so mirroring runs after the booking's transaction, never inside it;
the timed pass catches up whatever a NOTIFY missed (a worker that was down, Slurm unreachable).
"""

from __future__ import annotations

import logging
import threading
import time

from django.conf import settings
from django.db import connection

from capacity.port import survive

from .reconcile import run_pass

log = logging.getLogger(__name__)
CHANNEL = "berth_slurm"
# Changes that commit together are mirrored by one pass: wait this long after the first wake-up.
SETTLE = 0.05


def run_once() -> str:
    """Run one pass; say what it did ("" for nothing)."""
    return run_pass().summary()


def serve(stop: threading.Event) -> None:
    """Pass on every NOTIFY and every PASS_EVERY seconds until `stop`."""
    survive("slurm", stop, _serve, log)


def _serve(stop: threading.Event) -> None:
    connection.ensure_connection()
    with connection.cursor() as cur:
        cur.execute(f"LISTEN {CHANNEL}")
    raw = connection.connection
    every = settings.SLURM["PASS_EVERY"]
    last = 0.0
    woken = True
    while not stop.is_set():
        if woken or time.monotonic() - last >= every:
            stop.wait(SETTLE if woken else 0)
            for _ in raw.notifies(timeout=0):
                pass  # one pass answers every change so far
            said = run_pass().summary()
            if said:
                log.info("slurm: %s", said)
            last = time.monotonic()
        woken = False
        for _ in raw.notifies(timeout=min(1.0, every), stop_after=1):
            woken = True
