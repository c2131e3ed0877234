"""The charged-insert function: made by migrate, made again by a process that finds it missing."""

import pytest
from django.core.management import call_command
from django.db import connection

from capacity.models import QuotaCharge, Reservation
from capacity.placers import quota
from capacity.services import insert, insert_function

from booking import NOW, ask, config

pytestmark = pytest.mark.django_db(transaction=True)


def exists(function) -> bool:
    with connection.cursor() as cur:
        cur.execute("SELECT to_regprocedure(%s) IS NOT NULL", [function.signature])
        return cur.fetchone()[0]


@pytest.fixture
def dropped():
    """Drop the function and forget that this process saw it; make sure it is back afterwards."""
    with connection.cursor() as cur:
        cur.execute(f"DROP FUNCTION {insert.CHARGED.signature}")
    insert.CHARGED._known = False
    assert not exists(insert.CHARGED)
    yield insert.CHARGED
    insert.CHARGED.ensure()
    assert exists(insert.CHARGED)


def test_migrate_makes_the_function_named_by_the_digest_of_its_sql(dropped):
    call_command("migrate", verbosity=0)
    assert exists(dropped)
    assert (
        dropped.name.startswith("capacity_charged_insert_")
        and len(dropped.name) == len("capacity_charged_insert_") + 12
    )


def test_a_process_that_finds_the_function_missing_makes_it_and_queues(dropped, tenant, make_node):
    make_node("node-a", gpus=2)
    queued = insert_queued()
    assert exists(dropped)
    assert queued.status == "pending" and queued.conditions[0]["type"] == "Queued"
    assert QuotaCharge.objects.filter(reservation=queued).count() == 1


def test_made_inside_a_placement_transaction_it_is_looked_up_again_until_that_commits(
    dropped, tenant, make_node
):
    """The inline placer inserts inside its transaction: a function made there is not taken as
    known until a later request finds it committed."""
    from capacity import services

    make_node("node-a", gpus=2)
    first = services.reserve(ask(1), config=config(), now=NOW).reservation
    assert first.status == "placed" and exists(dropped)
    assert not dropped._known  # made inside the first request's transaction
    assert services.reserve(ask(1), config=config(), now=NOW).reservation.status == "placed"
    assert dropped._known


def test_other_sql_gets_another_name_and_an_undeclared_parameter_is_refused():
    other = insert_function.Function(
        quota.LOCK_SQL, insert._INSERT_SQL.replace("ON CONFLICT DO NOTHING", "ON CONFLICT  DO NOTHING")
    )
    assert other.name != insert.CHARGED.name
    with pytest.raises(ValueError, match=r"undeclared parameters: \['surprise'\]"):
        insert_function.Function(quota.LOCK_SQL, insert._INSERT_SQL + " AND %(surprise)s")


def insert_queued() -> Reservation:
    from capacity import services

    return services.reserve(ask(1), config=config(placer="pool-lease"), now=NOW).reservation


@pytest.fixture
def commit_dropped():
    """Drop the commit's function (capacity/placers/commit.py) and forget that this process saw it."""
    from capacity.placers.commit import COMMIT

    with connection.cursor() as cur:
        cur.execute(f"DROP FUNCTION {COMMIT.signature}")
    COMMIT._known = False
    assert not exists(COMMIT)
    yield COMMIT
    COMMIT.ensure()
    assert exists(COMMIT)


def test_migrate_makes_the_commit_function_too(commit_dropped):
    call_command("migrate", verbosity=0)
    assert exists(commit_dropped) and commit_dropped.name.startswith("capacity_commit_member_")


def test_a_placement_that_finds_the_commit_function_missing_makes_it_and_places(
    commit_dropped, tenant, make_node
):
    from capacity import services

    make_node("node-a", gpus=2)
    placed = services.reserve(ask(2), config=config(), now=NOW).reservation
    assert placed.status == "placed" and exists(commit_dropped)
    assert services.allocations_of(placed)[0]["nodeId"] == "node-a"


def test_a_commit_sql_with_an_undeclared_parameter_is_refused():
    from capacity.db.cursors import ServerFunction

    with pytest.raises(ValueError, match=r"undeclared parameters: \['surprise'\]"):
        ServerFunction(
            "test_commit", "node bigint", "ok boolean", "BEGIN END", "SELECT %(node)s, %(surprise)s"
        )
