"""Scalar claims read as parallel arrays stay in step, even when each array's sort spills to disk.

    node-a: 2,400 claims of vcpu and memoryGiB, every amount and window different

Each array_agg sorts on its own on PostgreSQL 15; sorted by the node alone, claims of one node
came back in a different order in each array once a sort spilled (work_mem at its minimum), and a
claim took another's amount or window.
"""

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection, transaction

from capacity.models import Allocation, ScalarClaim
from capacity.placement import Window
from capacity.placers.index import pool_index
from capacity.placers.ledger import Ledger
from capacity.placers.loader import load_pool
from capacity.placers.reads import plan_reads

from booking import HOUR, MS

pytestmark = pytest.mark.django_db(transaction=True)

CLAIMS = 1200  # per resource


@pytest.fixture
def claimed(make_node):
    """node-a's claims as (resource, start ms, end ms, amount), all different."""
    node = make_node("node-a", gpus=2, vcpu=10**9, memory=10**9)
    base = datetime.fromtimestamp(MS / 1000, UTC)
    allocations = Allocation.objects.bulk_create(
        Allocation(instance_id=f"vm-{i}", node=node, starts_at=base, ends_at=base + timedelta(hours=20))
        for i in range(CLAIMS)
    )
    rows, expected = [], set()
    for i, allocation in enumerate(allocations):
        for resource in ("vcpu", "memoryGiB"):
            lo = base + timedelta(minutes=i % 97)
            hi = lo + timedelta(hours=1 + i % 13)
            amount = 1 + (i * 7919 + len(resource)) % 1000
            rows.append(
                ScalarClaim(
                    allocation=allocation, node=node, resource=resource, amount=amount, during=(lo, hi)
                )
            )
            expected.add((resource, int(lo.timestamp() * 1000), int(hi.timestamp() * 1000), amount))
    ScalarClaim.objects.bulk_create(rows)
    yield expected
    ScalarClaim.objects.all().delete()  # the audit would look for allocations' resources
    Allocation.objects.all().delete()


def read_back(claims) -> set[tuple[str, int, int, int]]:
    return {(resource, *claim) for resource, held in claims.get("node-a", {}).items() for claim in held}


def test_a_windows_claims_come_back_whole_when_the_sorts_spill(claimed):
    index = pool_index(load_pool("lab-pool"))
    window = Window(MS - HOUR, MS + 20 * HOUR)
    with transaction.atomic():
        with connection.cursor() as cur:
            cur.execute("SET LOCAL work_mem = '64kB'")
        _taken, _short, used = plan_reads(index, window, {"vcpu": 1, "memoryGiB": 1})
    assert read_back(used.held) == claimed


def test_a_batch_ledgers_claims_come_back_whole_when_the_sorts_spill(claimed):
    pool = load_pool("lab-pool")
    with transaction.atomic():
        with connection.cursor() as cur:
            cur.execute("SET LOCAL work_mem = '64kB'")
        ledger = Ledger.load(pool, pool_index(pool), [Window(MS - HOUR, MS + 20 * HOUR)])
    assert read_back(ledger.claims) == claimed
