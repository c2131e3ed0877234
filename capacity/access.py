"""Who may do what, every rule in one place: views, the API, commands, webhooks and the calendar ask here.

- People: an operator (staff, or in the "operators" group) runs the fleet and acts for every
  tenant; anyone else acts for the tenants they belong to (`Tenant.users`): their `Scope`.
- Node credentials: the user "node.<name>" (identity.tokens.issue_node_token) may report for its
  node and read its assignments, nothing else; a node agent may not use an operator's token.
- What a scope may read: the pools its tenants may book (`may_use`, the placer's rule too), the
  nodes in them that no other tenant owns, its own reservations (`seen`); another tenant's name
  and reservation ids are left out of reasons. Elsewhere a scope is asked by name
  (`sees_every_tenant`, `reads_operators_words`), never whether its tenants are None: a contract
  test (tests/test_access_contract.py) keeps that question here.
- The command line acts for every tenant (`COMMAND_LINE`): whoever runs manage.py runs the server.
- A calendar feed lists what its owner may read; webhooks' node events are for operators.

config's bases (pages, API views, token check) ask through config.access; `register` answers there.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import Group, User
from django.db.models import Q
from django.http import Http404

from capacity.models import Reservation
from capacity.placement.eligibility import may_use
from inventory.models import Node, Pool, Tenant
from inventory.states import ANOTHER_TENANTS_DEDICATION

OPERATORS_GROUP = "operators"
# A node's own credential acts as the user "node.<node name>" (identity.tokens.issue_node_token):
# such a user may report for its node and read its assignments, nothing else.
NODE_USER_PREFIX = "node."
# What the reference agent (agent/berth_agent.py) sends: its requests are told apart by it.
AGENT_USER_AGENT = "berth-agent/"


@dataclass(frozen=True)
class Scope:
    """Whose reservations a caller may touch: the tenant slugs, or every tenant (operators)."""

    tenants: frozenset[str] | None = None
    # The same tenants' ids when known (a signed-in user's, read with the session): saves a lookup.
    ids: frozenset[int] | None = field(default=None, compare=False)

    @property
    def sees_every_tenant(self) -> bool:
        """Return whether the caller acts for every tenant (operators, the command line)."""
        return self.tenants is None

    @property
    def reads_operators_words(self) -> bool:
        """Return whether the caller reads the operators' own words: who stopped a node and why, its reports."""
        return self.sees_every_tenant

    def allows(self, tenant_slug: str) -> bool:
        """Return whether the caller may act for this tenant (and read its name)."""
        return self.sees_every_tenant or tenant_slug in self.tenants


EVERYONE = Scope()
# Whoever runs manage.py runs the server: the command line acts for every tenant.
COMMAND_LINE = EVERYONE


# --- people ----------------------------------------------------------------------------------------


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


def who_sql(user_id: str) -> tuple[str, str, str]:
    """Return SQL for what `is_operator` and `_tenants` ask of the user whose id is the SQL `user_id`.

    Three expressions (in the operators group?, tenant slugs, tenant ids in the same order) that the
    session store and the token check put into the statement that reads the session or token, so
    session, user, operator and tenants are one statement; `remember_who` keeps them on the user.
    """
    groups = User.groups.through._meta
    members = Tenant.users.through._meta
    # Aliases of their own: the caller's statement names its tables as it likes.
    of_user = (
        f"FROM {members.db_table} who_m JOIN {Tenant._meta.db_table} who_t"
        f" ON who_t.id = who_m.{members.get_field('tenant').column}"
        f" WHERE who_m.{members.get_field('user').column} = {user_id} ORDER BY who_t.id"
    )
    return (
        f"EXISTS (SELECT 1 FROM {groups.db_table} who_ug JOIN {Group._meta.db_table} who_g"
        f" ON who_g.id = who_ug.{groups.get_field('group').column}"
        f" WHERE who_ug.{groups.get_field('user').column} = {user_id} AND who_g.name = '{OPERATORS_GROUP}')",
        f"ARRAY(SELECT who_t.slug {of_user})",
        f"ARRAY(SELECT who_t.id {of_user})",
    )


def remember_who(user, operator: bool, slugs: list[str], ids: list[int]) -> None:
    """Keep on `user` what `who_sql` read, as `is_operator` and `_tenants` keep what they read."""
    user._berth_operator = bool(operator)
    user._berth_tenants = dict(zip(slugs or (), ids or (), strict=True))


