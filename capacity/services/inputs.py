"""Caller input made plain: durations, times and windows parsed, capacity's own fields split off.

Which fields are capacity's own, and the limits, are declared in capacity.placement.fields.

Everything here refuses bad input with INVALID_INPUT before any lock is taken or row read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import date, datetime, timedelta
from typing import Any

from capacity.models import Reservation
from capacity.placement import INVALID_INPUT, CapacityError, PlacementRequest, validate_request
from capacity.placement.fields import (
    DURATION_RE,
    IDEMPOTENCY_KEY_RE,
    MAX_DURATION_DAYS,
    MAX_DURATION_DIGITS,
    MAX_EPOCH_MS,
    MAX_INPUT_BYTES,
    MAX_WAIT_MS,
    OWNER_FIELDS,
    SERVICE_FIELDS,
    START_GRACE_MINUTES,
    WAIT_FIELDS,
)

DEVICES_LIMITS_LABEL = "bc.dev/cap.devices.limits"
KUBERNETES_BINDING_LABEL = "bc.dev/cap.binding.kubernetes"
DAY_RE = re.compile(r"\A[0-9]{4}-[0-9]{2}-[0-9]{2}\Z")
START_GRACE = timedelta(minutes=START_GRACE_MINUTES)
DURATION_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
MAX_DURATION = timedelta(days=MAX_DURATION_DAYS)


def parse_duration(text: object, field: str = "duration") -> timedelta:
    """Return the timedelta of `30m`, `12h`, `1d` or `2w`."""
    match = DURATION_RE.match(text) if isinstance(text, str) else None
    if match and len(match[1]) > MAX_DURATION_DIGITS:
        raise CapacityError(INVALID_INPUT, f"{field} must be at most 366d")
    if not match or int(match[1]) == 0:
        raise CapacityError(INVALID_INPUT, f"{field} must look like 30m, 12h, 3d or 2w")
    value = timedelta(**{DURATION_UNITS[match[2]]: int(match[1])})
    if value > MAX_DURATION:
        raise CapacityError(INVALID_INPUT, f"{field} must be at most 366d")
    return value


def duration_text(value: timedelta) -> str:
    """Return a duration as parse_duration reads it back, the shortest way: 2w, 3d, 36h, 90m."""
    minutes = int(value.total_seconds() // 60)
    for unit, size in (("w", 7 * 24 * 60), ("d", 24 * 60), ("h", 60)):
        if minutes % size == 0 and minutes >= size:
            return f"{minutes // size}{unit}"
    return f"{minutes}m"


def parse_day(text: str, field: str) -> date:
    """Return the calendar day `text` names (YYYY-MM-DD); refuse a time, a shape or a day that is none."""
    value = text.strip() if isinstance(text, str) else ""
    if not DAY_RE.match(value):
        if DAY_RE.match(value[:10]) and value[10:11] in ("T", " "):
            raise CapacityError(INVALID_INPUT, f"{field}: a date (2026-12-01), not a time: whole UTC days")
        raise CapacityError(INVALID_INPUT, f"{field}: a date (2026-12-01) as YYYY-MM-DD")
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise CapacityError(
            INVALID_INPUT, f"{field}: a date (2026-12-01); {value} is no day of the calendar"
        ) from None


def epoch_ms(value: object, field: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        if not 0 <= value <= MAX_EPOCH_MS:
            raise CapacityError(INVALID_INPUT, f"{field} must lie between 1970-01-01 and 9999-12-31 (UTC)")
        return value
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            pass
        else:
            if parsed.tzinfo is None:
                raise CapacityError(INVALID_INPUT, f"{field} must carry a time zone")
            return epoch_ms(int(parsed.timestamp() * 1000), field)
    raise CapacityError(INVALID_INPUT, f"{field} must be epoch milliseconds or an ISO 8601 time")


def normalize(
    data: Mapping[str, Any],
    *,
    now: datetime,
    node_labels: Mapping[str, str] | None = None,
    owner_allowed: bool = False,
):
    """Split caller input into the core's request data and capacity's own fields; fill in the window.

    Callers give `duration` (starting now) or `during` {start, end}; capacity adds the capability
    labels its own reservations need. Callers may not set nodeLabels themselves. Capacity's own
    fields are idempotency_key, binding, wait_ms, keep_when_idle and input (what the reservation
    keeps of it).
    """
    if not isinstance(data, Mapping):
        raise CapacityError(INVALID_INPUT, "the request must be an object")
    core = {k: v for k, v in data.items() if k not in SERVICE_FIELDS}
    for name in ("nodeLabels", "lease", *(() if owner_allowed else OWNER_FIELDS)):
        if name in core:
            # Capacity sets these itself: the owner is the reservation it creates, labels its own.
            raise CapacityError(INVALID_INPUT, f"{name} is not a known field")
    key = data.get("idempotencyKey")
    if key is not None and (not isinstance(key, str) or not IDEMPOTENCY_KEY_RE.match(key)):
        raise CapacityError(
            INVALID_INPUT, "idempotencyKey must be 1 to 200 letters, digits, '.', '_', ':' or '-'"
        )
    binding = data.get("binding", Reservation.Binding.NONE)
    if binding not in Reservation.Binding.values:
        raise CapacityError(INVALID_INPUT, "binding must be one of none, node, kubernetes")
    if binding == Reservation.Binding.NODE:
        core["lease"] = True
    wait_ms = _wait_ms(data["wait"]) if "wait" in data else 0
    keep = data.get("keepWhenIdle", False)
    if not isinstance(keep, bool):
        raise CapacityError(INVALID_INPUT, "keepWhenIdle must be true or false")
    if "duration" in data and "during" in data:
        raise CapacityError(INVALID_INPUT, "give either duration or during, not both")
    if "duration" in data:
        start = int(now.timestamp() * 1000)
        core["during"] = {
            "start": start,
            "end": start + int(parse_duration(data["duration"]).total_seconds() * 1000),
        }
    elif isinstance(data.get("during"), Mapping):
        during = data["during"]
        core["during"] = {
            **during,
            **{k: epoch_ms(during[k], f"during.{k}") for k in ("start", "end") if k in during},
        }
    elif "during" not in data:
        raise CapacityError(INVALID_INPUT, "duration or during is required")
    _check_window(core.get("during"), now)
    stored = stored_input(data)
    if len(json.dumps(stored, default=str)) > MAX_INPUT_BYTES:
        raise CapacityError(INVALID_INPUT, f"the request must be at most {MAX_INPUT_BYTES} bytes as JSON")
    labels = dict(node_labels or {})
    # Capability labels go on capacity's own reservations; a module sets its own instances' labels.
    if data.get("resources") and "instanceId" not in data:
        labels.setdefault(DEVICES_LIMITS_LABEL, "*")
    if binding == Reservation.Binding.KUBERNETES:
        labels.setdefault(KUBERNETES_BINDING_LABEL, "*")
    if labels:
        core["nodeLabels"] = labels
    if "reservationId" not in core and "instanceId" not in core:
        core["reservationId"] = "new"
    extra = {"idempotency_key": key, "binding": binding, "wait_ms": wait_ms, "input": stored}
    return core, {**extra, "keep_when_idle": keep}


def _check_window(during: object, now: datetime) -> None:
    """Refuse a window longer than 366 days, one that has ended, or one that starts well before now."""
    if not isinstance(during, Mapping):
        return  # the core's validator names what is wrong with it
    start, end = during.get("start"), during.get("end")
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end)) or end <= start:
        return
    if end - start > MAX_DURATION.total_seconds() * 1000:
        raise CapacityError(INVALID_INPUT, "during must be at most 366d long")
    now_ms = int(now.timestamp() * 1000)
    if end <= now_ms:
        raise CapacityError(INVALID_INPUT, "during.end is in the past")
    if start < now_ms - START_GRACE.total_seconds() * 1000:
        raise CapacityError(INVALID_INPUT, "during.start must not be more than 5 minutes before now")


def _wait_ms(wait: object) -> int:
    timeout = wait.get("timeoutMs") if isinstance(wait, Mapping) else None
    if (
        not isinstance(wait, Mapping)
        or set(wait) != WAIT_FIELDS
        or not isinstance(timeout, int)
        or isinstance(timeout, bool)
        or not 0 <= timeout <= MAX_WAIT_MS
    ):
        raise CapacityError(INVALID_INPUT, f"wait must be {{timeoutMs}} with 0 to {MAX_WAIT_MS} milliseconds")
    return timeout


def stored_input(data: Mapping[str, Any]) -> dict[str, Any]:
    """Return the caller's input as a reservation keeps it: `wait` says how to answer, not what to book."""
    return {k: v for k, v in data.items() if k != "wait"}


def stored_request(reservation: Reservation) -> PlacementRequest:
    """Return the validated placement request a reservation was created with."""
    return validate_request({**reservation.request["placement"], "reservationId": str(reservation.pk)})
