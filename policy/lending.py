"""The lending rule: a spot request that does not fit on free capacity runs on idle bookings' GPUs.

In a pool whose policy has `lend_idle`, a spot request that found no room is planned again with
only lendable devices free: those that, over the request's whole window, hold exactly one booking,
the owner's (layer 0), of a placed regular reservation marked `Idle` whose owner has not asked to
keep it when idle. The owner keeps its booking; the spot work books the same devices lent (layer
1), for at most the owner's window (a lender's booking must cover the request's window).

The commit locks the lenders' rows (reservations come before the pool in the lock order) and
checks they still lend; the guarded commit then books layer 1 only where each device's owner
booking covers the window, locking those bookings, and the EXCLUDE constraint lets at most one
lent booking per device and instant. The spot reservation records its lenders (`lent_from`).
A GPU whose latest sample shows a process is not lent. The pool-lease batch lends too, holding
the pool: it skips lenders another transaction holds. policy.reclaim takes lent work
back. A pool rule at NO_ROOM (capacity.rules), registered by policy/apps.py: placement calls it
only for a spot request that found no room, and it asks the pool's policy (one statement) then.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timedelta

from django.db import connection
from django.utils import timezone

from capacity.port import (
    IDLE,
    Committed,
    LostRace,
    NodeIndex,
    NoRoom,
    Outcome,
    Owner,
    PlacementRequest,
    PlacerConfig,
    Planner,
    PoolIndex,
    PoolRow,
    Ranked,
    Rule,
    Way,
    attempt,
    commit_members,
    key_in,
    member_devices,
    plan_reads,
    pool_index,
    prepared_cursor,
    views_for,
    window_range,
)

IDLE_JSON = f'[{{"type": "{IDLE}"}}]'
# A sample older than this says nothing of a GPU now (an agent reports every 30 s).
SAMPLE_FRESH = timedelta(minutes=2)

# Whether the pool lends idle GPUs (its policy's lend_idle; no policy: no).
_LENDS_SQL = "SELECT coalesce((SELECT lend_idle FROM capacity_poolpolicy WHERE pool_id = %s), false)"

# Every live booking of the pool's devices in the window, with whether it could be lent: the
# owner's booking (layer 0), over the whole window, of a placed regular reservation of this pool
# that is Idle and not kept when idle, on a GPU whose latest fresh sample shows no process (an idle
# owner's process holding memory is still the owner's: it would be reclaimed for at once).
_BOOKINGS_SQL = f"""
SELECT b.device_id, a.reservation_id,
       b.layer = 0 AND b.during @> %(during)s::tstzrange AND r.id IS NOT NULL
       AND coalesce((SELECT x.processes FROM inventory_devicesample x
                      WHERE x.device_id = b.device_id AND x.minute > %(since)s::timestamptz
                      ORDER BY x.minute DESC LIMIT 1), 0) = 0
  FROM capacity_devicebooking b
  JOIN capacity_allocation a ON a.id = b.allocation_id
  LEFT JOIN capacity_reservation r
    ON r.id = a.reservation_id AND r.pool_id = %(pool)s::bigint AND r.status = 'placed'
   AND r.priority = 'regular' AND NOT r.keep_when_idle AND r.conditions @> %(idle)s::jsonb
   AND a.released_at IS NULL
 WHERE b.during && %(during)s::tstzrange
   AND {key_in("b.device_id", "%(low)s::bigint", "%(high)s::bigint")}
"""

# The lenders locked (before the pool, as the lock order has reservations), those still lending.
# A pool-lease batch already holds the pool: it skips a lender another transaction holds (a
# reclaim, a release) rather than wait for it against the lock order, and counts it a lost race.
_LOCK_LENDERS_SQL = """
SELECT id FROM capacity_reservation
 WHERE id = ANY(%(ids)s::bigint[]) AND status = 'placed' AND priority = 'regular'
   AND NOT keep_when_idle AND conditions @> %(idle)s::jsonb
 ORDER BY id FOR SHARE{skip}
"""


def lends_idle(pool: PoolRow) -> bool:
    """Return whether the pool's policy lends idle GPUs to spot work."""
    with connection.cursor() as cur:
        cur.execute(_LENDS_SQL, [pool.pk])
        return bool(cur.fetchone()[0])


