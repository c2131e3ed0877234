"""The one attempt loop of inline placement: plan → preempt → commit → replan on a lost race.

The inline placer and whole-node leases differ only in how they plan, which spot work they would
take back and what a commit writes; the loop around them is this one. Each attempt commits behind
its own savepoint: a lost race (or spot work another transaction is changing) rolls back to it,
excludes the node and plans again, up to `max_attempts`; a pool archived meanwhile answers pending.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from django.db import connection

from capacity import rules
from capacity.placement import ARCHIVED_REASON, PlacementRequest, Plan, Ranked

from .commit import ArchivedMeanwhile, Committed, LostRace, Owner, commit_member
from .loader import NodeIndex, PoolRow
from .preempt import Preemption, with_preempted
from .take_back import take_back
from .types import Outcome, PlacerConfig


@dataclass(frozen=True)
class Way:
    """How one kind of placement plans, finds spot work to take back, and commits its members.

    `commit(request, members, index, savepoint)` sets `savepoint` first when given (one round trip
    fewer); `charge(members, index)`, for leases, charges quota for the nodes chosen before anything
    else is written. `waits`: a victim another transaction holds is waited for (False when the
    caller already holds the pool: then that node counts as a lost race).
    """

    savepoint: str
    plan: Callable[[PlacementRequest], tuple[Plan, NodeIndex]]
    preemption: Callable[[PlacementRequest], Preemption | None]
    commit: Callable[[PlacementRequest, Sequence[Ranked], NodeIndex, str | None], list[Committed]]
    charge: Callable[[Sequence[Ranked], NodeIndex], None] | None = None
    waits: bool = True
    pool: PoolRow | None = None  # judged against its shares after the commit, when it has some
    preset: str | None = None  # the first attempt's savepoint, set already by the caller


def savepoint_of(prefix: str, number: int) -> str:
    """Return the savepoint an attempt commits behind."""
    return f"{prefix}_{number}"


def attempt(
    request: PlacementRequest, way: Way, owner: Owner, config: PlacerConfig, now: datetime | None
) -> Outcome:
    """Place `request` the given way inside the caller's transaction; see the module's docstring."""
    lost: list[str] = []
    notice: rules.Notice | bool | None = None  # read once, when something is to be taken back
    for number in range(1, config.max_attempts + 1):
        plan, index = way.plan(request)
        preemption = None
        placing = request
        if not plan.fits:
            # A node lost to a race may be one that is full now only of work that can be taken back
            # (spot work, or borrowed GPUs of a guarantee being reclaimed): it is looked at again.
            # With the pool's spotNotice it is taken back no sooner than the notice allows, and the
            # request starts then (a NOTICE rule: policy.notice).
            if notice is None:
                notice = (rules.notice(way.pool) if way.pool is not None else None) or False
            unlost = request.without_lost()
            noticed = notice.start(unlost, now or datetime.now(UTC)) if notice else unlost
            preemption = way.preemption(noticed) if noticed is not None else None
            if preemption is None:
                return Outcome("pending", reason=plan.pending_reason(), plan=plan, lost=lost)
            plan, index = with_preempted(plan, preemption), preemption.index
            placing = dataclasses.replace(request, during=noticed.during)
        members = [m for m in (plan.gang if request.gang is not None else (plan.choice,)) if m is not None]
        savepoint = savepoint_of(way.savepoint, number)
        # The first commit sets the savepoint in its own round trip, unless something comes before
        # it or the caller set it (with the window's reads).
        early = preemption is not None or way.charge is not None or savepoint == way.preset
        if early and savepoint != way.preset:
            with connection.cursor() as cur:
                cur.execute(f"SAVEPOINT {savepoint}")
        try:
            # Quota first, then the spot work taken back, then the pool: the lock order.
            if way.charge is not None:
                way.charge(members, index)
            if preemption is not None:
                stamp = now or datetime.now(UTC)
                given = notice or None
                if not take_back(
                    preemption.victims, preemption.at, owner, stamp, wait=way.waits, notice=given
                ):
                    node = preemption.members[0].node_id
                    raise LostRace(node, f"spot work on {node} is being changed")
            committed = way.commit(placing, members, index, None if early else savepoint)
            borrowed = None
            if way.pool is not None and owner.reservation_pk is not None and any(c.shared for c in committed):
                # The pool has shares: its rules judge the booking (policy.borrowing).
                borrowed = rules.committed(way.pool, owner.reservation_pk, placing)
        except (LostRace, ArchivedMeanwhile, rules.Pending) as stop:
            rollback_to(savepoint)
            if isinstance(stop, ArchivedMeanwhile):
                return Outcome("pending", reason=ARCHIVED_REASON, plan=plan, lost=lost)
            if isinstance(stop, rules.Pending):
                return Outcome("pending", reason=str(stop), plan=plan, lost=lost)
            lost.append(stop.reason)
            request = request.with_excluded(stop.node)
            continue
        # The savepoint is left to the transaction's commit: releasing it would cost a round trip.
        victims = preemption.victims if preemption is not None else ()
        later = None
        if placing.during.start != request.during.start and notice:
            later = notice.starts_later(placing)
            if owner.reservation_pk is not None:
                add_condition(owner.reservation_pk, later)
        return Outcome(
            "placed",
            committed=committed,
            plan=plan,
            lost=lost,
            preempted=victims,
            borrowed=borrowed,
            starts_later=later,
        )
    return gave_up(config, lost)


def commit_members(
    request: PlacementRequest,
    members: Sequence[Ranked],
    pool: PoolRow,
    index: NodeIndex,
    owner: Owner,
    now: datetime | None,
    savepoint: str | None,
    extra: Callable[[Ranked], dict] | None = None,
) -> list[Committed]:
    """Commit each member of a plan in turn; the first sets the savepoint, the last marks the owner placed.

    `extra(member)` gives a member's own commit arguments (a lease's devices and scalar room).
    """
    return [
        commit_member(
            request,
            m,
            pool,
            index,
            owner,
            last=i == len(members) - 1,
            now=now,
            savepoint=savepoint if i == 0 else None,
            **(extra(m) if extra is not None else {}),
        )
        for i, m in enumerate(members)
    ]


def gave_up(config: PlacerConfig, lost: list[str]) -> Outcome:
    """Return the pending outcome of a placement that lost the race max_attempts times."""
    return Outcome(
        "pending",
        reason=f"Unschedulable after {config.max_attempts} conflicting attempts: {'; '.join(lost)}",
        lost=lost,
    )


def add_condition(reservation_pk: int, condition: dict) -> None:
    """Add a condition to a placed reservation's (the regular booking that starts later)."""
    with connection.cursor() as cur:
        cur.execute(
            "UPDATE capacity_reservation SET conditions = conditions || %s::jsonb WHERE id = %s",
            [json.dumps([condition]), reservation_pk],
        )


def rollback_to(savepoint: str) -> None:
    """Undo everything since the savepoint: the commit's writes and any spot work taken back."""
    with connection.cursor() as cur:
        cur.execute(f"ROLLBACK TO SAVEPOINT {savepoint}")
