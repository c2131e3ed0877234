"""Ingestion of node reports and topology matrices, and the import_topology command (database)."""

import io
import itertools
import json
import sys

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connections

from inventory import ingest
from inventory.ingest import IngestError, sync_device_links
from inventory.management.commands.import_topology import Command as ImportTopology
from inventory.models import Device, DeviceLink, Node, NodeLabel, Pool, Site, Tenant
from inventory.signals import node_state_changed
from inventory.topology import parse_topo_matrix

from tenants import make_tenant
from topo_samples import DGX_H100, PCIE_TWO_SOCKETS

pytestmark = pytest.mark.django_db

H100 = {"gpuProduct": "H100-SXM5-80GB", "vramGiB": 80}


# These tests report as an operator (full rights); test_trust.py reports as the node itself.
OPERATOR = ingest.Reporter.operator("ops")


def apply_node_report(node, report):
    return ingest.apply_node_report(node, report, by=OPERATOR)


def apply_node_report_json(name, text):
    return ingest.apply_node_report_json(name, text, by=OPERATOR)


def make_node(name: str = "dgx-01", gpus: int = 8, *, reverse: bool = False) -> Node:
    """Create a node in its own pool with `gpus` GPUs; `reverse` gives the last GPU the lowest id."""
    tenant = Tenant.objects.filter(slug="acme").first() or make_tenant("acme", "Acme")
    site, _ = Site.objects.get_or_create(slug="fra1", defaults={"name": "Frankfurt 1"})
    pool = Pool.objects.create(slug=f"pool-{name}", name=f"Pool {name}", site=site)
    pool.tenants.add(tenant)
    node = Node.objects.create(name=name, pool=pool)
    order = range(gpus - 1, -1, -1) if reverse else range(gpus)
    for i in order:
        Device.objects.create(node=node, uuid=f"GPU-{name}-{i}", index=i, attributes=H100)
    return node


def gpu_report(node_name: str, indexes, **extra) -> dict:
    """Return a report listing healthy H100s at `indexes`."""
    devices = [
        {
            "uuid": f"GPU-{node_name}-{i}",
            "class": "gpu",
            "index": i,
            "numaNode": 0 if i < 4 else 1,
            "parent": None,
            "healthy": True,
            "attributes": H100,
        }
        for i in indexes
    ]
    return {"devices": devices, **extra}


@pytest.fixture
def signals():
    """Record node_state_changed sends as (pool_ids, woke)."""
    sent: list[tuple[set, bool]] = []

    def receiver(sender, pool_ids, woke, **kwargs):
        sent.append((pool_ids, woke))

    node_state_changed.connect(receiver, weak=False)
    yield sent
    node_state_changed.disconnect(receiver)


def links_of(node: Node) -> list[tuple[int, int, str, int]]:
    """Return the node's links as (GPU index a, GPU index b, rank, nvlinks), by index."""
    rows = DeviceLink.objects.filter(node=node).select_related("device_a", "device_b")
    return sorted((*sorted((r.device_a.index, r.device_b.index)), r.rank, r.nvlinks) for r in rows)


# sync_device_links


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


# apply_node_report


def test_report_creates_devices_bookable_with_their_attributes():
    node = make_node(gpus=0)

    result = apply_node_report(node, gpu_report("dgx-01", range(8)))

    assert result.created == 8
    assert result.devices == 8
    assert result.links is None
    devices = list(node.devices.order_by("index"))
    assert [d.uuid for d in devices] == [f"GPU-dgx-01-{i}" for i in range(8)]
    assert all(d.bookable and d.healthy and d.attributes == H100 for d in devices)
    assert [d.numa_node for d in devices] == [0, 0, 0, 0, 1, 1, 1, 1]


def test_report_updates_existing_devices_but_keeps_operator_bookable():
    node = make_node()
    Device.objects.filter(node=node, index=3).update(bookable=False, healthy=False)
    report = gpu_report("dgx-01", range(8))
    report["devices"][3]["attributes"] = {**H100, "eccErrors": 0}

    result = apply_node_report(node, report)

    gpu3 = node.devices.get(index=3)
    assert (gpu3.bookable, gpu3.healthy, gpu3.attributes["eccErrors"]) == (False, True, 0)
    assert result.created == 0
    assert result.became_healthy == 1
    assert node.devices.count() == 8