def lendable(
    pool: PoolRow, index: PoolIndex, request: PlacementRequest, now: datetime | None = None
) -> dict[int, int]:
    """Return device pk -> lending reservation for the devices the request could borrow in its window.

    A device qualifies when its one booking in the window is an Idle owner's booking covering it all
    (a device already lent, or booked by anyone else in part of the window, does not) and its latest
    sample of the last SAMPLE_FRESH shows no process.
    """
    rows: dict[int, list[tuple[int | None, bool]]] = defaultdict(list)
    since = (now or timezone.now()) - SAMPLE_FRESH
    with prepared_cursor() as cur:
        cur.execute(
            _BOOKINGS_SQL,
            {
                **index.keys,
                "pool": pool.pk,
                "during": window_range(request.during),
                "idle": IDLE_JSON,
                "since": since,
            },
        )
        for device, reservation, ok in cur.fetchall():
            if device in index.device_node:
                rows[device].append((reservation, ok))
    return {
        device: held[0][0]
        for device, held in rows.items()
        if len(held) == 1 and held[0][1] and held[0][0] is not None
    }


def lend(
    request: PlacementRequest,
    pool: PoolRow,
    owner: Owner,
    config: PlacerConfig,
    now: datetime | None,
    built: Planner | None = None,
    *,
    holds_pool: bool = False,
) -> Outcome | None:
    """Place a spot request on idle owners' lent GPUs, or return None when there is nothing to lend.

    Call it after the request found no room on free capacity, inside the caller's transaction;
    `holds_pool` when the caller already holds the pool's lock (the pool-lease batch).
    """
    if (
        request.priority != "spot"
        or request.lease
        or owner.reservation_pk is None
        or pool.view.archived
        or not lends_idle(pool)
    ):
        return None
    built = Planner.of(request, pool, config, built)
    lenders_of: dict[int, int] = {}

    def plan(req: PlacementRequest):
        static = pool_index(pool)
        lenders_of.clear()
        lenders_of.update(lendable(pool, static, req, now))
        _taken, _short, used = plan_reads(static, req.during, req.resources)
        taken = set(static.device_node) - set(lenders_of)
        names = sorted({static.device_node[pk] for pk in lenders_of})
        index = views_for(static, names, taken, used)
        return built.bind(req)(index, static.memo()), index

    def lenders_for(member: Ranked, index: NodeIndex) -> tuple[int, ...]:
        _atoms, _picked, booked = member_devices(member, index)
        return tuple(sorted({lenders_of[pk] for pk in booked}))

    def commit(
        req: PlacementRequest, members: Sequence[Ranked], index: NodeIndex, savepoint: str | None
    ) -> list[Committed]:
        if savepoint is not None:
            with connection.cursor() as cur:
                cur.execute(f"SAVEPOINT {savepoint}")
        by_member = {m.node_id: lenders_for(m, index) for m in members}
        wanted = sorted({pk for pks in by_member.values() for pk in pks})
        with connection.cursor() as cur:
            cur.execute(
                _LOCK_LENDERS_SQL.format(skip=" SKIP LOCKED" if holds_pool else ""),
                {"ids": wanted, "idle": IDLE_JSON},
            )
            if len(cur.fetchall()) < len(wanted):
                node = members[0].node_id
                raise LostRace(node, f"the owner of the idle GPUs on {node} is no longer lending them")
        committed = commit_members(
            req, members, pool, index, owner, now, None, extra=lambda m: {"lenders": by_member[m.node_id]}
        )
        with connection.cursor() as cur:
            cur.execute(
                "UPDATE capacity_reservation SET lent_from = %s WHERE id = %s", [wanted, owner.reservation_pk]
            )
        lent[:] = wanted
        return committed

    lent: list[int] = []
    way = Way(
        savepoint="capacity_lend", plan=plan, preemption=lambda req: None, commit=commit, waits=not holds_pool
    )
    outcome = attempt(request, way, owner, config, now)
    if outcome.status != "placed":
        return None
    outcome.lent_from = tuple(lent)
    return outcome


def _no_room(asked: NoRoom) -> Outcome | None:
    """Lend the request idle owners' GPUs where the pool lends them (a batch asks the policy once)."""
    if asked.memo is not None:
        lends = asked.memo.get(LENDING.name)
        if lends is None:
            lends = asked.memo[LENDING.name] = lends_idle(asked.pool)
        if not lends:
            return None
    return lend(
        asked.request,
        asked.pool,
        asked.owner,
        asked.config,
        asked.now,
        asked.built,
        holds_pool=asked.holds_pool,
    )


def _may_lend(pool: PoolRow) -> bool:
    return True  # the pool's lend_idle is read fresh, and only once a spot request found no room


LENDING = Rule("lending", applies=_may_lend, no_room=_no_room)
RULES = (LENDING,)
