"""A series' recurrence rule: read, checked and expanded once, for every path that books a series.

`repeat: {"freq": "daily" | "weekly", "byDay": ["MO", …], "interval", "count" | "until"}` is an
RFC 5545 rule over the first occurrence's window, in UTC, expanded by python-dateutil's rrule.
The API, the booking form, the `reserve` command and another app (series.port) all call `expand`,
so a rule is refused the same way wherever it comes from: INVALID_INPUT naming the field, before any
row is read or lock taken. Plain computation: no Django, no I/O (kept out of the placement core,
which takes no clock types or third-party packages).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from itertools import islice, pairwise
from typing import Final

from dateutil import rrule

# The rule's bounds are declared with the create's fields (capacity.placement.fields): the API's
# schema and the booking form state them too.
from capacity.port import (
    DAYS,
    FREQS,
    INVALID_INPUT,
    MAX_EPOCH_MS,
    MAX_INTERVAL,
    MAX_OCCURRENCES,
    MAX_SPAN_DAYS,
    CapacityError,
)

REPEAT_FIELDS: Final = frozenset({"freq", "byDay", "interval", "count", "until"})
_RRULE_FREQ: Final = {"daily": rrule.DAILY, "weekly": rrule.WEEKLY}
_WEEKDAYS: Final = dict(
    zip(DAYS, (rrule.MO, rrule.TU, rrule.WE, rrule.TH, rrule.FR, rrule.SA, rrule.SU), strict=True)
)
DAY_RE: Final = re.compile(r"\A[0-9]{4}-[0-9]{2}-[0-9]{2}\Z")
MS: Final = timedelta(milliseconds=1)


@dataclass(frozen=True)
class Repeat:
    """A recurrence rule as the request gave it: until is epoch ms (inclusive), or None with a count."""

    freq: str
    by_day: tuple[str, ...]
    interval: int
    count: int | None
    until: int | None

    def rule_text(self) -> str:
        """Return the rule as an RFC 5545 RRULE value (what the calendar feed and the pages show)."""
        parts = [f"FREQ={self.freq.upper()}"]
        if self.interval != 1:
            parts.append(f"INTERVAL={self.interval}")
        if self.by_day:
            parts.append("BYDAY=" + ",".join(self.by_day))
        if self.count is not None:
            parts.append(f"COUNT={self.count}")
        if self.until is not None:
            parts.append("UNTIL=" + _utc(self.until).strftime("%Y%m%dT%H%M%SZ"))
        return ";".join(parts)

    def as_input(self) -> dict:
        """Return the rule in the API's shape (until as an ISO 8601 time)."""
        out: dict = {"freq": self.freq, "interval": self.interval}
        if self.by_day:
            out["byDay"] = list(self.by_day)
        if self.count is not None:
            out["count"] = self.count
        if self.until is not None:
            out["until"] = _utc(self.until).isoformat().replace("+00:00", "Z")
        return out


def _invalid(message: str) -> CapacityError:
    return CapacityError(INVALID_INPUT, message)


def _utc(ms: int) -> datetime:
    return datetime(1970, 1, 1, tzinfo=UTC) + ms * MS


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _until(value: object) -> int:
    """Return `until` as epoch ms: a time, or a date meaning to the end of that day (UTC)."""
    if _is_int(value) and 0 <= value <= MAX_EPOCH_MS:
        return value
    if isinstance(value, str):
        text = value.strip()
        try:
            if DAY_RE.match(text):
                day = date.fromisoformat(text)
                end = datetime(day.year, day.month, day.day, tzinfo=UTC) + (timedelta(days=1) - MS)
                return int((end - _utc(0)) / MS)
            parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            pass
        else:
            if parsed.tzinfo is not None and _utc(0) <= parsed:
                return min(int((parsed - _utc(0)) / MS), MAX_EPOCH_MS)
    raise _invalid(
        "repeat.until must be a date (2027-03-01), an ISO 8601 time with a zone or epoch milliseconds"
    )


