"""Long-polls of a node's assignments without a database connection per waiting agent.

One thread per process, on a connection of its own, reads a digest of every watched node's
assignments and state every POLL seconds (one statement for all of them) and wakes the waiters of
a node whose digest moved: a placement, release, preemption, repair, drain, report or cordon, or a
booking starting or ending (the digest says which bookings hold their device now). A waiter gives
its Django connection back while it waits, so 20 waiting agents cost this one connection.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from contextlib import contextmanager

import psycopg
from django.db import connection

POLL = 0.5  # seconds between digests: half of it is the mean wait after a change
IDLE_EXIT = 30.0  # the thread lets its connection go after this long without a waiter
RECONNECT_DELAY = 0.5

# Per watched node: what its assignments and state are made of, hashed; `now()` is the statement's.
_DIGEST_SQL = """
SELECT n.name, md5(concat_ws('|', n.cordoned, n.maintenance, n.drain_started_at, n.no_schedule_reasons,
       n.provision_state, n.connectivity, n.role, n.trust, n.owner_tenant_id, n.converged,
       (SELECT string_agg(concat_ws(':', d.id, d.uuid, d.index, d.device_class, d.parent_id, b.lo, b.hi,
                                    b.owner, b.lo <= now()), ',' ORDER BY d.id, b.lo)
          FROM inventory_device d
          LEFT JOIN LATERAL (
               SELECT lower(x.during) AS lo, upper(x.during) AS hi,
                      coalesce(a.reservation_id::text, a.instance_id) AS owner
                 FROM capacity_devicebooking x JOIN capacity_allocation a ON a.id = x.allocation_id
                WHERE x.device_id = d.id AND upper(x.during) > now()) AS b ON true
         WHERE d.node_id = n.id)))
  FROM inventory_node n WHERE n.name = ANY(%s)
"""

log = logging.getLogger(__name__)


class Watch:
    """Wake the waiters of nodes whose assignments changed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiters: dict[str, set[threading.Event]] = defaultdict(set)
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._ready = threading.Event()
        # Nodes whose digest the thread has read since their first waiter came: a change from then
        # on wakes them, so a waiter reads the feed only once its node is here.
        self._baselined: set[str] = set()
        self._baseline = threading.Condition(self._lock)

    @contextmanager
    def watching(self, node: str):
        """Register a waiter for the node; yield the Event set when its digest moves."""
        event = threading.Event()
        with self._lock:
            self._waiters[node].add(event)
        try:
            self._start()
            with self._baseline:
                self._baseline.wait_for(lambda: node in self._baselined, timeout=5)
            yield event
        finally:
            with self._lock:
                self._waiters[node].discard(event)
                if not self._waiters[node]:
                    del self._waiters[node]
                    self._baselined.discard(node)

    def stop(self) -> None:
        """Stop the thread and close its connection (it starts again with the next waiter)."""
        self._stop.set()
        thread = self._thread
        if thread is not None:
            thread.join(5 * POLL)

    def _start(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._stop.clear()
                self._ready.clear()
                params = connection.get_connection_params()
                self._thread = threading.Thread(target=self._run, args=(params,), daemon=True)
                self._thread.start()
        # The first digest is the baseline: a change after it wakes the waiter.
        self._ready.wait(5)

    def _watched(self) -> list[str]:
        with self._lock:
            return sorted(self._waiters)

    def _run(self, params: dict) -> None:
        params = {k: v for k, v in params.items() if k not in ("cursor_factory", "context")}
        seen: dict[str, str] = {}
        idle_since = None
        while not self._stop.is_set():
            try:
                with psycopg.connect(**params, autocommit=True) as conn:
                    while not self._stop.is_set():
                        nodes = self._watched()
                        if nodes:
                            idle_since = None
                            digests = dict(conn.execute(_DIGEST_SQL, [nodes]).fetchall())
                            moved = [n for n in nodes if n in seen and digests.get(n) != seen[n]]
                            seen = {n: d for n, d in digests.items() if n in nodes}
                            self._wake(moved)
                            with self._baseline:
                                self._baselined.update(n for n in nodes if n in self._waiters)
                                self._baseline.notify_all()
                        elif idle_since is None:
                            idle_since = time.monotonic()
                        elif time.monotonic() - idle_since > IDLE_EXIT:
                            return  # a quiet process holds no connection either
                        self._ready.set()
                        self._stop.wait(POLL)
            except Exception:  # the connection went away: connect again; waiters time out meanwhile
                log.exception("the node watch lost its connection")
                self._ready.set()
                seen = {}
                with self._baseline:
                    self._baselined.clear()
                self._stop.wait(RECONNECT_DELAY)

    def _wake(self, nodes: list[str]) -> None:
        with self._lock:
            events = [e for n in nodes for e in self._waiters.get(n, ())]
        for event in events:
            event.set()


WATCH = Watch()
