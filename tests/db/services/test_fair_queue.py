"""The fair queue of a pool with shares: retries and batches go lowest fair share first, and a
pending reservation knows its place; a pool without shares keeps its order."""

import random
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from capacity import services
from capacity.models import Reservation
from capacity.placers.batch import place_batch, place_queued
from policy.fair_order import Waiting, places
from policy.fair_queue import read_fair_shares
from policy.models import PoolShare
from policy.shares import share_rows

from booking import NOW, ask, config, from_real_now, reserve
from tenants import make_tenant

HOUR = timedelta(hours=1)


@pytest.fixture
def shared(tenant, other_tenant, make_node, pool):
    """node-a (4 GPUs) in lab-pool; acme and globex guaranteed 2 each; acme booked all 4 for a day
    two days ago, so its fair share is above globex's (0)."""
    make_node("node-a", gpus=4)
    for t in (tenant, other_tenant):
        PoolShare.objects.create(pool=pool, tenant=t, guaranteed_gpus=2)
    past = reserve(ask(4, start=-48), now=NOW - 48 * HOUR).reservation
    assert past.status == "placed"
    return pool


def blocked_pending(requests):
    """Fill node-a from NOW, then make each (tenant, gpus) pending in this order, one second apart.

    acme and globex fill it with their guarantees of 2 each: nothing is borrowed, so no request
    past its guarantee can reclaim anything and every one waits.
    """
    holders = [reserve(ask(2)).reservation, reserve(ask(2, tenant="globex")).reservation]
    made = [
        reserve(ask(g, tenant=t), now=NOW + i * timedelta(seconds=1)).reservation
        for i, (t, g) in enumerate(requests)
    ]
    assert all(r.status == "pending" for r in made)
    return holders, made


def release_all(holders):
    for holder in holders:
        services.release(holder.pk, now=NOW - HOUR)


def test_the_fair_shares_are_read_in_one_statement_as_the_shares_page_figures_them(
    shared, django_assert_num_queries
):
    assert read_fair_shares(None, NOW) == {}  # nothing pending: no figure is needed, none is read
    with django_assert_num_queries(1):
        fair = read_fair_shares(None, NOW, waiting=False)
    acme, globex = fair[shared.pk][shared.shares.get(tenant__slug="acme").tenant_id], 0.0
    rows = {r.tenant: r.fair_share for r in share_rows(services.EVERYONE, "lab-pool", NOW)}
    assert acme == pytest.approx(rows["acme"], abs=1e-4) and acme > 0.1
    assert sorted(fair[shared.pk].values()) == [globex, acme]
    assert read_fair_shares([shared.pk + 1], NOW, waiting=False) == {}  # a pool without shares


def test_a_retry_in_a_pool_with_shares_places_the_lowest_fair_share_first(shared):
    # acme asked first, twice; globex after, twice. Round-robin would place acme's oldest and
    # globex's oldest; fair order places globex's two (fair share 0 against acme's 0.18).
    holders, made = blocked_pending([("acme", 1), ("acme", 1), ("globex", 1), ("globex", 1)])
    release_all(holders)
    assert services.retry_pending([shared.pk], now=NOW + HOUR, limit=2, config=config()) == 2
    status = {r.pk: Reservation.objects.get(pk=r.pk).status for r in made}
    assert [status[r.pk] for r in made] == ["pending", "pending", "placed", "placed"]


def test_within_a_tenant_the_oldest_goes_first_and_tenants_without_a_figure_last(shared):
    make_tenant("initech")
    holders, made = blocked_pending([("initech", 1), ("acme", 1), ("globex", 1), ("acme", 1), ("globex", 1)])
    got = services.queue_places(made, now=NOW + HOUR)
    order = sorted(made, key=lambda r: got[r.pk].position)
    assert [(r.tenant.slug, r.pk) for r in order] == [
        ("globex", made[2].pk),
        ("globex", made[4].pk),
        ("acme", made[1].pk),
        ("acme", made[3].pk),
        ("initech", made[0].pk),
    ]
    assert {p.of for p in got.values()} == {5}
    assert (
        got[made[0].pk].fair_share is None and got[made[2].pk].fair_share < 0.01
    )  # globex's holder: 2 GPUs for an hour
    release_all(holders)
    assert services.retry_pending([shared.pk], now=NOW + HOUR, limit=3, config=config()) == 3
    placed = set(
        Reservation.objects.filter(status="placed", pk__in=[r.pk for r in made]).values_list("pk", flat=True)
    )
    assert placed == {made[2].pk, made[4].pk, made[1].pk}


