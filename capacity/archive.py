"""Move bookings long over out of the live tables, in batches, into history partitioned by month.

The EXCLUDE constraint's table (capacity_devicebooking), the scalar claims and the allocations are
what every placement reads and writes; a year of bookings in them slows every placement. A device
booking or claim that ended more than HISTORY_AFTER ago, of an allocation released, can never again
conflict with anything (a window may not start in the past), so the worker moves it to
capacity_devicebookinghistory or capacity_scalarclaimhistory, and then the allocation itself to
capacity_allocationhistory, each partitioned by the month it ended. Readers of the past (a
reservation's atoms, its usage, the usage report, the node timeline, the audit) read the views
capacity_devicebooking_all and capacity_allocation_all, live and moved rows as one table, ids kept.
Last, a reservation follows its allocations to capacity_reservationhistory (view
capacity_reservation_all); its events stay where they are.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.conf import settings
from django.db import connection, transaction

BATCH = 5_000  # rows a transaction moves: a few tens of milliseconds of locks
MAX_BATCHES = 40  # per table per call: 200,000 rows, so the first run after a year catches up in rounds

# One mover at a time (two would only skip each other's locked rows).
_LOCK = 0x4265_7274_4869  # "BertHi"


@dataclass(frozen=True)
class _Table:
    """How one live table's rows move: which are due, their columns, when each ended."""

    history: str
    columns: str
    due: str  # SELECT id, ended ... LIMIT %s FOR UPDATE SKIP LOCKED, given the cut and the batch
    ended: str  # the moved row's end, over the DELETE's RETURNING columns
    before: str = ""  # run first with the ids, when other rows must go with them


def _ends_before_cut(live: str) -> str:
    # Oldest first through the index on upper(during); rows a placer holds are left for later, and
    # so are the rows of an allocation not yet released (release and the audit read them).
    return (
        f"SELECT x.id, upper(x.during) FROM {live} x JOIN capacity_allocation a ON a.id = x.allocation_id "
        "WHERE upper(x.during) < %s AND a.released_at IS NOT NULL "
        "ORDER BY upper(x.during) LIMIT %s FOR UPDATE OF x SKIP LOCKED"
    )


# In this order: an allocation moves once its bookings and claims have (they end by its end), a
# reservation once its allocations have.
_TABLES = {
    "capacity_devicebooking": _Table(
        "capacity_devicebookinghistory",
        "id, device_id, allocation_id, during, layer, gpu_model, gpu_sevenths",
        _ends_before_cut("capacity_devicebooking"),
        "upper(during)",
    ),
    "capacity_scalarclaim": _Table(
        "capacity_scalarclaimhistory",
        "id, allocation_id, node_id, resource, amount, during",
        _ends_before_cut("capacity_scalarclaim"),
        "upper(during)",
    ),
    # Released, over before the cut, and nothing of it live.
    "capacity_allocation": _Table(
        "capacity_allocationhistory",
        "id, reservation_id, instance_id, node_id, starts_at, ends_at, resources, released_at, created_at",
        """
SELECT a.id, least(a.released_at, a.ends_at) FROM capacity_allocation a
 WHERE a.released_at IS NOT NULL AND least(a.released_at, a.ends_at) < %s
   AND NOT EXISTS (SELECT 1 FROM capacity_devicebooking b WHERE b.allocation_id = a.id)
   AND NOT EXISTS (SELECT 1 FROM capacity_scalarclaim c WHERE c.allocation_id = a.id)
 ORDER BY a.id LIMIT %s FOR UPDATE OF a SKIP LOCKED""",
        "least(released_at, ends_at)",
    ),
    # Released or preempted, its window over before the cut (what the calendar feed reads back
    # to), no allocation of it live. Its quota charges, long over, go with it (the quota loads
    # follow by trigger); its events stay where they are.
    "capacity_reservation": _Table(
        "capacity_reservationhistory",
        "id, request, status, conditions, idempotency_key, priority, binding, starts_at, ends_at,"
        " created_at, updated_at, released_at, pool_id, tenant_id",
        """
SELECT r.id, r.ends_at FROM capacity_reservation r
 WHERE r.status IN ('released', 'preempted') AND r.ends_at < %s
   AND NOT EXISTS (SELECT 1 FROM capacity_allocation a WHERE a.reservation_id = r.id)
 ORDER BY r.id LIMIT %s FOR UPDATE OF r SKIP LOCKED""",
        "ends_at",
        before="DELETE FROM capacity_quotacharge WHERE reservation_id = ANY(%s)",
    ),
}


@dataclass(frozen=True)
class Moved:
    """What one call moved: rows per live table."""

    bookings: int
    claims: int
    allocations: int = 0
    reservations: int = 0


def _month(at: dt.datetime) -> dt.datetime:
    return at.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def _partition(cur, table: str, month: dt.datetime) -> None:
    """Make the month's partition of `table` unless it exists."""
    following = _month(month + dt.timedelta(days=32))
    name = f"{table}_{month:%Y_%m}"
    cur.execute(
        f"CREATE TABLE IF NOT EXISTS {name} PARTITION OF {table} "
        f"FOR VALUES FROM ('{month.isoformat()}') TO ('{following.isoformat()}')"
    )


def _move_batch(live: str, cut: dt.datetime, batch: int) -> int:
    table = _TABLES[live]
    with transaction.atomic(), connection.cursor() as cur:
        cur.execute(table.due, [cut, batch])
        rows = cur.fetchall()
        if not rows:
            return 0
        for month in sorted({_month(at.astimezone(dt.UTC)) for _, at in rows}):
            _partition(cur, table.history, month)
        ids = [pk for pk, _ in rows]
        if table.before:
            cur.execute(table.before, [ids])
        cur.execute(
            f"WITH moved AS (DELETE FROM {live} WHERE id = ANY(%s) RETURNING {table.columns}) "
            f"INSERT INTO {table.history} ({table.columns}, ended) SELECT {table.columns}, {table.ended} FROM moved",
            [ids],
        )
        return cur.rowcount


def move_history(
    now: dt.datetime, *, after: dt.timedelta | None = None, batch: int = BATCH, max_batches: int = MAX_BATCHES
) -> Moved:
    """Move what ended `after` (HISTORY_AFTER) before `now`: bookings, claims, allocations, reservations."""
    cut = now - (settings.HISTORY_AFTER if after is None else after)
    with connection.cursor() as cur:
        cur.execute("SELECT pg_try_advisory_lock(%s)", [_LOCK])
        if not cur.fetchone()[0]:
            return Moved(0, 0, 0, 0)
    try:
        counts = {}
        for live in _TABLES:
            total = 0
            for _ in range(max_batches):
                moved = _move_batch(live, cut, batch)
                total += moved
                if moved < batch:
                    break
            counts[live] = total
    finally:
        with connection.cursor() as cur:
            cur.execute("SELECT pg_advisory_unlock(%s)", [_LOCK])
    return Moved(*(counts[live] for live in _TABLES))


def history_sizes() -> dict[str, int]:
    """Return the rows of each live and history table (for the benchmark and the operator)."""
    out = {}
    with connection.cursor() as cur:
        for live, spec in _TABLES.items():
            for table in (live, spec.history):
                cur.execute(f"SELECT count(*) FROM {table}")
                out[table] = cur.fetchone()[0]
    return out