def _tenants(user) -> dict[str, int]:
    """Return the tenants the user belongs to, slug -> id (read once per user object)."""
    if not user or not user.is_authenticated:
        return {}
    if not hasattr(user, "_berth_tenants"):
        user._berth_tenants = dict(user.tenants.values_list("slug", "pk"))
    return user._berth_tenants


def tenant_ids(user, slugs: Collection[str] | None = None) -> tuple[int, ...]:
    """Return the ids of the user's tenants (those of `slugs` only, when given), sorted.

    What stays a tenant's own when its slug is renamed and taken by a new tenant.
    """
    return tuple(sorted(pk for slug, pk in _tenants(user).items() if slugs is None or slug in slugs))


def scope_for(user) -> Scope:
    """Return whose reservations the user may touch: every tenant for operators, else their own."""
    if is_operator(user):
        return EVERYONE
    tenants = _tenants(user)
    return Scope(frozenset(tenants), frozenset(tenants.values()))


def feed_scope(feed) -> Scope:
    """Return what a calendar feed lists: what its owner may read, whoever holds its URL."""
    return scope_for(feed.owner)


def may_set_shares(user) -> bool:
    """Return whether the user may set or remove a pool's shares (operators; tenants read their own)."""
    return is_operator(user)


def may_set_policy(user) -> bool:
    """Return whether the user may change a pool's policy (operators; tenants of the pool read it)."""
    return is_operator(user)


def may_approve(user) -> bool:
    """Return whether the user may approve or deny a booking awaiting approval (operators)."""
    return is_operator(user)


def may_manage_teams(user) -> bool:
    """Return whether the user may create teams and set their members, quotas and shares (operators, SSO ones too)."""
    return is_operator(user)


def may_watch_nodes(user) -> bool:
    """Return whether the user may subscribe to node events (they name every tenant's nodes)."""
    return is_operator(user)


# --- node credentials ------------------------------------------------------------------------------


def view_refusal(user, view, kwargs: dict) -> str | None:
    """Return why the user may not call this API view, or None.

    A node credential may call only the views that say so (`for_nodes`: the node report, the
    node's assignments), and only for its own node (the view's `name`).
    """
    node = node_of(user)
    if node is not None and not (getattr(view, "for_nodes", False) and kwargs.get("name") == node):
        return "a node credential may only report for its node and read its assignments"
    return None


def node_call_refusal(user, node: str | None, user_agent: str) -> str | None:
    """Return why the user may not act as node `node`'s agent, or None (BerthAPIView checks which node).

    The node agent is refused an operator's token: an agent holding one could act on every node
    and every booking, so it must use the node's own credential, and the refusal says how to get one.
    """
    if node_of(user) is not None:
        return None
    node = node or "NODE"
    issue = f"manage.py issue_token --node {node} (or, as an operator, POST /api/v1/nodes/{node}/token)"
    if not is_operator(user):
        # A tenant's token in an agent's token file, most likely: say what the agent needs.
        return (
            f"only operators and node {node}'s own credential may do this; "
            f"a node agent needs that credential: {issue}"
        )
    if user_agent.startswith(AGENT_USER_AGENT):
        return f"a node agent may not use an operator's token; give it node {node}'s own credential: {issue}"
    return None


# --- what a scope may read and act on --------------------------------------------------------------


def sees_tenant(scope: Scope, slug: str | None) -> bool:
    """Return whether a caller may read this tenant's name (its own, or any for operators)."""
    return slug is None or scope.allows(slug)


def seen(queryset, scope: Scope, tenant_field: str = "tenant"):
    """Return the rows of `queryset` a caller may read: those of its tenants (every row for operators).

    `tenant_field` names the rows' tenant (a foreign key to Tenant).
    """
    if scope.sees_every_tenant:
        return queryset
    return queryset.filter(**{f"{tenant_field}__slug__in": scope.tenants})


def tenants_for(scope: Scope) -> list[Tenant]:
    """Return the tenants a caller may book or preview for, by slug."""
    tenants = Tenant.objects.order_by("slug")
    return list(tenants if scope.sees_every_tenant else tenants.filter(slug__in=scope.tenants))


def pool_allows(pool: Pool, tenant: Tenant) -> bool:
    """Return whether the tenant may use the pool (the same rule the placer's PoolRow applies)."""
    return _pool_allows_id(pool, tenant.pk)


def _pool_allows_id(pool: Pool, tenant_id: int) -> bool:
    return may_use(pool.owner_tenant_id, tuple(t.pk for t in pool.tenants.all()), tenant_id)


