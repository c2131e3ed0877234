"""Load what the pure planner needs from SQL, in a fixed number of queries whatever the pool size."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection

from capacity.db.cursors import prepared_cursor
from capacity.db.literals import window_range
from capacity.placement import Atom, MaintenanceSpan, NodeView, Pool, Resource, Window
from capacity.placement.eligibility import may_use
from capacity.placement.timeline import peak
from inventory.validators import SYSTEM_LABEL_PREFIX


@dataclass(frozen=True)
class PoolRow:
    """A pool as the placer reads it: the view for the planner and its primary key."""

    pk: int
    view: Pool
    generation: int | None = None  # of the pool's inventory; see inventory.PoolGeneration
    owner_pk: int | None = None
    tenant_pks: tuple[int, ...] = ()  # the tenants that may book here; none means any
    limits: Limits | None = None  # the booking limits of the pool's policy; None: no limit set
    rules: tuple[str, ...] = ()  # the rules other apps turned on for the pool (capacity.models.PoolRule)
    # Owners may keep its bookings when idle (its policy's allowKeepWhenIdle; no row: they may).
    allow_keep_when_idle: bool = True

    def allows(self, tenant_pk: int) -> bool:
        """Return whether the tenant may use the pool (placement.eligibility.may_use, named in access)."""
        return may_use(self.owner_pk, self.tenant_pks, tenant_pk)

    def latest_start(self, now: datetime) -> int | None:
        """Return the latest start (epoch ms) the pool's maxLeadTime allows, or None without the limit.

        Placement's own read of the limit: hints and earliest start never offer a start past it (the
        rule that refuses one is policy.limits).
        """
        if self.limits is None or self.limits.max_lead_time is None:
            return None
        return int(now.timestamp() * 1000) + self.limits.max_lead_time // timedelta(milliseconds=1)


@dataclass(frozen=True)
class Limits:
    """The booking limits of a pool's policy (docs/policy.md, Limits); None: no limit.

    A pool sets limits (a Limits, not None) when any limit, approvals or the outside check is on.
    """

    max_duration: timedelta | None = None
    max_lead_time: timedelta | None = None
    max_future_gpu_hours: int | None = None
    # Approvals and the outside check (docs/policy.md) ride here too: read with the pool, no statement more.
    approval_above_gpu_hours: int | None = None
    approval_hold: timedelta | None = None
    policy_webhook: str | None = None
    policy_webhook_secret: str = ""
    policy_webhook_on_error: str = "deny"
    policy_webhook_concurrency: int | None = None


def largest_open_pools(limit: int) -> list[str]:
    """Return the slugs of the `limit` pools not archived with the most nodes, most first."""
    with connection.cursor() as cur:
        cur.execute(
            """SELECT p.slug FROM inventory_pool p LEFT JOIN inventory_node n ON n.pool_id = p.id
                WHERE NOT p.archived GROUP BY p.id, p.slug ORDER BY count(n.id) DESC, p.slug LIMIT %s""",
            [limit],
        )
        return [row[0] for row in cur.fetchall()]


def load_pool(slug: str) -> PoolRow | None:
    """Return the pool with this slug, or None."""
    return lookup("", slug).pool


_LOOKUP_COLUMNS = """u.id, u.slug, u.name,
           p.id, p.slug, s.slug, p.archived, t.slug, g.generation, p.owner_tenant_id,
           ARRAY(SELECT pt.tenant_id FROM inventory_pool_tenants pt WHERE pt.pool_id = p.id ORDER BY 1),
           pp.max_duration, pp.max_lead_time, pp.max_future_gpu_hours,
           pp.approval_above_gpu_hours, pp.approval_hold, pp.policy_webhook, pp.policy_webhook_secret,
           pp.policy_webhook_on_error, pp.policy_webhook_concurrency, pp.allow_keep_when_idle,
           ARRAY(SELECT pr.rule FROM capacity_poolrule pr WHERE pr.pool_id = p.id ORDER BY 1)"""
_LOOKUP_FROM = """
      FROM (SELECT 1) AS one
      LEFT JOIN inventory_tenant u ON u.slug = {tenant}
      LEFT JOIN inventory_pool p ON p.slug = {pool}
      LEFT JOIN inventory_site s ON s.id = p.site_id
      LEFT JOIN inventory_tenant t ON t.id = p.owner_tenant_id
      LEFT JOIN inventory_poolgeneration g ON g.pool_id = p.id
      LEFT JOIN capacity_poolpolicy pp ON pp.pool_id = p.id
