"""What if: the real planner replays demand on an in-memory copy of a pool and writes nothing."""

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from capacity.audit import audit
from capacity.placement import CapacityError
from devtools.bench.simulate import table_digests
from whatif.changes import Changes
from whatif.demand import Synthetic
from whatif.simulation import MAX_REQUESTS, Inputs, simulate

from booking import NOW, ask, reserve

pytestmark = pytest.mark.django_db

BUSY = Synthetic(count=300, seed=7, per_hour=40, mean_hours=8)


@pytest.fixture
def four_nodes(tenant, make_node):
    """
    lab-pool: n1 n2 n3 n4, each [gpu0..gpu7] NVLinked; tenant acme books there.
    """
    return [make_node(f"n{i}", gpus=8) for i in range(1, 5)]


def test_a_run_writes_nothing_to_any_capacity_or_inventory_table(four_nodes):
    reserve(ask(4, hours=30))
    before = table_digests()
    result = simulate(Inputs("lab-pool", synthetic=BUSY, changes=Changes(add=(("n1", 4),), remove=("n2",))))
    assert result["changed"]["nodes"] == 7 and result["baseline"]["nodes"] == 4
    assert table_digests() == before
    assert audit() == []


def test_the_same_seed_and_inputs_give_the_same_output_byte_for_byte(four_nodes):
    inputs = Inputs("lab-pool", synthetic=BUSY, changes=Changes(weights={"binpack": 3.0}, top_n=2), seed=5)
    once = json.dumps(simulate(inputs))
    assert json.dumps(simulate(inputs)) == once
    other = json.dumps(
        simulate(Inputs("lab-pool", synthetic=Synthetic(count=300, seed=8, per_hour=40), seed=5))
    )
    assert other != once


def test_added_nodes_shorten_the_waits_and_place_more_at_once(four_nodes):
    result = simulate(Inputs("lab-pool", synthetic=BUSY, changes=Changes(add=(("n1", 4),))))
    base, changed = result["baseline"], result["changed"]
    assert base["requests"] == changed["requests"] == 300
    assert base["placedAtOnce"] < changed["placedAtOnce"]
    assert base["waitP95Minutes"] > changed["waitP95Minutes"]
    assert changed["gpus"] == 64 and base["gpus"] == 32
    assert changed["largestFreeBlock"][0] == {"hour": 0.0, "freeGpus": 64.0, "largestFreeBlock": 8.0}


def test_every_request_is_placed_waits_or_is_never_placed_and_the_figures_add_up(four_nodes):
    side = simulate(Inputs("lab-pool", synthetic=BUSY))["baseline"]
    assert side["placed"] + side["neverPlaced"] == side["requests"]
    assert side["placedAtOnce"] <= side["placed"]
    assert side["waitP50Minutes"] <= side["waitP95Minutes"]
    assert sum(t["requests"] for t in side["tenants"]) == 300
    assert round(sum(t["gpuHours"] for t in side["tenants"]), 0) == round(side["gpuHoursBooked"], 0)
    assert side["preemptions"] > 0  # 10 % spot in a busy pool: regular work takes some back
    assert len(side["largestFreeBlock"]) == 200
    assert all(0 <= p["largestFreeBlock"] <= 8 and 0 <= p["freeGpus"] <= 32 for p in side["largestFreeBlock"])


def test_a_request_too_big_for_the_changed_pool_is_never_placed(four_nodes):
    gangs = Synthetic(count=20, seed=1, gang_share=1.0)  # gangs of 2 to 4 whole nodes
    result = simulate(Inputs("lab-pool", synthetic=gangs, changes=Changes(remove=("n1", "n2", "n3"))))
    assert result["baseline"]["neverPlaced"] == 0
    assert result["changed"]["neverPlaced"] == 20


