"""Gauges read from the database at scrape time: they are state, not events.

Pending reservations by pool and reason group, the oldest queued reservation's age, reservations
waiting for a repair, idle ones, GPUs in use without a booking, and each pool's capacity now (the same figures as the pools page,
capacity.rollups.capacity_by_pool). Every process answers the same, whichever placer moved what.
"""

from __future__ import annotations

from django.db import connection
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily

from capacity.port import (
    ARCHIVED_REASON,
    BUCKETS,
    EMPTY_POOL_REASON,
    QUEUED_CONDITION,
    QUOTA_EXCEEDED_REASON,
    capacity_by_pool,
)

from .events import GAVE_UP_PREFIX

# A pending reservation's reason group: from its condition, a fixed set of values (the messages
# themselves carry counts and node names, too many series). First match wins.
REASON_GROUPS: tuple[tuple[str, str], ...] = (
    ("queued", f"""r.conditions @> '[{{"type": "{QUEUED_CONDITION}"}}]'::jsonb"""),
    ("quota_exceeded", f"""r.conditions @> '[{{"reason": "{QUOTA_EXCEEDED_REASON}"}}]'::jsonb"""),
    ("no_fit", "m.message LIKE 'no node fits%%'"),
    ("gang_no_fit", "m.message LIKE 'no gang of %%'"),
    ("lost_races", f"m.message LIKE '{GAVE_UP_PREFIX}%%'"),
    ("pool_archived", f"m.message = '{ARCHIVED_REASON}'"),
    ("pool_empty", f"m.message = '{EMPTY_POOL_REASON}'"),
)
OTHER = "other"
_IDLE_SQL = """
SELECT p.slug, count(*) FROM capacity_reservation r JOIN inventory_pool p ON p.id = r.pool_id
 WHERE r.status = 'placed' AND r.conditions @> '[{"type": "Idle"}]'::jsonb GROUP BY p.slug
"""
# Live bookings their owners keep when idle: what the pool's idle release will not take.
_KEPT_IDLE_SQL = """
SELECT p.slug, count(*) FROM capacity_reservation r JOIN inventory_pool p ON p.id = r.pool_id
 WHERE r.status = 'placed' AND r.keep_when_idle AND r.conditions @> '[{"type": "Idle"}]'::jsonb GROUP BY p.slug
"""
_UNBOOKED_SQL = """
SELECT p.slug, count(*) FROM capacity_unbookeduse u
  JOIN inventory_node n ON n.id = u.node_id JOIN inventory_pool p ON p.id = n.pool_id GROUP BY p.slug
"""
REASONS = (*(name for name, _ in REASON_GROUPS), OTHER)

_PENDING_SQL = f"""
SELECT p.slug, g.reason, count(r.id), min(r.created_at) FILTER (WHERE g.reason = 'queued')
  FROM capacity_reservation r
  JOIN inventory_pool p ON p.id = r.pool_id
  CROSS JOIN LATERAL (SELECT (SELECT c ->> 'message' FROM jsonb_array_elements(r.conditions) c
                               WHERE c ->> 'type' = 'Unschedulable' LIMIT 1) AS message) m
  CROSS JOIN LATERAL (SELECT CASE {" ".join(f"WHEN {sql} THEN '{name}'" for name, sql in REASON_GROUPS)}
                             ELSE '{OTHER}' END AS reason) g
 WHERE r.status = 'pending'
 GROUP BY p.slug, g.reason
"""

_REPAIR_PENDING_SQL = """
SELECT p.slug, count(r.id)
  FROM capacity_reservation r JOIN inventory_pool p ON p.id = r.pool_id
 WHERE r.status = 'placed' AND r.conditions @> '[{"type": "RepairPending"}]'::jsonb
 GROUP BY p.slug
"""

# A class's atoms now: free and booked, and those in a bucket that puts them out of use (an atom
# booked on a node in maintenance counts as booked and as maintenance, as on the pools page).
STATES = ("free", "booked", *BUCKETS)


class DatabaseCollector:
    """Read the gauges from the database when scraped (one query each, none on the placement path)."""

    def collect(self):
        now = timezone.now()
        pools = dict(_rows("SELECT id, slug FROM inventory_pool ORDER BY slug"))
        pending = GaugeMetricFamily(
            "berth_pending_reservations",
            f"Pending reservations now, by pool and reason group ({', '.join(REASONS)}).",
            labels=["pool", "reason"],
        )
        oldest = GaugeMetricFamily(
            "berth_queued_oldest_seconds",
            "Age of the oldest reservation queued for the pool-lease placer (0 when none): "
            "growing means no placer is serving the pool.",
            labels=["pool"],
        )
        counts: dict[tuple[str, str], int] = {}
        first: dict[str, float] = {}
        for slug, reason, count, queued_since in _rows(_PENDING_SQL):
            counts[(slug, reason)] = count
            if queued_since is not None:
                first[slug] = max(0.0, (now - queued_since).total_seconds())
        for slug in pools.values():
            for reason in REASONS:
                pending.add_metric([slug, reason], counts.get((slug, reason), 0))
            oldest.add_metric([slug], first.get(slug, 0.0))
        yield pending
        yield oldest

        # Counts per pool: every pool gets a sample, 0 when it has none.
        for name, doc, sql in (
            (
                "berth_repair_pending_reservations",
                "Placed reservations holding an unusable atom that BookingRepair found no room to move yet.",
                _REPAIR_PENDING_SQL,
            ),
            (
                "berth_idle_reservations",
                "Running reservations whose GPUs averaged under IDLE_GPU_PERCENT for their pool's idleWarnAfter"
                " (condition Idle).",
                _IDLE_SQL,
            ),
            (
                "berth_idle_kept_reservations",
                "Running reservations marked Idle that their owners keep when idle (keepWhenIdle): never released"
                " for it.",
                _KEPT_IDLE_SQL,
            ),
            (
                "berth_unbooked_use_devices",
                "GPUs whose latest sample shows processes that no reservation holds.",
                _UNBOOKED_SQL,
            ),
        ):
            found = dict(_rows(sql))
            gauge = GaugeMetricFamily(name, doc, labels=["pool"])
            for slug in pools.values():
                gauge.add_metric([slug], found.get(slug, 0))
            yield gauge

        atoms = GaugeMetricFamily(
            "berth_capacity_atoms",
            "Atoms (whole GPUs, MIG slices) of a pool's device class now, by state: free, booked, or "
            f"in a bucket that keeps them out of use ({', '.join(BUCKETS)}).",
            labels=["pool", "device_class", "state"],
        )
        total = GaugeMetricFamily(
            "berth_capacity_total_atoms", "Atoms of a pool's device class.", labels=["pool", "device_class"]
        )
        later = GaugeMetricFamily(
            "berth_capacity_booked_later_atoms",
            "Atoms free now but booked later.",
            labels=["pool", "device_class"],
        )
        for pk, classes in capacity_by_pool(list(pools), now).items():
            for c in classes:
                key = [pools[pk], c["class"]]
                total.add_metric(key, c["total"])
                later.add_metric(key, c["bookedLater"])
                for state in STATES:
                    atoms.add_metric([*key, state], c["allocated" if state == "booked" else state])
        yield atoms
        yield total
        yield later


def _rows(sql: str) -> list[tuple]:
    with connection.cursor() as cur:
        cur.execute(sql)
        return cur.fetchall()