"""
# Everything the lookup returns, digested: a lookup kept from before still holds while it matches.
_DIGEST = f"md5(ROW({_LOOKUP_COLUMNS})::text)"

_TENANT_AND_POOL_SQL = f"SELECT {_LOOKUP_COLUMNS}, {_DIGEST}" + _LOOKUP_FROM.format(
    tenant="%(tenant)s::text", pool="%(pool)s::text"
)


def lookup_digest_sql(tenant: str, pool: str) -> str:
    """Return a scalar subquery: the digest of the lookup of the tenant and pool slugs `tenant` and
    `pool` (SQL expressions), as lookup() returns it."""
    return f"(SELECT {_DIGEST}" + _LOOKUP_FROM.format(tenant=tenant, pool=pool) + ")"


@dataclass(frozen=True)
class Lookup:
    """A tenant and a pool as one query read them, and the digest that says they still hold."""

    tenant: tuple | None  # (id, slug, name)
    pool: PoolRow | None
    digest: str


def lookup(tenant: str, pool: str) -> Lookup:
    """Return the tenant's (id, slug, name) and the pool, each None when missing, in one query."""
    with prepared_cursor() as cur:
        cur.execute(_TENANT_AND_POOL_SQL, {"tenant": tenant, "pool": pool})
        row = cur.fetchone()
    tenant_row = row[0:3] if row[0] is not None else None
    if row[3] is None:
        return Lookup(tenant_row, None, row[22])
    view = Pool(id=row[4], site_id=row[5], archived=row[6], owner_tenant_id=row[7])
    # The policy's limits and allowKeepWhenIdle ride on the pool's lookup: no statement more, and a
    # kept lookup goes stale (its digest differs) when an operator changes them.
    limits = Limits(*row[11:20]) if any(row[i] is not None for i in (11, 12, 13, 14, 16)) else None
    pool_row = PoolRow(
        row[3],
        view,
        generation=row[8],
        owner_pk=row[9],
        tenant_pks=tuple(row[10]),
        limits=limits,
        rules=tuple(row[21] or ()),
        allow_keep_when_idle=row[20] is not False,
    )
    return Lookup(tenant_row, pool_row, row[22])


@dataclass
class NodeIndex:
    """The node views of one load and the primary keys the commit needs."""

    views: list[NodeView]
    node_pk: dict[str, int]  # node name -> pk
    device_pk: dict[str, int]  # device uuid -> pk
    children: dict[str, list[str]]  # parent uuid -> slice uuids
    device_class: dict[str, str]  # device uuid -> class


# A node's maintenance windows not yet over ride on its row (no statement more): [id, start ms,
# end ms, reason] each, from the (node, ends_at) index.
_NODES_SQL = """
SELECT n.id, n.name, p.slug, s.slug, o.slug, n.role, n.provision_state, n.connectivity, n.trust,
       n.maintenance, n.cordoned, n.converged, n.no_schedule_reasons,
       (SELECT json_agg(json_build_array(w.window_id, (date_part('epoch', w.starts_at) * 1000)::bigint,
                                         (date_part('epoch', w.ends_at) * 1000)::bigint, mw.reason)
                        ORDER BY w.starts_at, w.window_id)
          FROM capacity_maintenancewindownode w JOIN capacity_maintenancewindow mw ON mw.id = w.window_id
         WHERE w.node_id = n.id AND w.ends_at > now())
  FROM inventory_node n
  JOIN inventory_pool p ON p.id = n.pool_id
  JOIN inventory_site s ON s.id = p.site_id
  LEFT JOIN inventory_tenant o ON o.id = n.owner_tenant_id
 WHERE n.pool_id = %(pool)s {where}
 ORDER BY n.name
"""

