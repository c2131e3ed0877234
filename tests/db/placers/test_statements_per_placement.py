"""Statements per placement are pinned: a reshaping of the booking path may not add round trips.

Counted as bench_placements counts them (everything the reserving code and the placer send), in
the steady state: the tenant and pool lookups kept, the quota-load rows there, the pool index built.
"""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from capacity import services
from capacity.placers.batch import place_batch
from capacity.services.pool_policy import set_policy

from booking import NOW, ask, config, reserve

# Measured on the code before the house was reshaped (2026-12-04), and after: the same.
INLINE_STATEMENTS = 7
QUEUED_STATEMENTS = 1
BATCH_STATEMENTS = 10


def test_an_inline_placement_sends_a_pinned_number_of_statements(tenant, make_node):
    """Six 8-GPU nodes; a one-GPU request placed inline, after a warm-up, five times over."""
    for i in range(6):
        make_node(f"node-{i}", gpus=8)
    reserve(ask(1))
    counts = []
    for i in range(5):
        with CaptureQueriesContext(connection) as statements:
            assert reserve(ask(1, start=i, hours=2)).reservation.status == "placed"
        counts.append(len(statements.captured_queries))
    assert counts == [INLINE_STATEMENTS] * 5


@pytest.mark.parametrize(
    ("limits", "more"),
    [
        ({"max_duration": timedelta(days=7), "max_lead_time": timedelta(days=30)}, 0),
        # The tenant's quota lock and the one read of what it holds in the pool.
        ({"max_future_gpu_hours": 10_000}, 2),
    ],
)
def test_a_pool_policy_limit_adds_no_statement_but_the_gpu_hours_read(tenant, make_node, limits, more):
    """The limits ride on the pool's lookup; maxFutureGpuHours alone reads (and locks) per placement."""
    for i in range(6):
        make_node(f"node-{i}", gpus=8)
    set_policy("lab-pool", limits)
    reserve(ask(1))
    counts = []
    for i in range(3):
        with CaptureQueriesContext(connection) as statements:
            assert reserve(ask(1, start=i, hours=2)).reservation.status == "placed"
        counts.append(len(statements.captured_queries))
    assert counts == [INLINE_STATEMENTS + more] * 3


@pytest.mark.django_db(transaction=True)
def test_a_queued_placement_sends_one_statement_and_its_share_of_one_batch(tenant, make_node):
    """Sixty-four one-GPU requests (a full batch) queue with one statement each; one batch places them all.

    Outside a transaction, as a web request queues: the call commits by itself.
    """
    for i in range(6):
        make_node(f"node-{i}", gpus=8)
    cfg = config(placer="pool-lease")
    first = services.reserve(ask(1), config=cfg, now=NOW).reservation
    place_batch(first.pool_id, cfg)
    queued, pks = [], []
    for i in range(64):
        with CaptureQueriesContext(connection) as statements:
            pks.append(services.reserve(ask(1, start=i % 4, hours=2), config=cfg, now=NOW).reservation.pk)
        queued.append(len(statements.captured_queries))
    with CaptureQueriesContext(connection) as statements:
        result = place_batch(first.pool_id, cfg)
    assert sorted(result.placed) == sorted(pks)
    assert queued == [QUEUED_STATEMENTS] * 64
    assert len(statements.captured_queries) == BATCH_STATEMENTS
    assert (sum(queued) + BATCH_STATEMENTS) / 64 <= 1.3  # bench_placements' figure


# Measured on the code before the booked-hours rollup (2026-12-05), and after: the same (its
# triggers run inside the statements that write bookings).
RELEASE_STATEMENTS = 14


def test_a_release_sends_a_pinned_number_of_statements(tenant, make_node):
    """Six 8-GPU nodes; a running one-GPU booking released, after a warm-up, three times over."""
    for i in range(6):
        make_node(f"node-{i}", gpus=8)
    placed = [reserve(ask(1, start=0, hours=24)).reservation for _ in range(4)]
    services.release(placed[0].pk, now=NOW + timedelta(hours=1))
    counts = []
    for reservation in placed[1:]:
        with CaptureQueriesContext(connection) as statements:
            services.release(reservation.pk, now=NOW + timedelta(hours=1))
        counts.append(len(statements.captured_queries))
    assert counts == [RELEASE_STATEMENTS] * 3
