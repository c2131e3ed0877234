"""The pool-lease placer: reserve queues, a batch places oldest first under one pool lock."""

import dataclasses
import io
import random
import re
import threading
import time
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.db import DataError, connection, transaction
from django.test.utils import CaptureQueriesContext
from test_lost_races import racer, steal

from capacity import port, services
from capacity.conf import placer_config
from capacity.db.channels import PLACER_LOCK_CLASS, QUEUED_CHANNEL
from capacity.models import Allocation, DeviceBooking, Quota, QuotaCharge, Reservation, ScalarClaim
from capacity.placement import CapacityError, Window, validate_request
from capacity.placement.timeline import peak
from capacity.placers import quota
from capacity.placers.batch import place_batch, place_queued, plan_from_ledger
from capacity.placers.index import pool_index
from capacity.placers.ledger import Ledger
from capacity.placers.loader import load_pool
from capacity.placers.planning import plan_request
from capacity.services import insert, insert_function, lookups
from capacity.worker import serve
from inventory import services as nodes
from inventory.models import Pool

from booking import HOUR, MS, NOW, ask, config, from_real_now
from tenants import make_tenant

pytestmark = pytest.mark.django_db(transaction=True)

YEAR = timedelta(days=366)


def lease(**kw):
    """The settings' config with the pool-lease placer and no random top-N pick."""
    return config(placer="pool-lease", **kw)


def queue(data, **kw):
    return services.reserve(data, config=kw.pop("cfg", None) or lease(), now=NOW, **kw).reservation


def used(resource="gpu", tenant="acme"):
    """Return what the tenant's live quota charges hold of a resource at its busiest instant.

    A released reservation's charges end at its release (the audit checks that); they are left out
    here so the figure does not depend on the wall clock.
    """
    charges = QuotaCharge.objects.filter(tenant__slug=tenant, resource=resource).exclude(
        reservation__status="released"
    )
    return peak([(c.during.lower, c.during.upper, c.amount) for c in charges], NOW - YEAR, NOW + YEAR)


class Background:
    """Run `target` in a thread on its own connection; errors are kept for the test to assert on."""

    def __init__(self, target, *args):
        self.errors: list[Exception] = []
        self.thread = threading.Thread(target=self._run, args=(target, *args))
        self.thread.start()

    def _run(self, target, *args):
        try:
            target(*args)
        except Exception as err:  # surfaced by join()
            self.errors.append(err)
        finally:
            connection.close()

    def join(self, timeout=30):
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the background thread is stuck"
        assert self.errors == []


def test_reserve_answers_pending_with_a_queued_condition_and_charges_quota(tenant, make_node):
    make_node("node-a", gpus=2)
    reservation = queue(ask(2))
    assert reservation.status == "pending"
    assert reservation.conditions == [
        {"type": "Queued", "status": "True", "reason": "PoolLease", "message": "queued for the pool's placer"}
    ]
    stored = Reservation.objects.get(pk=reservation.pk)
    assert stored.conditions == reservation.conditions
    assert services.is_queued(stored)
    assert used() == 2  # charged at admission; the audit counts queued reservations as holding it
    assert Allocation.objects.count() == 0


def test_a_batch_places_oldest_first_and_each_plan_sees_the_ones_before_it(tenant, make_node):
    """
    node-a: [ ][ ][ ][ ]  ← five requests of 1 GPU for the same day: the four oldest fit
    """
    make_node("node-a", gpus=4)
    queued = [queue(ask(1)) for _ in range(5)]
    result = place_batch(Pool.objects.get(slug="lab-pool").pk, lease())
    assert result.placed == [r.pk for r in queued[:4]]
    assert result.pending == [queued[4].pk]
    assert DeviceBooking.objects.values("device_id").distinct().count() == 4
    last = Reservation.objects.get(pk=queued[4].pk)
    assert last.status == "pending"
    assert last.conditions == [
        {
            "type": "Unschedulable",
            "status": "True",
            "reason": "NoFit",
            "message": "no node fits (1 node): 1 × fits: 0 of 1 gpu free",
        }
    ]
    assert not services.is_queued(last)
    assert used() == 4  # the pending one's quota went back
    for r in queued[:4]:
        placed = Reservation.objects.get(pk=r.pk)
        assert placed.status == "placed" and placed.conditions == []


