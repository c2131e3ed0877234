"""Quota: the most a tenant holds at any one instant, per device class and per scalar.

A reservation is charged before placement with one `QuotaCharge` row per resource over its window.
A charge is admitted when, at every instant of its window, the tenant's charges then plus the
request stay within each limit. Limits come from the tenant's `Quota` row for the resource, else
its default row (`resource = "*"`); a resource with neither is refused, never unlimited.

Charging takes the tenant's quota lock first (a transaction-scoped advisory lock: the spec's
`quota_usage` step, before pools and nodes) and then checks and inserts in one guarded statement
that inserts nothing when any limit would be passed: a refused charge changes nothing. The
guarded statement runs after the lock is granted, so its snapshot sees every charge committed by
the transaction it waited for. Refunds end the reservation's charges (running ones are cut short,
future ones go) and need no lock: they only lower what a later check sees.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from django.db import connection

from capacity.db.channels import QUOTA_LOCK_CLASS
from capacity.db.cursors import prepared_cursor
from capacity.db.literals import window_range
from capacity.models.quota import DEFAULT_RESOURCE
from capacity.placement import CapacityError, PlacementRequest, Window
from capacity.placement.errors import QUOTA_EXCEEDED

from .sql import peak_sql

QUOTA_EXCEEDED_REASON = "QuotaExceeded"


def demand(request: PlacementRequest) -> dict[str, int]:
    """Return what a request holds per quota resource: atoms per device class, then scalars."""
    members = request.gang.size if request.gang else 1
    amounts: dict[str, int] = {}
    for device in request.devices:
        amounts[device.device_class] = amounts.get(device.device_class, 0) + device.count * members
    for resource, amount in request.resources.items():
        amounts[resource] = amounts.get(resource, 0) + amount * members
    return {k: v for k, v in amounts.items() if v}


LOCK_SQL = "SELECT pg_advisory_xact_lock(%(class)s::int, %(tenant)s::int)"

# Per requested resource: its limit (own row, else the default row) and the most the tenant's
# charges hold at any instant of the window (a running sum over start and end events, ends first
# at equal instants, as capacity.placement.timeline.peak computes it).
PEAKS_SQL = f"""
SELECT d.r, d.n,
       coalesce((SELECT q."limit" FROM capacity_quota q WHERE q.tenant_id = %(tenant)s::bigint AND q.resource = d.r),
                (SELECT q."limit" FROM capacity_quota q
                  WHERE q.tenant_id = %(tenant)s::bigint AND q.resource = '{DEFAULT_RESOURCE}')) AS lim,
       {peak_sql("capacity_quotacharge", "tenant_id", "%(tenant)s::bigint", "d.r", "%(during)s::tstzrange")} AS used
  FROM unnest(%(resources)s::text[], %(amounts)s::bigint[]) AS d(r, n)
