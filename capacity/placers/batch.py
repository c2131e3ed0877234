"""The pool-lease placer: queued reservations placed in batches, one pool lock and one commit each.

A batch takes up to `max_batch` queued reservations of one pool, oldest first (in a pool with
shares, lowest fair share first: capacity.rules' queue), skipping rows another transaction holds, and
only while it holds the pool's placer lock (an advisory lock: one placer per pool at a time). It plans them one after another against a ledger of the pool (the static index,
the bookings of the batch's windows and every node's scalars, read once), each plan seeing the
ones before it. Then it locks the pool row and sends, in one pipeline behind one savepoint, the
lock of the plans' nodes and one statement with every plan's guarded writes (batch_write). A lost
race rolls the round back to the savepoint; the request is planned again without the node (up to
max_attempts) and the round is sent again. Placed rows lose
their Queued condition in the commit. The others become pending with their reason, and get their
quota back, in a second short transaction, so the batch never holds a quota row.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache

from django.db import connection, transaction
from django.utils import timezone

from capacity import observe, rules
from capacity.db.channels import PLACED_CHANNEL, PLACER_LOCK_CLASS
from capacity.db.cursors import prepared_cursor
from capacity.db.retry import retry_on_conflict
from capacity.models.reservations import unschedulable
from capacity.placement import (
    ARCHIVED_REASON,
    PlacementRequest,
    Plan,
    reason_rest,
    validate_request,
)
from capacity.placers import quota
from capacity.placers.attempt import gave_up
from capacity.placers.planning import plan_shortlist, planner, uses_shortlist
from capacity.placers.types import POOL_LEASE, Outcome, PlacerConfig

from .batch_write import BatchWrite, Write, lock_nodes, read_locks
from .commit import Committed, LostRace, Owner
from .index import PoolIndex, pool_index, views_for
from .inline import place
from .ledger import Ledger
from .loader import NodeIndex, PoolRow, load_pool

# Matches reservation_queued_idx's condition, so the queue is read from that index.
QUEUED_SQL = """r.status = 'pending' AND r.conditions @> '[{"type": "Queued"}]'::jsonb"""

_CLAIM_SQL = f"""
WITH owner AS MATERIALIZED (SELECT pg_try_advisory_xact_lock(%(class)s::int, %(pool)s::int) AS ok)
SELECT r.id, r.tenant_id, t.slug, r.request -> 'placement', p.slug, r.created_at
  FROM capacity_reservation r
  JOIN inventory_tenant t ON t.id = r.tenant_id
  JOIN inventory_pool p ON p.id = r.pool_id
 WHERE (SELECT ok FROM owner) AND r.pool_id = %(pool)s::bigint AND {QUEUED_SQL}
 ORDER BY r.created_at, r.id
 LIMIT %(limit)s
   FOR UPDATE OF r SKIP LOCKED
"""


@cache
def ordered_claim_sql(order: str) -> str:
    """Return the claim in a pool the queue's rule orders, by `order` over `r` (rules.queue_claim).

    The order is not the queue index's, so the ids are picked first from narrow rows (twice the
    batch, for rows another transaction holds), then locked and read: sorting whole rows cost 13 ms
    a batch with 10,000 queued in fair order, this 4.6 (bench_queue).
    """
    return f"""
WITH owner AS MATERIALIZED (SELECT pg_try_advisory_xact_lock(%(class)s::int, %(pool)s::int) AS ok)
SELECT r.id, r.tenant_id, t.slug, r.request -> 'placement', p.slug, r.created_at
  FROM capacity_reservation r
  JOIN inventory_tenant t ON t.id = r.tenant_id
  JOIN inventory_pool p ON p.id = r.pool_id
 WHERE r.id = ANY(ARRAY(
         SELECT r.id FROM capacity_reservation r
          WHERE (SELECT ok FROM owner) AND r.pool_id = %(pool)s::bigint AND {QUEUED_SQL}
          ORDER BY {order} LIMIT 2 * %(limit)s))
   AND {QUEUED_SQL}
 ORDER BY {order}
 LIMIT %(limit)s
   FOR UPDATE OF r SKIP LOCKED
"""


_LOCK_POOL_SQL = """
SELECT archived, EXISTS (SELECT 1 FROM capacity_poolshare s WHERE s.pool_id = inventory_pool.id)
  FROM inventory_pool WHERE id = %(pool)s::bigint FOR NO KEY UPDATE
