"""The audit's sources and their merge: each pages by (at, rank, id) and the merge takes the newest.

A position is (at, rank, id): the time, the source's rank (fixed per source, so ties at one instant
are ordered) and the row's id in its own table. Every source is asked for `limit` rows past the
position, so the merge's first `limit` are the list's next `limit`: each page costs one index range
scan per source, however deep.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db.models import Q, QuerySet

from capacity.port import ReservationEvent
from identity.models import SignInEvent
from inventory.models import Node, NodeLabel, NodeTaint
from trail.context import SYSTEM
from trail.models import AuditRecord

NONE = Q(pk__in=[])


@dataclass(frozen=True)
class Source:
    """One table the audit reads: how to filter it, position in it, and turn a row into an entry."""

    rank: int
    kind: str | None  # the object kind it is about (the `object` filter's part before the colon); None: any
    rows: Callable[[], QuerySet]
    at: str
    id: str
    actor: Callable[[str], Q]
    action: Callable[[str], Q] | None
    object: Callable[[str], Q]  # given the part after the colon (the whole value where kind is None)
    entry: Callable[[dict], dict]


def _node_history(model, rank: int, node_name: str) -> Source:
    return Source(
        rank=rank,
        kind="node",
        rows=lambda: model.history.values(
            "history_id",
            "history_date",
            "actor",
            "action",
            "change",
            "history_change_reason",
            "request_id",
            node_name,
        ),
        at="history_date",
        id="history_id",
        actor=lambda value: Q(actor=value),
        action=lambda value: Q(action=value.removeprefix("node.")) if value.startswith("node.") else NONE,
        object=lambda value: Q(**{node_name: value}),
        entry=lambda row: {
            "at": row["history_date"],
            "actor": row["actor"],
            "action": f"node.{row['action']}",
            "object": f"node:{row[node_name]}",
            "before": None,
            "after": {"change": row["change"]},
            "reason": row["history_change_reason"] or "",
            "requestId": row["request_id"],
        },
    )


def _reservation_entry(row: dict) -> dict:
    return {
        "at": row["at"],
        "actor": row["actor"] or SYSTEM,
        "action": f"reservation.{row['status']}",
        "object": f"reservation:{row['reservation_id']}",
        "before": None,
        "after": {"status": row["status"], "conditions": row["conditions"]},
        "reason": "",
        "requestId": row["request_id"],
    }


def _reservation_actor(value: str) -> Q:
    # Events no writer named (the worker's) read as the system's.
    return Q(actor=value) | Q(actor__isnull=True) if value == SYSTEM else Q(actor=value)


def _record_entry(row: dict) -> dict:
    return {
        "at": row["at"],
        "actor": row["actor"],
        "action": row["action"],
        "object": row["object"],
        "before": row["before"],
        "after": row["after"],
        "reason": row["reason"],
        "requestId": row["request_id"],
    }


def _sign_in_entry(row: dict) -> dict:
    return {
        "at": row["at"],
        "actor": row["username"] or None,
        "action": "sign-in" if row["succeeded"] else "sign-in.failed",
        "object": f"user:{row['username']}",
        "before": None,
        "after": {
            "method": row["method"],
            "issuer": row["issuer"],
            "sub": row["subject"],
            "address": row["address"],
        },
        "reason": row["reason"],
        "requestId": row["request_id"],
    }


def _reservation_object(value: str) -> Q:
    # A bigint holds 18 digits safely: a longer number names no reservation.
    return Q(reservation_id=int(value)) if value.isascii() and value.isdigit() and len(value) <= 18 else NONE


def _sign_in_action(value: str) -> Q:
    return {"sign-in": Q(succeeded=True), "sign-in.failed": Q(succeeded=False)}.get(value, NONE)


SOURCES = [
    Source(
        rank=0,
        kind="user",
        rows=lambda: SignInEvent.objects.values(
            "id",
            "at",
            "username",
            "succeeded",
            "method",
            "issuer",
            "subject",
            "address",
            "reason",
            "request_id",
        ),
        at="at",
        id="id",
        actor=lambda value: Q(username=value),
        action=_sign_in_action,
        object=lambda value: Q(username=value),
        entry=_sign_in_entry,
    ),
    Source(
        rank=1,
        kind="reservation",
        rows=lambda: ReservationEvent.objects.values(
            "id", "at", "reservation_id", "status", "conditions", "actor", "request_id"
        ),
        at="at",
        id="id",
        actor=_reservation_actor,
        action=lambda value: (
            Q(status=value.removeprefix("reservation.")) if value.startswith("reservation.") else NONE
        ),
        object=_reservation_object,
        entry=_reservation_entry,
    ),
    _node_history(Node, 2, "name"),
    _node_history(NodeTaint, 3, "node__name"),
    _node_history(NodeLabel, 4, "node__name"),
    Source(
        rank=5,
        kind=None,
        rows=lambda: AuditRecord.objects.values(
            "id", "at", "actor", "action", "object", "before", "after", "reason", "request_id"
        ),
        at="at",
        id="id",
        actor=lambda value: Q(actor=value),
        action=lambda value: Q(action=value),
        object=lambda value: Q(object=value),
        entry=_record_entry,
    ),
]


@dataclass(frozen=True)
class Filters:
    """What the caller asked for: each None is no filter."""

    actor: str | None = None
    action: str | None = None
    object: str | None = None
    since: dt.datetime | None = None
    until: dt.datetime | None = None


def _past(source: Source, position: tuple, older: bool) -> Q:
    """Return the rows of `source` beyond `position` (older ones, or newer with older=False)."""
    at, rank, row_id = dt.datetime.fromisoformat(position[0]), position[1], position[2]
    beyond = "lt" if older else "gt"
    strictly = Q(**{f"{source.at}__{beyond}": at})
    same_time = Q(**{source.at: at})
    # The OR below is no index bound: this one is, so a deep page starts its scan at the position
    # instead of reading (and dropping) every row before it.
    bound = Q(**{f"{source.at}__{beyond}e": at})
    if source.rank == rank:
        return bound & (strictly | (same_time & Q(**{f"{source.id}__{beyond}": row_id})))
    if (source.rank < rank) == older:
        return bound
    return strictly


def _filtered(source: Source, filters: Filters) -> QuerySet | None:
    rows = source.rows()
    if filters.actor is not None:
        rows = rows.filter(source.actor(filters.actor))
    if filters.action is not None:
        rows = rows.filter(source.action(filters.action))
    if filters.object is not None:
        kind, _, name = filters.object.partition(":")
        if source.kind is None:
            rows = rows.filter(source.object(filters.object))
        elif kind != source.kind:
            return None
        else:
            rows = rows.filter(source.object(name))
    if filters.since is not None:
        rows = rows.filter(**{f"{source.at}__gte": filters.since})
    if filters.until is not None:
        rows = rows.filter(**{f"{source.at}__lt": filters.until})
    return rows


def key(row: dict) -> tuple:
    """Return a merged row's position."""
    return row["_key"]


