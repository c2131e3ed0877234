"""The one vocabulary of node states: what pages, the API and the node filters call a node.

A node is in every state that applies to it, in `STATES` order; its state (the API's `state`, the
first word a page shows) is the first of them. The order follows the placer's eligibility table
(spec 000), then splits its NoSchedule row by cause: NotReady, other conditions (unhealthy),
operator taints, and a dedication. `schedulable` means the viewer's work could be placed there now:
to an operator, some tenant's work (a dedicated node is schedulable for its tenant); to a tenant,
its own. A node that is not schedulable to the viewer has no GPU the viewer could book now.

Each state exists twice: in Python (`node_states`, over a loaded node) and as ORM conditions
(`state_q`, for filters and counts). tests/db/test_schedulable_sql.py keeps the two in agreement.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import BooleanField, Exists, F, OuterRef, Q
from django.db.models.expressions import RawSQL

from .models import Node, NodeTaint
from .viewer import Viewer

DEDICATED_PREFIX = "dedicated="
NOT_READY = "NotReady"
AGENT_STALE = "AgentStale"  # the condition inventory.services.mark_stale_nodes gives
ANOTHER_TENANT = "another tenant"
# How a dedication to a tenant the caller may not name reads, in reasons and on pages.
ANOTHER_TENANTS_DEDICATION = "dedicated to another tenant"
BLOCKING_EFFECTS = (NodeTaint.Effect.NO_SCHEDULE, NodeTaint.Effect.NO_EXECUTE)


@dataclass(frozen=True)
class State:
    """A node state: its word (API, filters, pages) and what it means to an operator or tenant."""

    name: str
    meaning: str
    badge: str  # the badge style on pages: bad, warn, muted, info, ok
    symbol: str  # pages never say a state by colour alone


STATES: tuple[State, ...] = (
    State(
        "excluded",
        "adds no capacity: not a host, tenant-controlled, or owned outside its owner's pool",
        "muted",
        "✕",
    ),
    State("maintenance", "in maintenance: no new placements, bookings are moved off", "warn", "⚙"),
    State("cordoned", "no new placements; what runs stays", "warn", "⊘"),
    State("provisioning", "not provisioned yet, or awaiting its first converged spec", "muted", "◌"),
    State("unreachable", "not connected", "bad", "✕"),
    State(NOT_READY, "its Ready condition is not True", "bad", "✕"),
    State("stale", "its agent stopped reporting: no new placements, bookings kept", "warn", "◷"),
    State("unhealthy", "a node condition blocks new placements", "bad", "✕"),
    State("tainted", "a NoSchedule or NoExecute taint blocks new placements", "warn", "▲"),
    State("dedicated", "only the dedicated tenant's work is placed here", "info", "⚑"),
    State("schedulable", "takes new work now", "ok", "✓"),
)
BY_NAME = {s.name: s for s in STATES}
NAMES = tuple(s.name for s in STATES)


@dataclass(frozen=True)
class NodeState:
    """One state a node is in, with the words that say why ("unreachable: disconnected")."""

    name: str
    text: str

    @property
    def badge(self) -> str:
        return BY_NAME[self.name].badge

    @property
    def meaning(self) -> str:
        return BY_NAME[self.name].meaning

    @property
    def label(self) -> str:
        """Return the badge text: the symbol, then the words."""
        return f"{BY_NAME[self.name].symbol} {self.text}"


def _taint_reason(taint: NodeTaint) -> str:
    return f"{taint.key}={taint.value}" if taint.value else taint.key


def node_states(node: Node, viewer: Viewer) -> list[NodeState]:
    """Return every state the node is in, in vocabulary order, as the viewer sees it.

    To a tenant's viewer another tenant's dedication is not named, and it keeps the node from
    being schedulable for them.
    The node's pool, owner and taints should be loaded (select_related / prefetch_related).
    """
    found: list[NodeState] = []
    owner = node.owner_tenant_id
    if node.role != Node.Role.HOST:
        found.append(NodeState("excluded", f"excluded: role {node.role}"))
    elif node.trust == Node.Trust.TENANT_CONTROLLED:
        found.append(NodeState("excluded", "excluded: tenant-controlled"))
    elif owner is not None and owner != node.pool.owner_tenant_id:
        found.append(NodeState("excluded", f"excluded: owned by {node.owner_tenant.slug}"))
    if node.maintenance:
        found.append(NodeState("maintenance", "in maintenance"))
    if node.cordoned:
        found.append(NodeState("cordoned", "cordoned"))
    if node.provision_state != Node.ProvisionState.ACTIVE:
        state = node.provision_state
        text = "provisioning" if state == Node.ProvisionState.PROVISIONING else f"provisioning ({state})"
        found.append(NodeState("provisioning", text))
    elif not node.converged:
        found.append(NodeState("provisioning", "provisioning: awaiting spec"))
    if node.connectivity != Node.Connectivity.CONNECTED:
        found.append(NodeState("unreachable", f"unreachable: {node.connectivity}"))
    reasons = list(dict.fromkeys(node.no_schedule_reasons))
    blocking = [t for t in node.taints.all() if t.effect in BLOCKING_EFFECTS]
    taints = {_taint_reason(t) for t in blocking}
    if NOT_READY in reasons:
        found.append(NodeState(NOT_READY, NOT_READY))
    if AGENT_STALE in reasons:
        found.append(NodeState("stale", "stale: no agent report"))
    conditions = [
        r
        for r in reasons
        if r not in (NOT_READY, AGENT_STALE) and not r.startswith(DEDICATED_PREFIX) and r not in taints
    ]
    if conditions:
        found.append(NodeState("unhealthy", f"unhealthy: {', '.join(conditions)}"))
    tainted = sorted(str(t) for t in blocking if not _taint_reason(t).startswith(DEDICATED_PREFIX))
    if tainted:
        found.append(NodeState("tainted", f"tainted {', '.join(tainted)}"))
    dedications = [r.removeprefix(DEDICATED_PREFIX) for r in reasons if r.startswith(DEDICATED_PREFIX)]
    if dedications:
        named = [d if viewer.allows(d) else ANOTHER_TENANT for d in dedications]
        found.append(NodeState("dedicated", f"dedicated to {', '.join(dict.fromkeys(named))}"))
    blocked = any(s.name != "dedicated" for s in found)
    if not blocked and _tolerated(dedications, viewer):
        found.append(NodeState("schedulable", "schedulable"))
    return found


def _tolerated(dedications: list[str], viewer: Viewer) -> bool:
    """Return whether the viewer's work may go past these dedications (the placer's rule)."""
    if not dedications:
        return True
    if viewer.sees_every_tenant:
        # Schedulable for some tenant: one dedication alone (may_be_schedulable).
        return len(set(dedications)) == 1
    return any(all(d == t for d in dedications) for t in viewer.tenants)


# --- the same states as ORM conditions on Node ----------------------------------------------------

_ELIGIBLE = (
    Q(role=Node.Role.HOST)
    & ~Q(trust=Node.Trust.TENANT_CONTROLLED)
    & (Q(owner_tenant__isnull=True) | Q(owner_tenant=F("pool__owner_tenant")))
)
_BLOCKING_TAINT = Exists(
    NodeTaint.objects.filter(node=OuterRef("pk"), effect__in=BLOCKING_EFFECTS).exclude(
        key="dedicated", value__gt=""
    )
)
# A NoSchedule reason that is neither NotReady, a dedication nor a blocking taint: a condition.
_CONDITION_REASON = RawSQL(
    """EXISTS (SELECT 1 FROM unnest(inventory_node.no_schedule_reasons) r
                WHERE r <> 'NotReady' AND r <> 'AgentStale' AND r NOT LIKE 'dedicated=%%'
                  AND r NOT IN (SELECT CASE WHEN t.value = '' THEN t.key ELSE t.key || '=' || t.value END
                                  FROM inventory_nodetaint t
                                 WHERE t.node_id = inventory_node.id
                                   AND t.effect IN ('NoSchedule', 'NoExecute')))""",
    [],
    output_field=BooleanField(),
)
_DEDICATED = RawSQL(
    "EXISTS (SELECT 1 FROM unnest(inventory_node.no_schedule_reasons) r WHERE r LIKE 'dedicated=%%')",
    [],
    output_field=BooleanField(),
)


def _schedulable_q(viewer: Viewer) -> Q:
    before = _ELIGIBLE & Q(
        cordoned=False,
        maintenance=False,
        connectivity=Node.Connectivity.CONNECTED,
        provision_state=Node.ProvisionState.ACTIVE,
        converged=True,
    )
    if viewer.sees_every_tenant:
        # A test keeps this in step with the placer's may_be_schedulable().
        return before & (
            Q(no_schedule_reasons=[])
            | Q(no_schedule_reasons__len=1, no_schedule_reasons__0__startswith=DEDICATED_PREFIX)
        )
    tolerated = Q(no_schedule_reasons=[])
    for slug in viewer.tenants:
        # Every reason is this tenant's own dedication (duplicates included).
        tolerated |= Q(no_schedule_reasons__contained_by=[f"{DEDICATED_PREFIX}{slug}"])
    return before & tolerated


def state_q(name: str, viewer: Viewer) -> Q:
    """Return the ORM condition for nodes in this state, as the viewer sees it."""
    if name == "excluded":
        return ~_ELIGIBLE
    if name in ("maintenance", "cordoned"):
        return Q(**{name: True})
    if name == "provisioning":
        return ~Q(provision_state=Node.ProvisionState.ACTIVE) | Q(converged=False)
    if name == "unreachable":
        return ~Q(connectivity=Node.Connectivity.CONNECTED)
    if name == NOT_READY:
        return Q(no_schedule_reasons__contains=[NOT_READY])
    if name == "stale":
        return Q(no_schedule_reasons__contains=[AGENT_STALE])
    if name == "unhealthy":
        return Q(_CONDITION_REASON)
    if name == "tainted":
        return Q(_BLOCKING_TAINT)
    if name == "dedicated":
        return Q(_DEDICATED)
    if name == "schedulable":
        return _schedulable_q(viewer)
    raise ValueError(f"no node state {name}")