def test_batches_hold_at_most_max_batch_and_place_queued_runs_until_the_queue_is_empty(tenant, make_node):
    make_node("node-a", gpus=8)
    queued = [queue(ask(1)) for _ in range(5)]
    first = place_batch(Pool.objects.get(slug="lab-pool").pk, lease(max_batch=2))
    assert first.placed == [queued[0].pk, queued[1].pk]
    rest = place_queued(lease(max_batch=2))
    assert rest.placed == [r.pk for r in queued[2:]]
    assert not Reservation.objects.filter(status="pending").exists()


def test_a_lost_race_in_a_batch_is_replanned_without_the_node(tenant, other_tenant, make_node):
    """
    node-a: [ ][ ]  ← globex books both GPUs (inline) while the batch plans
    node-b: [ ][ ]
    """
    make_node("node-a", gpus=2)
    make_node("node-b", gpus=2)
    reservation = queue(ask(2))
    cfg = lease(plugins=(racer({"node-a": steal("node-a", ["node-b"])}),), top_n=1)
    result = place_batch(reservation.pool_id, cfg)
    assert result.placed == [reservation.pk]
    assert result.lost == ["an atom on node-a was booked concurrently"]
    assert services.allocations_of(reservation)[0]["nodeId"] == "node-b"


def test_a_lost_race_rolls_back_the_later_plans_and_sends_them_again(tenant, other_tenant, make_node):
    """
    node-a: [ ][ ]  ← the oldest plan lands here, then globex takes both GPUs
    node-b: [ ][ ]  ← the second plan's node; the first moves to node-c
    node-c: [ ][ ]
    """
    for name in ("node-a", "node-b", "node-c"):
        make_node(name, gpus=2)
    first, second = queue(ask(2)), queue(ask(2))
    cfg = lease(plugins=(racer({"node-a": steal("node-a", ["node-b", "node-c"])}),), top_n=1)
    result = place_batch(first.pool_id, cfg)
    assert result.placed == [first.pk, second.pk]
    assert result.lost == ["an atom on node-a was booked concurrently"]
    nodes = {services.allocations_of(r)[0]["nodeId"] for r in (first, second)}
    assert nodes == {"node-b", "node-c"}
    assert Allocation.objects.filter(reservation__in=[first.pk, second.pk]).count() == 2


def test_a_node_cordoned_after_the_batch_planned_is_replanned_and_the_plans_before_it_still_place(
    tenant, make_node
):
    """
    node-a: [ ][ ]  ← the first plan lands here and stays
    node-b: [ ][ ]  ← the second plan's node, cordoned once the batch planned; it moves to node-c
    node-c: [ ][ ]
    """
    for name in ("node-a", "node-b", "node-c"):
        make_node(name, gpus=2)
    first, second = queue(ask(2)), queue(ask(2))
    cfg = lease(plugins=(racer({"node-b": lambda: nodes.cordon("node-b")}),), top_n=1)
    result = place_batch(first.pool_id, cfg)
    assert result.placed == [first.pk, second.pk]
    assert result.lost == ["node-b is no longer schedulable"]
    assert services.allocations_of(first)[0]["nodeId"] == "node-a"
    assert services.allocations_of(second)[0]["nodeId"] == "node-c"
    assert Allocation.objects.count() == 2
    assert DeviceBooking.objects.count() == 4


