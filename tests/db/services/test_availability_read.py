"""The availability chart's read: the pool's bookings as the placer sees them, hour by hour."""

from capacity import services
from capacity.services.pool_availability import pool_availability
from inventory.models import Device

from booking import NOW, ask, reserve


def test_free_gpus_per_hour_follow_the_bookings_placed_through_the_services(tenant, make_node):
    """node-a, node-b: 4 NVLinked GPUs each. 4 GPUs from +2 h to +5 h, then 1 GPU from +6 h to +7 h."""
    make_node("node-a", gpus=4)
    make_node("node-b", gpus=4)
    assert reserve(ask(4, start=2, hours=3)).reservation.status == "placed"
    assert reserve(ask(1, start=6, hours=1)).reservation.status == "placed"
    found = pool_availability("lab-pool", scope=services.EVERYONE, now=NOW, hours=8)
    assert found.free == {"gpu": (8, 8, 4, 4, 4, 8, 7, 8)}
    assert found.nvlink == (4, 4, 4, 4, 4, 4, 4, 4)


def test_the_largest_nvlink_block_is_what_a_nvlink_all_request_could_get_in_that_hour(tenant, make_node):
    """
    node-a, node-b: 4 NVLinked GPUs each; one GPU of each booked for the first 3 hours. The chart
    reads 3 then 4, and the preview agrees: 4 NVLinked GPUs fit from +3 h, not before.
    """
    make_node("node-a", gpus=4)
    make_node("node-b", gpus=4)
    for other in ("node-b", "node-a"):
        assert reserve(ask(1, hours=3, excludeNodes=[other])).reservation.status == "placed"
    found = pool_availability("lab-pool", scope=services.EVERYONE, now=NOW, hours=4)
    assert found.nvlink == (3, 3, 3, 4)
    for start, fits in ((2, False), (3, True)):
        data = ask(4, start=start, hours=1, topology="nvlink-all")
        assert services.preview(data, now=NOW).fits is fits
    assert services.preview(ask(3, hours=1, topology="nvlink-all"), now=NOW).fits


def test_a_whole_node_lease_takes_every_atom_and_the_slices_of_a_split_gpu(tenant, make_node):
    """node-a: 4 GPUs, GPU 3 split into two mig-3g.40gb slices. A one-hour lease of node-a empties it."""
    node = make_node("node-a", gpus=4)
    parent = node.devices.get(index=3)
    for i in range(2):
        Device.objects.create(
            node=node, uuid=f"MIG-a-{i}", device_class="mig-3g.40gb", parent=parent, index=i
        )
    data = ask(1, hours=1, binding="node")
    del data["devices"]
    assert reserve(data).reservation.status == "placed"
    found = pool_availability("lab-pool", scope=services.EVERYONE, now=NOW, hours=2)
    assert found.totals == {"gpu": 3, "mig-3g.40gb": 2}
    assert found.free == {"gpu": (0, 3), "mig-3g.40gb": (0, 2)}


def test_a_tenant_that_may_not_book_the_pool_reads_not_found(tenant, other_tenant, make_node, pool):
    import pytest

    from capacity.placement import CapacityError

    make_node("node-a", gpus=2)
    pool.tenants.add(tenant)  # the pool is acme's and no one else's
    assert pool_availability("lab-pool", scope=services.Scope(frozenset({"acme"})), now=NOW).totals == {
        "gpu": 2
    }
    with pytest.raises(CapacityError) as refused:
        pool_availability("lab-pool", scope=services.Scope(frozenset({"globex"})), now=NOW)
    assert refused.value.code == "NOT_FOUND"
