"""One reconcile pass: make Slurm match Berth, and bring Slurm's view of the bridged nodes back.

Berth is the source of truth for what it booked: the pass creates the berth-* reservations that
are missing, fixes those that differ (nodes, times, accounts) and ends those Berth no longer holds
(deleted before they start; cut short to a few seconds from now once started: Slurm refuses to
delete a reservation its jobs run in). Slurm is the source of truth for what Berth did not make: its nodes' DOWN
and DRAIN states become a `SlurmNode` condition on Berth's node (which stops it being offered), and
its hand-made reservations become maintenance windows on their nodes. Whatever it could not do is
kept on each bridged pool (`problems`, shown as its conditions) and counted; an unreachable Slurm
changes nothing in Berth but the bridge's own record ("behind since ...").
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.utils import timezone

from capacity.port import CapacityError
from inventory.models import Node, NodeCondition
from maintenance.windows import cancel_window, schedule_window

from . import scontrol
from .desired import Want, desired, preempted, prefix
from .metrics import PASSES, PROBLEMS
from .models import BridgedPool, ImportedReservation
from .scontrol import SlurmError, SlurmReservation, slurm_end

log = logging.getLogger(__name__)
CONDITION = "SlurmNode"
# A reservation Berth no longer holds that ends within this is left to end by itself.
ENDING = timedelta(seconds=2)
MAX_PROBLEMS = 50
PASS_LOCK = 0x5107_B41D  # one reconcile pass at a time, across the workers


@dataclass
class Outcome:
    """What one pass did, and what it could not do (pool pk, message)."""

    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    ended: list[str] = field(default_factory=list)
    imported: list[str] = field(default_factory=list)
    conditions: int = 0
    problems: list[tuple[int | None, str]] = field(default_factory=list)
    reached: bool = True

    def summary(self) -> str:
        """Return one line: what changed, and how many problems."""
        parts = [
            f"{len(v)} {k}" for k, v in (("created", self.created), ("updated", self.updated),
                                         ("ended", self.ended), ("imported", self.imported)) if v
        ]  # fmt: skip
        if self.conditions:
            parts.append(f"{self.conditions} node conditions changed")
        if self.problems:
            parts.append(f"{len(self.problems)} problems")
        if not self.reached:
            parts.append("Slurm unreachable")
        return ", ".join(parts)


def run_pass(now: datetime | None = None) -> Outcome:
    """Run one pass over the bridged pools; return what it did.

    A pool whose bridge is switched off keeps its row, so that passes go on ending its reservations;
    with no row at all a pass asks nothing of Slurm. One pass at a time across the workers: a
    worker that finds another's pass running leaves it that one (it reads Berth after this one's
    commit anyway, at its next wake-up or timed pass).
    """
    now = now or timezone.now()
    rows = {b.pool_id: b for b in BridgedPool.objects.all()}
    outcome = Outcome()
    if not rows:
        return outcome
    with connection.cursor() as cur:
        cur.execute("SELECT pg_try_advisory_lock(%s)", [PASS_LOCK])
        if not cur.fetchone()[0]:
            return outcome
    try:
        return _pass(rows, now, outcome)
    finally:
        with connection.cursor() as cur:
            cur.execute("SELECT pg_advisory_unlock(%s)", [PASS_LOCK])


def _pass(rows: dict[int, BridgedPool], now: datetime, outcome: Outcome) -> Outcome:
    pools = {pk: b for pk, b in rows.items() if b.enabled}
    try:
        held = scontrol.reservations()
        slurm_nodes = scontrol.nodes()
    except SlurmError as err:
        outcome.reached = False
        outcome.problems.append((None, f"Slurm unreachable: {err}"))
        _record(rows, outcome, now)
        return outcome
    want = desired(pools, now)
    outcome.problems.extend(want.problems)
    mine = {r.name: r for r in held if r.name.startswith(prefix())}
    # Ends first: a booking placed where a released one was takes its nodes in the same pass.
    gone = [name for name in mine if name not in want.wants]
    taken = preempted(gone)
    for name in gone:
        _end(mine[name], now, outcome, delete=name in taken)
    for name, wanted in want.wants.items():
        _converge(wanted, mine.get(name), now, outcome)
    berth_nodes = _bridged_nodes(pools)
    _import(held, berth_nodes, now, outcome)
    _node_states(slurm_nodes, berth_nodes, outcome)
    _record(rows, outcome, now)
    return outcome


def _try(outcome: Outcome, pool_pk: int | None, what: str, fn, *args, **kwargs) -> bool:
    try:
        fn(*args, **kwargs)
        return True
    except (SlurmError, scontrol.SlurmInputError) as err:
        outcome.problems.append((pool_pk, f"{what}: {err}"))
        return False


def _create(wanted: Want, now: datetime, outcome: Outcome) -> bool:
    """Create the reservation from its start (now, for one already under way)."""
    return _try(outcome, wanted.pool_pk, f"create {wanted.name}", scontrol.create, wanted.name, wanted.nodes,
                max(wanted.start, now), wanted.end, accounts=wanted.accounts, users=wanted.users,
                flags=wanted.flags)  # fmt: skip


def _differences(wanted: Want, found: SlurmReservation, now: datetime) -> dict[str, str]:
    """Return the fields of a reservation that differ from Berth's, as scontrol update takes them."""
    fix: dict[str, str] = {}
    if set(found.nodes) != set(wanted.nodes):
        fix["Nodes"] = ",".join(wanted.nodes)
    if found.end != scontrol.parse_time(slurm_end(wanted.end)):
        fix["EndTime"] = slurm_end(wanted.end)
    if wanted.start > now and found.start != wanted.start.replace(microsecond=0):
        fix["StartTime"] = scontrol.slurm_time(wanted.start)
    if wanted.accounts and set(found.accounts) != set(wanted.accounts):
        fix["Accounts"] = ",".join(scontrol.check_account(a) for a in wanted.accounts)
    return fix