def test_a_batch_commits_on_a_node_dedicated_to_its_tenant_and_not_on_one_dedicated_to_another(
    tenant, other_tenant, make_node
):
    """
    node-a: [ ][ ]  dedicated to acme: acme's request lands here
    node-b: [ ][ ]  dedicated to globex, after globex's request was planned on it
    """
    make_node("node-a", gpus=2)
    make_node("node-b", gpus=2)
    nodes.dedicate("node-a", "acme")
    ours, theirs = queue(ask(2)), queue(ask(2, tenant="globex", excludeNodes=["node-a"]))
    cfg = lease(plugins=(racer({"node-b": lambda: nodes.dedicate("node-b", "acme")}),), top_n=1)
    result = place_batch(ours.pool_id, cfg)
    assert result.placed == [ours.pk]
    assert result.pending == [theirs.pk]
    assert services.allocations_of(ours)[0]["nodeId"] == "node-a"
    assert result.lost == ["node-b is no longer schedulable"]


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


def test_wait_holds_the_answer_until_the_batch_ran(tenant, make_node, pool):
    make_node("node-a", gpus=2)
    stop = threading.Event()
    worker = Background(lambda: serve(lease(), interval=None, stop=stop))
    try:
        reservation = queue({**ask(1), "wait": {"timeoutMs": 10_000}})
    finally:
        stop.set()
        worker.join()
    assert reservation.status == "placed"
    assert services.allocations_of(reservation)[0]["nodeId"] == "node-a"


def test_wait_answers_queued_when_the_time_is_up(tenant, make_node):
    make_node("node-a", gpus=2)
    started = time.monotonic()
    reservation = queue({**ask(1), "wait": {"timeoutMs": 150}})
    assert time.monotonic() - started >= 0.15
    assert services.is_queued(reservation)
    place_queued(lease())  # leaves nothing queued behind


@pytest.mark.parametrize("wait", [{"timeoutMs": 30_001}, {"timeoutMs": -1}, {"timeoutMs": "5"}, 5, {"ms": 5}])
@pytest.mark.parametrize("placer", ["inline", "pool-lease"])
def test_wait_must_be_timeout_ms_up_to_30_s(tenant, make_node, wait, placer):
    with pytest.raises(CapacityError) as err:
        services.reserve({**ask(1), "wait": wait}, config=config(placer=placer))
    assert err.value.code == "INVALID_INPUT"
    assert err.value.message == "wait must be {timeoutMs} with 0 to 30000 milliseconds"
    assert not Reservation.objects.exists()


def test_gangs_and_instances_still_place_inline(tenant, make_node):
    make_node("node-a", gpus=2)
    make_node("node-b", gpus=2)
    gang = services.reserve(ask(1, gang={"size": 2}), config=lease(), now=NOW).reservation
    assert gang.status == "placed"
    assert len(services.allocations_of(gang)) == 2
    booking = port.reserve_for_instance(
        instance_id="vm-1",
        tenant="acme",
        pool="lab-pool",
        devices=[{"class": "gpu", "count": 1}],
        duration="1h",
        config=lease(),
    )
    assert booking.status == "placed"
    assert not Reservation.objects.filter(conditions__contains=[{"type": "Queued"}]).exists()


def test_retry_pending_leaves_queued_reservations_to_the_placer(tenant, make_node, pool):
    make_node("node-a", gpus=2)
    reservation = queue(ask(1))
    assert services.retry_pending([pool.pk], config=config()) == 0
    assert services.is_queued(Reservation.objects.get(pk=reservation.pk))
    place_queued(lease())


def test_run_placer_once_places_the_queue(tenant, make_node, settings):
    make_node("node-a", gpus=1)
    from django.utils import timezone

    settings.CAPACITY = {**settings.CAPACITY, "PLACER": "pool-lease"}
    # By the real clock: the round's housekeeping releases windows that have ended by it.
    soon = ask(1, start=from_real_now(1))
    first = services.reserve(soon, config=lease(), now=timezone.now()).reservation
    second = services.reserve(soon, config=lease(), now=timezone.now()).reservation
    out = io.StringIO()
    call_command("run_placer", "--once", stdout=out)
    assert Reservation.objects.get(pk=first.pk).status == "placed"
    assert Reservation.objects.get(pk=second.pk).status == "pending"
    assert out.getvalue() == "batched 1 placed, 1 pending\nreleased 0 ended, placed 0 pending\n"


