"""SQL forms of the schedulability check; `capacity.placement.eligibility` is the Python form.

tests/db/test_schedulable_sql.py keeps the two in agreement on random node states.
Every fragment expects the node as `n` and its pool as `p`.
"""

# Eligible ignoring NoSchedule reasons: the table's rows from `role` to `connectivity`. Every part
# is true or false, never NULL (a node of a tenant in a pool of none is plainly not eligible).
_ELIGIBLE = """
    n.role = 'host'
AND n.trust <> 'tenant-controlled'
AND (n.owner_tenant_id IS NULL OR n.owner_tenant_id IS NOT DISTINCT FROM p.owner_tenant_id)
AND NOT n.maintenance AND NOT n.cordoned
AND n.provision_state = 'active' AND n.converged
AND n.connectivity = 'connected'
"""


def schedulable_tolerating(tenant: str) -> str:
    """Return the check that `n` is schedulable for the tenant whose slug is the SQL `tenant`.

    The tenant's own dedication is tolerated.
    """
    return _ELIGIBLE + f"AND cardinality(array_remove(n.no_schedule_reasons, 'dedicated=' || {tenant})) = 0"


# Schedulable for the tenant whose slug is bound as %(tenant)s.
SCHEDULABLE_TOLERATING = schedulable_tolerating("%(tenant)s::text")

# Schedulable for some tenant: no reason, or one dedication alone (wakes that tenant's pending work).
MAY_BE_SCHEDULABLE = (
    _ELIGIBLE + "AND (cardinality(n.no_schedule_reasons) = 0"
    " OR (cardinality(n.no_schedule_reasons) = 1 AND n.no_schedule_reasons[1] LIKE 'dedicated=%%'))"
)


def key_in(column: str, low: str, high: str) -> str:
    """Return the check `low <= column <= high` that the GiST indexes on (int8range(key), during) answer.

    With `during &&`, the index reads only the rows of these keys in the window: a pool's rows when
    the keys are its devices' or nodes' range. A BETWEEN left the index to the window alone, so it
    read every pool's rows in the window and dropped the others' one by one.
    """
    return f"int8range({column}, {column}, '[]') && int8range({low}, {high}, '[]')"


# Scalar room with the epsilon the Python scalar_capacity() uses: 100 × 0.29 is 29, not 28.
SCALAR_CAPACITY = "floor(r.allocatable * r.ratio + 1e-9)"


def _rows(key_column: str, key: str, resource: str, during: str, where: str) -> str:
    """Return the condition on `x`: rows of the key and resource overlapping `during` (by the GiST index)."""
    return f"{key_in(f'x.{key_column}', key, key)} AND x.during && {during} AND x.resource = {resource}" + (
        f" AND {where}" if where else ""
    )


def peak_sql(table: str, key_column: str, key: str, resource: str, during: str, where: str = "") -> str:
    """Return an expression: the most `table`'s rows of one key and resource hold at once in `during`.

    A running sum over start and end events, ends first at equal instants (as
    capacity.placement.timeline.peak computes it); 0 when no row overlaps. `key`, `resource` and
    `during` are SQL expressions; the key is matched through the table's GiST index on
    (int8range(key), during). `where`, when given, narrows the rows (as `x`) further.
    """
    rows = _rows(key_column, key, resource, during, where)
    return f"""coalesce((SELECT max(e.running) FROM (
        SELECT sum(v.delta) OVER (ORDER BY v.at, v.delta) AS running FROM (
          SELECT greatest(lower(x.during), lower({during})) AS at, x.amount AS delta FROM {table} x WHERE {rows}
          UNION ALL
          SELECT upper(x.during), -x.amount FROM {table} x WHERE {rows} AND upper(x.during) < upper({during})
        ) AS v) AS e), 0)"""


def sum_sql(table: str, key_column: str, key: str, resource: str, during: str) -> str:
    """Return an expression: the plain sum of `table`'s rows of one key and resource overlapping
    `during`, which bounds their peak from above."""
    return f"coalesce((SELECT sum(x.amount) FROM {table} x WHERE {_rows(key_column, key, resource, during, '')}), 0)"


def room_sql(bound: str, peak: str, amount: str, cap: str) -> str:
    """Return a check: `amount` more fits under `cap` at every instant, given the held rows' `peak`.

    `bound` is at least the peak (a plain sum): when it fits, the peak is never swept (one index
    scan instead of two, a sort and a running sum).
    """
    return f"(CASE WHEN {bound} + {amount} <= {cap} THEN true ELSE {peak} + {amount} <= {cap} END)"
