"""Amounts held over time: the most a set of half-open intervals holds at any instant of a window.

Quota, scalar room and capacity all ask this one question of their rows; the SQL guards answer it
the same way (a running sum over start and end events, ends first at equal instants).
"""

from __future__ import annotations

from collections.abc import Iterable

Held = tuple[int, int, int]  # (start ms, end ms, amount), half-open [start, end)


def peak(held: Iterable[Held], start: int, end: int) -> int:
    """Return the most the intervals hold at once within `[start, end)` (0 when none overlaps).

    Back-to-back intervals never add up: an interval ending at t is gone before one starting at t.
    """
    # Comparisons rather than max() and min(): this runs for every node a placement considers.
    events: list[tuple[int, int]] = []
    for s, e, amount in held:
        if s < end and e > start and s < e and amount:
            events.append((s if s > start else start, amount))
            events.append((e if e < end else end, -amount))
    if len(events) == 2:
        return max(events[0][1], 0)
    # At one instant negative deltas sort first: ends are applied before starts.
    events.sort()
    running = best = 0
    for _, delta in events:
        running += delta
        if running > best:
            best = running
    return best


def at(held: Iterable[Held], instant: int) -> int:
    """Return what the intervals hold at one instant."""
    return sum(amount for s, e, amount in held if s <= instant < e)