def test_queued_submitters_inline_clients_and_two_placers_race_without_double_booking(make_node):
    """
    3 nodes × 4 GPUs, 8 vcpu each; requests take 1 GPU and 2 vcpu: 12 placements in all. Four
    clients queue, four book inline, two workers drain the queue, all at once.
    """
    from inventory.models import NodeLabel, NodeResource

    for i in range(3):
        node = make_node(f"node-{i}", gpus=4, vcpu=8)
        NodeLabel.objects.create(node=node, key="bc.dev/cap.devices.limits", value="1", source="system")
    for i in range(8):
        make_tenant(f"t{i}", f"Tenant {i}")
    start = threading.Barrier(10)
    stop = threading.Event()
    # The settings' random top-N pick, so placements spread as in production and still collide.
    batching = dataclasses.replace(placer_config(), placer="pool-lease")

    def client(i):
        cfg = batching if i < 4 else placer_config()
        start.wait()
        for _ in range(3):
            services.reserve(ask(1, tenant=f"t{i}", resources={"vcpu": 2}), config=cfg, now=NOW)

    def placer():
        start.wait()
        serve(batching, interval=None, stop=stop)

    clients = [Background(client, i) for i in range(8)]
    placers = [Background(placer) for _ in range(2)]
    for c in clients:
        c.join(120)
    deadline = time.monotonic() + 60
    while Reservation.objects.filter(conditions__contains=[{"type": "Queued"}]).exists():
        assert all(not p.errors for p in placers), [p.errors for p in placers]
        assert time.monotonic() < deadline, "the queue never drained"
        time.sleep(0.01)
    stop.set()
    for p in placers:
        p.join(60)
    assert Reservation.objects.count() == 24
    assert Reservation.objects.filter(status="placed").count() == 12
    assert DeviceBooking.objects.count() == 12
    assert DeviceBooking.objects.values("device_id").distinct().count() == 12
    for node in NodeResource.objects.filter(resource="vcpu").values_list("node_id", flat=True):
        claims = ScalarClaim.objects.filter(node_id=node, resource="vcpu")
        assert peak([(c.during.lower, c.during.upper, c.amount) for c in claims], NOW - YEAR, NOW + YEAR) <= 8
    pending = Reservation.objects.filter(status="pending")
    assert pending.count() == 12
    assert all(r.condition("Unschedulable") for r in pending)


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


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_batch_plans_from_its_ledger_like_planning_the_whole_pool(tenant, make_node, seed):
    """
    40 nodes of 8 GPUs and 64 vcpu: NV boards, PIX/SYS boxes and boards with unknown links, some
    cordoned, random bookings with vcpu claims; the batch plans 10 nodes first, widening as needed.
    """
    rng = random.Random(seed)
    for i in range(40):
        make_node(f"n{i:02d}", gpus=8, vcpu=64, links=rng.choice(["NV", "NV", "PIX", "SYS", None]))
        if rng.random() < 0.1:
            nodes.cordon(f"n{i:02d}")
    for _ in range(40):
        services.reserve(
            ask(rng.choice([1, 2, 4]), start=rng.choice([0, 0, 30]), resources={"vcpu": rng.choice([8, 24])}),
            config=config(),
            now=NOW,
        )
    pool = load_pool("lab-pool")
    static = pool_index(pool)
    asks = [
        (gpus, top_n, vcpu, start)
        for gpus, top_n in ((1, 5), (2, 5), (3, 5), (4, 5), (8, 5), (1, 6), (2, 1))
        for vcpu, start in ((0, 0), (40, 0), (16, 30))
    ]
    ledger = Ledger.load(pool, static, [Window(MS, MS + 60 * HOUR)])
    for gpus, top_n, vcpu, start in asks:
        cfg = config(top_n=top_n)
        request = validate_request({**ask(gpus, start=start, resources={"vcpu": vcpu}), "reservationId": "r"})
        batched, _index = plan_from_ledger(request, pool, cfg, static, ledger)
        full, _ = plan_request(request, pool, cfg, shortlist=False)
        assert batched.ranked[:top_n] == full.ranked[:top_n], (gpus, top_n, vcpu, start)
        assert batched.choice == full.choice
        assert batched.pending_reason() == full.pending_reason()


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