"""

# Rows still queued become pending with their reason; the ones returned get their quota back.
_SETTLE_SQL = f"""
UPDATE capacity_reservation r SET conditions = c.conditions, updated_at = %(now)s::timestamptz
  FROM unnest(%(ids)s::bigint[], %(conditions)s::jsonb[]) AS c(id, conditions)
 WHERE r.id = c.id AND {QUEUED_SQL}
RETURNING r.id
"""


@dataclass
class Entry:
    """One queued reservation in a batch: its request, its current plan and what happened to it."""

    pk: int
    tenant_pk: int
    tenant_slug: str
    request: PlacementRequest
    plan: Plan | None = None
    index: NodeIndex | None = None
    reason: str = ""
    lost: list[str] = field(default_factory=list)
    committed: list[Committed] = field(default_factory=list)
    queued_at: datetime | None = None
    preempted: tuple[int, ...] = ()  # spot reservations taken back to place it

    @property
    def fits(self) -> bool:
        """Return whether the entry holds a plan to commit."""
        return self.plan is not None and self.plan.fits and not self.reason


@dataclass
class BatchResult:
    """What one batch did: placed and pending reservation pks, and the lost races replanned."""

    placed: list[int] = field(default_factory=list)
    pending: list[int] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.placed) + len(self.pending)


def plan_from_ledger(
    request: PlacementRequest, pool: PoolRow, config: PlacerConfig, static: PoolIndex, ledger: Ledger
) -> tuple[Plan, NodeIndex]:
    """Plan one request against the ledger: a short list when it gives the same top N, else every node."""
    plan = planner(request, pool, config)

    taken = ledger.taken(request.during)
    used = ledger.used(request.during, request.resources)
    if uses_shortlist(request, config):
        short = static.short(request.resources, used)
        found = plan_shortlist(
            request,
            pool,
            config,
            static,
            taken,
            short,
            used,
            plan,
        )
        if found is not None:
            return found
    # Every node, as load_node_views would give them, from the index and the ledger.
    index = views_for(static, list(static.by_name), taken, used)
    return plan(index, static.memo()), index


def _pending(reason: str, plan: Plan | None = None) -> list[dict]:
    return [unschedulable(reason, rest=reason_rest(plan, reason))]


@retry_on_conflict
def place_batch(
    pool_pk: int,
    config: PlacerConfig,
    *,
    now: datetime | None = None,
    shares: Mapping[int, float | None] | None = None,
) -> BatchResult:
    """Place one batch of the pool's queued reservations, then settle the ones that did not fit.

    `shares` (tenant pk -> figure, the pool's rules.queue_figures) for a pool the queue's rule
    orders (fair shares in a pool with shares): the batch takes its queue in that order; None keeps
    the oldest first.

    Returns an empty result when nothing is queued, or when another placer holds the pool. The
    batch's own transaction only places: it never touches quota rows, so it never holds up a
    request being queued. Those left over stay queued (holding their quota) until a second, short
    transaction marks them pending and refunds them, reservation rows first, as the lock order has it.
    A batch that Postgres ends with a deadlock is run again (a refund of spot work it takes back
    can wait on a tenant's quota-load rows, which that tenant's own placement may hold).
    """
    now = now or timezone.now()
    with transaction.atomic():
        with prepared_cursor() as cur:
            params = {"class": PLACER_LOCK_CLASS, "pool": pool_pk, "limit": config.max_batch}
            if shares is None:
                cur.execute(_CLAIM_SQL, params)
            else:
                order, ordered = rules.queue_claim(shares)
                cur.execute(ordered_claim_sql(order), {**params, **ordered})
            rows = cur.fetchall()
        if not rows:
            return BatchResult()
        pool = load_pool(rows[0][4])
        entries = [
            # Django's connection leaves jsonb as text for its fields to decode.
            Entry(
                pk,
                tenant_pk,
                slug,
                validate_request({**json.loads(placement), "reservationId": str(pk)}),
                queued_at=queued_at,
            )
            for pk, tenant_pk, slug, placement, _pool, queued_at in rows
        ]
        if pool is None or pool.view.archived:
            for e in entries:
                e.reason = ARCHIVED_REASON
        else:
            ledger = _plan_all(entries, pool, config)
            if any(e.fits or e.request.gang is not None for e in entries):
                if _lock(entries, pool):
                    # A pool with shares: what stays within its tenants' guarantees commits as one
                    # batch; what would borrow is judged one at a time, on what the batch placed.
                    planned = [(e.pk, e.tenant_pk, e.request) for e in entries if e.fits]
                    past = rules.split(pool, planned)  # policy.borrowing
                    _commit_all([e for e in entries if e.pk not in past], pool, config, ledger, now)
                    for e in entries:
                        if e.pk in past and e.fits:
                            _place_inline(e, pool, config, now)
                else:
                    _commit_all(entries, pool, config, ledger, now)
            memo: dict = {}  # the NO_ROOM rules' (lending asks the pool's policy once a batch)
            for e in entries:
                if e.committed or e.plan is None or e.plan.fits:
                    continue
                # Regular work that fits only by taking spot work back places inline (spec).
                if e.request.priority == "regular":
                    _place_inline(e, pool, config, now)
                # Spot work that found no room: the pool's NO_ROOM rules may place it otherwise
                # (idle owners' lent GPUs, policy.lending).
                elif e.request.priority == "spot" and e.request.gang is None:
                    _no_room_inline(e, pool, config, now, memo)
        placed = [e.pk for e in entries if e.committed]
        for e in entries if pool is not None else ():
            if e.committed:  # the pool's rules once placed (capacity.rules): approval's hold
                rules.placed(
                    rules.Booking(e.pk, e.tenant_pk, e.tenant_slug, pool, e.request, now), batch=True
                )
        if placed:
            _notify(placed)
    settled = _settle([e for e in entries if not e.committed], now)
    observe.tell("batch", len(entries))
    for e in (e for e in entries if e.committed or e.pk in settled):  # not those released meanwhile
        status = "placed" if e.committed else "pending"
        observe.tell(
            "placement",
            POOL_LEASE,
            status,
            reason=e.reason,
            lost=len(e.lost),
            preempted=e.preempted,
            queued_at=e.queued_at,
        )
    return BatchResult(
        placed=placed,
        pending=[e.pk for e in entries if e.pk in settled],
        lost=[reason for e in entries for reason in e.lost],
    )


def _plan_all(entries: list[Entry], pool: PoolRow, config: PlacerConfig) -> Ledger:
    static = pool_index(pool)
    ledger = Ledger.load(pool, static, [e.request.during for e in entries])
    for e in entries:
        if e.request.gang is not None:
            # reserve() places gangs inline; one queued some other way is placed inline after the lock.
            continue
        _plan_entry(e, pool, config, ledger)
    return ledger


def _plan_entry(e: Entry, pool: PoolRow, config: PlacerConfig, ledger: Ledger) -> None:
    e.plan, e.index = plan_from_ledger(e.request, pool, config, ledger.index, ledger)
    if e.plan.fits:
        ledger.book(e.request, e.plan.choice, e.index)
    else:
        e.reason = e.plan.pending_reason()


def _lock(entries: list[Entry], pool: PoolRow) -> bool:
    """Lock the pool row for the commits and return whether it has shares; an archived one places nothing."""
    with prepared_cursor() as cur:
        cur.execute(_LOCK_POOL_SQL, {"pool": pool.pk})
        archived, shared = cur.fetchone()
    if archived:
        for e in entries:
            if e.fits or e.request.gang is not None:
                e.reason = ARCHIVED_REASON
    return bool(shared) and not archived


def _commit_all(
    entries: list[Entry], pool: PoolRow, config: PlacerConfig, ledger: Ledger, now: datetime
) -> None:
    """Send every fitting plan's commit behind one savepoint; replan and resend from a lost race.

    One pipeline: the savepoint, one statement locking the plans' nodes in node order, then one
    statement with every plan's guarded writes (batch_write). When a plan comes up short, everything goes back to the savepoint (its
    writes and the ones after it), that plan is planned again without the node, and the whole lot
    is sent again: a lost race is rare, and one savepoint per plan cost a statement each (and past
    64 of them, Postgres's cache of a transaction's subtransactions overflows).
    """
    for e in entries:
        if e.request.gang is not None and not e.reason:
            _place_inline(e, pool, config, now)
    todo = [e for e in entries if e.fits]
    # One savepoint for every round: ROLLBACK TO keeps it, so a new one per round would nest.
    savepoint = "capacity_batch"
    first = True
    while todo:
        order = sorted(range(len(todo)), key=lambda i: todo[i].index.node_pk[todo[i].plan.choice.node_id])
        failed: tuple[int, LostRace] | None = None
        with connection.connection.pipeline():
            if first:
                with connection.cursor() as plain:
                    plain.execute(f"SAVEPOINT {savepoint}")
                first = False
            locks = lock_nodes(
                pool,
                [(todo[i].index.node_pk[todo[i].plan.choice.node_id], todo[i].tenant_slug) for i in order],
            )
            sent = BatchWrite([Write(e.request, e.plan.choice, e.index, Owner(e.pk)) for e in todo], now)
            schedulable = [True] * len(todo)
            for i, ok in zip(order, read_locks(locks), strict=True):
                schedulable[i] = ok
            for i, (e, answer) in enumerate(zip(todo, sent.read(schedulable), strict=True)):
                if isinstance(answer, LostRace):
                    failed = (i, answer)
                    break
                e.committed = [answer]
        if failed is None:
            return
        i, lost = failed
        with connection.cursor() as cur:
            cur.execute(f"ROLLBACK TO SAVEPOINT {savepoint}")  # undoes every commit of this round
        e = todo[i]
        for other in todo:
            other.committed = []
        ledger.book(e.request, e.plan.choice, e.index, sign=-1)
        e.lost.append(lost.reason)
        e.request = e.request.with_excluded(lost.node)
        if len(e.lost) >= config.max_attempts:
            e.reason = gave_up(config, e.lost).reason
        else:
            _plan_entry(e, pool, config, ledger)
        todo = [other for other in todo if other.fits]


def _place_inline(e: Entry, pool: PoolRow, config: PlacerConfig, now: datetime) -> None:
    # The batch may hold the pool row already (after _lock): preemption must not wait on a victim.
    outcome: Outcome = place(
        e.request, pool.view.id, Owner(e.pk), config, pool=pool, now=now, holds_pool=True
    )
    e.lost = [*e.lost, *outcome.lost]  # the batch's own lost races count too
    if outcome.status == "placed":
        e.committed = outcome.committed
        e.preempted = outcome.preempted
    else:
        e.reason = outcome.reason


def _no_room_inline(e: Entry, pool: PoolRow, config: PlacerConfig, now: datetime, memo: dict) -> None:
    # The batch may hold the pool row already: a row another transaction holds is skipped.
    outcome = rules.no_room(
        rules.NoRoom(e.request, pool, Owner(e.pk), config, now, holds_pool=True, memo=memo)
    )
    if outcome is not None:
        e.lost = [*e.lost, *outcome.lost]
        e.committed = outcome.committed


def _settle(entries: list[Entry], now: datetime) -> set[int]:
    """Mark these still-queued entries pending with their reason and refund them; return their pks.

    A row that is no longer queued (released, or placed by another placer meanwhile) is left alone.
    """
    if not entries:
        return set()
    with transaction.atomic():
        with prepared_cursor() as cur:
            cur.execute(
                _SETTLE_SQL,
                {
                    "now": now,
                    "ids": [e.pk for e in entries],
                    "conditions": [json.dumps(_pending(e.reason, e.plan)) for e in entries],
                },
            )
            settled = {row[0] for row in cur.fetchall()}
        quota.refund(settled)
        if settled:
            _notify(sorted(settled))
    return settled


def _notify(pks: list[int]) -> None:
    """Tell waiters (at commit) that these reservations left the queue."""
    with connection.cursor() as cur:
        cur.execute("SELECT pg_notify(%s, %s)", [PLACED_CHANNEL, ",".join(map(str, pks))])


def queued_pools() -> list[int]:
    """Return the pks of the pools with queued reservations."""
    with connection.cursor() as cur:
        cur.execute(f"SELECT DISTINCT r.pool_id FROM capacity_reservation r WHERE {QUEUED_SQL} ORDER BY 1")
        return [row[0] for row in cur.fetchall()]


def place_queued(config: PlacerConfig, *, fair: rules.Figures | None = None) -> BatchResult:
    """Place every queued reservation, pool by pool, batch after batch.

    `fair`: the round's queue figures (rules.queue_figures: fair shares), else read here once for
    the queued pools.
    """
    total = BatchResult()
    pools = queued_pools()
    if fair is None and pools:
        fair = rules.queue_figures(pools, timezone.now())
    for pool_pk in pools:
        while True:
            batch = place_batch(pool_pk, config, shares=(fair or {}).get(pool_pk))
            total.placed += batch.placed
            total.pending += batch.pending
            total.lost += batch.lost
            if len(batch) < config.max_batch:
                break
    return total
