"""What the API checks before a request body reaches the services.

The services validate every field and name it in their messages. This adds what only callers of
the HTTP API may not do: name fields outside API_FIELDS (excludeNodes is the placer's); and what
only they may do: send the idempotency key as the `Idempotency-Key` header instead of in the body.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from drf_spectacular.utils import OpenApiParameter

from capacity.placement import INVALID_INPUT, CapacityError
from capacity.services.inputs import IDEMPOTENCY_KEY_RE

IDEMPOTENCY_HEADER = "Idempotency-Key"
IDEMPOTENCY_HEADER_PARAMETER = OpenApiParameter(
    IDEMPOTENCY_HEADER,
    str,
    OpenApiParameter.HEADER,
    description=(
        "The body's idempotencyKey, as a header: it means exactly the same. Both present and "
        "different: 400 INVALID_INPUT."
    ),
)

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
        "wait",
    }
)


def reservation_input(data: Any, extra: frozenset[str] = frozenset()) -> Mapping[str, Any]:
    """Return the body of a create or preview request, or raise INVALID_INPUT.

    `extra` names fields one endpoint takes besides (earliest's horizon).
    """
    if not isinstance(data, Mapping):
        raise CapacityError(INVALID_INPUT, "the request must be a JSON object")
    for name in data:
        if name not in API_FIELDS and name not in extra:
            raise CapacityError(INVALID_INPUT, f"{name} is not a known field")
    return data


def request_input(request, extra: frozenset[str] = frozenset()) -> Mapping[str, Any]:
    """Return the request's body (as reservation_input) with the Idempotency-Key header, if sent,
    as its idempotencyKey; refuse a malformed header, or one that differs from the body's key."""
    data = reservation_input(request.data, extra)
    header = request.headers.get(IDEMPOTENCY_HEADER)
    if header is None:
        return data
    if not IDEMPOTENCY_KEY_RE.match(header):
        raise CapacityError(
            INVALID_INPUT,
            f"the {IDEMPOTENCY_HEADER} header must be 1 to 200 letters, digits, '.', '_', ':' or '-'",
        )
    body = data.get("idempotencyKey")
    if body is not None and body != header:
        raise CapacityError(
            INVALID_INPUT,
            f"the {IDEMPOTENCY_HEADER} header ({header!r}) and the body's idempotencyKey ({body!r}) "
            "differ: send the key once, or the same in both",
        )
    return {**data, "idempotencyKey": header}
