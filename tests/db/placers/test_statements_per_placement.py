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
from policy.pool_policy import set_policy
from series.book import reserve_series

from booking import NOW, ask, config, reserve

# Measured on the code before the house was reshaped (2026-12-04), and after: the same (7). The
# commit's lock and writes made one call (issue 60): 6 (BEGIN, the charged insert, the window's
# reads, SAVEPOINT, the commit, COMMIT).
INLINE_STATEMENTS = 6
QUEUED_STATEMENTS = 1
BATCH_STATEMENTS = 10
# A series: its lookup, the series row and the link of its occurrences once; each occurrence its
# insert with its charge and the placement (series.book).
SERIES_FIXED = 7
SERIES_PER_OCCURRENCE = 4  # 5 before the commit was one call


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
        # Approvals: a booking that cannot reach the limit sends nothing more; one that may, one UPDATE.
        ({"approval_above_gpu_hours": 2}, 0),
        ({"approval_above_gpu_hours": 1}, 1),
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


def test_a_series_places_each_occurrence_in_fewer_statements_than_a_single_create(tenant, make_node):
    """A weekly series of ten: prepared once, one transaction, the planner and quota lock kept."""
    for i in range(6):
        make_node(f"node-{i}", gpus=8)
    reserve(ask(1))
    body = {**ask(1, start=24 * 7, hours=2), "repeat": {"freq": "daily", "count": 10}}
    with CaptureQueriesContext(connection) as statements:
        done = reserve_series(body, now=NOW, config=config())
    assert [o.status for o in done.occurrences] == ["placed"] * 10
    assert len(statements.captured_queries) == SERIES_FIXED + 10 * SERIES_PER_OCCURRENCE
    assert SERIES_PER_OCCURRENCE < INLINE_STATEMENTS


def test_maintenance_windows_in_the_pool_add_no_statement(tenant, make_node):
    """Windows ride on the pool index's node rows and the commit's label statement: with two nodes
    closed over the requests' windows (and one later), a placement sends as many statements."""
    from maintenance.windows import schedule

    from booking import from_real_now, iso_at

    for i in range(6):
        make_node(f"node-{i}", gpus=8)
    s = from_real_now(10)
    schedule({"nodes": ["node-0", "node-1"], "start": iso_at(s), "end": iso_at(s + 24)})
    schedule({"nodes": ["node-2"], "start": iso_at(s + 48), "end": iso_at(s + 50)})
    reserve(ask(1, start=s))
    counts, nodes = [], set()
    for i in range(5):
        with CaptureQueriesContext(connection) as statements:
            result = reserve(ask(1, start=s + i, hours=2))
        assert result.reservation.status == "placed"
        nodes.update(a["nodeId"] for a in services.allocations_of(result.reservation))
        counts.append(len(statements.captured_queries))
    assert counts == [INLINE_STATEMENTS] * 5
    assert not nodes & {"node-0", "node-1"}


# Measured on the code before the booked-hours rollup (2026-12-05), and after: the same, 14 (its
# triggers run inside the statements that write bookings); 15 with the audit trail's stamp, which
# names who released and in which request (trail.context.stamp, docs/audit.md); 14 since the
# reservation is read and locked in one statement, the caller's scope part of its condition.
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
