"""Read a node's history: its own rows and its taints' and labels', newest first, as one list."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.core.paginator import Page, Paginator
from django.db.models import F, QuerySet
from django.db.models.fields.tuple_lookups import Tuple, TupleGreaterThan, TupleLessThan

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


def node_history(node: Node, position: tuple | None = None, older: bool = True) -> QuerySet:
    """Return the rows of a node's history, newest first (a union of three tables; page it).

    With `position` (a row's history_date and history_id), only the rows older than it, or with
    `older=False` the rows newer than it, oldest first.
    """
    parts = [
        Node.history.filter(id=node.pk),
        NodeTaint.history.filter(node_id=node.pk),
        NodeLabel.history.filter(node_id=node.pk),
    ]
    if position is not None:
        past = TupleLessThan if older else TupleGreaterThan
        key = (F("history_date"), F("history_id"))
        parts = [part.filter(past(Tuple(*key), list(position))) for part in parts]
    own, taints, labels = (part.values_list(*_COLUMNS) for part in parts)
    order = ("-history_date", "-history_id") if older else ("history_date", "history_id")
    return own.union(taints, labels, all=True).order_by(*order)


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


HISTORY_PAGE = 20


def history_page(node: Node, number: object = 1) -> Page:
    """Return a page of the node's history, newest first (a bad or past-the-end number: the nearest)."""
    found = Paginator(node_history(node), HISTORY_PAGE).get_page(number)
    found.object_list = entries(found.object_list)
    return found
