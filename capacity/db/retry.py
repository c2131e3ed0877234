"""Retry a whole transaction that Postgres ended with a deadlock or a serialization failure.

Berth's transactions take their locks in one order, so neither should happen; if one does anyway
(an operator's ad-hoc SQL, a future path that got the order wrong), the caller gets the answer of
a clean second try instead of a server error. Only an outermost call retries: inside someone
else's transaction the failure belongs to that transaction.
"""

from __future__ import annotations

import functools
import random
import time
from collections.abc import Callable

from django.db import OperationalError, connection

RETRY_SQLSTATES = frozenset({"40P01", "40001"})  # deadlock_detected, serialization_failure
MAX_TRIES = 3


def _retryable(err: OperationalError) -> bool:
    return getattr(err.__cause__, "sqlstate", None) in RETRY_SQLSTATES


def retry_on_conflict[T](fn: Callable[..., T]) -> Callable[..., T]:
    """Run `fn` again (at most MAX_TRIES in all) when its transaction was ended by a deadlock."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs) -> T:
        if connection.in_atomic_block:
            return fn(*args, **kwargs)
        for attempt in range(1, MAX_TRIES + 1):
            try:
                return fn(*args, **kwargs)
            except OperationalError as err:
                if attempt == MAX_TRIES or not _retryable(err):
                    raise
                time.sleep(random.uniform(0.005, 0.02) * attempt)  # let the other transaction finish
        raise AssertionError("unreachable")

    return wrapper
