"""usage's job in the worker (`run_placer`): fold the samples, mark idle bookings and unbooked use;
and its step in the worker's round: fold the booked hours' changes.

The idle check reads two hours of samples of every running reservation (3.6 s at 10,000 of them,
bench_idle): about a two-hour question, asked every CHECK_EVERY seconds rather than every round.
The samples' hourly fold comes along: an hour is folded a few minutes after it is over.
"""

from __future__ import annotations

import logging
import threading
import time

from django.utils import timezone

from capacity.port import survive

from .booked_hours import fold_booked_hours
from .folds import fold_samples
from .idle import mark_idle
from .unbooked import mark_unbooked_use

CHECK_EVERY = 300.0
# The booked hours' changes (usage/booked_hours.py) are exact when their booking commits; folding
# them once a minute keeps what a month's usage report reads to about a row per key and day.
FOLD_EVERY = 60.0
_hours_folded = [float("-inf")]

log = logging.getLogger(__name__)


def check(now) -> None:
    """Fold the hours that are over, then mark idle bookings and use without a booking."""
    fold_samples(now)
    mark_idle(now)
    mark_unbooked_use(now)


def run_once() -> str:
    """Run one check (`run_placer --once`); say nothing, as the worker's housekeeping never did."""
    check(timezone.now())
    return ""


def serve(stop: threading.Event) -> None:
    """Check at once, then every CHECK_EVERY seconds until `stop`, surviving the database."""
    survive("usage", stop, _next, log)


def _next(stop: threading.Event) -> None:
    check(timezone.now())
    stop.wait(CHECK_EVERY)


def fold_hours() -> None:
    """Fold the booked hours' changes when FOLD_EVERY seconds went by (a step of the worker's round, before the repair)."""
    if time.monotonic() - _hours_folded[0] >= FOLD_EVERY:
        _hours_folded[0] = time.monotonic()
        fold_booked_hours()
