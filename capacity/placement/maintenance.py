"""Maintenance windows planned ahead: no new work on a node inside one.

A window is per-node unavailability over a span of time, like a booking that takes every atom and
every scalar of its node. The planner turns a node down when the request's window overlaps one of
the node's (filter `maintenance-window`, the reason naming the window); earliest start treats its
span as busy for the whole node; the availability chart counts the node's atoms as taken in it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from .types import MaintenanceSpan, Window

# The rejection's filter: a stable code callers may match on (the reason names the window).
WINDOW_FILTER: Final = "maintenance-window"


def _civil(days: int) -> tuple[int, int, int]:
    """Return (year, month, day) of a day count since 1970-01-01 (proleptic Gregorian; no clock read)."""
    # Howard Hinnant's days_from_civil inverse: eras of 400 years, years starting in March.
    z = days + 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, day


def stamp(ms: int) -> str:
    """Return an epoch-ms instant as the explain writes it: 2026-12-08T00:00Z (seconds when not zero)."""
    days, rest = divmod(ms // 1000, 86_400)
    year, month, day = _civil(days)
    hour, rest = divmod(rest, 3600)
    minute, second = divmod(rest, 60)
    text = f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}"
    return f"{text}:{second:02d}Z" if second else f"{text}Z"


def window_reason(span: MaintenanceSpan) -> str:
    """Return why a node is turned down for a span: "window 7, 2026-12-08T00:00Z to ...: firmware"."""
    text = f"window {span.id}, {stamp(span.start)} to {stamp(span.end)}"
    return f"{text}: {span.reason}" if span.reason else text


def overlapping(windows: Iterable[MaintenanceSpan], start: int, end: int) -> MaintenanceSpan | None:
    """Return the earliest-starting window that overlaps [start, end) (half-open), or None."""
    found = None
    for span in windows:
        if (
            span.start < end
            and span.end > start
            and (found is None or (span.start, span.id) < (found.start, found.id))
        ):
            found = span
    return found


def closes(windows: Iterable[MaintenanceSpan], during: Window) -> bool:
    """Return whether any window overlaps the request's window."""
    start, end = during.start, during.end
    return any(span.start < end and span.end > start for span in windows)
