"""A plan: nodes ranked best first, rejected nodes with their reasons, the choice or a gang's
members, and why nothing fits."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from .reasons import ARCHIVED_REASON, format_groups, nodes_phrase, rejection_groups, rest_groups, summarize
from .types import NodeView, PlacementRequest, Ranked, Rejection

# Totals are sums of float products; rounding makes equal plans tie exactly, so node ids break them.
SCORE_DIGITS: Final = 12


@dataclass(frozen=True, slots=True)
class Plan:
    """The outcome of planning: ranked nodes best first, rejected nodes in input order, the choice.

    For a gang request, gang holds the members (best first) when gang_size nodes fit together, and
    gang_fitting how many could have been members (the largest group sharing the topology key's value).
    """

    ranked: tuple[Ranked, ...]
    rejected: tuple[Rejection, ...]
    choice: Ranked | None
    node_count: int
    gang: tuple[Ranked, ...] = ()
    gang_size: int | None = None
    gang_topology_key: str | None = None
    gang_fitting: int = 0
    archived: bool = False

    @property
    def fits(self) -> bool:
        """Return whether the request can be placed: a node, or a whole gang, fits."""
        if self.archived:
            return False
        if self.gang_size is not None:
            return len(self.gang) == self.gang_size
        return bool(self.ranked)

    def pending_reason(self) -> str:
        """Return why nothing fits ("" when the plan fits)."""
        if self.archived:
            return ARCHIVED_REASON
        if self.fits:
            return ""
        if self.gang_size is not None and self.ranked:
            return gang_reason(self)
        return summarize(self.rejected, self.node_count)

    def pending_rest(self) -> list[tuple[int, str]]:
        """Return the rejection groups the pending reason leaves out (it names at most five)."""
        if self.archived or self.fits or self.node_count == 0:
            return []
        return rest_groups(self.rejected)


def reason_rest(plan: Plan | None, reason: str) -> list[tuple[int, str]]:
    """Return the groups `reason` leaves out when it is `plan`'s pending reason (else none).

    A reason from lost races or an archived pool is not the plan's summary: nothing is left out.
    """
    if plan is None or not reason or reason != plan.pending_reason():
        return []
    return plan.pending_rest()


def gang_reason(plan: Plan) -> str:
    """Return why a gang does not fit although some nodes do.

    Reads "no gang of 3 nodes fits: only 2 nodes fit" ("... fit with the same <key>" for a topology
    key), followed by the rejection groups when there are any.
    """
    fitting = plan.gang_fitting
    text = (
        f"no gang of {nodes_phrase(plan.gang_size or 0)} fits: "
        f"only {nodes_phrase(fitting)} {'fits' if fitting == 1 else 'fit'}"
    )
    if plan.gang_topology_key is not None:
        text += f" with the same {plan.gang_topology_key}"
    groups = rejection_groups(plan.rejected)
    return f"{text}; {format_groups(groups)}" if groups else text


def ranked_plan(
    request: PlacementRequest,
    ranked: Sequence[Ranked],
    rejected: Sequence[Rejection],
    views: Sequence[NodeView],
    choose: Callable[[], Ranked | None],
) -> Plan:
    """Return the plan of nodes ranked best first: `choose()` picks one, or a gang takes its members."""
    gang = request.gang
    if gang is None:
        return Plan(tuple(ranked), tuple(rejected), choose(), len(views))
    members, fitting = gang_members(ranked, {n.id: n for n in views}, gang.size, gang.topology_key)
    return Plan(
        tuple(ranked),
        tuple(rejected),
        members[0] if members else None,
        len(views),
        gang=members,
        gang_size=gang.size,
        gang_topology_key=gang.topology_key,
        gang_fitting=fitting,
    )


def gang_members(
    ranked: Sequence[Ranked], nodes: Mapping[str, NodeView], size: int, key: str | None
) -> tuple[tuple[Ranked, ...], int]:
    if key is None:
        return (tuple(ranked[:size]) if len(ranked) >= size else ()), len(ranked)
    groups: dict[str, list[Ranked]] = {}
    for member in ranked:
        value = nodes[member.node_id].labels.get(key)
        if value is not None:
            groups.setdefault(value, []).append(member)
    largest = max((len(g) for g in groups.values()), default=0)
    best: tuple[float, str] | None = None
    members: tuple[Ranked, ...] = ()
    for value, group in groups.items():
        if len(group) < size:
            continue
        # ranked is sorted, so each group's first members are its best; the best total wins, then the value.
        key_of = (-round(sum(m.score for m in group[:size]), SCORE_DIGITS), value)
        if best is None or key_of < best:
            best, members = key_of, tuple(group[:size])
    return members, largest
