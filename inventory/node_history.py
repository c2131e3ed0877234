"""Read a node's history: its own rows and its taints' and labels', newest first, as one list."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import QuerySet

from .models import Node, NodeLabel, NodeTaint

_COLUMNS = ("history_id", "history_date", "actor", "action", "change", "history_change_reason")

# The actions that put a node in each state, the latest of which is the state's "who, when, why".
STATE_ACTIONS = {
    "cordoned": ("cordon", "drain"),
    "maintenance": ("maintenance-on",),
    "drain": ("drain",),
}


@dataclass(frozen=True)
class Entry:
    """One change of a node, as the history lists it."""

    at: datetime
    actor: str
    action: str
    change: str
    reason: str


def node_history(node: Node) -> QuerySet:
    """Return the rows of a node's history, newest first (a union of three tables; page it)."""
    own = Node.history.filter(id=node.pk).values_list(*_COLUMNS)
    taints = NodeTaint.history.filter(node_id=node.pk).values_list(*_COLUMNS)
    labels = NodeLabel.history.filter(node_id=node.pk).values_list(*_COLUMNS)
    return own.union(taints, labels, all=True).order_by("-history_date", "-history_id")


def entries(rows) -> list[Entry]:
    """Return the history rows of `node_history` (a page of them) as entries."""
    return [Entry(at, actor, action, change, reason or "") for _, at, actor, action, change, reason in rows]


def state_entries(node: Node) -> dict[str, Entry | None]:
    """Return who cordoned, put in maintenance or drained the node, when and why (None: not so)."""
    now_in = {"cordoned": node.cordoned, "maintenance": node.maintenance, "drain": node.drain_started_at}
    found: dict[str, Entry | None] = {}
    for state, actions in STATE_ACTIONS.items():
        row = None
        if now_in[state]:
            row = (
                Node.history.filter(id=node.pk, action__in=actions)
                .order_by("-history_date", "-history_id")
                .values_list(*_COLUMNS)
                .first()
            )
        found[state] = entries([row])[0] if row else None
    return found
