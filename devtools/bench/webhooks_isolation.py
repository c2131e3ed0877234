"""bench_webhooks --dribble: what one slow receiver costs the others, and how fast a backlog drains.

A dribbling receiver (a thread of this process on 127.0.0.1) answers `HTTP/1.1 200 OK` and then
one header line every 2 s, as the receiver that once held every subscriber for 167 s did. The
fast receiver is the benchmark's receiver process. Deliveries go out from a `run_placer` process.

1. Paced: `count` placements `pace` seconds apart, each to `dribblers` dribbling subscriptions and
   one fast one: the fast subscription's time from commit to arrival (p50, p95, max).
2. Backlog: `backlog` placements made with no worker running, to `subscribers` fast subscriptions
   (and the dribblers); then the worker starts: deliveries per second until every one arrived.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import threading
import time

from django.contrib.auth import get_user_model
from django.db.models import Max
from django.utils import timezone

from capacity import services
from capacity.conf import placer_config
from capacity.models import Reservation
from config.outbound.targets import DEADLINE
from devtools.bench.placements import _pct, build_pool, requests_for
from devtools.bench.webhooks import BENCH_USER, _Receiver, _round, _start_worker, _stop
from webhooks import services as hooks
from webhooks.models import Delivery, Event, Subscription

EVENTS = ["reservation.placed"]
DRIBBLE_EVERY = 2.0  # seconds between header lines
DRIBBLE_FOR = 120.0  # seconds a connection dribbles at most (bounded: the deadline cuts it long before)


class Dribbler:
    """The dribbling receiver: a listener thread and a thread per connection, all bounded."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0), backlog=128)
        self.listener.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/slow"
        self.stop = threading.Event()
        self.requests = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._dribble, args=(conn,), daemon=True).start()

    def _dribble(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(10)
            try:
                seen = b""
                while b"\r\n\r\n" not in seen and len(seen) < 1 << 20:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    seen += chunk
                self.requests += 1
                conn.sendall(b"HTTP/1.1 200 OK\r\n")
                for line in range(int(DRIBBLE_FOR / DRIBBLE_EVERY)):
                    if self.stop.wait(DRIBBLE_EVERY):
                        return
                    conn.sendall(f"X-Slow-{line}: still thinking\r\n".encode())
            except OSError:
                return  # Berth hung up at its deadline

    def close(self) -> None:
        self.stop.set()
        self.listener.close()


def _subscribe(user, url: str, how_many: int) -> None:
    for i in range(how_many):
        hooks.subscribe(user, {"url": url, "events": EVENTS, "description": f"bench {i}"})


def _wait_for(receiver: _Receiver, expected: int, limit: float) -> float:
    """Wait until `expected` deliveries arrived (at most `limit` s); return the last arrival's time."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and receiver.count() < expected:
        time.sleep(0.05)
    if receiver.count() < expected:
        raise RuntimeError(f"{expected - receiver.count()} deliveries did not arrive within {limit:g} s")
    with receiver.lock:
        return max(t for times in receiver.arrived.values() for t in times)


def run_dribble(
    nodes: int,
    count: int,
    pace: float,
    dribblers: int,
    backlog: int,
    subscribers: int,
    seed: int,
    progress=None,
) -> dict:
    """Measure the paced latency beside dribbling receivers, then the backlog's drain rate."""
    os.environ["BERTH_WEBHOOKS_ALLOW_PRIVATE"] = "1"  # both receivers are on loopback
    pool = build_pool(nodes, 1, progress=progress)
    config = dataclasses.replace(placer_config(), random=None)
    user, _ = get_user_model().objects.get_or_create(username=BENCH_USER, defaults={"is_staff": True})
    receiver, dribbler = _Receiver(), Dribbler()

    def reset() -> None:
        Subscription.objects.filter(owner=user).delete()
        for pk in Reservation.objects.filter(pool=pool, status="placed").values_list("pk", flat=True):
            services.release(pk)
        Event.objects.all().delete()
        with receiver.lock:
            receiver.arrived.clear()

    try:
        reset()
        _subscribe(user, dribbler.url, dribblers)
        _subscribe(user, receiver.url, 1)
        worker = _start_worker()
        try:
            _rate, committed = _round(requests_for(seed, count, pool.slug, 1)[0], config, pace)
            _wait_for(receiver, len(committed), 60)
            with receiver.lock:
                paced = sorted(
                    (t - committed[rid]) * 1000 for rid, ts in receiver.arrived.items() for t in ts
                )
            dribbled = dribbler.requests
        finally:
            _stop(worker)
        reset()
        _subscribe(user, dribbler.url, dribblers)
        _subscribe(user, receiver.url, subscribers)
        _rate, committed = _round(requests_for(seed + 1, backlog, pool.slug, 1)[0], config)
        expected = len(committed) * subscribers
        worker = _start_worker()  # returns once it serves
        started, wall = time.monotonic(), timezone.now()
        try:
            last = _wait_for(receiver, expected, 600)
        finally:
            _stop(worker)
        drained = last - started
        fanned = Delivery.objects.filter(subscription__url=receiver.url).aggregate(Max("created_at"))
        fanned_out = (fanned["created_at__max"] - wall).total_seconds()
        reset()
    finally:
        dribbler.close()
        receiver.close()
    return {
        "nodes": nodes,
        "deadlineSeconds": DEADLINE,
        "dribblingSubscriptions": dribblers,
        "dribbleEverySeconds": DRIBBLE_EVERY,
        "paced": {
            "placements": len(paced),
            "everySeconds": pace,
            "attemptsOnDribblers": dribbled,
            "fastCommitToDeliveryMs": {
                "p50": round(_pct(paced, 50), 1),
                "p95": round(_pct(paced, 95), 1),
                "max": round(paced[-1], 1) if paced else 0.0,
            },
        },
        "backlog": {
            "deliveries": expected,
            "fastSubscriptions": subscribers,
            "secondsToDrain": round(drained, 1),
            "secondsToFanOut": round(fanned_out, 1),
            "deliveriesPerSecond": round(expected / drained, 1) if drained else 0.0,
        },
        "undelivered": Delivery.objects.filter(status="pending")
        .exclude(subscription__url=dribbler.url)
        .count(),
    }
