"""Connections racing for one tenant's quota: one limit holds, and one tenant never deadlocks itself."""

import dataclasses
import threading

import pytest
from django.db import connection

from capacity import services
from capacity.audit import audit
from capacity.conf import placer_config
from capacity.models import Quota, Reservation
from capacity.placement import CapacityError
from capacity.placers.batch import place_queued

from booking import NOW, ask
from racing import run_threads

pytestmark = pytest.mark.django_db(transaction=True)


def test_two_connections_never_both_squeeze_under_one_limit(tenant, make_node):
    """
    node-a: 4 GPUs; acme may hold 1 GPU at once. Two connections ask for 1 GPU over the same
    window at the same instant, five rounds: each round exactly one is placed.
    """
    make_node("node-a", gpus=4)
    Quota.objects.create(tenant=tenant, resource="gpu", limit=1)
    for round_ in range(5):
        outcomes = []

        def client(i, round_=round_, outcomes=outcomes):
            try:
                result = services.reserve(ask(1, start=round_ * 48), config=placer_config(), now=NOW)
                outcomes.append(result.reservation.status)
            except CapacityError as err:
                outcomes.append(err.code)

        assert run_threads(2, client) == []
        assert sorted(outcomes) == ["QUOTA_EXCEEDED", "placed"], outcomes
    assert Reservation.objects.filter(status="placed").count() == 5
    assert audit() == []


@pytest.mark.parametrize("placer", ["inline", "pool-lease"])
def test_one_tenant_creating_and_releasing_from_eight_connections_never_deadlocks(tenant, make_node, placer):
    """
    4 nodes × 4 GPUs; 8 connections of acme each create and release 1-GPU reservations 6 times.
    With the pool-lease placer a ninth thread places batches meanwhile.
    """
    for i in range(4):
        make_node(f"node-{i}", gpus=4)
    cfg = dataclasses.replace(placer_config(), placer=placer)
    done = threading.Event()
    counts = {"created": 0, "released": 0}

    def client(i):
        for _ in range(6):
            reservation = services.reserve(ask(1), config=cfg, now=NOW).reservation
            counts["created"] += 1
            services.release(reservation.pk)
            counts["released"] += 1

    placer_errors = []

    def place_until_done():
        try:
            while not done.is_set():
                place_queued(cfg)
        except Exception as err:
            placer_errors.append(err)
        finally:
            connection.close()

    worker = threading.Thread(target=place_until_done)
    if placer == "pool-lease":
        worker.start()
    try:
        errors = run_threads(8, client)
    finally:
        done.set()
        if worker.is_alive():
            worker.join(60)
    assert errors == [] and placer_errors == []
    assert counts == {"created": 48, "released": 48}
    assert Reservation.objects.filter(status="released").count() == 48
    assert audit() == []


def test_a_transaction_ended_by_a_real_deadlock_is_tried_again():
    """Two connections take two locks in opposite orders: Postgres ends one, and the retry finishes it."""
    import time

    from django.db import transaction

    from capacity.db.retry import retry_on_conflict

    tries = []

    @retry_on_conflict
    def locker(first, second):
        with transaction.atomic(), connection.cursor() as cur:
            tries.append(first)
            cur.execute("SELECT pg_advisory_xact_lock(4242, %s)", [first])
            if len(tries) <= 2:
                time.sleep(0.3)  # both first locks are held before either asks for its second
            cur.execute("SELECT pg_advisory_xact_lock(4242, %s)", [second])

    assert run_threads(2, lambda i: locker(*((1, 2) if i == 0 else (2, 1)))) == []
    assert len(tries) == 3  # one of the two was ended by the deadlock and ran once more