def test_a_queued_gang_is_placed_whole_by_the_inline_placer_after_the_lock(tenant, make_node, pool):
    """reserve() never queues a gang; one queued otherwise (an older release, a script) still lands."""
    from capacity.models.reservations import QUEUED_CONDITION

    make_node("node-a", gpus=2)
    make_node("node-b", gpus=2)
    data = ask(1, gang={"size": 2})
    placement = dict(data)
    reservation = Reservation.objects.create(
        tenant=tenant,
        pool=pool,
        request={"input": data, "placement": placement},
        conditions=[{"type": QUEUED_CONDITION, "status": "True", "reason": "PoolLease", "message": "queued"}],
        starts_at=datetime.fromtimestamp(data["during"]["start"] / 1000, UTC),
        ends_at=datetime.fromtimestamp(data["during"]["end"] / 1000, UTC),
    )
    from capacity.placers import quota

    window = Window(data["during"]["start"], data["during"]["end"])
    quota.charge(tenant.pk, tenant.slug, reservation.pk, {"gpu": 2}, window)  # as admission would have
    result = place_batch(pool.pk, lease())
    assert result.placed == [reservation.pk]
    assert sorted(a["nodeId"] for a in services.allocations_of(reservation)) == ["node-a", "node-b"]


def test_the_worker_wakes_as_soon_as_a_reservation_is_queued(tenant, make_node, monkeypatch):
    from capacity import worker

    monkeypatch.setattr(worker, "STOP_POLL", 30.0)  # only the queue's notification wakes it in time
    make_node("node-a", gpus=2)
    stop, rounds = threading.Event(), []
    thread = Background(lambda: worker.serve(lease(), interval=None, stop=stop, report=rounds.append))

    def placed_soon(reservation):
        deadline = time.monotonic() + 5
        while Reservation.objects.get(pk=reservation.pk).status != "placed":
            assert time.monotonic() < deadline and not thread.errors, "the worker did not wake"
            time.sleep(0.01)

    try:
        deadline = time.monotonic() + 10
        while not rounds:  # the first round ran; the worker now waits on the channel
            assert time.monotonic() < deadline and not thread.errors, thread.errors
            time.sleep(0.01)
        placed_soon(queue(ask(1)))
        placed_soon(queue(ask(1)))  # and again, after the wait that followed the first batch
    finally:
        stop.set()
        with connection.cursor() as cur:  # wake it once more, to see the stop
            cur.execute("SELECT pg_notify(%s, '')", [QUEUED_CHANNEL])
        thread.join()


def test_after_a_batch_that_was_not_full_the_worker_lingers_for_its_empty_share_and_not_after_a_full_one(
    tenant, make_node
):
    """Three queued, batches of four: the first batch leaves a quarter empty, so the worker waits a
    quarter of the linger before it looks again; the same three with batches of three wait not at all."""
    make_node("node-a", gpus=8)
    waits = []
    for batch in (4, 3):
        cfg = lease(max_batch=batch, linger=0.2)
        queued = [queue(ask(1), cfg=cfg) for _ in range(3)]
        stop = threading.Event()
        stop.set()  # one round that places, then one that finds the queue empty and stops
        rounds = []
        serve(cfg, interval=None, stop=stop, report=rounds.append, sleep=waits.append)
        assert [len(r.batch) for r in rounds] == [3, 0]
        assert {r.status for r in Reservation.objects.filter(pk__in=[q.pk for q in queued])} == {"placed"}
        assert waits == [pytest.approx(0.05)]


def test_the_linger_setting_is_read_in_milliseconds_and_checked(settings):
    settings.CAPACITY = {**settings.CAPACITY, "BATCH_LINGER_MS": 25}
    assert placer_config().linger == pytest.approx(0.025)
    settings.CAPACITY = {**settings.CAPACITY, "BATCH_LINGER_MS": 1001}
    with pytest.raises(ImproperlyConfigured, match=r"BATCH_LINGER_MS'\] must be between 0 and 1000"):
        placer_config()


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


