"""The earliest start: exact against the placer, over bookings, slices, scalars, gangs and leases."""

import pytest

from capacity.placement import CapacityError
from capacity.services.earliest_start import earliest

from booking import HOUR, MS, NOW, ask, config, reserve

pytestmark = pytest.mark.django_db


def first(data, **kw):
    return earliest(data, now=NOW, config=config(), **kw)


def test_a_request_that_fits_now_answers_its_own_start(tenant, make_node):
    make_node("n1", gpus=2)
    answer = first(ask(2, hours=4))
    assert answer.fits and answer.window.start == MS
    assert answer.candidates[0]["nodeId"] == "n1"


def test_the_answer_is_the_end_of_the_booking_in_the_way_and_is_exact(tenant, make_node):
    """
    n1: [gpu0 gpu1]   booked 0h-6h (1 gpu) and 0h-10h (1 gpu)
    n2: [gpu0 gpu1]   booked 0h-8h (2 gpus)
    A 2-gpu, 4-hour request fits first at 8h on n2.
    """
    make_node("n1", gpus=2)
    make_node("n2", gpus=2)
    assert reserve(ask(1, hours=6)).reservation.status == "placed"
    assert reserve(ask(1, hours=10)).reservation.status == "placed"
    assert reserve(ask(2, hours=8)).reservation.status == "placed"
    answer = first(ask(2, hours=4))
    assert answer.fits
    assert answer.window.start == MS + 8 * HOUR
    assert answer.window.end == MS + 12 * HOUR
    assert [c["nodeId"] for c in answer.candidates] == ["n2"]
    # Half an hour earlier does not place; at the answer it does.
    half = HOUR // 2
    early = reserve({**ask(2), "during": {"start": MS + 8 * HOUR - half, "end": MS + 12 * HOUR - half}})
    assert early.reservation.status == "pending"
    at = reserve(ask(2, start=8, hours=4))
    assert at.reservation.status == "placed"


def test_a_booking_that_starts_later_can_push_the_answer_past_its_end(tenant, make_node):
    """
    n1: [gpu0]  booked 0h-2h and 3h-20h
    A 4-hour request does not fit in the 1-hour gap at 2h: it fits at 20h.
    """
    make_node("n1", gpus=1)
    reserve(ask(1, hours=2))
    reserve(ask(1, start=3, hours=17))
    answer = first(ask(1, hours=4))
    assert answer.window.start == MS + 20 * HOUR


def test_nothing_within_the_horizon_says_so(tenant, make_node):
    make_node("n1", gpus=1)
    reserve(ask(1, hours=48))
    answer = first({**ask(1, hours=4), "horizon": "1d"})
    assert not answer.fits
    assert answer.reason == "no start fits before 2026-12-03T12:00Z (horizon 1d)"
    assert first({**ask(1, hours=4), "horizon": "2d"}).window.start == MS + 48 * HOUR


@pytest.mark.parametrize(
    ("horizon", "message"),
    [("91d", "horizon must be at most 90d"), ("soon", "horizon must look like 30m, 12h, 3d or 2w")],
)
def test_a_bad_horizon_is_invalid_input(tenant, make_node, horizon, message):
    make_node("n1", gpus=1)
    with pytest.raises(CapacityError) as err:
        first({**ask(1), "horizon": horizon})
    assert (err.value.code, err.value.message) == ("INVALID_INPUT", message)


def test_scalars_are_counted_over_the_shifted_window(tenant, make_node):
    """n1: 2 gpus, 16 vcpu; 12 vcpu claimed 0h-5h. A request for 8 vcpu fits at 5h."""
    make_node("n1", gpus=2, vcpu=16)
    from inventory.models import Node, NodeLabel

    node = Node.objects.get(name="n1")
    NodeLabel.objects.create(node=node, key="bc.dev/cap.devices.limits", value="1", source="system")
    assert reserve({**ask(1, hours=5), "resources": {"vcpu": 12}}).reservation.status == "placed"
    answer = first({**ask(1, hours=2), "resources": {"vcpu": 8}})
    assert answer.window.start == MS + 5 * HOUR


def test_a_gang_waits_until_enough_nodes_are_free_together(tenant, make_node):
    """
    n1 free; n2 booked 0h-3h; n3 booked 0h-6h. A gang of 3 one-gpu members fits at 6h.
    """
    for name in ("n1", "n2", "n3"):
        make_node(name, gpus=1)
    reserve({**ask(1, hours=3), "excludeNodes": ["n1", "n3"]})
    reserve({**ask(1, hours=6), "excludeNodes": ["n1", "n2"]})
    answer = first({**ask(1, hours=2), "gang": {"size": 3}})
    assert answer.window.start == MS + 6 * HOUR
    assert sorted(c["nodeId"] for c in answer.candidates) == ["n1", "n2", "n3"]


def test_a_lease_waits_for_the_whole_node(tenant, make_node):
    make_node("n1", gpus=2)
    reserve(ask(1, hours=5))
    lease = {k: v for k, v in ask(hours=2).items() if k != "devices"}
    answer = first({**lease, "binding": "node"})
    assert answer.fits and answer.window.start == MS + 5 * HOUR
    assert answer.candidates[0]["nodeId"] == "n1"


