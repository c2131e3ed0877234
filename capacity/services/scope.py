"""Who may see and touch what, for the services: names only, the rules live in capacity.access."""

from capacity.access import (
    EVERYONE,
    Scope,
    may_read_node,
    nodes_for,
    pool_allows,
    pools_for,
    redact,
    redacted_conditions,
    sees_tenant,
    visible_reservations,
)

__all__ = [
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
]
