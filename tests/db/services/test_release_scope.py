"""A release reads and locks its reservation in one statement, and only one the caller may see."""

import pytest
from django.db import connection, transaction

from capacity import services
from capacity.access import Scope
from capacity.placement import CapacityError
from capacity.services.release import _locked

from booking import ask, reserve
from racing import Background, run_threads

GLOBEX, ACME = Scope(tenants=frozenset({"globex"})), Scope(tenants=frozenset({"acme"}))


def _locked_by_someone(pk: int) -> bool:
    """Return whether another transaction holds the reservation's row lock (asked without waiting)."""
    with connection.cursor() as cur:
        cur.execute("SELECT id FROM capacity_reservation WHERE id = %s FOR UPDATE SKIP LOCKED", [pk])
        return cur.fetchone() is None


def test_the_release_lock_skips_a_reservation_the_caller_may_not_see(
    transactional_db, tenant, other_tenant, make_node
):
    """node-a: 2 GPUs, acme books one. Inside an open transaction, globex's locking read finds
    nothing and leaves the row free for another connection; acme's finds it and holds it."""
    make_node("node-a", gpus=2)
    theirs = reserve(ask(1)).reservation
    seen = {}

    def probe(who):
        seen[who] = _locked_by_someone(theirs.pk)

    with transaction.atomic():
        assert _locked(theirs.pk, GLOBEX) is None
        assert _locked(theirs.pk, Scope(tenants=GLOBEX.tenants, ids=frozenset({other_tenant.pk}))) is None
        Background(probe, "after globex").join()
        mine = _locked(theirs.pk, ACME)
        assert mine is not None and mine.tenant.slug == "acme" and mine.pool.slug == "lab-pool"
        Background(probe, "after acme").join()
    assert seen == {"after globex": False, "after acme": True}


def test_a_release_by_a_tenant_who_may_not_see_the_reservation_is_not_found_and_changes_nothing(
    tenant, other_tenant, make_node
):
    """node-a: 2 GPUs, acme books one; globex asks to release it: NOT_FOUND, still placed."""
    make_node("node-a", gpus=2)
    theirs = reserve(ask(1)).reservation
    with pytest.raises(CapacityError) as refused:
        services.release(theirs.pk, scope=GLOBEX)
    assert refused.value.code == "NOT_FOUND"
    theirs.refresh_from_db()
    assert theirs.status == "placed"
    assert services.release(theirs.pk, scope=ACME).status == "released"


def test_four_connections_releasing_one_reservation_as_its_tenant_end_it_once(
    transactional_db, tenant, make_node
):
    """node-a: 2 GPUs, acme books one; four connections release it at once, all as acme: each
    answers it released, with the one release time the first wrote (check_capacity runs after)."""
    make_node("node-a", gpus=2)
    theirs = reserve(ask(1)).reservation
    answers = {}

    def release(i):
        answers[i] = services.release(theirs.pk, scope=ACME)

    assert run_threads(4, release) == []
    assert {a.status for a in answers.values()} == {"released"}
    theirs.refresh_from_db()
    assert {a.released_at for a in answers.values()} == {theirs.released_at}
    assert not theirs.allocations.filter(released_at__isnull=True).exists()
