"""The capacity worker behind `run_placer`: queued batches at once, housekeeping every interval."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.utils import timezone

from capacity.db.channels import QUEUED_CHANNEL, REPAIR_CHANNEL
from capacity.db.cursors import Listener
from capacity.placers.types import POOL_LEASE, PlacerConfig
from capacity.worker_jobs import AFTER_EXPIRY, BEFORE_EXPIRY, BEFORE_REPAIR, drop_connection, run_steps
from inventory import services as inventory
from inventory.models import Pool

from . import rules, services
from .archive import move_history
from .placers.batch import BatchResult, place_queued, queued_pools
from .services.repair import repair_pools

# With a stop signal, how often the worker looks at it while the queue is quiet (seconds).
STOP_POLL = 0.05
# Without housekeeping, a quiet worker still looks at the queue this often (seconds).
MAX_IDLE = 60.0
# A round that left reservations queued (their pool's lock was held by another placer, alive or
# dead mid-batch) is tried again this soon (seconds): no notification would come for them.
BUSY_POLL = 0.5
# After losing its database connection the worker tries again after FIRST_BACKOFF seconds, doubling
# up to MAX_BACKOFF: a restart or failover of Postgres takes seconds, and a worker that hammers a
# server coming up helps no one.
FIRST_BACKOFF = 0.1
MAX_BACKOFF = 5.0

log = logging.getLogger(__name__)


@dataclass
class Round:
    """What one round did: the batches (pool-lease only), ended reservations released, pending placed."""

    batch: BatchResult | None
    expired: int = 0
    retried: int = 0
    repaired: int = 0


# Bookings long over leave the live tables (capacity/archive.py) every five minutes rather than
# every round: a question about the last month. (The samples' fold and the idle check are the
# usage app's job in the worker, on the same period; its booked hours' fold is a step of the round.)
HISTORY_EVERY = 300.0
_history_moved = [float("-inf")]


def _move_history(now) -> None:
    if time.monotonic() - _history_moved[0] >= HISTORY_EVERY:
        _history_moved[0] = time.monotonic()
        move_history(now)


def run_round(config: PlacerConfig, *, housekeeping: bool = True) -> Round:
    """Place every queued batch (pool-lease); with housekeeping, also release ended reservations
    (with the apps' steps before and after: worker_jobs.register_step), mark nodes whose agent stopped
    reporting stale, run the apps' steps before the repair (maintenance windows start and end,
    usage folds the booked hours' changes), repair bookings still on unusable atoms (they were waiting for
    room) and retry pending ones."""
    # Pools with shares take their work in fair order (the queue's rule, capacity.rules): the figures
    # are read once a round (one statement); a round without housekeeping lets the batches read them
    # for the queued pools.
    fair = rules.queue_figures() if housekeeping else None
    batch = place_queued(config, fair=fair) if config.placer == POOL_LEASE else None
    if not housekeeping:
        return Round(batch)
    # Spot work whose notice ran out ends preempted, before an end it may have reached (policy.notice);
    # after the ends, lent GPUs go back to owners using them again or no longer lending (policy.reclaim).
    run_steps(BEFORE_EXPIRY)
    expired = services.expire_ended()
    run_steps(AFTER_EXPIRY)
    inventory.mark_stale_nodes(settings.NODE_STALE_AFTER, timezone.now())
    _move_history(timezone.now())
    # The apps' steps before the repair (the maintenance windows due start, nodes into maintenance,
    # and those over end, so the repair moves what a started window's nodes still hold).
    run_steps(BEFORE_REPAIR)
    pools = list(Pool.objects.filter(archived=False).values_list("pk", flat=True))
    repaired = len(repair_pools(pools, config=config).repaired)
    retried = services.retry_pending(pools, fair=fair)
    return Round(batch, expired, retried, repaired)


def serve(
    config: PlacerConfig,
    *,
    interval: float | None = 10.0,
    stop=None,
    report: Callable[[Round], None] | None = None,
    sleep: Callable[[float], object] = time.sleep,
) -> None:
    """Run rounds until `stop` (an Event) is set and a round finds the queue empty; survive the database.

    A lost connection (a restart, a failover, a terminated backend) ends what the worker was doing:
    everything it writes is transactional, so that rolls back (or, lost at COMMIT, went through
    whole), and queued reservations stay queued with their quota. The worker says so in its log,
    waits FIRST_BACKOFF seconds doubling up to MAX_BACKOFF, connects again and carries on with a
    full round (notifications sent meanwhile were lost with the connection).
    """
    backoff = FIRST_BACKOFF

    def connected() -> None:
        nonlocal backoff
        backoff = FIRST_BACKOFF

    while True:
        try:
            _serve(config, interval=interval, stop=stop, report=report, sleep=sleep, connected=connected)
            return
        except (OperationalError, InterfaceError) as err:
            log.warning("run_placer: lost the database (%s); connecting again in %.1f s", err, backoff)
            drop_connection()
            if stop is not None and stop.is_set():
                return
            sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF)


def _serve(
    config: PlacerConfig,
    *,
    interval: float | None,
    stop,
    report: Callable[[Round], None] | None,
    sleep: Callable[[float], object],
    connected: Callable[[], None],
) -> None:
    """Run rounds on one connection until `stop` is set and a round finds the queue empty;
    `connected()` after each round that went through.

    A reservation queued meanwhile wakes the worker at once (LISTEN on the queue's channel), and so
    does a request that left bookings on unusable atoms, or a series release pending work, to it
    (the repair channel: a round now); the housekeeping runs every `interval` seconds (never when
    None). Several workers may serve one database: each pool has one placer at a time, and a
    worker that found a pool held looks again within BUSY_POLL seconds, so the pools of a worker
    that died are taken over at once. After a round whose batches were not full it lingers
    `config.linger` seconds times the share of the batch left empty (a nearly full batch shows
    requests coming as fast as it places), so that requests arriving one by one while it is busy go
    in fewer, larger batches (each reads its ledger and commits once, whatever its size); an idle
    worker places at once.
    """
    with Listener(QUEUED_CHANNEL, REPAIR_CHANNEL) as woken:
        next_round = 0.0 if interval is not None else float("inf")
        while True:
            housekeeping = time.monotonic() >= next_round
            if housekeeping:
                next_round = time.monotonic() + interval if interval is not None else float("inf")
            done = run_round(config, housekeeping=housekeeping)
            connected()
            if report is not None:
                report(done)
            if done.batch and len(done.batch):
                empty = 1 - len(done.batch) / config.max_batch
                if empty > 0 and config.linger > 0:
                    sleep(config.linger * empty)
                continue  # more may have come meanwhile: look again before waiting
            if stop is not None and stop.is_set():
                return
            timeout = max(next_round - time.monotonic(), 0.0)
            if done.batch is not None and queued_pools():
                timeout = min(timeout, BUSY_POLL)  # another placer holds a pool, or held it and died
            channel = woken.wait(min(timeout, STOP_POLL) if stop is not None else min(timeout, MAX_IDLE))
            if channel == REPAIR_CHANNEL:
                next_round = 0.0  # a request left bookings on unusable atoms to the worker: now
