"""Waits: how many a process holds (Slots), and waiting for the pool-lease placer (Hub).

A waiting request holds a web thread. SLOTS keeps waits to a share of a process's threads (half of
gunicorn's, settings.WEB_THREADS) and an agent's long-polls to LONG_POLLS_PER_CREDENTIAL per
credential, so people's pages and reads always find a thread; a wait past either answers at once.
Every wait ends when the process stops (config.stopping), so a graceful stop is quick.

One thread per process listens on the placer's channel on a connection of its own and wakes the
waiters whose reservations left the queue. A waiter gives its Django connection back while it
waits (it reconnects to read the answer), so 20 waits of 30 s cost one connection, not 20. A
tenant has at most MAX_WAITS_PER_TENANT waits at once in a process; past that (or past the
process's share) a create answers at once, queued, and the caller polls.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter, defaultdict
from contextlib import contextmanager

import psycopg
from django.conf import settings
from django.db import connection

from capacity.db.channels import PLACED_CHANNEL
from config.stopping import STOPPING

MAX_WAITS_PER_TENANT = 8
# How often the listening thread looks again after losing its connection (seconds).
RECONNECT_DELAY = 0.5
# The listener lets its connection go after this long without a waiter (seconds).
IDLE_EXIT = 30.0
# How often the listener looks at its stop flag and its waiters (seconds).
POLL = 0.5
# How often a waiter looks whether the process is stopping (seconds).
STOP_CHECK = 0.2

log = logging.getLogger(__name__)


def stopping() -> bool:
    """Return whether the process is shutting down (no wait may start or go on)."""
    return STOPPING.is_set()


def process_share() -> int | None:
    """Return how many waits a process may hold at once: half its web threads (None: no bound)."""
    threads = settings.WEB_THREADS
    return threads // 2 if threads else None


class Slots:
    """Count the waits a process holds, in all and per credential."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: Counter[object] = Counter()
        self._total = 0

    @contextmanager
    def holding(self, credential: object = None):
        """Yield True while this wait holds a slot; False (answer at once) when the process holds
        its share of waits, the credential its LONG_POLLS_PER_CREDENTIAL, or the process stops."""
        share = process_share()
        with self._lock:
            held = not stopping() and (share is None or self._total < share)
            if held and credential is not None:
                held = self._held[credential] < settings.LONG_POLLS_PER_CREDENTIAL
            if held:
                self._total += 1
                self._held[credential] += 1
        try:
            yield held
        finally:
            if held:
                with self._lock:
                    self._total -= 1
                    self._held[credential] -= 1
                    if not self._held[credential]:
                        del self._held[credential]

    def total(self) -> int:
        """Return how many waits the process holds now."""
        with self._lock:
            return self._total

    @staticmethod
    def wait(event: threading.Event, seconds: float) -> bool:
        """Wait up to `seconds` for the event; return whether it was set (False early on a stop)."""
        deadline = time.monotonic() + seconds
        while not stopping():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            if event.wait(min(left, STOP_CHECK)):
                return True
        return False


SLOTS = Slots()


class Hub:
    """Wake the waiters of reservations as the placer's notifications name them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiters: dict[int, set[threading.Event]] = defaultdict(set)
        self._tenants: Counter[int] = Counter()
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stop = threading.Event()

    @contextmanager
    def waiting(self, reservation_pk: int, tenant_pk: int):
        """Register a waiter for the reservation; yield its Event, or None when the tenant has too
        many or the process its share (SLOTS)."""
        with SLOTS.holding() as slot:
            with self._lock:
                if not slot or self._tenants[tenant_pk] >= MAX_WAITS_PER_TENANT:
                    event = None
                else:
                    self._tenants[tenant_pk] += 1
                    event = threading.Event()
                    self._waiters[reservation_pk].add(event)
            if event is None:
                yield None
                return
            try:
                self._start()
                yield event
            finally:
                with self._lock:
                    self._tenants[tenant_pk] -= 1
                    self._waiters[reservation_pk].discard(event)
                    if not self._waiters[reservation_pk]:
                        del self._waiters[reservation_pk]

    def waits_of(self, tenant_pk: int) -> int:
        """Return how many waits the tenant has open in this process."""
        with self._lock:
            return self._tenants[tenant_pk]

    def _start(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._ready.clear()
                self._stop.clear()
                # The settings of Django's connection, for a connection of the hub's own.
                params = connection.get_connection_params()
                self._thread = threading.Thread(target=self._listen, args=(params,), daemon=True)
                self._thread.start()
        # Notifications sent before LISTEN took effect would be lost: the caller reads the row
        # after this, so a batch that ran meanwhile is seen either way.
        self._ready.wait(5)

    def stop(self) -> None:
        """Stop the listening thread and close its connection (it starts again with the next wait)."""
        self._stop.set()
        thread = self._thread
        if thread is not None:
            thread.join(5 * POLL)

    def _idle(self) -> bool:
        with self._lock:
            return not self._waiters

    def _listen(self, params: dict) -> None:
        params = {k: v for k, v in params.items() if k not in ("cursor_factory", "context")}
        idle_since = None
        while not self._stop.is_set():
            try:
                with psycopg.connect(**params, autocommit=True) as conn:
                    conn.execute(f"LISTEN {PLACED_CHANNEL}")
                    self._ready.set()
                    while not self._stop.is_set():
                        for note in conn.notifies(timeout=POLL):
                            self._wake(note.payload)
                        if not self._idle():
                            idle_since = None
                        elif idle_since is None:
                            idle_since = time.monotonic()
                        elif time.monotonic() - idle_since > IDLE_EXIT:
                            return  # a quiet process holds no connection either
            except Exception:  # the connection went away: listen again, waiters time out meanwhile
                log.exception("the placer-notification listener lost its connection")
                self._ready.set()
                self._stop.wait(RECONNECT_DELAY)

    def _wake(self, payload: str) -> None:
        pks = {int(p) for p in payload.split(",") if p.strip().isdigit()}
        with self._lock:
            events = [e for pk in pks for e in self._waiters.get(pk, ())]
        for event in events:
            event.set()


HUB = Hub()
