"""Retrying pending work is fair across tenants and bounded inside a release."""

from datetime import timedelta

from django.db import connection
from django.test.utils import CaptureQueriesContext

from capacity import services
from capacity.models import Reservation

from booking import NOW, ask, reserve

FAIR_SHARES = "FROM capacity_poolshare ps"  # policy.fair_queue's figures, and only they


def test_one_tenants_pile_of_never_fitting_requests_does_not_starve_another(tenant, other_tenant, make_node):
    """
    node-a: 4 GPUs, acme holds them all. acme then asks 20 times for 5 GPUs (never fits on a 4-GPU
    node) and globex once for 1 GPU. After acme releases, a retry of 8 places globex's request.
    """
    make_node("node-a", gpus=4)
    holder = reserve(ask(4)).reservation
    for _ in range(20):
        assert reserve(ask(5)).reservation.status == "pending"
    theirs = reserve(ask(1, tenant="globex")).reservation
    assert theirs.status == "pending"
    services.release(holder.pk, now=NOW - timedelta(hours=1))
    assert services.retry_pending([theirs.pool_id], now=NOW, limit=8) == 1
    theirs.refresh_from_db()
    assert theirs.status == "placed"
    assert Reservation.objects.filter(tenant=tenant, status="pending").count() == 20


def test_a_retry_with_nothing_pending_sends_one_statement_and_reads_no_fair_share(tenant, make_node):
    """node-a: 4 GPUs, one booking of 1 GPU and nothing pending: a retry asks once whether work
    waits, and reads no fair-share figures (the pool has no shares to order by anyway)."""
    make_node("node-a", gpus=4)
    placed = reserve(ask(1)).reservation
    with CaptureQueriesContext(connection) as statements:
        assert services.retry_pending([placed.pool_id], now=NOW, limit=8) == 0
    assert len(statements.captured_queries) == 1
    assert FAIR_SHARES not in statements.captured_queries[0]["sql"]


def test_a_retry_with_work_pending_reads_the_fair_shares_once(tenant, make_node):
    """node-a: 4 GPUs, all held; one 1-GPU request pending. The retry asks what waits, reads the
    figures once, tries the request (still no room) and leaves it pending."""
    make_node("node-a", gpus=4)
    reserve(ask(4))
    waiting = reserve(ask(1)).reservation
    assert waiting.status == "pending"
    with CaptureQueriesContext(connection) as statements:
        assert services.retry_pending([waiting.pool_id], now=NOW, limit=8) == 0
    sql = [q["sql"] for q in statements.captured_queries]
    assert sum(FAIR_SHARES in s for s in sql) == 1
    waiting.refresh_from_db()
    assert waiting.status == "pending"
