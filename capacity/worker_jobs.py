"""Jobs other apps run inside the worker (`run_placer`), beside the placer and never in its way.

An app registers a Job in its AppConfig.ready(); capacity knows no app that does (webhooks
delivers its events this way, whatif its runs); a step that must run inside the placer's own round,
before its repair, registers with register_step (the maintenance windows' start and end). `run_placer --once` runs each job's one round
after its own; `run_placer` runs each job's `serve(stop)` in a thread of its own, with its own
database connection, until the worker stops.

An app's step in the worker's own housekeeping round (capacity.worker.run_round) registers with
`register_step` at one of its points instead: BEFORE_EXPIRY and AFTER_EXPIRY, around the round's
release of ended bookings (policy's notice expiry must come before: spot work whose notice ran out
ends preempted, not released; its reclaims after), and BEFORE_REPAIR (usage folds the booked hours'
changes). Steps run in the round, in the order registered, on the worker's connection.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

import psycopg
from django.db import InterfaceError, OperationalError, connection

log = logging.getLogger(__name__)
# A lost database as Django wraps it, and as psycopg raises it where a job talks to the raw connection.
LOST_DATABASE = (OperationalError, InterfaceError, psycopg.OperationalError, psycopg.InterfaceError)
FIRST_BACKOFF, MAX_BACKOFF = 0.1, 5.0


@dataclass(frozen=True)
class Job:
    """A job of the worker: one round that says what it did ("" for nothing), and a loop until `stop`."""

    name: str
    run_once: Callable[[], str]
    serve: Callable[[threading.Event], None]


JOBS: dict[str, Job] = {}
# The round's points, in its order (capacity.worker.run_round).
BEFORE_EXPIRY, AFTER_EXPIRY, BEFORE_REPAIR = "before-expiry", "after-expiry", "before-repair"
STEPS: dict[str, dict[str, Callable[[], object]]] = {BEFORE_EXPIRY: {}, AFTER_EXPIRY: {}, BEFORE_REPAIR: {}}


def register(job: Job) -> None:
    """Add a job (once per name: ready() may run twice in tests)."""
    JOBS[job.name] = job


def register_step(where: str, name: str, step: Callable[[], object]) -> None:
    """Add a step of the housekeeping round at `where` (a point of STEPS), once per name."""
    STEPS[where][name] = step


def run_steps(where: str) -> None:
    """Run the housekeeping round's steps at `where`, in the order registered."""
    for step in STEPS[where].values():
        step()


def survive(name: str, stop: threading.Event, serve: Callable[[threading.Event], None], logger=log) -> None:
    """Call `serve(stop)` until `stop` is set, surviving the database.

    A lost connection is logged ("<name>: lost the database"), forgotten, and `serve` is called
    again after FIRST_BACKOFF seconds, doubling up to MAX_BACKOFF; a call that returns resets it.
    """
    backoff = FIRST_BACKOFF
    while not stop.is_set():
        try:
            serve(stop)
            backoff = FIRST_BACKOFF
        except LOST_DATABASE as err:
            logger.warning("%s: lost the database (%s); connecting again in %.1f s", name, err, backoff)
            drop_connection()
            stop.wait(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF)


def drop_connection() -> None:
    """Forget the thread's broken connection; the next statement opens a new one."""
    try:
        connection.close()
    except (OperationalError, InterfaceError):
        connection.connection = None


def start(stop: threading.Event) -> list[threading.Thread]:
    """Start every job's loop in a daemon thread; return the threads."""
    threads = []
    for job in JOBS.values():

        def loop(job: Job = job) -> None:
            try:
                job.serve(stop)
            except Exception:  # a job must never take the placer down with it
                log.exception("run_placer: the %s job stopped", job.name)
            finally:
                connection.close()

        thread = threading.Thread(target=loop, name=f"job-{job.name}", daemon=True)
        thread.start()
        threads.append(thread)
    return threads
