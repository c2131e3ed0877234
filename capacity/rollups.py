"""Pool capacity: the inventory rollups, and what is booked read from the bookings at a time.

The rollups hold inventory only: `total` atoms per class (a GPU split into MIG slices is not an
atom, its slices are) and the buckets, atoms on nodes that the eligibility table puts in that
bucket (the first matching row wins); atoms that are unhealthy or unbookable on otherwise usable
nodes count as `unhealthy`. What is booked is never kept by deltas: `booked_counts` reads it from
the bookings for a given instant, so an ended booking stops counting at its end without any
process running.
"""

import hashlib
import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.core.cache import cache
from django.db import DatabaseError, connection

from .models import PoolCapacityRollup

log = logging.getLogger("berth.cache")

BUCKETS = ("excluded", "maintenance", "cordoned", "provisioning", "unreachable", "unhealthy")
COUNTERS = ("total", *BUCKETS)

# Mirrors capacity.placement's eligibility table, row for row, for whole pools at once.
_BUCKET_SQL = """
CASE
  WHEN n.role <> 'host' OR n.trust = 'tenant-controlled'
       OR (n.owner_tenant_id IS NOT NULL AND p.owner_tenant_id IS DISTINCT FROM n.owner_tenant_id)
    THEN 'excluded'
  WHEN n.maintenance THEN 'maintenance'
  WHEN n.cordoned THEN 'cordoned'
  WHEN n.provision_state <> 'active' OR NOT n.converged THEN 'provisioning'
  WHEN n.connectivity <> 'connected' THEN 'unreachable'
  WHEN cardinality(n.no_schedule_reasons) > 1
       OR (cardinality(n.no_schedule_reasons) = 1 AND n.no_schedule_reasons[1] NOT LIKE 'dedicated=%%')
    THEN 'unhealthy'
  WHEN NOT d.healthy OR NOT d.bookable THEN 'unhealthy'
  ELSE NULL
END
"""

# A device is an atom unless it was split into MIG slices. Not NOT EXISTS: with some table
# statistics the embedded PostgreSQL 16.2 planned NOT EXISTS here as a Merge Right Anti Join over
# the parent_id index that kept 524 of the demo's 594 atoms (EXPLAIN ANALYZE; test_seed_demo failed
# now and then). NOT IN is never planned as a join: the split GPUs' ids are read once into a hash.
# (A count per device, as before, probed the index 80,000 times and, estimated at one row in 200,
# made the planner join every device to every pool: 280 ms for the pools list at 10,000 nodes,
# bench_scale; 125 ms this way, the same counts.)
#
# A device a node reported and no operator accepted yet (`verified` false) counts nowhere: neither
# as an atom nor as splitting its parent.
_ATOM = (
    "d.verified AND d.id NOT IN "
    "(SELECT c.parent_id FROM inventory_device c WHERE c.parent_id IS NOT NULL AND c.verified)"
)

_COMPUTE_SQL = f"""
SELECT n.pool_id, d.device_class, count(*) AS total,
       {", ".join(f"count(*) FILTER (WHERE bucket = '{b}') AS {b}" for b in BUCKETS)}
  FROM inventory_device d
  JOIN inventory_node n ON n.id = d.node_id
  JOIN inventory_pool p ON p.id = n.pool_id
  CROSS JOIN LATERAL (SELECT {_BUCKET_SQL} AS bucket) k
 WHERE n.pool_id = ANY(%s) AND {_ATOM}
 GROUP BY n.pool_id, d.device_class
"""


# Per pool and class: atoms booked at the instant, free then but booked later, and free (in no
# bucket, not booked) then. A booked split GPU books its slices too, so counting atoms' own bookings
# counts silicon once. Only bookings not over by the instant matter, and only their devices are
# joined to their nodes: free is the rollup's atoms in no bucket less those booked now, in the same
# statement (one snapshot). Probing each device's bookings read its whole history (2.0 s for
# 80,000 GPUs with a million ended bookings, bench_scale); joining every device to the bookings
# 120 ms; joining only the booked ones 91 ms.
_LIVE_SQL = f"""
WITH live AS (
  SELECT b.device_id, bool_or(lower(b.during) <= %(now)s::timestamptz) AS now_booked,
         bool_or(lower(b.during) > %(now)s::timestamptz) AS later_booked
    FROM capacity_devicebooking b
   WHERE upper(b.during) > %(now)s::timestamptz
   GROUP BY b.device_id
), booked AS (
  SELECT n.pool_id, d.device_class,
         count(*) FILTER (WHERE l.now_booked) AS now_booked,
         count(*) FILTER (WHERE NOT l.now_booked AND l.later_booked) AS later_booked,
         count(*) FILTER (WHERE l.now_booked AND k.bucket IS NULL) AS usable_booked
    FROM live l
    JOIN inventory_device d ON d.id = l.device_id
    JOIN inventory_node n ON n.id = d.node_id
    JOIN inventory_pool p ON p.id = n.pool_id
    CROSS JOIN LATERAL (SELECT {_BUCKET_SQL} AS bucket) k
   WHERE n.pool_id = ANY(%(pools)s) AND {_ATOM}
   GROUP BY n.pool_id, d.device_class
)
SELECT r.pool_id, r.device_class, coalesce(b.now_booked, 0), coalesce(b.later_booked, 0),
       r.total - {" - ".join(f"r.{b}" for b in BUCKETS)} - coalesce(b.usable_booked, 0)
  FROM capacity_poolcapacityrollup r
  LEFT JOIN booked b ON (b.pool_id, b.device_class) = (r.pool_id, r.device_class)
 WHERE r.pool_id = ANY(%(pools)s)
"""


