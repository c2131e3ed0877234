"""What if's kept earliest-start index: a search answers as one over the run's book read afresh.

lab-pool has 4 nodes of 8 GPUs. The hand-made arrivals (hours):

    0    two 8-GPU bookings 0-100 (A, B), 8 GPUs 0-2 (X), 8 GPUs 0-1 (Y)
    0    58 one-GPU bookings far ahead, then 8 GPUs 0-1: it waits for Y at 1 (the index is built)
    3    the 64th: the run sweeps what ended by 3 (X's and Y's bookings), then 16 GPUs: never placed
    3    8 GPUs 0.5-1.5 (backdated): X or Y, at once; the other one only lost ended bookings
    3    a gang of 2 × 8 GPUs 1-2: both free at 1.5, when the backdated booking ends
"""

import random
from dataclasses import replace

import pytest

from capacity.conf import placer_config
from capacity.placement import DeviceRequest, Gang, PlacementRequest, Window
from capacity.placers.horizon import earliest_in, horizon_of
from capacity.placers.index import pool_index
from capacity.placers.loader import load_pool
from whatif import engine
from whatif.demand import HOUR, Arrival
from whatif.engine import Engine

pytestmark = pytest.mark.django_db


@pytest.fixture
def four_nodes(tenant, make_node):
    return [make_node(f"n{i}", gpus=8) for i in range(1, 5)]


def arrival(at_hours, gpus, start_hours, end_hours, gang=None):
    start, end = int(start_hours * HOUR), int(end_hours * HOUR)
    request = PlacementRequest(
        tenant_id="acme",
        pool_id="lab-pool",
        during=Window(start, end),
        devices=(DeviceRequest("gpu", gpus),),
        gang=Gang(gang) if gang else None,
    )
    return Arrival(int(at_hours * HOUR), request)


ARRIVALS = [
    *[arrival(0, 8, 0, 100) for _ in range(2)],
    arrival(0, 8, 0, 2),
    arrival(0, 8, 0, 1),
    *[arrival(0, 1, 200 + i, 201 + i) for i in range(58)],
    arrival(0, 8, 0, 1),
    arrival(3, 16, 300, 301),
    arrival(3, 8, 0.5, 1.5),
    arrival(3, 8, 1, 2, gang=2),
]


def run():
    pool = load_pool("lab-pool")
    config = replace(placer_config(), random=random.Random(1).random)  # the same picks each run
    return Engine(pool, pool_index(pool), config, 14 * 24 * HOUR).run(ARRIVALS)


def fresh(self, request, planner, latest=None):
    """The earliest start over the run's live bookings read afresh, as the placer's own path does."""
    spans = {
        pk: [(b.start, b.end) for b in booked if b.end > b.start]
        for pk, booked in self.book.by_device.items()
    }
    horizon = horizon_of(self.index, {pk: s for pk, s in spans.items() if s}, [])
    latest = latest if latest is not None else request.during.start + self.horizon
    return earliest_in(request, self.pool, self.config, self.index, horizon, latest, planner)


def test_a_search_starting_before_the_last_sweep_reads_the_swept_nodes_again(four_nodes, monkeypatch):
    side = run()
    assert side.never == 1 and side.waits[-4:] == [0, HOUR, 0, HOUR // 2]  # the 16 GPUs have no wait
    gang = side.bookings[-1]
    assert (gang.start, len(gang.pks)) == (int(1.5 * HOUR), 16)  # not 2 h: what ended then was set aside
    kept = [(b.start, b.end, sorted(b.pks)) for b in side.bookings]
    monkeypatch.setattr(engine.Engine, "earliest", fresh)
    assert [(b.start, b.end, sorted(b.pks)) for b in run().bookings] == kept