def test_report_marks_missing_devices_unhealthy_without_deleting_them():
    node = make_node()

    result = apply_node_report(node, gpu_report("dgx-01", range(6)))

    assert result.marked_unhealthy == 2
    assert node.devices.count() == 8
    assert set(node.devices.filter(healthy=False).values_list("index", flat=True)) == {6, 7}


def test_a_report_leaving_out_most_devices_needs_replace_and_changes_nothing_without_it():
    """A truncated report (one GPU of eight) is refused; with "replace": true the seven go unhealthy."""
    node = make_node()

    with pytest.raises(IngestError) as refused:
        apply_node_report(node, gpu_report("dgx-01", [0]))
    assert str(refused.value) == (
        "devices: the report leaves out 7 of the node's 8 healthy devices, which would mark them "
        'unhealthy; send "replace": true if they are gone'
    )
    assert not node.devices.filter(healthy=False).exists()

    result = apply_node_report(node, {**gpu_report("dgx-01", [0]), "replace": True})
    assert result.marked_unhealthy == 7


def test_a_field_left_out_of_a_listed_device_keeps_its_stored_value():
    """A device listed by uuid alone keeps its index, class, NUMA node and attributes."""
    node = make_node()
    Device.objects.filter(node=node, index=3).update(numa_node=1)

    apply_node_report(node, {"devices": [{"uuid": f"GPU-dgx-01-{i}"} for i in range(8)]})

    gpu3 = node.devices.get(uuid="GPU-dgx-01-3")
    assert (gpu3.index, gpu3.device_class, gpu3.numa_node, gpu3.attributes) == (3, "gpu", 1, H100)
    assert sorted(node.devices.values_list("index", flat=True)) == list(range(8))


def test_a_node_holds_at_most_256_devices():
    node = make_node(gpus=250)
    report = gpu_report("dgx-01", range(250))
    report["devices"] = report["devices"][:249] + [
        {"uuid": f"MIG-{i}", "index": i, "class": "mig-1g.10gb", "parent": "GPU-dgx-01-0"} for i in range(7)
    ]

    with pytest.raises(IngestError, match="devices: node dgx-01 would have 257 devices; at most 256"):
        apply_node_report(node, report)
    assert node.devices.count() == 250


def test_what_a_report_changed_is_one_row_of_the_node_history():
    from inventory.node_changelog import entries, node_history

    node = make_node(gpus=2)
    apply_node_report(node, gpu_report("dgx-01", range(3), labels={"gpu.product": "H100"}))
    apply_node_report(node, gpu_report("dgx-01", range(3), labels={"gpu.product": "H100"}))  # no change

    rows = [e for e in entries(node_history(node)) if e.action == "report"]
    assert [(e.change, e.reason) for e in rows] == [("report: 1 devices added", "node report")]


def test_report_sets_health_from_the_report():
    node = make_node()
    report = gpu_report("dgx-01", range(8))
    report["devices"][5]["healthy"] = False

    result = apply_node_report(node, report)

    assert result.marked_unhealthy == 1
    assert list(node.devices.filter(healthy=False).values_list("index", flat=True)) == [5]


def test_report_links_mig_slices_to_their_parent():
    node = make_node(gpus=0)
    report = gpu_report("dgx-01", range(1))
    report["devices"].insert(
        0, {"uuid": "MIG-a", "class": "mig-1g.10gb", "index": 0, "parent": "GPU-dgx-01-0", "healthy": True}
    )

    apply_node_report(node, report)

    mig = Device.objects.get(uuid="MIG-a")
    assert (mig.parent.uuid, mig.device_class, mig.bookable) == ("GPU-dgx-01-0", "mig-1g.10gb", True)