_DEVICES_SQL = """
SELECT d.id, d.node_id, d.uuid, d.device_class, d.parent_id, d.index, d.numa_node, d.attributes,
       d.healthy, d.bookable,
       EXISTS (SELECT 1 FROM capacity_devicebooking b WHERE b.device_id = d.id AND b.during && %(during)s)
  FROM inventory_device d
 WHERE d.node_id = ANY(%(nodes)s) AND d.verified
 ORDER BY d.node_id, d.parent_id NULLS FIRST, d.index, d.uuid
"""

_LINKS_SQL = """
SELECT node_id, device_a_id, device_b_id, rank FROM inventory_devicelink WHERE node_id = ANY(%(nodes)s)
"""

_LABELS_SQL = """
SELECT node_id, key, value FROM inventory_nodelabel
 WHERE node_id = ANY(%(nodes)s) AND (source = 'system' OR key NOT LIKE %(system_prefix)s)
"""

_RESOURCES_SQL = """
SELECT node_id, resource, allocatable, ratio FROM inventory_noderesource WHERE node_id = ANY(%(nodes)s)
"""

_CLAIMS_SQL = """
SELECT node_id, resource, (date_part('epoch', lower(during)) * 1000)::bigint,
       (date_part('epoch', upper(during)) * 1000)::bigint, amount
  FROM capacity_scalarclaim WHERE node_id = ANY(%(nodes)s) AND during && %(during)s
"""


def _bounded_int(text: str) -> int | None:
    # json.loads would raise past int()'s 4,300 digits; a number past a bigint reads as no value.
    return int(text) if len(text) <= 19 else None


# One decoder for every device: json.loads with an argument builds a new one each call, which was a
# third of building a pool's index (8,000 devices: 110 of 300 ms in a new process).
_DECODER = json.JSONDecoder(parse_int=_bounded_int)


def _attributes(raw: object) -> dict[str, object]:
    """Return a device's stored attributes as a dict, whatever jsonb holds (checked in the core)."""
    # Raw SQL hands jsonb back as text (Django registers no jsonb loader on psycopg 3).
    value = _DECODER.decode(raw) if isinstance(raw, str) else raw
    return value if isinstance(value, dict) else {}


def _windows(raw: object) -> tuple[MaintenanceSpan, ...]:
    """Return a node's maintenance windows from their JSON (text or parsed, as the driver hands it)."""
    if raw is None:
        return ()
    rows = json.loads(raw) if isinstance(raw, str) else raw
    return tuple(
        MaintenanceSpan(str(i), int(start), int(end), reason or "") for i, start, end, reason in rows
    )


