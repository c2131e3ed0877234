"""What the API checks before a request body reaches the services.

The services validate every field and name it in their messages. This adds what only callers of
the HTTP API may not do: name fields outside API_FIELDS (excludeNodes is the placer's).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from capacity.placement import INVALID_INPUT, CapacityError

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
