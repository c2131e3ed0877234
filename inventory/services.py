"""Operator actions on nodes: cordon, maintenance, drain, taints, dedication and labels.

Each locks the node row (pools → nodes in the lock order; nothing here locks a pool), changes it,
and sends `node_state_changed` in the same transaction so capacity's rollups follow; `woke` says
whether capacity may have freed up (pending reservations are then retried after commit).

Each takes an optional `reason` and leaves a history row (inventory.changelog) saying who did what,
when and why; an action that changes nothing (cordoning a cordoned node) leaves none.
"""

from __future__ import annotations

from contextlib import contextmanager
from datetime import datetime, timedelta

from django.core.exceptions import ValidationError
from django.db import connection, transaction

from .changelog import reason_problem, record_update, recording
from .errors import InventoryError
from .models import Node, NodeCondition, NodeLabel, NodeReport, NodeTaint, Tenant
from .signals import node_state_changed
from .states import AGENT_STALE
from .validators import SYSTEM_LABEL_PREFIX, label_value_problem, validate_label_key, validate_taint_key

DEDICATED = "dedicated"


def _locked(node: str | Node) -> Node:
    name = node.name if isinstance(node, Node) else node
    found = Node.objects.select_for_update().filter(name=name).first()
    if found is None:
        raise InventoryError("NOT_FOUND", f"no node {name}")
    return found


def _changed(node: Node, *, woke: bool) -> None:
    node_state_changed.send(sender=Node, pool_ids={node.pool_id}, woke=woke)


@contextmanager
def _action(reason: str):
    """Check the reason, then run the action in one transaction that records it with that reason."""
    problem = reason_problem(reason)
    if problem:
        raise InventoryError("INVALID_INPUT", problem)
    with transaction.atomic(), recording(reason=reason):
        yield


def _update(node: Node, **values) -> bool:
    """Set `values` on the locked node and record the change; return whether anything changed."""
    values = {k: v for k, v in values.items() if getattr(node, k) != v}
    if values:
        # .update() rather than .save(): the model signal would refresh rollups a second time.
        Node.objects.filter(pk=node.pk).update(**values)
        for field, value in values.items():
            setattr(node, field, value)
        record_update(node)
    return bool(values)


def cordon(node: str | Node, reason: str = "") -> Node:
    """Stop new placements on a node; what it runs stays."""
    with _action(reason):
        locked = _locked(node)
        if _update(locked, cordoned=True):
            _changed(locked, woke=False)
        return locked


def uncordon(node: str | Node, reason: str = "") -> Node:
    """Let the placer use a node again (ending a drain)."""
    with _action(reason):
        locked = _locked(node)
        if _update(locked, cordoned=False, drain_started_at=None, drain_reason=""):
            _changed(locked, woke=True)
        return locked


def start_drain(node: str | Node, reason: str, at: datetime) -> Node:
    """Cordon a node and mark it draining since `at` (capacity moves what has not started off it)."""
    with _action(reason):
        locked = _locked(node)
        was_cordoned = locked.cordoned
        drain = {"drain_started_at": at, "drain_reason": reason} if locked.drain_started_at is None else {}
        _update(locked, cordoned=True, **drain)
        if not was_cordoned:
            _changed(locked, woke=False)
        return locked


def set_maintenance(node: str | Node, on: bool, reason: str = "") -> Node:
    """Put a node in maintenance, or take it out."""
    with _action(reason):
        locked = _locked(node)
        if _update(locked, maintenance=on):
            _changed(locked, woke=not on)
        return locked


def _check_key(key: str, field: str = "key", validate=validate_label_key) -> None:
    try:
        validate(key)
    except ValidationError as err:
        raise InventoryError("INVALID_INPUT", f"{field}: {err.messages[0]}") from None


def _check_value(value: object) -> None:
    problem = label_value_problem(value)
    if problem is not None:
        raise InventoryError("INVALID_INPUT", problem)


def add_taint(
    node: str | Node,
    key: str,
    value: str = "",
    effect: str = NodeTaint.Effect.NO_SCHEDULE,
    reason: str = "",
) -> NodeTaint:
    """Add or replace the taint with this key."""
    _check_key(key, validate=validate_taint_key)
    if effect not in NodeTaint.Effect.values:
        raise InventoryError("INVALID_INPUT", f"effect must be one of {', '.join(NodeTaint.Effect.values)}")
    _check_value(value)
    with _action(reason):
        locked = _locked(node)
        taint, _ = NodeTaint.objects.update_or_create(
            node=locked, key=key, defaults={"value": value, "effect": effect}
        )
        _changed(locked, woke=False)
        return taint