def parse_repeat(value: object) -> Repeat:
    """Return the rule `repeat` names, or raise INVALID_INPUT naming the field at fault."""
    if not isinstance(value, Mapping):
        raise _invalid("repeat must be an object: {freq, byDay, interval, count or until}")
    unknown = sorted(set(value) - REPEAT_FIELDS)
    if unknown:
        raise _invalid(f"repeat.{unknown[0]} is not a known field (freq, byDay, interval, count, until)")
    freq = value.get("freq")
    if freq not in FREQS:
        raise _invalid("repeat.freq must be daily or weekly")
    days = value.get("byDay")
    # Weekly names its days; daily may (weekdays only), but a list naming none is no rule.
    unnamed = days is None and freq == "weekly"
    if unnamed or (days is not None and (not isinstance(days, list) or not days)):
        raise _invalid("repeat.byDay must name at least one day (MO, TU, WE, TH, FR, SA, SU)")
    by_day: tuple[str, ...] = ()
    if days is not None:
        # A list, not next(…, None): null is a day that is not one too.
        bad = [d for d in days if d not in DAYS]
        if bad:
            raise _invalid(f"repeat.byDay: {str(bad[0])[:20]!r} is not a day (MO, TU, WE, TH, FR, SA, SU)")
        by_day = tuple(sorted(set(days), key=DAYS.index))
    interval = value.get("interval", 1)
    if not _is_int(interval) or not 1 <= interval <= MAX_INTERVAL:
        raise _invalid(f"repeat.interval must be a whole number from 1 to {MAX_INTERVAL}")
    count, until = value.get("count"), value.get("until")
    if (count is None) == (until is None):
        raise _invalid("repeat: give count or until (one of them)")
    if count is not None and (not _is_int(count) or not 1 <= count <= MAX_OCCURRENCES):
        raise _invalid(f"repeat.count must be from 1 to {MAX_OCCURRENCES}")
    return Repeat(freq, by_day, interval, count, None if until is None else _until(until))


def expand(repeat: Repeat, start: int, end: int) -> list[int]:
    """Return the occurrences' starts (epoch ms) of a rule over the first window [start, end).

    The first window is the first occurrence, so it must fall on one of the rule's days; `until`
    may not come before it; at most MAX_OCCURRENCES occurrences over at most MAX_SPAN_DAYS; no
    occurrence may overlap the next.
    """
    first = _utc(start)
    weekday = DAYS[first.weekday()]
    if repeat.by_day and weekday not in repeat.by_day:
        raise _invalid(
            f"repeat.byDay: the first window starts on a {weekday}, not on {', '.join(repeat.by_day)}"
        )
    if repeat.until is not None and repeat.until < start:
        raise _invalid("repeat.until must not be before the first window's start (during.start)")
    rule = rrule.rrule(
        _RRULE_FREQ[repeat.freq],
        dtstart=first,
        interval=repeat.interval,
        byweekday=[_WEEKDAYS[d] for d in repeat.by_day] or None,
        count=repeat.count,
        until=None if repeat.until is None else _utc(repeat.until),
        wkst=rrule.MO,
    )
    starts = [int((at - _utc(0)) / MS) for at in islice(rule, MAX_OCCURRENCES + 1)]
    field = "repeat.until" if repeat.until is not None else "repeat.count"
    if repeat.count is not None and len(starts) < repeat.count:
        raise _invalid(f"{field}: the series would run past 9999-12-31")
    if len(starts) > MAX_OCCURRENCES:
        raise _invalid(f"{field}: a series has at most {MAX_OCCURRENCES} occurrences; this rule makes more")
    length = end - start
    if starts[-1] + length - start > MAX_SPAN_DAYS * 24 * 3600 * 1000:
        raise _invalid(f"{field}: a series spans at most {MAX_SPAN_DAYS} days from its first start")
    gaps = [b - a for a, b in pairwise(starts)]
    if gaps and min(gaps) < length:
        raise _invalid("during: each window must end before the next occurrence starts")
    return starts