def _converge(wanted: Want, found: SlurmReservation | None, now: datetime, outcome: Outcome) -> None:
    """Create the reservation, or fix what differs from Berth."""
    if found is None:
        if _create(wanted, now, outcome):
            outcome.created.append(wanted.name)
        return
    fix = _differences(wanted, found, now)
    if not fix:
        return
    if _try(outcome, wanted.pool_pk, f"update {wanted.name}", scontrol.update, wanted.name, **fix):
        outcome.updated.append(wanted.name)
        return
    if wanted.start <= now:
        return  # under way: Slurm keeps what it has, and the problem says so
    # Slurm refused the change (another reservation on the new nodes, say): make it again from scratch.
    refused = outcome.problems.pop()
    if _try(outcome, wanted.pool_pk, f"delete {wanted.name}", scontrol.delete, wanted.name) and _create(
        wanted, now, outcome
    ):
        outcome.updated.append(wanted.name)
    else:
        outcome.problems.append(refused)


def _end(found: SlurmReservation, now: datetime, outcome: Outcome, *, delete: bool = False) -> None:
    """End a berth-* reservation Berth no longer holds.

    One not started, or a preempted booking's, is deleted; a started one (an early release), or one
    Slurm will not delete because its jobs run in it, ends ENDING from now: those jobs keep their
    time, and no new job starts in it.
    """
    if (found.start is not None and found.start > now) or delete:
        if _try(outcome, None, f"delete {found.name}", scontrol.delete, found.name):
            outcome.ended.append(found.name)
            return
        if found.start is not None and found.start > now:
            return
        outcome.problems.pop()  # in use: cut it short instead
    if (found.end is None or found.end > now + ENDING) and _try(
        outcome, None, f"end {found.name}", scontrol.update, found.name, EndTime=slurm_end(now + ENDING)
    ):
        outcome.ended.append(found.name)


def _bridged_nodes(pools: dict[int, BridgedPool]) -> dict[str, Node]:
    return {n.name: n for n in Node.objects.filter(pool_id__in=list(pools))}


