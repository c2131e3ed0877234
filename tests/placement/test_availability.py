"""Free capacity hour by hour: free atoms per class and the largest free NVLink block."""

from __future__ import annotations

import dataclasses

from capacity.placement.availability import HOUR_MS, availability, hour_starts, largest_clique

from .builders import a100_mig, dgx_h100, gpu, node, pcie_box, symmetric

# 2023-11-14 22:00 UTC, a whole hour.
T0 = 1_699_999_200_000
H = HOUR_MS


def gpus_of(view, *indexes):
    return [f"{view.id}-GPU-{i}" for i in indexes]


def booked(ids, start, end):
    return {i: [(start, end)] for i in ids}


def test_an_empty_pool_has_every_gpu_free_and_a_full_nvlink_block_every_hour():
    a, b = dgx_h100("a"), dgx_h100("b")
    found = availability([a, b], {}, T0, 24)
    assert found.totals == {"gpu": 16}
    assert found.free == {"gpu": (16,) * 24}
    assert found.nvlink == (8,) * 24
    assert found.nvlink_most == 8
    assert found.starts[:2] == (T0, T0 + H) and found.end == T0 + 24 * H


def test_a_booking_takes_every_hour_it_touches_and_not_the_hour_after_its_end():
    a, b = dgx_h100("a"), dgx_h100("b")
    # Four GPUs of a from 02:30 to 05:00: blocks 2, 3 and 4 (05:00 is free again).
    busy = booked(gpus_of(a, 0, 1, 2, 3), T0 + 2 * H + H // 2, T0 + 5 * H)
    found = availability([a, b], busy, T0, 8)
    assert found.free["gpu"] == (16, 16, 12, 12, 12, 16, 16, 16)
    # b stays whole, so the largest free NVLink block is 8 throughout.
    assert found.nvlink == (8,) * 8


def test_the_nvlink_block_is_the_largest_free_fully_linked_set_on_one_node():
    """Four GPUs where NVLink forms a triangle and a tail.

      GPU0 ==NV== GPU1
        \\\\        //
         NV      NV
           \\\\  //
           GPU2 ==NV== GPU3        GPU0-GPU3, GPU1-GPU3: SYS
    The largest fully NVLinked set is {0, 1, 2}; with GPU2 booked it is a pair, {0, 1}.
    """
    devices = [gpu("t", i) for i in range(4)]
    ids = [d.id for d in devices]
    pairs = {
        (ids[0], ids[1]): "NV4",
        (ids[0], ids[2]): "NV4",
        (ids[1], ids[2]): "NV4",
        (ids[2], ids[3]): "NV2",
    }
    pairs |= {(ids[0], ids[3]): "SYS", (ids[1], ids[3]): "SYS"}
    view = node("t", devices, links=symmetric(pairs))
    found = availability([view], booked([ids[2]], T0 + H, T0 + 2 * H), T0, 3)
    assert found.nvlink == (3, 2, 3)
    assert found.free["gpu"] == (4, 3, 4)


def test_a_fully_booked_pool_answers_zero_and_pcie_boards_have_no_nvlink_series():
    a = dgx_h100("a")
    full = availability([a], booked(gpus_of(a, *range(8)), T0 - H, T0 + 3 * H), T0, 4)
    assert full.free["gpu"] == (0, 0, 0, 8)
    assert full.nvlink == (0, 0, 0, 8)
    pcie = availability([pcie_box("p")], {}, T0, 2)
    assert pcie.nvlink is None and pcie.free == {"gpu": (8, 8)}


def test_mig_slices_count_in_their_class_and_a_booked_gpu_takes_its_slices():
    """a100_mig: GPU0 split into seven mig-1g.10gb slices, GPU1 whole; GPU0-GPU1 SYS."""
    view = a100_mig("m")
    # A whole-node lease books the split GPU itself: its slices go with it.
    busy = booked(["m-GPU-0"], T0, T0 + H) | booked(["m-MIG-0-3"], T0 + H, T0 + 2 * H)
    found = availability([view], busy, T0, 3)
    assert found.totals == {"gpu": 1, "mig-1g.10gb": 7}
    assert found.free == {"gpu": (1, 1, 1), "mig-1g.10gb": (0, 6, 7)}


def test_unhealthy_devices_are_not_counted():
    view = dgx_h100("a")
    sick = dataclasses.replace(view.devices[5], healthy=False)
    view = dataclasses.replace(view, devices=(*view.devices[:5], sick, *view.devices[6:]))
    found = availability([view], {}, T0, 1)
    assert found.totals == {"gpu": 7} and found.nvlink == (7,)


def test_the_first_block_runs_from_start_to_the_next_whole_hour():
    start = T0 + 20 * 60_000
    assert hour_starts(start, 3) == (start, T0 + H, T0 + 2 * H)
    a = dgx_h100("a")
    # Ended ten minutes before start: the first block is free although its hour is not.
    found = availability([a], booked(gpus_of(a, 0), T0, T0 + 10 * 60_000), start, 2)
    assert found.free["gpu"] == (8, 8)
    assert found.end == T0 + 2 * H


def test_nodes_of_one_shape_share_their_layout_by_position_not_by_id():
    a, b = dgx_h100("a"), dgx_h100("b")
    a, b = dataclasses.replace(a, shape=1), dataclasses.replace(b, shape=1)
    found = availability([a, b], booked(gpus_of(b, 7), T0, T0 + H), T0, 2)
    assert found.free["gpu"] == (15, 16)


def test_largest_clique_of_no_free_gpu_is_zero():
    assert largest_clique(0, (0b10, 0b01), {}) == 0
    assert largest_clique(0b11, (0b10, 0b01), {}) == 2
    assert largest_clique(0b11, (0, 0), {}) == 1