def test_report_writes_system_labels():
    node = make_node()

    result = apply_node_report(
        node, {"labels": {"gpu.product": "H100-SXM5-80GB", "bc.dev/driver.nvidia": "550.54"}}
    )

    assert result.labels_set == 2
    assert set(node.labels.values_list("key", "value", "source")) == {
        ("gpu.product", "H100-SXM5-80GB", "system"),
        ("bc.dev/driver.nvidia", "550.54", "system"),
    }


def test_report_replaces_an_operator_label_with_the_same_key():
    node = make_node()
    NodeLabel.objects.create(node=node, key="bc.dev/driver.nvidia", value="fake", source="operator")

    apply_node_report(node, {"labels": {"bc.dev/driver.nvidia": "550.54"}})

    label = node.labels.get(key="bc.dev/driver.nvidia")
    assert (label.value, label.source) == ("550.54", "system")


def test_report_removes_stale_system_labels_and_keeps_operator_labels():
    node = make_node()
    NodeLabel.objects.create(node=node, key="team", value="research", source="operator")
    apply_node_report(node, {"labels": {"gpu.product": "H100-SXM5-80GB", "cuda.driver.major": "12"}})

    result = apply_node_report(node, {"labels": {"gpu.product": "H100-SXM5-80GB"}})

    assert (result.labels_set, result.labels_removed) == (0, 1)
    assert set(node.labels.values_list("key", "source")) == {("gpu.product", "system"), ("team", "operator")}


def test_report_without_labels_leaves_labels_alone():
    node = make_node()
    apply_node_report(node, {"labels": {"gpu.product": "H100-SXM5-80GB"}})

    apply_node_report(node, gpu_report("dgx-01", range(8)))

    assert list(node.labels.values_list("key", flat=True)) == ["gpu.product"]


def test_report_refuses_a_bad_label_key_and_writes_nothing():
    node = make_node(gpus=0)
    report = gpu_report("dgx-01", range(8), labels={"gpu.product": "H100", "9lives": "x"})

    with pytest.raises(IngestError, match=r"labels\['9lives'\]: Label keys start with a letter"):
        apply_node_report(node, report)

    assert not node.devices.exists()
    assert not node.labels.exists()


def test_report_refuses_a_device_of_another_node_as_a_conflict():
    make_node("dgx-02")
    node = make_node(gpus=0)
    report = gpu_report("dgx-01", range(2))
    report["devices"][1]["uuid"] = "GPU-dgx-02-1"

    with pytest.raises(IngestError, match="GPU-dgx-02-1 belongs to node dgx-02, not dgx-01") as caught:
        apply_node_report(node, report)

    assert caught.value.code == "CONFLICT"
    assert not node.devices.exists()


def test_report_with_topology_syncs_links_in_the_same_call():
    node = make_node(gpus=0)

    result = apply_node_report(node, gpu_report("dgx-01", range(8), topology=DGX_H100))

    assert result.links == 28
    assert DeviceLink.objects.filter(node=node, rank="NV", nvlinks=18).count() == 28


def test_report_with_bad_topology_writes_nothing():
    node = make_node(gpus=0)

    with pytest.raises(IngestError, match="topology: line 2, column GPU1: 'NVX' is not a link type"):
        apply_node_report(node, gpu_report("dgx-01", range(8), topology=DGX_H100.replace("NV18", "NVX", 1)))

    assert not node.devices.exists()


def test_report_whose_topology_names_an_unreported_gpu_rolls_back():
    node = make_node(gpus=0)

    with pytest.raises(IngestError, match="GPU4: node dgx-01 has no gpu device at index 4"):
        apply_node_report(node, gpu_report("dgx-01", range(4), topology=DGX_H100, labels={"a": "b"}))

    assert not node.devices.exists()
    assert not node.labels.exists()


