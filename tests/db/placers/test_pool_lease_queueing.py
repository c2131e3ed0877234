"""The pool-lease placer's queue: one round trip, idempotent, charged, refunded on release."""

import re
import threading
import time

import psycopg
import pytest
from django.db import DataError, connection, transaction
from django.test.utils import CaptureQueriesContext

from capacity import services
from capacity.db.channels import PLACER_LOCK_CLASS
from capacity.models import Allocation, Quota, QuotaCharge, Reservation
from capacity.placement import CapacityError
from capacity.placers import quota
from capacity.placers.batch import place_batch, place_queued
from capacity.services import insert, insert_function, lookups
from inventory.models import Pool

from booking import NOW, ask
from queueing import lease, queue, used
from racing import Background

pytestmark = pytest.mark.django_db(transaction=True)


def sent_by(action):
    """Return the first keyword of each statement `action` sends ("CHARGED": the charged insert's call)."""
    with CaptureQueriesContext(connection) as statements:
        result = action()
    return result, [
        "CHARGED"
        if insert.CHARGED.name in q["sql"]
        else re.search(r"[A-Z]+", q["sql"].removeprefix("QUERY = ")).group()
        for q in statements.captured_queries
    ]


def test_queueing_is_one_round_trip_and_commits_before_it_answers(tenant, make_node):
    """The quota lock and the insert with its charges are one call of one function, its own
    transaction; the tenant and pool are read by the first request and checked, not read again, by
    the next ones."""
    make_node("node-a", gpus=2)
    lookups.forget_all()  # kept by earlier tests: each would be checked, and read afresh
    _first, sent = sent_by(lambda: queue(ask(1)))
    assert sent[0] == "SELECT" and sent[-1] == "CHARGED"
    reservation, sent = sent_by(lambda: queue(ask(1)))
    assert sent == ["CHARGED"]
    assert connection.connection.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    seen = in_other_connection(
        lambda: (
            Reservation.objects.get(pk=reservation.pk).conditions[0]["type"],
            QuotaCharge.objects.filter(reservation=reservation.pk).count(),
        )
    )
    assert seen == ("Queued", 1)


def test_a_kept_lookup_that_no_longer_holds_writes_nothing_and_the_request_reads_it_afresh(
    tenant, other_tenant, make_node, pool
):
    """The pool changes between two requests: archived, then open to globex alone."""
    make_node("node-a", gpus=4)
    queue(ask(1))
    Pool.objects.filter(pk=pool.pk).update(archived=True)
    archived, sent = sent_by(lambda: queue(ask(1)))
    assert sent[:2] == ["CHARGED", "SELECT"]  # then afresh
    assert archived.status == "pending" and archived.conditions[0]["message"] == "the pool is archived"
    Pool.objects.filter(pk=pool.pk).update(archived=False)
    queue(ask(1))
    pool.tenants.set([other_tenant])
    with pytest.raises(CapacityError) as refused:
        queue(ask(1))
    assert refused.value.code == "NOT_FOUND"
    assert Reservation.objects.count() == 3
    assert QuotaCharge.objects.count() == 2


def test_a_refused_queue_leaves_the_connection_idle_and_the_next_request_queues(tenant, make_node):
    make_node("node-a", gpus=8)
    Quota.objects.create(tenant=tenant, resource="gpu", limit=2)
    queue(ask(2))
    refusals = []

    def refused_queue():
        with pytest.raises(CapacityError) as refused:
            queue(ask(1))
        refusals.append(refused.value)

    _, sent = sent_by(refused_queue)
    refused = refusals[0]
    assert refused.code == "QUOTA_EXCEEDED"
    assert str(refused) == "quota exceeded for acme: gpu 2 used + 1 requested > limit 2"
    # Refused on a kept lookup its statement confirmed: asked once, not again of a fresh one.
    assert sent == ["CHARGED"]
    assert connection.connection.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    assert Reservation.objects.count() == 1
    assert QuotaCharge.objects.count() == 1
    Quota.objects.filter(tenant=tenant).update(limit=3)
    assert queue(ask(1)).conditions[0]["type"] == "Queued"


def test_a_queue_whose_statement_fails_writes_nothing_and_the_connection_stays_usable(
    tenant, make_node, monkeypatch
):
    """The lock and the insert are one implicit transaction: an error after the insert rolls back
    the reservation and its charges."""
    make_node("node-a", gpus=2)
    queue(ask(1))
    # The same function, but for a division by zero once its insert has written the row.
    failing = insert_function.Function(
        quota.LOCK_SQL,
        insert._INSERT_SQL.replace(
            "(SELECT ok FROM fresh),", "(SELECT ok FROM fresh) AND 1 / ((SELECT count(*) FROM r) - 1) = 0,", 1
        ),
        prefix="test_failing_insert",
    )
    assert failing.name != insert.CHARGED.name
    monkeypatch.setattr(insert, "CHARGED", failing)
    with pytest.raises(DataError):
        queue(ask(1))
    assert connection.connection.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    assert Reservation.objects.count() == 1
    assert QuotaCharge.objects.count() == 1
    monkeypatch.undo()
    assert queue(ask(1)).conditions[0]["type"] == "Queued"
    assert Reservation.objects.count() == 2


def in_other_connection(read):
    """Return what `read` finds on a connection of its own (committed rows only)."""
    found = []
    worker = Background(lambda: found.append(read()))
    worker.join()
    return found[0]


