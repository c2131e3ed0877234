"""Who is looking at the inventory: inventory reads the answer, capacity.access decides it.

Node states, node summaries and node filters are drawn as a viewer sees them: an operator sees
every tenant's name and some tenant's schedulable nodes; a tenant names only its own tenants and
sees as schedulable only the nodes its work could use. capacity.access.Scope is such a viewer.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Protocol


class Viewer(Protocol):
    """Who reads nodes: every tenant (an operator), or some tenants (`tenants`, their slugs)."""

    @property
    def tenants(self) -> Collection[str] | None: ...

    @property
    def sees_every_tenant(self) -> bool: ...

    def allows(self, tenant_slug: str) -> bool:
        """Return whether the viewer may read this tenant's name."""
        ...
