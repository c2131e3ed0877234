"""Webhooks benchmark (bench_webhooks): commit to delivery, and what subscribers cost placement.

Builds bench-<nodes> as bench_placements does and a receiver process on 127.0.0.1 that answers
204 and notes when each event arrived. Rounds of `count` inline placements alternate: no
subscription; `subscribers` subscriptions to every reservation event with no worker (what the
outbox costs placement); the same with a `run_placer` process delivering beside this one, as in
production. Then `count` placements `pace` seconds apart to one subscriber: the delay a receiver
sees when nothing queues. Each round's placements are released before
the next. Figures: placements per second per round, and per delivered event the time from the
placement's commit to its arrival at the receiver.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from django.contrib.auth import get_user_model

from capacity import services
from capacity.conf import placer_config
from capacity.models import Reservation
from devtools.bench.placements import _pct, build_pool, requests_for
from webhooks import services as hooks
from webhooks.models import RESERVATION_EVENTS, Delivery, Event, Subscription

BENCH_USER = "bench-webhooks"


class _Receiver:
    """The receiver process (devtools/bench/webhook_receiver.py): arrivals per reservation id."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("webhook_receiver.py"))],
            stdout=subprocess.PIPE,
            text=True,
        )
        self.url = f"http://127.0.0.1:{int(self.process.stdout.readline())}/bench"
        self.arrived: dict[str, list[float]] = {}
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            rid, at = line.split()
            with self.lock:
                self.arrived.setdefault(rid, []).append(float(at))

    def count(self) -> int:
        with self.lock:
            return sum(map(len, self.arrived.values()))

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(10)


def _round(asks: list[dict], config, pace: float = 0.0) -> tuple[float, dict[str, float]]:
    """Place `asks` inline one after another (`pace` seconds apart); return placements/s and each
    placed reservation's commit time."""
    committed: dict[str, float] = {}
    started = time.perf_counter()
    for ask in asks:
        result = services.reserve(ask, config=config)
        if result.reservation.status == "placed":
            committed[str(result.reservation.pk)] = time.monotonic()
        if pace:
            time.sleep(pace)
    return len(asks) / (time.perf_counter() - started), committed


def _subscribe(user, receiver: _Receiver, how_many: int) -> None:
    for i in range(how_many):
        hooks.subscribe(
            user, {"url": receiver.url, "events": list(RESERVATION_EVENTS), "description": f"bench {i}"}
        )


def _arrivals(receiver: _Receiver, committed: dict[str, float], per_event: int) -> list[float]:
    """Wait (at most 60 s) for every delivery; return the milliseconds from commit to arrival."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and receiver.count() < len(committed) * per_event:
        time.sleep(0.05)
    with receiver.lock:
        got = {rid: list(receiver.arrived.get(rid, [])) for rid in committed}
        receiver.arrived.clear()
    missing = len(committed) * per_event - sum(map(len, got.values()))
    if missing:
        raise RuntimeError(f"{missing} deliveries did not arrive within 60 s")
    return [(t - committed[rid]) * 1000 for rid, times in got.items() for t in times]


def run_webhooks(
    nodes: int, count: int, subscribers: int, rounds: int, seed: int, pace: float, progress=None
) -> dict:
    """Alternate placement rounds without and with subscribers, then time paced deliveries."""
    os.environ["BERTH_WEBHOOKS_ALLOW_PRIVATE"] = "1"  # the receiver is on loopback
    pool = build_pool(nodes, 1, progress=progress)
    config = dataclasses.replace(placer_config(), random=None)
    user, _ = get_user_model().objects.get_or_create(username=BENCH_USER, defaults={"is_staff": True})
    Subscription.objects.filter(owner=user).delete()
    receiver = _Receiver()
    rates: dict[str, list[float]] = {"none": [], "outbox": [], "delivering": []}
    burst: list[float] = []
    paced: list[float] = []

    def reset() -> None:
        # Each round meets the same empty pool and outbox.
        Subscription.objects.filter(owner=user).delete()
        for pk in Reservation.objects.filter(pool=pool, status="placed").values_list("pk", flat=True):
            services.release(pk)
        Event.objects.all().delete()

    try:
        for number in range(rounds * 3):
            # Rounds alternate: no subscription; subscriptions but no worker (the outbox's own cost on
            # placement); subscriptions with the worker delivering beside the placing process.
            kind = ("none", "outbox", "delivering")[number % 3]
            worker = None
            if kind != "none":
                _subscribe(user, receiver, subscribers)
            if kind == "delivering":
                worker = _start_worker()
            rate, committed = _round(requests_for(seed + number, count, pool.slug, 1)[0], config)
            rates[kind].append(round(rate, 1))
            if worker is not None:
                burst += _arrivals(receiver, committed, subscribers)
                _stop(worker)
            reset()
        # One subscriber and placements `pace` seconds apart: the delay a receiver sees, unqueued.
        _subscribe(user, receiver, 1)
        worker = _start_worker()
        try:
            _rate, committed = _round(requests_for(seed + 999, count, pool.slug, 1)[0], config, pace)
            paced = _arrivals(receiver, committed, 1)
        finally:
            _stop(worker)
        reset()
    finally:
        receiver.close()
    burst.sort()
    paced.sort()
    none = sum(rates["none"])
    return {
        "nodes": nodes,
        "placementsPerRound": count,
        "subscribers": subscribers,
        "placementsPerSecond": rates,
        "slowdownPercent": {
            "outbox": round(100 * (1 - sum(rates["outbox"]) / none), 1),
            "delivering": round(100 * (1 - sum(rates["delivering"]) / none), 1),
        },
        "burstDeliveries": len(burst),
        "burstCommitToDeliveryMs": {"p50": round(_pct(burst, 50), 1), "p95": round(_pct(burst, 95), 1)},
        "pacedDeliveries": len(paced),
        "pacedEverySeconds": pace,
        "pacedCommitToDeliveryMs": {"p50": round(_pct(paced, 50), 1), "p95": round(_pct(paced, 95), 1)},
        "undelivered": Delivery.objects.filter(status="pending").count(),
    }


def _stop(worker: subprocess.Popen) -> None:
    worker.send_signal(signal.SIGTERM)
    worker.wait(30)


def _start_worker() -> subprocess.Popen:
    """Start `run_placer` (housekeeping hourly: only its webhooks loop matters here) and wait for it."""
    worker = subprocess.Popen(
        [sys.executable, "manage.py", "run_placer", "--interval", "3600"],
        cwd=Path(__file__).resolve().parents[2],
        env={**os.environ, "BERTH_WEBHOOKS_ALLOW_PRIVATE": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    worker.stdout.readline()  # "run_placer: … placer, housekeeping every …": it is serving
    time.sleep(0.5)  # and its webhooks thread has connected and is listening
    return worker
