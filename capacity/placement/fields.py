"""The reservation request, declared once: its fields, who reads and who may send each, its limits.

Plain data that every reader takes from here rather than listing the fields again: the core's
validator (validate.py), capacity's input normalizer (services/inputs.py), the API's parser and
its OpenAPI schema (api/inputs.py, api/serializers.py), the booking form, the `reserve` command
and the capacity port. Nothing here imports Django.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

from .types import PRIORITIES, TOPOLOGIES

__all__ = [
    "API_FIELDS",
    "CORE",
    "FIELDS",
    "PRIORITIES",
    "REQUEST_FIELDS",
    "SERVICE",
    "SERVICE_FIELDS",
    "TOPOLOGIES",
    "Field",
    "request_body",
]

# --- limits: bounds on what a request may carry, so no caller can make Berth store or scan without
# limit -------------------------------------------------------------------------------------------
MAX_DEVICES: Final = 64
MAX_GANG_SIZE: Final = 64
MAX_RESOURCES: Final = 32
MAX_TEXT: Final = 200
MAX_EXCLUDED: Final = 256
MAX_LABELS: Final = 64
# With the pool-lease placer, `wait: {timeoutMs}` holds the answer until the batch ran, at most 30 s.
MAX_WAIT_MS: Final = 30_000
MAX_DURATION_DAYS: Final = 366
# Six digits hold every duration up to the limit (366 days is 527,040 minutes).
MAX_DURATION_DIGITS: Final = 6
# A window may start this long before now (a clock a little behind, a form filled in slowly).
START_GRACE_MINUTES: Final = 5
# The caller's input is kept with the reservation: bound what it may cost to store.
MAX_INPUT_BYTES: Final = 64 * 1024
# Windows must stay between 1970 and 9999, the range Postgres and Python datetimes share here.
MAX_EPOCH_MS: Final = 253_402_300_799_999
# A series' rule (`repeat`, booked by the series app): its frequencies and days, and its bounds.
FREQS: Final = ("daily", "weekly")
DAYS: Final = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")
MAX_OCCURRENCES: Final = 200
MAX_SPAN_DAYS: Final = 366
MAX_INTERVAL: Final = 366
# \A and \Z: `$` matches before a trailing newline; [0-9]: `\d` matches other scripts' digits.
IDEMPOTENCY_KEY_RE: Final = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._:-]{0,199}\Z")
DURATION_RE: Final = re.compile(r"\A([0-9]+)(m|h|d|w)\Z")
BINDINGS: Final = ("none", "node", "kubernetes")

# --- fields ---------------------------------------------------------------------------------------
CORE: Final = "core"  # validated by the placement core (validate_request)
SERVICE: Final = "service"  # read by capacity's services; the core never sees it


@dataclass(frozen=True)
class Field:
    """One field of the request: its API name, its Python name, who reads it, whether callers send it."""

    name: str  # as the API spells it
    arg: str  # as Python callers spell it (the port's keyword arguments, the form, the command)
    reader: str  # CORE or SERVICE
    api: bool  # API callers may send it (the form and the command speak the API's shape too)
    help: str = ""  # the OpenAPI description


FIELDS: Final = (
    # What API callers send, in the schema's order.
    Field("tenantId", "tenant_id", CORE, True, "The tenant slug, such as acme."),
    Field("poolId", "pool_id", CORE, True, "The pool slug, such as h100-prod."),
    Field("devices", "devices", CORE, True, f"At most {MAX_DEVICES} in all."),
    Field("topology", "topology", CORE, True),
    Field("resources", "resources", CORE, True, "Scalars such as vcpu, memoryGiB."),
    Field(
        "duration", "duration", SERVICE, True, f"From now: 30m, 12h, 3d or 2w (at most {MAX_DURATION_DAYS}d)."
    ),
    Field("during", "during", CORE, True, "The window [start, end); give this or duration."),
    Field("idempotencyKey", "idempotency_key", SERVICE, True),
    Field("binding", "binding", SERVICE, True),
    Field("priority", "priority", CORE, True),
    Field("gang", "gang", CORE, True),
    Field("imageId", "image_id", CORE, True, "The image the workload runs (image-cached scorer)."),
    Field("wait", "wait", SERVICE, True, f"At most {MAX_WAIT_MS} ms."),
    Field(
        "keepWhenIdle",
        "keep_when_idle",
        SERVICE,
        True,
        "Never release it for idleness (still marked Idle), where the pool's policy allows it.",
    ),
    Field(
        "repeat",
        "repeat",
        SERVICE,
        True,
        "A series (docs/series.md): {freq: daily|weekly, byDay, interval, count or until} over the"
        " first occurrence's window; at most 200 occurrences over 366 days. Create only.",
    ),
    Field(
        "allOrNothing",
        "all_or_nothing",
        SERVICE,
        True,
        "With repeat: book every occurrence or none (409 SERIES_NOT_PLACED listing those that would not place).",
    ),
    # Set by capacity itself: the owner is the reservation it creates (or the port's instance),
    # excludeNodes is the placer's, nodeLabels are set by modules through the port, a lease by
    # `binding: node`.
    Field("reservationId", "reservation_id", CORE, False),
    Field("instanceId", "instance_id", CORE, False),
    Field("excludeNodes", "exclude_nodes", CORE, False),
    Field("nodeLabels", "node_labels", CORE, False),
    Field("projectId", "project_id", CORE, False),
    Field("lease", "lease", CORE, False),
)

# What the core's validator takes; what capacity reads itself; what API callers may send.
REQUEST_FIELDS: Final = frozenset(f.name for f in FIELDS if f.reader == CORE)
SERVICE_FIELDS: Final = tuple(f.name for f in FIELDS if f.reader == SERVICE)
API_FIELDS: Final = frozenset(f.name for f in FIELDS if f.api)
OWNER_FIELDS: Final = ("reservationId", "instanceId")
# The fields of the request's parts.
DEVICE_FIELDS: Final = frozenset({"class", "count", "selector", "topology"})
EXPRESSION_FIELDS: Final = frozenset({"key", "op", "values"})
GANG_FIELDS: Final = frozenset({"size", "topologyKey"})
WINDOW_FIELDS: Final = frozenset({"start", "end"})
WAIT_FIELDS: Final = frozenset({"timeoutMs"})

_NAME_OF_ARG: Final = {f.arg: f.name for f in FIELDS}


def request_body(**values: Any) -> dict[str, Any]:
    """Return the request in the API's shape from values under their Python names; None leaves one out."""
    return {_NAME_OF_ARG[arg]: value for arg, value in values.items() if value is not None}
