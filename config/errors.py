"""Berth's error codes: each means one thing, has one HTTP status, and is listed in docs/api.md.

Standard library only: the pure placement core raises these too. Services raise a `BerthError`
subclass (CapacityError, InventoryError) with a code from here; the API's exception handler
(config/api/exceptions.py) answers `{"code", "message"}` with the code's status, and nothing else maps
codes to statuses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True)
class Code:
    """An error code's HTTP status and what it means."""

    status: int
    meaning: str


INVALID_INPUT: Final = "INVALID_INPUT"
UNAUTHENTICATED: Final = "UNAUTHENTICATED"
FORBIDDEN: Final = "FORBIDDEN"
NOT_FOUND: Final = "NOT_FOUND"
METHOD_NOT_ALLOWED: Final = "METHOD_NOT_ALLOWED"
NOT_ACCEPTABLE: Final = "NOT_ACCEPTABLE"
CONFLICT: Final = "CONFLICT"
IDEMPOTENCY_CONFLICT: Final = "IDEMPOTENCY_CONFLICT"
IDEMPOTENCY_IN_FLIGHT: Final = "IDEMPOTENCY_IN_FLIGHT"
QUOTA_EXCEEDED: Final = "QUOTA_EXCEEDED"
SERIES_NOT_PLACED: Final = "SERIES_NOT_PLACED"
POLICY_LIMIT: Final = "POLICY_LIMIT"
PAYLOAD_TOO_LARGE: Final = "PAYLOAD_TOO_LARGE"
UNSUPPORTED_MEDIA_TYPE: Final = "UNSUPPORTED_MEDIA_TYPE"
UNSUPPORTED: Final = "UNSUPPORTED"
THROTTLED: Final = "THROTTLED"
INTERNAL: Final = "INTERNAL"
UNAVAILABLE: Final = "UNAVAILABLE"

# In the order the API docs list them. QUOTA_EXCEEDED is 409, not 403: the request is allowed in
# principle and succeeds once something is released (403 would blur it with FORBIDDEN).
# UNSUPPORTED is 422, not 501: the request is understood, and a 5xx reads as a server failure
# to clients, proxies and monitoring. POLICY_LIMIT is 422, not 403: the caller may book here, the
# request is well formed, and it breaks a rule of the pool's policy (docs/policy.md, Limits); 403
# would read as "you may not" and 400 as "fix the syntax".
CODES: Final[dict[str, Code]] = {
    INVALID_INPUT: Code(400, "the input is malformed or breaks a limit; nothing was written"),
    UNAUTHENTICATED: Code(401, "no valid credentials (missing, unknown, expired or revoked token)"),
    FORBIDDEN: Code(403, "the caller's role or tenant may not do this"),
    NOT_FOUND: Code(404, "no such object, or not one the caller may see"),
    METHOD_NOT_ALLOWED: Code(405, "the endpoint does not take this HTTP method"),
    NOT_ACCEPTABLE: Code(406, "the endpoint cannot answer in the media type asked for"),
    CONFLICT: Code(
        409,
        "the input contradicts another object (a device that belongs to another node; approving a"
        " booking that does not await approval)",
    ),
    IDEMPOTENCY_CONFLICT: Code(409, "the idempotency key was already used for a different request"),
    IDEMPOTENCY_IN_FLIGHT: Code(409, "a request with this idempotency key is still running: retry it"),
    QUOTA_EXCEEDED: Code(409, "the tenant would hold more than a quota limit at some instant of the window"),
    SERIES_NOT_PLACED: Code(
        409,
        "allOrNothing: some occurrences of a series would not place (listed in `occurrences`); nothing was booked",
    ),
    POLICY_LIMIT: Code(
        422,
        "the booking is past a limit of the pool's policy (maxDuration, maxLeadTime, maxFutureGpuHours)"
        " or its outside check (policyWebhook) refused it",
    ),
    PAYLOAD_TOO_LARGE: Code(413, "the request body is larger than the endpoint accepts"),
    UNSUPPORTED_MEDIA_TYPE: Code(415, "the body is not JSON (or the type the endpoint reads)"),
    UNSUPPORTED: Code(422, "understood, but this server does not do it"),
    THROTTLED: Code(429, "too many requests: retry after the time in Retry-After"),
    INTERNAL: Code(500, "a fault inside Berth, not the request's (it is logged): tell an operator"),
    UNAVAILABLE: Code(
        503, "the database could not be reached: retry after Retry-After with the same idempotency key"
    ),
}


class BerthError(Exception):
    """Refuse a request with a stable code and a human-readable message."""

    def __init__(self, code: str, message: str, *, retry_after: int | None = None) -> None:
        if code not in CODES:
            raise ValueError(f"unknown error code {code!r}")
        super().__init__(message)
        self.code = code
        self.message = message
        # Seconds after which the same request may succeed: the API answers them as Retry-After.
        self.retry_after = retry_after

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code!r}, {self.message!r})"


def http_status(code: str) -> int:
    """Return the HTTP status of an error code; an unknown code is the caller's fault (400)."""
    found = CODES.get(code)
    return found.status if found is not None else 400
