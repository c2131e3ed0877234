"""A pool's cap on its outside checks at once (docs/policy.md, Outside check): policyWebhookConcurrency.

A pool may say how many of its creates wait on its outside check at once in a web process; one more
answers 429 THROTTLED at once, before anything is written, as the tenant's and the process's bounds
do (policy.outside_check asks here, inside their slot). Null: no cap of the pool's own. The setting is
read with the pool's lookup (Limits), so a create pays no statement for it.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

from capacity.port import INVALID_INPUT, CapacityError

NAME = "policyWebhookConcurrency"
MAX_CAP = 1000

_lock = threading.Lock()
_running: Counter[int] = Counter()


def parse_cap(value: object, name: str = NAME) -> int | None:
    """Return a pool's cap as a PUT sets it: a whole number from 1 to MAX_CAP, or null (no cap)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_CAP:
        raise CapacityError(
            INVALID_INPUT, f"{name} must be a whole number of checks from 1 to {MAX_CAP}, or null"
        )
    return value


@contextmanager
def pool_slot(pool_pk: int, cap: int | None) -> Iterator[bool]:
    """Hold one of the pool's check slots while the block runs; yield False (none held) at its cap."""
    if cap is None:
        yield True
        return
    with _lock:
        free = _running[pool_pk] < cap
        if free:
            _running[pool_pk] += 1
    try:
        yield free
    finally:
        if free:
            with _lock:
                _running[pool_pk] -= 1
                if not _running[pool_pk]:
                    del _running[pool_pk]


def busy(pool_slug: str, cap: int, retry_after: int) -> str:
    """Say why a create may not ask its pool's check now, and when to ask again."""
    return (
        f"{pool_slug} already has {cap} bookings waiting on its outside check (policyWebhookConcurrency);"
        f" nothing was booked: retry in {retry_after} s"
    )