@pytest.mark.parametrize(
    ("report", "message"),
    [
        ([], "report: must be a JSON object"),
        ({"device": []}, "report: unknown field 'device'"),
        ({"devices": {}}, "devices: must be a list"),
        ({"devices": [{"class": "gpu"}]}, r"devices\[0\].uuid: must be at most 100 letters"),
        ({"devices": [{"uuid": "GPU-a\n", "index": 0}]}, r"devices\[0\].uuid: .*no spaces or line breaks"),
        (
            {"devices": [{"uuid": "GPU-a", "index": 0, "class": "gpu\n"}]},
            r"devices\[0\].class: .*line breaks",
        ),
        (
            {"devices": [{"uuid": "GPU-a", "numaNode": 99999}]},
            r"devices\[0\].numaNode: must be an integer from 0 to 1023",
        ),
        ({"replace": "yes"}, "replace: must be true or false"),
        (
            {"devices": [{"uuid": f"GPU-{i}", "index": i} for i in range(257)]},
            "devices: 257 devices; a report lists at most 256",
        ),
        ({"labels": {f"k{i}": "v" for i in range(65)}}, "labels: 65 labels; a report sets at most 64"),
        (
            {"topology": DGX_H100.replace("NV18", "NV40000")},
            "topology: .*'NV40000' is not a link type: NV counts at most 64 links",
        ),
        (
            {"devices": [{"uuid": "GPU-a", "index": -1}]},
            r"devices\[0\].index: must be a non-negative integer",
        ),
        ({"devices": [{"uuid": "GPU-a", "index": True}]}, r"devices\[0\].index"),
        ({"devices": [{"uuid": "GPU-a", "numaNode": "0"}]}, r"devices\[0\].numaNode"),
        ({"devices": [{"uuid": "GPU-a", "healthy": "yes"}]}, r"devices\[0\].healthy: must be true or false"),
        ({"devices": [{"uuid": "GPU-a", "attributes": []}]}, r"devices\[0\].attributes: must be an object"),
        ({"devices": [{"uuid": "GPU-a", "colour": "green"}]}, r"devices\[0\].colour: unknown field"),
        (
            {"devices": [{"uuid": "GPU-a"}, {"uuid": "GPU-a", "index": 1}]},
            r"devices\[1\].uuid: GPU-a is listed twice",
        ),
        (
            {"devices": [{"uuid": "GPU-a", "index": 0}, {"uuid": "GPU-b", "index": 0}]},
            r"devices\[1\].index: GPU-a already has gpu index 0",
        ),
        ({"devices": [{"uuid": "GPU-a"}]}, r"devices\[0\].index: required for a new device \(GPU-a\)"),
        (
            {"devices": [{"uuid": "MIG-a", "parent": "GPU-x"}]},
            r"devices\[0\].parent: GPU-x is not another device",
        ),
        (
            {"devices": [{"uuid": "G"}, {"uuid": "M", "parent": "G"}, {"uuid": "S", "parent": "M"}]},
            r"devices\[2\].parent: M is itself a partition",
        ),
        ({"labels": []}, "labels: must be an object"),
        ({"labels": {"gpu.count": 8}}, r"labels\['gpu.count'\]: the value must be a string"),
        ({"labels": {"": "x"}}, r"labels\[''\]: Label keys start with a letter"),
        ({"topology": 42}, "topology: must be the text of"),
        ({"topology": "nothing here"}, "topology: no GPU header"),
    ],
)
def test_report_refuses_malformed_input_naming_the_field(report, message):
    node = make_node(gpus=0)

    with pytest.raises(IngestError, match=message) as caught:
        apply_node_report(node, report)

    assert caught.value.code == "INVALID_INPUT"
    assert not node.devices.exists()


def test_report_signals_a_wake_when_a_device_turns_healthy(signals):
    node = make_node()
    Device.objects.filter(node=node, index=2).update(healthy=False)

    apply_node_report(node, gpu_report("dgx-01", range(8)))

    assert signals == [({node.pool_id}, True)]


def test_report_signals_without_wake_when_devices_only_turn_unhealthy(signals):
    node = make_node()

    apply_node_report(node, gpu_report("dgx-01", range(7)))

    assert signals == [({node.pool_id}, False)]


def test_report_signals_a_wake_for_new_healthy_devices_only(signals):
    node = make_node(gpus=0)
    report = gpu_report("dgx-01", range(2))
    report["devices"][1]["healthy"] = False

    apply_node_report(node, {"devices": report["devices"][1:]})
    apply_node_report(node, report)

    assert signals == [({node.pool_id}, False), ({node.pool_id}, True)]