def test_a_never_fitting_request_is_named_not_searched(tenant, make_node):
    make_node("n1", gpus=8)
    answer = first(ask(9))
    assert not answer.fits
    assert answer.reason == "the largest node in lab-pool has 8 gpu"


def preview_fits(data, start_ms):
    from capacity import services

    length = data["during"]["end"] - data["during"]["start"]
    shifted = {**data, "during": {"start": start_ms, "end": start_ms + length}}
    return services.preview(shifted, now=NOW, config=config()).fits


@pytest.mark.parametrize("seed", range(4))
def test_no_earlier_moment_fits_and_the_answer_does(tenant, make_node, seed):
    """Random bookings on 4 nodes of 4 gpus; for shapes of 1 to 4 gpus the answer agrees with preview
    at the answer and at every booking end before it (and half an hour before it)."""
    import random

    from capacity.models import DeviceBooking

    rng = random.Random(seed)
    for i in range(4):
        make_node(f"n{i}", gpus=4)
    for _ in range(30):
        start = rng.randrange(0, 60)
        reserve(ask(rng.choice([1, 2, 3, 4]), start=start, hours=rng.randrange(1, 12)))
    ends = sorted({int(b.during.upper.timestamp() * 1000) for b in DeviceBooking.objects.all()})
    for gpus in (1, 2, 3, 4):
        data = ask(gpus, hours=rng.randrange(2, 9))
        answer = first(data)
        assert answer.fits
        at = answer.window.start
        assert preview_fits(data, at)
        for moment in [MS, *(e for e in ends if MS < e < at), at - HOUR // 2]:
            if MS <= moment < at:
                assert not preview_fits(data, moment), (gpus, moment)


def test_a_booked_slice_holds_its_gpu(tenant, make_node):
    """
    n1: gpu0 split into two slices (mig-1g), slice 0 booked 0h-5h. A whole gpu fits at 5h.
    """
    from inventory.models import Device, Node

    node = make_node("n1", gpus=1)
    gpu = Device.objects.get(node=node)
    for i in range(2):
        Device.objects.create(
            node=node, uuid=f"MIG-{i}", index=i, device_class="mig-1g", parent=gpu, numa_node=0
        )
    from capacity.rollups import refresh_rollups

    refresh_rollups([node.pool_id])
    slice_ask = {**ask(1, hours=5), "devices": [{"class": "mig-1g", "count": 1}]}
    assert reserve(slice_ask).reservation.status == "placed"
    assert Node.objects.count() == 1
    # The split GPU is not an atom: no whole GPU is offered at any time.
    answer = first(ask(1, hours=2))
    assert not answer.fits
    # A second slice fits now; two slices only once the first is gone.
    assert first({**slice_ask}).window.start == MS
    two = {**ask(hours=2), "devices": [{"class": "mig-1g", "count": 2}]}
    assert first(two).window.start == MS + 5 * HOUR


def test_a_never_fitting_reservation_is_pending_unsatisfiable_and_not_retried(tenant, make_node):
    from capacity import services

    make_node("n1", gpus=8)
    made = reserve(ask(9)).reservation
    assert made.status == "pending"
    types = [c["type"] for c in made.conditions]
    assert types == ["Unschedulable", "Unsatisfiable"]
    assert made.conditions[0]["message"] == "no node fits (1 node): 1 × fits: 8 of 9 gpu free"
    assert made.conditions[1]["message"] == "the largest node in lab-pool has 8 gpu"
    make_node("n2", gpus=1)
    services.retry_pending([made.pool_id], now=NOW, config=config())
    made.refresh_from_db()
    assert [c["type"] for c in made.conditions] == ["Unschedulable", "Unsatisfiable"]


def test_a_queued_never_fitting_request_is_not_queued(tenant, make_node):
    from capacity.placers.types import POOL_LEASE

    make_node("n1", gpus=8)
    result = services_reserve_queued(ask(1, devices=[{"class": "tpu", "count": 1}]), POOL_LEASE)
    conditions = result.reservation.conditions
    assert [c["type"] for c in conditions] == ["Unschedulable", "Unsatisfiable"]
    assert conditions[1]["message"] == "no node in lab-pool has class tpu: classes are gpu"


def services_reserve_queued(data, placer):
    from capacity import services

    return services.reserve(data, now=NOW, config=config(placer=placer))


def test_a_selector_key_nothing_carries_is_named_with_the_nearest_key(tenant, make_node):
    from inventory.models import Device

    make_node("n1", gpus=2)
    Device.objects.update(attributes={"gpuProduct": "H100"})
    data = ask(1, devices=[{"class": "gpu", "count": 1, "selector": "gpuproduct=H100"}])
    made = reserve(data).reservation
    assert (
        made.conditions[-1]["message"]
        == "no device or node in lab-pool has gpuproduct; did you mean gpuProduct?"
    )


def test_preview_hints_name_what_would_fit(tenant, make_node):
    """
    n1: 4 gpus, 2 booked 0h-6h     n2: 4 gpus, 1 booked 0h-3h
    An 4-gpu request fits nowhere now: from 3h on n2, or with 3 gpu on 1 node now.
    """
    from capacity import services

    make_node("n1", gpus=4)
    make_node("n2", gpus=4)
    reserve({**ask(2, hours=6), "excludeNodes": ["n2"]})
    reserve({**ask(1, hours=3), "excludeNodes": ["n1"]})
    answer = services.preview(ask(4, hours=2), now=NOW, config=config())
    assert not answer.fits
    assert answer.hints == ["fits from 2026-12-02T15:00Z on n2", "fits with 3 gpu on 1 node"]
    assert answer.unsatisfiable is None


def test_hints_drop_nvlink_and_selector_expressions_one_at_a_time(tenant, make_node):
    """
    n1: 2 gpus, links unknown, vramGiB 80      n2: 2 gpus, NVLink, vramGiB 120, booked 0h-4h
    """
    from capacity import services
    from inventory.models import Device

    make_node("n1", gpus=2, links=None)
    make_node("n2", gpus=2)
    Device.objects.filter(node__name="n1").update(attributes={"vramGiB": 80})
    Device.objects.filter(node__name="n2").update(attributes={"vramGiB": 120})
    reserve({**ask(2, hours=4), "excludeNodes": ["n1"]})
    nvlink = services.preview(ask(2, topology="nvlink-all"), now=NOW, config=config())
    assert nvlink.hints == [
        "fits from 2026-12-02T16:00Z on n2",
        "fits with 1 gpu on 1 node",
        "fits without nvlink-all on 1 node",
    ]
    big = ask(2, devices=[{"class": "gpu", "count": 2, "selector": "vramGiB>=100"}])
    answer = services.preview(big, now=NOW, config=config())
    assert answer.hints == ["fits from 2026-12-02T16:00Z on n2", "fits without `vramGiB >= 100`"]
    # No device at all has 200 GiB: that is no hint but a request no node could ever take.
    never = services.preview(
        ask(2, devices=[{"class": "gpu", "count": 2, "selector": "vramGiB>=200"}]), now=NOW, config=config()
    )
    assert never.hints == []
    assert never.unsatisfiable.startswith("no node in lab-pool could take it even with nothing booked: ")


def test_a_new_pending_reservation_carries_the_best_hint(tenant, make_node):
    make_node("n1", gpus=2)
    reserve(ask(2, hours=5))
    made = reserve(ask(1, hours=2)).reservation
    assert made.status == "pending"
    assert made.conditions[0]["hint"] == "fits from 2026-12-02T17:00Z on n1"
    assert made.conditions[0]["message"] == "no node fits (1 node): 1 × fits: 0 of 1 gpu free"


def test_a_gpu_booked_whole_before_it_was_split_and_a_later_slice_booking_block_only_their_own(
    tenant, make_node
):
    """
    GPU-n1-0: booked 0h-2h whole, then split into MIG-a and MIG-b; MIG-a booked 4h-6h.
    MIG-b is busy 0h-2h (its GPU's booking) and free 4h-6h, in whatever order the rows come.
    """
    from psycopg.types.range import Range

    from capacity.db.literals import to_datetime
    from capacity.models import Allocation, DeviceBooking
    from capacity.placement import Window
    from capacity.placers.horizon_reads import read_horizon
    from capacity.placers.index import pool_index
    from capacity.placers.loader import load_pool
    from inventory.models import Device

    node = make_node("n1", gpus=1)
    gpu = node.devices.get()

    def book(device, start_h, end_h):
        start, end = to_datetime(MS + start_h * HOUR), to_datetime(MS + end_h * HOUR)
        allocation = Allocation.objects.create(
            instance_id=f"vm-{device.uuid}", node=node, starts_at=start, ends_at=end, resources={}
        )
        DeviceBooking.objects.create(device=device, allocation=allocation, during=Range(start, end, "[)"))

    book(gpu, 0, 2)
    slices = [
        Device.objects.create(node=node, uuid=f"MIG-{c}", device_class="mig-3g.40gb", parent=gpu, index=i)
        for i, c in enumerate("ab")
    ]
    book(slices[0], 4, 6)
    index = pool_index(load_pool("lab-pool"))
    busy = read_horizon(index, Window(MS, MS + 12 * HOUR), ()).busy
    pk = index.nodes.device_pk
    assert sorted(busy[pk["MIG-b"]]) == [(MS, MS + 2 * HOUR)]
    assert sorted(busy[pk["MIG-a"]]) == [(MS, MS + 2 * HOUR), (MS + 4 * HOUR, MS + 6 * HOUR)]
    assert sorted(busy[pk["GPU-n1-0"]]) == [(MS, MS + 2 * HOUR), (MS + 4 * HOUR, MS + 6 * HOUR)]


def test_an_archived_pool_answers_that_it_is_archived(tenant, make_node, pool):
    make_node("n1", gpus=2)
    pool.archived = True
    pool.save()
    answer = first(ask(1))
    assert not answer.fits and answer.reason == "the pool is archived"