# What the live counts of these pools were read from (their inventory generations and booking
# versions), and the first booking start or end after now (two index probes), when time alone
# changes them.
_KEPT_SQL = """
SELECT (SELECT string_agg(p.id || '@' || coalesce(g.generation, 0) || '.' || coalesce(v.version, 0), ',' ORDER BY p.id)
          FROM inventory_pool p
          LEFT JOIN inventory_poolgeneration g ON g.pool_id = p.id
          LEFT JOIN capacity_poolbookingversion v ON v.pool_id = p.id
         WHERE p.id = ANY(%(pools)s)),
       least((SELECT min(lower(during)) FROM capacity_devicebooking WHERE lower(during) > %(now)s::timestamptz),
             (SELECT min(upper(during)) FROM capacity_devicebooking WHERE upper(during) > %(now)s::timestamptz))
"""


def _live(pool_ids: list[int], now: datetime) -> dict[tuple[int, str], tuple[int, int, int]]:
    with connection.cursor() as cur:
        cur.execute(_LIVE_SQL, {"pools": pool_ids, "now": now})
        return {(p, c): (booked, later, free) for p, c, booked, later, free in cur.fetchall()}


def live_counts(pool_ids: list[int], now: datetime) -> dict[tuple[int, str], tuple[int, int, int]]:
    """Return (pool, class) -> atoms booked at `now`, booked later only, free, kept in Django's cache.

    Reading them is the costliest statement of the pools list and the API's pools (91 ms at 10,000
    nodes and 50,000 live bookings): they are kept per the pools' versions (a booking or inventory
    write changes the key at its commit) and only from the `now` they were read at until the
    next booking start or end anywhere, so an answer kept equals one read again.
    """
    pool_ids = sorted(set(pool_ids))
    if not settings.PAGE_CACHE_SECONDS or not pool_ids:
        return _live(pool_ids, now)
    with connection.cursor() as cur:
        cur.execute(_KEPT_SQL, {"pools": pool_ids, "now": now})
        versions, changes_at = cur.fetchone()
    key = "live-counts:" + hashlib.sha256(f"{versions}".encode()).hexdigest()
    kept = cache.get(key)
    if kept is not None and kept[0] <= now < kept[1]:
        return kept[2]
    live = _live(pool_ids, now)
    seconds = settings.PAGE_CACHE_SECONDS
    if changes_at is not None:
        seconds = min(seconds, (changes_at - now).total_seconds())
    if seconds > 0:
        until = min(changes_at or now + timedelta(seconds=seconds), now + timedelta(seconds=seconds))
        try:
            cache.set_many(
                {key: (now, until, live)}, timeout=int(seconds) + 1
            )  # one statement (config/cache.py)
        except DatabaseError:  # the database cache on a replica's connection: read, not kept
            log.warning("live counts not kept", exc_info=True)
    return live


def capacity_by_pool(pool_ids: list[int], now, *, kept: bool = False) -> dict[int, list[dict]]:
    """Return pool pk -> its device classes in name order, each as counts at `now`.

    Each holds `class`, `total`, `allocated` (atoms booked at `now`), `bookedLater` (free at `now`,
    booked later), `free` (booked by nobody at `now` and in no bucket) and the buckets.
    `kept`: the counts may come from the cache (`live_counts`); only for `now` the present, as a
    booking that ended before its deleting transaction began moves no version.
    """
    live = live_counts(list(pool_ids), now) if kept else _live(sorted(set(pool_ids)), now)
    result: dict[int, list[dict]] = {pk: [] for pk in pool_ids}
    for (pool_id, device_class), counts in sorted(stored_rollups(pool_ids).items()):
        booked, later, free = live.get((pool_id, device_class), (0, 0, 0))
        result[pool_id].append(
            {
                "class": device_class,
                "total": counts["total"],
                "allocated": booked,
                "bookedLater": later,
                "free": free,
                **{b: counts[b] for b in BUCKETS},
            }
        )
    return result


def compute_rollups(pool_ids: list[int]) -> dict[tuple[int, str], dict[str, int]]:
    """Return what the rollups of these pools should hold, from devices, nodes and bookings."""
    with connection.cursor() as cur:
        cur.execute(_COMPUTE_SQL, [list(pool_ids)])
        return {(row[0], row[1]): dict(zip(COUNTERS, row[2:], strict=True)) for row in cur.fetchall()}


def stored_rollups(pool_ids: list[int]) -> dict[tuple[int, str], dict[str, int]]:
    """Return the rollup rows as stored."""
    rows = PoolCapacityRollup.objects.filter(pool_id__in=pool_ids).values(
        "pool_id", "device_class", *COUNTERS
    )
    return {(r.pop("pool_id"), r.pop("device_class")): r for r in rows}


def refresh_rollups(pool_ids: list[int]) -> None:
    """Rewrite the rollups of these pools from the live rows (the rollup table is locked last)."""
    computed = compute_rollups(pool_ids)
    stored = stored_rollups(pool_ids)
    for key, counts in computed.items():
        if stored.get(key) != counts:
            PoolCapacityRollup.objects.update_or_create(pool_id=key[0], device_class=key[1], defaults=counts)
    gone = [key for key in stored if key not in computed]
    for pool_id, device_class in gone:
        PoolCapacityRollup.objects.filter(pool_id=pool_id, device_class=device_class).delete()


def claimed_at(node_ids: list[int], now) -> dict[tuple[int, str], int]:
    """Return (node pk, resource) -> the scalar amount claimed at `now`."""
    with connection.cursor() as cur:
        cur.execute(
            """SELECT node_id, resource, sum(amount) FROM capacity_scalarclaim
                WHERE node_id = ANY(%s) AND during @> %s::timestamptz GROUP BY node_id, resource""",
            [list(node_ids), now],
        )
        return {(n, r): int(v) for n, r, v in cur.fetchall()}
