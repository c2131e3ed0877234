"""sync_device_links: a topology matrix becomes the node's GPU links (database)."""

import itertools

import pytest
from ingest_helpers import apply_node_report, gpu_report, make_node

from inventory.ingest import IngestError, sync_device_links
from inventory.models import Device, DeviceLink, Node
from inventory.topology import parse_topo_matrix

from topo_samples import DGX_H100, PCIE_TWO_SOCKETS

pytestmark = pytest.mark.django_db


def links_of(node: Node) -> list[tuple[int, int, str, int]]:
    """Return the node's links as (GPU index a, GPU index b, rank, nvlinks), by index."""
    rows = DeviceLink.objects.filter(node=node).select_related("device_a", "device_b")
    return sorted((*sorted((r.device_a.index, r.device_b.index)), r.rank, r.nvlinks) for r in rows)


def test_sync_writes_28_nv18_links_for_8_gpus():
    node = make_node()

    written = sync_device_links(node, parse_topo_matrix(DGX_H100))

    assert written == 28
    assert links_of(node) == [(i, j, "NV", 18) for i, j in itertools.combinations(range(8), 2)]


def test_sync_stores_the_lower_device_id_first_whatever_the_gpu_order():
    node = make_node(reverse=True)

    sync_device_links(node, parse_topo_matrix(DGX_H100))

    pairs = list(DeviceLink.objects.filter(node=node).values_list("device_a_id", "device_b_id"))
    assert len(pairs) == 28
    assert all(a < b for a, b in pairs)


def test_sync_sets_numa_node_from_numa_affinity():
    node = make_node()

    sync_device_links(node, parse_topo_matrix(PCIE_TWO_SOCKETS))

    assert dict(node.devices.values_list("index", "numa_node")) == {i: 0 if i < 4 else 1 for i in range(8)}


def test_resync_replaces_the_previous_links():
    node = make_node()
    sync_device_links(node, parse_topo_matrix(DGX_H100))

    written = sync_device_links(node, parse_topo_matrix(PCIE_TWO_SOCKETS))

    assert written == 28
    ranks = dict(links_of_rank(node))
    assert ranks == {"PIX": 4, "PXB": 8, "SYS": 16}
    assert links_of(node)[0] == (0, 1, "PIX", 0)


def links_of_rank(node: Node) -> list[tuple[str, int]]:
    counts: dict[str, int] = {}
    for rank in DeviceLink.objects.filter(node=node).values_list("rank", flat=True):
        counts[rank] = counts.get(rank, 0) + 1
    return sorted(counts.items())


def test_sync_leaves_other_nodes_links_alone():
    node, other = make_node("dgx-01"), make_node("dgx-02")
    sync_device_links(other, parse_topo_matrix(DGX_H100))

    sync_device_links(node, parse_topo_matrix(PCIE_TWO_SOCKETS))

    assert DeviceLink.objects.filter(node=other).count() == 28
    assert set(DeviceLink.objects.filter(node=other).values_list("rank", flat=True)) == {"NV"}


def test_sync_refuses_a_gpu_the_node_lacks_and_keeps_the_old_links():
    node = make_node(gpus=8)
    sync_device_links(node, parse_topo_matrix(PCIE_TWO_SOCKETS))
    Device.objects.filter(node=node, index=7).delete()

    with pytest.raises(IngestError, match="GPU7: node dgx-01 has no gpu device at index 7"):
        sync_device_links(node, parse_topo_matrix(DGX_H100))

    assert DeviceLink.objects.filter(node=node).count() == 21
    assert not DeviceLink.objects.filter(node=node, rank="NV").exists()


def test_sync_links_a_replacement_gpu_not_the_unhealthy_one_it_replaced():
    node = make_node()
    report = gpu_report("dgx-01", range(8), topology=DGX_H100)
    report["devices"][3]["uuid"] = "GPU-dgx-01-3-new"

    apply_node_report(node, report)

    old, new = Device.objects.get(uuid="GPU-dgx-01-3"), Device.objects.get(uuid="GPU-dgx-01-3-new")
    assert (old.healthy, new.healthy) == (False, True)
    linked = set(DeviceLink.objects.filter(node=node).values_list("device_a_id", "device_b_id"))
    assert all(new.pk in pair or old.pk not in pair for pair in linked)
    assert sum(new.pk in pair for pair in linked) == 7


def test_sync_refuses_two_healthy_gpus_at_one_index():
    node = make_node()
    Device.objects.create(node=node, uuid="GPU-dup", index=3)

    with pytest.raises(IngestError, match="two healthy gpu devices at index 3: GPU-dgx-01-3 and GPU-dup"):
        sync_device_links(node, parse_topo_matrix(DGX_H100))


def test_sync_maps_gpus_to_whole_gpus_not_mig_slices():
    node = make_node(gpus=8)
    gpu0 = node.devices.get(index=0)
    Device.objects.create(node=node, uuid="MIG-dgx-01-0-0", device_class="gpu", parent=gpu0, index=1)

    sync_device_links(node, parse_topo_matrix(DGX_H100))

    linked = set(DeviceLink.objects.filter(node=node).values_list("device_a__uuid", flat=True))
    linked |= set(DeviceLink.objects.filter(node=node).values_list("device_b__uuid", flat=True))
    assert linked == {f"GPU-dgx-01-{i}" for i in range(8)}