def test_report_does_not_signal_when_no_health_changed(signals):
    node = make_node()

    apply_node_report(node, gpu_report("dgx-01", range(8), labels={"gpu.product": "H100"}))

    assert signals == []


def test_report_json_applies_to_the_named_node():
    make_node(gpus=0)

    result = apply_node_report_json("dgx-01", json.dumps(gpu_report("dgx-01", range(2))))

    assert result.created == 2


def test_report_json_refuses_bad_json_and_unknown_nodes():
    make_node(gpus=0)

    with pytest.raises(IngestError, match="report: not valid JSON"):
        apply_node_report_json("dgx-01", "{devices: []}")
    with pytest.raises(Node.DoesNotExist):
        apply_node_report_json("nope", "{}")


# manage.py import_topology


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("import_topology", *args, stdout=out)
    return out.getvalue().strip()


def test_command_imports_a_matrix_file(tmp_path):
    node = make_node()
    path = tmp_path / "topo.txt"
    path.write_text(DGX_H100)

    assert run("dgx-01", str(path)) == "node dgx-01: 28 links (28 NV), 8 devices"
    assert DeviceLink.objects.filter(node=node).count() == 28


def test_command_prints_a_json_summary(tmp_path):
    make_node()
    path = tmp_path / "topo.txt"
    path.write_text(PCIE_TWO_SOCKETS)

    summary = json.loads(run("dgx-01", str(path), "--json"))

    assert summary == {
        "node": "dgx-01",
        "kind": "topology",
        "links": 28,
        "linkRanks": {"PIX": 4, "PXB": 8, "SYS": 16},
        "devices": 8,
    }


def test_command_reads_a_json_report_from_stdin(monkeypatch):
    node = make_node(gpus=0)
    report = gpu_report("dgx-01", range(8), labels={"gpu.product": "H100-SXM5-80GB"}, topology=DGX_H100)
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(report)))

    line = run("dgx-01", "-")

    assert line == (
        "node dgx-01: 28 links (28 NV), 8 devices (8 new, 0 now healthy, 0 marked unhealthy),"
        " 1 label set, 0 removed"
    )
    assert node.devices.count() == 8
    assert DeviceLink.objects.filter(node=node).count() == 28


def test_command_reads_a_matrix_from_stdin(monkeypatch):
    make_node()
    monkeypatch.setattr(sys, "stdin", io.StringIO(PCIE_TWO_SOCKETS))

    assert run("dgx-01", "-") == "node dgx-01: 28 links (4 PIX, 8 PXB, 16 SYS), 8 devices"


def test_command_fails_with_not_found_for_an_unknown_node(tmp_path):
    path = tmp_path / "topo.txt"
    path.write_text(DGX_H100)

    with pytest.raises(CommandError, match=r"^NOT_FOUND: no node named 'nope'$") as caught:
        run("nope", str(path))

    assert caught.value.returncode == 2


def test_command_fails_with_invalid_input_for_an_unparsable_file(tmp_path):
    make_node()
    path = tmp_path / "topo.txt"
    path.write_text("GPU0 GPU1\ngarbage\n")

    with pytest.raises(CommandError, match=r"^INVALID_INPUT: line 2: row 'garbage'") as caught:
        run("dgx-01", str(path))

    assert caught.value.returncode == 2


def test_command_fails_with_not_found_for_a_missing_file(tmp_path):
    make_node()

    with pytest.raises(CommandError, match=r"^NOT_FOUND: no file"):
        run("dgx-01", str(tmp_path / "missing.txt"))


def test_command_line_prints_error_code_to_stderr_and_exits_2(tmp_path, monkeypatch, capsys):
    # run_from_argv closes every connection when done, which would end the test's transaction.
    monkeypatch.setattr(connections, "close_all", lambda: None)
    path = tmp_path / "topo.txt"
    path.write_text(DGX_H100)

    with pytest.raises(SystemExit) as caught:
        ImportTopology().run_from_argv(["manage.py", "import_topology", "nope", str(path)])

    assert caught.value.code == 2
    assert capsys.readouterr().err.strip() == "error: NOT_FOUND: no node named 'nope'"