def audit_source(filters: Filters):
    """Return the page source (config/api/pages.py) of the audit list, newest first.

    Two passes: each source's next `limit` positions alone (no row built), merged and cut to
    `limit`; then only the rows that made the page, read by id from their sources. A page used to
    build six sources' worth of rows to keep one source's worth.
    """
    ranked = {each.rank: each for each in SOURCES}

    def source(position, backwards, limit) -> list[dict[str, Any]]:
        older = not backwards
        sign = "-" if older else ""
        keys = []
        for each in SOURCES:
            rows = _filtered(each, filters)
            if rows is None:
                continue
            if position is not None:
                rows = rows.filter(_past(each, position, older))
            ordered = rows.order_by(f"{sign}{each.at}", f"{sign}{each.id}").values_list(each.at, each.id)
            keys += [(at.astimezone(dt.UTC), each.rank, row_id) for at, row_id in ordered[:limit]]
        keys.sort(reverse=older)
        keys = keys[:limit]
        wanted: dict[int, list] = {}
        for _at, rank, row_id in keys:
            wanted.setdefault(rank, []).append(row_id)
        rows = {}
        for rank, ids in wanted.items():
            each = ranked[rank]
            rows.update({(rank, row[each.id]): row for row in each.rows().filter(**{f"{each.id}__in": ids})})
        found = []
        for moment, rank, row_id in keys:
            row = rows.get((rank, row_id))
            if row is None:
                continue  # deleted between the passes (retention)
            entry = ranked[rank].entry(row)
            entry["_key"] = (moment.isoformat(timespec="microseconds"), rank, row_id)
            found.append(entry)
        return found

    return source
