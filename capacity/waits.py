"""Waits: how many a process holds (Slots), and what wakes them: the pool-lease placer's
notifications (Hub) and changes of a node's assignments (Watch, for agents' long-polls).

A waiting request holds a web thread, and so does a create asking its pool's outside check (up to 2 s,
policy.outside_check). SLOTS keeps waits and outside checks together to a share of a process's
threads (half of gunicorn's, settings.WEB_THREADS), an agent's long-polls to
LONG_POLLS_PER_CREDENTIAL per credential and a tenant's outside checks to CHECKS_PER_TENANT, so
people's pages and reads always find a thread; a wait past a bound answers at once, and so does a
check (429 THROTTLED, with Retry-After).
Every wait ends when the process stops (config.stopping), so a graceful stop is quick.

Each waker is one thread per process on a connection of its own: HUB listens on the placer's
channel and wakes the waiters whose reservations left the queue; WATCH reads a digest of every
watched node every POLL seconds and wakes the waiters of a node whose digest moved. A waiter gives
its Django connection back while it waits (it reconnects to read the answer), so 20 waits of 30 s
cost one connection, not 20. A tenant has at most MAX_WAITS_PER_TENANT waits at once in a process;
past that (or past the process's share) a create answers at once, queued, and the caller polls.
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
# Outside checks a tenant may run at once in a web process (docs/policy.md, Outside check): with
# gunicorn's 2 processes, 4 of a tenant's creates wait on checks at once, and another tenant's
# creates still find slots.
CHECKS_PER_TENANT = 2
# Why `Slots.checking` refused a check: the tenant runs CHECKS_PER_TENANT, or the process its share.
TENANT_BOUND, PROCESS_SHARE = "tenant", "process"
# How often a waker's thread looks again after losing its connection (seconds).
RECONNECT_DELAY = 0.5
# A waker lets its connection go after this long without a waiter (seconds).
IDLE_EXIT = 30.0
# How often a waker looks at its stop flag and its waiters; the node digest's period (seconds).
POLL = 0.5
# How often a waiter looks whether the process is stopping (seconds).
STOP_CHECK = 0.2

log = logging.getLogger(__name__)


def stopping() -> bool:
    """Return whether the process is shutting down (no wait may start or go on)."""
    return STOPPING.is_set()


def process_share() -> int | None:
    """Return how many waits and outside checks a process may hold at once: half its web threads
    (None: no bound)."""
    threads = settings.WEB_THREADS
    return threads // 2 if threads else None


class Slots:
    """Count the threads a process holds in waits and outside checks: in all, per credential and per tenant."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: Counter[object] = Counter()
        self._checks: Counter[object] = Counter()
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

    @contextmanager
    def checking(self, tenant: object):
        """Yield None while this outside check holds a slot, else why not (TENANT_BOUND, PROCESS_SHARE).

        A process that counts no web threads (the worker, a command, runserver) has none to keep:
        its checks are not bounded. A check ends within its deadline, so a stopping process lets
        it finish rather than refuse it.
        """
        share = process_share()
        if share is None:
            yield None
            return
        with self._lock:
            if self._checks[tenant] >= CHECKS_PER_TENANT:
                refused = TENANT_BOUND
            elif self._total >= share:
                refused = PROCESS_SHARE
            else:
                refused = None
                self._total += 1
                self._checks[tenant] += 1
        try:
            yield refused
        finally:
            if refused is None:
                with self._lock:
                    self._total -= 1
                    self._checks[tenant] -= 1
                    if not self._checks[tenant]:
                        del self._checks[tenant]

    def total(self) -> int:
        """Return how many waits and outside checks the process holds now."""
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


