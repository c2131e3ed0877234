"""The one way into capacity for views, the API, the CLI, the port and the worker: names only.

Each use case lives in a module of its own (prepare, reserve, placing, release, preview, earliest_start,
hints, repair, ...); this face gathers the names callers use. It loads nothing until a name is
asked (config.face): `from capacity.services import release` loads the release use case, not them all.
"""

from config.face import lazy_face

FACE = {
    "capacity.access": (
        "EVERYONE",
        "Scope",
        "may_read_node",
        "nodes_for",
        "pool_allows",
        "pools_for",
        "redact",
        "redacted_conditions",
        "sees_tenant",
        "visible_reservations",
    ),
    "capacity.models.reservations": (
        "BORROWED",
        "IDLE",
        "QUEUED_MESSAGE",
        "UNSCHEDULABLE",
        "preempt_at",
    ),
    "capacity.placers.ending": ("end_allocations",),
    # Where a pending reservation stands in its pool's queue: the queue's rule answers (capacity.rules).
    "capacity.rules": ("STARTS_LATER", "queue_places", "queue_text"),
    "capacity.services.inputs": ("normalize", "parse_duration", "stored_input", "stored_request"),
    "capacity.services.preview": ("MAX_PREVIEW_CANDIDATES", "Preview", "preview"),
    "capacity.services.release": ("expire_ended", "release", "retry_pending"),
    "capacity.services.reservations": (
        "allocations_for",
        "allocations_of",
        "awaiting",
        "get",
        "list_reservations",
    ),
    "capacity.services.reserve": ("ReserveResult", "admission_context", "reserve"),
    "capacity.placement.satisfiable": ("UNSATISFIABLE",),
    "capacity.services.usage_hooks": ("usage_for", "usage_series"),
    "capacity.services.waiting": ("await_placer", "is_queued"),
}

lazy_face(__name__, FACE)
