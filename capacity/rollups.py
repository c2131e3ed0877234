"""Pool capacity rollups: recomputed from the live rows, or audited against them.

`allocated` counts bookings of unreleased allocations; the buckets count atoms on nodes that the
eligibility table puts in that bucket (the first matching row wins), and atoms that are unhealthy
or unbookable on otherwise usable nodes count as `unhealthy`.
"""

from django.db import connection

from .models import PoolCapacityRollup

BUCKETS = ("excluded", "maintenance", "provisioning", "unreachable", "unhealthy")
COUNTERS = ("total", "allocated", *BUCKETS)

# Mirrors capacity.placement's eligibility table, row for row, for whole pools at once.
_BUCKET_SQL = """
CASE
  WHEN n.role <> 'host' OR n.trust = 'tenant-controlled'
       OR (n.owner_tenant_id IS NOT NULL AND p.owner_tenant_id IS DISTINCT FROM n.owner_tenant_id)
    THEN 'excluded'
  WHEN n.maintenance OR n.cordoned THEN 'maintenance'
  WHEN n.provision_state <> 'active' OR NOT n.converged THEN 'provisioning'
  WHEN n.connectivity <> 'connected' THEN 'unreachable'
  WHEN cardinality(n.no_schedule_reasons) > 1
       OR (cardinality(n.no_schedule_reasons) = 1 AND n.no_schedule_reasons[1] NOT LIKE 'dedicated=%%')
    THEN 'unhealthy'
  WHEN NOT d.healthy OR NOT d.bookable THEN 'unhealthy'
  ELSE NULL
END
"""

_COMPUTE_SQL = f"""
SELECT n.pool_id, d.device_class, count(*) AS total,
       coalesce(sum(b.booked), 0)::int AS allocated,
       {", ".join(f"count(*) FILTER (WHERE bucket = '{b}') AS {b}" for b in BUCKETS)}
  FROM inventory_device d
  JOIN inventory_node n ON n.id = d.node_id
  JOIN inventory_pool p ON p.id = n.pool_id
  CROSS JOIN LATERAL (SELECT {_BUCKET_SQL} AS bucket) k
  LEFT JOIN LATERAL (
        SELECT count(*) AS booked FROM capacity_devicebooking db
          JOIN capacity_allocation a ON a.id = db.allocation_id
         WHERE db.device_id = d.id AND a.released_at IS NULL
  ) b ON true
 WHERE n.pool_id = ANY(%s)
 GROUP BY n.pool_id, d.device_class
"""


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