def test_recorded_demand_replays_the_reservations_created_in_the_period(four_nodes):
    for hours in (4, 8, 12):
        reserve(ask(8, hours=hours))
    since = timezone.now() - timedelta(days=1)  # created_at is the real clock's
    result = simulate(Inputs("lab-pool", since=since, until=since + timedelta(days=2)))
    assert result["changed"] is None
    side = result["baseline"]
    assert (side["requests"], side["placedAtOnce"]) == (3, 3)
    assert side["gpuHoursBooked"] == 8 * (4 + 8 + 12)


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        (Inputs("lab-pool", synthetic=Synthetic(count=MAX_REQUESTS + 1)), "--synthetic: from 1 to 100,000"),
        (Inputs("nowhere", synthetic=BUSY), "--pool: no pool 'nowhere'"),
        (Inputs("lab-pool", synthetic=BUSY, changes=Changes(add=(("n9", 2),))), "--add-nodes: no node 'n9'"),
        (Inputs("lab-pool", synthetic=BUSY, changes=Changes(remove=("rack=r9",))), "--remove-nodes: no node"),
        (
            Inputs("lab-pool", synthetic=BUSY, changes=Changes(weights={"speed": 1})),
            "--weights: no scorer 'speed'",
        ),
        (Inputs("lab-pool", synthetic=BUSY, changes=Changes(top_n=0)), "--top-n: from 1 to 50"),
        (
            Inputs("lab-pool", synthetic=BUSY, changes=Changes(remove=("n1",) * 101)),
            "--add-nodes, --remove-nodes, --restore-nodes: at most 100 of each",
        ),
        (Inputs("lab-pool"), "demand: give a period (--from and --to) or --synthetic N"),
        (
            Inputs("lab-pool", since=NOW, until=NOW + timedelta(days=1)),
            "--from/--to: no reservation was created",
        ),
    ],
)
def test_bad_input_is_refused_before_anything_runs(four_nodes, inputs, message):
    before = table_digests()
    with pytest.raises(CapacityError) as refused:
        simulate(inputs, progress=lambda *a: pytest.fail("a refused run placed a request"))
    assert message in refused.value.message
    assert table_digests() == before


def test_the_command_prints_both_sides_and_json(four_nodes):
    out = StringIO()
    call_command("simulate", "--pool", "lab-pool", "--synthetic", "50", "--add-nodes", "n1=2", stdout=out)
    text = out.getvalue()
    assert "baseline" in text and "changed" in text and "placed at once" in text
    out = StringIO()
    call_command("simulate", "--pool", "lab-pool", "--synthetic", "50", "--json", stdout=out)
    body = json.loads(out.getvalue())
    assert body["changed"] is None
    assert set(body["baseline"]) >= {
        "requests", "placed", "placedAtOnce", "neverPlaced", "waitP50Minutes", "waitP95Minutes",
        "gpuHoursBooked", "gpuHoursIdle", "preemptions", "largestFreeBlock",
    }  # fmt: skip


def test_the_command_refuses_malformed_options_with_a_clear_error(four_nodes):
    with pytest.raises(CommandError, match="--add-nodes: 'n1' is not SHAPE=COUNT"):
        call_command("simulate", "--pool", "lab-pool", "--synthetic", "5", "--add-nodes", "n1")
    with pytest.raises(CommandError, match="--weights: 'binpack' is not id=weight"):
        call_command("simulate", "--pool", "lab-pool", "--synthetic", "5", "--weights", "binpack")


def test_kept_node_timelines_answer_as_a_fresh_horizon_would(four_nodes, monkeypatch):
    """The engine keeps each node's timeline between searches; the placer's own path rebuilds them."""
    from capacity.placers.horizon import earliest_in, horizon_of
    from whatif import engine

    busy = Inputs("lab-pool", synthetic=Synthetic(count=200, seed=4, per_hour=60, mean_hours=10))
    kept = json.dumps(simulate(busy))
    assert json.loads(kept)["baseline"]["placedAtOnce"] < 200  # requests did wait

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
