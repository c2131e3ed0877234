"""Who may see and touch what: a caller's scope of tenants, and reasons redacted for it."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import Q

from capacity.models import Reservation
from capacity.placers.loader import may_use
from inventory.models import Node, Pool, Tenant
from inventory.states import ANOTHER_TENANTS_DEDICATION


@dataclass(frozen=True)
class Scope:
    """Whose reservations a caller may touch: the tenant slugs, or every tenant (operators)."""

    tenants: frozenset[str] | None = None

    def allows(self, tenant_slug: str) -> bool:
        """Return whether the caller may act for this tenant."""
        return self.tenants is None or tenant_slug in self.tenants


EVERYONE = Scope()


def pool_allows(pool: Pool, tenant: Tenant) -> bool:
    """Return whether the tenant may use the pool (the same rule the placer's PoolRow applies)."""
    return may_use(pool.owner_tenant_id, tuple(t.pk for t in pool.tenants.all()), tenant.pk)


# A dedication names its tenant; to any other tenant it reads as this.
_DEDICATION_RE = re.compile(r"dedicated=([A-Za-z0-9_-]+)")


def redact(text: str, scope: Scope) -> str:
    """Return a reason as a caller may read it: another tenant's dedication is not named.

    Stored reasons stay exact (operators read them whole); tenants read "dedicated to another
    tenant" where the spec's reason says `dedicated=<slug>` of a tenant not theirs.
    """
    if scope.tenants is None or not text or "dedicated=" not in text:
        return text
    return _DEDICATION_RE.sub(
        lambda m: m[0] if sees_tenant(scope, m[1]) else ANOTHER_TENANTS_DEDICATION, text
    )


def sees_tenant(scope: Scope, slug: str | None) -> bool:
    """Return whether a caller may read this tenant's name (its own, or any for operators)."""
    return scope.tenants is None or slug is None or slug in scope.tenants


def redacted_conditions(conditions: list[dict], scope: Scope) -> list[dict]:
    """Return a reservation's conditions as the caller may read them.

    Messages are redacted; a preemption by another tenant's work does not give its reservation id.
    """
    if scope.tenants is None:
        return conditions
    return [_redacted(c, scope) for c in conditions]


def _redacted(condition: dict, scope: Scope) -> dict:
    found = (
        {**condition, "message": redact(condition["message"], scope)} if "message" in condition else condition
    )
    if found.get("byOwnTenant") is False:
        found = {k: v for k, v in found.items() if k not in ("reservationId", "byOwnTenant")}
    return found


def nodes_for(scope: Scope, nodes=None, *, pools_checked: bool = False):
    """Return the nodes a caller may read: in its pools, and not owned by another tenant.

    A node another tenant owns adds nothing to the caller and tells it about that tenant: to a
    tenant it does not exist (404), as a reservation of another tenant does not. With
    `pools_checked` the caller has already limited `nodes` to pools it may read.
    """
    nodes = Node.objects.all() if nodes is None else nodes
    if scope.tenants is None:
        return nodes
    if not pools_checked:
        nodes = nodes.filter(pool__in=[p.pk for p in pools_for(scope)])
    return nodes.filter(Q(owner_tenant__isnull=True) | Q(owner_tenant__slug__in=scope.tenants))


def may_read_node(scope: Scope, owner_slug: str | None) -> bool:
    """Return whether a caller may read a node with this owner (in a pool it may read)."""
    return sees_tenant(scope, owner_slug)


def pools_for(scope: Scope):
    """Return the pools a caller may book into or read."""
    pools = Pool.objects.select_related("site", "owner_tenant").prefetch_related("tenants")
    if scope.tenants is None:
        return pools
    tenants = list(Tenant.objects.filter(slug__in=scope.tenants))
    return [p for p in pools if any(pool_allows(p, t) for t in tenants)]


def visible_reservations(pks: Iterable[int], scope: Scope) -> dict[str, Any]:
    """Return {"reservations": the ids the caller may read, ascending; "others": how many it may not}.

    Another tenant's reservation id tells a tenant what that tenant books: it is counted, not named.
    """
    pks = sorted(set(pks))
    if scope.tenants is None:
        return {"reservations": pks, "others": 0}
    mine = sorted(
        Reservation.objects.filter(pk__in=pks, tenant__slug__in=scope.tenants).values_list("pk", flat=True)
    )
    return {"reservations": mine, "others": len(pks) - len(mine)}
