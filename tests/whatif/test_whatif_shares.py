"""What if with shares: `--shares` is read and checked, borrowers are judged and reclaimed, tenants reported.

The engine tests place hand-made arrivals on lab-pool (4 nodes of 8 GPUs: 32 GPUs):

    hours   0 ........ 1 ........ 5 ........ 10
    globex  |==== 4 × 8 GPUs (the last two borrow) ====|
    acme               |== 8 ==|  (within its guarantee of 16: reclaims a borrower)
"""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from capacity.conf import placer_config
from capacity.placement import CapacityError, DeviceRequest, PlacementRequest, Window
from capacity.placers.index import pool_index
from capacity.placers.loader import load_pool
from devtools.bench.simulate import table_digests
from policy.share_verdict import Share
from whatif.changes import Changes
from whatif.demand import HOUR, Arrival, Synthetic
from whatif.engine import Booked, Engine
from whatif.shares import parse_shares, spec_text
from whatif.simulation import Inputs, simulate

EVEN = {"acme": Share(16), "globex": Share(16)}


def arrival(at_hours, tenant, gpus, start_hours, end_hours, priority="regular"):
    start, end = int(start_hours * HOUR), int(end_hours * HOUR)
    return Arrival(
        int(at_hours * HOUR),
        PlacementRequest(
            tenant_id=tenant,
            pool_id="lab-pool",
            during=Window(start, end),
            devices=(DeviceRequest("gpu", gpus),),
            priority=priority,
        ),
    )


GLOBEX_FILLS = [arrival(0, "globex", 8, 0, 10) for _ in range(4)]


def test_shares_are_read_as_tenant_guaranteed_borrowing_and_lending():
    assert parse_shares(["acme=500", " globex=300:100 ", "initech=200::50", "umbrella=0:0:0"]) == (
        ("acme", 500, None, None),
        ("globex", 300, 100, None),
        ("initech", 200, None, 50),
        ("umbrella", 0, 0, 0),
    )
    assert [spec_text(s) for s in parse_shares(["a=5", "b=5:1", "c=5::2", "d=5:1:2"])] == [
        "a=5", "b=5:1", "c=5::2", "d=5:1:2",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("items", "message"),
    [
        (["acme=x"], "--shares: 'acme=x': 'x' is not a whole number of GPUs, 0 or more"),
        (["acme=-5"], "--shares: 'acme=-5': '-5' is not a whole number of GPUs, 0 or more"),
        (["acme=5:-1"], "'-1' is not a whole number of GPUs"),
        (["acme=2.5"], "'2.5' is not a whole number of GPUs"),
        (["acme"], "--shares: 'acme' is not TENANT=GUARANTEED[:BORROW[:LEND]]"),
        (["=5"], "is not TENANT=GUARANTEED"),
        (["acme=1:2:3:4"], "is not TENANT=GUARANTEED"),
        (["acme="], "'' is not a whole number"),
        (["acme=1", "acme=2"], "--shares: 'acme' is named more than once"),
    ],
)
def test_a_malformed_share_is_refused_with_the_option_named(items, message):
    with pytest.raises(CapacityError) as refused:
        parse_shares(items)
    assert message in refused.value.message


@pytest.fixture
def four_nodes(tenant, other_tenant, make_node):
    """lab-pool: n1 n2 n3 n4, each [gpu0..gpu7] NVLinked; acme and globex book there."""
    return [make_node(f"n{i}", gpus=8) for i in range(1, 5)]


def engine_for(shares):
    pool = load_pool("lab-pool")
    return Engine(pool, pool_index(pool), placer_config(), 14 * 24 * HOUR, shares)


@pytest.mark.django_db
def test_a_tenant_within_its_guarantee_reclaims_what_another_borrowed_and_nothing_else(four_nodes):
    engine = engine_for(EVEN)
    acme = [arrival(1, "acme", 8, 1, 5) for _ in range(3)]
    side = engine.run([*GLOBEX_FILLS, *acme])
    globex = [b for b in side.bookings if b.tenant == "globex"]
    assert [b.borrowed for b in globex] == [0, 0, 8, 8]  # past its 16 from the third on
    # acme's first two fit within its 16 GPUs: each takes back one borrowing booking, at its start.
    assert side.reclaims == 2 and side.tenants["globex"]["reclaims"] == 2
    assert [(b.start, b.end) for b in globex] == [(0, 10 * HOUR)] * 2 + [(0, 1 * HOUR)] * 2
    # The third would take acme past its guarantee: it reclaims nothing and waits for room.
    assert side.at_once == 4 + 2
    assert side.tenant_waits["acme"] == [0, 0, 4 * HOUR]
    assert side.preemptions == 0