def test_three_lost_races_in_a_batch_leave_it_pending_with_every_reason_and_refunded(
    tenant, other_tenant, make_node
):
    from inventory.models import Device

    for name in ("node-a", "node-b", "node-c"):
        make_node(name, gpus=2)

    def break_a_gpu():
        gpu = Device.objects.get(uuid="GPU-node-c-1")
        gpu.healthy = False
        gpu.save()  # through the model, so the rollup follows

    actions = {
        "node-a": steal("node-a", ["node-b", "node-c"]),
        "node-b": lambda: nodes.cordon("node-b"),
        "node-c": break_a_gpu,
    }
    reservation = queue(ask(2))
    result = place_batch(reservation.pool_id, lease(plugins=(racer(actions),), top_n=1))
    assert result.pending == [reservation.pk]
    message = (
        "Unschedulable after 3 conflicting attempts: an atom on node-a was booked concurrently; "
        "node-b is no longer schedulable; an atom on node-c turned unhealthy or unbookable"
    )
    assert Reservation.objects.get(pk=reservation.pk).condition("Unschedulable")["message"] == message
    assert used() == 0


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"PLACER": "batch"}, "CAPACITY['PLACER'] must be one of inline, pool-lease, not 'batch'"),
        ({"MAX_BATCH": 65}, "CAPACITY['MAX_BATCH'] must be between 1 and 64"),
        ({"MAX_BATCH": 0}, "CAPACITY['MAX_BATCH'] must be between 1 and 64"),
    ],
)
def test_an_unknown_placer_or_a_batch_past_64_stops_start_up(settings, change, message):
    from django.core.exceptions import ImproperlyConfigured

    settings.CAPACITY = {**settings.CAPACITY, **change}
    with pytest.raises(ImproperlyConfigured) as err:
        placer_config()
    assert str(err.value) == message


def test_wait_inside_a_transaction_answers_at_once_the_row_not_yet_visible_to_the_placer(tenant, make_node):
    make_node("node-a", gpus=2)
    started = time.monotonic()
    with transaction.atomic():
        reservation = queue({**ask(1), "wait": {"timeoutMs": 5_000}})
    assert time.monotonic() - started < 2
    assert services.is_queued(reservation)
    place_queued(lease())


def test_waiting_holds_no_connection_and_a_tenant_has_a_bound_on_waits(tenant, other_tenant, make_node):
    """
    node-a: 16 GPUs. acme starts 10 waits and globex 2, with no placer running: 8 of acme's and
    globex's 2 wait, holding no connection each; acme's other 2 answer at once, queued. One batch
    then places all 12 and answers every waiter.
    """
    from capacity import waits

    make_node("node-a", gpus=16)
    answers = {}

    def waiter(i, tenant="acme"):
        reservation = services.reserve(
            {**ask(1, tenant=tenant), "wait": {"timeoutMs": 20_000}}, config=lease(), now=NOW
        ).reservation
        answers[(tenant, i)] = (reservation.status, time.monotonic())

    threads = [Background(waiter, i) for i in range(10)] + [Background(waiter, i, "globex") for i in range(2)]
    deadline = time.monotonic() + 20
    while len(answers) < 2 or waits.HUB.waits_of(tenant.pk) < 8 or waits.HUB.waits_of(other_tenant.pk) < 2:
        assert time.monotonic() < deadline, (answers, waits.HUB.waits_of(tenant.pk))
        time.sleep(0.02)
    assert [status for status, _ in answers.values()] == ["pending", "pending"]  # acme's two past the bound
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")
        (connections,) = cur.fetchone()
    assert connections <= 3, connections  # this test's, the listener's, at most one waiter reading
    placed_at = time.monotonic()
    place_queued(lease())
    for t in threads:
        t.join()
    woken = [at for status, at in answers.values() if status == "placed"]
    assert len(woken) == 10
    assert all(at - placed_at < 5 for at in woken)
