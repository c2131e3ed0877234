"""Who a user is to capacity: an operator (staff, or in the "operators" group) or a tenant's member.

The browser views and the API both ask here; the rules read only `is_staff`, the group and
`Tenant.users`.
"""

from __future__ import annotations

from .services import EVERYONE, Scope

OPERATORS_GROUP = "operators"
# A node's own credential acts as the user "node.<node name>" (services.tokens.issue_node_token):
# such a user may report for its node and read its assignments, nothing else.
NODE_USER_PREFIX = "node."


def node_of(user) -> str | None:
    """Return the node a node credential's user stands for, or None for people."""
    name = user.get_username() if user is not None and user.is_authenticated else ""
    return name.removeprefix(NODE_USER_PREFIX) if name.startswith(NODE_USER_PREFIX) else None


def is_operator(user) -> bool:
    """Return whether the user runs the fleet: staff, or a member of the "operators" group."""
    if not user or not user.is_authenticated or node_of(user) is not None:
        return False
    if user.is_staff:
        return True
    # Cached on the user object: one request asks several times.
    if not hasattr(user, "_berth_operator"):
        user._berth_operator = user.groups.filter(name=OPERATORS_GROUP).exists()
    return user._berth_operator


def tenant_slugs(user) -> frozenset[str]:
    """Return the slugs of the tenants the user belongs to."""
    if not user or not user.is_authenticated:
        return frozenset()
    if not hasattr(user, "_berth_tenants"):
        user._berth_tenants = frozenset(user.tenants.values_list("slug", flat=True))
    return user._berth_tenants


def scope_for(user) -> Scope:
    """Return whose reservations the user may touch: every tenant for operators, else their own."""
    return EVERYONE if is_operator(user) else Scope(tenant_slugs(user))
