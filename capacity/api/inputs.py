"""What the API checks before a request body reaches the services.

The services validate every field and name it in their messages. This adds the few things that
only callers of the HTTP API may not do, and catches values the services would crash on instead of
refusing (reported to the services' owner): a duration of billions of days overflows `timedelta`,
and a window beyond year 9999 overflows `datetime`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from capacity.placement import INVALID_INPUT, CapacityError
from capacity.services import DURATION_RE

# The input of reservations.create and capacity.preview. reservationId and instanceId are the
# services' own (set on create, or by the capacity port), excludeNodes is the placer's, and
# nodeLabels is set by modules through the port, never by API callers.
API_FIELDS = frozenset(
    {
        "tenantId",
        "poolId",
        "devices",
        "topology",
        "resources",
        "duration",
        "during",
        "idempotencyKey",
        "binding",
        "priority",
        "gang",
        "imageId",
    }
)
# 366 days is 527,040 minutes: six digits is enough for every duration the services accept.
MAX_DURATION_DIGITS = 6
MAX_EPOCH_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z


def _epoch_ms(value: object) -> int | None:
    """Return the epoch milliseconds of an int or ISO 8601 value as the services read it, else None."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        if parsed.tzinfo is not None:
            return int(parsed.timestamp() * 1000)
    return None


def reservation_input(data: Any) -> Mapping[str, Any]:
    """Return the body of a create or preview request, or raise INVALID_INPUT."""
    if not isinstance(data, Mapping):
        raise CapacityError(INVALID_INPUT, "the request must be a JSON object")
    for name in data:
        if name not in API_FIELDS:
            raise CapacityError(INVALID_INPUT, f"{name} is not a known field")
    duration = data.get("duration")
    match = DURATION_RE.match(duration) if isinstance(duration, str) else None
    if match and len(match[1]) > MAX_DURATION_DIGITS:
        raise CapacityError(INVALID_INPUT, "duration must be at most 366d")
    during = data.get("during")
    if isinstance(during, Mapping):
        for name in ("start", "end"):
            ms = _epoch_ms(during.get(name))
            if ms is not None and not 0 <= ms <= MAX_EPOCH_MS:
                raise CapacityError(
                    INVALID_INPUT, f"during.{name} must lie between 1970-01-01 and 9999-12-31 (UTC)"
                )
    return data