def _import(held: list[SlurmReservation], nodes: dict[str, Node], now: datetime, outcome: Outcome) -> None:
    """Hold each hand-made Slurm reservation on bridged nodes as a maintenance window; drop the gone ones."""
    seen = set()
    known = {i.name: i for i in ImportedReservation.objects.all()}
    for found in held:
        if found.name.startswith(prefix()) or found.start is None or found.end is None or found.end <= now:
            continue
        ours = sorted(n for n in found.nodes if n in nodes)
        if not ours:
            continue
        seen.add(found.name)
        start = max(found.start, now)
        old = known.get(found.name)
        if (
            old is not None
            and old.nodes == ours
            and old.ends_at == found.end
            and (old.starts_at == start or old.starts_at <= now)
        ):
            continue
        pool_pk = nodes[ours[0]].pool_id
        try:
            with transaction.atomic():
                if old is not None:
                    cancel_window(old.window_id, now=now)
                scheduled = schedule_window(
                    {
                        "nodes": ours,
                        "start": int(start.timestamp() * 1000),
                        "end": int(found.end.timestamp() * 1000),
                        "reason": f"Slurm reservation {found.name}"[:200],
                    },
                    by="slurm bridge",
                    now=now,
                )
                ImportedReservation.objects.create(
                    name=found.name, window=scheduled.window, starts_at=start, ends_at=found.end, nodes=ours
                )
        except CapacityError as err:
            outcome.problems.append((pool_pk, f"import {found.name}: {err.message}"))
            continue
        outcome.imported.append(found.name)
        booked = sorted({f"reservation {o.reservation}" for o in scheduled.overlaps if o.reservation})
        if booked:
            outcome.problems.append(
                (pool_pk, f"Slurm reservation {found.name} overlaps Berth bookings: {', '.join(booked[:10])}")
            )
    for name, old in known.items():
        if name not in seen:
            with transaction.atomic():
                cancel_window(old.window_id, now=now)


def _node_states(slurm_nodes, nodes: dict[str, Node], outcome: Outcome) -> None:
    """Give each bridged node Slurm reports DOWN or DRAIN a SlurmNode condition; clear it on the others."""
    states = {n.name: n for n in slurm_nodes}
    have = {c.node_id: c for c in NodeCondition.objects.filter(type=CONDITION, node__in=list(nodes.values()))}
    # A node no longer in a bridged pool (its bridge switched off, the node moved) loses Slurm's word.
    for stale in NodeCondition.objects.filter(type=CONDITION).exclude(node__in=list(nodes.values())):
        stale.delete()
        outcome.conditions += 1
    unknown: dict[int, list[str]] = {}
    for name, node in nodes.items():
        found = states.get(name)
        if found is None:
            unknown.setdefault(node.pool_id, []).append(name)
        bad = found is not None and (found.down or found.drained)
        current = have.get(node.pk)
        if bad:
            reason = "Down" if found.down else "Drain"
            message = f"Slurm reports the node {'DOWN' if found.down else 'DRAIN'}"
            message += f": {found.reason}" if found.reason else ""
            if current is None or (current.reason, current.message) != (reason, message):
                NodeCondition.objects.update_or_create(
                    node=node, type=CONDITION,
                    defaults={"status": NodeCondition.Status.TRUE, "reason": reason, "message": message},
                )  # fmt: skip
                outcome.conditions += 1
        elif current is not None:
            current.delete()
            outcome.conditions += 1
    for pool_pk, names in unknown.items():
        listed = ", ".join(sorted(names)[:5]) + (", …" if len(names) > 5 else "")
        outcome.problems.append((pool_pk, f"{len(names)} node(s) of the pool are not in Slurm: {listed}"))


def _record(pools: dict[int, BridgedPool], outcome: Outcome, now: datetime) -> None:
    """Keep the pass's outcome on each pool: when, whether Slurm answered, what it could not do."""
    for pk, bridge in pools.items():
        problems = [
            {"message": message[:300], "at": now.isoformat()}
            for pool_pk, message in outcome.problems
            if pool_pk in (None, pk)
        ][:MAX_PROBLEMS]
        fields = {"last_pass_at": now, "problems": problems}
        if outcome.reached:
            fields["last_ok_at"] = now
        BridgedPool.objects.filter(pk=bridge.pk).update(**fields)
    PASSES.labels("unreachable" if not outcome.reached else "problems" if outcome.problems else "ok").inc()
    if outcome.problems:
        PROBLEMS.labels("unreachable" if not outcome.reached else "mirror").inc(len(outcome.problems))
        log.warning("slurm pass: %s", "; ".join(m for _, m in outcome.problems[:5]))