def test_a_pool_without_shares_keeps_its_round_robin_and_no_reservation_has_a_place(
    tenant, other_tenant, make_node, pool
):
    make_node("node-a", gpus=4)
    holders, made = blocked_pending([("acme", 1), ("acme", 1), ("globex", 1), ("globex", 1)])
    assert services.queue_places(made, now=NOW + HOUR) == {}
    release_all(holders)
    assert services.retry_pending([pool.pk], now=NOW + HOUR, limit=2, config=config()) == 2
    assert [Reservation.objects.get(pk=r.pk).status for r in made] == [
        "placed",
        "pending",
        "placed",
        "pending",
    ]


def test_the_queues_places_read_in_sql_agree_with_the_pure_order(shared, django_assert_num_queries):
    rng = random.Random(3)
    for slug in ("initech", "umbrella"):
        make_tenant(slug)
    PoolShare.objects.create(pool=shared, tenant=make_tenant("zero"), guaranteed_gpus=0)
    tenants = ["acme", "globex", "initech", "umbrella", "zero"]
    _, made = blocked_pending([(rng.choice(tenants), rng.choice([1, 2])) for _ in range(24)])
    made = list(Reservation.objects.filter(pk__in=[r.pk for r in made]).select_related("tenant", "pool"))
    with django_assert_num_queries(2):
        got = services.queue_places(made, now=NOW + HOUR)
    fair = read_fair_shares([shared.pk], NOW + HOUR)[shared.pk]
    expected = places([Waiting(r.pk, r.tenant_id, r.created_at) for r in made], fair)
    assert got == expected


def test_work_out_of_the_queue_has_no_place(shared):
    holders, (waiting,) = blocked_pending([("acme", 1)])
    never = reserve(ask(5, tenant="globex"), now=NOW).reservation  # no node of the pool has 5 GPUs
    assert never.status == "pending" and never.condition(services.UNSATISFIABLE)
    got = services.queue_places([holders[0], waiting, never], now=NOW + HOUR)
    assert set(got) == {waiting.pk} and (got[waiting.pk].position, got[waiting.pk].of) == (1, 1)
    assert services.queue_places([waiting], now=waiting.ends_at) == {}  # its window is over


def test_the_retry_in_several_pools_takes_each_pools_turns_in_order(shared, site, make_node):
    from inventory.models import Pool

    other = Pool.objects.create(slug="plain-pool", name="Plain", site=site)
    make_node("node-p", gpus=1, pool=other)
    reserve(ask(1, pool="plain-pool"))
    holders, made = blocked_pending([("acme", 1), ("acme", 1), ("globex", 1)])
    theirs = reserve(
        ask(1, pool="plain-pool", tenant="globex"), now=NOW + 9 * timedelta(seconds=1)
    ).reservation
    assert theirs.status == "pending"
    release_all(holders)
    # limit 2: turn 1 of each pool: globex's in lab-pool (fair), globex's in plain-pool (no room).
    assert services.retry_pending([shared.pk, other.pk], now=NOW + HOUR, limit=2, config=config()) == 1
    assert [Reservation.objects.get(pk=r.pk).status for r in made] == ["pending", "pending", "placed"]


@pytest.mark.django_db(transaction=True)
def test_a_batch_in_a_pool_with_shares_takes_its_queue_in_fair_order(shared):
    lease = config(placer="pool-lease", max_batch=2)
    made = [
        services.reserve(ask(1, tenant=t), now=NOW + i * timedelta(seconds=1), config=lease).reservation
        for i, t in enumerate(["acme", "acme", "globex", "globex"])
    ]
    assert all(r.condition("Queued") for r in made)
    fair = read_fair_shares([shared.pk], NOW)
    batch = place_batch(shared.pk, lease, now=NOW, shares=fair[shared.pk])
    assert sorted(batch.placed) == sorted([made[2].pk, made[3].pk])
    assert place_queued(lease).placed == [made[0].pk, made[1].pk]


@pytest.mark.django_db(transaction=True)
def test_a_worker_round_reads_the_figures_once_and_places_the_fair_queue_first(shared, make_node):
    from capacity.worker import run_round

    services.expire_ended()  # the past booking: its release would retry (and read) on its own
    start = from_real_now()
    reserve(ask(2, start=start), now=timezone.now())  # node-a keeps 2 GPUs free in the window
    lease = config(placer="pool-lease", max_batch=2)
    made = [
        services.reserve(ask(1, tenant=t, start=start), now=timezone.now(), config=lease).reservation
        for t in ["acme", "acme", "globex", "globex"]
    ]
    with CaptureQueriesContext(connection) as seen:
        run_round(lease, housekeeping=True)
    # The fair shares' read (the decay summed over bookings and history): once. Placing in a pool
    # with shares also reads its rows, to judge each booking (policy.borrowing).
    assert sum("capacity_devicebooking_all" in q["sql"] for q in seen.captured_queries) == 1
    status = [Reservation.objects.get(pk=r.pk).status for r in made]
    assert status == ["pending", "pending", "placed", "placed"]