def _scope_ids(scope: Scope) -> frozenset[int]:
    """Return the ids of the scope's tenants: known with a signed-in user's scope, else read by slug."""
    if scope.ids is not None:
        return scope.ids
    return frozenset(Tenant.objects.filter(slug__in=scope.tenants).values_list("pk", flat=True))


def pools_for(scope: Scope):
    """Return the pools a caller may book into or read."""
    pools = Pool.objects.select_related("site", "owner_tenant").prefetch_related("tenants")
    if scope.sees_every_tenant:
        return pools
    ids = _scope_ids(scope)
    return [p for p in pools if any(_pool_allows_id(p, pk) for pk in ids)]


def pool_for(scope: Scope, slug: str) -> Pool | None:
    """Return the pool with this slug if the caller may read it, else None (only that pool is read)."""
    pools = Pool.objects.select_related("site", "owner_tenant").prefetch_related("tenants").filter(slug=slug)
    return next((p for p in pools if may_read_pool(scope, p)), None)


def may_read_pool(scope: Scope, pool: Pool) -> bool:
    """Return whether a caller may read a pool loaded with its tenants (prefetched)."""
    return scope.sees_every_tenant or any(_pool_allows_id(pool, pk) for pk in _scope_ids(scope))


def visible_pool(user, slug: str) -> Pool:
    """Return the pool with this slug if the user may read it, else raise 404."""
    pool = pool_for(scope_for(user), slug)
    if pool is None:
        raise Http404(f"no pool {slug}")
    return pool


def nodes_for(scope: Scope, nodes=None, *, pools_checked: bool = False):
    """Return the nodes a caller may read: in its pools, and not owned by another tenant.

    A node another tenant owns adds nothing to the caller and tells it about that tenant: to a
    tenant it does not exist (404), as a reservation of another tenant does not. With
    `pools_checked` the caller has already limited `nodes` to pools it may read.
    """
    nodes = Node.objects.all() if nodes is None else nodes
    if scope.sees_every_tenant:
        return nodes
    if not pools_checked:
        nodes = nodes.filter(pool__in=[p.pk for p in pools_for(scope)])
    return nodes.filter(Q(owner_tenant__isnull=True) | Q(owner_tenant__slug__in=scope.tenants))


def may_read_node(scope: Scope, owner_slug: str | None) -> bool:
    """Return whether a caller may read a node with this owner (in a pool it may read)."""
    return sees_tenant(scope, owner_slug)


def visible_reservations(pks: Iterable[int], scope: Scope) -> dict[str, Any]:
    """Return {"reservations": the ids the caller may read, ascending; "others": how many it may not}.

    Another tenant's reservation id tells a tenant what that tenant books: it is counted, not named.
    """
    pks = sorted(set(pks))
    if scope.sees_every_tenant:
        return {"reservations": pks, "others": 0}
    mine = sorted(seen(Reservation.objects.filter(pk__in=pks), scope).values_list("pk", flat=True))
    return {"reservations": mine, "others": len(pks) - len(mine)}


# A dedication names its tenant; to any other tenant it reads as this.
_DEDICATION_RE = re.compile(r"dedicated=([A-Za-z0-9_-]+)")


def redact(text: str, scope: Scope) -> str:
    """Return a reason as a caller may read it: another tenant's dedication is not named.

    Stored reasons stay exact (operators read them whole); tenants read "dedicated to another
    tenant" where the spec's reason says `dedicated=<slug>` of a tenant not theirs.
    """
    if scope.sees_every_tenant or not text or "dedicated=" not in text:
        return text
    return _DEDICATION_RE.sub(
        lambda m: m[0] if sees_tenant(scope, m[1]) else ANOTHER_TENANTS_DEDICATION, text
    )


def redacted_conditions(conditions: list[dict], scope: Scope) -> list[dict]:
    """Return a reservation's conditions as the caller may read them.

    Messages are redacted; a preemption by another tenant's work does not give its reservation id.
    """
    if scope.sees_every_tenant:
        return conditions
    return [_redacted(c, scope) for c in conditions]


def _redacted(condition: dict, scope: Scope) -> dict:
    found = (
        {**condition, "message": redact(condition["message"], scope)} if "message" in condition else condition
    )
    if found.get("byOwnTenant") is False:
        found = {k: v for k, v in found.items() if k not in ("reservationId", "byOwnTenant")}
    return found