def test_a_pool_archived_after_queueing_places_nothing_and_refunds(tenant, make_node, pool):
    make_node("node-a", gpus=2)
    reservation = queue(ask(1))
    Pool.objects.filter(pk=pool.pk).update(archived=True)
    result = place_batch(pool.pk, lease())
    assert result.pending == [reservation.pk]
    stored = Reservation.objects.get(pk=reservation.pk)
    assert stored.condition("Unschedulable")["message"] == "the pool is archived"
    assert used() == 0
    assert Allocation.objects.count() == 0


def test_a_pool_another_placer_holds_is_skipped(tenant, make_node, pool):
    make_node("node-a", gpus=2)
    reservation = queue(ask(1))
    held, release = threading.Event(), threading.Event()

    def hold():
        with transaction.atomic(), connection.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s, %s)", [PLACER_LOCK_CLASS, pool.pk])
            held.set()
            release.wait(30)

    holder = Background(hold)
    try:
        assert held.wait(30)
        assert len(place_batch(pool.pk, lease())) == 0
        assert services.is_queued(Reservation.objects.get(pk=reservation.pk))
    finally:
        release.set()
        holder.join()
    assert place_batch(pool.pk, lease()).placed == [reservation.pk]


def test_the_same_idempotency_key_with_another_wait_returns_the_first_answer(tenant, make_node):
    make_node("node-a", gpus=2)
    first = queue({**ask(1), "idempotencyKey": "run-1", "wait": {"timeoutMs": 0}})
    again = services.reserve(
        {**ask(1), "idempotencyKey": "run-1", "wait": {"timeoutMs": 5}}, config=lease(), now=NOW
    )
    assert (again.created, again.reservation.pk) == (False, first.pk)
    assert "wait" not in Reservation.objects.get(pk=first.pk).request["input"]
    place_queued(lease())


def test_requests_queued_at_once_with_one_idempotency_key_make_one_reservation_and_one_charge(
    tenant, make_node
):
    """Four connections queue the same request with one key while the tenant's quota lock is held
    elsewhere: all wait on it, the first to get it inserts and commits, the other three find that
    reservation (created false). One reservation, one GPU charged, and the batch places it."""
    make_node("node-a", gpus=2)
    answers = {}

    def racer_queues(i):
        result = services.reserve({**ask(1), "idempotencyKey": "run-1"}, config=lease(), now=NOW)
        answers[i] = (result.created, result.reservation.pk)

    with transaction.atomic():
        with connection.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s, %s)", [quota.QUOTA_LOCK_CLASS, tenant.pk])
        threads = [Background(racer_queues, i) for i in range(4)]
        deadline = time.monotonic() + 20
        while True:  # until all four wait for the lock this transaction holds
            with connection.cursor() as cur:
                cur.execute("SELECT pg_stat_clear_snapshot()")  # else the transaction sees one snapshot
                cur.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'advisory' AND pid <> pg_backend_pid()"
                )
                if cur.fetchone()[0] == 4:
                    break
            assert time.monotonic() < deadline, "the four requests never all waited on the quota lock"
            time.sleep(0.02)
    for t in threads:
        t.join()
    (pk,) = {pk for _, pk in answers.values()}
    assert sorted(created for created, _ in answers.values()) == [False, False, False, True]
    assert list(Reservation.objects.values_list("pk", flat=True)) == [pk]
    assert list(QuotaCharge.objects.filter(resource="gpu").values_list("reservation_id", "amount")) == [
        (pk, 1)
    ]
    place_queued(lease())
    assert Reservation.objects.get(pk=pk).status == "placed"


def test_a_queued_request_past_its_quota_is_refused_and_leaves_no_rows(tenant, make_node):
    from capacity.models import Quota

    make_node("node-a", gpus=4)
    Quota.objects.create(tenant=tenant, resource="gpu", limit=3)
    queue(ask(2))
    with pytest.raises(CapacityError) as err:
        queue(ask(2))
    assert err.value.code == "QUOTA_EXCEEDED"
    assert err.value.message == "quota exceeded for acme: gpu 2 used + 2 requested > limit 3"
    assert Reservation.objects.count() == 1
    assert used() == 2
    place_queued(lease())


def test_releasing_a_queued_reservation_refunds_its_quota_and_takes_it_off_the_queue(tenant, make_node):
    make_node("node-a", gpus=2)
    reservation = queue(ask(2))
    assert used() == 2
    released = services.release(reservation.pk)
    assert (released.status, released.conditions) == ("released", [])
    assert used() == 0
    assert len(place_queued(lease())) == 0
    assert Allocation.objects.count() == 0


def test_a_release_that_arrives_while_the_batch_holds_the_row_waits_and_releases_the_placement(
    tenant, make_node
):
    from capacity.placement import define_scheduler_plugin

    make_node("node-a", gpus=2)
    reservation = queue(ask(2))
    started = []

    def filter_(request, node):
        if not started:  # the batch holds the row now: this release must wait for its commit
            started.append(Background(services.release, reservation.pk))
            time.sleep(0.2)
        return True

    cfg = lease(plugins=(define_scheduler_plugin("releaser", filters=[{"id": "r", "filter": filter_}]),))
    assert place_batch(reservation.pool_id, cfg).placed == [reservation.pk]
    started[0].join()
    stored = Reservation.objects.get(pk=reservation.pk)
    assert stored.status == "released"
    assert used() == 0
    assert Allocation.objects.get(reservation=reservation).released_at is not None