def load_node_views(pool_pk: int, window: Window, names: list[str] | None = None) -> NodeIndex:
    """Return the views of a pool's nodes (or of the named ones) with atoms free for `window`.

    Six queries whatever the pool size: nodes (with their maintenance windows not yet over), devices with their booked flag, links, labels,
    resources and the window's scalar claims (a resource's `allocated` is the most claimed at any
    instant of the window). A GPU split into MIG slices is in `devices` for topology but never
    free: its slices are the atoms. A slice is free only when its parent is not booked. A device
    no operator accepted yet (`verified` false) is left out: the planner never sees it.
    """
    params = {"pool": pool_pk, "during": window_range(window), "system_prefix": SYSTEM_LABEL_PREFIX + "%"}
    where = ""
    if names is not None:
        where = "AND n.name = ANY(%(names)s)"
        params["names"] = list(names)
    with connection.cursor() as cur:
        cur.execute(_NODES_SQL.format(where=where), params)
        nodes = cur.fetchall()
        params["nodes"] = [row[0] for row in nodes]
        cur.execute(_DEVICES_SQL, params)
        devices = cur.fetchall()
        cur.execute(_LINKS_SQL, params)
        links = cur.fetchall()
        cur.execute(_LABELS_SQL, params)
        labels = cur.fetchall()
        cur.execute(_RESOURCES_SQL, params)
        resources = cur.fetchall()
        cur.execute(_CLAIMS_SQL, params)
        claims = cur.fetchall()

    uuid_of = {row[0]: row[2] for row in devices}
    booked = {row[2] for row in devices if row[10]}
    children: dict[str, list[str]] = defaultdict(list)
    for row in devices:
        if row[4] is not None:
            children[uuid_of[row[4]]].append(row[2])
    atoms_by_node: dict[int, list[Atom]] = defaultdict(list)
    free_by_node: dict[int, list[Atom]] = defaultdict(list)
    for _pk, node_id, uuid, device_class, parent_pk, index, numa, attributes, healthy, bookable, _ in devices:
        parent = uuid_of.get(parent_pk) if parent_pk is not None else None
        atom = Atom(
            id=uuid,
            device_class=device_class,
            parent_id=parent,
            healthy=healthy,
            bookable=bookable,
            numa_node=numa,
            index=index,
            attributes=_attributes(attributes),
        )
        atoms_by_node[node_id].append(atom)
        taken = uuid in booked or (parent is not None and parent in booked)
        if not taken and uuid not in children:
            free_by_node[node_id].append(atom)
    links_by_node: dict[int, dict[str, dict[str, str]]] = defaultdict(lambda: defaultdict(dict))
    for node_id, a_pk, b_pk, rank in links:
        # A link to a device no operator accepted yet is topology the planner does not see either.
        if a_pk not in uuid_of or b_pk not in uuid_of:
            continue
        a, b = uuid_of[a_pk], uuid_of[b_pk]
        links_by_node[node_id][a][b] = rank
        links_by_node[node_id][b][a] = rank
    labels_by_node: dict[int, dict[str, str]] = defaultdict(dict)
    for node_id, key, value in labels:
        labels_by_node[node_id][key] = value
    held: dict[tuple[int, str], list[tuple[int, int, int]]] = defaultdict(list)
    for node_id, name, start, end, amount in claims:
        held[(node_id, name)].append((start, end, amount))
    resources_by_node: dict[int, dict[str, Resource]] = defaultdict(dict)
    for node_id, name, allocatable, ratio in resources:
        used = peak(held.get((node_id, name), ()), window.start, window.end)
        resources_by_node[node_id][name] = Resource(allocatable=allocatable, ratio=ratio, allocated=used)

    views = []
    for (
        pk,
        name,
        pool,
        site,
        owner,
        role,
        state,
        conn,
        trust,
        maint,
        cordoned,
        converged,
        reasons,
        spans,
    ) in nodes:
        views.append(
            NodeView(
                id=name,
                pool_id=pool,
                site_id=site,
                owner_tenant_id=owner,
                role=role,
                provision_state=state,
                connectivity=conn,
                trust=trust,
                maintenance=maint,
                cordoned=cordoned,
                converged=converged,
                labels=labels_by_node.get(pk, {}),
                no_schedule_reasons=tuple(reasons),
                devices=tuple(atoms_by_node.get(pk, ())),
                free=tuple(free_by_node.get(pk, ())),
                resources=resources_by_node.get(pk, {}),
                links=links_by_node.get(pk, {}),
                windows=_windows(spans),
            )
        )
    return NodeIndex(
        views=views,
        node_pk={row[1]: row[0] for row in nodes},
        device_pk={row[2]: row[0] for row in devices},
        children=dict(children),
        device_class={row[2]: row[3] for row in devices},
    )