class _Waker:
    """Wake waiters by key from a thread of the process's own, on a connection of its own.

    The thread starts with the first waiter, reconnects after losing its connection (waiters time
    out meanwhile) and lets its connection go after IDLE_EXIT without a waiter, so a quiet process
    holds none. A subclass says what a round of the thread does (`_round`).
    """

    # What the log says when the connection goes away.
    lost = "a wait thread lost its connection"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiters: dict[object, set[threading.Event]] = defaultdict(set)
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stop = threading.Event()

    def stop(self) -> None:
        """Stop the thread and close its connection (it starts again with the next waiter)."""
        self._stop.set()
        thread = self._thread
        if thread is not None:
            thread.join(5 * POLL)

    def _add(self, key: object) -> threading.Event:
        """Register a waiter for the key (the lock held); return its Event."""
        event = threading.Event()
        self._waiters[key].add(event)
        return event

    def _discard(self, key: object, event: threading.Event) -> bool:
        """Drop a waiter (the lock held); return whether it was the key's last."""
        self._waiters[key].discard(event)
        if self._waiters[key]:
            return False
        del self._waiters[key]
        return True

    def _start(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._ready.clear()
                self._stop.clear()
                # The settings of Django's connection, for a connection of the thread's own.
                params = connection.get_connection_params()
                self._thread = threading.Thread(target=self._run, args=(params,), daemon=True)
                self._thread.start()
        self._ready.wait(5)

    def _idle(self) -> bool:
        with self._lock:
            return not self._waiters

    def _run(self, params: dict) -> None:
        params = {k: v for k, v in params.items() if k not in ("cursor_factory", "context")}
        idle_since = None
        while not self._stop.is_set():
            try:
                with psycopg.connect(**params, autocommit=True) as conn:
                    self._connected(conn)
                    while not self._stop.is_set():
                        self._round(conn)
                        if not self._idle():
                            idle_since = None
                        elif idle_since is None:
                            idle_since = time.monotonic()
                        elif time.monotonic() - idle_since > IDLE_EXIT:
                            return  # a quiet process holds no connection either
            except Exception:  # the connection went away: connect again; waiters time out meanwhile
                log.exception(self.lost)
                self._ready.set()
                self._lost()
                self._stop.wait(RECONNECT_DELAY)

    def _connected(self, conn: psycopg.Connection) -> None:
        """Set up a fresh connection."""

    def _round(self, conn: psycopg.Connection) -> None:
        """Wait up to POLL for changes and wake their waiters."""
        raise NotImplementedError

    def _lost(self) -> None:
        """Forget what the lost connection had read."""

    def _wake(self, keys) -> None:
        with self._lock:
            events = [e for key in keys for e in self._waiters.get(key, ())]
        for event in events:
            event.set()


class Hub(_Waker):
    """Wake the waiters of reservations as the placer's notifications name them."""

    lost = "the placer-notification listener lost its connection"

    def __init__(self) -> None:
        super().__init__()
        self._tenants: Counter[int] = Counter()

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
                    event = self._add(reservation_pk)
            if event is None:
                yield None
                return
            try:
                # Notifications sent before LISTEN took effect would be lost: the caller reads the
                # row after this, so a batch that ran meanwhile is seen either way.
                self._start()
                yield event
            finally:
                with self._lock:
                    self._tenants[tenant_pk] -= 1
                    self._discard(reservation_pk, event)

    def waits_of(self, tenant_pk: int) -> int:
        """Return how many waits the tenant has open in this process."""
        with self._lock:
            return self._tenants[tenant_pk]

    def _connected(self, conn: psycopg.Connection) -> None:
        conn.execute(f"LISTEN {PLACED_CHANNEL}")
        self._ready.set()

    def _round(self, conn: psycopg.Connection) -> None:
        for note in conn.notifies(timeout=POLL):
            self._wake({int(p) for p in note.payload.split(",") if p.strip().isdigit()})


HUB = Hub()


# Per watched node: what its assignments and state are made of, hashed; `now()` is the statement's.
_DIGEST_SQL = """
SELECT n.name, md5(concat_ws('|', n.cordoned, n.maintenance, n.drain_started_at, n.no_schedule_reasons,
       n.provision_state, n.connectivity, n.role, n.trust, n.owner_tenant_id, n.converged,
       (SELECT string_agg(concat_ws(':', d.id, d.uuid, d.index, d.device_class, d.parent_id, b.lo, b.hi,
                                    b.owner, b.lo <= now(), b.idle), ',' ORDER BY d.id, b.lo)
          FROM inventory_device d
          LEFT JOIN LATERAL (
               SELECT lower(x.during) AS lo, upper(x.during) AS hi,
                      coalesce(a.reservation_id::text, a.instance_id) AS owner,
                      r.keep_when_idle::text || (r.conditions @> '[{"type": "Idle"}]')::text AS idle
                 FROM capacity_devicebooking x JOIN capacity_allocation a ON a.id = x.allocation_id
                 LEFT JOIN capacity_reservation r ON r.id = a.reservation_id
                WHERE x.device_id = d.id AND upper(x.during) > now()) AS b ON true
         WHERE d.node_id = n.id)))
  FROM inventory_node n WHERE n.name = ANY(%s)
"""


class Watch(_Waker):
    """Wake the waiters of nodes whose assignments changed.

    Every POLL seconds the thread reads a digest of every watched node's assignments and state (one
    statement for all of them) and wakes the waiters of a node whose digest moved: a placement,
    release, preemption, repair, drain, report or cordon, or a booking starting or ending (the
    digest says which bookings hold their device now), or a reservation marked Idle or kept.
    """

    lost = "the node watch lost its connection"

    def __init__(self) -> None:
        super().__init__()
        self._seen: dict[str, str] = {}
        # Nodes whose digest the thread has read since their first waiter came: a change from then
        # on wakes them, so a waiter reads the feed only once its node is here.
        self._baselined: set[str] = set()
        self._baseline = threading.Condition(self._lock)

    @contextmanager
    def watching(self, node: str):
        """Register a waiter for the node; yield the Event set when its digest moves."""
        with self._lock:
            event = self._add(node)
        try:
            # The first digest is the baseline: a change after it wakes the waiter.
            self._start()
            with self._baseline:
                self._baseline.wait_for(lambda: node in self._baselined, timeout=5)
            yield event
        finally:
            with self._lock:
                if self._discard(node, event):
                    self._baselined.discard(node)

    def _connected(self, conn: psycopg.Connection) -> None:
        self._seen = {}

    def _round(self, conn: psycopg.Connection) -> None:
        with self._lock:
            nodes = sorted(self._waiters)
        if nodes:
            digests = dict(conn.execute(_DIGEST_SQL, [nodes]).fetchall())
            seen = self._seen
            moved = [n for n in nodes if n in seen and digests.get(n) != seen[n]]
            self._seen = {n: d for n, d in digests.items() if n in nodes}
            self._wake(moved)
            with self._baseline:
                self._baselined.update(n for n in nodes if n in self._waiters)
                self._baseline.notify_all()
        self._ready.set()
        self._stop.wait(POLL)

    def _lost(self) -> None:
        self._seen = {}
        with self._baseline:
            self._baselined.clear()


WATCH = Watch()