def remove_taint(node: str | Node, key: str, reason: str = "") -> bool:
    """Remove the taint with this key; return whether there was one."""
    with _action(reason):
        locked = _locked(node)
        removed = bool(NodeTaint.objects.filter(node=locked, key=key).delete()[0])
        if removed:
            _changed(locked, woke=True)
        return removed


def dedicate(node: str | Node, tenant: str | None, reason: str = "") -> Node:
    """Dedicate a node to one tenant (taint `dedicated=<tenant>`), or end the dedication with None."""
    if tenant is not None and not Tenant.objects.filter(slug=tenant).exists():
        raise InventoryError("NOT_FOUND", f"no tenant {tenant}")
    with _action(reason):
        locked = _locked(node)
        if tenant is None:
            NodeTaint.objects.filter(node=locked, key=DEDICATED).delete()
        else:
            NodeTaint.objects.update_or_create(
                node=locked, key=DEDICATED, defaults={"value": tenant, "effect": NodeTaint.Effect.NO_SCHEDULE}
            )
        _changed(locked, woke=True)
        locked.refresh_from_db(fields=["no_schedule_reasons"])
        return locked


def set_label(node: str | Node, key: str, value: str, reason: str = "") -> NodeLabel:
    """Set an operator label; keys under `bc.dev/` belong to inventory and are refused."""
    _check_key(key)
    if key.startswith(SYSTEM_LABEL_PREFIX):
        raise InventoryError(
            "INVALID_INPUT", f"key: labels under {SYSTEM_LABEL_PREFIX} are written by inventory only"
        )
    _check_value(value)
    with _action(reason):
        locked = _locked(node)
        label, _ = NodeLabel.objects.update_or_create(
            node=locked, key=key, defaults={"value": value, "source": NodeLabel.Source.OPERATOR}
        )
        _changed(locked, woke=True)
        return label


def remove_label(node: str | Node, key: str, reason: str = "") -> bool:
    """Remove an operator label; system labels are refused."""
    if key.startswith(SYSTEM_LABEL_PREFIX):
        raise InventoryError(
            "INVALID_INPUT", f"key: labels under {SYSTEM_LABEL_PREFIX} are written by inventory only"
        )
    with _action(reason):
        locked = _locked(node)
        removed = bool(NodeLabel.objects.filter(node=locked, key=key).delete()[0])
        if removed:
            _changed(locked, woke=True)
        return removed


def record_report(node: Node, by: str, *, agent: bool, now: datetime) -> bool:
    """Note that the node reported now, by whom; a report of its own credential clears AgentStale.

    Return whether a condition was cleared: the caller tells capacity (node_state_changed), once
    for the whole report, rather than a model signal per condition.
    """
    fields = {"at": now, "by": by[:150], **({"agent_at": now} if agent else {})}
    NodeReport.objects.update_or_create(node=node, defaults=fields)
    # The caller holds the node row locked and fresh: its reasons say whether AgentStale is there,
    # so a report from a live node (every 30 s) writes nothing more.
    if not agent or AGENT_STALE not in (node.no_schedule_reasons or ()):
        return False
    # Without the model's delete signal, which would refresh the rollups on its own: the caller
    # tells capacity once for the whole report. The table's trigger keeps no_schedule_reasons.
    with connection.cursor() as cur:
        cur.execute(
            f"DELETE FROM {NodeCondition._meta.db_table} WHERE node_id = %s AND type = %s",
            [node.pk, AGENT_STALE],
        )
        return cur.rowcount > 0


def mark_stale_nodes(stale_after: timedelta, now: datetime) -> list[str]:
    """Give AgentStale to nodes whose own credential reported once and not for `stale_after`.

    Nodes known only from fleet import or operators' reports never go stale. Returns their names.
    """
    since = now - stale_after
    stale = (
        Node.objects.filter(report__agent_at__lt=since)
        .exclude(conditions__type=AGENT_STALE)
        .select_related("report")
    )
    names = []
    for node in stale:
        NodeCondition.objects.create(
            node=node,
            type=AGENT_STALE,
            status=NodeCondition.Status.TRUE,
            reason="NoReport",
            message=f"no report from its agent since {node.report.agent_at:%Y-%m-%dT%H:%MZ}",
        )
        names.append(node.name)
    return names
