"""A what-if side's figures over its bookings: GPUs per node, free GPUs over time, the run's span."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Protocol

from capacity.port import PlacerConfig, PoolIndex

from .demand import HOUR, Arrival


class Booked(Protocol):
    """What the figures read of a booking (whatif.book.Booked)."""

    start: int
    end: int
    pks: frozenset[int]
    gpus: float
    held: float


def gpu_shares(index: PoolIndex) -> dict[int, float]:
    """Return each bookable device's share of a whole GPU: 1 for a GPU, 1/n for one of its n slices."""
    shares = {}
    for pk in index.device_class:
        parent = index.parent.get(pk)
        shares[pk] = 1.0 / len(index.children[parent]) if parent is not None else 1.0
    return shares


def gpu_totals(index: PoolIndex) -> dict[str, float]:
    """Return each node's whole-GPU equivalents (healthy, bookable)."""
    shares = gpu_shares(index)
    totals: dict[str, float] = defaultdict(float)
    for pk, share in shares.items():
        totals[index.device_node[pk]] += share
    return dict(totals)


def free_over_time(
    index: PoolIndex, bookings: Sequence[Booked], start: int, end: int, points: int
) -> list[tuple[int, float, float]]:
    """Return (time, free GPUs, the most free GPUs on one node) at `points` instants in [start, end)."""
    if end <= start or points <= 0:
        return []
    step = max(1, (end - start) // points)
    times = [start + i * step for i in range(points)]
    totals = gpu_totals(index)
    node_of = index.device_node
    shares = gpu_shares(index)
    events: list[tuple[int, int, int]] = []  # (time, +1 start / -1 end, booking number)
    for number, b in enumerate(bookings):
        if b.end > b.start:
            events.append((b.start, 1, number))
            events.append((b.end, -1, number))
    events.sort(key=lambda e: (e[0], e[1]))  # ends before starts at one instant
    used: dict[str, float] = defaultdict(float)
    out = []
    cursor = 0
    for t in times:
        while cursor < len(events) and events[cursor][0] <= t:
            _, sign, number = events[cursor]
            for pk in bookings[number].pks:
                if pk in shares:
                    used[node_of[pk]] += sign * shares[pk]
            cursor += 1
        free = {n: totals[n] - used.get(n, 0.0) for n in totals}
        out.append((t, round(sum(free.values()), 3), round(max(free.values(), default=0.0), 3)))
    return out


def span_of(arrivals: Sequence[Arrival], bookings: Iterable[Booked]) -> tuple[int, int]:
    """Return the run's span: from the first arrival (or booked start) to the last booking's end, an hour at least."""
    bookings = list(bookings)
    start = min([a.at for a in arrivals] + [b.start for b in bookings], default=0)
    end = max((b.end for b in bookings), default=start)
    return start, max(end, start + HOUR)


def replace_config(config: PlacerConfig, weights, top_n, placer) -> PlacerConfig:
    """Return the settings with a run's changes to weights, top N and placer."""
    changes = {}
    if weights:
        changes["weights"] = {**(config.weights or {}), **weights}
    if top_n is not None:
        changes["top_n"] = top_n
    if placer:
        changes["placer"] = placer
    return dataclasses.replace(config, **changes) if changes else config


def borrowed_hours(bookings: Iterable[Booked], guaranteed: float) -> float:
    """Return the GPU-hours these bookings (one tenant's) held past `guaranteed`, instant by instant.

    The shares' own count (`held`: a MIG slice its compute slices over 7): what the tenant held
    beyond its guarantee at each instant, summed over time.
    """
    events = sorted(
        (t, sign * b.held) for b in bookings if b.end > b.start for t, sign in ((b.start, 1), (b.end, -1))
    )
    total, held, since = 0.0, 0.0, None
    for t, change in events:
        if since is not None:
            total += max(0.0, held - guaranteed) * (t - since)
        held += change
        since = t
    return total / HOUR