"""

# Three bounds, cheapest first. The tenant's loads (models.QuotaLoad: its charges summed by the day
# they end) from the window's first day on bound what it holds at any instant of the window; a
# resource that stays within its limit under that bound is admitted without reading a charge
# (CTE `c` is read only when needed). Else the tenant's charges in the window are read once: their
# plain sum bounds the peak too, and only a resource that sum would take past its limit is swept
# for the exact peak (which the refusal names). `used` is whichever bound or peak decided.
_LIMIT = f"""coalesce(
    (SELECT q."limit" FROM capacity_quota q WHERE q.tenant_id = %(tenant)s::bigint AND q.resource = d.r),
    (SELECT q."limit" FROM capacity_quota q WHERE q.tenant_id = %(tenant)s::bigint AND q.resource = '{DEFAULT_RESOURCE}'))"""
# `l`: per requested resource its limit and the most held in the window; `ok`: whether all fit.
CHECK_CTES = f"""
c AS MATERIALIZED (
  SELECT x.resource, lower(x.during) AS lo, upper(x.during) AS hi, x.amount FROM capacity_quotacharge x
   WHERE int8range(x.tenant_id, x.tenant_id, '[]') && int8range(%(tenant)s::bigint, %(tenant)s::bigint, '[]')
     AND x.during && %(during)s::tstzrange AND x.resource = ANY(%(resources)s::text[])
), f AS MATERIALIZED (
  SELECT d.r, d.n, {_LIMIT} AS lim,
         coalesce((SELECT sum(q.amount) FROM capacity_quotaload q
                    WHERE q.tenant_id = %(tenant)s::bigint AND q.resource = d.r
                      AND q.end_day >= floor(date_part('epoch', lower(%(during)s::tstzrange)) / 86400)::int), 0)
           AS ceiling
    FROM unnest(%(resources)s::text[], %(amounts)s::bigint[]) AS d(r, n)
), b AS MATERIALIZED (
  SELECT f.r, f.n, f.lim,
         CASE WHEN f.lim IS NOT NULL AND f.ceiling + f.n <= f.lim THEN f.ceiling
              ELSE coalesce((SELECT sum(c.amount) FROM c WHERE c.resource = f.r), 0) END AS bound
    FROM f
), l AS MATERIALIZED (
  SELECT b.r, b.n, b.lim,
         CASE WHEN b.lim IS NULL OR b.bound + b.n <= b.lim THEN b.bound
              ELSE coalesce((SELECT max(e.running) FROM (
                     SELECT sum(v.delta) OVER (ORDER BY v.at, v.delta) AS running FROM (
                       SELECT greatest(c.lo, lower(%(during)s::tstzrange)) AS at, c.amount AS delta
                         FROM c WHERE c.resource = b.r
                       UNION ALL
                       SELECT c.hi, -c.amount FROM c
                        WHERE c.resource = b.r AND c.hi < upper(%(during)s::tstzrange)) AS v) AS e), 0)
         END AS used
    FROM b
), ok AS (SELECT NOT EXISTS (SELECT 1 FROM l WHERE l.lim IS NULL OR l.used + l.n > l.lim) AS ok)"""

CHARGE_SQL = f"""
WITH {CHECK_CTES},
ins AS (
  INSERT INTO capacity_quotacharge (tenant_id, reservation_id, resource, amount, during)
  SELECT %(tenant)s::bigint, %(reservation)s::bigint, l.r, l.n, %(during)s::tstzrange
    FROM l WHERE (SELECT ok FROM ok)
  RETURNING 1
)
SELECT l.r, l.n, l.used, l.lim, (SELECT count(*) FROM ins) FROM l ORDER BY l.r
"""


def charge(
    tenant_pk: int, tenant_slug: str, reservation_pk: int, amounts: Mapping[str, int], window: Window
) -> None:
    """Charge a reservation's `amounts` over `window` under the tenant's quota lock, or refuse.

    Refused (QUOTA_EXCEEDED, naming the first resource past its limit) when at some instant of the
    window the tenant would hold more than a limit; then nothing is written.
    """
    if not amounts:
        return
    names = sorted(amounts)
    params = {
        "class": QUOTA_LOCK_CLASS,
        "tenant": tenant_pk,
        "reservation": reservation_pk,
        "resources": names,
        "amounts": [amounts[r] for r in names],
        "during": window_range(window),
    }
    # Two statements in one round trip: the check's snapshot is taken once the lock is held.
    with connection.connection.pipeline():
        lock, cur = prepared_cursor(), prepared_cursor()
        lock.execute(LOCK_SQL, params)
        cur.execute(CHARGE_SQL, params)
        rows = cur.fetchall()
        lock.close()
        cur.close()
    check(tenant_slug, rows)


def check(tenant_slug: str, rows: Iterable[tuple[str, int, int, int | None, int]]) -> None:
    """Refuse, naming the first resource past its limit, when a charge's rows say it was refused.

    Each row is (resource, requested, peak used in the window, limit or None, rows inserted).
    """
    rows = sorted(rows)
    if not rows or rows[0][4]:
        return
    for resource, requested, used, limit, _inserted in rows:
        if limit is None:
            raise CapacityError(
                QUOTA_EXCEEDED,
                f"no quota set for {tenant_slug}: {resource} has no limit and there is no default"
                f" ('{DEFAULT_RESOURCE}'); an operator sets one on the team's page, Teams → {tenant_slug}",
            )
        if used + requested > limit:
            raise CapacityError(
                QUOTA_EXCEEDED,
                f"quota exceeded for {tenant_slug}: {resource} {used} used + {requested} requested"
                f" > limit {limit}",
            )


def refund(reservation_pks: Iterable[int], now: datetime | None = None) -> None:
    """End the charges of these reservations: all of them, or with `now` what lies after it.

    Running charges are cut short at `now`; charges that start at or after it go.
    """
    pks = sorted(set(reservation_pks))
    if not pks:
        return
    with connection.cursor() as cur:
        if now is None:
            cur.execute("DELETE FROM capacity_quotacharge WHERE reservation_id = ANY(%s)", [pks])
            return
        cur.execute(
            "DELETE FROM capacity_quotacharge WHERE reservation_id = ANY(%s) AND lower(during) >= %s",
            [pks, now],
        )
        cur.execute(
            """UPDATE capacity_quotacharge SET during = tstzrange(lower(during), %s, '[)')
                WHERE reservation_id = ANY(%s) AND upper(during) > %s""",
            [now, pks, now],
        )


@dataclass(frozen=True)
class Use:
    """One resource of a tenant over a window: its limit, the peak held, and what is held now."""

    resource: str
    limit: int | None
    peak: int
    now: int
    default: bool  # the limit is the tenant's default row


def report(tenant_pk: int, window: Window, now: datetime) -> list[Use]:
    """Return the tenant's peak use against each limit over `window`, resources in name order.

    Lists every resource with a limit or a charge in the window; `now` is what is held at that time.
    The default row, when there is one, comes last as resource "*".
    """
    during = window_range(window)
    with connection.cursor() as cur:
        cur.execute('SELECT resource, "limit" FROM capacity_quota WHERE tenant_id = %s', [tenant_pk])
        limits = dict(cur.fetchall())
        cur.execute(
            "SELECT DISTINCT resource FROM capacity_quotacharge WHERE tenant_id = %s AND during && %s",
            [tenant_pk, during],
        )
        names = sorted(({r for (r,) in cur.fetchall()} | set(limits)) - {DEFAULT_RESOURCE})
        cur.execute(
            PEAKS_SQL,
            {"tenant": tenant_pk, "resources": names, "amounts": [0] * len(names), "during": during},
        )
        peaks = {r: used for r, _n, _lim, used in cur.fetchall()}
        cur.execute(
            """SELECT resource, sum(amount) FROM capacity_quotacharge
                WHERE tenant_id = %s AND during @> %s::timestamptz GROUP BY resource""",
            [tenant_pk, now],
        )
        held_now = dict(cur.fetchall())
    default = limits.get(DEFAULT_RESOURCE)
    uses = [
        Use(r, limits.get(r, default), int(peaks[r]), int(held_now.get(r, 0)), r not in limits) for r in names
    ]
    if default is not None:
        uses.append(Use(DEFAULT_RESOURCE, default, 0, 0, True))
    return uses


def limits(tenant_pk: int, resources: Iterable[str]) -> dict[str, int | None]:
    """Return each resource's limit for the tenant (its own row, else the default row, else None)."""
    with connection.cursor() as cur:
        cur.execute('SELECT resource, "limit" FROM capacity_quota WHERE tenant_id = %s', [tenant_pk])
        rows = dict(cur.fetchall())
    return {r: rows.get(r, rows.get(DEFAULT_RESOURCE)) for r in resources}
