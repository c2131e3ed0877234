"""What-if benchmark (bench_simulate): a synthetic demand over a large pool, both sides, timed.

It checks that the run wrote nothing (a digest of every capacity and inventory table before and
after) and that the audit finds no drift.
"""

from __future__ import annotations

import time

from django.db import connection

from capacity.audit import audit
from devtools.bench.placements import build_pool
from inventory.models import Node
from whatif.changes import Changes
from whatif.demand import Synthetic
from whatif.simulation import Inputs, simulate


def table_digests() -> dict[str, str]:
    """Return an md5 of every capacity_ and inventory_ table's rows (tables only, not views)."""
    with connection.cursor() as cur:
        cur.execute(
            """SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')
                  AND (c.relname LIKE 'capacity%%' OR c.relname LIKE 'inventory%%') ORDER BY 1"""
        )
        tables = [row[0] for row in cur.fetchall()]
        digests = {}
        for table in tables:
            cur.execute(
                f"""SELECT md5(coalesce(string_agg(t::text, ',' ORDER BY t::text), '')) FROM "{table}" t"""
            )
            digests[table] = cur.fetchone()[0]
    return digests


def run_simulate(nodes: int, requests: int, seed: int, per_hour: float, added: int, progress=None) -> dict:
    """Run `requests` synthetic requests over pool bench-<nodes>, as it is and with `added` nodes more."""
    pool = build_pool(nodes, 4, progress=progress)
    first = Node.objects.filter(pool=pool).order_by("name").values_list("name", flat=True).first()
    before = table_digests()
    seconds: dict = {}
    clock = time.perf_counter()
    result = simulate(
        Inputs(
            pool=pool.slug,
            synthetic=Synthetic(count=requests, seed=seed, per_hour=per_hour),
            changes=Changes(add=((first, added),)) if added else Changes(weights={"binpack": 2.0}),
            seed=seed,
        ),
        seconds=seconds,
    )
    took = time.perf_counter() - clock
    after = table_digests()
    return {
        "nodes": nodes,
        "requests": requests,
        "seconds": round(took, 1),
        "where": seconds,
        "wroteNothing": before == after,
        "changedTables": sorted(t for t in before if before[t] != after.get(t)),
        "drift": len(audit()),
        "baseline": {k: v for k, v in result["baseline"].items() if k not in ("largestFreeBlock", "tenants")},
        "changed": {k: v for k, v in result["changed"].items() if k not in ("largestFreeBlock", "tenants")},
    }