@pytest.mark.django_db
def test_without_shares_nothing_is_reclaimed_and_the_request_waits(four_nodes):
    side = engine_for(None).run([*GLOBEX_FILLS, arrival(1, "acme", 8, 1, 5)])
    assert side.reclaims == 0 and all(b.borrowed == 0 for b in side.bookings)
    assert side.tenant_waits["acme"] == [9 * HOUR]  # until globex's bookings end at 10 h


@pytest.mark.django_db
def test_spot_work_goes_before_borrowed_work(four_nodes):
    arrivals = [
        *GLOBEX_FILLS[:3],
        arrival(0, "globex", 8, 0, 10, priority="spot"),
        arrival(1, "acme", 8, 1, 5),
    ]
    side = engine_for(EVEN).run(arrivals)
    assert (side.preemptions, side.reclaims) == (1, 0)


@pytest.mark.django_db
def test_a_booking_past_its_borrowing_limit_waits_until_the_shares_allow_it(four_nodes):
    shares = {"acme": Share(16), "globex": Share(16, borrowing_limit=8)}
    side = engine_for(shares).run([*GLOBEX_FILLS, arrival(1, "acme", 8, 1, 5)])
    globex = [b for b in side.bookings if b.tenant == "globex"]
    # The fourth would borrow 16: it starts when the first three end (10 h), borrowing nothing then.
    assert [(b.start // HOUR, b.borrowed) for b in globex] == [(0, 0), (0, 0), (0, 8), (10, 0)]
    assert side.tenant_waits["acme"] == [0] and side.reclaims == 0  # room was left for acme


@pytest.mark.django_db
def test_a_run_with_shares_reports_each_tenant_booked_waits_reclaims_and_borrowed(four_nodes):
    busy = Synthetic(count=300, seed=7, per_hour=40, mean_hours=8, spot_share=0)
    before = table_digests()
    result = simulate(
        Inputs(
            "lab-pool",
            synthetic=busy,
            changes=Changes(shares=(("acme", 24, None, None), ("globex", 8, 4, 0))),
        )
    )
    assert table_digests() == before
    base, changed = result["baseline"], result["changed"]
    assert base["shares"] == [] and base["reclaims"] == 0
    assert changed["shares"] == [
        {"tenant": "acme", "guaranteedGpus": 24, "borrowingLimitGpus": None, "lendingLimitGpus": None},
        {"tenant": "globex", "guaranteedGpus": 8, "borrowingLimitGpus": 4, "lendingLimitGpus": 0},
    ]
    rows = {row["tenant"]: row for row in changed["tenants"]}
    assert set(rows["acme"]) >= {
        "gpuHours", "waitP50Minutes", "waitP95Minutes", "reclaims", "gpuHoursBorrowed", "guaranteedGpus",
    }  # fmt: skip
    assert rows["acme"]["guaranteedGpus"] == 24 and rows["globex"]["guaranteedGpus"] == 8
    assert changed["reclaims"] == sum(row["reclaims"] for row in rows.values())
    # acme has the larger guarantee: it books more than globex once shares are on.
    assert rows["acme"]["gpuHours"] > rows["globex"]["gpuHours"]
    assert rows["acme"]["gpuHours"] - rows["globex"]["gpuHours"] > (
        {r["tenant"]: r for r in base["tenants"]}["acme"]["gpuHours"]
        - {r["tenant"]: r for r in base["tenants"]}["globex"]["gpuHours"]
    )


@pytest.mark.django_db
def test_the_baseline_places_under_the_pools_stored_shares(four_nodes, tenant, pool):
    from policy.models import PoolShare

    PoolShare.objects.create(pool=pool, tenant=tenant, guaranteed_gpus=16, borrowing_limit_gpus=2)
    result = simulate(Inputs("lab-pool", synthetic=Synthetic(count=40, seed=3), changes=Changes(top_n=2)))
    expected = [{"tenant": "acme", "guaranteedGpus": 16, "borrowingLimitGpus": 2, "lendingLimitGpus": None}]
    assert result["baseline"]["shares"] == result["changed"]["shares"] == expected


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("shares", "message"),
    [
        (["acme=x"], "--shares: 'acme=x': 'x' is not a whole number of GPUs, 0 or more"),
        (["acme=-1"], "'-1' is not a whole number of GPUs"),
        (["nobody=4"], "--shares: no tenant 'nobody'"),
        (["acme=20", "globex=13"], "--shares: the guarantees add up to 33 GPUs; the changed pool has 32"),
    ],
)
def test_the_command_refuses_bad_shares_and_runs_nothing(four_nodes, shares, message):
    args = ["simulate", "--pool", "lab-pool", "--synthetic", "20"]
    for share in shares:
        args += ["--shares", share]
    with pytest.raises(CommandError, match=message):
        call_command(*args, stdout=StringIO())


@pytest.mark.django_db
def test_the_command_prints_each_tenants_figures_under_shares(four_nodes):
    out = StringIO()
    args = ["simulate", "--pool", "lab-pool", "--synthetic", "120", "--rate", "40", "--mean-hours", "8"]
    call_command(*args, "--shares", "acme=24", "--shares", "globex=8:4:0", stdout=out)
    text = out.getvalue()
    assert "reclaims" in text
    assert "changed: tenants (shares: acme 24, globex 8 borrowing ≤ 4 lending ≤ 0)" in text
    assert "baseline: tenants (shares: none)" in text
    assert "borrowed" in text and "reclaimed" in text and "wait p50" in text
    out = StringIO()
    call_command(*args, "--shares", "acme=24", "--json", stdout=out)
    body = json.loads(out.getvalue())
    assert body["changed"]["shares"][0]["tenant"] == "acme"


def test_gpu_hours_borrowed_count_what_was_held_past_the_guarantee_instant_by_instant():
    from whatif.figures import borrowed_hours

    def held(start, end, gpus):
        return Booked(start * HOUR, end * HOUR, frozenset(), (), False, "acme", gpus, gpus)

    # 0-2 h: 12 held, 4 past 8; 2-3 h: 16, 8 past; 3-4 h: 4, none past.
    assert borrowed_hours([held(0, 3, 12), held(2, 3, 4), held(3, 4, 4)], 8) == 4 * 2 + 8 * 1
    assert borrowed_hours([held(0, 1, 2)], 0) == 2


def test_a_request_counts_whole_gpu_equivalents_and_a_lease_counts_none():
    from dataclasses import replace

    from capacity.placement import Gang
    from whatif.engine import requested_gpus

    eight = arrival(0, "acme", 8, 0, 1).request
    assert requested_gpus(eight) == 8
    assert requested_gpus(replace(eight, devices=(DeviceRequest("mig-3g.40gb", 2),))) == 6 / 7
    assert requested_gpus(replace(eight, gang=Gang(3))) == 24
    assert requested_gpus(replace(eight, lease=True)) is None  # its node decides how many


def test_a_refused_window_is_tried_again_from_the_next_booking_end():
    from whatif.engine import next_end

    def spans(*pairs):
        return [Booked(s, e, frozenset(), (), False, "acme", 1, 1) for s, e in pairs]

    assert next_end(spans((0, 5), (2, 9), (4, 4)), 3) == 5  # a booking cut to nothing never ends
    assert next_end(spans((0, 5)), 5) is None


@pytest.mark.django_db
def test_the_kept_free_index_answers_as_a_fresh_search_under_shares_spot_work_and_gangs(
    four_nodes, monkeypatch
):
    """Refused windows tried again later, reclaims and preemptions cut bookings short: the engine's
    kept index must answer every search as earliest_start over a horizon built afresh."""
    from capacity.placers.horizon import earliest_in, horizon_of
    from whatif import engine

    busy = Inputs(
        "lab-pool",
        synthetic=Synthetic(count=300, seed=11, per_hour=50, mean_hours=8, spot_share=0.3, gang_share=0.1),
        changes=Changes(shares=(("acme", 24, None, None), ("globex", 8, 4, 0))),
    )
    kept = json.dumps(simulate(busy))
    changed = json.loads(kept)["changed"]
    assert changed["placedAtOnce"] < 300 and changed["reclaims"] > 0 and changed["preemptions"] > 0

    def fresh(self, request, planner, latest=None):
        spans = {
            pk: [(b.start, b.end) for b in booked if b.end > b.start]
            for pk, booked in self.book.by_device.items()
        }
        horizon = horizon_of(self.index, {pk: s for pk, s in spans.items() if s}, [])
        latest = latest if latest is not None else request.during.start + self.horizon
        return earliest_in(request, self.pool, self.config, self.index, horizon, latest, planner)

    monkeypatch.setattr(engine.Engine, "earliest", fresh)
    assert json.dumps(simulate(busy)) == kept
