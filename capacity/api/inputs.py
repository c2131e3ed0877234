"""What the API checks before a request body reaches the services, and how its schema reads.

The services validate every field and name it in their messages. This adds what only callers of
the HTTP API may not do: name fields outside API_FIELDS (capacity.placement.fields: excludeNodes
is the placer's, reservationId and instanceId the services' own, nodeLabels the port's); and what
only they may do: send the idempotency key as the `Idempotency-Key` header instead of in the body.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema_field
from rest_framework import serializers

from capacity.models import Reservation
from capacity.placement import INVALID_INPUT, CapacityError
from capacity.placement.fields import (
    API_FIELDS,
    DAYS,
    DURATION_RE,
    FIELDS,
    FREQS,
    IDEMPOTENCY_KEY_RE,
    MAX_DEVICES,
    MAX_GANG_SIZE,
    MAX_INTERVAL,
    MAX_OCCURRENCES,
    MAX_WAIT_MS,
    PRIORITIES,
    TOPOLOGIES,
)
from capacity.placement.selectors import MAX_EXPRESSIONS, OPERATORS
from inventory.api.serializers import KEY_PATTERN, KeywordFieldsMixin

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


# --- the schema of the input (OpenAPI) ----------------------------------------------------------

EXPRESSION_SCHEMA = {
    "type": "object",
    "properties": {
        "key": {"type": "string", "pattern": KEY_PATTERN},
        "op": {"type": "string", "enum": list(OPERATORS)},
        "values": {
            "type": "array",
            "nullable": True,
            "maxItems": 64,
            "items": {"oneOf": [{"type": "string"}, {"type": "number"}, {"type": "boolean"}]},
        },
    },
    "required": ["key", "op"],
}
SELECTOR_SCHEMA = {
    "oneOf": [
        {
            "type": "string",
            "description": "Shorthand, e.g. `gpuProduct in (H100-SXM5-80GB), vramGiB >= 80, fabric.domain`.",
        },
        {"type": "array", "maxItems": MAX_EXPRESSIONS, "items": EXPRESSION_SCHEMA},
        {
            "type": "object",
            "properties": {
                "matchExpressions": {"type": "array", "maxItems": MAX_EXPRESSIONS, "items": EXPRESSION_SCHEMA}
            },
        },
    ],
    "description": "Every expression must hold; each reads a device attribute, then a node label with that key.",
}
TIME_SCHEMA = {
    "oneOf": [
        {"type": "integer", "minimum": 0, "description": "Epoch milliseconds."},
        {"type": "string", "format": "date-time", "description": "ISO 8601 with a time zone."},
    ]
}


@extend_schema_field(SELECTOR_SCHEMA)
class SelectorField(serializers.JSONField):
    """A device selector: shorthand string, list of expressions, or {matchExpressions}."""


@extend_schema_field(TIME_SCHEMA)
class TimeField(serializers.JSONField):
    """A point in time: epoch milliseconds or ISO 8601."""


class DeviceRequestSerializer(KeywordFieldsMixin, serializers.Serializer):
    """A number of atoms of one class, optionally filtered by a selector."""

    class_ = serializers.RegexField(KEY_PATTERN, required=False, help_text="Device class; gpu by default.")
    count = serializers.IntegerField(min_value=1, max_value=MAX_DEVICES, required=False)
    selector = SelectorField(required=False, allow_null=True)
    topology = serializers.ChoiceField(choices=TOPOLOGIES, required=False, allow_null=True)


class WindowSerializer(serializers.Serializer):
    """A half-open window [start, end)."""

    start = TimeField()
    end = TimeField()


class GangSerializer(serializers.Serializer):
    """Book size nodes at once, each taking the devices."""

    size = serializers.IntegerField(min_value=1, max_value=MAX_GANG_SIZE)
    topologyKey = serializers.RegexField(KEY_PATTERN, required=False, allow_null=True)


class WaitSerializer(serializers.Serializer):
    """With the pool-lease placer, hold the answer until the batch ran (ignored by the inline placer)."""

    timeoutMs = serializers.IntegerField(min_value=0, max_value=MAX_WAIT_MS)


class RepeatSerializer(serializers.Serializer):
    """An RFC 5545 rule over the first window, in UTC: give count or until."""

    freq = serializers.ChoiceField(choices=FREQS)
    byDay = serializers.ListField(child=serializers.ChoiceField(choices=DAYS), required=False, min_length=1)
    interval = serializers.IntegerField(min_value=1, max_value=MAX_INTERVAL, required=False)
    count = serializers.IntegerField(min_value=1, max_value=MAX_OCCURRENCES, required=False)
    until = serializers.CharField(
        required=False, help_text="A date (inclusive, UTC), an ISO 8601 time, or epoch milliseconds."
    )


# How the schema describes each field the API takes (null where the API reads null as left out); which fields, in which order, and their help
# texts come from the request's one declaration (capacity.placement.fields).
INPUT_SCHEMA: dict[str, Callable[..., serializers.Field]] = {
    "tenantId": serializers.CharField,
    "poolId": serializers.CharField,
    "devices": lambda **kw: DeviceRequestSerializer(many=True, required=False, allow_null=True, **kw),
    "topology": lambda **kw: serializers.ChoiceField(
        choices=TOPOLOGIES, required=False, allow_null=True, **kw
    ),
    "resources": lambda **kw: serializers.DictField(
        child=serializers.IntegerField(min_value=0), required=False, allow_null=True, **kw
    ),
    "duration": lambda **kw: serializers.RegexField(DURATION_RE.pattern, required=False, **kw),
    "during": lambda **kw: WindowSerializer(required=False, **kw),
    "idempotencyKey": lambda **kw: serializers.RegexField(
        IDEMPOTENCY_KEY_RE.pattern, required=False, allow_null=True, **kw
    ),
    "binding": lambda **kw: serializers.ChoiceField(choices=Reservation.Binding.values, required=False, **kw),
    "priority": lambda **kw: serializers.ChoiceField(
        choices=PRIORITIES, required=False, allow_null=True, **kw
    ),
    "gang": lambda **kw: GangSerializer(required=False, allow_null=True, **kw),
    "imageId": lambda **kw: serializers.CharField(required=False, allow_null=True, **kw),
    "wait": lambda **kw: WaitSerializer(required=False, **kw),
    "keepWhenIdle": lambda **kw: serializers.BooleanField(required=False, **kw),
    "repeat": lambda **kw: RepeatSerializer(required=False, **kw),
    "allOrNothing": lambda **kw: serializers.BooleanField(required=False, **kw),
}
if set(INPUT_SCHEMA) != API_FIELDS:
    raise RuntimeError(
        f"INPUT_SCHEMA must describe exactly API_FIELDS: {sorted(set(INPUT_SCHEMA) ^ API_FIELDS)}"
    )

# The input of reservations.create and capacity.preview: the declared fields API callers send.
ReservationInputSerializer = type(
    "ReservationInputSerializer",
    (serializers.Serializer,),
    {
        "__module__": __name__,
        "__doc__": "The input of reservations.create and capacity.preview.",
        # Fields are made in the declaration's order, which is the schema's order.
        **{
            f.name: INPUT_SCHEMA[f.name](**({"help_text": f.help} if f.help else {})) for f in FIELDS if f.api
        },
    },
)
