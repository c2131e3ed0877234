"""Fair share: a tenant's GPU-hours booked, decayed with a half-life, over its guarantee.

An hour booked `age` ago weighs 2^(-age / half_life): booked now it counts whole, a half-life ago
half. A span [start, end] booked before `now` adds the integral of that weight over the span, in
GPU-hours times the span's whole-GPU equivalent (a MIG slice its share). Over the tenant's
guarantee (whole GPUs) the figure reads as "hours of its share used lately": 1.0 is as much as its
guarantee, 2.0 twice. A tenant with a guarantee of 0 has no fair share (None). Pure: seconds in,
no clock, no Django (tests/policy read it without a database).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

HOUR = 3600.0
# Bookings older than this many half-lives weigh under 0.1 %: the fair queue and the Shares page read none.
HALF_LIVES_READ = 10


def decayed_gpu_hours(spans: Iterable[tuple[float, float, float]], now: float, half_life: float) -> float:
    """Return the decayed GPU-hours of (start, end, gpus) spans in epoch seconds, as seen at `now`.

    The part of a span after `now` is not booked yet and counts nothing; `half_life` is in seconds.
    """
    if half_life <= 0:
        raise ValueError("the half-life must be positive")
    rate = math.log(2) / half_life
    total = 0.0
    for start, end, gpus in spans:
        end = min(end, now)
        if end <= start or gpus <= 0:
            continue
        # ∫ e^(-rate (now - t)) dt from start to end
        total += gpus * (math.exp(-rate * (now - end)) - math.exp(-rate * (now - start))) / rate
    return total / HOUR


def fair_share(decayed_hours: float, guaranteed_gpus: int, half_life: float) -> float | None:
    """Return decayed GPU-hours over what the guarantee would book over the same decay, or None.

    A guarantee held without pause forever books guaranteed × half_life / ln 2 decayed seconds:
    the figure is 1.0 for a tenant that always held exactly its guarantee.
    """
    if guaranteed_gpus <= 0:
        return None
    return decayed_hours / (guaranteed_gpus * half_life / math.log(2) / HOUR)
